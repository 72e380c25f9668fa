//! Choosing a register for one range, shared by both baselines: the first legal start
//! unit (aligned, inside the budget, overlapping no forbidden unit and no unit the
//! caller marks taken), trying the range's preferences first; `dense` scans from unit 0,
//! `round-robin` from just after the previous choice in the class (Mesa's
//! `util/register_allocate.c` round-robin option, which spreads writes for the
//! scheduler).

use super::ranges::{Pref, Range};
use crate::alloc::Policy;

/// Legal start units of a range of `size` units aligned to `align` in `budget` units.
pub fn starts(size: u16, align: u16, budget: u16) -> impl Iterator<Item = u16> {
    let last = budget.checked_sub(size);
    (0..=last.unwrap_or(0))
        .step_by(usize::from(align.max(1)))
        .filter(move |_| last.is_some())
}

/// Picks a start unit for `r` where `taken(unit)` is false over its whole size.
#[derive(Debug)]
pub struct Chooser {
    pub policy: Policy,
    pub budget: u16,
    next: u16,
}

impl Chooser {
    pub fn new(policy: Policy, budget: u16) -> Chooser {
        Chooser {
            policy,
            budget,
            next: 0,
        }
    }

    /// `placed(other)` is the start unit of an already placed range.
    pub fn choose(
        &mut self,
        r: &Range,
        taken: &dyn Fn(u16) -> bool,
        placed: &dyn Fn(u32) -> Option<u16>,
    ) -> Option<u16> {
        let budget = self.budget;
        let fits = |s: u16| {
            s.is_multiple_of(r.align.max(1))
                && s.checked_add(r.size).is_some_and(|e| e <= budget)
                && (s..s + r.size).all(|u| !taken(u) && !forbidden(r, u))
                && !misplaced(r, s)
        };
        let preferred: Vec<u16> = r
            .prefer
            .iter()
            .filter_map(|p| match *p {
                Pref::Unit(s) => Some(s),
                Pref::Range(o) => placed(o),
            })
            .collect();
        self.pick(r.size, r.align, &preferred, &fits)
    }

    /// The first of `preferred` that `fits`, else the first fitting legal start of a range
    /// of `size` units aligned to `align`, in the policy's order.
    pub fn pick(
        &mut self,
        size: u16,
        align: u16,
        preferred: &[u16],
        fits: &dyn Fn(u16) -> bool,
    ) -> Option<u16> {
        if let Some(&s) = preferred.iter().find(|&&s| fits(s)) {
            return Some(s);
        }
        let all: Vec<u16> = starts(size, align, self.budget).collect();
        let from = match self.policy {
            Policy::Dense => 0,
            Policy::RoundRobin => all.iter().position(|&s| s >= self.next).unwrap_or(0),
        };
        let chosen = all[from..]
            .iter()
            .chain(&all[..from])
            .copied()
            .find(|&s| fits(s))?;
        self.next = chosen + size;
        Some(chosen)
    }
}

/// Whether `r` at `s` overlaps one of its `exact` ranges without starting there.
pub fn misplaced(r: &Range, s: u16) -> bool {
    r.exact
        .iter()
        .any(|&(f, len)| s != f && s < f.saturating_add(len) && f < s + r.size)
}

fn forbidden(r: &Range, unit: u16) -> bool {
    r.forbidden
        .iter()
        .any(|&(first, len)| unit >= first && unit < first.saturating_add(len))
}
