//! The full pipeline on one program: allocate, verify independently, and compare the
//! interpreter's traces of the original and the allocated program.

use chromatic::alloc::{allocate, budget_of, AllocError, AllocOptions, FunctionStats};
use chromatic::Program;
use chromatic_verifier::interp::{run, run_allocation, Config};

/// Seeds on which the original and the allocated program must behave alike.
pub const SEEDS: [u64; 3] = [0, 1, 2];

/// What happened to one program.
#[derive(Debug)]
pub enum Verdict {
    /// Allocated, verified, and the traces agree.
    Verified {
        allocated: Program,
        stats: Vec<FunctionStats>,
    },
    /// The budget is below what an instruction needs even with everything else spilled
    /// (below the lowest legal budget), or a baseline allocator declined the program.
    OverBudget(AllocError),
    /// A real failure: an allocation error other than pressure, a verifier error, or
    /// traces that disagree.
    Failed(String),
}

pub fn run_pipeline(program: &Program, options: &AllocOptions) -> Verdict {
    let (allocated, stats) = match allocate(program, options) {
        Ok(result) => result,
        Err(
            e @ (AllocError::Pressure { .. }
            | AllocError::BelowLowest { .. }
            | AllocError::NotHandled { .. }),
        ) => return Verdict::OverBudget(e),
        Err(e) => return Verdict::Failed(format!("allocation failed: {e}")),
    };
    let budget = match chromatic::alloc::budget_of(&program.target, options) {
        Ok(b) => b,
        Err(e) => return Verdict::Failed(e.to_string()),
    };
    let errors = chromatic_verifier::verify_program(program, &allocated, Some(&budget));
    if let Some(e) = errors.first() {
        return Verdict::Failed(format!("verifier: {e} ({} errors)", errors.len()));
    }
    if let Some(message) = traces_disagree(program, &allocated) {
        return Verdict::Failed(message);
    }
    Verdict::Verified { allocated, stats }
}

/// The first difference between the interpreter traces of the original and allocated
/// programs, over [`SEEDS`].
pub fn traces_disagree(original: &Program, allocated: &Program) -> Option<String> {
    for (f, g) in original.functions.iter().zip(&allocated.functions) {
        for seed in SEEDS {
            let config = Config {
                seed,
                ..Config::default()
            };
            let (a, b) = (
                run(f, &original.target, &config),
                run_allocation(g, f, &allocated.target, &config),
            );
            if let Some(i) = a.first_divergence(&b) {
                return Some(format!(
                    "@{}: interpreter traces differ at event {i} (seed {seed})",
                    f.name
                ));
            }
        }
    }
    None
}

/// Microseconds spent on one input: its import (shared by a file's kernels), allocation
/// and verification.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Times {
    pub import_us: u64,
    pub alloc_us: u64,
    pub verify_us: u64,
}

impl Times {
    pub fn total(&self) -> u64 {
        self.import_us + self.alloc_us + self.verify_us
    }
}

/// Allocates, verifies and compares traces, adding the time taken to `times`; the
/// allocation or what went wrong.
pub fn checked(
    p: &Program,
    options: &AllocOptions,
    times: Option<&mut Times>,
) -> Result<(Program, Vec<FunctionStats>), String> {
    let start = std::time::Instant::now();
    let (allocated, stats) = allocate(p, options).map_err(|e| format!("allocation failed: {e}"))?;
    let alloc_us = start.elapsed().as_micros() as u64;
    let budget = budget_of(&p.target, options).map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    let errors = chromatic_verifier::verify_program(p, &allocated, Some(&budget));
    if let Some(t) = times {
        t.alloc_us += alloc_us;
        t.verify_us += start.elapsed().as_micros() as u64;
    }
    if let Some(e) = errors.first() {
        return Err(format!("verifier: {e} ({} errors)", errors.len()));
    }
    if let Some(message) = traces_disagree(p, &allocated) {
        return Err(message);
    }
    Ok((allocated, stats))
}

/// The largest `get` of class `class` over the functions' statistics (0 when none has it).
pub fn class_max(
    stats: &[FunctionStats],
    class: &str,
    get: impl Fn(&chromatic::alloc::ClassStats) -> u32,
) -> u32 {
    stats
        .iter()
        .flat_map(|s| &s.classes)
        .filter(|c| c.class == class)
        .map(get)
        .max()
        .unwrap_or(0)
}
