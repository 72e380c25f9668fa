//! The ILP oracle: optimal allocations of small and medium programs, so that every
//! heuristic can be measured against the optimum. Models are built with `good_lp` and
//! solved by the pure-Rust `microlp`.
//!
//! - [`spill`]: the minimum frequency-weighted spill cost of a class at a budget, over the
//!   program points of [`points`].

pub mod points;
pub mod spill;

/// Why the oracle gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    #[error("block `{block}` needs {needed} units of the class at one point, more than the budget of {budget}")]
    BelowLowest {
        block: String,
        needed: u32,
        budget: u32,
    },
    #[error("the model has {variables} 0-1 variables, more than the limit of {limit}")]
    TooLarge { variables: usize, limit: usize },
    #[error("the ILP solver failed: {0}")]
    Solver(String),
}
