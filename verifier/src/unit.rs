//! Units: the one-register, one-slot, one-lane pieces that locations are made of.

use chromatic::{Location, Target};

/// One unit of a location: register `unit` of a class, a memory slot, or lane `lane` of
/// register `reg` of a per-lane class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Unit {
    Reg(u8, u16),
    Slot(u32),
    Lane(u8, u16, u16),
}

impl Unit {
    /// Whether the unit holds one value per wave (uniform registers, lanes) rather than one
    /// per lane (per-lane registers, scratch slots).
    pub fn is_uniform(self, target: &Target) -> bool {
        match self {
            Unit::Reg(c, _) => target
                .classes
                .get(usize::from(c))
                .is_some_and(|c| c.uniform),
            Unit::Lane(..) => true,
            Unit::Slot(_) => false,
        }
    }
}

/// The units of a location, first to last.
pub(crate) fn units(loc: Location) -> impl Iterator<Item = Unit> {
    let n = loc.len();
    (0..n).map(move |i| match loc {
        Location::Reg { class, first, .. } => Unit::Reg(class.0, first.wrapping_add(i)),
        Location::Slot { first, .. } => Unit::Slot(first.wrapping_add(u32::from(i))),
        Location::Lane {
            class, reg, first, ..
        } => Unit::Lane(class.0, reg, first.wrapping_add(i)),
    })
}
