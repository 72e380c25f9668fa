//! The full pipeline on one program: allocate, verify independently, and compare the
//! interpreter's traces of the original and the allocated program.

use chromatic::alloc::{allocate, AllocError, AllocOptions, FunctionStats};
use chromatic::Program;
use chromatic_verifier::interp::{run, Config};

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
                run(g, &allocated.target, &config),
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
