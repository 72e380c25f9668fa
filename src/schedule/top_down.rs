//! Top-down list scheduling for register pressure.
//!
//! The block is built from its start: the ready operations are those whose predecessors in
//! the dependence graph are all placed, and each step places the ready operation that
//! changes the live set least — the units its definitions open less the units of the
//! operands it reads for the last time (none of the block's operations left to read them,
//! and not live after the block). This is the pre-allocation mode of Mesa's i965
//! scheduler (`SCHEDULE_PRE` and `SCHEDULE_PRE_LIFO` in `brw_schedule_instructions.cpp`,
//! choosing by "register pressure benefit"), the direction LLVM's generic machine
//! scheduler also runs.
//!
//! It finds what the bottom-up scheduler ([`super::list`]) misses when a value is read by
//! two computations of which only one feeds an ordered operation near the end of the
//! block: built from the bottom, the other computation is placed below the ordered
//! operations, so every value it reads stays live across them; built from the top, its
//! readers are placed as soon as the values are there, and they die.
//!
//! Ties go, under [`Tie::Lifo`], to the operations made ready most recently (a depth-first
//! walk: what a placement unblocks is finished before new values are opened), and within
//! one step to the earliest in the emitted order; under [`Tie::Emitted`], to the earliest in
//! the emitted order.

use super::list::{Problem, Rank, Ready};
use super::peak::Live;
use crate::program::{Op, Value};

/// How ready operations of equal benefit are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tie {
    /// Most recently made ready first.
    Lifo,
    /// Earliest in the emitted order first.
    Emitted,
}

impl Tie {
    pub const ALL: [Tie; 2] = [Tie::Lifo, Tie::Emitted];
}

/// An order of the operations (indices into `problem.ops`) that respects the dependences,
/// built from the top.
///
/// As in [`super::list::schedule`], a ready operation's rank depends only on its own
/// values (whether each operand has other readers left), so only the ready operations
/// that read a value now left with one reader are ranked again: a count that falls to
/// more than one changes no rank, and one that falls to none leaves no reader to rank.
/// A value read by many operations (a row's maximum in a softmax) is so looked at twice,
/// not at each of its reads.
pub fn schedule(problem: &Problem<'_>, tie: Tie, weights: &[i64], live: &mut Live) -> Vec<u32> {
    let n = problem.ops.len();
    let start = problem
        .top_down
        .get_or_init(|| Start::of(&problem.ops, problem.live_end));
    let mut readers = start.readers.clone();
    let mut unplaced_preds: Vec<usize> = problem.deps.preds.iter().map(Vec::len).collect();
    live.reset(&start.live_in);
    let mut ready = Ready::new(n);
    let rank_of = |k: u32, step: i64, readers: &Readers, live: &Live| {
        rank(
            problem.ops[k as usize],
            k,
            step,
            tie,
            weights,
            readers,
            live,
        )
    };
    let mut ready_since: Vec<i64> = vec![0; n];
    for k in (0..n as u32).filter(|&k| unplaced_preds[k as usize] == 0) {
        ready.insert(k, rank_of(k, 0, &readers, live));
    }
    let mut order = Vec::with_capacity(n);
    let mut read_values: Vec<Value> = Vec::new();
    while let Some(k) = ready.pop_best() {
        order.push(k);
        let op = problem.ops[k as usize];
        read_values.clear();
        read_values.extend(distinct_uses(op));
        place(op, &read_values, &mut readers, live);
        let now_last = read_values.iter().filter(|&&v| readers.is_last_read(v));
        for &j in now_last.flat_map(|&v| problem.touching.ops_of(v)) {
            let step = ready_since[j as usize];
            ready.rerank(j, || rank_of(j, step, &readers, live));
        }
        let step = order.len() as i64;
        for &s in &problem.deps.succs[k as usize] {
            unplaced_preds[s as usize] -= 1;
            if unplaced_preds[s as usize] == 0 {
                ready_since[s as usize] = step;
                ready.insert(s, rank_of(s, step, &readers, live));
            }
        }
    }
    order
}

/// Moves the live set from before `op` to after it: its definitions join (a dead one
/// leaves at once), and each operand whose last reader it was leaves.
fn place(op: &Op, read_values: &[Value], readers: &mut Readers, live: &mut Live) {
    for &v in read_values {
        if readers.read_once_more(v) {
            live.remove(v);
        }
    }
    for d in &op.defs {
        if readers.is_read_later(d.value) {
            live.insert(d.value);
        }
    }
}

/// The sort key of operation `k`, made ready after `step` placements.
fn rank(
    op: &Op,
    k: u32,
    step: i64,
    tie: Tie,
    weights: &[i64],
    readers: &Readers,
    live: &Live,
) -> Rank {
    let weighed = |v: Value| weights[live.class(v)] * i64::from(live.size(v));
    let opened: i64 = op.defs.iter().map(|d| weighed(d.value)).sum();
    let freed: i64 = distinct_uses(op)
        .filter(|&v| readers.is_last_read(v))
        .map(weighed)
        .sum();
    let emitted = i64::from(k);
    match tie {
        Tie::Lifo => (opened - freed, -step, emitted),
        Tie::Emitted => (opened - freed, emitted, 0),
    }
}

/// The values `op` reads, each once.
fn distinct_uses(op: &Op) -> impl Iterator<Item = Value> + '_ {
    op.uses()
        .enumerate()
        .filter(|&(i, u)| !op.uses().take(i).any(|w| w.value == u.value))
        .map(|(_, u)| u.value)
}

/// What every top-down run of one block starts from, made once for them all.
#[derive(Debug)]
pub(super) struct Start {
    readers: Readers,
    /// The values live before the first operation.
    live_in: Vec<Value>,
}

impl Start {
    fn of(ops: &[&Op], live_end: &[Value]) -> Start {
        let readers = Readers::of(ops, live_end);
        let live_in = readers.live_in(ops);
        Start { readers, live_in }
    }
}

/// Per value the block touches, how many of its unplaced operations read it, and whether it
/// is live after the block.
#[derive(Clone, Debug)]
struct Readers {
    /// `(value, unplaced readers, live after the block)`, sorted by value.
    counts: Vec<(Value, u32, bool)>,
}

impl Readers {
    fn of(ops: &[&Op], live_end: &[Value]) -> Readers {
        let mut pairs: Vec<(Value, u32)> = ops
            .iter()
            .enumerate()
            .flat_map(|(k, op)| {
                let defs = op.defs.iter().map(|d| (d.value, u32::MAX));
                defs.chain(distinct_uses(op).map(move |v| (v, k as u32)))
            })
            .collect();
        pairs.sort_unstable();
        let mut counts: Vec<(Value, u32, bool)> = Vec::new();
        for (v, reader) in pairs {
            if counts.last().is_none_or(|&(w, _, _)| w != v) {
                counts.push((v, 0, live_end.binary_search(&v).is_ok()));
            }
            if reader != u32::MAX {
                counts.last_mut().expect("pushed above").1 += 1;
            }
        }
        Readers { counts }
    }

    fn entry(&self, v: Value) -> Option<&(Value, u32, bool)> {
        let i = self.counts.binary_search_by_key(&v, |&(w, _, _)| w).ok()?;
        Some(&self.counts[i])
    }

    /// The values live before the first operation that the block touches: those it reads
    /// and does not define.
    fn live_in(&self, ops: &[&Op]) -> Vec<Value> {
        let mut defined: Vec<Value> = ops
            .iter()
            .flat_map(|op| op.defs.iter().map(|d| d.value))
            .collect();
        defined.sort_unstable();
        self.counts
            .iter()
            .map(|&(v, _, _)| v)
            .filter(|v| defined.binary_search(v).is_err())
            .collect()
    }

    /// Whether an operation reading `v` now reads it for the last time.
    fn is_last_read(&self, v: Value) -> bool {
        self.entry(v)
            .is_some_and(|&(_, readers, after)| readers == 1 && !after)
    }

    /// Whether `v`, just defined, is read afterwards (in the block or after it).
    fn is_read_later(&self, v: Value) -> bool {
        self.entry(v)
            .is_some_and(|&(_, readers, after)| readers > 0 || after)
    }

    /// Counts one read of `v`; whether it was the last.
    fn read_once_more(&mut self, v: Value) -> bool {
        let Ok(i) = self.counts.binary_search_by_key(&v, |&(w, _, _)| w) else {
            return false;
        };
        let entry = &mut self.counts[i];
        entry.1 -= 1;
        entry.1 == 0 && !entry.2
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::program::Program;
    use crate::schedule::deps::Deps;
    use crate::schedule::list::{self, Heuristic};
    use crate::schedule::peak::peak;

    /// The max-pool shape: four loaded values, each read by a running maximum that is
    /// stored before a barrier region and by a second chain whose result is stored after
    /// it.
    pub(crate) const TWO_READERS: &str = "  %a:r1 = ld 0 reads\n  %b:r1 = ld 4 reads\n  %c:r1 = ld 8 reads\n  %d:r1 = ld 12 reads\n  %m1:r1 = max %a, %b\n  %m2:r1 = max %m1, %c\n  %m3:r1 = max %m2, %d\n  st 0, %m3 writes\n  bar barrier\n  %l:r1 = ld 100 reads\n  st 200, %l writes\n  %i1:r1 = add %a, %b\n  %i2:r1 = add %i1, %c\n  %i3:r1 = add %i2, %d\n  st 300, %i3 writes\n";

    pub(crate) fn program(body: &str) -> Program {
        let text = format!("target sm_80\nfunc @f {{\nentry:\n{body}  ret\n}}\n");
        crate::parse(&text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The peak of `r` of the block in the order `schedule` gives, and whether that order
    /// keeps the dependences.
    pub(crate) fn peak_r(
        p: &Program,
        schedule: impl Fn(&Problem<'_>, &mut Live) -> Vec<u32>,
    ) -> (u32, bool) {
        let f = &p.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        let deps = Deps::of_ops(&ops);
        let problem = Problem::new(ops, deps, &[]);
        let mut live = Live::new(f, &p.target);
        let order = schedule(&problem, &mut live);
        let r = p
            .target
            .class_ids()
            .position(|c| p.target.class(c).name == "r");
        let peaks = peak(&problem.ops, &order, &[], &mut live);
        (peaks[r.expect("class r")], problem.deps.respects(&order))
    }

    #[test]
    fn readers_are_placed_as_soon_as_their_values_are_there() {
        let p = program(TWO_READERS);
        let weights = vec![1; p.target.classes.len()];
        let (emitted, _) = peak_r(&p, |problem, _| (0..problem.op_count() as u32).collect());
        let (lifo, legal) = peak_r(&p, |problem, live| {
            schedule(problem, Tie::Lifo, &weights, live)
        });
        assert!(legal);
        assert_eq!((emitted, lifo), (5, 3));
        for heuristic in Heuristic::CLASSIC {
            let (bottom_up, _) = peak_r(&p, |problem, live| {
                list::schedule(problem, heuristic, &weights, live)
            });
            assert!(bottom_up > 3, "{heuristic:?}: {bottom_up}");
        }
    }

    #[test]
    fn every_tie_rule_keeps_the_dependences() {
        let p = program(TWO_READERS);
        for tie in Tie::ALL {
            for weights in crate::schedule::weightings(&p.target) {
                let (_, legal) = peak_r(&p, |problem, live| schedule(problem, tie, &weights, live));
                assert!(legal, "{tie:?} {weights:?}");
            }
        }
    }
}
