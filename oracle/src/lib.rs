//! The ILP oracle: optimal allocations of small and medium programs, so that every
//! heuristic can be measured against the optimum. Models are stated once ([`solver`]) and
//! solved by the pure-Rust `microlp` or, with the `highs` feature, by HiGHS.
//!
//! - [`minregs`]: the least registers of a class without spilling, as an assignment of
//!   every value ([`problem`] states the model, [`start`] its starting solutions), over
//!   the class's own [`flow`] and [`live`]ness, recomputed from the program alone, its
//!   placement variables shared with [`copies`] ([`windows`]);
//! - [`copies`]: the least frequency-weighted copy cost without spilling (optimal
//!   coalescing within the starting solution's registers);
//! - [`decode`]: an assignment of every class turned into an allocated function (locations
//!   on every operand, parallel copies on edges and before constrained operands), which
//!   any checker can verify;
//! - [`spill`]: the least frequency-weighted spill cost of a class at a budget, as an
//!   allocation: a [`residency`] per program point ([`points`]) written into the program
//!   and back ([`rewrite`]), registers assigned by the minregs model.
//! - [`schedule`]: the least peak demand of a class over the legal orders of a small
//!   block (exact search), against which the list scheduler is measured.

pub mod allocation;
pub mod copies;
pub mod decode;
pub mod flow;
pub mod live;
pub mod minregs;
pub mod points;
pub mod problem;
pub mod residency;
pub mod rewrite;
pub mod schedule;
pub mod solver;
pub mod spill;
pub mod start;
pub mod windows;

/// Why the oracle gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("block `{block}` needs {needed} units of the class at one point, more than the budget of {budget}")]
    BelowLowest {
        block: String,
        needed: u32,
        budget: u32,
    },
    #[error("too large: the model has {variables} variables, more than the limit of {limit}")]
    TooLarge { variables: usize, limit: usize },
    #[error("the ILP solver failed: {0}")]
    Solver(String),
    #[error("the model has no solution within the budget (no allocation without spilling keeps one register per value)")]
    Infeasible,
    #[error("the solver found no solution within its limits and there was no starting solution")]
    NoSolution,
    #[error("class `{class}` needs spilling: {max_live} units live at one point, above the budget of {budget}")]
    NeedsSpilling {
        class: String,
        max_live: u16,
        budget: u16,
    },
    #[error("outside the model: {0}")]
    OutsideModel(String),
    #[error("the residency fits the budget but no register assignment of the model does: {0}")]
    NoAssignment(String),
    #[error("the assignment cannot be written as an allocation: {0}")]
    Decode(#[from] decode::DecodeError),
}
