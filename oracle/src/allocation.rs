//! The oracle's allocation of a whole function: each class with values solved apart
//! ([`crate::minregs`]; classes share no registers, so the decomposition loses nothing),
//! and the assignments of all classes decoded together ([`crate::decode`]). Every class
//! is checked to fit its budget before any is solved, so a function that needs spilling
//! is answered at once.

use crate::decode::decode;
use crate::minregs::{fitting_problem, solve_problem, Limits, MinRegs};
use crate::OracleError;
use chromatic::program::Function;
use chromatic::target::Target;
use std::time::Instant;

/// Per class with values, the answer; and the function allocated with the best
/// assignment of every class.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub classes: Vec<MinRegs>,
    pub function: Function,
}

/// The least registers of every class of `f` within `budget` (units per class), starting
/// from `hint` (another allocator's allocation of `f`) where it fits the model.
pub fn allocate(
    f: &Function,
    target: &Target,
    budget: &[u16],
    hint: Option<&Function>,
    limits: Limits,
) -> Result<Allocation, OracleError> {
    let mut problems = Vec::new();
    for c in target.class_ids() {
        if !f.values.iter().any(|v| v.class == c) {
            continue;
        }
        let cap = budget
            .get(c.index())
            .copied()
            .unwrap_or(target.class(c).units);
        let clock = Instant::now();
        let p = fitting_problem(f, target, c, cap)?;
        problems.push((p, cap, clock.elapsed()));
    }
    let mut first: Vec<Option<u16>> = vec![None; f.values.len()];
    let mut classes = Vec::new();
    for (p, cap, built) in &problems {
        let answer = solve_problem(p, f, *cap, hint, limits, *built)?;
        for (slot, at) in first.iter_mut().zip(&answer.first) {
            if at.is_some() {
                *slot = *at;
            }
        }
        classes.push(answer);
    }
    let function = decode(f, &first).map_err(OracleError::Decode)?;
    Ok(Allocation { classes, function })
}
