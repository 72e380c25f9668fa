//! The register demand of a block's operations in a given order, per class: the same rule
//! as [`crate::analysis::pressure`], evaluated for an order that is not the block's own.
//!
//! One backward walk from the values live at the end of the operations (the block's
//! live-out set and its terminator's uses). At an operation the demand is the larger of
//! the units live after it together with its definitions (dead ones too) and the units
//! live before it together with its early-clobber definitions and any tied operand that
//! lives on. The entry and the terminator do not depend on the order, so they are left
//! out: the peak of the operations is what a schedule can change.

use crate::program::{Function, Op, Value};
use crate::target::Target;

/// A set of live values with their units per class, for repeated walks of one function.
#[derive(Debug)]
pub struct Live<'f> {
    f: &'f Function,
    member: Vec<bool>,
    pub units: Vec<u32>,
}

impl<'f> Live<'f> {
    pub fn new(f: &'f Function, target: &Target) -> Live<'f> {
        Live {
            f,
            member: vec![false; f.values.len()],
            units: vec![0; target.classes.len()],
        }
    }

    pub fn contains(&self, v: Value) -> bool {
        self.member[v.index()]
    }

    pub fn insert(&mut self, v: Value) {
        if !std::mem::replace(&mut self.member[v.index()], true) {
            let (c, n) = (self.class(v), self.size(v));
            self.units[c] += n;
        }
    }

    pub fn remove(&mut self, v: Value) {
        if std::mem::replace(&mut self.member[v.index()], false) {
            let (c, n) = (self.class(v), self.size(v));
            self.units[c] -= n;
        }
    }

    /// Empties the set, then adds `values`.
    pub fn reset(&mut self, values: &[Value]) {
        self.member.iter_mut().for_each(|m| *m = false);
        self.units.iter_mut().for_each(|u| *u = 0);
        values.iter().for_each(|&v| self.insert(v));
    }

    pub fn class(&self, v: Value) -> usize {
        self.f.value(v).class.index()
    }

    pub fn size(&self, v: Value) -> u32 {
        u32::from(self.f.value(v).size)
    }
}

/// The demand per class at `op` given the values `live` after it, which the walk then
/// moves to before it (definitions out, uses in).
pub fn step_back(op: &Op, live: &mut Live<'_>) -> Vec<u32> {
    let mut late = live.units.clone();
    let mut extra_early = vec![0u32; late.len()];
    for d in &op.defs {
        let (c, n) = (live.class(d.value), live.size(d.value));
        if !live.contains(d.value) {
            late[c] += n;
        }
        if d.early_clobber {
            extra_early[c] += n;
        }
        let tied = d.tied.and_then(|k| op.operands.get(usize::from(k)));
        if let Some(u) = tied.and_then(|o| o.as_use()) {
            if live.contains(u.value) {
                extra_early[live.class(u.value)] += live.size(u.value);
            }
        }
    }
    op.defs.iter().for_each(|d| live.remove(d.value));
    op.uses().for_each(|u| live.insert(u.value));
    late.iter()
        .zip(&live.units)
        .zip(&extra_early)
        .map(|((&l, &e), &x)| l.max(e + x))
        .collect()
}

/// The peak demand per class of `ops` run in `order`, with `live_end` live after the last.
pub fn peak(ops: &[&Op], order: &[u32], live_end: &[Value], live: &mut Live<'_>) -> Vec<u32> {
    live.reset(live_end);
    let mut peak = vec![0u32; live.units.len()];
    for &n in order.iter().rev() {
        let demand = step_back(ops[n as usize], live);
        peak.iter_mut()
            .zip(demand)
            .for_each(|(p, d)| *p = (*p).max(d));
    }
    peak
}
