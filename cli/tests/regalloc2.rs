//! chromatic side by side with regalloc2: its fuzz-generator functions translated to
//! `.chr` allocate with `ssa` and verify at every size tested; regalloc2's allocations
//! converted back verify (`fuzz_checks::alloc_verify_regalloc2`, the fuzz target's
//! check); the corpus programs the adapter takes verify, the others are declined with
//! a reason.

mod common;

use chromatic::alloc::regalloc2_adapter::fuzz_func::{generate, to_chr, Size};
use chromatic::alloc::{allocate, budget_of, AllocError, AllocOptions, Allocator};
use chromatic_cli::fuzz_checks::alloc_verify_regalloc2;
use common::chromatic;

/// The translated program of `seed` at `size`, when the generator does not give up.
fn translated(seed: u64, size: Size) -> Option<(String, chromatic::Program)> {
    let func = generate(seed, size)?;
    let text = to_chr(&func, "f", "test").expect("the translation takes every generated function");
    let p = chromatic::parse(&text).unwrap_or_else(|e| panic!("seed {seed} {size}: {e}"));
    Some((text, p))
}

/// Allocates with `allocator` at the whole file and verifies; the error otherwise.
fn allocate_and_verify(p: &chromatic::Program, allocator: Allocator) -> Result<(), AllocError> {
    let opts = AllocOptions {
        allocator,
        ..AllocOptions::default()
    };
    let (a, _) = allocate(p, &opts)?;
    let budget = budget_of(&p.target, &opts).expect("budget");
    let errors = chromatic_verifier::verify_program(p, &a, Some(&budget));
    assert!(errors.is_empty(), "{allocator}: {}", errors[0]);
    Ok(())
}

#[test]
fn every_generated_function_allocates_with_ssa_and_verifies() {
    let mut refused = Vec::new();
    let mut allocated = 0;
    for (size, seeds) in [(Size::Default, 40), (Size::K1, 3), (Size::Pressure, 3)] {
        for seed in 0..seeds {
            let Some((_, p)) = translated(seed, size) else {
                continue;
            };
            match allocate_and_verify(&p, Allocator::Ssa) {
                Ok(()) => allocated += 1,
                Err(e) => refused.push(format!("{size} seed {seed}: {e}")),
            }
        }
    }
    assert!(refused.is_empty(), "ssa refused: {refused:#?}");
    assert!(allocated >= 20, "only {allocated} functions generated");
}

#[test]
fn the_translation_keeps_regalloc2s_constraints() {
    let texts: String = (0..40)
        .filter_map(|seed| translated(seed, Size::Default))
        .map(|(text, _)| text)
        .collect();
    for (what, mark) in [
        ("early defs", " early("),
        ("reused inputs", " tied("),
        ("fixed registers", " fixed("),
        ("clobbers", "%k"),
        ("block parameters", " = phi "),
        ("fixed registers standing for stack slots", " fixed(r4"),
    ] {
        assert!(texts.contains(mark), "no {what} ({mark}) in 40 functions");
    }
}

#[test]
fn regalloc2_allocations_converted_back_verify() {
    let mut declined = Vec::new();
    for seed in 0..30 {
        let data = chromatic::gen::splitmix_bytes(seed, 100_000);
        declined.extend(alloc_verify_regalloc2(&data));
    }
    for e in &declined {
        let message = e.to_string();
        assert!(
            message.contains("only as an alias"),
            "an unexpected decline: {message}"
        );
    }
    assert!(
        declined.len() <= 3,
        "{} declines: {declined:#?}",
        declined.len()
    );
}

#[test]
fn corpus_programs_verify_or_are_declined_with_a_reason() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus");
    let mut verified = 0;
    for entry in std::fs::read_dir(dir).expect("corpus") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "chr") {
            continue;
        }
        let p = chromatic::parse(&std::fs::read_to_string(&path).expect("read")).expect("parse");
        for allocator in [Allocator::Regalloc2Ion, Allocator::Regalloc2Fast] {
            match allocate_and_verify(&p, allocator) {
                Ok(()) => verified += 1,
                Err(AllocError::NotHandled { message, .. }) => assert!(
                    [
                        "tuple",
                        "pinned",
                        "divergently",
                        "registers; regalloc2 allows",
                        "unreachable",
                        "class"
                    ]
                    .iter()
                    .any(|r| message.contains(r)),
                    "{}: {message}",
                    path.display()
                ),
                Err(e) => panic!("{}: {allocator}: {e}", path.display()),
            }
        }
    }
    assert!(
        verified >= 10,
        "only {verified} corpus allocations by regalloc2"
    );
}

#[test]
fn ra2_gen_then_bench_from_the_cli() {
    let dir = std::env::temp_dir().join(format!("chromatic-ra2-{}", std::process::id()));
    let dir_s = dir.to_str().expect("utf-8 path");
    let gen = chromatic(&["ra2-gen", "--seed", "4", "--count", "3", "-o", dir_s]);
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let files: Vec<String> = std::fs::read_dir(&dir)
        .expect("written")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    assert!(!files.is_empty());
    let again = chromatic(&["ra2-gen", "--seed", "4", "--count", "3", "-o", dir_s]);
    assert!(again.status.success());
    let mut args = vec!["bench", "--runs", "1"];
    args.extend(files.iter().map(String::as_str));
    let bench = chromatic(&args);
    let out = String::from_utf8_lossy(&bench.stdout);
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    for row in [
        "ssa ",
        "regalloc2-ion ",
        "regalloc2-fast ",
        "verifier: ",
        "regalloc2 checker: ",
    ] {
        assert!(out.contains(row), "no `{row}` in\n{out}");
    }
    let last = out.lines().last().expect("output");
    assert!(
        last.starts_with("ssa vs regalloc2-ion: speed ×")
            && last.contains(", weighted spill cost ×"),
        "{last}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn alloc_with_regalloc2_prints_a_verified_allocation() {
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/swap_cycle3.chr");
    let out = std::env::temp_dir().join(format!("chromatic-ra2-{}.chr", std::process::id()));
    let out_s = out.to_str().expect("utf-8 path");
    for allocator in ["regalloc2-ion", "regalloc2-fast"] {
        let alloc = chromatic(&["alloc", "--allocator", allocator, input, "-o", out_s]);
        assert!(
            alloc.status.success(),
            "{}",
            String::from_utf8_lossy(&alloc.stderr)
        );
        let verify = chromatic(&["verify", input, out_s]);
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
    }
    let tuples = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/compaction.chr");
    let declined = chromatic(&["alloc", "--allocator", "regalloc2-ion", tuples]);
    assert!(!declined.status.success());
    assert!(String::from_utf8_lossy(&declined.stderr).contains("is a tuple of 2 registers"));
    std::fs::remove_file(&out).expect("clean up");
}
