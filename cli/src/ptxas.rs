//! NVIDIA's assembler as a reference: running `ptxas -v` and reading its per-function
//! register and spill counts, or reading them from a manifest of earlier runs.
//!
//! `ptxas -v` prints, per function, `Function properties for NAME`, then `S bytes spill
//! stores, L bytes spill loads`, then `Used N registers` (CUDA Toolkit documentation,
//! "ptxas options": `--verbose`). A manifest is a tab-separated file with a header and the
//! columns `file` (relative to the manifest's folder), `kernel`, `arch`, `ptxas_regs`,
//! `spill_store_bytes`, `spill_load_bytes`.

use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// What ptxas reported for one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub regs: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

impl Counts {
    pub fn spill_bytes(&self) -> u32 {
        self.spill_store_bytes + self.spill_load_bytes
    }
}

/// A `ptxas` executable.
#[derive(Clone, Debug)]
pub struct Ptxas {
    path: PathBuf,
}

impl Ptxas {
    /// `explicit`, else `ptxas` on the `PATH`, when it runs.
    pub fn find(explicit: Option<&str>) -> anyhow::Result<Option<Ptxas>> {
        let path = crate::tool::find(explicit, "ptxas", "ptxas")?;
        Ok(path.map(|path| Ptxas { path }))
    }

    /// Assembles `ptx` for `arch`, with `--maxrregcount K` when given; the counts per
    /// function, or ptxas's error output.
    pub fn assemble(
        &self,
        ptx: &str,
        arch: &str,
        max_regs: Option<u16>,
    ) -> Result<HashMap<String, Counts>, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let file = std::env::temp_dir().join(format!(
            "chromatic-{}-{}.ptx",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, ptx).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut cmd = Command::new(&self.path);
        cmd.arg("-v").arg(format!("-arch={arch}"));
        if let Some(k) = max_regs {
            cmd.arg(format!("--maxrregcount={k}"));
        }
        let output = cmd.arg(&file).arg("-o").arg(null_device()).output();
        let _ = std::fs::remove_file(&file);
        let output = output.map_err(|e| format!("{}: {e}", self.path.display()))?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            Ok(parse_verbose(&text))
        } else {
            Err(text.lines().take(5).collect::<Vec<_>>().join("\n"))
        }
    }
}

fn null_device() -> &'static str {
    if cfg!(windows) {
        "NUL"
    } else {
        "/dev/null"
    }
}

/// The counts per function in `ptxas -v` output.
pub fn parse_verbose(text: &str) -> HashMap<String, Counts> {
    let mut out: HashMap<String, Counts> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(name) = &current {
            let entry = out.entry(name.clone()).or_default();
            if let Some(n) = number_before(line, " bytes spill stores") {
                entry.spill_store_bytes = n;
            }
            if let Some(n) = number_before(line, " bytes spill loads") {
                entry.spill_load_bytes = n;
            }
            if let Some(n) = line
                .split("Used ")
                .nth(1)
                .and_then(|r| number_before(r, " registers"))
            {
                entry.regs = n;
            }
        }
    }
    out
}

/// The number just before `suffix` in `line`.
fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let head = &line[..line.find(suffix)?];
    head.rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
}

/// ptxas's counts from a manifest, by (file, kernel).
#[derive(Debug, Default)]
pub struct Manifest {
    rows: HashMap<(PathBuf, String), Counts>,
}

impl Manifest {
    pub fn read(path: &str) -> anyhow::Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let dir = Path::new(path).parent().unwrap_or(Path::new("."));
        let mut lines = text.lines().enumerate();
        let header: Vec<&str> = lines
            .next()
            .map(|(_, l)| l.split('\t').collect())
            .unwrap_or_default();
        let column = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .ok_or_else(|| anyhow::anyhow!("{path}: no column `{name}`"))
        };
        let (file, kernel, regs, stores, loads) = (
            column("file")?,
            column("kernel")?,
            column("ptxas_regs")?,
            column("spill_store_bytes")?,
            column("spill_load_bytes")?,
        );
        let mut rows = HashMap::new();
        for (n, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
            let cells: Vec<&str> = line.split('\t').collect();
            let cell = |i: usize| {
                cells
                    .get(i)
                    .copied()
                    .ok_or_else(|| anyhow::anyhow!("{path}:{}: too few columns", n + 1))
            };
            let number = |i: usize| -> anyhow::Result<u32> {
                cell(i)?.trim().parse().map_err(|_| {
                    anyhow::anyhow!("{path}:{}: column {} is not a number", n + 1, i + 1)
                })
            };
            let key = (normalise(&dir.join(cell(file)?)), cell(kernel)?.to_string());
            rows.insert(
                key,
                Counts {
                    regs: number(regs)?,
                    spill_store_bytes: number(stores)?,
                    spill_load_bytes: number(loads)?,
                },
            );
        }
        Ok(Manifest { rows })
    }

    pub fn get(&self, file: &Path, kernel: &str) -> Option<Counts> {
        self.rows
            .get(&(normalise(file), kernel.to_string()))
            .copied()
    }
}

/// A path with `.` components dropped and made absolute when it exists.
fn normalise(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.components().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verbose_output() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
ptxas info    : Function properties for k\n\
    0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 48 registers, used 0 barriers\n\
ptxas info    : Function properties for g\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 6 registers, used 1 barriers, 360 bytes cmem[0]\n";
        let counts = parse_verbose(text);
        assert_eq!(
            counts["k"],
            Counts {
                regs: 48,
                spill_store_bytes: 8,
                spill_load_bytes: 12
            }
        );
        assert_eq!(counts["g"].regs, 6);
    }
}
