//! The path to a value's next read, and the loops on it: for each block end and live-out
//! value of one class that lives into some loop header, the block where the value is
//! read next, and whether the path there enters a loop before it leaves the block's
//! innermost loop.
//!
//! The path follows next-use distances (Braun & Hack, "Register Spilling and Live-Range
//! Splitting for SSA-Form Programs", CC 2009, §3): from a block's end, the successor the
//! value lives into whose distance to the read, with the loop-exit penalty, is the least
//! over every edge (the lowest block among equals; on the linear CFG, edges taken only
//! when no lane takes a divergent side included — left out, as the distances leave them
//! out while another edge leads to the read, generated seeds 716 and 759, class `a`, cost
//! about 2,400 to 2,950 more at four budgets), and so on to the first block that reads
//! it. Three decisions of [`super::belady`] depend on it:
//!
//! - Its after-loop rule evicts the farthest value next read after the current loop,
//!   taking it to stay out for the rest of the loop. That holds for a value that lives
//!   into the loop's header, and for one whose path enters an inner loop before leaving
//!   the loop (it stays out across that inner loop); a value defined in the loop and read
//!   only after it comes back with every definition, stored every iteration.
//! - An eviction inside a loop whose header holds the value puts the reload on the back
//!   edges (§4.2's coupling) unless the end-of-walk pass moves it to the read; the read's
//!   block frequency bounds what that costs.
//! - A loop header's price for leaving out a value that an enclosing header holds counts
//!   a reload on each of the enclosing loop's back edges where the path reads it in a
//!   block of that loop visited already, around a back edge.
//!
//! Only values that live into some loop header are followed: no other value can enter a
//! loop on its path, nor be held by a header. [`NextUse`] records each path's first step
//! (the successor and the value's entry there), and each entry follows from that
//! successor's (its read, unless the successor reads the value; whether its path enters a
//! loop first, unless the step leaves the loop, enters one, or reads the value), so the
//! table is a backward pass over the blocks, one step an entry and no search: a worklist
//! seeded in post-order, a block whose entries changed putting its predecessors back.
//! Distances fall strictly along a path to a read, so no such path runs in a cycle, and
//! an entry changes at most once from its start (no read, no loop) to its value. The
//! rows are compressed ([`Rows`]) and have [`NextUse`]'s shape.

use super::nextuse::{NextUse, Step};
use crate::analysis::cfg::Graph;
use crate::analysis::liveness::Liveness;
use crate::analysis::loops::Loops;
use crate::analysis::rows::Rows;
use crate::program::{Block, Function, Value};
use crate::target::ClassId;
use std::collections::VecDeque;

/// Per block end and live-out value of a class: where its next-use path reads it and
/// whether it enters a loop first.
#[derive(Clone, Debug)]
pub struct NextRead<'a> {
    /// Per block, as [`NextUse::live_out`]: each value and its path (left unknown for a
    /// value that lives into no loop header).
    out: Rows<(Value, Path)>,
    /// The block frequencies.
    freq: &'a [f64],
}

/// A value's next-use path from a block's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Path {
    /// The block of the next read, or [`NOWHERE`].
    read: Block,
    /// Whether the path enters a loop through its header before it leaves the innermost
    /// loop of the block it starts from.
    enters_loop: bool,
}

/// Stands for frequency 0: the value is not read again.
const NOWHERE: Block = Block(u32::MAX);

const UNKNOWN: Path = Path {
    read: NOWHERE,
    enters_loop: false,
};

/// What the table is built from: the function, the class's CFG and loops, and liveness.
#[derive(Debug)]
pub struct Sources<'s> {
    pub f: &'s Function,
    pub class: ClassId,
    pub graph: &'s Graph,
    pub loops: &'s Loops,
    pub liveness: &'s Liveness,
}

impl<'a> NextRead<'a> {
    /// `next` gives the paths' steps, `order` is the class's blocks in
    /// [`visit_order`](super::belady::visit_order), `freq` the block frequencies.
    pub fn new(src: &Sources, next: &NextUse, order: &[Block], freq: &'a [f64]) -> NextRead<'a> {
        let in_loop = values_in_loops(src);
        let entries = src.f.block_ids().map(|b| next.live_out(b).len()).sum();
        let mut out = Rows::with_capacity(src.f.blocks.len(), entries);
        for b in src.f.block_ids() {
            out.push_row(next.live_out(b).iter().map(|&v| (v, UNKNOWN)));
        }
        let mut queued = vec![true; src.f.blocks.len()];
        let mut work: VecDeque<Block> = order.iter().rev().copied().collect();
        let mut edges = Vec::new();
        while let Some(b) = work.pop_front() {
            queued[b.index()] = false;
            let mut changed = false;
            let succs = src.graph.succs(b);
            edges.clear();
            edges.extend(succs.iter().map(|&s| edge(src.loops, b, s)));
            for (k, &v) in next.live_out(b).iter().enumerate() {
                if !in_loop[v.index()] {
                    continue;
                }
                let step = next.steps(b)[k];
                let to = succs.iter().position(|&s| s == step.to);
                let path = path_from(&out, step, to.map_or(Edge::Leaves, |i| edges[i]));
                if path != out.row(b)[k].1 {
                    out.row_mut(b)[k].1 = path;
                    changed = true;
                }
            }
            if changed {
                for &p in src.graph.preds(b) {
                    if !std::mem::replace(&mut queued[p.index()], true) {
                        work.push_back(p);
                    }
                }
            }
        }
        NextRead { out, freq }
    }

    /// The frequency of the block where the next-use path from the end of `b` reads `v`
    /// (0 when it reads it nowhere, or `v` lives into no loop header).
    pub fn read_freq(&self, b: Block, v: Value) -> f64 {
        let read = self.read_block(b, v);
        read.and_then(|r| self.freq.get(r.index()).copied())
            .unwrap_or(0.0)
    }

    /// The block where the next-use path from the end of `b` reads `v` (none when it
    /// reads it nowhere, or `v` lives into no loop header).
    pub fn read_block(&self, b: Block, v: Value) -> Option<Block> {
        Some(self.path(b, v).read).filter(|&r| r != NOWHERE)
    }

    /// Whether the next-use path from the end of `b` enters a loop through its header
    /// before it leaves the innermost loop holding `b`.
    pub fn enters_loop_first(&self, b: Block, v: Value) -> bool {
        self.path(b, v).enters_loop
    }

    fn path(&self, b: Block, v: Value) -> Path {
        let row = self.out.row(b);
        let at = row.binary_search_by_key(&v, |&(w, _)| w);
        at.map_or(UNKNOWN, |k| row[k].1)
    }
}

/// Per value: whether it is of the class and lives into a loop header.
fn values_in_loops(src: &Sources) -> Vec<bool> {
    let mut in_loop = vec![false; src.f.values.len()];
    for &h in src.loops.headers() {
        let live_in = src.liveness.live_in(h).iter();
        for v in live_in.filter(|v| src.f.value(**v).class == src.class) {
            in_loop[v.index()] = true;
        }
    }
    in_loop
}

/// How an edge stands to the innermost loop holding its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edge {
    /// Out of that loop, or from a block in no loop.
    Leaves,
    /// Into a loop inside it, through that loop's header.
    Enters,
    /// Back to its header.
    Returns,
    /// To another of its blocks.
    Stays,
}

/// How the edge `b → s` stands to the innermost loop holding `b`.
fn edge(loops: &Loops, b: Block, s: Block) -> Edge {
    let Some(h) = loops.innermost(b) else {
        return Edge::Leaves;
    };
    if loops.body(h).binary_search(&s).is_err() {
        Edge::Leaves
    } else if loops.is_header(s) && loops.body(s).binary_search(&b).is_err() {
        Edge::Enters
    } else if s == h {
        Edge::Returns
    } else {
        Edge::Stays
    }
}

/// A value's path from a block's end, from its first `step`, the `edge` that step takes,
/// and the path known from there.
fn path_from(out: &Rows<(Value, Path)>, step: Step, edge: Edge) -> Path {
    if step == Step::NONE {
        return UNKNOWN;
    }
    let (s, reads) = (step.to, step.at == Step::READS);
    let there = if reads {
        UNKNOWN
    } else {
        out.row(s)[step.at as usize].1
    };
    let enters_loop = match edge {
        Edge::Enters => true,
        Edge::Stays => !reads && there.enters_loop,
        Edge::Leaves | Edge::Returns => false,
    };
    Path {
        read: if reads { s } else { there.read },
        enters_loop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::spill::fixture::Fixture;

    /// An outer loop (`outer` … `latch`) defining `d` and `e`, with an inner loop
    /// (`inner`) on one side: `d` is read after the inner loop, still in the outer one;
    /// `e` only after the outer loop, reached nearest through the side without the inner
    /// loop; `x`, defined before both, inside the inner loop.
    const NEST: &str = "target generic v=8
func @f {
entry:
  %x:v1 = mov 1
  %c:v1 = mov 2
  jump outer
outer:
  %d:v1 = add %c, %c
  %e:v1 = add %c, %c
  branch uniform %c, inner, skip
inner:
  %u:v1 = add %x, %x
  branch uniform %u, inner, after
after:
  %w:v1 = add %d, %d
  jump latch
skip:
  jump latch
latch:
  branch uniform %c, outer, exit
exit:
  %z:v1 = add %e, %x
  ret %z
}
";

    #[test]
    fn a_path_enters_an_inner_loop_or_leaves_its_own_and_reads_where_it_ends() {
        let fx = Fixture::new(NEST);
        let a = &fx.analysis;
        let sources = Sources {
            f: fx.f(),
            class: fx.class,
            graph: &a.cfg,
            loops: &a.loops,
            liveness: &a.liveness,
        };
        let table = NextRead::new(&sources, &fx.next_use(), &fx.order, &a.freq);
        let (entry, outer, skip) = (Block(0), Block(1), Block(4));
        let (x, d, e) = (Value(0), Value(2), Value(3));
        assert!(table.enters_loop_first(outer, d), "through the inner loop");
        assert_eq!(table.read_freq(outer, d), 10.0, "after the inner loop");
        assert!(!table.enters_loop_first(outer, e), "leaves the outer loop");
        assert!(!table.enters_loop_first(skip, e));
        assert_eq!(table.read_freq(outer, e), 1.0, "after the outer loop");
        assert!(
            table.enters_loop_first(outer, x),
            "read inside the inner loop"
        );
        assert_eq!(table.read_freq(outer, x), 100.0);
        assert!(
            !table.enters_loop_first(entry, x),
            "no loop holds the entry"
        );
        assert_eq!(table.read_freq(entry, x), 100.0);
    }
}
