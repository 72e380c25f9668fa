//! The ILP oracle: optimal allocations of small and medium programs, so that every
//! heuristic can be measured against the optimum.
