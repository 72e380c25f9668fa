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
use std::collections::HashMap;

/// Checks that `matched` (per original op of `ob`, its index in `ab`) keeps the
/// dependences of `ob`. One error, at the first operation out of order.
pub(crate) fn check_order(
    ob: &BlockData,
    matched: &[Option<usize>],
    ab: &BlockData,
    sink: &mut Sink,
) {
    let ops: Vec<&Op> = ob.insts.iter().filter_map(|i| i.op()).collect();
    let mut placed: Vec<(usize, usize)> = matched
        .iter()
        .enumerate()
        .filter_map(|(k, m)| m.map(|i| (i, k)))
        .collect();
    placed.sort_unstable();
    let original_ranks = ranks(&ops, (0..ops.len()).filter(|&k| matched[k].is_some()));
    let allocated_ranks = ranks(&ops, placed.iter().map(|&(_, k)| k));
    let original_reg_ranks = reg_ranks(&ops, (0..ops.len()).filter(|&k| matched[k].is_some()));
    let allocated_reg_ranks = reg_ranks(&ops, placed.iter().map(|&(_, k)| k));
    let defined_in_block: HashMap<Value, usize> = ops
        .iter()
        .enumerate()
        .flat_map(|(k, op)| op.defs.iter().map(move |d| (d.value, k)))
        .collect();
    let mut done = vec![false; ops.len()];
    for &(i, k) in &placed {
        let reads_later = ops[k]
            .uses()
            .filter_map(|u| defined_in_block.get(&u.value))
            .find(|&&p| !done[p] && matched[p].is_some());
        let moved = original_ranks[k] != allocated_ranks[k];
        if let Some(&p) = reads_later {
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
        let reg_moved = ops[k]
            .regs
            .iter()
            .zip(original_reg_ranks[k].iter().zip(&allocated_reg_ranks[k]))
            .find(|(_, (o, a))| o != a);
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
    let mut seen: HashMap<&str, [usize; 3]> = HashMap::new();
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
