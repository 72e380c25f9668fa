//! The production allocator: `spill` (lower pressure to the budget), `assign` (SSA
//! assignment with live-range splitting), `out_of_ssa` (edge copies, sequentialised), then
//! `spill::materialise` (spill code at its registers, original value names). The allocator
//! minimises the highest register used per class within the budget; a budget below what
//! the most demanding instruction needs is an error, never a panic.

pub mod assign;
pub mod baseline;
pub mod least;
pub mod operands;
pub mod out_of_ssa;
pub mod packing;
pub mod parallel_copy;
pub mod prepare;
#[cfg(feature = "regalloc2")]
pub mod regalloc2_adapter;
pub mod regfile;
pub mod spill;
pub mod stats;
pub mod structure;

pub use regfile::Policy;
pub use stats::{ClassStats, FunctionStats};

use crate::analysis::liveness::Sites;
use crate::analysis::ssa::{self, InputError};
use crate::analysis::{Analysis, ControlFlow};
use crate::program::{Block, BlockData, Function, Pos, Program};
use crate::schedule::{schedule_function, Goal, Schedule};
use crate::target::{OccupancyError, Target};
use std::time::Instant;

/// The memory slot used to break a copy cycle when a class has neither a swap nor a free
/// register at that point.
pub const TEMP_SLOT: u32 = 0;

/// How to allocate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocOptions {
    /// Units usable per class name; a class not named uses its whole file, or the budget
    /// that reaches `occupancy`.
    pub budget: Vec<(String, u16)>,
    /// Waves (AMD) or warps (NVIDIA) to reach: the classes not named in `budget` get the
    /// largest budget that still reaches it ([`Target::budget_for_occupancy`]).
    pub occupancy: Option<u32>,
    pub policy: Policy,
    pub allocator: Allocator,
    /// Reorder blocks for register pressure first ([`crate::schedule`]).
    pub schedule: Schedule,
}

/// Which allocator runs: the production one or a baseline ([`baseline`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Allocator {
    /// The SSA-based production allocator.
    #[default]
    Ssa,
    /// Chaitin–Briggs graph colouring ([`baseline::coloring`]).
    Coloring,
    /// Linear scan with interval splitting (Wimmer–Mössenböck; [`baseline::linear`]).
    Linear,
    /// regalloc2's backtracking allocator `ion`, through the adapter (feature
    /// `regalloc2`).
    Regalloc2Ion,
    /// regalloc2's single-pass `fastalloc`, through the adapter (feature `regalloc2`).
    Regalloc2Fast,
}

impl Allocator {
    /// chromatic's own allocators.
    pub const OURS: [Allocator; 3] = [Allocator::Ssa, Allocator::Coloring, Allocator::Linear];
    /// Every allocator the CLI can name, ours then regalloc2's.
    pub const ALL: [Allocator; 5] = [
        Allocator::Ssa,
        Allocator::Coloring,
        Allocator::Linear,
        Allocator::Regalloc2Ion,
        Allocator::Regalloc2Fast,
    ];

    /// The name the CLI takes: `ssa`, `coloring`, `linear`, `regalloc2-ion`,
    /// `regalloc2-fast`.
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Ssa => "ssa",
            Allocator::Coloring => "coloring",
            Allocator::Linear => "linear",
            Allocator::Regalloc2Ion => "regalloc2-ion",
            Allocator::Regalloc2Fast => "regalloc2-fast",
        }
    }
}

impl std::fmt::Display for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Allocator {
    type Err = String;

    fn from_str(s: &str) -> Result<Allocator, String> {
        Allocator::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}`: expected one of ssa, coloring, linear, regalloc2-ion, regalloc2-fast"
                )
            })
    }
}

/// Why a program could not be allocated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AllocError {
    #[error("@{function}: not valid SSA: {}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        function: String,
        errors: Vec<ssa::SsaError>,
    },
    #[error("{pos}: @{function}: `{class}` needs {needed} registers in block `{block}` but the budget is {budget}, even with everything else spilled")]
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
    #[error("{pos}: @{function}: this instruction needs {needed} `{class}` registers but the budget is {budget} (the lowest legal budget is {needed})")]
    BelowLowest {
        function: String,
        pos: Pos,
        class: String,
        needed: u32,
        budget: u16,
    },
    #[error("@{function}: not allocated by {allocator}: {message}")]
    NotHandled {
        allocator: &'static str,
        function: String,
        message: String,
    },
    #[error("@{function}: internal allocator error: {message}")]
    Internal { function: String, message: String },
    #[error("{0}")]
    Occupancy(OccupancyError),
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
            AllocError::Pressure { pos, .. }
            | AllocError::Constraint { pos, .. }
            | AllocError::BelowLowest { pos, .. } => Some(*pos),
            _ => None,
        }
    }
}

/// Resolves the budget per class of `target`.
pub fn budget_of(target: &Target, opts: &AllocOptions) -> Result<Vec<u16>, AllocError> {
    let mut budget: Vec<u16> = match opts.occupancy {
        Some(n) => target
            .budget_for_occupancy(n)
            .map_err(AllocError::Occupancy)?,
        None => target.classes.iter().map(|c| c.units).collect(),
    };
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

/// Allocates every function of `p` with `opts.allocator`; returns the allocated program
/// and statistics.
pub fn allocate(
    p: &Program,
    opts: &AllocOptions,
) -> Result<(Program, Vec<FunctionStats>), AllocError> {
    let budget = budget_of(&p.target, opts)?;
    let mut functions = Vec::with_capacity(p.functions.len());
    let mut stats = Vec::with_capacity(p.functions.len());
    for original in &p.functions {
        let start = Instant::now();
        let scheduled = schedule(original, &p.target, &budget, opts)?;
        let f = scheduled.as_ref().map_or(original, |s| &s.func);
        let mut done = match opts.allocator {
            Allocator::Ssa => {
                allocate_function(f, &p.target, &budget, opts.policy, budgeting(opts))?
            }
            Allocator::Regalloc2Ion | Allocator::Regalloc2Fast => {
                allocate_with_regalloc2(f, &p.target, &budget, opts.allocator)?
            }
            other => baseline::allocate_function(f, &p.target, &budget, other, opts.policy)?,
        };
        if let Some(scheduled) = &scheduled {
            scheduled.remats.fold(&mut done.func);
        }
        let micros = start.elapsed().as_micros() as u64;
        let measured = stats::Measured {
            analysis: &done.analysis,
            freq: &done.freq,
            ops: inputs_op_count(f),
            micros,
        };
        let mut s = stats::collect_measured(f, &done.func, &p.target, &measured);
        s.retries = done.stages.retries();
        if let Some(scheduled) = &scheduled {
            s.note_schedule(scheduled);
        }
        stats.push(s);
        functions.push(done.func);
    }
    Ok((
        Program {
            target: p.target.clone(),
            functions,
        },
        stats,
    ))
}

/// Minimum-registers mode (neither a budget nor an occupancy asked for) allocates at the
/// least budget that needs no spill; otherwise the budget is used as given.
fn budgeting(opts: &AllocOptions) -> Budgeting {
    if opts.budget.is_empty() && opts.occupancy.is_none() {
        Budgeting::Least
    } else {
        Budgeting::AsGiven
    }
}

/// `f` scheduled for pressure when `opts` asks for it (after validation: scheduling reads
/// the function's liveness). With a budget or an occupancy given, blocks that fit it keep
/// their order.
fn schedule(
    f: &Function,
    target: &Target,
    budget: &[u16],
    opts: &AllocOptions,
) -> Result<Option<crate::schedule::Scheduled>, AllocError> {
    if opts.schedule == Schedule::None {
        return Ok(None);
    }
    validate_input(f, target, &ControlFlow::new(f), |_| {})?;
    let scheduled = match budgeting(opts) {
        Budgeting::Least => schedule_function(f, target, budget, Goal::Minimise),
        Budgeting::AsGiven => {
            let aim = least::scheduling_budget(target, budget);
            schedule_function(f, target, &aim, Goal::StopAtBudget)
        }
    };
    Ok(Some(scheduled))
}

#[cfg(feature = "regalloc2")]
fn allocate_with_regalloc2(
    f: &Function,
    target: &Target,
    budget: &[u16],
    allocator: Allocator,
) -> Result<Allocated, AllocError> {
    regalloc2_adapter::allocate_function(f, target, budget, allocator)
}

#[cfg(not(feature = "regalloc2"))]
fn allocate_with_regalloc2(
    f: &Function,
    _: &Target,
    _: &[u16],
    allocator: Allocator,
) -> Result<Allocated, AllocError> {
    Err(AllocError::NotHandled {
        allocator: allocator.name(),
        function: f.name.clone(),
        message: "chromatic was built without its `regalloc2` feature".into(),
    })
}

/// Assigns, lowers and materialises the function the spiller left (the prepared function
/// itself when nothing was spilled), moving it through the stages. Values stay within the
/// spiller's budget; copy temporaries may also take the units of `room` above it
/// ([`least::copy_room`]). `survey` is the prepared function's, which assignment takes
/// when nothing was spilled; a spilled function is surveyed anew.
fn assign_spilled(
    target: &Target,
    spilled: spill::Spilled,
    a: &Analysis,
    (policy, room): (Policy, &[u16]),
    survey: assign::Survey,
) -> Result<Function, AllocError> {
    let spill::Spilled {
        func,
        budget,
        plan,
        analysis,
    } = spilled;
    let temps: Vec<u16> = budget.iter().zip(room).map(|(&k, &r)| k + r).collect();
    let (k, sa) = (
        (budget.as_slice(), temps.as_slice()),
        analysis.as_ref().unwrap_or(a),
    );
    let survey = if plan.is_some() {
        assign::Survey::of(&func)
    } else {
        survey
    };
    let assigned = assign::assign(func, target, sa, k, (policy, survey))?;
    let lowered = out_of_ssa::lower(assigned, target, sa, k.1)?;
    match plan {
        Some(plan) => spill::materialise::materialise(lowered, &plan),
        // Nothing spilled: materialising would change nothing (no pseudo-operations, no
        // memory phis, every value original).
        None => Ok(lowered),
    }
}

/// An allocated function, the analysis of the original (with its edges split), the
/// frequencies of the allocated function's blocks, and how often each stage ran.
#[derive(Debug)]
pub struct Allocated {
    pub func: Function,
    pub analysis: Analysis,
    pub freq: Vec<f64>,
    pub stages: Stages,
}

/// How many times each stage of the pipeline ran for one function. Every stage runs
/// once: no stage is retried after another fails, so [`Stages::retries`] is 0; it is
/// reported (`--stats=json`) so that a change bringing a retry back shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    runs: Vec<(&'static str, u32)>,
}

impl Stages {
    fn ran(&mut self, stage: &'static str) {
        match self.runs.iter_mut().find(|(s, _)| *s == stage) {
            Some((_, n)) => *n += 1,
            None => self.runs.push((stage, 1)),
        }
    }

    /// Runs beyond the first of every stage.
    pub fn retries(&self) -> u32 {
        self.runs.iter().map(|&(_, n)| n - 1).sum()
    }
}

/// [`Function::op_count`] of an input every allocator took: as [`validate_input`]
/// refused the instructions allocation adds, each of its instructions is an operation,
/// and the count needs the blocks' lengths only, not a walk over the instructions.
fn inputs_op_count(f: &Function) -> usize {
    f.blocks.iter().map(|b| b.insts.len()).sum()
}

/// Refuses an input that holds an allocation's own instructions (parallel copies, swaps,
/// spills, reloads, remats), naming the first such instruction, before one that breaks
/// the SSA rules: every allocator takes a valid program of operations only. `observe`
/// sees each block once validation has read it ([`ssa::validate_input`]).
fn validate_input(
    f: &Function,
    target: &Target,
    flow: &ControlFlow,
    observe: impl FnMut(&BlockData),
) -> Result<(), AllocError> {
    ssa::validate_input(f, target, flow, observe).map_err(|error| match error {
        InputError::Allocated { block, pos } => AllocError::Constraint {
            function: f.name.clone(),
            block: f.block(block).name.clone(),
            pos,
            message: "the input is already allocated".into(),
        },
        InputError::Invalid(errors) => AllocError::Invalid {
            function: f.name.clone(),
            errors,
        },
    })
}

/// A function ready for any allocator: validated, copy-less edges split, analysed, and
/// its divergent shape checked.
pub(crate) struct Prepared {
    pub func: Function,
    /// The blocks splitting added (dropped again when they stay empty).
    pub added: Vec<Block>,
    pub analysis: Analysis,
}

/// The front every allocator shares: validate `f`, split the edges that need a place for
/// copies, analyse, and check the divergent shape.
/// The control-flow analyses of `f` serve validation, splitting and, when no edge needed
/// splitting (the function's blocks and edges are `f`'s), the prepared function's analysis.
/// Validation's walk copies each block for splitting as it reads it and gathers the sites
/// liveness starts from (those of the split function), so `f` is read once for all three.
pub(crate) fn prepare_function(f: &Function, target: &Target) -> Result<Prepared, AllocError> {
    prepare_observed(f, target, |_| {})
}

/// [`prepare_function`], showing `observe` each block of `f` as validation reads it, so
/// that a stage which needs to know the whole function before it starts ([`assign::Survey`])
/// learns it from that walk too.
fn prepare_observed(
    f: &Function,
    target: &Target,
    mut observe: impl FnMut(&BlockData),
) -> Result<Prepared, AllocError> {
    let flow = ControlFlow::new(f);
    let mut copy = prepare::SplitCopy::new(f, &flow.cfg);
    let mut sites = Sites::new(f, copy.edges());
    validate_input(f, target, &flow, |block| {
        copy.push(block);
        sites.push(block);
        observe(block);
    })?;
    let (func, added) = copy.split(f, &flow.cfg);
    let flow = if added.is_empty() {
        flow
    } else {
        ControlFlow::new(&func)
    };
    let analysis = Analysis::with_sites(&func, target, flow, sites);
    structure::check_structured(&func, target, &analysis)?;
    Ok(Prepared {
        func,
        added,
        analysis,
    })
}

/// How the production allocator uses the budget it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budgeting {
    /// Registers up to the budget.
    AsGiven,
    /// Registers up to the least budget, at most the one given, at which the function
    /// needs no spill ([`least::least_budget`]): minimum-registers mode.
    Least,
}

/// Allocates one function: validate, split copy-less edges, check the divergent shape,
/// spill, assign, leave SSA, materialise the spill code, drop split blocks left empty.
pub fn allocate_function(
    f: &Function,
    target: &Target,
    budget: &[u16],
    policy: Policy,
    budgeting: Budgeting,
) -> Result<Allocated, AllocError> {
    let mut stages = Stages::default();
    let mut survey = assign::Survey::new(f);
    let Prepared {
        func: prepared,
        added,
        analysis: a,
    } = prepare_observed(f, target, |block| survey.push(block))?;
    stages.ran("spill");
    let (least, fitting): (Option<Vec<u16>>, Option<Vec<bool>>) = match budgeting {
        Budgeting::AsGiven => (None, None),
        Budgeting::Least => {
            let per_class = least::least_by_class(&prepared, target, &a, budget);
            let fitting = per_class.iter().map(Option::is_some).collect();
            (per_class.into_iter().collect(), Some(fitting))
        }
    };
    let room = match &least {
        Some(least) => least::copy_room(target, least, budget),
        None => vec![0; budget.len()],
    };
    let spilled = match least {
        Some(least) => spill::Spilled::unspilled(prepared, least),
        None => match fitting {
            Some(fitting) => spill::spill_knowing(prepared, target, &a, budget, fitting)?,
            None => spill::spill(prepared, target, &a, budget)?,
        },
    };
    stages.ran("assign");
    let mut func = assign_spilled(target, spilled, &a, (policy, &room), survey)?;
    let freq = prepare::kept_frequencies(&func, &added, &a.freq);
    prepare::drop_empty(&mut func, &added);
    Ok(Allocated {
        func,
        analysis: a,
        freq,
        stages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The front reads its input once: the copy, the liveness sites and assignment's
    /// survey that validation's walk gathers give what edge splitting, the analyses and
    /// the survey compute on their own, with edges split and without.
    #[test]
    fn the_front_gathers_what_splitting_and_analysis_compute() {
        let sources = [
            include_str!("../../corpus/critical_edges.chr").to_string(),
            include_str!("../../corpus/divergent_loop.chr").to_string(),
            include_str!("../../corpus/high_pressure_block.chr").to_string(),
            include_str!("../../corpus/pinned_accumulator.chr").to_string(),
            include_str!("../../corpus/tuples_split_collect.chr").to_string(),
            include_str!("../../corpus/remat_constants.chr").to_string(),
            crate::synth::synthetic(500),
        ];
        let mut split_any = [false; 2];
        for src in &sources {
            let p = crate::parse(src).expect("parses");
            for f in &p.functions {
                let mut survey = assign::Survey::new(f);
                let prepared =
                    prepare_observed(f, &p.target, |block| survey.push(block)).expect("prepares");
                let (split, added) = prepare::split(f);
                assert_eq!(survey, assign::Survey::of(&split), "@{}", f.name);
                split_any[usize::from(added.is_empty())] = true;
                assert_eq!(prepared.func, split, "@{}", f.name);
                assert_eq!(prepared.added, added, "@{}", f.name);
                let analysis = Analysis::new(&split, &p.target);
                assert!(prepared.analysis == analysis, "@{}", f.name);
            }
        }
        assert_eq!(
            split_any,
            [true, true],
            "functions with and without split edges"
        );
    }
}
