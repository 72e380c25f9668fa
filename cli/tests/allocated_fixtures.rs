//! The hand-allocated fixtures in `tests/allocated/` are correct allocations of the corpus
//! programs of the same name: the independent verifier accepts them, the reference
//! interpreter gives the same trace as the original, and a one-register mistake is caught.

use chromatic::alloc::{budget_of, AllocOptions};
use chromatic::{parse, Program};
use chromatic_verifier::interp::{run, Config};
use chromatic_verifier::verify_program;
use std::path::PathBuf;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load(path: &PathBuf) -> Program {
    let text = std::fs::read_to_string(path).expect("readable file");
    parse(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()))
}

/// (name, original, allocated) for every fixture.
fn fixtures() -> Vec<(String, Program, Program)> {
    let dir = workspace().join("tests/allocated");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/allocated")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".chr"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let original = load(&workspace().join("corpus").join(&n));
            let allocated = load(&dir.join(&n));
            (n, original, allocated)
        })
        .collect()
}

fn verifier_errors(original: &Program, allocated: &Program) -> Vec<String> {
    let budget = budget_of(&original.target, &AllocOptions::default()).expect("budget");
    verify_program(original, allocated, Some(&budget))
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn fixtures_verify_against_their_originals() {
    let fixtures = fixtures();
    assert_eq!(fixtures.len(), 6);
    for (name, original, allocated) in &fixtures {
        assert_eq!(
            verifier_errors(original, allocated),
            Vec::<String>::new(),
            "{name}"
        );
    }
}

#[test]
fn fixtures_run_like_their_originals() {
    for (name, original, allocated) in fixtures() {
        for (f, g) in original.functions.iter().zip(&allocated.functions) {
            for seed in 0..4 {
                let config = Config {
                    seed,
                    ..Config::default()
                };
                let (a, b) = (
                    run(f, &original.target, &config),
                    run(g, &allocated.target, &config),
                );
                assert_eq!(a.first_divergence(&b), None, "{name} seed {seed}");
            }
        }
    }
}

/// Each edit breaks one fixture in a way only dataflow can see; the verifier must object.
#[test]
fn broken_fixtures_are_rejected() {
    let edits = [
        (
            "divergent_uniform_live_through_else.chr",
            "%t0:s2@s[8:9] = s_mov_b64 0",
            "%t0:s2@s[4:5] = s_mov_b64 0",
        ),
        (
            "ptx_predicates.chr",
            "reload p0 <- r1 %p6",
            "reload p1 <- r1 %p6",
        ),
        (
            "swap_cycle3.chr",
            "v1 <- v2 %z, v2 <- v0 %x",
            "v1 <- v0 %z, v2 <- v0 %x",
        ),
        (
            "swap_cycle2.chr",
            "  swap v0, v1\n  jump loop",
            "  jump loop",
        ),
        ("remat_constants.chr", "  remat s[2:3] <- %mask\n", ""),
        ("straight_line.chr", "v6 <- v2 %sum", "v6 <- v1 %sum"),
    ];
    for (name, from, to) in edits {
        let dir = workspace();
        let text = std::fs::read_to_string(dir.join("tests/allocated").join(name)).expect(name);
        assert!(text.contains(from), "{name}: edit target missing");
        let broken = parse(&text.replacen(from, to, 1)).expect("still parses");
        let original = load(&dir.join("corpus").join(name));
        assert!(!verifier_errors(&original, &broken).is_empty(), "{name}");
    }
}
