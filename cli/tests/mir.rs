//! LLVM AMDGPU machine IR end to end: import, allocation, verification and the `mir`
//! comparison with LLVM 19, with the binary.

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
    let dir = std::env::temp_dir().join(format!("chromatic-mir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path.display().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SAXPY: &str = "corpus/amd/ocl_saxpy-gfx942.mir";
const MANDELBROT: &str = "corpus/amd/ocl_mandelbrot-gfx1100.mir";

#[test]
fn check_reads_mir_with_its_target() {
    let out = chromatic(&["check", SAXPY, MANDELBROT]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("{SAXPY}: target gfx942\n  @saxpy: 3 blocks, ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{MANDELBROT}: target gfx11-w32\n")),
        "{text}"
    );
}

#[test]
fn allocation_of_mir_saves_and_verifies() {
    let out_path = temp_file("mandelbrot.alloc.chr", "");
    let out = chromatic(&["alloc", MANDELBROT, "-o", &out_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let verified = chromatic(&["verify", MANDELBROT, &out_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let run = chromatic(&["run", MANDELBROT, "--against", &out_path]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
}

#[test]
fn malformed_mir_is_a_positioned_error() {
    let text = std::fs::read_to_string(root().join(SAXPY)).expect("kernel");
    let bad = text.replacen("S_ENDPGM 0", "S_ENDPGM 0 ^", 1);
    let line = bad
        .lines()
        .position(|l| l.contains("S_ENDPGM 0 ^"))
        .expect("edited")
        + 1;
    let path = temp_file("bad.mir", &bad);
    for command in ["check", "alloc", "run"] {
        let out = chromatic(&[command, &path]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let err = stderr(&out);
        assert!(err.contains("unexpected character `^`"), "{command}: {err}");
        assert!(
            err.contains(&format!("bad.mir:{line}:16")),
            "{command}: {err}"
        );
    }
}

/// The comparison with LLVM 19 on the sample: every kernel allocated, verified and
/// interpreted; LLVM's figures are the manifest's; the run is deterministic.
#[test]
fn mir_command_compares_with_llvm() {
    let args = [
        "mir",
        "corpus/amd",
        "--manifest",
        "corpus/amd/manifest.tsv",
        "--at-llvm",
    ];
    let out = chromatic(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let kernels = std::fs::read_dir(root().join("corpus/amd"))
        .expect("corpus/amd")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "mir"))
        })
        .count();
    assert!(
        text.contains(&format!(
            "kernels: {kernels}  allocated, verified and interpreted: {kernels}  failed: 0"
        )),
        "{text}"
    );
    let saxpy = text
        .lines()
        .find(|l| l.starts_with(&format!("{SAXPY} @saxpy:")))
        .expect("saxpy line");
    assert!(
        saxpy.contains("llvm s=12 v=6 a=0  vgpr_file 6  occupancy 8"),
        "{saxpy}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("VGPRs <= LLVM on ") && last.ends_with(&format!("/{kernels} kernels")),
        "{last}"
    );
    assert_eq!(stdout(&chromatic(&args)), text);
}
