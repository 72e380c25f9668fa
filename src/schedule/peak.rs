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
use crate::target::{ClassId, Target};

/// A set of live values with their units per class, for repeated walks of one function.
///
/// Membership is a generation stamp per value, so emptying the set is one increment
/// however many values the function has: a function of many blocks is walked many times.
/// The set keeps each value's class and units itself, so it outlives changes to the
/// function: the values the function gains after [`Live::new`] (rematerialisation's
/// copies, which come and go with its attempts) are read again by [`Live::fit`].
#[derive(Debug)]
pub struct Live {
    /// Per value, its class and units.
    shape: Vec<(ClassId, u16)>,
    /// The values of the function when the set was made, which never change.
    stable: usize,
    stamp: Vec<u32>,
    generation: u32,
    pub units: Vec<u32>,
}

impl Live {
    pub fn new(f: &Function, target: &Target) -> Live {
        let mut live = Live {
            shape: Vec::with_capacity(f.values.len()),
            stable: 0,
            stamp: Vec::new(),
            generation: 1,
            units: vec![0; target.classes.len()],
        };
        live.fit(f);
        live.stable = f.values.len();
        live
    }

    /// Reads again the values `f` has gained since [`Live::new`]: `f` is the function the
    /// set was made for, with values added or dropped since only after those it had then.
    pub fn fit(&mut self, f: &Function) {
        self.shape.truncate(self.stable);
        let added = &f.values[self.stable..];
        self.shape.extend(added.iter().map(|v| (v.class, v.size)));
        self.stamp.truncate(self.stable);
        self.stamp.resize(f.values.len(), 0);
    }

    pub fn contains(&self, v: Value) -> bool {
        self.stamp[v.index()] == self.generation
    }

    pub fn insert(&mut self, v: Value) {
        if !self.contains(v) {
            self.stamp[v.index()] = self.generation;
            let (c, n) = (self.class(v), self.size(v));
            self.units[c] += n;
        }
    }

    pub fn remove(&mut self, v: Value) {
        if self.contains(v) {
            self.stamp[v.index()] = 0;
            let (c, n) = (self.class(v), self.size(v));
            self.units[c] -= n;
        }
    }

    /// Empties the set, then adds `values`.
    pub fn reset(&mut self, values: &[Value]) {
        self.generation += 1;
        self.units.iter_mut().for_each(|u| *u = 0);
        values.iter().for_each(|&v| self.insert(v));
    }

    /// Moves the set from after `op` to before it: its definitions leave, its uses join.
    pub fn move_above(&mut self, op: &Op) {
        op.defs.iter().for_each(|d| self.remove(d.value));
        op.uses().for_each(|u| self.insert(u.value));
    }

    pub fn class(&self, v: Value) -> usize {
        self.shape[v.index()].0.index()
    }

    pub fn size(&self, v: Value) -> u32 {
        u32::from(self.shape[v.index()].1)
    }
}

/// The demand per class at `op` given the values `live` after it, into `demand`; the walk
/// then moves `live` to before it (definitions out, uses in).
pub fn step_back(op: &Op, live: &mut Live, demand: &mut Vec<u32>) {
    let late = demand;
    late.clone_from(&live.units);
    let mut extra_early: Vec<(usize, u32)> = Vec::new();
    for d in &op.defs {
        let (c, n) = (live.class(d.value), live.size(d.value));
        if !live.contains(d.value) {
            late[c] += n;
        }
        if d.early_clobber {
            extra_early.push((c, n));
        }
        let tied = d.tied.and_then(|k| op.operands.get(usize::from(k)));
        if let Some(u) = tied.and_then(|o| o.as_use()) {
            if live.contains(u.value) {
                extra_early.push((live.class(u.value), live.size(u.value)));
            }
        }
    }
    live.move_above(op);
    for (c, (l, &e)) in late.iter_mut().zip(&live.units).enumerate() {
        let x: u32 = extra_early
            .iter()
            .filter(|&&(k, _)| k == c)
            .map(|&(_, n)| n)
            .sum();
        *l = (*l).max(e + x);
    }
}

/// The peak demand per class of `ops` run in `order`, with `live_end` live after the last.
pub fn peak(ops: &[&Op], order: &[u32], live_end: &[Value], live: &mut Live) -> Vec<u32> {
    live.reset(live_end);
    let mut peak = vec![0u32; live.units.len()];
    let mut demand = Vec::with_capacity(peak.len());
    for &n in order.iter().rev() {
        step_back(ops[n as usize], live, &mut demand);
        peak.iter_mut()
            .zip(&demand)
            .for_each(|(p, &d)| *p = (*p).max(d));
    }
    peak
}
