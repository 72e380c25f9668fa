//! `chromatic report` end to end: saving and comparing against the saved run (shader-db
//! lines), the CI gate, deterministic output, failures that must be loud, allocators side
//! by side; and `chromatic draw`, which pictures one of those allocations.

mod common;

use common::chromatic;
use std::process::Output;

fn temp_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name).display().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Programs for the report tests; round-robin allocates two of them differently from dense.
const FILES: [&str; 3] = [
    "corpus/fixed_registers.chr",
    "corpus/fixed_conflict.chr",
    "corpus/block_frequencies.chr",
];

fn report(extra: &[&str]) -> Output {
    let mut args = vec!["report"];
    args.extend(FILES);
    args.extend(extra);
    chromatic(&args)
}

#[test]
fn a_run_against_its_own_save_helps_and_hurts_nothing() {
    let saved = temp_path("same.json");
    let first = report(&["--save", &saved]);
    assert_eq!(first.status.code(), Some(0), "{}", stdout(&first));
    let again = report(&["--baseline", &saved, "--fail-on", "any"]);
    assert_eq!(again.status.code(), Some(0));
    let text = stdout(&again);
    assert!(text.contains(
        "total instructions in shared programs: 20 -> 20 (0.00%)\ninstructions in affected programs: 0 -> 0 (0.00%)\nhelped: 0\nHURT: 0\n"
    ), "{text}");
    assert!(!text.contains("HURT: 1") && !text.contains("GAINED") && !text.contains("LOST"));
    let resaved = temp_path("same-again.json");
    report(&["--save", &resaved]);
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        std::fs::read_to_string(&resaved).unwrap(),
        "saved stats are deterministic"
    );
}

#[test]
fn round_robin_against_dense_shows_its_hurt_programs_and_fails_the_gate() {
    let saved = temp_path("dense.json");
    report(&["--save", &saved]);
    let out = report(&[
        "--policy",
        "round-robin",
        "--baseline",
        &saved,
        "--fail-on",
        "hurt",
    ]);
    assert_eq!(out.status.code(), Some(1), "the gate fails on HURT");
    let text = stdout(&out);
    assert!(text.contains(
        "total instructions in shared programs: 20 -> 22 (10.00%)\ninstructions in affected programs: 11 -> 13 (18.18%)\nhelped: 0\nHURT: 2\n"
    ), "{text}");
    assert!(text
        .contains("instructions HURT: corpus/fixed_conflict.chr @fixed_conflict: 6 -> 7 (16.67%)"));
    assert!(text.contains(
        "copy cost v HURT: corpus/block_frequencies.chr @block_frequencies: 0 -> 0.5 (inf)"
    ));
    let lost_only = report(&[
        "--policy",
        "round-robin",
        "--baseline",
        &saved,
        "--fail-on",
        "lost",
    ]);
    assert_eq!(lost_only.status.code(), Some(0), "nothing LOST");
}

#[test]
fn losing_an_allocation_is_reported_and_gated() {
    let saved = temp_path("occupancy.json");
    let file = "corpus/block_frequencies.chr";
    chromatic(&["report", file, "--save", &saved]);
    let out = chromatic(&[
        "report",
        file,
        "--regs",
        "v=1",
        "--baseline",
        &saved,
        "--fail-on",
        "lost",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("LOST: corpus/block_frequencies.chr @block_frequencies: allocation ("),
        "{text}"
    );
    assert!(text.contains("not allocated by ssa:"), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn output_is_identical_from_run_to_run_and_json_round_trips() {
    let a = report(&[]);
    let b = report(&[]);
    assert_eq!(stdout(&a), stdout(&b));
    let json = report(&["--json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["records"].as_array().map(Vec::len), Some(3));
    assert_eq!(value["records"][0]["status"], "verified");
}

#[test]
fn unreadable_baseline_and_bad_programs_are_errors() {
    let out = report(&["--baseline", "no/such/file.json"]);
    assert_eq!(out.status.code(), Some(2));
    let bad = temp_path("bad.chr");
    std::fs::write(
        &bad,
        "target gfx9\nfunc @f {\nb:\n  %x:q1 = foo\n  ret\n}\n",
    )
    .unwrap();
    let out = chromatic(&["report", &bad]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.chr:4:6"));
}

/// The three allocators side by side over the whole corpus: every allocation verifies
/// (exit 0), the baselines decline only the programs with pinned accumulators, and the
/// production allocator's weighted spill cost is the lowest in the totals.
#[test]
fn compare_runs_every_allocator_over_the_corpus() {
    let out = chromatic(&[
        "report",
        "corpus",
        "--compare",
        "ssa,coloring,linear",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let records = value["records"].as_array().expect("records");
    let status = |r: &serde_json::Value| r["status"].as_str().unwrap_or_default().to_string();
    assert!(records.iter().all(|r| status(r) != "failed"));
    let declined: Vec<String> = records
        .iter()
        .filter(|r| status(r) == "not-allocated")
        .map(|r| format!("{} {}", r["allocator"], r["reason"]))
        .collect();
    assert_eq!(declined.len(), 6, "{declined:?}");
    assert!(declined.iter().all(|d| d.contains("pinned values")));
    let spill_cost = |allocator: &str| -> f64 {
        records
            .iter()
            .filter(|r| r["allocator"] == allocator && status(r) == "verified")
            .flat_map(|r| {
                r["classes"]
                    .as_object()
                    .into_iter()
                    .flat_map(|c| c.values())
            })
            .map(|c| c["spill_cost"].as_f64().unwrap_or(0.0))
            .sum()
    };
    let (ssa, coloring, linear) = (
        spill_cost("ssa"),
        spill_cost("coloring"),
        spill_cost("linear"),
    );
    assert!(ssa < coloring && ssa < linear, "{ssa} {coloring} {linear}");
}

#[test]
fn a_baseline_compared_with_a_saved_ssa_run_shows_both() {
    let saved = temp_path("ssa.json");
    report(&["--save", &saved]);
    let out = report(&["--allocator", "linear", "--baseline", &saved]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("total instructions in shared programs: 20 -> "),
        "{text}"
    );
    assert!(text.contains("linear: functions 3  verified 3"), "{text}");
}

/// `chromatic draw`: one row per register used, a bar per value, spill and reload marks,
/// the budget line; an unknown function is an error.
#[test]
fn draw_writes_the_allocation_as_svg() {
    let out_path = temp_path("hp.svg");
    let out = chromatic(&[
        "draw",
        "corpus/high_pressure_block.chr",
        "--regs",
        "v=20",
        "-o",
        &out_path,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&out_path).expect("written");
    assert!(svg.starts_with("<svg"));
    assert!(
        svg.contains(">v19</text>") && !svg.contains(">v20</text>"),
        "rows v0..v19"
    );
    assert!(
        svg.contains("fill=\"#c00\"/>") && svg.contains("fill=\"#080\"/>"),
        "spills and reloads"
    );
    assert!(svg.contains("budget 20"));
    let missing = chromatic(&[
        "draw",
        "corpus/high_pressure_block.chr",
        "--function",
        "nope",
        "-o",
        &out_path,
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no function @nope"));
}

#[test]
fn compare_prints_each_allocator_against_the_first() {
    let out = report(&["--compare", "ssa,linear"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let tail = text
        .split("\nlinear against ssa:\n\n")
        .nth(1)
        .expect("the comparison");
    assert!(
        tail.starts_with("total instructions in shared programs: 20 -> "),
        "{tail}"
    );
    assert!(
        !tail.contains(" helped: corpus/"),
        "four lines per metric only: {tail}"
    );
}
