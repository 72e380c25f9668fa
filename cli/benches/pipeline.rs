//! Throughput of the whole pipeline on generated programs (`chromatic::synth`) of 10k,
//! 100k and 1M instructions: allocation (analyses included) and independent verification,
//! side by side, in instructions per second.

use chromatic::alloc::{allocate, AllocOptions};
use chromatic::synth::synthetic;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("pipeline");
    group.sample_size(10);
    for insts in [10_000, 100_000, 1_000_000] {
        let program = chromatic::parse(&synthetic(insts)).expect("synthetic program parses");
        let ops = program.functions[0].op_count() as u64;
        let opts = AllocOptions::default();
        let (allocated, _) = allocate(&program, &opts).expect("synthetic program allocates");
        assert!(chromatic_verifier::verify_program(&program, &allocated, None).is_empty());
        group.throughput(Throughput::Elements(ops));
        group.bench_with_input(BenchmarkId::new("allocate", insts), &program, |b, p| {
            b.iter(|| allocate(black_box(p), &opts).expect("allocates"))
        });
        group.bench_with_input(BenchmarkId::new("verify", insts), &allocated, |b, a| {
            b.iter(|| chromatic_verifier::verify_program(&program, black_box(a), None))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
