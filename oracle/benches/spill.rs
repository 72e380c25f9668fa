//! The spill oracle on corpus programs: residency model, solve, rewrite, assignment and
//! decoding, at budgets that force spilling, one function each.

use chromatic::Program;
use chromatic_oracle::spill::{min_spill, Limits};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;

fn corpus(name: &str) -> Program {
    let path = format!("{}/../corpus/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("corpus file");
    chromatic::parse(&text).expect("corpus file parses")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("oracle_spill");
    group.sample_size(10);
    let cases = [
        ("high_pressure_block.chr", "v", 32),
        ("mma_accumulate_loop.chr", "r", 12),
        ("nested_loops.chr", "v", 3),
        ("regressions/memory_phi_slots.chr", "v", 33),
    ];
    for (file, class, budget) in cases {
        let p = corpus(file);
        let c = p.target.class_by_name(class).expect("class");
        let mut budgets: Vec<u16> = p.target.classes.iter().map(|k| k.units).collect();
        budgets[c.index()] = budget;
        let id = BenchmarkId::new(file, format!("{class}={budget}"));
        group.bench_with_input(id, &p, |b, p| {
            b.iter(|| {
                min_spill(
                    black_box(&p.functions[0]),
                    &p.target,
                    c,
                    &budgets,
                    Limits::default(),
                )
                .expect("solved")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
