//! Next-use distances: how many instructions until a value is read again (Braun & Hack,
//! "Register Spilling and Live-Range Splitting for SSA-Form Programs", CC 2009, §3).
//!
//! Inside a block, a value's next use is found among its use positions: instruction `i`
//! at position `i`, the terminator (and the phi arguments the block passes to its
//! successors) at position `n`, the number of instructions. Past the end of a block the
//! distance is the smallest, over successors on the class's CFG where the value is live
//! in, of the distance from the successor's entry, plus a penalty for every loop the edge
//! leaves — a value used only after a loop is farther than any value used in it, so
//! Belady's rule evicts it first and reloads it after the loop. The distances at block
//! ends are a backward fixpoint over the CFG (unreachable regions included), with one
//! sorted map per block: a worklist seeded in post-order, where a block whose distances
//! fell puts its predecessors back (the distances only fall, so any order reaches the
//! same fixpoint; the worklist visits a block again only when a successor changed,
//! instead of every block on every round). The use positions and the distances are
//! compressed rows ([`Rows`]: one array of entries per table, not one vector per block),
//! so the walks over the blocks read them in order; the live-out values and their
//! distances are two tables of the same shape, 12 bytes an entry where pairs would take
//! 16 (a 4-byte value padded beside an 8-byte distance), since a large function's table
//! misses the cache on every byte.
//!
//! On the linear CFG of uniform values, the edges a wave takes only when no lane takes a
//! side of a divergent branch (`Divergence::is_skip`) do not count while another edge
//! leads to the use: the wave runs the then-side before the else-arm and the else-side
//! before the join, so a value read only in the else-arm is next used after the whole
//! then-side, not right after the branch.

use crate::analysis::cfg::Graph;
use crate::analysis::liveness::Liveness;
use crate::analysis::loops::Loops;
use crate::analysis::rows::Rows;
use crate::program::{Block, Function, InstKind, Value};
use crate::target::ClassId;
use std::collections::VecDeque;

/// The first step of a value's path from a block's end to its next use: the successor
/// nearest that use, over every edge (on the linear CFG, the edges taken only when no
/// lane takes a divergent side too; the lowest among equals), and where the value's entry
/// is in that successor's row, or [`Step::READS`] when the successor reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub to: Block,
    pub at: u32,
}

impl Step {
    /// `at` of a step to a successor that reads the value.
    pub const READS: u32 = u32::MAX;
    /// The step of a value the successors never read: to no block.
    pub const NONE: Step = Step {
        to: Block(u32::MAX),
        at: Step::READS,
    };
}

/// Distance of a value that is never read again.
pub const NEVER: u64 = u64::MAX;

/// Added to a distance for each loop an edge leaves: a distance at least this large
/// means the next use lies after the loop.
pub const LOOP_EXIT: u64 = 100_000;

/// The use positions of one class's values in each block.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    /// Per block: (value, position) sorted.
    blocks: Rows<(Value, u32)>,
}

impl Uses {
    pub fn new(f: &Function, class: ClassId) -> Uses {
        let of_class = |v: Value| f.value(v).class == class;
        let mut blocks = Rows::default();
        let mut uses: Vec<(Value, u32)> = Vec::new();
        for b in f.block_ids() {
            let block = f.block(b);
            let n = block.insts.len() as u32;
            uses.clear();
            for (i, inst) in block.insts.iter().enumerate() {
                if let InstKind::Op(op) = &inst.kind {
                    uses.extend(op.uses().map(|u| (u.value, i as u32)));
                }
            }
            uses.extend(block.term.uses().iter().map(|u| (u.value, n)));
            for s in block.term.successors() {
                for phi in &f.block(s).phis {
                    for arg in phi.args.iter().filter(|a| a.block == b) {
                        uses.push((arg.value, n));
                    }
                }
            }
            uses.retain(|&(v, _)| of_class(v));
            uses.sort_unstable();
            uses.dedup();
            blocks.push_row(uses.iter().copied());
        }
        Uses { blocks }
    }

    /// The first position at or after `from` where `b` reads `v`.
    pub fn next(&self, b: Block, v: Value, from: u32) -> Option<u32> {
        let uses = self.blocks.row(b);
        let i = uses.partition_point(|&(w, p)| (w, p) < (v, from));
        uses.get(i).filter(|&&(w, _)| w == v).map(|&(_, p)| p)
    }

    /// The reads of `b`: (value, position), sorted.
    pub fn in_block(&self, b: Block) -> &[(Value, u32)] {
        self.blocks.row(b)
    }

    /// Whether `b` reads `v` anywhere.
    pub fn reads(&self, b: Block, v: Value) -> bool {
        self.next(b, v, 0).is_some()
    }
}

/// Distances from each block's end to the next use of its live-out values of one class.
#[derive(Clone, Debug)]
pub struct NextUse {
    /// Per block: its live-out values of the class, sorted.
    live_out: Rows<Value>,
    /// Per block, beside `live_out`: each value's distance from the end.
    distance: Rows<u64>,
    /// Per block, beside `live_out`: the first step of each value's path to its next use
    /// ([`Step`]).
    step: Rows<Step>,
    /// Per block: its number of positions (instructions and the terminator).
    len: Vec<u64>,
}

impl NextUse {
    /// `graph` is the CFG the class's liveness follows, `loops` its loops, `order` its
    /// blocks in [`visit_order`](super::belady::visit_order); `skip` says which of its
    /// edges run only when no lane takes a divergent side.
    pub fn new(
        f: &Function,
        class: ClassId,
        uses: &Uses,
        (graph, loops): (&Graph, &Loops),
        order: &[Block],
        liveness: &Liveness,
        skip: &dyn Fn(Block, Block) -> bool,
    ) -> NextUse {
        let len: Vec<u64> = f.blocks.iter().map(|b| b.insts.len() as u64 + 1).collect();
        let (blocks, entries) = (f.blocks.len(), live_out_entries(f, liveness));
        let mut live_out = Rows::with_capacity(blocks, entries);
        let mut distance = Rows::with_capacity(blocks, entries);
        let mut step = Rows::with_capacity(blocks, entries);
        for b in f.block_ids() {
            let values = liveness.live_out(b).iter().copied();
            live_out.push_row(values.filter(|&v| f.value(v).class == class));
            distance.push_row(live_out.row(b).iter().map(|_| NEVER));
            step.push_row(live_out.row(b).iter().map(|_| Step::NONE));
        }
        let mut queued = vec![true; f.blocks.len()];
        let mut work: VecDeque<Block> = order.iter().rev().copied().collect();
        while let Some(b) = work.pop_front() {
            queued[b.index()] = false;
            let mut changed = false;
            for k in 0..live_out.row(b).len() {
                let (v, known) = (live_out.row(b)[k], distance.row(b)[k]);
                let through = |s: Block| {
                    let (from_entry, at) = match uses.next(s, v, 0) {
                        Some(p) => (u64::from(p), Step::READS),
                        None => {
                            let at = live_out.row(s).binary_search(&v);
                            let at_end = at.map_or(NEVER, |i| distance.row(s)[i]);
                            let at = at.map_or(Step::READS, |i| i as u32);
                            (len[s.index()].saturating_add(at_end), at)
                        }
                    };
                    let d = from_entry.saturating_add(exit_penalty(loops, b, s));
                    (d, Step { to: s, at })
                };
                let (d, to) = nearest_through(graph, liveness, b, v, skip, through);
                if d < known {
                    distance.row_mut(b)[k] = d;
                    changed = true;
                }
                step.row_mut(b)[k] = to;
            }
            if changed {
                for &p in graph.preds(b) {
                    if !std::mem::replace(&mut queued[p.index()], true) {
                        work.push_back(p);
                    }
                }
            }
        }
        NextUse {
            live_out,
            distance,
            step,
            len,
        }
    }

    /// The live-out values of the class at the end of `b`, sorted.
    pub fn live_out(&self, b: Block) -> &[Value] {
        self.live_out.row(b)
    }

    /// Beside [`Self::live_out`]: the first step of each value's path to its next use.
    pub fn steps(&self, b: Block) -> &[Step] {
        self.step.row(b)
    }

    /// Distance from the end of `b` to the next use of `v` (`NEVER` when not live out).
    pub fn at_end(&self, b: Block, v: Value) -> u64 {
        lookup(&self.live_out, &self.distance, b, v)
    }

    /// Distance from position `at` of `b` to the next use of `v` at or after it.
    pub fn from(&self, uses: &Uses, b: Block, v: Value, at: u32) -> u64 {
        match uses.next(b, v, at) {
            Some(p) => u64::from(p - at),
            None => {
                let to_end = self.len[b.index()] - u64::from(at);
                to_end.saturating_add(self.at_end(b, v))
            }
        }
    }
}

/// The least distance `through` gives over the successors of `b` where `v` is live in:
/// over those not skipped when there are any, else over all of them; `NEVER` when `v`
/// is live in none. And the step to the nearest of all of them, skipped or not (the
/// lowest among equals; [`Step::NONE`] when `v` is read on none of them). One pass over
/// the successors, no list of them built.
fn nearest_through(
    graph: &Graph,
    liveness: &Liveness,
    b: Block,
    v: Value,
    skip: &dyn Fn(Block, Block) -> bool,
    through: impl Fn(Block) -> (u64, Step),
) -> (u64, Step) {
    let (mut run, mut any): (Option<u64>, Option<(u64, Step)>) = (None, None);
    for &s in graph.succs(b) {
        if liveness.live_in(s).binary_search(&v).is_err() {
            continue;
        }
        let (d, step) = through(s);
        if any.is_none_or(|(known, to)| (d, s) < (known, to.to)) {
            any = Some((d, step));
        }
        if !skip(b, s) {
            run = Some(run.map_or(d, |x| x.min(d)));
        }
    }
    let step = any
        .filter(|&(d, _)| d != NEVER)
        .map_or(Step::NONE, |(_, step)| step);
    (run.or(any.map(|(d, _)| d)).unwrap_or(NEVER), step)
}

/// The number of live-out entries over every block, all classes together: room for a
/// table over a class's live-out values reserved at once, so that filling it never
/// copies what it holds (a table larger than the cache would miss on both copies).
pub fn live_out_entries(f: &Function, liveness: &Liveness) -> usize {
    f.block_ids().map(|b| liveness.live_out(b).len()).sum()
}

/// The distance beside `v` in row `b` of `live_out`; `NEVER` when `v` is not there.
fn lookup(live_out: &Rows<Value>, distance: &Rows<u64>, b: Block, v: Value) -> u64 {
    live_out
        .row(b)
        .binary_search(&v)
        .map_or(NEVER, |i| distance.row(b)[i])
}

/// The penalty for the loops the edge `b → s` leaves ([`LOOP_EXIT`] each).
pub fn exit_penalty(loops: &Loops, b: Block, s: Block) -> u64 {
    u64::from(loops.depth(b).saturating_sub(loops.depth(s))) * LOOP_EXIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::spill::belady::visit_order;
    use crate::alloc::spill::fixture::Fixture;
    use crate::analysis::Analysis;

    #[test]
    fn a_use_after_a_loop_is_farther_than_any_use_inside() {
        let src = "target generic v=8
func @f {
entry:
  %x:v1 = mov 1
  %y:v1 = mov 2
  jump head
head:
  %c:v1 = use %y
  branch uniform %c, head, exit
exit:
  %z:v1 = add %x, %y
  ret %z
}
";
        let fx = Fixture::new(src);
        let nu = fx.next_use();
        let (x, y) = (Value(0), Value(1));
        assert_eq!(nu.at_end(Block(0), y), 0);
        assert!(nu.at_end(Block(0), x) > LOOP_EXIT);
        assert_eq!(nu.from(&fx.uses, Block(1), y, 0), 0);
        assert_eq!(nu.from(&fx.uses, Block(1), y, 1), 1, "around the loop");
    }

    /// The worklist's result solves the equations at every block end: each live-out
    /// value's distance is the least, over the successors it lives into, of its first
    /// read there or the successor's length plus its distance at the successor's end, plus
    /// the loop-exit penalty. A block left out of the worklist after a successor changed
    /// would keep a larger distance and fail this.
    #[test]
    fn the_distances_solve_the_equations_at_every_block_end() {
        let programs = [
            include_str!("../../../corpus/nested_loops.chr").to_string(),
            include_str!("../../../corpus/loop_multi_exit.chr").to_string(),
            crate::synth::synthetic(400),
        ];
        for src in &programs {
            let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
            for f in &p.functions {
                let a = Analysis::new(f, &p.target);
                for class in p.target.class_ids() {
                    let uses = Uses::new(f, class);
                    let graphs = (&*a.cfg, &*a.loops);
                    let order = visit_order(&a.cfg, &a.loops, f);
                    let nu =
                        NextUse::new(f, class, &uses, graphs, &order, &a.liveness, &|_, _| false);
                    for b in f.block_ids() {
                        for &v in a.liveness.live_out(b) {
                            if f.value(v).class != class {
                                continue;
                            }
                            let through = |s: Block| {
                                let len = f.block(s).insts.len() as u64 + 1;
                                let from_entry = uses
                                    .next(s, v, 0)
                                    .map_or(len.saturating_add(nu.at_end(s, v)), u64::from);
                                from_entry.saturating_add(exit_penalty(&a.loops, b, s))
                            };
                            let expected = a
                                .cfg
                                .succs(b)
                                .iter()
                                .filter(|s| a.liveness.live_in(**s).binary_search(&v).is_ok())
                                .map(|&s| through(s))
                                .min()
                                .unwrap_or(NEVER);
                            assert_eq!(nu.at_end(b, v), expected, "@{} {b:?} {v:?}", f.name);
                        }
                    }
                }
            }
        }
    }
}
