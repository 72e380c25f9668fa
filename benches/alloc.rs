//! Allocation throughput on generated programs (`chromatic::synth`) of 10k, 100k and 1M
//! instructions, both register-choice policies, in instructions per second. The
//! allocator should be near-linear: time per instruction within 1.5× across the sizes.
//! Analyses are included (`allocate` runs them), as a compiler would pay for them. The
//! `spill` group allocates under a budget that forces spilling.

use chromatic::alloc::{allocate, AllocOptions, Policy};
use chromatic::synth::{crowded_block, synthetic};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("alloc");
    group.sample_size(10);
    for insts in [10_000, 100_000, 1_000_000] {
        let program = chromatic::parse(&synthetic(insts)).expect("synthetic program parses");
        group.throughput(Throughput::Elements(program.functions[0].op_count() as u64));
        for (name, policy) in [
            ("dense", Policy::Dense),
            ("round-robin", Policy::RoundRobin),
        ] {
            let opts = AllocOptions {
                policy,
                ..AllocOptions::default()
            };
            group.bench_with_input(BenchmarkId::new(name, insts), &program, |b, p| {
                b.iter(|| allocate(black_box(p), &opts).expect("synthetic program allocates"))
            });
        }
    }
    group.finish();
}

/// Spilling: the same programs at 1k, 10k, 100k and 1M instructions under a VGPR budget
/// of 12, well below their MaxLive of 20. The spiller runs once (next uses, W sets, MIN,
/// coupling, SSA repair): its time should grow linearly with the program.
fn bench_spill(c: &mut Criterion) {
    spill_group(c, "spill", &[1_000, 10_000, 100_000, 1_000_000], synthetic);
}

/// Spilling in one block crowded from one end to the other (`synth::crowded_block`: 25
/// values live, a budget of 12) at 5k, 20k and 80k instructions: every eviction sits in a
/// crowded run as long as the rest of the block, so work per eviction that follows the
/// run shows as time growing with the square of the size instead of linearly.
fn bench_crowded_block(c: &mut Criterion) {
    spill_group(
        c,
        "spill-crowded-block",
        &[5_000, 20_000, 80_000],
        crowded_block,
    );
}

/// Allocation with `v=12` of the programs `program` writes at each size of `sizes`.
fn spill_group(c: &mut Criterion, name: &str, sizes: &[usize], program: fn(usize) -> String) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for &insts in sizes {
        let program = chromatic::parse(&program(insts)).expect("the benchmark program parses");
        group.throughput(Throughput::Elements(program.functions[0].op_count() as u64));
        let opts = AllocOptions {
            budget: vec![("v".into(), 12)],
            ..AllocOptions::default()
        };
        group.bench_with_input(BenchmarkId::new("v=12", insts), &program, |b, p| {
            b.iter(|| allocate(black_box(p), &opts).expect("the benchmark program spills"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_spill, bench_crowded_block);
criterion_main!(benches);
