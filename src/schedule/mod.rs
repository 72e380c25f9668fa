//! Pressure-aware instruction scheduling before allocation.
//!
//! An allocator that keeps the emitted order never goes below MaxLive; reordering each
//! block within its dependences ([`deps`]) can. Per block, bottom-up list scheduling
//! ([`list`]) runs under several heuristics and two class weightings, each order's peak
//! demand per class is measured by the pressure rule ([`peak`]), and the best order is
//! kept: least units over the budget, then least units in all — and only when it beats the
//! emitted order, so a block never gets worse. This is the loop of Mesa's i965 scheduler
//! (try several heuristics, keep the lowest pressure) and of LLVM's GCN scheduler, which
//! stops reordering once the occupancy target is reached: with [`Goal::StopAtBudget`] a
//! block whose emitted order already fits the budget keeps it.
//!
//! Each block is scheduled at least twice: as above, and with every candidate order (the emitted
//! one too) shortened by [`hoist`] before it is measured — an operation whose operands die
//! at it moves up to where they are otherwise last read, wherever that raises the demand
//! nowhere (the list scheduler's greedy choice can open two operands long before the one
//! value computed from them is needed). Rematerialisation's rounds decide from the order
//! they start with, so a hoisted order can end higher after them; the attempt with the
//! lower score after rematerialisation is kept, and hoisting never makes a block worse.
//!
//! Before reordering, [`across`] recomputes cheap pure values held across blocks in the
//! blocks that read them, where that lowers the function's pressure.
//!
//! Two more attempts, plain and hoisted, add two families of candidates: bottom-up under
//! [`list::Heuristic::OrderedLast`] (memory operations and barriers placed as late as
//! their dependences allow, so a computation that only feeds a later store is built above
//! a barrier region rather than below it) and [`top_down`] list scheduling. Each is made
//! only when one of its orders beats every classic one before rematerialisation, and kept
//! like the others only when it ends with a lower score, so neither makes a block worse.
//!
//! First of all, [`select`] replaces each phi of constants over a two-way branch by a
//! select on the branch's condition, which the stages below move and copy like any
//! cheap pure operation.
//!
//! After reordering, [`remat`] recomputes cheap pure values next to later uses where that
//! lowers a block's peak further.
//!
//! Liveness at block boundaries does not change under a legal reorder (the values a block
//! reads before defining them are the same), so blocks are scheduled independently against
//! the function's liveness.

pub mod across;
pub mod deps;
pub mod hoist;
pub mod list;
pub mod peak;
pub mod regs;
pub mod remat;
pub mod select;
pub mod top_down;

use crate::analysis::Analysis;
use crate::program::{BlockData, Function, Op, Value};
use crate::target::Target;
use deps::Deps;
use list::{Heuristic, Problem};
use peak::Live;
use remat::Remats;

/// Whether to schedule before allocation (`--schedule`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Schedule {
    /// Keep the emitted order.
    #[default]
    None,
    /// Reorder blocks to lower register pressure.
    Pressure,
}

impl std::str::FromStr for Schedule {
    type Err = String;

    fn from_str(s: &str) -> Result<Schedule, String> {
        match s {
            "none" => Ok(Schedule::None),
            "pressure" => Ok(Schedule::Pressure),
            _ => Err(format!("`{s}`: expected pressure or none")),
        }
    }
}

/// When a block is worth reordering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Always look for a lower peak (no occupancy target was given).
    Minimise,
    /// Keep the emitted order of a block that already fits the budget.
    StopAtBudget,
}

/// A scheduled function and what scheduling did.
#[derive(Clone, Debug, PartialEq)]
pub struct Scheduled {
    pub func: Function,
    /// MaxLive per class of the function as emitted.
    pub max_live_emitted: Vec<u32>,
    /// Blocks whose order changed.
    pub blocks_reordered: u32,
    /// The values recomputed next to later uses ([`remat`]), to fold into the allocation.
    pub remats: Remats,
}

/// Rematerialises values held across blocks where that lowers the pressure of `f` (valid
/// SSA), schedules every block for register pressure under `budget`, then rematerialises
/// where that lowers a block's peak further.
pub fn schedule_function(f: &Function, target: &Target, budget: &[u16], goal: Goal) -> Scheduled {
    schedule(f, target, budget, goal, true)
}

/// Reorders every block of `f` (valid SSA) for register pressure under `budget`, adding
/// nothing (what `chromatic schedule-gap` compares with the optimal order).
pub fn reorder_function(f: &Function, target: &Target, budget: &[u16], goal: Goal) -> Scheduled {
    schedule(f, target, budget, goal, false)
}

fn schedule(
    emitted: &Function,
    target: &Target,
    budget: &[u16],
    goal: Goal,
    remat: bool,
) -> Scheduled {
    let analysis = Analysis::new(emitted, target);
    let max_live_emitted = target
        .class_ids()
        .map(|c| analysis.pressure.max_live(c))
        .collect();
    let mut remats = Remats::new(emitted);
    let (f, analysis) = if remat {
        let (selected, analysis) = select::rematerialise(emitted, analysis, target, &mut remats);
        across::rematerialise(&selected, analysis, target, budget, goal, &mut remats)
    } else {
        (emitted.clone(), analysis)
    };
    let f = &f;
    let mut func = f.clone();
    let mut live = Live::new(f, target);
    let mut blocks_reordered = 0;
    let weightings = weightings(target);
    for (b, block) in f.blocks.iter().enumerate() {
        let live_end = live_at_end(block, analysis.liveness.live_out(crate::Block(b as u32)));
        let problem = BlockProblem {
            live_end: &live_end,
            target,
            budget,
            goal,
            weightings: &weightings,
            remat,
            family: Family::Classic,
            hoisting: Hoisting::Off,
        };
        let start = remat::Snapshot::of(&func, b, &remats);
        let mut kept: Option<((u32, u32), bool, remat::Attempt)> = None;
        let mut classic_first = [None, None];
        for (hoisting, family) in ATTEMPTS {
            start.restore(&mut func, b, &mut remats);
            let problem = BlockProblem {
                family,
                hoisting,
                ..problem
            };
            let to_beat = match family {
                Family::Classic => None,
                Family::Extended => classic_first[hoisting as usize],
            };
            let Some((reordered, first)) = schedule_block(
                &mut func,
                block,
                b,
                &problem,
                to_beat,
                &mut live,
                &mut remats,
            ) else {
                continue;
            };
            if family == Family::Classic {
                classic_first[hoisting as usize] = first;
            }
            let score = remat::block_score(&func, b, &live_end, target, budget);
            if kept
                .as_ref()
                .is_none_or(|(best, _, _)| score.is_some_and(|s| s < *best))
            {
                let attempt = start.attempt(&func, b, &remats);
                kept = Some((score.unwrap_or((u32::MAX, u32::MAX)), reordered, attempt));
            }
        }
        let (_, reordered, attempt) = kept.expect("the first attempt always runs");
        start.replay(attempt, &mut func, b, &mut remats);
        blocks_reordered += u32::from(reordered);
    }
    Scheduled {
        func,
        max_live_emitted,
        blocks_reordered,
        remats,
    }
}

/// Whether each candidate order is shortened by [`hoist`] before it is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hoisting {
    Off = 0,
    On = 1,
}

/// Which candidate orders an attempt measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// Bottom-up list scheduling under the heuristics of [`Heuristic::CLASSIC`].
    Classic,
    /// Starts from the best order of [`Candidates::Added`], and only when it beats the
    /// classic attempt's before rematerialisation; its rounds measure every candidate.
    Extended,
}

/// The attempts at each block, the first kept unless a later one ends with a lower score
/// after rematerialisation (whose rounds decide from the order they start with, so the
/// lowest order before them need not end lowest).
const ATTEMPTS: [(Hoisting, Family); 4] = [
    (Hoisting::Off, Family::Classic),
    (Hoisting::On, Family::Classic),
    (Hoisting::Off, Family::Extended),
    (Hoisting::On, Family::Extended),
];

/// Reorders block `b` of `func` (a copy of `block`, the original) and rematerialises in it
/// when the problem asks for it; whether its order changed, and the score of the order it
/// started from before rematerialisation. An extended attempt starts from the best order
/// only its family measures, and is not made (`None`) unless that order's score is below
/// `to_beat` (the classic attempt's, or the emitted order's when it had none).
fn schedule_block(
    func: &mut Function,
    block: &BlockData,
    b: usize,
    p: &BlockProblem<'_>,
    to_beat: Option<(u32, u32)>,
    live: &mut Live<'_>,
    remats: &mut Remats,
) -> Option<(bool, Option<(u32, u32)>)> {
    let chosen = match p.family {
        Family::Classic => best_order(block, p, Candidates::Classic, live, remats),
        Family::Extended => {
            let chosen = best_order(block, p, Candidates::Added, live, remats);
            let beats = chosen.score.zip(to_beat).is_some_and(|(s, t)| s < t);
            if chosen.order.is_none() || !beats {
                return None;
            }
            chosen
        }
    };
    let reordered = chosen.order.is_some();
    if let Some(order) = chosen.order {
        func.blocks[b].insts = order
            .iter()
            .map(|&k| block.insts[k as usize].clone())
            .collect();
    }
    if p.remat {
        rematerialise(func, b, p, remats);
    }
    Some((reordered, chosen.score))
}

/// Rounds of rematerialisation before allocation on a block.
const REMAT_ROUNDS: usize = 8;

/// What scheduling one block is measured against.
#[derive(Clone, Copy)]
struct BlockProblem<'a> {
    live_end: &'a [Value],
    target: &'a Target,
    budget: &'a [u16],
    goal: Goal,
    weightings: &'a [Vec<i64>],
    /// Whether to rematerialise after reordering.
    remat: bool,
    family: Family,
    hoisting: Hoisting,
}

/// Rounds of recomputation ([`remat::round`]), each followed by rescheduling the block
/// (the derived values' first ranges shrink once their definitions can sink to their
/// first uses), kept while they lower the block's score.
fn rematerialise(func: &mut Function, b: usize, p: &BlockProblem<'_>, remats: &mut Remats) {
    let Some(mut best) = remat::block_score(func, b, p.live_end, p.target, p.budget) else {
        return;
    };
    let mut kept = remat::Snapshot::of(func, b, remats);
    for _ in 0..REMAT_ROUNDS {
        if !remat::round(func, b, p.live_end, p.target, p.budget, p.goal, remats) {
            break;
        }
        let block = func.blocks[b].clone();
        let mut live = Live::new(func, p.target);
        let candidates = match p.family {
            Family::Classic => Candidates::Classic,
            Family::Extended => Candidates::All,
        };
        let order = best_order(&block, p, candidates, &mut live, remats).order;
        if let Some(order) = order {
            func.blocks[b].insts = order
                .iter()
                .map(|&k| block.insts[k as usize].clone())
                .collect();
        }
        let Some(now) = remat::block_score(func, b, p.live_end, p.target, p.budget) else {
            break;
        };
        if now >= best {
            break;
        }
        best = now;
        kept = remat::Snapshot::of(func, b, remats);
    }
    kept.restore(func, b, remats);
}

/// The values live after the last operation of `block`: its live-out set and the uses of
/// its terminator.
fn live_at_end(block: &BlockData, live_out: &[Value]) -> Vec<Value> {
    let mut values = live_out.to_vec();
    values.extend(block.term.uses().iter().map(|u| u.value));
    values.sort_unstable();
    values.dedup();
    values
}

/// Class weightings the heuristics run under: every unit alike, and units weighed by how
/// scarce their class is (a predicate counts as many 32-bit registers as the files' sizes
/// differ by).
fn weightings(target: &Target) -> Vec<Vec<i64>> {
    let largest = target.classes.iter().map(|c| c.units).max().unwrap_or(1);
    let scarce = target
        .classes
        .iter()
        .map(|c| i64::from(largest.div_ceil(c.units.max(1))))
        .collect();
    vec![vec![1; target.classes.len()], scarce]
}

/// Which candidate orders [`best_order`] measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidates {
    /// Bottom-up under [`Heuristic::CLASSIC`], each class weighting (and the emitted order
    /// when hoisting).
    Classic,
    /// Bottom-up under [`Heuristic::OrderedLast`] and [`top_down`] under each tie rule,
    /// each class weighting.
    Added,
    All,
}

/// The order chosen for a block.
struct Chosen {
    /// The best order measured, when it beats the emitted one; `None` to keep that.
    order: Option<Vec<u32>>,
    /// The lower of its score and the emitted order's; `None` for a block not reordered
    /// (a non-operation in it, fewer than two operations, or one that fits the budget
    /// under [`Goal::StopAtBudget`]).
    score: Option<(u32, u32)>,
}

/// The best order of `block` among `candidates`.
fn best_order(
    block: &BlockData,
    p: &BlockProblem<'_>,
    candidates: Candidates,
    live: &mut Live<'_>,
    remats: &Remats,
) -> Chosen {
    let keep = Chosen {
        order: None,
        score: None,
    };
    let (live_end, budget, goal, hoisting) = (p.live_end, p.budget, p.goal, p.hoisting);
    let Some(ops) = block
        .insts
        .iter()
        .map(|i| i.op())
        .collect::<Option<Vec<&Op>>>()
    else {
        return keep;
    };
    if ops.len() < 2 {
        return keep;
    }
    let emitted: Vec<u32> = (0..ops.len() as u32).collect();
    let emitted_score = score(&peak::peak(&ops, &emitted, live_end, live), budget);
    if goal == Goal::StopAtBudget && emitted_score.0 == 0 {
        return keep;
    }
    let mut deps = Deps::of_ops(&ops);
    remats.order_copies(&ops, &mut deps);
    let problem = Problem::new(&ops, &deps, live_end);
    let orders = candidate_orders(&problem, candidates, hoisting, p.weightings, live);
    let hoister = (hoisting == Hoisting::On).then(|| {
        let copies: Vec<bool> = ops
            .iter()
            .map(|op| op.defs.iter().any(|d| remats.is_copy(d.value)))
            .collect();
        (hoist::Readers::of_ops(&ops), copies)
    });
    let mut best: Option<((u32, u32), Vec<u32>)> = None;
    for mut order in orders {
        if let Some((readers, copies)) = &hoister {
            hoist::hoist((&ops, readers), &deps, copies, &mut order, live_end, live);
        }
        let s = score(&peak::peak(&ops, &order, live_end, live), budget);
        if best.as_ref().is_none_or(|(b, _)| s < *b) {
            best = Some((s, order));
        }
    }
    match best {
        Some((s, order)) if s < emitted_score && order != emitted => Chosen {
            order: Some(order),
            score: Some(s),
        },
        _ => Chosen {
            order: None,
            score: Some(emitted_score),
        },
    }
}

/// The orders `candidates` names, before hoisting.
fn candidate_orders(
    problem: &Problem<'_>,
    candidates: Candidates,
    hoisting: Hoisting,
    weightings: &[Vec<i64>],
    live: &mut Live<'_>,
) -> Vec<Vec<u32>> {
    let mut orders: Vec<Vec<u32>> = Vec::new();
    let classic = matches!(candidates, Candidates::Classic | Candidates::All);
    let added = matches!(candidates, Candidates::Added | Candidates::All);
    if classic && hoisting == Hoisting::On {
        orders.push((0..problem.op_count() as u32).collect());
    }
    for weights in weightings {
        if classic {
            orders.extend(
                Heuristic::CLASSIC
                    .into_iter()
                    .map(|heuristic| list::schedule(problem, heuristic, weights, live)),
            );
        }
        if added {
            orders.push(list::schedule(
                problem,
                Heuristic::OrderedLast,
                weights,
                live,
            ));
            orders.extend(
                top_down::Tie::ALL
                    .into_iter()
                    .map(|tie| top_down::schedule(problem, tie, weights, live)),
            );
        }
    }
    orders
}

/// A peak's rank, lower better: units over the budget summed over classes, then all units.
pub fn score(peak: &[u32], budget: &[u16]) -> (u32, u32) {
    let over = peak
        .iter()
        .zip(budget)
        .map(|(&p, &b)| p.saturating_sub(u32::from(b)))
        .sum();
    (over, peak.iter().sum())
}
