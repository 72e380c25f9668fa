//! An [`Ilp`] through microlp's branch and bound (pure Rust), which completes a partial
//! start itself and reports its best bound at a limit.

use super::{Failure, Ilp, Op, Outcome, Settings, Var};
use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOptions, Variable};

pub(super) fn solve(
    ilp: &Ilp,
    settings: Settings,
    start: &[(Var, f64)],
) -> Result<Outcome, Failure> {
    let mut problem = Problem::new(OptimizationDirection::Minimize);
    let vars: Vec<Variable> = ilp
        .columns
        .iter()
        .map(|c| {
            if c.integer {
                problem.add_binary_var(c.cost)
            } else {
                problem.add_var(c.cost, (0.0, 1.0))
            }
        })
        .collect();
    for row in &ilp.rows {
        let terms: Vec<(Variable, f64)> = row.terms.iter().map(|&(x, a)| (vars[x.0], a)).collect();
        let op = match row.op {
            Op::Le => ComparisonOp::Le,
            Op::Eq => ComparisonOp::Eq,
        };
        problem.add_constraint(terms, op, row.rhs);
    }
    let mut options = SolveOptions::default();
    options.time_limit = Some(settings.time);
    options.node_limit = settings.nodes;
    options.warm_start = Some(start.iter().map(|&(x, v)| (vars[x.0], v)).collect());
    let outcome = match problem.solve_with(options) {
        Ok(outcome) => outcome,
        Err(microlp::Error::Infeasible) => return Err(Failure::Infeasible),
        Err(e) => return Err(Failure::Error(e.to_string())),
    };
    Ok(match outcome.into_solution() {
        Ok(solution) => {
            let optimal = solution.status() == microlp::SolutionStatus::Optimal;
            Outcome {
                values: Some(vars.iter().map(|&x| solution.var_value(x)).collect()),
                optimal,
                bound: if optimal {
                    Some(solution.objective())
                } else {
                    solution.stats().best_bound
                },
            }
        }
        Err(interrupted) => Outcome {
            values: None,
            optimal: false,
            bound: interrupted.stats().best_bound,
        },
    })
}
