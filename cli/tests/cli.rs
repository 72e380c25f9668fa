//! The `chromatic` binary end to end: exit codes, positioned errors, canonical output.

use std::path::PathBuf;
use std::process::{Command, Output};

fn chromatic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chromatic"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path.display().to_string()
}

/// s=8 comes from the linear CFG: %desc (4 units), live into the else-side, is live
/// through the then-side next to %scale, %t0 and %t1 (1 + 2 + 1).
#[test]
fn check_summarises_a_corpus_file() {
    let out = chromatic(&["check", "corpus/divergent_uniform_live_through_else.chr"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "corpus/divergent_uniform_live_through_else.chr: target gfx9\n  @divergent_uniform_live_through_else: 4 blocks, 11 instructions, 10 values, max_live s=8 v=2\n"
    );
}

#[test]
fn check_points_at_the_error_and_exits_1() {
    let path = temp_file(
        "bad.chr",
        "target gfx9\nfunc @f {\nb:\n  %x:v1 = foo %y\n  ret\n}\n",
    );
    let out = chromatic(&["check", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: undefined value `%y`"), "{stderr}");
    assert!(stderr.contains(&format!("{path}:4:15")), "{stderr}");
}

#[test]
fn check_reports_ssa_errors_with_positions() {
    let src = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  branch uniform %c, b, d\nb:\n  %x:v1 = x\n  jump d\nd:\n  ret %x\n}\n";
    let path = temp_file("ssa.chr", src);
    let out = chromatic(&["check", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the definition of `%x` does not dominate this use"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("{path}:10:7")), "{stderr}");
}

#[test]
fn unreadable_input_exits_2() {
    let out = chromatic(&["check", "does/not/exist.chr"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn fmt_prints_the_canonical_form() {
    let path = temp_file(
        "messy.chr",
        "target  gfx9 ; t\nfunc @f {\nb:   ; entry\n  %x:v1=foo   1,2\n    ret %x\n}\n",
    );
    let out = chromatic(&["fmt", &path]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "target gfx9\n\nfunc @f {\nb:\n  %x:v1 = foo 1, 2\n  ret %x\n}\n"
    );
}

#[test]
fn corpus_job_runs_every_file() {
    let out = chromatic(&["corpus", "corpus"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("files: ") && last.ends_with("failed: 0"),
        "{last}"
    );
}
