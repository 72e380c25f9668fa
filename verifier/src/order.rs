//! Which orders of a block's original operations the verifier accepts: any order that
//! keeps every dependence, computed here from the original block alone (a scheduler's
//! dependence graph is not trusted).
//!
//! The dependences are those of `docs/FORMAT.md` ("Order"), checked as four invariants of
//! the allocated order, each linear in the block:
//!
//! 1. *values*: an operation comes after the operation of the block that defines each
//!    value it reads;
//! 2. *ordered ops* (`writes`, `barrier`, `control`) keep their relative order: each has as
//!    many ordered ops before it as in the original;
//! 3. *reads* (`reads`) stay between the same two ordered ops: each has as many ordered
//!    ops before it as in the original, and moves freely among reads;
//! 4. *carry* ops keep their relative order;
//! 5. *fixed registers* (an op's `implicit`, `implicit_def`, `clobber` accesses), per
//!    register: a read has as many writes before it as in the original; a clobber as many
//!    writes and reads; a write as many writes, reads and clobbers.
//!
//! a `remat` op, whatever its effect, follows only its values (it has none) and rule 5.
//!
//! Together these are exactly "no dependence edge reversed": a read and an ordered op
//! conflict, two ordered ops conflict, two reads do not, and a carry op conflicts only
//! with carry ops; of one register's accesses, a write conflicts with every other, a
//! clobber with reads, and two reads or two clobbers do not.

use crate::error::{ErrorKind, Point};
use crate::sink::Sink;
use chromatic::{BlockData, Effect, Op, RegAccessKind, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Checks that `matched` (per original op of `ob`, its index in `ab`) keeps the
/// dependences of `ob`. One error, at the first operation out of order.
pub(crate) fn check_order(
    ob: &BlockData,
    matched: &[Option<usize>],
    ab: &BlockData,
    sink: &mut Sink,
) {
    let ops: Block<&Op> = ob.insts.iter().filter_map(|i| i.op()).collect();
    let mut placed: Block<(usize, usize)> = matched
        .iter()
        .enumerate()
        .filter_map(|(k, m)| m.map(|i| (i, k)))
        .collect();
    placed.sort_unstable();
    let reordered = placed.windows(2).any(|w| w[0].1 > w[1].1);
    let rules_2_to_5 = reordered.then(|| Ranks::new(&ops, matched, &placed));
    let defined_in_block = definitions(&ops);
    let mut done: Block<bool> = smallvec::smallvec![false; ops.len()];
    for &(i, k) in &placed {
        let reads_later = ops[k]
            .uses()
            .filter_map(|u| defined_by(&defined_in_block, u.value))
            .find(|&p| !done[p] && matched[p].is_some());
        let ranks = rules_2_to_5.as_ref();
        let moved = ranks.is_some_and(|r| r.original[k] != r.allocated[k]);
        if let Some(p) = reads_later {
            report(
                sink,
                ab,
                i,
                format!("after `{}`, whose value it reads", ops[p].opcode),
            );
            return;
        }
        if moved {
            report(sink, ab, i, order_rule(ops[k].effect).to_string());
            return;
        }
        let reg_moved = ranks.and_then(|r| {
            ops[k]
                .regs
                .iter()
                .zip(r.original_regs[k].iter().zip(&r.allocated_regs[k]))
                .find(|(_, (o, a))| o != a)
        });
        if let Some((access, _)) = reg_moved {
            let rule = format!(
                "in its original place among the accesses to fixed register `{}`",
                access.reg
            );
            report(sink, ab, i, rule);
            return;
        }
        done[k] = true;
    }
}

/// What the checks keep per operation of a block: inline for a block of up to 32
/// operations, so that most blocks allocate nothing.
pub(crate) type Block<T> = SmallVec<[T; 32]>;

/// The values the block's operations define, with the index in `ops` of the operation
/// defining each, sorted by value (a block is short: one sorted vector, no hashing).
fn definitions(ops: &[&Op]) -> Block<(Value, usize)> {
    let mut defs: Block<(Value, usize)> = ops
        .iter()
        .enumerate()
        .flat_map(|(k, op)| op.defs.iter().map(move |d| (d.value, k)))
        .collect();
    defs.sort_unstable();
    defs
}

/// The operation of `defs` (from [`definitions`]) that defines `v`, if one does.
fn defined_by(defs: &[(Value, usize)], v: Value) -> Option<usize> {
    let i = defs.binary_search_by_key(&v, |&(d, _)| d).ok()?;
    Some(defs[i].1)
}

/// What rules 2 to 5 compare, per original op: its ranks in the original order and in
/// the allocated one. Needed only when the allocated block reorders the original's ops:
/// in the original order every rank is equal by definition.
struct Ranks {
    original: Vec<usize>,
    allocated: Vec<usize>,
    original_regs: Vec<Vec<[usize; 3]>>,
    allocated_regs: Vec<Vec<[usize; 3]>>,
}

impl Ranks {
    fn new(ops: &[&Op], matched: &[Option<usize>], placed: &[(usize, usize)]) -> Self {
        let original_order = || (0..ops.len()).filter(|&k| matched[k].is_some());
        let allocated_order = || placed.iter().map(|&(_, k)| k);
        Ranks {
            original: ranks(ops, original_order()),
            allocated: ranks(ops, allocated_order()),
            original_regs: reg_ranks(ops, original_order()),
            allocated_regs: reg_ranks(ops, allocated_order()),
        }
    }
}

fn report(sink: &mut Sink, ab: &BlockData, i: usize, expected: String) {
    sink.report(
        ErrorKind::OpOrder,
        &ab.name,
        Point::Inst(i),
        ab.insts[i].pos,
    )
    .expected(expected);
}

fn order_rule(effect: Effect) -> &'static str {
    match effect {
        Effect::ReadsMemory => {
            "between the same writes, barriers and control ops as in the original"
        }
        Effect::Carry => "in its original order among the carry ops",
        _ => "in its original order among the writes, barriers and control ops",
    }
}

/// A `remat` op has no value operands and computes the same value wherever it runs: its
/// effect orders nothing (`docs/FORMAT.md`, "Order").
pub(crate) fn effect_that_orders(op: &Op) -> Effect {
    if op.remat {
        Effect::None
    } else {
        op.effect
    }
}

/// Per original op (indexed as in `ops`), visited in `order`: for reads and ordered ops,
/// the ordered ops before it; for carry ops, the carry ops before it; 0 for the rest.
fn ranks(ops: &[&Op], order: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut rank = vec![0; ops.len()];
    let (mut ordered, mut carries) = (0, 0);
    for k in order {
        match effect_that_orders(ops[k]) {
            Effect::None => {}
            Effect::ReadsMemory => rank[k] = ordered,
            Effect::WritesMemory | Effect::Barrier | Effect::Control => {
                rank[k] = ordered;
                ordered += 1;
            }
            Effect::Carry => {
                rank[k] = carries;
                carries += 1;
            }
        }
    }
    rank
}

/// Per original op (indexed as in `ops`), visited in `order`: per fixed-register access
/// (as in `op.regs`), the accesses to that register before it that order it — writes
/// before a read; writes and reads before a clobber; writes, reads and clobbers before a
/// write (unused counts 0).
fn reg_ranks(ops: &[&Op], order: impl Iterator<Item = usize>) -> Vec<Vec<[usize; 3]>> {
    let mut rank = vec![Vec::new(); ops.len()];
    let mut seen: FxHashMap<&str, [usize; 3]> = FxHashMap::default();
    for k in order {
        rank[k] = ops[k]
            .regs
            .iter()
            .map(|a| {
                let [writes, reads, clobbers] =
                    seen.get(a.reg.as_str()).copied().unwrap_or_default();
                match a.kind {
                    RegAccessKind::Read => [writes, 0, 0],
                    RegAccessKind::Clobber => [writes, reads, 0],
                    RegAccessKind::Write => [writes, reads, clobbers],
                }
            })
            .collect();
        for a in &ops[k].regs {
            let counts = seen.entry(a.reg.as_str()).or_default();
            let slot = match a.kind {
                RegAccessKind::Write => 0,
                RegAccessKind::Read => 1,
                RegAccessKind::Clobber => 2,
            };
            counts[slot] += 1;
        }
    }
    rank
}
