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
        RegFile { classes, policy }
    }

    pub fn clear(&mut self) {
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
            for o in &mut self.classes[c.index()].occupant[range] {
                *o = Some(v);
            }
        }
    }

    /// Frees the units of `loc` that still hold `v`.
    pub fn release(&mut self, loc: Location, v: Value) {
        if let Some((c, range)) = Self::units(loc) {
            for o in &mut self.classes[c.index()].occupant[range] {
                if *o == Some(v) {
                    *o = None;
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
}
