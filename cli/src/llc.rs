//! LLVM's static compiler as the consumer of exported allocations: `llc-19` continuing an
//! exported `.mir` from after register allocation to AMDGPU assembly, and the register
//! counts of the kernels it emits.
//!
//! The exported MIR is read with `-start-after=virtregrewriter,1` (the second
//! `virtregrewriter`, after the VGPR allocation; `chromatic::mir::export` says why) and
//! the machine verifier that `llc` runs on MIR it reads. The counts come from the AMDHSA
//! metadata of the assembly (`.vgpr_count`, `.sgpr_count`, `.agpr_count`, per kernel
//! under `amdhsa.kernels`, AMDGPU Usage, "Code Object V3 Metadata").

use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What the assembly says of one kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounts {
    pub vgprs: u32,
    pub sgprs: u32,
    pub agprs: u32,
}

/// An `llc` executable with the AMDGPU target.
#[derive(Clone, Debug)]
pub struct Llc {
    path: PathBuf,
}

impl Llc {
    /// `explicit`, else `llc-19` on the `PATH`, when it runs.
    pub fn find(explicit: Option<&str>) -> anyhow::Result<Option<Llc>> {
        let path = crate::tool::find(explicit, "llc-19", "llc")?;
        Ok(path.map(|path| Llc { path }))
    }

    /// Assembles exported MIR for `cpu`: the counts per kernel, or llc's first error lines.
    pub fn assemble(&self, mir: &str, cpu: &str) -> Result<Vec<(String, KernelCounts)>, String> {
        let mut child = Command::new(&self.path)
            .args([
                "-mtriple=amdgcn-amd-amdhsa",
                &format!("-mcpu={cpu}"),
                "-O3",
                "-start-after=virtregrewriter,1",
                "-x",
                "mir",
                "-",
                "-o",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let mut stdin = child.stdin.take().ok_or("llc: no standard input")?;
        let input = mir.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let output = child
            .wait_with_output()
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        let written = writer.join().map_err(|_| "llc: writing its input failed")?;
        if output.status.success() {
            written.map_err(|e| format!("llc: {e}"))?;
            Ok(kernel_counts(&String::from_utf8_lossy(&output.stdout)))
        } else {
            let text = String::from_utf8_lossy(&output.stderr);
            Err(first_error(&text))
        }
    }
}

/// The lines of llc's error output that say what is wrong (not the stack dump).
fn first_error(text: &str) -> String {
    let useful: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.trim_start().starts_with('#')
                && !l.starts_with("Stack dump")
                && !l.starts_with("PLEASE")
        })
        .filter(|l| !l.trim().is_empty())
        .take(6)
        .collect();
    useful.join(" | ")
}

/// The counts per kernel in the AMDHSA metadata of an assembly listing.
pub fn kernel_counts(asm: &str) -> Vec<(String, KernelCounts)> {
    let Some(start) = asm.find("amdhsa.kernels:") else {
        return Vec::new();
    };
    let mut out: Vec<(String, KernelCounts)> = Vec::new();
    for line in asm[start..].lines().skip(1) {
        if !line.starts_with("  ") {
            break;
        }
        if line.starts_with("  - ") {
            out.push((String::new(), KernelCounts::default()));
        }
        let Some((name, counts)) = out.last_mut() else {
            continue;
        };
        let entry = line.trim_start_matches([' ', '-']);
        let Some((key, value)) = entry.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let number = || value.parse().unwrap_or(0);
        match key {
            ".name" => *name = value.to_string(),
            ".vgpr_count" => counts.vgprs = number(),
            ".sgpr_count" => counts.sgprs = number(),
            ".agpr_count" => counts.agprs = number(),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_counts_per_kernel() {
        let asm = "\t.text\namdhsa.kernels:\n  - .agpr_count:     2\n    .name:           saxpy\n    .sgpr_count:     18\n    .vgpr_count:     4\n    .vgpr_spill_count: 0\namdhsa.target:   amdgcn-amd-amdhsa--gfx942\n";
        assert_eq!(
            kernel_counts(asm),
            [(
                "saxpy".to_string(),
                KernelCounts {
                    vgprs: 4,
                    sgprs: 18,
                    agprs: 2
                }
            )]
        );
    }
}
