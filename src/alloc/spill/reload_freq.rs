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
//! in compressed rows ([`Rows`]) reserved at once, not one vector per block. A maximum or
//! minimum of block frequencies is one of them, so an entry names the block whose
//! frequency it is (8 bytes an entry with its value, not 16 with a frequency: the table
//! is as large as the function's live-out sets, and a large function's misses the cache
//! on every byte of it), and it is found
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
pub struct ReloadFreq<'a> {
    /// Per block: (value, the block whose frequency it is, or [`NOWHERE`]) sorted by
    /// value.
    out: Rows<(Value, Block)>,
    /// The block frequencies.
    freq: &'a [f64],
}

/// Stands for frequency 0: the value is not read again.
const NOWHERE: Block = Block(u32::MAX);

impl<'a> ReloadFreq<'a> {
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
        freq: &'a [f64],
    ) -> ReloadFreq<'a> {
        let mut out = Rows::with_capacity(f.blocks.len(), live_out_entries(f, liveness));
        for b in f.block_ids() {
            let live_out = liveness.live_out(b).iter().copied();
            let of_class = live_out.filter(|&v| f.value(v).class == class);
            out.push_row(of_class.map(|v| (v, NOWHERE)));
        }
        let entering = loop_entries(f, graph, loops);
        let mut queued = vec![true; f.blocks.len()];
        let mut work: VecDeque<Block> = order.iter().rev().copied().collect();
        while let Some(b) = work.pop_front() {
            queued[b.index()] = false;
            let mut changed = false;
            for k in 0..out.row(b).len() {
                let (v, known) = out.row(b)[k];
                let mut highest = NOWHERE;
                for (&s, &enters) in graph.succs(b).iter().zip(entering.row(b)) {
                    if liveness.live_in(s).binary_search(&v).is_err() {
                        continue;
                    }
                    let there = if uses.reads(s, v) {
                        s
                    } else {
                        lookup(out.row(s), v)
                    };
                    let there = if enters && frequency(freq, b) < frequency(freq, there) {
                        b
                    } else {
                        there
                    };
                    if frequency(freq, there) > frequency(freq, highest) {
                        highest = there;
                    }
                }
                if frequency(freq, highest) > frequency(freq, known) {
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
        ReloadFreq { out, freq }
    }

    /// The frequency at which `v`, evicted at the end of `b`, would be reloaded (0 when
    /// it is not live out).
    pub fn at_end(&self, b: Block, v: Value) -> f64 {
        frequency(self.freq, lookup(self.out.row(b), v))
    }
}

/// The block whose frequency `v`'s reload runs at, in a row of the table.
fn lookup(out: &[(Value, Block)], v: Value) -> Block {
    out.binary_search_by_key(&v, |&(w, _)| w)
        .map_or(NOWHERE, |i| out[i].1)
}

/// The frequency of `b`; 0 for [`NOWHERE`].
fn frequency(freq: &[f64], b: Block) -> f64 {
    freq.get(b.index()).copied().unwrap_or(0.0)
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
    use crate::alloc::spill::fixture::Fixture;

    /// The reload frequencies at the ends of `blocks` of `values` of the first class of the
    /// first function of `src`.
    fn reload_freq_of(src: &str, blocks: &[u32], values: &[u32]) -> Vec<Vec<f64>> {
        let fx = Fixture::new(src);
        let a = &fx.analysis;
        let graphs = (&*a.cfg, &*a.loops);
        let (f, order) = (fx.f(), &fx.order);
        let r = ReloadFreq::new(f, fx.class, &fx.uses, graphs, order, &a.liveness, &a.freq);
        let at_ends = |b: Block| values.iter().map(|&v| r.at_end(b, Value(v))).collect();
        blocks.iter().map(|&b| at_ends(Block(b))).collect()
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
        let (x, y) = (0, 1);
        let r = reload_freq_of(src, &[0, 3], &[x, y]);
        let (entry, join) = (&r[0], &r[1]);
        assert_eq!(entry[x as usize], 10.0, "read on the hot side only");
        assert_eq!(entry[y as usize], 1.0, "reloaded on the loop's entry edge");
        assert_eq!(join[y as usize], 1.0);
        assert_eq!(join[x as usize], 0.0, "not live out");
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
        let (head, latch) = (1, 3);
        let r = reload_freq_of(src, &[head, latch], &[0]);
        assert_eq!(r[0], [10.0], "read in the loop's body");
        assert_eq!(
            r[1],
            [10.0],
            "through the back edge, from the header visited after the latch"
        );
    }
}
