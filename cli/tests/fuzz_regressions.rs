//! Replays every stored fuzz regression (`fuzz/regressions/<target>/*`) and a fixed sweep
//! of seeded inputs through the same checks the cargo-fuzz targets run.

use chromatic_cli::fuzz_checks;
use std::path::PathBuf;

type Check = fn(&[u8]);

const TARGETS: [(&str, Check); 8] = [
    ("parse", fuzz_checks::parse),
    ("ptx_import", fuzz_checks::ptx_import),
    ("mir_import", fuzz_checks::mir_import),
    ("alloc_verify", fuzz_checks::alloc_verify),
    ("parallel_copy", fuzz_checks::parallel_copy),
    ("verifier_mutants", fuzz_checks::verifier_mutants),
    ("oracle_bound", fuzz_checks::oracle_bound),
    ("oracle_diff", fuzz_checks::oracle_diff),
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
        .filter(|(name, _)| !matches!(*name, "ptx_import" | "mir_import"))
    {
        let seeds = match name {
            "oracle_bound" => ORACLE_SWEEP,
            "oracle_diff" => ORACLE_DIFF_SWEEP,
            _ => SWEEP,
        };
        for seed in 0..seeds {
            check(&bytes(seed, 4096));
        }
    }
}

/// The kernels under `corpus/<dir>` with extension `ext` small enough to mutate often
/// (at least five of them), in name order.
fn small_kernels(dir: &str, ext: &str) -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(dir);
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    kernels.sort();
    let small: Vec<String> = kernels
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("kernel"))
        .filter(|t| t.len() < 40_000)
        .collect();
    assert!(small.len() >= 5, "{} small kernels", small.len());
    small
}

/// The corpus kernels and mutants of them (the seeds `cargo fuzz run ptx_import` starts
/// from, `.ci/run`) through the importer's check.
#[test]
fn ptx_import_on_mutated_corpus_kernels() {
    let small = small_kernels("ptx", "ptx");
    for (i, text) in small.iter().enumerate() {
        fuzz_checks::ptx_import(text.as_bytes());
        for seed in 0..PTX_MUTANTS {
            let mutant = fuzz_checks::ptx_mutant(text, seed * 1000 + i as u64);
            fuzz_checks::ptx_import(mutant.as_bytes());
        }
    }
}

/// The AMD corpus kernels and mutants of them (the seeds `cargo fuzz run mir_import`
/// starts from, `.ci/run`) through the importer's check.
#[test]
fn mir_import_on_mutated_corpus_kernels() {
    let small = small_kernels("amd", "mir");
    for (i, text) in small.iter().enumerate() {
        assert!(chromatic::mir::import(text).is_ok(), "kernel {i} imports");
        fuzz_checks::mir_import(text.as_bytes());
        for seed in 0..PTX_MUTANTS {
            let mutant = fuzz_checks::ptx_mutant(text, seed * 1000 + i as u64);
            fuzz_checks::mir_import(mutant.as_bytes());
        }
    }
}

/// Mutants per small corpus kernel in the sweep.
const PTX_MUTANTS: u64 = 40;

/// Seeds per target in the sweep: enough to reach every generator feature, small enough
/// for CI.
const SWEEP: u64 = 2000;

/// Seeds for `oracle_bound`, whose every case solves an ILP per function (a few ms a case,
/// where the others take well under 1 ms).
const ORACLE_SWEEP: u64 = 1000;

/// Seeds for `oracle_diff`: each case allocates, solves a 0-1 program per class, and
/// verifies and interprets two allocations (about 30 ms a case on a shared 2-core machine).
const ORACLE_DIFF_SWEEP: u64 = 500;

/// The allocator on 20,000 sweep seeds (ten times the regular sweep): every program the
/// generator makes allocates at every legal budget, verifies and behaves like the
/// original; none is rejected. Run with `--ignored`.
#[test]
#[ignore]
fn wide_alloc_sweep() {
    for seed in 0..10 * SWEEP {
        fuzz_checks::alloc_verify(&bytes(seed, 4096));
    }
}

/// The allocation fuzzers' programs reach a copy cycle of a class without a swap broken
/// through a unit of another class (`:via=`, `GenConfig::copy_via`), at the lowest legal
/// budget of that class: the shape of an AGPR cycle going through a VGPR, which once took
/// a VGPR holding a live value as its temporary. Every such allocation verifies.
#[test]
fn fuzz_programs_break_copy_cycles_through_another_class() {
    use chromatic::alloc::{allocate, spill::minimum::lowest_legal, AllocOptions};
    use chromatic::{ClassId, InstKind, Location, Program};
    let through = |a: &Program, c: ClassId, via: ClassId| {
        let class_of = |l: &Location| match l {
            Location::Reg { class, .. } => Some(*class),
            _ => None,
        };
        a.functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.insts)
            .any(|i| {
                let InstKind::ParallelCopy(moves) = &i.kind else {
                    return false;
                };
                moves
                    .iter()
                    .any(|m| class_of(&m.src) == Some(c) && class_of(&m.dst) == Some(via))
            })
    };
    let (mut lowered, mut broken) = (0, 0);
    for seed in 0..SWEEP {
        let data = bytes(seed, 4096);
        let mut u = arbitrary::Unstructured::new(&data);
        let Ok(p) = chromatic::gen::generate(&mut u, &fuzz_checks::fuzz_programs()) else {
            continue;
        };
        for c in p.target.class_ids() {
            let Some(via) = p
                .target
                .class(c)
                .copy_temp
                .filter(|_| p.target.spec.is_some())
            else {
                continue;
            };
            let lowest = p
                .functions
                .iter()
                .map(|f| lowest_legal(f, &p.target)[c.index()].units);
            let k = lowest.max().unwrap_or(1).max(1);
            let budget = vec![(p.target.class(c).name.clone(), k as u16)];
            let opts = AllocOptions {
                budget: budget.clone(),
                ..AllocOptions::default()
            };
            let (a, _) = allocate(&p, &opts).unwrap_or_else(|e| {
                panic!("seed {seed} at {budget:?}: {e}\n{}", chromatic::print(&p))
            });
            fuzz_checks::check_allocation(&p, &a, &opts);
            lowered += 1;
            broken += usize::from(through(&a, c, via));
        }
    }
    println!("{broken} of {lowered} lowered classes copy through another class");
    assert!(
        broken > 0,
        "no cycle went through another class in {lowered} allocations"
    );
}
