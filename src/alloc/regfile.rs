//! The register file during assignment: which value part occupies each unit of each class,
//! and the search for a register window.
//!
//! Window search follows Mesa ACO's `get_reg_simple`: candidates are the aligned start
//! units inside the budget, tried lowest first (`dense`) or from a rotating start
//! (`round-robin`, Mesa's `util/register_allocate.c` option that spreads writes for a
//! post-RA scheduler). When no aligned window is free, [`RegFile::cheapest_window`] picks
//! the window that displaces the fewest occupied units (ACO's `get_reg_impl`), skipping
//! windows that hold pinned values.

use crate::program::{Location, Value};
use crate::target::{ClassId, Target};
use std::cmp::Reverse;

/// How to choose among free registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Lowest free register first: minimises the highest register used.
    #[default]
    Dense,
    /// Rotate the starting point within the registers MaxLive needs, spreading writes so
    /// that a post-RA scheduler sees fewer false dependencies.
    RoundRobin,
}

/// One class's units.
#[derive(Clone, Debug)]
struct ClassFile {
    occupant: Vec<Option<Value>>,
    /// Units usable by the allocation (the budget).
    limit: u16,
    /// Round-robin window: candidates rotate within `0..spread`.
    spread: u16,
    next: u16,
}

/// Occupancy of every class.
#[derive(Clone, Debug)]
pub struct RegFile {
    classes: Vec<ClassFile>,
    policy: Policy,
    /// Old contents of what changed since [`RegFile::mark`], newest last.
    undo: Vec<Undo>,
}

/// One change to undo.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Unit(ClassId, u16, Option<Value>),
    Next(ClassId, u16),
}

impl RegFile {
    /// `budget[c]` units of class `c` are usable; round-robin rotates within `spread[c]`.
    pub fn new(target: &Target, budget: &[u16], spread: &[u16], policy: Policy) -> RegFile {
        let classes = target
            .class_ids()
            .map(|c| ClassFile {
                occupant: vec![None; usize::from(budget[c.index()])],
                limit: budget[c.index()],
                spread: spread[c.index()].clamp(1, budget[c.index()].max(1)),
                next: 0,
            })
            .collect();
        RegFile {
            classes,
            policy,
            undo: Vec::new(),
        }
    }

    /// Starts recording changes, forgetting earlier ones: [`RegFile::undo_to_mark`]
    /// returns to this state.
    pub fn mark(&mut self) {
        self.undo.clear();
    }

    /// Undoes every change since the last [`RegFile::mark`].
    pub fn undo_to_mark(&mut self) {
        while let Some(change) = self.undo.pop() {
            match change {
                Undo::Unit(c, u, o) => self.classes[c.index()].occupant[usize::from(u)] = o,
                Undo::Next(c, n) => self.classes[c.index()].next = n,
            }
        }
    }

    fn set(&mut self, c: ClassId, u: usize, o: Option<Value>) {
        let slot = &mut self.classes[c.index()].occupant[u];
        if *slot != o {
            self.undo.push(Undo::Unit(c, u as u16, *slot));
            *slot = o;
        }
    }

    pub fn clear(&mut self) {
        self.undo.clear();
        for c in &mut self.classes {
            c.occupant.iter_mut().for_each(|o| *o = None);
        }
    }

    fn units(loc: Location) -> Option<(ClassId, std::ops::Range<usize>)> {
        match loc {
            Location::Reg { class, first, len } => Some((
                class,
                usize::from(first)..usize::from(first) + usize::from(len),
            )),
            _ => None,
        }
    }

    pub fn occupant(&self, class: ClassId, unit: u16) -> Option<Value> {
        self.classes[class.index()]
            .occupant
            .get(usize::from(unit))
            .copied()
            .flatten()
    }

    /// Marks `loc` as holding `v`.
    pub fn occupy(&mut self, loc: Location, v: Value) {
        if let Some((c, range)) = Self::units(loc) {
            for u in range {
                self.set(c, u, Some(v));
            }
        }
    }

    /// Frees the units of `loc` that still hold `v`.
    pub fn release(&mut self, loc: Location, v: Value) {
        if let Some((c, range)) = Self::units(loc) {
            for u in range {
                if self.classes[c.index()].occupant[u] == Some(v) {
                    self.set(c, u, None);
                }
            }
        }
    }

    pub fn limit(&self, class: ClassId) -> u16 {
        self.classes[class.index()].limit
    }

    /// Whether `first..first+len` is inside the budget and every unit is free and allowed.
    pub fn is_free(
        &self,
        class: ClassId,
        first: u16,
        len: u16,
        allowed: &dyn Fn(u16) -> bool,
    ) -> bool {
        let file = &self.classes[class.index()];
        u32::from(first) + u32::from(len) <= u32::from(file.limit)
            && (first..first + len).all(|u| file.occupant[usize::from(u)].is_none() && allowed(u))
    }

    /// A free aligned window of `len` units chosen by the policy.
    pub fn find_free(
        &mut self,
        class: ClassId,
        len: u16,
        align: u16,
        allowed: &dyn Fn(u16) -> bool,
    ) -> Option<u16> {
        let align = align.max(1);
        let file = &self.classes[class.index()];
        let (limit, spread, next) = (file.limit, file.spread, file.next);
        if limit < len {
            return None;
        }
        let found = match self.policy {
            Policy::Dense => None,
            Policy::RoundRobin => {
                let count = spread.div_ceil(align);
                (0..count)
                    .map(|k| ((next / align + k) % count) * align)
                    .find(|&s| self.is_free(class, s, len, allowed))
            }
        };
        let found = found.or_else(|| {
            (0..=limit - len)
                .step_by(usize::from(align))
                .find(|&s| self.is_free(class, s, len, allowed))
        });
        if let Some(s) = found {
            self.undo.push(Undo::Next(class, next));
            let file = &mut self.classes[class.index()];
            file.next = (s + len) % file.spread.max(1);
        }
        found
    }

    /// The aligned window whose occupied units are fewest, among windows whose units are
    /// all `allowed` and hold no value for which `pinned` is true. Returns the start and
    /// the values to displace (each once).
    pub fn cheapest_window(
        &self,
        class: ClassId,
        len: u16,
        align: u16,
        allowed: &dyn Fn(u16) -> bool,
        pinned: &dyn Fn(Value) -> bool,
    ) -> Option<(u16, Vec<Value>)> {
        let file = &self.classes[class.index()];
        if file.limit < len {
            return None;
        }
        let mut best: Option<(usize, u16, Vec<Value>)> = None;
        for start in (0..=file.limit - len).step_by(usize::from(align.max(1))) {
            let window = start..start + len;
            if !window.clone().all(allowed) {
                continue;
            }
            let mut displaced: Vec<Value> = Vec::new();
            let mut cost = 0;
            let mut blocked = false;
            for u in window {
                if let Some(v) = file.occupant[usize::from(u)] {
                    blocked |= pinned(v);
                    cost += 1;
                    if !displaced.contains(&v) {
                        displaced.push(v);
                    }
                }
            }
            if !blocked && best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, start, displaced));
            }
        }
        best.map(|(_, start, displaced)| (start, displaced))
    }

    /// A compacted placement of the values in `class`. The ranges of `want.fixed` are
    /// taken first (by their value, if any); then each movable value and each window of
    /// `want.free`, in the order of `want.key` (group, then larger alignment and size
    /// first, then where it is now; windows after values), takes the lowest aligned range
    /// left; pinned values keep their units. Packing by decreasing width leaves no hole
    /// between aligned tuples, so the units left free form one range at the top. Returns
    /// the new start of each value that moves or is fixed, or `None` when something finds
    /// no range.
    pub(crate) fn compaction(&self, class: ClassId, want: &Packing) -> Option<Vec<(Value, u16)>> {
        let file = &self.classes[class.index()];
        let mut taken = vec![false; file.occupant.len()];
        let mut plan = Vec::new();
        for &(first, size, value) in want.fixed {
            let units = usize::from(first)..usize::from(first) + usize::from(size);
            let held = file.occupant.get(units.clone())?;
            if held
                .iter()
                .flatten()
                .any(|&o| (want.pinned)(o) && Some(o) != value)
            {
                return None;
            }
            taken[units].fill(true);
            plan.extend(value.map(|v| (v, first)));
        }
        let mut items: Vec<Packed> = Vec::new();
        for (u, o) in file.occupant.iter().enumerate() {
            let Some(v) = *o else { continue };
            if (want.pinned)(v) {
                taken[u] = true;
                continue;
            }
            if plan.iter().any(|&(w, _)| w == v) {
                continue;
            }
            match items.iter_mut().find(|m| m.value == Some(v)) {
                Some(m) => m.size += 1,
                None => {
                    let (group, align) = (want.key)(v);
                    let now = u as u16;
                    items.push(Packed {
                        group,
                        align,
                        size: 1,
                        now,
                        value: Some(v),
                    });
                }
            }
        }
        items.extend(want.free.iter().map(|&(size, align)| Packed {
            group: 0,
            align,
            size,
            now: u16::MAX,
            value: None,
        }));
        items.sort_by_key(|p| (p.group, Reverse(p.align), Reverse(p.size), p.now));
        for p in items {
            let fits = |s: u16| (s..s + p.size).all(|u| !taken[usize::from(u)]);
            let start = (0..=file.limit.checked_sub(p.size)?)
                .step_by(usize::from(p.align.max(1)))
                .find(|&s| fits(s))?;
            taken[usize::from(start)..usize::from(start + p.size)].fill(true);
            plan.extend(p.value.map(|v| (v, start)));
        }
        Some(plan)
    }
}

/// What a compaction must achieve besides packing ([`RegFile::compaction`]).
pub(crate) struct Packing<'a> {
    /// Per value: its group (lower groups go lower) and its alignment.
    pub key: &'a dyn Fn(Value) -> (u8, u16),
    /// Values that may not move.
    pub pinned: &'a dyn Fn(Value) -> bool,
    /// Windows (size, alignment) to keep free anywhere.
    pub free: &'a [(u16, u16)],
    /// Ranges (first, size) that must hold the given value, or stay free.
    pub fixed: &'a [(u16, u16, Option<Value>)],
}

/// A value or a reserved window in a compaction.
struct Packed {
    group: u8,
    align: u16,
    size: u16,
    now: u16,
    value: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(units: u16) -> (Target, RegFile) {
        let target = Target::generic(&format!("v={units}")).unwrap();
        let regs = RegFile::new(&target, &[units], &[units], Policy::Dense);
        (target, regs)
    }

    fn pack(
        regs: &RegFile,
        key: &dyn Fn(Value) -> (u8, u16),
        pinned: &dyn Fn(Value) -> bool,
        free: &[(u16, u16)],
        fixed: &[(u16, u16, Option<Value>)],
    ) -> Option<Vec<(Value, u16)>> {
        let want = Packing {
            key,
            pinned,
            free,
            fixed,
        };
        regs.compaction(ClassId(0), &want)
    }

    fn at(first: u16, len: u16) -> Location {
        Location::Reg {
            class: ClassId(0),
            first,
            len,
        }
    }

    #[test]
    fn compaction_packs_wider_values_first_and_keeps_pinned_ones() {
        let (_, mut regs) = file(8);
        regs.occupy(at(0, 1), Value(0));
        regs.occupy(at(2, 2), Value(1));
        regs.occupy(at(5, 1), Value(2));
        regs.occupy(at(6, 1), Value(3));
        let plan = pack(&regs, &|_| (0, 1), &|v| v == Value(3), &[], &[]).unwrap();
        assert_eq!(plan, vec![(Value(1), 0), (Value(0), 2), (Value(2), 3)]);
    }

    #[test]
    fn compaction_orders_groups_and_respects_alignment() {
        let (_, mut regs) = file(8);
        regs.occupy(at(1, 1), Value(0));
        regs.occupy(at(4, 2), Value(1));
        regs.occupy(at(7, 1), Value(2));
        let group = |v: Value| if v == Value(1) { (1, 2) } else { (0, 1) };
        let plan = pack(&regs, &group, &|_| false, &[], &[]).unwrap();
        assert_eq!(plan, vec![(Value(0), 0), (Value(2), 1), (Value(1), 2)]);
    }

    #[test]
    fn compaction_fails_when_pinned_units_leave_no_aligned_window() {
        let (_, mut regs) = file(4);
        regs.occupy(at(0, 2), Value(0));
        regs.occupy(at(2, 1), Value(1));
        regs.occupy(at(3, 1), Value(2));
        let key = |v: Value| if v == Value(0) { (1, 2) } else { (0, 1) };
        let pinned = |v: Value| v == Value(1);
        assert!(pack(&regs, &key, &pinned, &[], &[]).is_none());
    }

    #[test]
    fn compaction_keeps_reserved_windows_free_in_width_order() {
        let (_, mut regs) = file(9);
        regs.occupy(at(0, 1), Value(0));
        regs.occupy(at(1, 2), Value(1));
        regs.occupy(at(4, 2), Value(2));
        let key = |v: Value| (0, if v == Value(0) { 1 } else { 2 });
        let plan = pack(&regs, &key, &|_| false, &[(4, 4)], &[]);
        assert_eq!(
            plan,
            Some(vec![(Value(1), 4), (Value(2), 6), (Value(0), 8)])
        );
    }

    #[test]
    fn compaction_puts_fixed_values_in_place_first() {
        let (_, mut regs) = file(8);
        regs.occupy(at(0, 2), Value(0));
        regs.occupy(at(2, 4), Value(1));
        let key = |_: Value| (0, 1);
        let plan = pack(&regs, &key, &|_| false, &[], &[(0, 4, Some(Value(1)))]);
        assert_eq!(plan, Some(vec![(Value(1), 0), (Value(0), 4)]));
        let (_, mut regs) = file(6);
        regs.occupy(at(0, 2), Value(0));
        regs.occupy(at(2, 4), Value(1));
        let plan = pack(&regs, &key, &|_| false, &[], &[(1, 4, Some(Value(1)))]);
        assert_eq!(plan, None, "units 0 and 5 are no pair");
        let pinned = |v: Value| v == Value(0);
        let plan = pack(&regs, &key, &pinned, &[], &[(1, 4, Some(Value(1)))]);
        assert_eq!(plan, None, "a pinned value holds unit 1");
    }
}
