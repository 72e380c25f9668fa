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
pub fn hoist(
    (ops, readers): (&[&Op], &Readers),
    deps: &Deps,
    stay: &[bool],
    order: &mut Vec<u32>,
    live_end: &[Value],
    live: &mut Live<'_>,
) {
    live.reset(live_end);
    let mut sequence = Sequence::new(order);
    let mut units = Units::new(live.units.len());
    for _ in 0..PASSES {
        let mut moved = false;
        for &x in order.iter() {
            if stay[x as usize] {
                continue;
            }
            if let Some(after) = target((ops, readers, deps), &sequence, x, live, &mut units) {
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
    (ops, readers, deps): (&[&Op], &Readers, &Deps),
    sequence: &Sequence,
    x: u32,
    live_end: &Live<'_>,
    units: &mut Units,
) -> Option<Option<u32>> {
    let op = ops[x as usize];
    if !is_unconstrained(op) {
        return None;
    }
    let later = |a: u32, b: u32| if sequence.before(a, b) { b } else { a };
    let latest = |a: Option<u32>, b: Option<u32>| match (a, b) {
        (Some(a), Some(b)) => Some(later(a, b)),
        _ => a.or(b),
    };
    let Units { freed, defined } = units;
    freed.iter_mut().for_each(|f| *f = 0);
    defined.iter_mut().for_each(|d| *d = 0);
    let mut floor = deps.preds[x as usize].iter().copied().reduce(later);
    for (i, u) in op.uses().enumerate() {
        let v = u.value;
        if op.uses().take(i).any(|w| w.value == v) || live_end.contains(v) {
            continue;
        }
        let last_other = readers.of(v).filter(|&r| r != x).reduce(later);
        if last_other.is_some_and(|p| sequence.before(x, p)) {
            continue;
        }
        freed[live_end.class(v)] += live_end.size(v);
        floor = latest(floor, last_other);
    }
    for d in &op.defs {
        defined[live_end.class(d.value)] += live_end.size(d.value);
    }
    let never_raises = defined.iter().zip(freed.iter()).all(|(d, f)| d <= f);
    let moves = sequence.previous(x) != floor;
    (never_raises && freed.iter().any(|&f| f > 0) && moves).then_some(floor)
}

/// An order of operations as a doubly linked list whose labels compare as positions do:
/// moving an operation relinks it and labels it between its new neighbours, relabelling
/// the whole list only when they leave no gap (order maintenance after Dietz & Sleator,
/// "Two algorithms for maintaining order in a list", STOC 1987, in its simplest form).
struct Sequence {
    first: Option<u32>,
    next: Vec<Option<u32>>,
    previous: Vec<Option<u32>>,
    label: Vec<u64>,
}

/// The gap between neighbours' labels after (re)labelling: 32 moves between the same two
/// neighbours before the list is labelled again.
const SPACING: u64 = 1 << 32;

impl Sequence {
    fn new(order: &[u32]) -> Sequence {
        let n = order.len();
        let mut s = Sequence {
            first: order.first().copied(),
            next: vec![None; n],
            previous: vec![None; n],
            label: vec![0; n],
        };
        for pair in order.windows(2) {
            s.next[pair[0] as usize] = Some(pair[1]);
            s.previous[pair[1] as usize] = Some(pair[0]);
        }
        s.relabel();
        s
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.first, |&x| self.next[x as usize])
    }

    /// Labels every operation by its position, from `SPACING` up.
    fn relabel(&mut self) {
        let order: Vec<u32> = self.iter().collect();
        for (k, x) in order.into_iter().enumerate() {
            self.label[x as usize] = (k as u64 + 1) * SPACING;
        }
    }

    /// Whether `a` comes before `b`.
    fn before(&self, a: u32, b: u32) -> bool {
        self.label[a as usize] < self.label[b as usize]
    }

    fn previous(&self, x: u32) -> Option<u32> {
        self.previous[x as usize]
    }

    /// Moves `x` to just after `after` (to the front for `None`), which comes before it.
    fn move_after(&mut self, x: u32, after: Option<u32>) {
        self.unlink(x);
        let successor = match after {
            Some(p) => self.next[p as usize],
            None => self.first,
        };
        self.previous[x as usize] = after;
        self.next[x as usize] = successor;
        match after {
            Some(p) => self.next[p as usize] = Some(x),
            None => self.first = Some(x),
        }
        if let Some(s) = successor {
            self.previous[s as usize] = Some(x);
        }
        let low = after.map_or(0, |p| self.label[p as usize]);
        let high = successor.map_or(u64::MAX, |s| self.label[s as usize]);
        if high - low < 2 {
            self.relabel();
        } else {
            self.label[x as usize] = low + (high - low) / 2;
        }
    }

    fn unlink(&mut self, x: u32) {
        let (p, n) = (self.previous[x as usize], self.next[x as usize]);
        match p {
            Some(p) => self.next[p as usize] = n,
            None => self.first = n,
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

/// Per value, the operations of the block that read it.
#[derive(Debug)]
pub struct Readers {
    /// `(value, operation)` pairs, sorted.
    pairs: Vec<(Value, u32)>,
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
        Readers { pairs }
    }

    fn of(&self, v: Value) -> impl Iterator<Item = u32> + '_ {
        let start = self.pairs.partition_point(|&(w, _)| w < v);
        self.pairs[start..]
            .iter()
            .take_while(move |&&(w, _)| w == v)
            .map(|&(_, k)| k)
    }
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
