//! Pressure scheduling end to end: `alloc --schedule`, the verifier and the interpreter on
//! the reordered allocation, and `schedule-gap` against the exact optimum.

mod common;

use common::chromatic;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_file(name: &str, contents: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-schedule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("temp file");
    path.display().to_string()
}

/// Three loads issued first, each consumed later: three values live at once in the
/// emitted order, two when each load sits next to its use.
const LOADS_FIRST: &str = "target generic s=8 v=8
func @loads_first {
entry:
  %a:v1 = load 0 reads
  %b:v1 = load 4 reads
  %c:v1 = load 8 reads
  %x:v1 = mul %a, %a
  %y:v1 = mul %b, %b
  %z:v1 = mul %c, %c
  %s:v1 = add %x, %y
  %t:v1 = add %s, %z
  ret %t
}
";

#[test]
fn pressure_schedule_lowers_max_live_and_verifies() {
    let original = temp_file("loads_first.chr", LOADS_FIRST);
    let allocated = temp_file("loads_first.alloc.chr", "");
    let out = chromatic(&[
        "alloc",
        &original,
        "--schedule",
        "pressure",
        "--stats",
        "-o",
        &allocated,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stats = text(&out.stdout);
    assert!(
        stats.contains("scheduled: 1 blocks reordered; max_live emitted -> scheduled: v 3 -> 2"),
        "{stats}"
    );
    let out = chromatic(&["verify", &original, &allocated]);
    assert_eq!(text(&out.stdout), format!("{allocated}: valid\n"));
    let out = chromatic(&["run", &original, "--against", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = chromatic(&["alloc", &original, "--schedule", "none", "--stats"]);
    let stats = text(&out.stderr);
    assert!(!stats.contains("scheduled:"), "{stats}");
    assert!(stats.contains("  v             3"), "{stats}");
}

#[test]
fn schedule_flag_rejects_other_values() {
    let out = chromatic(&["alloc", "corpus/straight_line.chr", "--schedule", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected pressure or none"));
}

/// On the shipped corpus every block is solved, the scheduler is never worse than the
/// emitted order, and it is within a few percent of the optimum on average.
#[test]
fn schedule_gap_on_the_corpus() {
    let out = chromatic(&["schedule-gap", "corpus"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].ends_with("unsolved: 0"), "{}", lines[0]);
    let mean: f64 = lines[1]
        .strip_prefix("heuristic / optimum: mean ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|m| m.parse().ok())
        .expect("the mean");
    assert!((1.0..1.05).contains(&mean), "{}", lines[1]);
    assert_eq!(lines[2], "scheduled worse than emitted: 0");
}
