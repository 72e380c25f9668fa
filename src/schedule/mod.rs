//! Pressure-aware instruction scheduling before allocation.
//!
//! An allocator that keeps the emitted order never goes below MaxLive; reordering each
//! block within its dependences ([`deps`]) can. Per block, bottom-up list scheduling
//! ([`list`]) runs under several heuristics and two class weightings, each order's peak
//! demand per class is measured by the pressure rule ([`peak`]), and the best order is
//! kept: least units over the budget, then least units in all — and only when it beats the
//! emitted order, so a block never gets worse. Where no [`hoist`] follows, a bottom-up order
//! is measured as it is built and given up as soon as its peak so far scores no lower than
//! the best order yet or the emitted one: a peak only rises as the order grows, so it could
//! not be kept, and a block rescheduled after each rematerialisation round pays for whole
//! orders only while they can still win. This is the loop of Mesa's i965 scheduler
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
//! Two more attempts, plain and hoisted, add three families of candidates: bottom-up under
//! [`list::Heuristic::OrderedLast`] (memory operations and barriers placed as late as
//! their dependences allow, so a computation that only feeds a later store is built above
//! a barrier region rather than below it), bottom-up under [`list::Heuristic::Staged`]
//! (each load's values consumed by every reader before the next load is opened), and
//! [`top_down`] list scheduling. Each is made
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
//!
//! Every step that keeps only a strictly lower score — the candidate orders, the attempts,
//! the extended attempts, the rematerialisation rounds — stops as soon as the block's score
//! reaches that of its lower bound ([`bound`]): nothing after can beat it, so stopping
//! there changes no result and saves the work. With [`Goal::StopAtBudget`] they also stop
//! at the first order or attempt that fits the budget, as LLVM's GCN scheduler stops
//! once its occupancy target is met: the allocation asks for nothing lower.

pub mod across;
pub mod bound;
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
use std::cell::{OnceCell, RefCell};

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
    /// Keep the emitted order of a block that already fits the budget, and stop looking
    /// at the first order that fits it.
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
        let bound = block_bound(block, &live_end, budget, &mut live);
        let problem = BlockProblem {
            live_end: &live_end,
            bound,
            target,
            budget,
            goal,
            weightings: &weightings,
            remat,
            family: Family::Classic,
            hoisting: Hoisting::Off,
        };
        let setup = prepare(block, &problem, &mut live, &remats);
        let start = remat::Snapshot::of(&func, b, &remats);
        let mut kept: Option<((u32, u32), bool, remat::Attempt)> = None;
        let mut classic_first = [None, None];
        for (hoisting, family) in ATTEMPTS {
            if kept
                .as_ref()
                .is_some_and(|(best, _, _)| problem.reached(*best))
            {
                break;
            }
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
                setup.as_ref(),
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
            let score = remat::block_score(&func, b, &live_end, budget, &mut live);
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

/// Reorders block `b` of `func` (a copy of the original block `setup` was made for, or
/// the choice made without reordering it) and rematerialises in it when the problem asks
/// for it; whether its order changed, and the score of the order it started from before
/// rematerialisation. An extended attempt starts from the best order only its family
/// measures, and is not made (`None`) unless that order's score is below `to_beat` (the
/// classic attempt's, or the emitted order's when it had none).
fn schedule_block(
    func: &mut Function,
    setup: Result<&Setup<'_>, &Chosen>,
    b: usize,
    p: &BlockProblem<'_>,
    to_beat: Option<(u32, u32)>,
    live: &mut Live,
    remats: &mut Remats,
) -> Option<(bool, Option<(u32, u32)>)> {
    let chosen = match p.family {
        Family::Classic => best_order(setup, p, Candidates::Classic, live, remats),
        Family::Extended => {
            if to_beat.is_none_or(|t| p.reached(t)) {
                return None;
            }
            let chosen = best_order(setup, p, Candidates::Added, live, remats);
            let beats = chosen.score.zip(to_beat).is_some_and(|(s, t)| s < t);
            if chosen.order.is_none() || !beats {
                return None;
            }
            chosen
        }
    };
    let reordered = chosen.order.is_some();
    if let (Some(order), Ok(setup)) = (chosen.order, setup) {
        func.blocks[b].insts = order
            .iter()
            .map(|&k| setup.block.insts[k as usize].clone())
            .collect();
    }
    if p.remat {
        rematerialise(func, b, p, remats, live);
    }
    Some((reordered, chosen.score))
}

/// Rounds of rematerialisation before allocation on a block.
const REMAT_ROUNDS: usize = 8;

/// What scheduling one block is measured against.
#[derive(Clone, Copy)]
struct BlockProblem<'a> {
    live_end: &'a [Value],
    /// The score of the block's lower bound ([`bound`]): no order or rematerialisation
    /// scores below it.
    bound: (u32, u32),
    target: &'a Target,
    budget: &'a [u16],
    goal: Goal,
    weightings: &'a [Vec<i64>],
    /// Whether to rematerialise after reordering.
    remat: bool,
    family: Family,
    hoisting: Hoisting,
}

impl BlockProblem<'_> {
    /// Whether a block scoring `s` needs nothing more: it reaches the lower bound, or fits
    /// the budget under [`Goal::StopAtBudget`].
    fn reached(&self, s: (u32, u32)) -> bool {
        s <= self.bound || (self.goal == Goal::StopAtBudget && s.0 == 0)
    }
}

/// Rounds of recomputation ([`remat::round`]), each followed by rescheduling the block
/// (the derived values' first ranges shrink once their definitions can sink to their
/// first uses), kept while they lower the block's score.
fn rematerialise(
    func: &mut Function,
    b: usize,
    p: &BlockProblem<'_>,
    remats: &mut Remats,
    live: &mut Live,
) {
    let Some(mut best) = remat::block_score(func, b, p.live_end, p.budget, live) else {
        return;
    };
    let mut kept = remat::Snapshot::of(func, b, remats);
    for _ in 0..REMAT_ROUNDS {
        if p.reached(best) {
            break;
        }
        let against = (p.budget, p.goal);
        if !remat::round(func, b, p.live_end, p.target, against, remats, live) {
            break;
        }
        let candidates = match p.family {
            Family::Classic => Candidates::Classic,
            Family::Extended => Candidates::All,
        };
        live.fit(func);
        let setup = prepare(&func.blocks[b], p, live, remats);
        let chosen = best_order(setup.as_ref(), p, candidates, live, remats);
        drop(setup);
        if let Some(order) = &chosen.order {
            permute(&mut func.blocks[b].insts, order);
        }
        let now = chosen
            .score
            .or_else(|| remat::block_score(func, b, p.live_end, p.budget, live));
        let Some(now) = now else {
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

/// Puts `items` in `order` (a permutation of their indices), moving each.
fn permute<T>(items: &mut Vec<T>, order: &[u32]) {
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(
        order
            .iter()
            .map(|&k| slots[k as usize].take().expect("each index once")),
    );
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
    /// Bottom-up under [`Heuristic::OrderedLast`] and [`Heuristic::Staged`], and
    /// [`top_down`] under each tie rule, each class weighting.
    Added,
    All,
}

/// The order chosen for a block.
#[derive(Clone, Debug)]
struct Chosen {
    /// The best order measured, when it beats the emitted one; `None` to keep that.
    order: Option<Vec<u32>>,
    /// The lower of its score and the emitted order's (the block's score once `order` is
    /// applied); `None` for a block not reordered (a non-operation in it, fewer than two
    /// operations, or one that fits the budget under [`Goal::StopAtBudget`]).
    score: Option<(u32, u32)>,
}

/// A block's operations and what every order of them is measured with, made once for
/// every attempt at the block (each starts from the same block and the same copies).
struct Setup<'b> {
    block: &'b BlockData,
    problem: Problem<'b>,
    emitted_score: (u32, u32),
    /// What hoisting needs: the operations' readers, and which operations are
    /// rematerialisation's copies; made at the first hoisted attempt.
    hoisting: OnceCell<(hoist::Readers, Vec<bool>)>,
    /// The candidate orders made so far, before hoisting: a hoisted attempt measures the
    /// same candidates as the plain one before it.
    orders: RefCell<Vec<(Candidate, Vec<u32>)>>,
}

impl Setup<'_> {
    /// `candidate`'s order of the block before hoisting, made at most once.
    fn order(&self, candidate: Candidate, weightings: &[Vec<i64>], live: &mut Live) -> Vec<u32> {
        if let Some(order) = self.made(candidate) {
            return order;
        }
        let order = candidate.order(&self.problem, weightings, live);
        self.orders.borrow_mut().push((candidate, order.clone()));
        order
    }

    /// `candidate`'s order as [`Setup::order`] gives it, with its peak when it is a
    /// bottom-up order made now ([`list::schedule_below`]); `None`, and nothing made, as
    /// soon as that order is seen to score `cutoff` or more against `budget`.
    fn order_below(
        &self,
        candidate: Candidate,
        weightings: &[Vec<i64>],
        live: &mut Live,
        (budget, cutoff): (&[u16], (u32, u32)),
    ) -> Option<(Vec<u32>, Option<Vec<u32>>)> {
        let Candidate::BottomUp(heuristic, w) = candidate else {
            return Some((self.order(candidate, weightings, live), None));
        };
        if let Some(order) = self.made(candidate) {
            return Some((order, None));
        }
        let heuristic = (heuristic, &weightings[w][..]);
        let (order, peak) = list::schedule_below(&self.problem, heuristic, live, (budget, cutoff))?;
        self.orders.borrow_mut().push((candidate, order.clone()));
        Some((order, Some(peak)))
    }

    /// `candidate`'s order, if it was made already.
    fn made(&self, candidate: Candidate) -> Option<Vec<u32>> {
        let orders = self.orders.borrow();
        let made = orders.iter().find(|(c, _)| *c == candidate);
        made.map(|(_, order)| order.clone())
    }
}

/// The setup of `block` for reordering, or the choice made without reordering it: keep a
/// block of a non-operation or fewer than two operations, one that fits the budget under
/// [`Goal::StopAtBudget`] (neither scored), or one whose emitted order reaches its lower
/// bound already.
fn prepare<'b>(
    block: &'b BlockData,
    p: &BlockProblem<'b>,
    live: &mut Live,
    remats: &Remats,
) -> Result<Setup<'b>, Chosen> {
    let keep = Chosen {
        order: None,
        score: None,
    };
    let Some(ops) = block
        .insts
        .iter()
        .map(|i| i.op())
        .collect::<Option<Vec<&Op>>>()
    else {
        return Err(keep);
    };
    if ops.len() < 2 {
        return Err(keep);
    }
    let emitted: Vec<u32> = (0..ops.len() as u32).collect();
    let emitted_score = score(&peak::peak(&ops, &emitted, p.live_end, live), p.budget);
    if p.goal == Goal::StopAtBudget && emitted_score.0 == 0 {
        return Err(keep);
    }
    if emitted_score <= p.bound {
        return Err(Chosen {
            order: None,
            score: Some(emitted_score),
        });
    }
    let mut deps = Deps::of_ops(&ops);
    remats.order_copies(&ops, &mut deps);
    Ok(Setup {
        block,
        problem: Problem::new(ops, deps, p.live_end),
        emitted_score,
        hoisting: OnceCell::new(),
        orders: RefCell::new(Vec::new()),
    })
}

/// The best order of the block `setup` was made for among `candidates` (the choice made
/// without reordering for `Err`). A candidate whose order an earlier one already gave is
/// not measured again: hoisted and scored alike, it could not score strictly lower.
/// Without hoisting, a bottom-up order is measured as it is built and given up once its
/// peak so far scores no lower than the best order yet or the emitted one: it could not
/// be chosen, and a peak only rises as the order grows.
fn best_order(
    setup: Result<&Setup<'_>, &Chosen>,
    p: &BlockProblem<'_>,
    candidates: Candidates,
    live: &mut Live,
    remats: &Remats,
) -> Chosen {
    let setup = match setup {
        Ok(setup) => setup,
        Err(keep) => return keep.clone(),
    };
    let (live_end, budget, hoisting) = (p.live_end, p.budget, p.hoisting);
    let (problem, emitted_score) = (&setup.problem, setup.emitted_score);
    let (ops, deps) = (&problem.ops, &problem.deps);
    let orders = candidate_orders(candidates, hoisting, p.weightings);
    let hoister = (hoisting == Hoisting::On).then(|| {
        setup.hoisting.get_or_init(|| {
            let copies: Vec<bool> = ops
                .iter()
                .map(|op| op.defs.iter().any(|d| remats.is_copy(d.value)))
                .collect();
            (hoist::Readers::of_ops(ops), copies)
        })
    });
    let mut best: Option<((u32, u32), Vec<u32>)> = None;
    let mut measured: Vec<Vec<u32>> = Vec::new();
    for candidate in orders {
        let (mut order, peak) = match hoister {
            Some(_) => (setup.order(candidate, p.weightings, live), None),
            None => {
                let to_beat = best.as_ref().map_or(emitted_score, |(b, _)| *b);
                let cutoff = (budget, to_beat.min(emitted_score));
                match setup.order_below(candidate, p.weightings, live, cutoff) {
                    Some(made) => made,
                    None => continue,
                }
            }
        };
        if measured.contains(&order) {
            continue;
        }
        measured.push(order.clone());
        if let Some((readers, copies)) = hoister {
            hoist::hoist((ops, readers), deps, copies, &mut order, live_end, live);
        }
        let peak = peak.unwrap_or_else(|| peak::peak(ops, &order, live_end, live));
        let s = score(&peak, budget);
        if best.as_ref().is_none_or(|(b, _)| s < *b) {
            best = Some((s, order));
        }
        if p.reached(s) {
            break;
        }
    }
    match best {
        Some((s, order)) if s < emitted_score && !is_emitted(&order) => Chosen {
            order: Some(order),
            score: Some(s),
        },
        _ => Chosen {
            order: None,
            score: Some(emitted_score),
        },
    }
}

/// Whether `order` is the emitted order.
fn is_emitted(order: &[u32]) -> bool {
    order.iter().enumerate().all(|(k, &n)| n as usize == k)
}

/// One candidate order of a block, made only when it is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    Emitted,
    /// Bottom-up under a heuristic and the class weighting of that index.
    BottomUp(Heuristic, usize),
    /// Top-down under a tie rule and the class weighting of that index.
    TopDown(top_down::Tie, usize),
}

impl Candidate {
    /// The order, before hoisting.
    fn order(self, problem: &Problem<'_>, weightings: &[Vec<i64>], live: &mut Live) -> Vec<u32> {
        match self {
            Candidate::Emitted => (0..problem.op_count() as u32).collect(),
            Candidate::BottomUp(heuristic, w) => {
                list::schedule(problem, heuristic, &weightings[w], live)
            }
            Candidate::TopDown(tie, w) => top_down::schedule(problem, tie, &weightings[w], live),
        }
    }
}

/// The orders `candidates` names, in the order they are measured.
fn candidate_orders(
    candidates: Candidates,
    hoisting: Hoisting,
    weightings: &[Vec<i64>],
) -> Vec<Candidate> {
    let mut orders = Vec::new();
    let classic = matches!(candidates, Candidates::Classic | Candidates::All);
    let added = matches!(candidates, Candidates::Added | Candidates::All);
    if classic && hoisting == Hoisting::On {
        orders.push(Candidate::Emitted);
    }
    for w in 0..weightings.len() {
        if classic {
            orders.extend(Heuristic::CLASSIC.map(|h| Candidate::BottomUp(h, w)));
        }
        if added {
            orders.push(Candidate::BottomUp(Heuristic::OrderedLast, w));
            orders.push(Candidate::BottomUp(Heuristic::Staged, w));
            orders.extend(top_down::Tie::ALL.map(|tie| Candidate::TopDown(tie, w)));
        }
    }
    orders
}

/// The score of the lower bound of `block`'s operations ([`bound`]); `(0, 0)`, which no
/// score is below, for a block holding a non-operation.
fn block_bound(
    block: &BlockData,
    live_end: &[Value],
    budget: &[u16],
    live: &mut Live,
) -> (u32, u32) {
    let ops: Option<Vec<&Op>> = block.insts.iter().map(|i| i.op()).collect();
    ops.map_or((0, 0), |ops| {
        score(&bound::lower_bound(&ops, live_end, live), budget)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A score that fits the budget ends the search under a budget, not when minimising;
    /// the lower bound ends it either way.
    #[test]
    fn a_fitting_score_is_enough_only_under_a_budget() {
        let p = top_down::tests::program("  %a:r1 = mov 1\n");
        let weightings = weightings(&p.target);
        let budget: Vec<u16> = p.target.classes.iter().map(|c| c.units).collect();
        let problem = |goal| BlockProblem {
            live_end: &[],
            bound: (0, 10),
            target: &p.target,
            budget: &budget,
            goal,
            weightings: &weightings,
            remat: true,
            family: Family::Classic,
            hoisting: Hoisting::Off,
        };
        let (minimise, at_budget) = (problem(Goal::Minimise), problem(Goal::StopAtBudget));
        assert!(at_budget.reached((0, 40)) && !minimise.reached((0, 40)));
        assert!(!at_budget.reached((1, 40)));
        assert!(minimise.reached((0, 10)) && at_budget.reached((0, 10)));
    }
}
