//! Linear scan with interval splitting: Wimmer & Mössenböck, "Optimized Interval
//! Splitting in a Linear Scan Register Allocator" (VEE 2005), on SSA form as in Wimmer &
//! Franz, "Linear Scan Register Allocation on SSA Form" (CGO 2010); the scan itself goes
//! back to Poletto & Sarkar, "Linear Scan Register Allocation" (TOPLAS 1999).
//!
//! - [`intervals`]: lifetime intervals with holes and use positions over one numbering
//!   of the program points, built from SSA liveness; fixed operands as blocked points.
//! - [`scan`]: intervals by increasing start; a register free for the whole interval if
//!   there is one, else the one free longest with the interval split before it is taken,
//!   else the one whose holders are needed furthest away (they are split and the rest
//!   goes to memory until just before their next use); split positions move out of
//!   loops to block ends.
//! - [`write`]: the allocated function: stores at definitions, moves and reloads where a
//!   part starts in a register, fixed and tied copies, and data flow resolved on every
//!   edge by parallel copies and reloads (phis are moves on their edges: the program
//!   never leaves SSA before allocation).
//!
//! With tuples the free units can be too scattered for a part that must be in a register
//! even after every holder around it was evicted; that value is then spilled everywhere
//! and the scan runs again, as for uniform values below.
//!
//! Uniform values are not split: they follow the linear CFG of divergent code, where the
//! edge from a branch to its else-side has no place for a move. They keep one register
//! for their whole life, or are spilled everywhere (stored at the definition, reloaded
//! before each use) by Poletto & Sarkar's rule — the interval ending furthest — after
//! which the intervals are built and scanned again.

pub mod intervals;
pub mod scan;
pub mod write;

use super::Outcome;
use crate::alloc::Policy;
use crate::analysis::Analysis;
use crate::program::{Function, Value};
use crate::target::Target;
use intervals::Numbering;
use scan::Stop;
use std::collections::BTreeSet;

/// One round: intervals of `f` with the values of `spilled` spilled everywhere, scanned
/// and written.
pub fn allocate(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
    policy: Policy,
    spilled: &BTreeSet<Value>,
) -> Outcome {
    let numbering = Numbering::new(f);
    let mut iv = intervals::build(f, target, a, &numbering, spilled);
    match scan::scan(
        &mut iv,
        &numbering,
        &a.loops,
        budget,
        policy,
        f.values.len(),
    ) {
        Err(Stop::Spill(values)) => Outcome::Spill(values),
        Err(Stop::Stuck { value, spillable }) if spillable && !spilled.contains(&value) => {
            Outcome::Spill(vec![value])
        }
        Err(Stop::Stuck { value, .. }) => Outcome::Stuck(value),
        Ok(()) => match write::write(f, target, a, &numbering, &iv) {
            Ok(func) => Outcome::Done(func),
            Err(message) => Outcome::Internal(message),
        },
    }
}
