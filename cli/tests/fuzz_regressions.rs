//! Replays every stored fuzz regression (`fuzz/regressions/<target>/*`) and a fixed sweep
//! of seeded inputs through the same checks the cargo-fuzz targets run.

use chromatic_cli::fuzz_checks;
use std::path::PathBuf;

type Check = fn(&[u8]);

fn alloc_verify(data: &[u8]) {
    fuzz_checks::alloc_verify(data);
}

const TARGETS: [(&str, Check); 6] = [
    ("parse", fuzz_checks::parse),
    ("ptx_import", fuzz_checks::ptx_import),
    ("alloc_verify", alloc_verify),
    ("parallel_copy", fuzz_checks::parallel_copy),
    ("verifier_mutants", fuzz_checks::verifier_mutants),
    ("oracle_bound", fuzz_checks::oracle_bound),
];

/// The fuzz input of sweep seed `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    chromatic::gen::splitmix_bytes(seed, len)
}

#[test]
fn stored_regressions_replay() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    for (name, check) in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("regression entry").path();
            let data = std::fs::read(&path).expect("regression file");
            check(&data);
        }
    }
}

#[test]
fn seeded_sweep_of_every_target() {
    for (name, check) in TARGETS
        .into_iter()
        .filter(|(name, _)| *name != "ptx_import")
    {
        let seeds = if name == "oracle_bound" {
            ORACLE_SWEEP
        } else {
            SWEEP
        };
        for seed in 0..seeds {
            check(&bytes(seed, 4096));
        }
    }
}

/// The corpus kernels and mutants of them (the seeds `cargo fuzz run ptx_import` starts
/// from, `.ci/run`) through the importer's check.
#[test]
fn ptx_import_on_mutated_corpus_kernels() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/ptx");
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus/ptx")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    kernels.sort();
    let small: Vec<String> = kernels
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("kernel"))
        .filter(|t| t.len() < 40_000)
        .collect();
    assert!(small.len() >= 5, "{} small kernels", small.len());
    for (i, text) in small.iter().enumerate() {
        fuzz_checks::ptx_import(text.as_bytes());
        for seed in 0..PTX_MUTANTS {
            let mutant = fuzz_checks::ptx_mutant(text, seed * 1000 + i as u64);
            fuzz_checks::ptx_import(mutant.as_bytes());
        }
    }
}

/// Mutants per small corpus kernel in the sweep.
const PTX_MUTANTS: u64 = 40;

/// Roomy programs the allocator rejects (unstructured divergent control flow it cannot
/// place copies for) are counted and must stay rare: at most 1 in 20 in the sweep.
#[test]
fn roomy_programs_are_rarely_rejected() {
    let rejected = (0..SWEEP)
        .filter(|&seed| fuzz_checks::alloc_verify(&bytes(seed, 4096)))
        .count();
    println!("roomy programs rejected: {rejected} of {SWEEP}");
    assert!(rejected * 20 <= SWEEP as usize, "{rejected} of {SWEEP}");
}

/// Seeds per target in the sweep: enough to reach every generator feature, small enough
/// for CI.
const SWEEP: u64 = 2000;

/// Seeds for `oracle_bound`, whose every case solves an ILP per function (a few ms a case,
/// where the others take well under 1 ms).
const ORACLE_SWEEP: u64 = 1000;

/// The allocator on 20,000 sweep seeds (ten times the regular sweep): every allocation
/// verifies and behaves like the original. Run with `--ignored`; it prints how many roomy
/// programs were rejected.
#[test]
#[ignore]
fn wide_alloc_sweep() {
    let rejected = (0..10 * SWEEP)
        .filter(|&seed| fuzz_checks::alloc_verify(&bytes(seed, 4096)))
        .count();
    println!("roomy programs rejected: {rejected} of {}", 10 * SWEEP);
    assert!(rejected * 20 <= 10 * SWEEP as usize, "{rejected}");
}
