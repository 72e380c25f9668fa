//! Block summaries: a block's transfer as a function of its in-state, so that the
//! fixpoint iteration revisits a block at the cost of the keys it writes rather than of
//! its instructions.
//!
//! The transfer (`dataflow.rs`) writes labels, copies what a key holds into another, and
//! moves what a key holds into a destination that may not receive some values (which then
//! holds nothing known). So after a block each key holds either a label, or what some key
//! held at its entry with the union of the bans of the moves it went through — the
//! composition of transfer functions in the manner of Sharir & Pnueli's functional
//! approach to interprocedural analysis (1981), here within one block. The summary is found
//! by running the very same transfer on symbolic cells, each key starting as itself; it
//! keeps the keys that end as anything else. Applying it to an in-state gives exactly
//! what running the block on that state gives.

use crate::dataflow::{Bans, Cell, Flow, Label};

/// A symbolic cell: a label, or what key `key` held at the block's entry, moved into
/// destinations with `bans`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Symbol {
    Known(Label),
    Entry { key: u32, bans: Bans },
}

impl Cell for Symbol {
    fn known(label: Label) -> Symbol {
        Symbol::Known(label)
    }

    fn moved(self, flow: &Flow<'_>, bans: Bans) -> Symbol {
        match self {
            Symbol::Known(label) => Symbol::Known(label.moved(flow, bans)),
            Symbol::Entry { key, bans: before } => Symbol::Entry {
                key,
                bans: before.union(bans),
            },
        }
    }
}

impl Symbol {
    /// The cell of `key` at the block's entry.
    fn entry(key: usize) -> Symbol {
        Symbol::Entry {
            key: key as u32,
            bans: Bans::default(),
        }
    }

    /// What this cell holds when the block's entry holds `entry`.
    fn resolve(self, flow: &Flow<'_>, entry: &[Label]) -> Label {
        match self {
            Symbol::Known(label) => label,
            Symbol::Entry { key, bans } => entry[key as usize].moved(flow, bans),
        }
    }
}

/// One block's transfer: what each key holds after it, and per key of its in-state the
/// keys of its out-state that copy it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Summary {
    cells: Vec<Symbol>,
    /// The out keys copying in key `k` are `readers[first_reader[k]..first_reader[k + 1]]`.
    first_reader: Vec<usize>,
    readers: Vec<usize>,
}

impl Summary {
    /// Block `b`'s summary, from its transfer run on symbolic cells.
    pub fn of(flow: &Flow<'_>, b: usize) -> Summary {
        let mut cells: Vec<Symbol> = (0..flow.keys()).map(Symbol::entry).collect();
        flow.transfer(b, &mut cells);
        let read = |cell: &Symbol| match *cell {
            Symbol::Entry { key, .. } => Some(key as usize),
            Symbol::Known(_) => None,
        };
        let mut first_reader = vec![0; cells.len() + 1];
        for k in cells.iter().filter_map(read) {
            first_reader[k + 1] += 1;
        }
        for k in 0..cells.len() {
            first_reader[k + 1] += first_reader[k];
        }
        let mut next = first_reader.clone();
        let mut readers = vec![0; first_reader[cells.len()]];
        for (j, k) in cells
            .iter()
            .enumerate()
            .filter_map(|(j, c)| Some((j, read(c)?)))
        {
            readers[next[k]] = j;
            next[k] += 1;
        }
        Summary {
            cells,
            first_reader,
            readers,
        }
    }

    /// What out key `j` holds when the block's entry holds `entry`.
    pub fn resolve(&self, j: usize, flow: &Flow<'_>, entry: &[Label]) -> Label {
        self.cells[j].resolve(flow, entry)
    }

    /// The out keys that copy in key `k`.
    pub fn readers(&self, k: usize) -> &[usize] {
        &self.readers[self.first_reader[k]..self.first_reader[k + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::{Summary, Symbol};
    use crate::check::{originals_by_name, with_flow};
    use crate::dataflow::{Bans, Label};
    use crate::sink::Sink;

    const TARGET: &str = "target generic s=8 v=8\nfunc @f {\n";

    /// A divergent branch in a loop, uniform and per-lane values.
    const ORIGINAL: &str = "entry:
  %k:s1 = s_const 5 remat
  %t:v1 = tid
  %u:s1 = s_mov 1
  %x:v2 = load.v2 %t reads
  jump head
head:
  %i:s1 = phi [entry: %u], [latch: %i2]
  %a:v1 = phi [entry: %t], [latch: %b]
  %i2:s1 = s_add %i, %k
  %c:v1 = v_cmp %a, %i2
  branch divergent %c, then, latch
then:
  %b0:v1 = mul %a, %a
  jump latch
latch:
  %b:v1 = phi [head: %a], [then: %b0]
  %d:s1 = s_cmp %i2
  branch uniform %d, head, exit
exit:
  %r:v1 = v_add %b, %i2
  ret %r
}
";

    /// An allocation with every kind of write, right and wrong: tuples, a whole-wave store
    /// and a lane write under divergence, moves across uniformity both ways, a swap, a
    /// remat, reloads from a slot and a lane.
    const ALLOCATED: &str = "entry:
  %k:s1@s0 = s_const 5 remat
  %t:v1@v0 = tid
  %u:s1@s1 = s_mov 1
  %x:v2@v[2:3] = load.v2 %t@v0 reads
  spill m[0:1] <- v[2:3] %x
  jump head
head:
  %i:s1@s1 = phi [entry: %u], [latch: %i2]
  %a:v1@v0 = phi [entry: %t], [latch: %b]
  %i2:s1@s2 = s_add %i@s1, %k@s0
  spill m2 <- s2 %i2
  spill v4.l0 <- s2 %i2
  parallel_copy v5 <- s2 %i2, s3 <- v0 %a
  %c:v1@v1 = v_cmp %a@v0, %i2@s2
  branch divergent %c@v1, then, latch
then:
  %b0:v1@v6 = mul %a@v0, %a@v0
  swap v6, v0
  remat s0 <- %k
  parallel_copy v1 <- v6 %b0, s7 <- v5 %i2
  jump latch
latch:
  %b:v1@v1 = phi [head: %a], [then: %b0]
  reload s4 <- m2 %i2
  reload s5 <- v4.l0 %i2
  %d:s1@s6 = s_cmp %i2@s4
  parallel_copy s1 <- s2 %i2, m3 <- v5 %i2
  branch uniform %d@s6, head, exit
exit:
  reload v[2:3] <- m[0:1] %x
  %r:v1@v7 = v_add %b@v1, %i2@s5
  ret %r@v7
}
";

    /// On every block and many in-states (each key a different label: values, their
    /// parts, and every special label), the summary gives what the transfer gives.
    #[test]
    fn a_summary_gives_what_the_transfer_gives() {
        let original = chromatic::parse(&format!("{TARGET}{ORIGINAL}")).expect("parses");
        let allocated = chromatic::parse(&format!("{TARGET}{ALLOCATED}")).expect("parses");
        let (o, a) = (&original.functions[0], &allocated.functions[0]);
        let mut sink = Sink::new(&a.name, &original.target);
        let by_name = originals_by_name(o, a);
        with_flow(o, a, &original.target, &by_name, &mut sink, |flow, _| {
            let values =
                (0..o.values.len() as u32).flat_map(|v| [Label::of(v, 0), Label::of(v, 1)]);
            let pool: Vec<Label> = values.chain(Label::SPECIAL).collect();
            let mut banned_copies = 0;
            for b in 0..a.blocks.len() {
                let summary = Summary::of(flow, b);
                let banned = |&(_, cell): &(usize, &Symbol)| matches!(cell, Symbol::Entry { bans, .. } if *bans != Bans::default());
                let cells = summary.cells.iter().enumerate();
                banned_copies += cells.filter(banned).count();
                for shift in 0..pool.len() {
                    let entry: Vec<Label> = (0..flow.keys())
                        .map(|k| pool[(7 * k + shift) % pool.len()])
                        .collect();
                    let mut ran = entry.clone();
                    flow.transfer(b, &mut ran);
                    let resolved: Vec<Label> = (0..flow.keys())
                        .map(|j| summary.resolve(j, flow, &entry))
                        .collect();
                    assert_eq!(resolved, ran, "block {b}, shift {shift}");
                }
            }
            assert!(
                banned_copies > 0,
                "no move across uniformity was summarised"
            );
        });
    }
}
