//! chromatic: a GPU register allocator that proves its own work.
//!
//! This crate holds the program model ([`program`]), register-file descriptions
//! ([`target`]), the `.chr` text format ([`parse`], [`print`]), the analyses, and the
//! production allocator. `docs/ARCHITECTURE.md` is the map.

pub mod alloc;
pub mod analysis;
#[cfg(feature = "arbitrary")]
pub mod gen;
mod lexer;
pub mod parse;
pub mod print;
pub mod program;
pub mod ptx;
pub mod synth;
pub mod target;

pub use parse::{parse, ParseError};
pub use print::print;
pub use program::*;
pub use target::{
    AlignRule, ClassId, Costs, Occupancy, OccupancyError, RegClass, SpillTarget, Target,
};
