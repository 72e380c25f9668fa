//! chromatic: a GPU register allocator that proves its own work.
//!
//! This crate holds the program model ([`program`]), register-file descriptions
//! ([`target`]), the `.chr` text format ([`parse`], [`print`]), the analyses, the
//! production allocator and two baselines ([`alloc`]). `docs/ARCHITECTURE.md` is the map;
//! `examples/allocate.rs` runs every allocator on a file.
//!
//! Parse, allocate, check the allocation with the independent verifier (the
//! `chromatic-verifier` crate), read the statistics:
//!
//! ```
//! use chromatic::alloc::{allocate, budget_of, AllocOptions, Allocator};
//!
//! let program = chromatic::parse(
//!     "target gfx9
//! func @f {
//! entry:
//!   %a:v1 = v_mov 1
//!   %b:v1 = v_mov 2
//!   %c:v1 = v_add %a, %b
//!   %d:v1 = v_mul %c, %a
//!   ret %d fixed(v0)
//! }
//! ",
//! )?;
//! for allocator in Allocator::OURS {
//!     let options = AllocOptions {
//!         budget: vec![("v".into(), 2)],
//!         allocator,
//!         ..AllocOptions::default()
//!     };
//!     let (allocated, stats) = allocate(&program, &options)?;
//!     let budget = budget_of(&program.target, &options)?;
//!     let errors = chromatic_verifier::verify_program(&program, &allocated, Some(&budget));
//!     assert!(errors.is_empty(), "{allocator}: {}", errors[0]);
//!     let v = &stats[0].classes[1];
//!     assert_eq!((v.class.as_str(), v.regs_used), ("v", 2));
//!     println!("{allocator}:\n{}", chromatic::print(&allocated));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod alloc;
pub mod analysis;
#[cfg(feature = "arbitrary")]
pub mod gen;
mod lexer;
pub mod mir;
pub mod opcode;
pub mod parse;
pub mod print;
pub mod program;
pub mod ptx;
pub mod schedule;
pub mod synth;
pub mod target;

pub use parse::{parse, ParseError};
pub use print::print;
pub use program::*;
pub use target::{
    AlignRule, ClassId, Costs, Occupancy, OccupancyError, RegClass, SpillTarget, Target,
};
