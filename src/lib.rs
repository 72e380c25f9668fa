//! chromatic: a GPU register allocator that proves its own work.
//!
//! This crate holds the program model ([`program`]), register-file descriptions
//! ([`target`]), the `.chr` text format, the analyses, and the production allocator.
//! `docs/ARCHITECTURE.md` is the map.

#[cfg(feature = "arbitrary")]
pub mod gen;
pub mod program;
pub mod target;

pub use program::*;
pub use target::{AlignRule, ClassId, Costs, Occupancy, RegClass, SpillTarget, Target};
