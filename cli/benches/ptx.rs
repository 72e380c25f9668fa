//! PTX kernels through import, allocation (minimum registers) and independent
//! verification, in parallel over files as the `corpus` and `ptx` commands run them: the
//! kernels of `corpus/ptx/`, or of the directory `CHROMATIC_PTX_CORPUS` names (e.g. a whole
//! corpus of real kernels), in instructions per second.
//!
//! Then one file's kernels allocated (scheduling included, as `ptx --at-ptxas` times them)
//! at ptxas's own register count from the corpus's `manifest.tsv`: the file
//! `CHROMATIC_PTX_KERNEL` names relative to the corpus, by default the largest softmax of
//! `corpus/ptx/` (in the full NVIDIA corpus, the slowest at the budget is
//! `triton/162f5e16b02e_triton_per_fused__safe_softmax__softmax_backward_data_add_ex.ptx`).

use chromatic::alloc::{allocate, AllocOptions};
use chromatic::program::Program;
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

/// The kernel file the at-budget bench allocates, relative to the corpus.
const DEFAULT_KERNEL: &str =
    "036cbd0dc727_triton_per_fused__softmax_exp_prepare_softmax_online_sub_2.ptx";

/// ptxas's register count for `kernel` of `file` in the corpus's manifest.
fn ptxas_regs(manifest: &str, file: &str, kernel: &str) -> u16 {
    manifest
        .lines()
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .find(|row| row.len() > 3 && row[0] == file && row[1] == kernel)
        .and_then(|row| row[3].parse::<u16>().ok())
        .unwrap_or_else(|| panic!("{file} @{kernel}: not in the manifest"))
        .min(255)
}

/// Allocates every kernel of `program` alone at its `budgets`.
fn allocate_at(program: &Program, budgets: &[u16]) {
    for (f, &k) in program.functions.iter().zip(budgets) {
        let single = Program {
            target: program.target.clone(),
            functions: vec![f.clone()],
        };
        let options = AllocOptions {
            budget: vec![("r".into(), k)],
            schedule: chromatic::schedule::Schedule::Pressure,
            ..AllocOptions::default()
        };
        allocate(&single, &options).expect("allocates at ptxas's count");
    }
}

fn at_ptxas(c: &mut Criterion, dir: &Path) {
    let file = std::env::var("CHROMATIC_PTX_KERNEL").unwrap_or_else(|_| DEFAULT_KERNEL.into());
    let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).expect("a manifest");
    let text = std::fs::read_to_string(dir.join(&file)).expect("readable");
    let program = chromatic::ptx::import(&text)
        .expect("the kernel imports")
        .program;
    let budgets: Vec<u16> = program
        .functions
        .iter()
        .map(|f| ptxas_regs(&manifest, &file, &f.name))
        .collect();
    let insts: usize = program.functions.iter().map(|f| f.op_count()).sum();
    let mut group = c.benchmark_group("ptx");
    group.sample_size(10);
    group.throughput(Throughput::Elements(insts as u64));
    group.bench_function(format!("allocate_at_ptxas/{file}"), |b| {
        b.iter(|| allocate_at(&program, &budgets))
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let dir = std::env::var_os("CHROMATIC_PTX_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/ptx"));
    at_ptxas(c, &dir);
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
