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
//!
//! a `remat` op, whatever its effect, only follows its values (it has none).
//!
//! Together these are exactly "no dependence edge reversed": a read and an ordered op
//! conflict, two ordered ops conflict, two reads do not, and a carry op conflicts only
//! with carry ops.

use crate::error::{ErrorKind, Point};
use crate::sink::Sink;
use chromatic::{BlockData, Effect, Op, Value};
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
