//! The register file during assignment: which value occupies each unit of each class, and
//! the search for a free window.
//!
//! Window search follows Mesa ACO's `get_reg_simple`: candidates are the aligned start
//! units inside the budget, tried lowest first (`dense`) or from a rotating start
//! (`round-robin`, Mesa's `util/register_allocate.c` option that spreads writes for a
//! post-RA scheduler), rotating within the registers MaxLive needs. Beside the occupant
//! of each unit, each class keeps one bit per unit held, updated as values come and go,
//! so that the lowest free unit is a word scan and a constrained instruction's packing
//! problem can take the values it leaves alone as one bit mask
//! ([`packing::near_around`](super::packing::near_around)).

use super::packing::Order;
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
    /// One bit per unit: set when the unit is held.
    held: Vec<u64>,
    /// Round-robin: candidates rotate within `0..spread`, starting at `next`.
    spread: u16,
    next: u16,
}

/// Occupancy of every class.
#[derive(Clone, Debug)]
pub struct RegFile {
    classes: Vec<ClassFile>,
    policy: Policy,
    /// Per value: the stamp of the last [`RegFile::residents`] call that listed it.
    seen: Vec<u32>,
    stamp: u32,
}

impl RegFile {
    /// `budget[c]` units of class `c` are usable; round-robin rotates within `spread[c]`.
    pub fn new(target: &Target, budget: &[u16], spread: &[u16], policy: Policy) -> RegFile {
        let classes = target
            .class_ids()
            .map(|c| ClassFile {
                occupant: vec![None; usize::from(budget[c.index()])],
                held: vec![0; usize::from(budget[c.index()]).div_ceil(64)],
                spread: spread[c.index()].clamp(1, budget[c.index()].max(1)),
                next: 0,
            })
            .collect();
        RegFile {
            classes,
            policy,
            seen: Vec::new(),
            stamp: 0,
        }
    }

    pub fn clear(&mut self) {
        for c in &mut self.classes {
            c.occupant.iter_mut().for_each(|o| *o = None);
            c.held.iter_mut().for_each(|w| *w = 0);
        }
    }

    /// Units usable in `class`.
    pub fn limit(&self, class: ClassId) -> u16 {
        self.classes[class.index()].occupant.len() as u16
    }

    pub fn occupant(&self, class: ClassId, unit: u16) -> Option<Value> {
        self.classes[class.index()]
            .occupant
            .get(usize::from(unit))
            .copied()
            .flatten()
    }

    pub fn occupy(&mut self, loc: Location, v: Value) {
        self.write(loc, Some(v), None);
    }

    /// Frees the units of `loc` that `v` holds.
    pub fn release(&mut self, loc: Location, v: Value) {
        self.write(loc, None, Some(v));
    }

    fn write(&mut self, loc: Location, to: Option<Value>, only: Option<Value>) {
        let Location::Reg { class, first, len } = loc else {
            return;
        };
        let file = &mut self.classes[class.index()];
        for u in usize::from(first)..usize::from(first + len) {
            if let Some(slot) = file.occupant.get_mut(u) {
                if only.is_none_or(|v| *slot == Some(v)) {
                    *slot = to;
                    let bit = 1u64 << (u % 64);
                    match to {
                        Some(_) => file.held[u / 64] |= bit,
                        None => file.held[u / 64] &= !bit,
                    }
                }
            }
        }
    }

    /// The units of `class` held, one bit per unit (unit `u` is bit `u % 64` of word
    /// `u / 64`).
    pub fn held(&self, class: ClassId) -> &[u64] {
        &self.classes[class.index()].held
    }

    /// Whether every unit of `first..first + len` is inside the budget and free.
    pub fn is_free(&self, class: ClassId, first: u16, len: u16) -> bool {
        let units = &self.classes[class.index()].occupant;
        let range = usize::from(first)..usize::from(first) + usize::from(len);
        range.end <= units.len() && units[range].iter().all(Option::is_none)
    }

    /// The order in which new items of `class` try positions.
    pub fn order(&self, class: ClassId) -> Order {
        let c = &self.classes[class.index()];
        match self.policy {
            Policy::Dense => Order::Lowest,
            Policy::RoundRobin => Order::From {
                start: c.next,
                spread: c.spread,
            },
        }
    }

    /// A free aligned window of `size` units, in the policy's order.
    pub fn find_free(&self, class: ClassId, size: u16, align: u16) -> Option<u16> {
        let limit = self.limit(class);
        let last = limit.checked_sub(size)?;
        let fits = |p: u16| p.is_multiple_of(align) && self.is_free(class, p, size);
        match self.order(class) {
            Order::Lowest if size == 1 && align == 1 => {
                let held = &self.classes[class.index()].held;
                let word = held.iter().position(|&w| w != !0)?;
                let unit = word * 64 + held[word].trailing_ones() as usize;
                (unit < usize::from(limit)).then_some(unit as u16)
            }
            Order::Lowest => (0..=last).step_by(usize::from(align)).find(|&p| fits(p)),
            Order::From { start, spread } => {
                let spread = spread.min(limit).max(1);
                let rotated = (start % spread..spread).chain(0..start % spread);
                rotated.chain(spread..=last).find(|&p| p <= last && fits(p))
            }
        }
    }

    /// The window [`find_free`](Self::find_free) gives if `allowed` accepts its first
    /// unit, else the lowest free window whose first unit `allowed` accepts.
    pub fn find_free_where(
        &self,
        class: ClassId,
        size: u16,
        align: u16,
        allowed: impl Fn(u16) -> bool,
    ) -> Option<u16> {
        let first = self.find_free(class, size, align)?;
        if allowed(first) {
            return Some(first);
        }
        let last = self.limit(class).checked_sub(size)?;
        let fits = |p: u16| p.is_multiple_of(align) && self.is_free(class, p, size) && allowed(p);
        (0..=last).step_by(usize::from(align)).find(|&p| fits(p))
    }

    /// Round-robin moves past a window just taken.
    pub fn advance(&mut self, loc: Location) {
        if let Location::Reg { class, first, len } = loc {
            let c = &mut self.classes[class.index()];
            c.next = (first + len) % c.spread;
        }
    }

    /// The values of `class` in registers, each with its first unit, in unit order, into
    /// `out` (cleared first).
    pub fn residents(&mut self, class: ClassId, out: &mut Vec<(Value, Option<u16>)>) {
        out.clear();
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        for (u, o) in self.classes[class.index()].occupant.iter().enumerate() {
            let Some(v) = *o else { continue };
            if v.index() >= self.seen.len() {
                self.seen.resize(v.index() + 1, 0);
            }
            if self.seen[v.index()] != self.stamp {
                self.seen[v.index()] = self.stamp;
                out.push((v, Some(u as u16)));
            }
        }
    }
}
