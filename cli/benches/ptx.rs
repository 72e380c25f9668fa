//! PTX kernels through import, allocation (minimum registers) and independent
//! verification, in parallel over files as the `corpus` and `ptx` commands run them: the
//! kernels of `corpus/ptx/`, or of the directory `CHROMATIC_PTX_CORPUS` names (e.g. a whole
//! corpus of real kernels), in instructions per second.

use chromatic::alloc::{allocate, AllocOptions};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

fn ptx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a readable directory")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            ptx_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "ptx") {
            out.push(path);
        }
    }
}

/// Imports, allocates and verifies one file; its instruction count.
fn pipeline(text: &str) -> u64 {
    let imported = chromatic::ptx::import(text).expect("the kernel imports");
    let (allocated, _) = allocate(&imported.program, &AllocOptions::default()).expect("allocates");
    let errors = chromatic_verifier::verify_program(&imported.program, &allocated, None);
    assert!(errors.is_empty(), "{}", errors[0]);
    imported
        .program
        .functions
        .iter()
        .map(|f| f.op_count() as u64)
        .sum()
}

fn bench(c: &mut Criterion) {
    let dir = std::env::var_os("CHROMATIC_PTX_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/ptx"));
    let mut files = Vec::new();
    ptx_files(&dir, &mut files);
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("readable"))
        .collect();
    let insts: u64 = texts.iter().map(|t| pipeline(t)).sum();
    let mut group = c.benchmark_group("ptx");
    group.sample_size(10);
    group.throughput(Throughput::Elements(insts));
    group.bench_function(
        format!("import_allocate_verify/{}_files", texts.len()),
        |b| b.iter(|| texts.par_iter().map(|t| pipeline(t)).sum::<u64>()),
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
