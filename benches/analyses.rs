//! Parse and analyse generated programs (`chromatic::synth`) of 10k, 100k and 1M
//! instructions.

use chromatic::analysis::Analysis;
use chromatic::synth::synthetic;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse+analyse");
    group.sample_size(10);
    for insts in [10_000, 100_000, 1_000_000] {
        let text = synthetic(insts);
        let program = chromatic::parse(&text).expect("synthetic program parses");
        let f = &program.functions[0];
        assert!(chromatic::analysis::ssa::validate(f, &program.target).is_ok());
        group.throughput(Throughput::Elements(f.op_count() as u64));
        group.bench_with_input(BenchmarkId::new("parse", insts), &text, |b, text| {
            b.iter(|| chromatic::parse(black_box(text)).expect("parses"))
        });
        group.bench_with_input(BenchmarkId::new("analyse", insts), f, |b, f| {
            b.iter(|| Analysis::new(black_box(f), &program.target))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
