//! Live-range shrinking after list scheduling: an operation moves up to where the operands
//! it is the last reader of are otherwise last read.
//!
//! Bottom-up list scheduling decides greedily when to open an operand's range. When two
//! operations read the same values — `e·s` kept for later and `fma(e, s, acc)` summed now,
//! as in the softmax kernels — the one placed first from the bottom opens the operands, and
//! if that is the operation whose result is wanted far below, both operands are held
//! across the whole distance where its one result would have been. This pass repairs it:
//! an operation `x` at position `p` whose operands *die* at it (no later reader, not live
//! after the block) moves up to just after the last other reader of those operands and
//! after its dependence predecessors, at `q`. Between `q` and `p` the dying operands are
//! no longer live and `x`'s definitions are, nothing else changes; so where, in every
//! class, the definitions take no more units than the dying operands free, the demand at
//! every point of the block is the same or lower, and the move is made. A move that
//! leaves the demand as it was (a sum `acc' = fma(e, s, acc)` freeing `acc`) is made too:
//! it brings the last other reader of `e` and `s` up, so that the product after it can
//! follow and free them. Operations only move up, so the passes end; their number is
//! bounded all the same.
//!
//! This is the idea of GCC's live-range shrinkage (`-flive-range-shrinkage`, V. Makarov's
//! register-pressure-sensitive scheduling, GCC 4.8), applied as a post-pass to an order.
//! Operations with constrained definitions or operands (tied, early-clobber, pinned,
//! fixed), whose demand follows other rules, stay where they are, and so do the copies
//! [`super::remat`] placed next to their uses: moving one up to where its operands die
//! would undo the recomputation, which is kept only for what it lowers after the rounds
//! that follow it.

use super::deps::Deps;
use super::peak::Live;
use crate::program::{Op, Value};
use std::ops::Range;

/// Passes over the order at most; a pass moves every operation that can move, and a later
/// pass finds only what an earlier move made possible.
const PASSES: usize = 4;

/// Moves the operations of `order` (indices into `ops`, respecting `deps`; `readers` of
/// the same `ops`) up to where the operands they free die, wherever that raises the demand
/// nowhere; operations marked in `stay` keep their place.
///
/// A pass visits the operations in the order the pass started with (an operation moves
/// only above the one visited, so what is still to visit keeps its place). The order is
/// a [`Sequence`], so a move costs the same however far the operation goes.
///
/// Whether an operand dies at an operation is whether the operation is its last reader,
/// which no move changes for a value not live after the block: an operation moves only
/// above readers of values that do not die at it (they keep a reader below it) and stays
/// below every other reader of those that do. So the last reader of each value is found
/// once, and an operation's operands are looked through only where it is theirs.
pub fn hoist(
    (ops, readers): (&[&Op], &Readers),
    deps: &Deps,
    stay: &[bool],
    order: &mut Vec<u32>,
    live_end: &[Value],
    live: &mut Live,
) {
    live.reset(live_end);
    let last = readers.last_readers(order);
    let mut sequence = Sequence::new(order);
    let mut units = Units::new(live.units.len());
    for _ in 0..PASSES {
        let mut moved = false;
        for &x in order.iter() {
            if stay[x as usize] {
                continue;
            }
            let facts = (ops, readers, &last[..], deps);
            if let Some(after) = target(facts, &sequence, x, live, &mut units) {
                sequence.move_after(x, after);
                moved = true;
            }
        }
        if !moved {
            break;
        }
        sequence.write_into(order);
    }
}

/// Units per class that an operation's move frees and defines: one buffer for every
/// operation.
struct Units {
    freed: Vec<u32>,
    defined: Vec<u32>,
}

impl Units {
    fn new(classes: usize) -> Units {
        Units {
            freed: vec![0; classes],
            defined: vec![0; classes],
        }
    }
}

/// Where operation `x` should move to, when it frees operands and moving it up raises the
/// demand nowhere: just after its predecessors and the last other readers of the operands
/// that die at it (`Some(None)`: to the front).
fn target(
    (ops, readers, last, deps): (&[&Op], &Readers, &[u32], &Deps),
    sequence: &Sequence,
    x: u32,
    live_end: &Live,
    units: &mut Units,
) -> Option<Option<u32>> {
    if !readers.movable[x as usize] {
        return None;
    }
    let op = ops[x as usize];
    let later = |a: u32, b: u32| if sequence.before(a, b) { b } else { a };
    let latest = |a: Option<u32>, b: Option<u32>| match (a, b) {
        (Some(a), Some(b)) => Some(later(a, b)),
        _ => a.or(b),
    };
    let Units { freed, defined } = units;
    freed.fill(0);
    let mut floor = None;
    for (v, others) in readers.operands(x) {
        let v = *v;
        if live_end.contains(v) || last[others.start] != x {
            continue;
        }
        let last_other = latest_other_reader(&readers.pairs[others.clone()], sequence, x);
        freed[live_end.class(v)] += live_end.size(v);
        floor = latest(floor, last_other);
    }
    if freed.iter().all(|&f| f == 0) {
        return None;
    }
    defined.fill(0);
    for d in &op.defs {
        defined[live_end.class(d.value)] += live_end.size(d.value);
    }
    if defined.iter().zip(freed.iter()).any(|(d, f)| d > f) {
        return None;
    }
    let preds = deps.preds[x as usize].iter().copied();
    let floor = preds.map(Some).fold(floor, latest);
    (sequence.previous(x) != floor).then_some(floor)
}

/// The latest reader other than `x` among `readers` (`(value, operation)` pairs of one
/// value), `None` when there is none.
fn latest_other_reader(readers: &[(Value, u32)], sequence: &Sequence, x: u32) -> Option<u32> {
    readers
        .iter()
        .map(|&(_, r)| r)
        .filter(|&r| r != x)
        .reduce(|l, r| if sequence.before(l, r) { r } else { l })
}

/// An order of operations as a doubly linked list, behind a head of its own, whose labels
/// compare as positions do: moving an operation relinks it and labels it between its new
/// neighbours. When they leave no gap, the smallest aligned range of labels around them
/// that is sparse enough is labelled again evenly (Bender, Cole, Demaine, Farach-Colton
/// and Zito, "Two simplified algorithms for maintaining order in a list", ESA 2002):
/// amortised, a logarithmic number of labels change per move, wherever moves pile up.
struct Sequence {
    head: u32,
    next: Vec<Option<u32>>,
    previous: Vec<Option<u32>>,
    label: Vec<u64>,
}

/// Labels lie below `2^LABEL_BITS`.
const LABEL_BITS: u32 = 62;

/// A range of `2^i` labels is sparse enough to spread its members evenly when it holds
/// fewer than `DENSITY^i` of them (`(2/T)^i` in the paper, with `T = 1.5`).
const DENSITY: f64 = 4.0 / 3.0;

impl Sequence {
    fn new(order: &[u32]) -> Sequence {
        let head = order.len() as u32;
        let n = order.len() + 1;
        let mut s = Sequence {
            head,
            next: vec![None; n],
            previous: vec![None; n],
            label: vec![0; n],
        };
        let linked: Vec<u32> = std::iter::once(head).chain(order.iter().copied()).collect();
        for pair in linked.windows(2) {
            s.next[pair[0] as usize] = Some(pair[1]);
            s.previous[pair[1] as usize] = Some(pair[0]);
        }
        let spacing = (1u64 << LABEL_BITS) / n as u64;
        for (k, &x) in linked.iter().enumerate() {
            s.label[x as usize] = k as u64 * spacing;
        }
        s
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.next[self.head as usize], |&x| self.next[x as usize])
    }

    /// Whether `a` comes before `b`.
    fn before(&self, a: u32, b: u32) -> bool {
        self.label[a as usize] < self.label[b as usize]
    }

    /// The operation just before `x` (`None` at the front).
    fn previous(&self, x: u32) -> Option<u32> {
        self.previous[x as usize].filter(|&p| p != self.head)
    }

    /// Moves `x` to just after `after` (to the front for `None`), which comes before it.
    fn move_after(&mut self, x: u32, after: Option<u32>) {
        self.unlink(x);
        let after = after.unwrap_or(self.head);
        let successor = self.next[after as usize];
        self.previous[x as usize] = Some(after);
        self.next[x as usize] = successor;
        self.next[after as usize] = Some(x);
        if let Some(s) = successor {
            self.previous[s as usize] = Some(x);
        }
        let low = self.label[after as usize];
        let high = successor.map_or(1 << LABEL_BITS, |s| self.label[s as usize]);
        if high - low >= 2 {
            self.label[x as usize] = low + (high - low) / 2;
        } else {
            self.spread_around(x, low);
        }
    }

    /// Labels `x`, linked where its neighbours leave no gap (the one before it labelled
    /// `anchor`): the smallest aligned range of labels around `anchor` that holds few
    /// enough operations, `x` counted, is labelled again evenly (the whole range of labels
    /// at the latest, which holds every operation).
    fn spread_around(&mut self, x: u32, anchor: u64) {
        let (mut left, mut right, mut count) = (x, x, 1u64);
        let mut allowed = 1.0;
        for bits in 1..=LABEL_BITS {
            allowed *= DENSITY;
            let width = 1u64 << bits;
            let low = anchor & !(width - 1);
            let within = |l: u64| l >= low && l - low < width;
            while let Some(p) =
                self.previous[left as usize].filter(|&p| within(self.label[p as usize]))
            {
                left = p;
                count += 1;
            }
            while let Some(n) =
                self.next[right as usize].filter(|&n| within(self.label[n as usize]))
            {
                right = n;
                count += 1;
            }
            if bits == LABEL_BITS || (count as f64) < allowed {
                let gap = width / count;
                let mut at = Some(left);
                for k in 0..count {
                    let Some(e) = at else { break };
                    self.label[e as usize] = low + k * gap;
                    at = self.next[e as usize];
                }
                return;
            }
        }
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.previous[x as usize], self.next[x as usize]);
        if let Some(p) = p {
            self.next[p as usize] = n;
        }
        if let Some(n) = n {
            self.previous[n as usize] = p;
        }
    }

    fn write_into(&self, order: &mut Vec<u32>) {
        order.clear();
        order.extend(self.iter());
    }
}

/// Whether the demand at `op` follows the plain rule (no tied, early-clobber, pinned or
/// fixed definition, no fixed operand), so moving it changes only what is live.
fn is_unconstrained(op: &Op) -> bool {
    op.defs
        .iter()
        .all(|d| d.tied.is_none() && !d.early_clobber && !d.pinned && d.fixed.is_none())
        && op.uses().all(|u| u.fixed.is_none())
}

/// Per value, the operations of the block that read it; per operation, its distinct
/// operands with where their readers are, and whether it may move at all
/// ([`is_unconstrained`]), found once instead of at every visit.
#[derive(Debug)]
pub struct Readers {
    /// `(value, operation)` pairs, sorted.
    pairs: Vec<(Value, u32)>,
    /// Per operation, whether its demand follows the plain rule.
    movable: Vec<bool>,
    /// Per operation (from `starts[k]` to `starts[k + 1]`): each distinct operand and the
    /// range of `pairs` holding its readers.
    operands: Vec<(Value, Range<usize>)>,
    starts: Vec<usize>,
}

impl Readers {
    pub fn of_ops(ops: &[&Op]) -> Readers {
        let mut pairs: Vec<(Value, u32)> = ops
            .iter()
            .enumerate()
            .flat_map(|(k, op)| op.uses().map(move |u| (u.value, k as u32)))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut operands = Vec::new();
        let mut starts = Vec::with_capacity(ops.len() + 1);
        for op in ops {
            starts.push(operands.len());
            for (i, u) in op.uses().enumerate() {
                if !op.uses().take(i).any(|w| w.value == u.value) {
                    operands.push((u.value, readers_range(&pairs, u.value)));
                }
            }
        }
        starts.push(operands.len());
        Readers {
            pairs,
            movable: ops.iter().map(|op| is_unconstrained(op)).collect(),
            operands,
            starts,
        }
    }

    fn operands(&self, k: u32) -> &[(Value, Range<usize>)] {
        &self.operands[self.starts[k as usize]..self.starts[k as usize + 1]]
    }

    /// Per value, at the start of its readers' range in `pairs`, its last reader in
    /// `order`.
    fn last_readers(&self, order: &[u32]) -> Vec<u32> {
        let mut last = vec![0; self.pairs.len()];
        for &k in order {
            for (_, readers) in self.operands(k) {
                last[readers.start] = k;
            }
        }
        last
    }
}

/// Where the readers of `v` lie among the sorted `pairs`.
fn readers_range(pairs: &[(Value, u32)], v: Value) -> Range<usize> {
    let start = pairs.partition_point(|&(w, _)| w < v);
    start..start + pairs[start..].partition_point(|&(w, _)| w == v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Program;

    fn program(body: &str) -> Program {
        let text = format!("target sm_80\nfunc @f {{\nentry:\n{body}  ret\n}}\n");
        crate::parse(&text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Hoists the emitted order of the entry block, returning the order and the peaks
    /// before and after.
    fn hoisted(p: &Program) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let f = &p.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        let deps = Deps::of_ops(&ops);
        let mut live = Live::new(f, &p.target);
        let emitted: Vec<u32> = (0..ops.len() as u32).collect();
        let before = super::super::peak::peak(&ops, &emitted, &[], &mut live);
        let mut order = emitted;
        hoist(
            (&ops, &Readers::of_ops(&ops)),
            &deps,
            &vec![false; ops.len()],
            &mut order,
            &[],
            &mut live,
        );
        let after = super::super::peak::peak(&ops, &order, &[], &mut live);
        (order, before, after)
    }

    /// Moves piled up at one place — the front, and just after one operation — use up
    /// the gaps between labels many times over; the order stays the one a vector gives
    /// and the labels stay increasing along it.
    #[test]
    fn crowded_moves_keep_the_order_and_its_labels() {
        let n = 300u32;
        let start: Vec<u32> = (0..n).collect();
        let mut sequence = Sequence::new(&start);
        let mut model = start;
        for x in (n / 2..n).rev() {
            let after = if x % 2 == 0 { None } else { Some(7) };
            sequence.move_after(x, after);
            model.retain(|&y| y != x);
            let at = after.map_or(0, |a| model.iter().position(|&y| y == a).unwrap_or(0) + 1);
            model.insert(at, x);
            let order: Vec<u32> = sequence.iter().collect();
            assert_eq!(order, model);
            assert!(order.windows(2).all(|w| sequence.before(w[0], w[1])));
        }
        assert_eq!(sequence.previous(model[0]), None);
        assert_eq!(sequence.previous(model[1]), Some(model[0]));
    }

    /// The softmax shape: `e` and `s` summed by an `fma` before a barrier and multiplied
    /// after it, where more values are live; the product, one value, crosses the barrier
    /// instead of its two operands.
    #[test]
    fn an_operation_moves_up_to_where_its_operands_die() {
        let p = program(
            "  %k:r1 = mov 7\n  %a:r1 = mov 1\n  %b:r1 = mov 2\n  %e:r1 = add %a, %b\n  %s:r1 = sub %a, %b\n  %f:r1 = fma %e, %s, %a\n  bar barrier\n  %x:r1 = add %k, 1\n  %y:r1 = add %k, 2\n  %z:r1 = add %k, %k\n  %m:r1 = mul %e, %s\n  st %f, %m, %x, %y, %z writes\n",
        );
        let (order, before, after) = hoisted(&p);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 10, 6, 7, 8, 9, 11]);
        assert_eq!((before[0], after[0]), (6, 5));
    }

    /// The sum moves up across the barrier without lowering anything (it frees `c`, one
    /// unit, and defines one); then it is no longer the last reader of `e` and `s`, the
    /// product is, and the product follows it up.
    #[test]
    fn a_move_that_lowers_nothing_lets_the_next_one_lower_the_peak() {
        let p = program(
            "  %k:r1 = mov 7\n  %a:r1 = mov 1\n  %b:r1 = mov 2\n  %e:r1 = add %a, %b\n  %s:r1 = sub %a, %b\n  %c:r1 = mov 3\n  bar barrier\n  %f:r1 = fma %e, %s, %c\n  st %f writes\n  %x:r1 = add %k, 1\n  %y:r1 = add %k, 2\n  %z:r1 = add %k, %k\n  %m:r1 = mul %e, %s\n  st %m, %x, %y, %z writes\n",
        );
        let (order, before, after) = hoisted(&p);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 7, 12, 6, 8, 9, 10, 11, 13]);
        assert_eq!((before[0], after[0]), (5, 4));
    }

    /// An operation whose operands live on, or whose result is wider than what it frees,
    /// stays where it is.
    #[test]
    fn nothing_moves_that_would_not_lower_the_demand() {
        let p = program(
            "  %a:r1 = mov 1\n  %b:r1 = mov 2\n  %f:r1 = add %a, %b\n  bar barrier\n  %m:r1 = mul %b, %b\n  %w:r2 = mov.b64 %a\n  st %f, %m, %w, %b writes\n",
        );
        let (order, before, after) = hoisted(&p);
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(before, after);
    }
}
