//! `--solver microlp|highs`: the oracle's models solved by either backend. With the
//! `highs` feature, both solve the corpus and must agree on every row both prove
//! optimal; without it, `--solver highs` is refused with a clear error.

mod common;

use common::chromatic;

#[cfg(not(feature = "highs"))]
#[test]
fn highs_is_refused_in_a_build_without_it() {
    let out = chromatic(&["gap", "--solver", "highs", "corpus/tied_mac.chr"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--features highs"), "{stderr}");
    let sweep = chromatic(&[
        "sweep",
        "--oracle",
        "--solver",
        "highs",
        "corpus/tied_mac.chr",
    ]);
    assert_eq!(sweep.status.code(), Some(2));
}

#[cfg(feature = "highs")]
mod both {
    use super::chromatic;
    use std::collections::BTreeMap;

    /// The rows of `gap ARGS --solver SOLVER` by file, function and class: (status, the
    /// optimum or best); the run must succeed with every row verified.
    fn rows(args: &[&str], solver: &str) -> BTreeMap<String, (String, String)> {
        let mut all = vec!["gap", "--solver", solver];
        all.extend_from_slice(args);
        let out = chromatic(&all);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{solver}: {stdout}");
        let last = stdout.lines().last().expect("a summary");
        let (_, verified) = last.split_once("verified: ").expect("a summary");
        let (v, m) = verified.split_once('/').expect("V/M");
        assert_eq!(v, m, "{solver}: {last}");
        stdout
            .lines()
            .filter(|l| l.ends_with("verified"))
            .map(|l| {
                let (key, rest) = l.split_once(": max_live").expect("a row");
                let answer = rest
                    .split("  ")
                    .find(|w| w.starts_with("optimum ") || w.starts_with("best "))
                    .expect("an answer");
                let status = if answer.starts_with("optimum") {
                    "optimal"
                } else {
                    "limit"
                };
                (key.to_string(), (status.to_string(), answer.to_string()))
            })
            .collect()
    }

    /// Both backends answer the same rows, and every row both prove optimal has the
    /// same optimum; `at_least` rows are proven by both.
    fn agree(args: &[&str], at_least: usize) {
        let microlp = rows(args, "microlp");
        let highs = rows(args, "highs");
        assert_eq!(
            microlp.keys().collect::<Vec<_>>(),
            highs.keys().collect::<Vec<_>>()
        );
        let mut proven = 0;
        for (key, (status, answer)) in &microlp {
            let (other_status, other) = &highs[key];
            if status == "optimal" && other_status == "optimal" {
                assert_eq!(answer, other, "{key}");
                proven += 1;
            }
        }
        assert!(proven >= at_least, "{proven} rows proven by both");
    }

    #[test]
    fn minregs_on_the_corpus() {
        agree(&["corpus"], 69);
    }

    #[test]
    fn copies_on_the_corpus() {
        agree(&["--problem", "copies", "corpus"], 60);
    }

    #[test]
    fn spill_at_a_budget() {
        agree(
            &[
                "--problem",
                "spill",
                "--regs",
                "v=3",
                "corpus/nested_loops.chr",
                "corpus/tied_mac.chr",
                "corpus/high_pressure_block.chr",
            ],
            2,
        );
    }
}
