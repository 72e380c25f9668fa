//! The allocator's stages one at a time on generated programs (`chromatic::synth`) of 1k,
//! 10k, 100k and 1M instructions, in instructions per second, so that the growth of each
//! shows apart: the analyses (liveness among them) of the prepared function, spilling at a
//! VGPR budget of 12 (below the programs' MaxLive of 20), assignment, out of SSA, and the
//! verifier on the whole allocation. Each stage's input is made outside the timed part.

use chromatic::alloc::{allocate, assign, out_of_ssa, prepare, spill, AllocOptions, Policy};
use chromatic::analysis::Analysis;
use chromatic::synth::synthetic;
use chromatic::Program;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use std::hint::black_box;

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("stages");
    group.sample_size(10);
    for insts in SIZES {
        let program = chromatic::parse(&synthetic(insts)).expect("synthetic program parses");
        group.throughput(Throughput::Elements(program.functions[0].op_count() as u64));
        stages(&mut group, &program, insts);
    }
    group.finish();
}

fn stages(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, p: &Program, n: usize) {
    let target = &p.target;
    let (f, _) = prepare::split(&p.functions[0]);
    let a = Analysis::new(&f, target);
    let budget: Vec<u16> = target.classes.iter().map(|c| c.units).collect();
    let mut tight = budget.clone();
    tight[target.class_by_name("v").expect("gfx9 has v").index()] = 12;
    group.bench_function(BenchmarkId::new("analyses", n), |b| {
        b.iter(|| Analysis::new(black_box(&f), target))
    });
    group.bench_function(BenchmarkId::new("spill v=12", n), |b| {
        b.iter_batched(
            || f.clone(),
            |g| spill::spill(black_box(g), target, &a, &tight).expect("spills"),
            BatchSize::PerIteration,
        )
    });
    let assign = |g: chromatic::Function| {
        let survey = assign::Survey::of(&g);
        assign::assign(g, target, &a, (&budget, &budget), (Policy::Dense, survey)).expect("assigns")
    };
    group.bench_function(BenchmarkId::new("assign", n), |b| {
        b.iter_batched(|| f.clone(), assign, BatchSize::PerIteration)
    });
    group.bench_function(BenchmarkId::new("out-of-ssa", n), |b| {
        b.iter_batched(
            || assign(f.clone()),
            |asg| out_of_ssa::lower(asg, target, &a, &budget).expect("lowers"),
            BatchSize::PerIteration,
        )
    });
    let (allocated, _) = allocate(p, &AllocOptions::default()).expect("allocates");
    group.bench_function(BenchmarkId::new("verify", n), |b| {
        b.iter(|| {
            let errors = chromatic_verifier::verify_program(black_box(p), &allocated, None);
            assert!(errors.is_empty());
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
