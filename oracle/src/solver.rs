//! The integer programs of the models ([`crate::minregs`], [`crate::copies`],
//! [`crate::residency`]) in one solver-neutral form, minimised by either backend:
//!
//! - [`Solver::Microlp`], microlp's branch and bound, pure Rust (the default);
//! - [`Solver::Highs`], the HiGHS MIP solver (Huangfu & Hall's simplex under a branch and
//!   cut; "Parallelizing the dual revised simplex method", Math. Prog. Comp. 2018), built
//!   from source with the crate's `highs` feature (cmake, a C++ compiler, libclang).
//!
//! Both are warm-started from the model's starting solution (a partial start is completed
//! by solving the model with the given variables fixed, as microlp does itself), stop at
//! a time or node limit, and answer with the best solution found (if any), whether it is
//! proven optimal, and the best lower bound proven on the objective. The models read the
//! answer the same way whichever backend gave it, so both give the same optimum where
//! both prove one.

#[cfg(feature = "highs")]
mod highs;
mod microlp;

use std::time::Duration;

/// Which backend solves the models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Solver {
    #[default]
    Microlp,
    Highs,
}

impl Solver {
    pub fn name(self) -> &'static str {
        match self {
            Solver::Microlp => "microlp",
            Solver::Highs => "highs",
        }
    }

    /// Whether this build has the backend (HiGHS only with the `highs` feature).
    pub fn available(self) -> bool {
        match self {
            Solver::Microlp => true,
            Solver::Highs => cfg!(feature = "highs"),
        }
    }
}

/// A variable of an [`Ilp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var(usize);

impl Var {
    pub fn index(self) -> usize {
        self.0
    }
}

/// How a row compares its terms with its right-hand side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Le,
    Eq,
}

#[derive(Clone, Copy, Debug)]
struct Column {
    cost: f64,
    integer: bool,
}

#[derive(Clone, Debug)]
struct Row {
    terms: Vec<(Var, f64)>,
    op: Op,
    rhs: f64,
}

/// A minimisation over 0-1 variables and fractions in `[0, 1]`.
#[derive(Clone, Debug, Default)]
pub struct Ilp {
    columns: Vec<Column>,
    rows: Vec<Row>,
}

/// What the solver may do.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub solver: Solver,
    pub time: Duration,
    /// Branch-and-bound nodes (`None`: only the time limit).
    pub nodes: Option<u64>,
}

/// The solver's answer.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The best solution's value of every variable; `None` when the limits stopped the
    /// search before any solution (the start included).
    pub values: Option<Vec<f64>>,
    /// The best solution is proven optimal.
    pub optimal: bool,
    /// The best lower bound proven on the objective, if any.
    pub bound: Option<f64>,
}

impl Outcome {
    /// Whether a 0-1 variable is set in the best solution (`false` without one).
    pub fn is_set(&self, x: Var) -> bool {
        self.values.as_ref().is_some_and(|v| v[x.0] > 0.5)
    }
}

/// Why the solver gave no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The model has no solution.
    Infeasible,
    /// The backend failed or is not in this build.
    Error(String),
}

impl Ilp {
    pub fn new() -> Ilp {
        Ilp::default()
    }

    /// A 0-1 variable with objective coefficient `cost`.
    pub fn binary(&mut self, cost: f64) -> Var {
        self.column(cost, true)
    }

    /// A variable in `[0, 1]` with objective coefficient `cost`.
    pub fn fraction(&mut self, cost: f64) -> Var {
        self.column(cost, false)
    }

    fn column(&mut self, cost: f64, integer: bool) -> Var {
        self.columns.push(Column { cost, integer });
        Var(self.columns.len() - 1)
    }

    /// `Σ terms op rhs`.
    pub fn constrain(&mut self, terms: impl IntoIterator<Item = (Var, f64)>, op: Op, rhs: f64) {
        self.rows.push(Row {
            terms: terms.into_iter().collect(),
            op,
            rhs,
        });
    }

    /// The objective's value at a full assignment of the variables.
    pub fn objective(&self, values: &[f64]) -> f64 {
        self.columns
            .iter()
            .zip(values)
            .map(|(c, v)| c.cost * v)
            .sum()
    }

    /// Minimises the objective within `settings`, starting from `start` (values of some
    /// or all variables; an infeasible start is ignored).
    pub fn solve(&self, settings: Settings, start: &[(Var, f64)]) -> Result<Outcome, Failure> {
        match settings.solver {
            Solver::Microlp => microlp::solve(self, settings, start),
            #[cfg(feature = "highs")]
            Solver::Highs => highs::solve(self, settings, start),
            #[cfg(not(feature = "highs"))]
            Solver::Highs => Err(Failure::Error(
                "this build has no HiGHS (build with `--features highs`)".to_string(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `min 3a + 2b + 1.5c` with `a + b ≥ 1` and `c ≥ b − a`: `a` alone costs 3, `b`
    /// with `c` 3.5 (the start `b = 1` completes to it), both 5.
    fn small() -> (Ilp, [Var; 3]) {
        let mut ilp = Ilp::new();
        let a = ilp.binary(3.0);
        let b = ilp.binary(2.0);
        let c = ilp.fraction(1.5);
        ilp.constrain([(a, -1.0), (b, -1.0)], Op::Le, -1.0);
        ilp.constrain([(b, 1.0), (a, -1.0), (c, -1.0)], Op::Le, 0.0);
        (ilp, [a, b, c])
    }

    fn settings(solver: Solver) -> Settings {
        Settings {
            solver,
            time: Duration::from_secs(10),
            nodes: None,
        }
    }

    #[test]
    fn microlp_proves_the_optimum_from_a_partial_start() {
        let (ilp, [a, _, _]) = small();
        let answer = ilp
            .solve(settings(Solver::Microlp), &[(a, 1.0)])
            .expect("solves");
        assert!(answer.optimal);
        assert!(answer.is_set(a));
        let values = answer.values.expect("a solution");
        assert!((ilp.objective(&values) - 3.0).abs() < 1e-6);
        assert!((answer.bound.expect("a bound") - 3.0).abs() < 1e-6);
    }

    #[test]
    fn an_infeasible_model_is_a_failure_of_its_own() {
        let mut ilp = Ilp::new();
        let a = ilp.binary(1.0);
        ilp.constrain([(a, 1.0)], Op::Eq, 2.0);
        let answer = ilp.solve(settings(Solver::Microlp), &[]);
        assert_eq!(answer.err(), Some(Failure::Infeasible));
    }

    #[cfg(feature = "highs")]
    #[test]
    fn highs_agrees_with_microlp() {
        let (ilp, [_, b, _]) = small();
        let by = |solver| {
            let answer = ilp.solve(settings(solver), &[(b, 1.0)]).expect("solves");
            assert!(answer.optimal);
            ilp.objective(&answer.values.expect("a solution"))
        };
        assert!((by(Solver::Highs) - by(Solver::Microlp)).abs() < 1e-6);
        let mut infeasible = Ilp::new();
        let a = infeasible.binary(1.0);
        infeasible.constrain([(a, 1.0)], Op::Eq, 2.0);
        let answer = infeasible.solve(settings(Solver::Highs), &[]);
        assert_eq!(answer.err(), Some(Failure::Infeasible));
    }

    #[cfg(not(feature = "highs"))]
    #[test]
    fn highs_is_refused_without_the_feature() {
        let (ilp, _) = small();
        assert!(!Solver::Highs.available());
        assert!(matches!(
            ilp.solve(settings(Solver::Highs), &[]),
            Err(Failure::Error(_))
        ));
    }
}
