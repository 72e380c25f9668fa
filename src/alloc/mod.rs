//! The production allocator: `assign` (SSA assignment with live-range splitting) then
//! `out_of_ssa` (edge copies, sequentialised). The allocator always minimises the highest
//! register used per class within the budget: a budget below the pressure of the program
//! is an error (spilling comes in a later stage), never a panic.

pub mod assign;
pub mod out_of_ssa;
pub mod parallel_copy;
pub mod regfile;
pub mod stats;
pub mod structure;

pub use regfile::Policy;
pub use stats::{ClassStats, FunctionStats};

use crate::analysis::{ssa, Analysis};
use crate::program::{Block, Function, Pos, Program};
use crate::target::{ClassId, Target};
use std::time::Instant;

/// The memory slot used to break a copy cycle when a class has neither a swap nor a free
/// register at that point.
pub const TEMP_SLOT: u32 = 0;

/// How to allocate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocOptions {
    /// Units usable per class name; a class not named uses its whole file.
    pub budget: Vec<(String, u16)>,
    pub policy: Policy,
}

/// Why a program could not be allocated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AllocError {
    #[error("@{function}: not valid SSA: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        function: String,
        errors: Vec<ssa::SsaError>,
    },
    #[error("{pos}: @{function}: `{class}` needs {needed} registers in block `{block}` but the budget is {budget} (spilling is not available yet)")]
    Pressure {
        function: String,
        block: String,
        pos: Pos,
        class: String,
        needed: u32,
        budget: u16,
    },
    #[error("{pos}: @{function}, block `{block}`: {message}")]
    Constraint {
        function: String,
        block: String,
        pos: Pos,
        message: String,
    },
    #[error("the budget names class `{0}`, which the target does not have")]
    UnknownClass(String),
    #[error("the budget for `{class}` is {budget}, above the {units} registers the target has")]
    BudgetTooLarge {
        class: String,
        budget: u16,
        units: u16,
    },
}

impl AllocError {
    /// The source position, when the error has one.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            AllocError::Invalid { errors, .. } => errors.first().map(|e| e.pos),
            AllocError::Pressure { pos, .. } | AllocError::Constraint { pos, .. } => Some(*pos),
            _ => None,
        }
    }
}

/// Resolves the budget per class of `target`.
pub fn budget_of(target: &Target, opts: &AllocOptions) -> Result<Vec<u16>, AllocError> {
    let mut budget: Vec<u16> = target.classes.iter().map(|c| c.units).collect();
    for (name, k) in &opts.budget {
        let c = target
            .class_by_name(name)
            .ok_or_else(|| AllocError::UnknownClass(name.clone()))?;
        let units = target.class(c).units;
        if *k > units {
            return Err(AllocError::BudgetTooLarge {
                class: name.clone(),
                budget: *k,
                units,
            });
        }
        budget[c.index()] = *k;
    }
    Ok(budget)
}

/// Allocates every function of `p`; returns the allocated program and statistics.
pub fn allocate(
    p: &Program,
    opts: &AllocOptions,
) -> Result<(Program, Vec<FunctionStats>), AllocError> {
    let budget = budget_of(&p.target, opts)?;
    let mut functions = Vec::with_capacity(p.functions.len());
    let mut stats = Vec::with_capacity(p.functions.len());
    for f in &p.functions {
        let start = Instant::now();
        let (g, a) = allocate_function(f, &p.target, &budget, opts.policy)?;
        let micros = start.elapsed().as_micros() as u64;
        stats.push(stats::collect(f, &g, &p.target, &a, micros));
        functions.push(g);
    }
    Ok((
        Program {
            target: p.target.clone(),
            functions,
        },
        stats,
    ))
}

/// Allocates one function; also returns the analysis of the original.
pub fn allocate_function(
    f: &Function,
    target: &Target,
    budget: &[u16],
    policy: Policy,
) -> Result<(Function, Analysis), AllocError> {
    if let Err(errors) = ssa::validate(f, target) {
        return Err(AllocError::Invalid {
            function: f.name.clone(),
            errors,
        });
    }
    let a = Analysis::new(f, target);
    check_pressure(f, target, &a, budget)?;
    structure::check_structured(f, target, &a)?;
    let assigned = assign::assign(f, target, &a, budget, policy)?;
    let g = out_of_ssa::lower(assigned, target, &a, budget)?;
    Ok((g, a))
}

/// MaxLive above the budget is an error pointing at the first point where it happens.
fn check_pressure(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Result<(), AllocError> {
    for c in target.class_ids() {
        let k = budget[c.index()];
        if a.pressure.max_live(c) <= u32::from(k) {
            continue;
        }
        let (block, point, needed) = first_excess(f, a, c, k);
        let data = f.block(block);
        let pos = point
            .and_then(|i| data.insts.get(i as usize))
            .map_or(data.pos, |inst| inst.pos);
        return Err(AllocError::Pressure {
            function: f.name.clone(),
            block: data.name.clone(),
            pos,
            class: target.class(c).name.clone(),
            needed,
            budget: k,
        });
    }
    Ok(())
}

fn first_excess(f: &Function, a: &Analysis, c: ClassId, k: u16) -> (Block, Option<u32>, u32) {
    for b in f.block_ids() {
        let points = std::iter::once(None).chain((0..=f.block(b).insts.len() as u32).map(Some));
        for point in points {
            let d = a.pressure.at(b, point, c);
            if d > u32::from(k) {
                return (b, point, d);
            }
        }
    }
    (Block(0), None, a.pressure.max_live(c))
}
