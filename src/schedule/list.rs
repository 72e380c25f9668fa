//! Bottom-up list scheduling for register pressure.
//!
//! The block is built from its end: the ready operations are those whose successors in the
//! dependence graph are all placed, and each step places the ready operation a
//! [`Heuristic`] likes best just above what is placed, moving the live set across it
//! (definitions leave, uses join). Bottom-up, a definition whose value is live closes a
//! range and an operation whose operands are not live opens new ones, so the greedy choice
//! minimises the change in live units (Goodman & Hsu, "Code scheduling and register
//! allocation in large basic blocks", ICS 1988; the bottom-up form of the GCN and ACO
//! schedulers). Sethi–Ullman numbers (Sethi & Ullman, JACM 1970) break ties the way their
//! labelling orders an expression tree: the operand needing fewer registers is evaluated
//! last, so placed first from the bottom. Ties left go to the operation latest in the
//! emitted order, so an order already good is kept.
//!
//! The greedy choice sees one placement ahead. When the values of a load are read by two
//! chains (Triton's max-pool keeps a running maximum and a running index of it over every
//! window position), each step of either chain costs the same, so one chain is built
//! whole from the bottom and opens every loaded value before the loads can close any; and
//! a load itself, placed from the bottom, opens its address and its default values before
//! its definitions close, so the greedy choice puts it off. [`Heuristic::Staged`] orders
//! the block by *stages* instead: the last memory read each operation depends on. From the
//! bottom, everything the last load's values feed is placed, then that load, then
//! everything the load before it feeds, and so on; read from the top, each load's values
//! are consumed by every chain before the next load is opened — the order Sethi–Ullman
//! numbering gives an expression tree (one operand's subtree finished before the next
//! one's is started), with the loads as the subtrees' roots. Within a stage
//! the change in live units decides, then the operation made ready last (depth-first, so
//! a tree of predicates is finished before the next one opens).

use super::deps::Deps;
use super::peak::Live;
use crate::program::{Effect, Op, Value};
use std::cell::OnceCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// How a ready operation is ranked (lower first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// The change in live units it causes, weighted per class.
    Delta,
    /// The demand at the operation itself, then the change.
    Demand,
    /// The units it frees (most first), then the units it opens.
    Frees,
    /// The change, then its Sethi–Ullman number.
    SethiUllman,
    /// Ordered operations (memory, barriers, control) first, then the change: each sinks
    /// as far as its dependences let it, so a computation that only reads what the
    /// ordered operations read is placed above them rather than below.
    OrderedLast,
    /// The latest stage first ([`stages`]: an operation that opens nothing new goes to its
    /// latest stage, any other to its earliest), then the change, then the operation made
    /// ready most recently.
    Staged,
}

impl Heuristic {
    /// The heuristics every block is scheduled under; [`Heuristic::OrderedLast`] is tried
    /// in a further attempt ([`super`]).
    pub const CLASSIC: [Heuristic; 4] = [
        Heuristic::Delta,
        Heuristic::Demand,
        Heuristic::Frees,
        Heuristic::SethiUllman,
    ];
}

/// What the scheduling runs of one block share: its operations, their dependences, what is
/// live after them, and what is derived from those once.
#[derive(Debug)]
pub struct Problem<'a> {
    pub(super) ops: Vec<&'a Op>,
    pub(super) deps: Deps,
    /// Sorted.
    pub(super) live_end: &'a [Value],
    labels: Vec<u32>,
    /// Per operation, its earliest and latest stage ([`stages`]).
    stages: Vec<(u32, u32)>,
    pub(super) touching: Touching,
    /// Made at the first top-down run.
    pub(super) top_down: OnceCell<super::top_down::Start>,
}

impl<'a> Problem<'a> {
    /// The number of operations.
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    pub fn new(ops: Vec<&'a Op>, deps: Deps, live_end: &'a [Value]) -> Problem<'a> {
        Problem {
            labels: sethi_ullman(&deps),
            stages: stages(&ops, &deps),
            touching: Touching::of(&ops),
            ops,
            deps,
            live_end,
            top_down: OnceCell::new(),
        }
    }
}

/// An order of the operations (indices into `problem.ops`) that respects the dependences.
///
/// A ready operation's rank depends only on whether its own definitions and operands are
/// live, and placing an operation changes that for its own values alone; so ranks are kept
/// in an ordered set and only the ready operations that share a value whose liveness
/// changed are ranked again. Each value joins and leaves the live set at most once, so a
/// run costs time in the number of operands (times a logarithm), not in the block's
/// length times its ready list.
pub fn schedule(
    problem: &Problem<'_>,
    heuristic: Heuristic,
    weights: &[i64],
    live: &mut Live,
) -> Vec<u32> {
    let order = build(problem, (heuristic, weights), live, None);
    order.expect("no cut-off").0
}

/// The order [`schedule`] makes and its peak per class ([`super::peak::peak`]), measured as
/// it is built; `None` as soon as the operations placed so far reach a peak that scores
/// `cutoff` or more against `budget` ([`super::score`]). Placing more operations only
/// raises a peak, so such an order would score no less than `cutoff` whole.
pub fn schedule_below(
    problem: &Problem<'_>,
    (heuristic, weights): (Heuristic, &[i64]),
    live: &mut Live,
    (budget, cutoff): (&[u16], (u32, u32)),
) -> Option<(Vec<u32>, Vec<u32>)> {
    build(problem, (heuristic, weights), live, Some((budget, cutoff)))
}

/// The bottom-up build of [`schedule`]; with a budget and a cut-off, measured as in
/// [`schedule_below`] (else the peak returned is empty).
fn build(
    problem: &Problem<'_>,
    (heuristic, weights): (Heuristic, &[i64]),
    live: &mut Live,
    watch: Option<(&[u16], (u32, u32))>,
) -> Option<(Vec<u32>, Vec<u32>)> {
    let n = problem.ops.len();
    let mut unplaced_succs: Vec<usize> = problem.deps.succs.iter().map(Vec::len).collect();
    live.reset(problem.live_end);
    let mut ready = Ready::new(n);
    let mut ready_since: Vec<i64> = vec![0; n];
    let rank_of =
        |k: u32, since: i64, live: &Live| rank(problem, heuristic, weights, (k, since), live);
    for k in (0..n as u32).filter(|&k| unplaced_succs[k as usize] == 0) {
        ready.insert(k, rank_of(k, 0, live));
    }
    let mut order = Vec::with_capacity(n);
    let mut changed: Vec<Range<usize>> = Vec::new();
    let mut peak = Peak::new(watch, live.units.len());
    while let Some(k) = ready.pop_best() {
        order.push(k);
        let (defs, uses) = problem.touching.of_operation(k);
        changed.clear();
        let closed = defs.iter().filter(|t| live.contains(t.value));
        changed.extend(closed.map(|t| t.ops.clone()));
        let opened = uses.iter().filter(|t| !live.contains(t.value));
        changed.extend(opened.map(|t| t.ops.clone()));
        if !peak.step_back(problem.ops[k as usize], live) {
            return None;
        }
        for &j in changed
            .iter()
            .flat_map(|r| problem.touching.ops_in(r.clone()))
        {
            ready.rerank(j, || rank_of(j, ready_since[j as usize], live));
        }
        let step = order.len() as i64;
        for &p in &problem.deps.preds[k as usize] {
            unplaced_succs[p as usize] -= 1;
            if unplaced_succs[p as usize] == 0 {
                ready_since[p as usize] = step;
                ready.insert(p, rank_of(p, step, live));
            }
        }
    }
    order.reverse();
    Some((order, peak.most))
}

/// The peak of the operations placed so far, when watched against a budget and a cut-off.
struct Peak<'b> {
    watch: Option<(&'b [u16], (u32, u32))>,
    most: Vec<u32>,
    demand: Vec<u32>,
}

impl<'b> Peak<'b> {
    fn new(watch: Option<(&'b [u16], (u32, u32))>, classes: usize) -> Peak<'b> {
        let most = if watch.is_some() {
            vec![0; classes]
        } else {
            Vec::new()
        };
        Peak {
            watch,
            most,
            demand: Vec::with_capacity(classes),
        }
    }

    /// Moves `live` from after `op` to before it; watched, raises the peak to the demand
    /// at `op` and tells whether it still scores below the cut-off.
    fn step_back(&mut self, op: &Op, live: &mut Live) -> bool {
        let Some((budget, cutoff)) = self.watch else {
            live.move_above(op);
            return true;
        };
        super::peak::step_back(op, live, &mut self.demand);
        for (p, &d) in self.most.iter_mut().zip(&self.demand) {
            *p = (*p).max(d);
        }
        super::score(&self.most, budget) < cutoff
    }
}

/// A rank: lower is placed first.
pub(super) type Rank = (i64, i64, i64);

/// The ready operations, ordered by rank then index: a binary heap whose entries a new
/// rank leaves behind stay in it until they come up, and are passed over then (an entry
/// counts only while it holds its operation's current rank).
pub(super) struct Ready {
    heap: BinaryHeap<Reverse<(Rank, u32)>>,
    rank: Vec<Option<Rank>>,
}

impl Ready {
    pub(super) fn new(n: usize) -> Ready {
        Ready {
            heap: BinaryHeap::with_capacity(n),
            rank: vec![None; n],
        }
    }

    pub(super) fn insert(&mut self, k: u32, rank: Rank) {
        self.rank[k as usize] = Some(rank);
        self.heap.push(Reverse((rank, k)));
    }

    pub(super) fn pop_best(&mut self) -> Option<u32> {
        loop {
            let Reverse((rank, k)) = self.heap.pop()?;
            if self.rank[k as usize] == Some(rank) {
                self.rank[k as usize] = None;
                return Some(k);
            }
        }
    }

    /// Ranks `k` again if it is ready.
    pub(super) fn rerank(&mut self, k: u32, rank: impl FnOnce() -> Rank) {
        if let Some(old) = self.rank[k as usize] {
            let new = rank();
            if new != old {
                self.insert(k, new);
            }
        }
    }
}

/// Per value, the operations of the block that define or read it; per operation, its
/// definitions and distinct operands with where the operations touching each lie, found
/// once instead of at every placement and ranking.
#[derive(Debug)]
pub(super) struct Touching {
    /// `(value, operation)` pairs, sorted.
    pairs: Vec<(Value, u32)>,
    /// Per operation (from `starts[k]` to `starts[k + 1]`), its definitions then its
    /// distinct operands in order of first reading.
    touched: Vec<Touched>,
    /// Per operation, where its entries of `touched` start and where its operands start.
    starts: Vec<(usize, usize)>,
}

/// A value an operation defines or reads, and the range of [`Touching`]'s pairs holding
/// the operations touching it.
#[derive(Clone, Debug)]
pub(super) struct Touched {
    pub(super) value: Value,
    ops: Range<usize>,
}

impl Touching {
    fn of(ops: &[&Op]) -> Touching {
        let mut pairs: Vec<(Value, u32)> = ops
            .iter()
            .enumerate()
            .flat_map(|(k, op)| {
                let defs = op.defs.iter().map(|d| d.value);
                defs.chain(op.uses().map(|u| u.value))
                    .map(move |v| (v, k as u32))
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let spans = Spans::of(&pairs);
        let mut touched = Vec::with_capacity(pairs.len());
        let mut starts = Vec::with_capacity(ops.len() + 1);
        for op in ops {
            let start = touched.len();
            let defs = op.defs.iter().map(|d| d.value);
            touched.extend(defs.map(|value| spans.touched(value)));
            let operands = touched.len();
            for u in op.uses() {
                if !touched[operands..].iter().any(|t| t.value == u.value) {
                    touched.push(spans.touched(u.value));
                }
            }
            starts.push((start, operands));
        }
        starts.push((touched.len(), touched.len()));
        Touching {
            pairs,
            touched,
            starts,
        }
    }

    /// Operation `k`'s definitions and its distinct operands.
    pub(super) fn of_operation(&self, k: u32) -> (&[Touched], &[Touched]) {
        let (start, operands) = self.starts[k as usize];
        let end = self.starts[k as usize + 1].0;
        (&self.touched[start..operands], &self.touched[operands..end])
    }

    fn ops_in(&self, range: Range<usize>) -> impl Iterator<Item = &u32> {
        self.pairs[range].iter().map(|(_, k)| k)
    }

    pub(super) fn ops_of(&self, v: Value) -> impl Iterator<Item = &u32> {
        let start = self.pairs.partition_point(|&(w, _)| w < v);
        self.pairs[start..]
            .iter()
            .take_while(move |&&(w, _)| w == v)
            .map(|(_, k)| k)
    }
}

/// Where each value's pairs lie among sorted `(value, operation)` pairs, indexed by value
/// from the least one (one pass, where a search per lookup would cost a logarithm).
struct Spans {
    least: usize,
    /// Per value from `least` on, the start of its pairs (and past the last, their end).
    starts: Vec<usize>,
}

impl Spans {
    fn of(pairs: &[(Value, u32)]) -> Spans {
        let least = pairs.first().map_or(0, |(v, _)| v.index());
        let most = pairs.last().map_or(0, |(v, _)| v.index());
        let mut starts = vec![0; most + 2 - least];
        for (v, _) in pairs {
            starts[v.index() + 1 - least] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        Spans { least, starts }
    }

    /// `value`, one of the pairs', with the range of its pairs.
    fn touched(&self, value: Value) -> Touched {
        let k = value.index() - self.least;
        Touched {
            value,
            ops: self.starts[k]..self.starts[k + 1],
        }
    }
}

/// The sort key of operation `k` under `heuristic`, given the values live below it.
fn rank(
    problem: &Problem<'_>,
    heuristic: Heuristic,
    weights: &[i64],
    (k, ready_since): (u32, i64),
    live: &Live,
) -> Rank {
    let op = problem.ops[k as usize];
    let (defs, uses) = problem.touching.of_operation(k);
    let (freed, opened) = effect_on_live((defs, uses), weights, live);
    let delta = opened - freed;
    let latest_first = -i64::from(k);
    match heuristic {
        Heuristic::Delta => (delta, 0, latest_first),
        Heuristic::Demand => (
            demand_above_live(defs, (freed, opened), weights, live),
            delta,
            latest_first,
        ),
        Heuristic::Frees => (-freed, opened, latest_first),
        Heuristic::SethiUllman => (delta, i64::from(problem.labels[k as usize]), latest_first),
        Heuristic::OrderedLast => (i64::from(!is_ordered(op)), delta, latest_first),
        Heuristic::Staged => {
            let (early, late) = problem.stages[k as usize];
            let stage = if delta <= 0 { late } else { early };
            (-i64::from(stage), delta, -ready_since)
        }
    }
}

/// Whether `op` is kept in order with other operations by its effect (a `remat` operation
/// is not, whatever its effect: it computes the same value wherever it runs).
fn is_ordered(op: &Op) -> bool {
    !op.remat && !matches!(op.effect, Effect::None | Effect::Carry)
}

/// Weighted units placing an operation (its definitions and distinct operands) above the
/// live set frees (its live definitions) and opens (its operands not yet live).
fn effect_on_live(
    (defs, uses): (&[Touched], &[Touched]),
    weights: &[i64],
    live: &Live,
) -> (i64, i64) {
    let weighed = |t: &Touched| weights[live.class(t.value)] * i64::from(live.size(t.value));
    let freed: i64 = defs
        .iter()
        .filter(|t| live.contains(t.value))
        .map(weighed)
        .sum();
    let opened = uses
        .iter()
        .filter(|t| !live.contains(t.value))
        .map(weighed)
        .sum();
    (freed, opened)
}

/// The weighted demand at an operation (its definitions `defs`, and the units its placement
/// frees and opens) if it is placed next, less the live units (the same for every
/// candidate): its dead definitions (after it) or its net new operands (before it),
/// whichever is larger.
fn demand_above_live(
    defs: &[Touched],
    (freed, opened): (i64, i64),
    weights: &[i64],
    live: &Live,
) -> i64 {
    let dead_defs: i64 = defs
        .iter()
        .filter(|t| !live.contains(t.value))
        .map(|t| weights[live.class(t.value)] * i64::from(live.size(t.value)))
        .sum();
    dead_defs.max(opened - freed)
}

/// Per operation, the last of the block's memory reads (numbered from 1 in the emitted
/// order) it depends on (an operation that depends on none takes the least of its
/// successors', so it is placed with the first of them), and the least of its successors'
/// (`u32::MAX` for an operation without one).
fn stages(ops: &[&Op], deps: &Deps) -> Vec<(u32, u32)> {
    let mut early = vec![0u32; ops.len()];
    let mut reads = 0;
    for (j, op) in ops.iter().enumerate() {
        if !op.remat && op.effect == Effect::ReadsMemory {
            reads += 1;
            early[j] = reads;
        }
        let preds = deps.preds[j].iter().map(|&i| early[i as usize]);
        early[j] = preds.fold(early[j], u32::max);
    }
    let late_of = |early: &[u32], j: usize| deps.succs[j].iter().map(|&s| early[s as usize]).min();
    for j in (0..ops.len()).rev() {
        if early[j] == 0 {
            early[j] = late_of(&early, j).unwrap_or(0);
        }
    }
    (0..ops.len())
        .map(|j| (early[j], late_of(&early, j).unwrap_or(u32::MAX)))
        .collect()
}

/// Sethi–Ullman labels over the dependence DAG, in text order: a node with no
/// predecessors needs 1; otherwise, with its predecessors' labels sorted in decreasing
/// order `l0 ≥ l1 ≥ …`, it needs `max(l_i + i)`.
fn sethi_ullman(deps: &Deps) -> Vec<u32> {
    let mut labels = vec![1u32; deps.len()];
    let mut pred_labels: Vec<u32> = Vec::new();
    for j in 0..deps.len() {
        pred_labels.clear();
        pred_labels.extend(deps.preds[j].iter().map(|&i| labels[i as usize]));
        pred_labels.sort_unstable_by(|a, b| b.cmp(a));
        labels[j] = pred_labels
            .iter()
            .enumerate()
            .map(|(i, &l)| l + i as u32)
            .max()
            .unwrap_or(1);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::top_down::tests::{peak_r, program, TWO_READERS};

    /// Built from the bottom, the compare-and-select chain that only feeds the last store
    /// lands below the barrier region, and the four loaded values cross it; with the
    /// ordered operations placed first it is built above the region, beside the maximum.
    #[test]
    fn ordered_operations_placed_first_keep_a_computation_above_their_region() {
        let p = program(TWO_READERS);
        let weights = vec![1; p.target.classes.len()];
        let (delta, _) = peak_r(&p, |problem, live| {
            schedule(problem, Heuristic::Delta, &weights, live)
        });
        let (ordered_last, legal) = peak_r(&p, |problem, live| {
            schedule(problem, Heuristic::OrderedLast, &weights, live)
        });
        assert!(legal);
        assert_eq!((delta, ordered_last), (5, 3));
    }

    /// Measured as it is built, an order is the one [`schedule`] makes with the peak
    /// [`crate::schedule::peak::peak`] gives it; it is given up exactly when that peak
    /// scores the cut-off or more.
    #[test]
    fn an_order_measured_as_built_is_given_up_only_at_its_score() {
        let source = include_str!("../../corpus/ptx/window_argmax_sm_90.ptx");
        let p = crate::ptx::import(source).expect("imports").program;
        let f = &p.functions[0];
        let budget: Vec<u16> = p.target.classes.iter().map(|_| 2).collect();
        let mut live = Live::new(f, &p.target);
        for block in &f.blocks {
            let ops: Vec<&Op> = block.insts.iter().filter_map(|i| i.op()).collect();
            if ops.is_empty() {
                continue;
            }
            let deps = Deps::of_ops(&ops);
            let problem = Problem::new(ops, deps, &[]);
            for weights in crate::schedule::weightings(&p.target) {
                for heuristic in Heuristic::CLASSIC {
                    let order = schedule(&problem, heuristic, &weights, &mut live);
                    let peak = crate::schedule::peak::peak(&problem.ops, &order, &[], &mut live);
                    let s = crate::schedule::score(&peak, &budget);
                    let below = |cutoff, live: &mut Live| {
                        schedule_below(&problem, (heuristic, &weights), live, (&budget, cutoff))
                    };
                    assert_eq!(below((s.0, s.1 + 1), &mut live), Some((order, peak)));
                    assert_eq!(below(s, &mut live), None);
                }
            }
        }
    }

    /// The max-pool shape of `corpus/ptx/window_argmax_sm_90.ptx`: every loaded value read
    /// by a running maximum and a running index. Each other heuristic builds one chain whole
    /// from the bottom and keeps most loaded values live; the staged order's peak is at
    /// least a third below the lowest of theirs, in a legal order.
    #[test]
    fn staged_order_consumes_each_load_before_the_next() {
        let source = include_str!("../../corpus/ptx/window_argmax_sm_90.ptx");
        let p = crate::ptx::import(source).expect("imports").program;
        let others = [Heuristic::OrderedLast].iter().chain(&Heuristic::CLASSIC);
        for weights in crate::schedule::weightings(&p.target) {
            let run =
                |h: Heuristic| peak_r(&p, |problem, live| schedule(problem, h, &weights, live));
            let (staged, legal) = run(Heuristic::Staged);
            assert!(legal);
            let least_other = others.clone().map(|&h| run(h).0).min().expect("heuristics");
            assert!(
                3 * staged <= 2 * least_other,
                "{staged} against {least_other}"
            );
        }
    }
}
