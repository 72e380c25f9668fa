//! External tools the CLI runs when they are there (`ptxas`, `llc-19`).

use std::path::PathBuf;
use std::process::Command;

/// The tool named by `--{option}` when given, else `default` on the `PATH`, when it runs
/// (`--version` succeeds). A named tool that does not run is an error; an absent default
/// is `None`.
pub fn find(
    explicit: Option<&str>,
    default: &str,
    option: &str,
) -> anyhow::Result<Option<PathBuf>> {
    let path = PathBuf::from(explicit.unwrap_or(default));
    let runs = Command::new(&path)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    match (runs, explicit) {
        (true, _) => Ok(Some(path)),
        (false, Some(named)) => anyhow::bail!("--{option} {named}: does not run"),
        (false, None) => Ok(None),
    }
}
