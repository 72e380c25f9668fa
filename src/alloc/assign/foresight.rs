//! Where a pinned value should go: looking ahead over its live range for fixed operands.
//!
//! Assignment meets a fixed operand by moving whatever occupies its register out of the
//! way with a parallel copy (Mesa ACO, `get_reg_for_operand`). A *pinned* value (an
//! accumulator in flight, e.g. PTX `wgmma` until its `wait_group`) may never move once
//! placed, so a fixed operand that needs its register while it lives could only be met
//! by refusing the program. Linear scan has the same problem with fixed intervals and
//! solves it by looking ahead: a register is free for an interval only up to its next
//! fixed use (Wimmer & Mössenböck, "Optimized Interval Splitting in a Linear Scan
//! Register Allocator", VEE 2005, `freeUntilPos`). Here, since a pinned value cannot be
//! split, its whole live range counts: the registers that fixed uses and fixed
//! definitions claim between its definition and its last use are avoided when it is
//! placed, and a fixed use of the value itself is wished for, so that the value is
//! defined where that use reads it.
//!
//! Foresight is a preference: where no window avoids every claim, placement falls back
//! to the first free one, and the constraint that cannot be met is reported as before.

use crate::analysis::liveness::Liveness;
use crate::program::{Function, Inst, Location, Op, Value};
use std::collections::HashMap;

/// Per pinned value: the registers fixed operands claim while it lives, and where a
/// fixed use of its own reads it.
#[derive(Debug, Default)]
pub(super) struct Foresight {
    claimed: HashMap<Value, Vec<Location>>,
    wished: HashMap<Value, Location>,
}

impl Foresight {
    /// From the instructions of every block of `f` (`insts[b]`) and the pinned mask.
    pub(super) fn new(
        f: &Function,
        insts: &[Vec<Inst>],
        liveness: &Liveness,
        pinned: &[bool],
    ) -> Foresight {
        let mut sight = Foresight::default();
        if !pinned.contains(&true) {
            return sight;
        }
        for b in f.block_ids() {
            let live_in = liveness.live_in(b).iter().copied();
            let mut active: Vec<Value> = live_in.filter(|v| pinned[v.index()]).collect();
            for (i, op) in insts[b.index()].iter().enumerate() {
                let Some(op) = op.op() else { continue };
                for &v in &active {
                    sight.look(f, v, op);
                }
                active.retain(|&v| !liveness.is_killed_at(b, i as u32, v));
                let defined = op.defs.iter().map(|d| d.value);
                active.extend(defined.filter(|&v| pinned[v.index()] && !liveness.is_dead(v)));
            }
            for &v in &active {
                let uses = f.block(b).term.uses();
                sight.claim(
                    f,
                    v,
                    uses.iter().filter(|u| u.value != v).filter_map(|u| u.fixed),
                );
            }
        }
        sight
    }

    /// Records what `op` claims while `v` lives across or into it.
    fn look(&mut self, f: &Function, v: Value, op: &Op) {
        let others = op.uses().filter(|u| u.value != v).filter_map(|u| u.fixed);
        let defs = op.defs.iter().filter_map(|d| d.fixed);
        self.claim(f, v, others.chain(defs));
        if let Some(at) = op.uses().filter(|u| u.value == v).find_map(|u| u.fixed) {
            self.wished.entry(v).or_insert(at);
        }
    }

    fn claim(&mut self, f: &Function, v: Value, at: impl Iterator<Item = Location>) {
        let class = f.value(v).class;
        let same_class = at.filter(|l| matches!(l, Location::Reg { class: c, .. } if *c == class));
        let claims = self.claimed.entry(v).or_default();
        for l in same_class {
            if !claims.contains(&l) {
                claims.push(l);
            }
        }
    }

    /// Where a fixed use of `v` itself reads it, if one does.
    pub(super) fn wished(&self, v: Value) -> Option<Location> {
        self.wished.get(&v).copied()
    }

    /// Whether `units` of `v`'s class meet a register claimed while `v` lives.
    pub(super) fn is_claimed(&self, v: Value, first: u16, len: u16) -> bool {
        let Some(claims) = self.claimed.get(&v) else {
            return false;
        };
        claims.iter().any(|l| match *l {
            Location::Reg {
                first: f2, len: l2, ..
            } => f2 < first + len && first < f2 + l2,
            _ => false,
        })
    }
}
