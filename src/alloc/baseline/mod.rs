//! Baseline allocators, to measure the production allocator against: Chaitin–Briggs
//! graph colouring ([`coloring`]) and linear scan with interval splitting ([`linear`]).
//! Colouring takes the program out of SSA the classic way — one register per value for
//! its whole life, copies for phis on the incoming edges, copies around constrained
//! instructions ([`ranges`]) — and spills by storing a value after its definition and
//! reloading it before each use, then allocates again: for a baseline, that iteration is
//! the algorithm itself (each round is counted in [`super::Stages`]). Linear scan splits
//! the intervals of per-lane values where registers run out and resolves the data flow
//! on the edges; it goes round again only for what it does not split (uniform values).
//! Their allocations are in the same format and checked by the same verifier as the
//! production allocator's.
//!
//! What they do not handle they decline with [`AllocError::NotHandled`], never with a
//! wrong allocation: pinned values, a uniform phi in a block the linear CFG enters from
//! a then-side, a range that does not fit even after everything spillable around it was
//! spilled, and the divergent shapes the production allocator rejects too
//! ([`super::structure`]).

pub mod coloring;
pub mod linear;
pub mod ranges;
pub mod rewrite;
pub mod select;

use super::{
    prepare, prepare_function, AllocError, Allocated, Allocator, Policy, Prepared, Stages,
};
use crate::analysis::Analysis;
use crate::program::{Function, Location, Value};
use crate::target::Target;
use std::collections::BTreeSet;

/// What one round of colouring found.
#[derive(Debug)]
pub enum Round {
    /// A start unit for every range in a register.
    Done(Vec<Option<u16>>),
    /// Values to spill before the next round.
    Spill(Vec<Value>),
    /// A range spilling cannot help found no register.
    Stuck(u32),
}

impl Round {
    fn finish(loc: Vec<Option<u16>>, spills: Vec<Value>, stuck: Option<u32>) -> Round {
        match (spills.is_empty(), stuck) {
            (false, _) => Round::Spill(spills),
            (true, Some(r)) => Round::Stuck(r),
            (true, None) => Round::Done(loc),
        }
    }
}

/// What one round of a baseline allocator ended with.
#[derive(Debug)]
pub enum Outcome {
    /// The allocated function.
    Done(Function),
    /// Values to spill everywhere before the next round.
    Spill(Vec<Value>),
    /// A value no register could be found for, spilling or not.
    Stuck(Value),
    /// An inconsistency in the allocator's own result.
    Internal(String),
}

/// One round of Chaitin–Briggs colouring with `spilled` in memory.
fn colour_round(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
    policy: Policy,
    spilled: &BTreeSet<Value>,
) -> Outcome {
    let model = ranges::build(f, target, a, spilled);
    match coloring::color(&model, budget, policy) {
        Round::Done(loc) => Outcome::Done(rewrite::rewrite(f, a, &model, &loc, spilled)),
        Round::Spill(values) => Outcome::Spill(values),
        Round::Stuck(r) => Outcome::Stuck(model.ranges[r as usize].value),
    }
}

/// Allocates one function with a baseline: validate, split copy-less edges, check the
/// divergent shape, then colour and spill until everything fits.
pub fn allocate_function(
    f: &Function,
    target: &Target,
    budget: &[u16],
    allocator: Allocator,
    policy: Policy,
) -> Result<Allocated, AllocError> {
    let Prepared {
        func: prepared,
        added,
        analysis: a,
    } = prepare_function(f, target)?;
    let declined = |message: String| AllocError::NotHandled {
        allocator: allocator.name(),
        function: f.name.clone(),
        message,
    };
    supported(&prepared, target, &a).map_err(declined)?;
    fixed_within_budget(&prepared, target, budget)?;
    let mut spilled = BTreeSet::new();
    let mut stages = Stages::default();
    loop {
        stages.ran("colour");
        let outcome = match allocator {
            Allocator::Linear => linear::allocate(&prepared, target, &a, budget, policy, &spilled),
            _ => colour_round(&prepared, target, &a, budget, policy, &spilled),
        };
        match outcome {
            Outcome::Done(mut func) => {
                let freq = prepare::kept_frequencies(&func, &added, &a.freq);
                prepare::drop_empty(&mut func, &added);
                return Ok(Allocated {
                    func,
                    analysis: a,
                    freq,
                    stages,
                });
            }
            Outcome::Spill(values) => spilled.extend(values),
            Outcome::Stuck(v) => {
                let class = target.class(prepared.value(v).class);
                return Err(declined(format!(
                    "no `{}` register for `%{}` within the budget of {} (even with everything around it spilled)",
                    class.name,
                    prepared.value(v).name,
                    budget[prepared.value(v).class.index()]
                )));
            }
            Outcome::Internal(message) => {
                return Err(AllocError::Internal {
                    function: f.name.clone(),
                    message,
                })
            }
        }
    }
}

/// A fixed register beyond the budget is a budget below the lowest legal one.
pub(crate) fn fixed_within_budget(
    f: &Function,
    target: &Target,
    budget: &[u16],
) -> Result<(), AllocError> {
    for block in &f.blocks {
        let ops = block.insts.iter().filter_map(|i| i.op());
        let defs = ops
            .clone()
            .flat_map(|op| op.defs.iter().map(|d| (d.fixed, d.pos)));
        let uses = ops
            .flat_map(|op| op.uses())
            .chain(block.term.uses())
            .map(|u| (u.fixed, u.pos));
        for (fixed, pos) in defs.chain(uses) {
            let Some(Location::Reg { class, first, len }) = fixed else {
                continue;
            };
            let needed = u32::from(first) + u32::from(len);
            if needed > u32::from(budget[class.index()]) {
                return Err(AllocError::BelowLowest {
                    function: f.name.clone(),
                    pos,
                    class: target.class(class).name.clone(),
                    needed,
                    budget: budget[class.index()],
                });
            }
        }
    }
    Ok(())
}

/// What the baselines decline.
fn supported(f: &Function, target: &Target, a: &Analysis) -> Result<(), String> {
    if !f.pinned_values().is_empty() {
        return Err("pinned values (accumulators in flight) are not handled".into());
    }
    for b in f.block_ids() {
        let uniform_phi = f
            .block(b)
            .phis
            .iter()
            .any(|p| target.class(f.value(p.def.value).class).uniform);
        if uniform_phi && a.divergence.linear.preds(b).len() != a.cfg.preds(b).len() {
            return Err(format!(
                "block `{}` has uniform phis and is entered from a then-side on the linear CFG",
                f.block(b).name
            ));
        }
    }
    Ok(())
}
