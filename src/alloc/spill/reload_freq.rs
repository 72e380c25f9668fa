//! Where a reload runs: for each block end and live-out value of one class, the
//! frequency of the block that would reload the value if it left the registers there.
//!
//! Braun & Hack ("Register Spilling and Live-Range Splitting for SSA-Form Programs",
//! CC 2009, §4) reload an evicted value where it is next read, and a value a loop reads
//! on the loop's entry edge (the loop header's W, §4.2). So an eviction's reload runs at
//! the frequency of the block of the value's next read — not at that of the block where
//! MIN evicts it: a value evicted before a branch whose hot side reads it is reloaded
//! there, at the hot side's frequency. When the paths from a block end read the value in
//! several blocks, each may need the reload; the frequency that counts is the highest
//! among them, and a read inside a loop entered on the way counts at the frequency of the
//! block entering the loop. The frequencies at block ends are a backward fixpoint over
//! the class's CFG (a maximum over successors, so it settles on cycles), one sorted map
//! per block like [`NextUse`](super::nextuse::NextUse)'s distances, and like them held
//! in compressed rows ([`Rows`]) reserved at once, not one vector per block, and found
//! by a worklist seeded in post-order: a block whose frequencies rose puts its
//! predecessors back (they only rise, so any order reaches the same least fixpoint; a
//! block is visited again only when a successor changed, instead of every block on
//! every round until none changes).

use super::nextuse::{live_out_entries, Uses};
use crate::analysis::cfg::Graph;
use crate::analysis::liveness::Liveness;
use crate::analysis::loops::Loops;
use crate::analysis::rows::Rows;
use crate::program::{Block, Function, Value};
use crate::target::ClassId;
use std::collections::VecDeque;

/// Per block end and live-out value of a class: the frequency its reload would run at.
#[derive(Clone, Debug)]
pub struct ReloadFreq {
    /// Per block: (value, frequency) sorted by value.
    out: Rows<(Value, f64)>,
}

impl ReloadFreq {
    /// `graph` is the CFG the class's liveness follows, `loops` its loops, `order` its
    /// blocks in [`visit_order`](super::belady::visit_order), `freq` the block
    /// frequencies.
    pub fn new(
        f: &Function,
        class: ClassId,
        uses: &Uses,
        (graph, loops): (&Graph, &Loops),
        order: &[Block],
        liveness: &Liveness,
        freq: &[f64],
    ) -> ReloadFreq {
        let mut out = Rows::with_capacity(f.blocks.len(), live_out_entries(f, liveness));
        for b in f.block_ids() {
            let live_out = liveness.live_out(b).iter().copied();
            let of_class = live_out.filter(|&v| f.value(v).class == class);
            out.push_row(of_class.map(|v| (v, 0.0)));
        }
        let entering = loop_entries(f, graph, loops);
        let mut queued = vec![true; f.blocks.len()];
        let mut work: VecDeque<Block> = order.iter().rev().copied().collect();
        while let Some(b) = work.pop_front() {
            queued[b.index()] = false;
            let mut changed = false;
            for k in 0..out.row(b).len() {
                let v = out.row(b)[k].0;
                let mut highest: f64 = 0.0;
                for (&s, &enters) in graph.succs(b).iter().zip(entering.row(b)) {
                    if liveness.live_in(s).binary_search(&v).is_err() {
                        continue;
                    }
                    let there = if uses.reads(s, v) {
                        freq[s.index()]
                    } else {
                        lookup(out.row(s), v)
                    };
                    let there = if enters {
                        there.min(freq[b.index()])
                    } else {
                        there
                    };
                    highest = highest.max(there);
                }
                if highest > out.row(b)[k].1 {
                    out.row_mut(b)[k].1 = highest;
                    changed = true;
                }
            }
            if changed {
                for &p in graph.preds(b) {
                    if !std::mem::replace(&mut queued[p.index()], true) {
                        work.push_back(p);
                    }
                }
            }
        }
        ReloadFreq { out }
    }

    /// The frequency at which `v`, evicted at the end of `b`, would be reloaded (0 when
    /// it is not live out).
    pub fn at_end(&self, b: Block, v: Value) -> f64 {
        lookup(self.out.row(b), v)
    }
}

fn lookup(out: &[(Value, f64)], v: Value) -> f64 {
    out.binary_search_by_key(&v, |&(w, _)| w)
        .map_or(0.0, |i| out[i].1)
}

/// Per block, per successor (in `graph`'s order): whether the edge enters a loop (its
/// target heads a loop that does not contain the source).
fn loop_entries(f: &Function, graph: &Graph, loops: &Loops) -> Rows<bool> {
    let edges = f.block_ids().map(|b| graph.succs(b).len()).sum();
    let mut entering = Rows::with_capacity(f.blocks.len(), edges);
    for b in f.block_ids() {
        let enters = |s: &Block| loops.is_header(*s) && loops.body(*s).binary_search(&b).is_err();
        entering.push_row(graph.succs(b).iter().map(enters));
    }
    entering
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::spill::belady::visit_order;
    use crate::analysis::Analysis;

    /// The reload frequencies of the first class of the first function of `src`.
    fn reload_freq_of(src: &str) -> ReloadFreq {
        let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let a = Analysis::new(f, &p.target);
        let class = ClassId(0);
        let uses = Uses::new(f, class);
        let order = visit_order(&a.cfg, &a.loops, f);
        let graphs = (&a.cfg, &a.loops);
        ReloadFreq::new(f, class, &uses, graphs, &order, &a.liveness, &a.freq)
    }

    #[test]
    fn a_reload_runs_where_the_value_is_read_and_before_a_loop_that_reads_it() {
        let src = "target generic v=8
func @f {
entry:
  %x:v1 = mov 1
  %y:v1 = mov 2
  %c:v1 = mov 3
  branch uniform %c, hot, cold
hot freq=10:
  %h:v1 = add %x, %x
  jump join
cold:
  jump join
join:
  jump head
head:
  %u:v1 = add %y, %y
  branch uniform %u, head, exit
exit:
  ret %y
}
";
        let r = reload_freq_of(src);
        let (x, y) = (Value(0), Value(1));
        assert_eq!(r.at_end(Block(0), x), 10.0, "read on the hot side only");
        assert_eq!(
            r.at_end(Block(0), y),
            1.0,
            "reloaded on the loop's entry edge"
        );
        assert_eq!(r.at_end(Block(3), y), 1.0);
        assert_eq!(r.at_end(Block(3), x), 0.0, "not live out");
    }

    #[test]
    fn a_latch_learns_the_frequency_its_header_finds_after_it() {
        let src = "target generic v=8
func @f {
entry:
  %v:v1 = mov 1
  %c:v1 = mov 2
  jump head
head:
  branch uniform %c, body, exit
body:
  %u:v1 = add %v, %v
  jump latch
latch:
  branch uniform %c, head, exit
exit:
  ret %c
}
";
        let r = reload_freq_of(src);
        let v = Value(0);
        let (head, latch) = (Block(1), Block(3));
        assert_eq!(r.at_end(head, v), 10.0, "read in the loop's body");
        assert_eq!(
            r.at_end(latch, v),
            10.0,
            "through the back edge, from the header visited after the latch"
        );
    }
}
