//! regalloc2 (Cranelift's allocator, 0.15) on chromatic programs, to measure against a
//! peer on the same functions: `Allocator::Regalloc2Ion` (its backtracking allocator,
//! after LLVM's greedy allocator) and `Allocator::Regalloc2Fast` (its single-pass local
//! allocator).
//!
//! A function goes through the front every allocator shares
//! ([`crate::alloc::prepare_function`]: validate, split the edges into phis from
//! branching blocks, which also leaves no critical edge), then [`lower`] presents it
//! through regalloc2's `Function` trait, regalloc2 allocates it, and [`raise`] turns its
//! allocations and edits back into an allocated chromatic function, which our verifier
//! checks like any other.
//!
//! What regalloc2 cannot express is declined with [`AllocError::NotHandled`] naming the
//! reason, never changed to fit: tuples (values of several units), pinned values,
//! divergent branches (regalloc2 has no exec mask: uniform values would follow the wrong
//! CFG), more than three register classes in use, more than 64 registers in a class's
//! budget, and unreachable blocks (regalloc2 allocates only what the entry reaches).
//! Soft hints (`prefer`) and `remat` marks are ignored: they do not change what a correct
//! allocation is.

#[cfg(feature = "regalloc2-fuzzing")]
pub mod fuzz_func;
pub mod lower;
pub mod raise;

use super::{prepare, prepare_function, AllocError, Allocated, Allocator, Prepared, Stages};
use crate::analysis::Analysis;
use crate::program::Function;
use crate::target::Target;
use lower::{Lowered, MAX_REGS};
use regalloc2::{Algorithm, Output, RegallocOptions};

/// A function ready for regalloc2: the prepared function and its regalloc2 view.
#[derive(Debug)]
pub struct Input {
    pub func: Function,
    pub added: Vec<crate::program::Block>,
    pub analysis: Analysis,
    pub lowered: Lowered,
}

/// Prepares and lowers `f` for regalloc2 with `budget` registers per class.
pub fn lower(
    f: &Function,
    target: &Target,
    budget: &[u16],
    allocator: Allocator,
) -> Result<Input, AllocError> {
    let Prepared {
        func,
        added,
        analysis,
    } = prepare_function(f, target)?;
    supported(&func, target, budget, &analysis).map_err(|m| declined(f, allocator, m))?;
    super::baseline::fixed_within_budget(&func, target, budget)?;
    let lowered = Lowered::new(&func, target, budget)?;
    Ok(Input {
        func,
        added,
        analysis,
        lowered,
    })
}

/// Runs regalloc2's `ion` or `fastalloc` on a lowered function.
pub fn run(input: &Input, allocator: Allocator) -> Result<Output, AllocError> {
    let algorithm = match allocator {
        Allocator::Regalloc2Fast => Algorithm::Fastalloc,
        _ => Algorithm::Ion,
    };
    let options = RegallocOptions {
        algorithm,
        ..RegallocOptions::default()
    };
    regalloc2::run(&input.lowered, &input.lowered.env, &options).map_err(|e| {
        declined(
            &input.func,
            allocator,
            format!("regalloc2 refused it: {e:?}"),
        )
    })
}

/// regalloc2's output as an allocated chromatic function (split blocks left empty still
/// there).
pub fn raise(
    input: &Input,
    out: &Output,
    allocator: Allocator,
) -> Result<raise::Raised, AllocError> {
    raise::raise(&input.func, &input.lowered, out).map_err(|m| declined(&input.func, allocator, m))
}

/// Checks regalloc2's output with regalloc2's own checker (`regalloc2::checker`).
#[cfg(feature = "regalloc2-fuzzing")]
pub fn check(input: &Input, out: &Output) -> Result<(), String> {
    let mut checker = regalloc2::checker::Checker::new(&input.lowered, &input.lowered.env);
    checker.prepare(out);
    checker.run().map_err(|e| format!("{e:?}"))
}

/// Allocates one function with regalloc2.
pub fn allocate_function(
    f: &Function,
    target: &Target,
    budget: &[u16],
    allocator: Allocator,
) -> Result<Allocated, AllocError> {
    let input = lower(f, target, budget, allocator)?;
    let out = run(&input, allocator)?;
    let mut func = raise(&input, &out, allocator)?.func;
    let freq = prepare::kept_frequencies(&func, &input.added, &input.analysis.freq);
    prepare::drop_empty(&mut func, &input.added);
    let mut stages = Stages::default();
    stages.ran(allocator.name());
    Ok(Allocated {
        func,
        analysis: input.analysis,
        freq,
        stages,
    })
}

fn declined(f: &Function, allocator: Allocator, message: String) -> AllocError {
    AllocError::NotHandled {
        allocator: allocator.name(),
        function: f.name.clone(),
        message,
    }
}

/// An error for what the lowering cannot express.
pub(crate) fn unsupported(f: &Function, message: String) -> AllocError {
    AllocError::NotHandled {
        allocator: "regalloc2",
        function: f.name.clone(),
        message,
    }
}

/// What regalloc2 cannot express, as a sentence.
fn supported(f: &Function, target: &Target, budget: &[u16], a: &Analysis) -> Result<(), String> {
    if let Some(v) = f.values.iter().find(|v| v.size != 1) {
        return Err(format!(
            "`%{}` is a tuple of {} registers; regalloc2 allocates single registers",
            v.name, v.size
        ));
    }
    if let Some(&v) = f.pinned_values().first() {
        return Err(format!(
            "`%{}` is pinned; regalloc2 has no value that may never move",
            f.value(v).name
        ));
    }
    if let Some(b) = f.blocks.iter().find(|b| b.term.is_divergent()) {
        return Err(format!(
            "block `{}` branches divergently; regalloc2 has no exec mask (uniform and per-lane values follow one CFG)",
            b.name
        ));
    }
    for v in &f.values {
        let c = v.class.index();
        if c >= 3 {
            return Err(format!(
                "`%{}` is of class `{}`, the target's class {}; regalloc2 has three classes",
                v.name,
                target.classes[c].name,
                c + 1
            ));
        }
        if budget[c] > MAX_REGS {
            return Err(format!(
                "class `{}` has {} registers; regalloc2 allows at most {MAX_REGS} a class (give `--regs {}={MAX_REGS}` or fewer)",
                target.classes[c].name, budget[c], target.classes[c].name
            ));
        }
    }
    if let Some(b) = f.block_ids().find(|&b| !a.cfg.is_reachable(b)) {
        return Err(format!(
            "block `{}` is unreachable; regalloc2 allocates only what the entry reaches",
            f.block(b).name
        ));
    }
    Ok(())
}
