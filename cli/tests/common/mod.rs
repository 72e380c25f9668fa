//! What the CLI's integration tests share: the binary, run from the repository root.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The repository root, where the tests' relative paths start.
#[allow(dead_code, reason = "not every test file joins paths to the root")]
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `chromatic` with `args` from the repository root.
pub fn chromatic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chromatic"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs")
}
