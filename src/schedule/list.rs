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

use super::deps::Deps;
use super::peak::{step_back, Live};
use crate::program::{Op, Value};

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
}

impl Heuristic {
    pub const ALL: [Heuristic; 4] = [
        Heuristic::Delta,
        Heuristic::Demand,
        Heuristic::Frees,
        Heuristic::SethiUllman,
    ];
}

/// What one scheduling run needs: the block's operations, their dependences, what is
/// live after them, and a weight per class.
#[derive(Debug)]
pub struct Problem<'a> {
    pub ops: &'a [&'a Op],
    pub deps: &'a Deps,
    pub live_end: &'a [Value],
    pub weights: &'a [i64],
}

/// An order of the operations (indices into `problem.ops`) that respects the dependences.
pub fn schedule(problem: &Problem<'_>, heuristic: Heuristic, live: &mut Live<'_>) -> Vec<u32> {
    let n = problem.ops.len();
    let labels = sethi_ullman(problem.deps);
    let mut unplaced_succs: Vec<usize> = problem.deps.succs.iter().map(Vec::len).collect();
    let mut ready: Vec<u32> = (0..n as u32)
        .filter(|&k| unplaced_succs[k as usize] == 0)
        .collect();
    live.reset(problem.live_end);
    let mut order = Vec::with_capacity(n);
    while let Some(pick) = ready
        .iter()
        .enumerate()
        .min_by_key(|&(_, &k)| rank(problem, heuristic, &labels, k, live))
        .map(|(i, _)| i)
    {
        let k = ready.swap_remove(pick);
        order.push(k);
        step_back(problem.ops[k as usize], live);
        for &p in &problem.deps.preds[k as usize] {
            unplaced_succs[p as usize] -= 1;
            if unplaced_succs[p as usize] == 0 {
                ready.push(p);
            }
        }
    }
    order.reverse();
    order
}

/// The sort key of operation `k` under `heuristic`, given the values live below it.
fn rank(
    problem: &Problem<'_>,
    heuristic: Heuristic,
    labels: &[u32],
    k: u32,
    live: &Live<'_>,
) -> (i64, i64, i64) {
    let op = problem.ops[k as usize];
    let (freed, opened) = effect_on_live(op, problem.weights, live);
    let delta = opened - freed;
    let latest_first = -i64::from(k);
    match heuristic {
        Heuristic::Delta => (delta, 0, latest_first),
        Heuristic::Demand => (demand(op, problem.weights, live), delta, latest_first),
        Heuristic::Frees => (-freed, opened, latest_first),
        Heuristic::SethiUllman => (delta, i64::from(labels[k as usize]), latest_first),
    }
}

/// Weighted units placing `op` above the live set frees (its live definitions) and opens
/// (its operands not yet live, each once).
fn effect_on_live(op: &Op, weights: &[i64], live: &Live<'_>) -> (i64, i64) {
    let weighed = |v: Value| weights[live.class(v)] * i64::from(live.size(v));
    let freed: i64 = op
        .defs
        .iter()
        .filter(|d| live.contains(d.value))
        .map(|d| weighed(d.value))
        .sum();
    let mut seen: Vec<Value> = Vec::new();
    let mut opened = 0;
    for u in op.uses() {
        if !live.contains(u.value) && !seen.contains(&u.value) {
            seen.push(u.value);
            opened += weighed(u.value);
        }
    }
    (freed, opened)
}

/// The weighted demand at `op` if it is placed next: live units with its dead definitions
/// (after it) or with its new operands (before it), whichever is larger.
fn demand(op: &Op, weights: &[i64], live: &Live<'_>) -> i64 {
    let (freed, opened) = effect_on_live(op, weights, live);
    let here: i64 = live
        .units
        .iter()
        .zip(weights)
        .map(|(&u, &w)| w * i64::from(u))
        .sum();
    let dead_defs: i64 = op
        .defs
        .iter()
        .filter(|d| !live.contains(d.value))
        .map(|d| weights[live.class(d.value)] * i64::from(live.size(d.value)))
        .sum();
    (here + dead_defs).max(here - freed + opened)
}

/// Sethi–Ullman labels over the dependence DAG, in text order: a node with no
/// predecessors needs 1; otherwise, with its predecessors' labels sorted in decreasing
/// order `l0 ≥ l1 ≥ …`, it needs `max(l_i + i)`.
fn sethi_ullman(deps: &Deps) -> Vec<u32> {
    let mut labels = vec![1u32; deps.len()];
    for j in 0..deps.len() {
        let mut pred_labels: Vec<u32> = deps.preds[j].iter().map(|&i| labels[i as usize]).collect();
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
