//! What `chromatic report` measures of one function under one allocator, read from the
//! allocated program alone ([`FunctionStats`]), and the JSON file `--save` writes.
//!
//! The saved file is meant to be diffed and compared: records are sorted by file,
//! function and allocator, the per-class maps are sorted by class, and allocation times,
//! which change from run to run, are saved only when asked for (`--times`), apart from
//! the records in `times_us` at the end; two saves of the same allocations are
//! identical.

use chromatic::alloc::FunctionStats;
use chromatic::{Function, InstKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One function of one file under one allocator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub file: String,
    pub function: String,
    pub allocator: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What happened to the function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// Allocated, verified, and interpreted like the original.
    Verified(Metrics),
    /// The allocator declined the program (a budget below what an instruction needs, or a
    /// baseline's limit), with its reason.
    NotAllocated { reason: String },
    /// The allocator produced something wrong or failed unexpectedly.
    Failed { reason: String },
}

/// The measured allocation of one function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Instructions after allocation: operations plus every move, swap, spill, reload and
    /// remat allocation added (a parallel copy counts its moves).
    pub instructions: u64,
    /// Waves (AMD) or warps (NVIDIA); absent on targets without an occupancy model.
    pub occupancy: Option<u32>,
    pub classes: BTreeMap<String, ClassMetrics>,
}

/// Per register class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassMetrics {
    /// MaxLive in the emitted order.
    #[serde(default)]
    pub max_live_emitted: u32,
    /// MaxLive of the order allocated (after scheduling, when it ran).
    #[serde(default)]
    pub max_live: u32,
    /// Highest register used + 1.
    pub registers: u32,
    /// Spills to memory, lanes or another class.
    pub spills: u32,
    pub reloads: u32,
    pub remats: u32,
    /// Copies and swaps.
    pub copies: u32,
    /// Spill code weighted by the target's costs and block frequencies.
    pub spill_cost: f64,
    /// Copies and swaps weighted by block frequency.
    pub copy_cost: f64,
}

impl Metrics {
    pub fn of(stats: &FunctionStats, allocated: &Function) -> Metrics {
        let classes = stats
            .classes
            .iter()
            .filter(|c| c.max_live > 0 || c.regs_used > 0)
            .map(|c| {
                let m = ClassMetrics {
                    max_live_emitted: c.max_live_emitted,
                    max_live: c.max_live,
                    registers: u32::from(c.regs_used),
                    spills: c.spills + c.lane_spills + c.class_spills,
                    reloads: c.reloads,
                    remats: c.remats,
                    copies: c.copies + c.swaps,
                    spill_cost: rounded(c.spill_cost),
                    copy_cost: rounded(c.weighted_copies),
                };
                (c.class.clone(), m)
            })
            .collect();
        Metrics {
            instructions: instructions_after(allocated),
            occupancy: stats.occupancy,
            classes,
        }
    }

    /// Whether no value went to memory, lanes or another class.
    pub fn spill_free(&self) -> bool {
        self.classes.values().all(|c| c.spills + c.reloads == 0)
    }
}

/// A sum of block frequencies to a thousandth, without floating-point noise.
pub fn rounded(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0 + 0.0
}

fn instructions_after(f: &Function) -> u64 {
    let count = |kind: &InstKind| match kind {
        InstKind::ParallelCopy(moves) => moves.len() as u64,
        _ => 1,
    };
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .map(|i| count(&i.kind))
        .sum()
}

/// The file `--save` writes and `--baseline` reads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    pub records: Vec<Record>,
    /// Allocation time per `file @function [allocator]`, apart from the records because it
    /// is noise.
    #[serde(default)]
    pub times_us: BTreeMap<String, u64>,
}

impl Saved {
    pub fn read(path: &str) -> anyhow::Result<Saved> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{path}: not a saved report: {e}"))
    }

    pub fn write(&self, path: &str) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{path}: {e}"))
    }
}

/// `file @function`, and ` [allocator]` when a run has several.
pub fn program_name(r: &Record, with_allocator: bool) -> String {
    if with_allocator {
        format!("{} @{} [{}]", r.file, r.function, r.allocator)
    } else {
        format!("{} @{}", r.file, r.function)
    }
}
