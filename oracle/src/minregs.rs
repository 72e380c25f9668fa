//! The least registers of one class without spilling: the highest unit used plus one, what
//! a GPU's occupancy depends on.
//!
//! A 0-1 program over the assignment problem of [`crate::problem`] (one register per SSA
//! value for its whole life, copies only on phi edges and into constrained operands), in
//! the style of Goodwin & Wilken ("Optimal and near-optimal global register allocation
//! using 0-1 integer programming", SPE 1996) and Appel & George (PLDI 2001), with the
//! aligned register windows of Castañeda Lozano et al.'s Unison (TOPLAS 2019):
//!
//! - `x[g,r]` for each group `g` and each aligned first unit `r` it may take below the
//!   upper bound `K` (the registers of the starting solution); `Σ_r x[g,r] = 1`;
//! - `u[q]`, unit `q` used, monotone: `u[q] ≥ u[q+1]`; units below the model's floor
//!   (the most units one instant holds, and every fixed register) are constants 1;
//! - per instant and unit `q`: `Σ x[g,r] over the groups of the instant whose window
//!   covers q ≤ u[q]` — at most one value per unit, and a unit in use counts;
//! - minimise `Σ u[q]`, the registers used.
//!
//! Groups with a single candidate are constants, not variables. The solver (microlp or
//! HiGHS, [`crate::solver`]) is *anytime* like Koes & Goldstein's progressive allocator ("A
//! progressive register allocator for irregular architectures", CGO 2005): it is
//! warm-started from the starting solution ([`crate::start`]), stops at a time or node
//! limit, and returns the best assignment with the best bound. Without a solution of its
//! own in the limits the answer is the start, with the floor (or the solver's bound) as
//! the bound. The bound holds for allocations of this model; MaxLive, reported beside
//! it, bounds every allocator.

use crate::problem::{self, ClassProblem};
use crate::solver::{Failure, Ilp, Op, Settings, Solver, Var};
use crate::start::{self, Assignment};
use crate::windows;
use crate::OracleError;
use chromatic::program::{Function, Value};
use chromatic::target::{ClassId, Target};
use std::time::{Duration, Instant};

/// How far the solver may go on one class of one function.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub time: Duration,
    /// Branch-and-bound nodes (`None`: only the time limit).
    pub nodes: Option<u64>,
    pub solver: Solver,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(10),
            nodes: None,
            solver: Solver::Microlp,
        }
    }
}

impl Limits {
    pub fn settings(self) -> Settings {
        Settings {
            solver: self.solver,
            time: self.time,
            nodes: self.nodes,
        }
    }
}

/// Whether the answer is proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Optimal,
    /// A time or node limit stopped the proof: `regs` is the best found, `bound` the best
    /// proven.
    Limit,
}

/// The answer for one class of one function.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MinRegs {
    #[serde(skip)]
    pub class: ClassId,
    /// The most units live at one instant: no allocator uses fewer registers.
    pub max_live: u16,
    /// Registers of the best assignment.
    pub regs: u16,
    /// A proven lower bound for allocations of the model.
    pub bound: u16,
    pub status: Status,
    /// Registers of the starting solution.
    pub start: u16,
    /// Whether the allocation handed in as a hint keeps one register per value and so is
    /// a solution of the model (the answer is then never worse than it).
    pub hint_fits: bool,
    pub variables: usize,
    pub constraints: usize,
    pub seconds: f64,
    /// Per value of the function: its first register (values of other classes: `None`).
    #[serde(skip)]
    pub first: Vec<Option<u16>>,
}

/// The least registers of `class` in `f` within `cap` units; `hint` is another
/// allocator's allocation of `f` to start from.
pub fn min_regs(
    f: &Function,
    target: &Target,
    class: ClassId,
    cap: u16,
    hint: Option<&Function>,
    limits: Limits,
) -> Result<MinRegs, OracleError> {
    let clock = Instant::now();
    let p = fitting_problem(f, target, class, cap)?;
    solve_problem(&p, f, cap, hint, limits, clock.elapsed())
}

/// The class's problem, or the error that `class` needs spilling within `cap` units.
pub fn fitting_problem(
    f: &Function,
    target: &Target,
    class: ClassId,
    cap: u16,
) -> Result<ClassProblem, OracleError> {
    let p = problem::build(f, target, class)?;
    if p.max_live > cap.min(p.units) {
        return Err(OracleError::NeedsSpilling {
            class: target.class(class).name.clone(),
            max_live: p.max_live,
            budget: cap.min(p.units),
        });
    }
    Ok(p)
}

/// [`min_regs`] on a problem [`fitting_problem`] built in `built`.
pub fn solve_problem(
    p: &ClassProblem,
    f: &Function,
    cap: u16,
    hint: Option<&Function>,
    limits: Limits,
    built: Duration,
) -> Result<MinRegs, OracleError> {
    let clock = Instant::now();
    let class = p.class;
    let cap = cap.min(p.units);
    let (best_start, hint_fits) = starting_solution(p, f, hint, cap);
    let upper = best_start.as_ref().map_or(cap, |a| start::registers(p, a));
    let model = Model::new(p, upper);
    let best = match best_start {
        Some(a) if start::registers(p, &a) <= p.floor => (a, p.floor, Status::Optimal),
        start => {
            let solved = model.solve(start.as_deref(), limits)?;
            match start {
                Some(a) if start::registers(p, &a) < start::registers(p, &solved.assignment) => {
                    (a, solved.bound, Status::Limit)
                }
                _ => (solved.assignment, solved.bound, solved.status),
            }
        }
    };
    let (best, bound, status) = best;
    let regs = start::registers(p, &best);
    Ok(MinRegs {
        class,
        max_live: p.max_live,
        regs,
        bound: bound.min(regs),
        status,
        start: upper,
        hint_fits,
        variables: model.variables,
        constraints: model.constraints,
        seconds: (built + clock.elapsed()).as_secs_f64(),
        first: firsts(f, p, &best),
    })
}

/// The better of the allocator's assignment (where it is a solution of the model) and
/// first fit with and without the allocator's registers as wishes; whether the
/// allocator's assignment was a solution.
fn starting_solution(
    p: &ClassProblem,
    f: &Function,
    hint: Option<&Function>,
    cap: u16,
) -> (Option<Assignment>, bool) {
    let wishes = hint.map(|h| start::wishes(p, f, h));
    let from_hint = wishes
        .as_deref()
        .and_then(start::complete)
        .filter(|a| start::feasible(p, a, cap));
    let hint_fits = from_hint.is_some();
    let starts = [
        from_hint,
        start::greedy(p, cap, wishes.as_deref()),
        start::greedy(p, cap, None),
    ];
    let best = starts
        .into_iter()
        .flatten()
        .min_by_key(|a| start::registers(p, a));
    (best, hint_fits)
}

/// Per value, the first register of its group.
fn firsts(f: &Function, p: &ClassProblem, a: &Assignment) -> Vec<Option<u16>> {
    f.value_ids()
        .map(|v: Value| p.group_of[v.index()].map(|g| a[g]))
        .collect()
}

/// The solver's answer.
struct Solved {
    assignment: Assignment,
    bound: u16,
    status: Status,
}

struct Model<'p> {
    p: &'p ClassProblem,
    upper: u16,
    ilp: Ilp,
    /// Per group, (first unit, variable) of each candidate; a single candidate is `None`.
    x: windows::Candidates,
    /// Per unit from the floor up to the upper bound, `u[q]`.
    u: Vec<Var>,
    variables: usize,
    constraints: usize,
    /// A group has nowhere to go, or two fixed groups share a unit at one instant.
    infeasible: bool,
}

impl<'p> Model<'p> {
    fn new(p: &'p ClassProblem, upper: u16) -> Model<'p> {
        let mut m = Model {
            p,
            upper,
            ilp: Ilp::new(),
            x: Vec::new(),
            u: Vec::new(),
            variables: 0,
            constraints: 0,
            infeasible: false,
        };
        m.add_units();
        m.add_candidates();
        m.add_instants();
        m
    }

    fn add_units(&mut self) {
        for q in self.p.floor..self.upper {
            let u = self.ilp.binary(1.0);
            if let Some(&above) = self.u.last() {
                self.constrain(vec![(u, 1.0), (above, -1.0)], Op::Le, 0.0);
            }
            self.u.push(u);
            self.variables += 1;
            debug_assert_eq!(self.u.len(), usize::from(q - self.p.floor) + 1);
        }
    }

    fn add_candidates(&mut self) {
        let w = windows::add(self.p, self.upper, &mut self.ilp);
        self.x = w.x;
        self.variables += w.variables;
        self.constraints += w.constraints;
        self.infeasible |= w.empty;
    }

    /// Per instant and unit: the windows covering it, at most one, and only if used.
    fn add_instants(&mut self) {
        let instants: Vec<_> = windows::coverage(self.p, &self.x, self.upper).collect();
        for units in instants {
            for (q, (mut t, constant)) in units.into_iter().enumerate() {
                let used = self.unit(q as u16);
                if constant > 1.0 {
                    self.infeasible = true;
                }
                if t.is_empty() || (used.is_none() && t.len() + (constant as usize) < 2) {
                    continue;
                }
                let rhs = match used {
                    Some(u) => {
                        t.push((u, -1.0));
                        -constant
                    }
                    None => 1.0 - constant,
                };
                self.constrain(t, Op::Le, rhs);
            }
        }
    }

    /// `u[q]`, or `None` for a unit below the floor (used in every solution).
    fn unit(&self, q: u16) -> Option<Var> {
        q.checked_sub(self.p.floor).map(|i| self.u[usize::from(i)])
    }

    fn constrain(&mut self, terms: Vec<(Var, f64)>, op: Op, rhs: f64) {
        self.ilp.constrain(terms, op, rhs);
        self.constraints += 1;
    }

    /// The warm start as solver values: every variable of the model.
    fn hint(&self, a: &[u16]) -> Vec<(Var, f64)> {
        let used = start::registers(self.p, a);
        let units = self.u.iter().enumerate().map(|(i, &u)| {
            let q = self.p.floor + i as u16;
            (u, f64::from(u8::from(q < used)))
        });
        let xs = self.x.iter().zip(a).flat_map(|(cands, &first)| {
            cands
                .iter()
                .filter_map(move |&(r, x)| Some((x?, f64::from(u8::from(r == first)))))
        });
        units.chain(xs).collect()
    }

    fn solve(&self, start: Option<&[u16]>, limits: Limits) -> Result<Solved, OracleError> {
        if self.infeasible {
            return Err(OracleError::Infeasible);
        }
        let hint = start.map(|a| self.hint(a)).unwrap_or_default();
        let outcome = match self.ilp.solve(limits.settings(), &hint) {
            Ok(outcome) => outcome,
            Err(Failure::Infeasible) => return Err(OracleError::Infeasible),
            Err(Failure::Error(e)) => return Err(OracleError::Solver(e)),
        };
        let floor = f64::from(self.p.floor);
        let bound = outcome
            .bound
            .map_or(self.p.floor, |b| (b + floor - 1e-6).ceil() as u16);
        let assignment = match outcome.values {
            Some(_) => windows::chosen(&self.x, |x| outcome.is_set(x)),
            None => start.ok_or(OracleError::NoSolution)?.to_vec(),
        };
        let optimal = outcome.optimal;
        Ok(Solved {
            bound: if optimal {
                start::registers(self.p, &assignment)
            } else {
                bound
            },
            assignment,
            status: if optimal {
                Status::Optimal
            } else {
                Status::Limit
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scalar defined before a 2-aligned pair, both live: first fit in definition order
    /// puts the scalar in v0 and the pair in v[2:3] (4 registers); the optimum is MaxLive,
    /// 3, with the pair in v[0:1].
    const PAIR: &str = "target generic v=16:aligned
func @f {
entry:
  %a:v1 = mov 0
  %p:v2 = load.v2 reads
  store %a, %p writes
  ret
}";

    fn solve(text: &str, limits: Limits) -> MinRegs {
        let p = chromatic::parse(text).expect("parses");
        let v = p.target.class_by_name("v").expect("class v");
        min_regs(&p.functions[0], &p.target, v, 16, None, limits).expect("answers")
    }

    #[test]
    fn the_solver_improves_on_first_fit_and_proves_it() {
        let answer = solve(PAIR, Limits::default());
        assert_eq!(answer.start, 4);
        assert_eq!((answer.regs, answer.bound), (3, 3));
        assert_eq!(answer.status, Status::Optimal);
        let first = |name: &str| {
            let f = &chromatic::parse(PAIR).expect("parses").functions[0];
            let v = f
                .value_ids()
                .find(|&v| f.value(v).name == name)
                .expect("value");
            answer.first[v.index()]
        };
        assert_eq!((first("p"), first("a")), (Some(0), Some(2)));
    }

    /// Stopped before any branching, the answer is still an assignment (the start at
    /// worst) with a bound below it: anytime.
    #[test]
    fn a_node_limit_returns_the_best_found_and_the_bound() {
        let answer = solve(
            PAIR,
            Limits {
                nodes: Some(0),
                ..Limits::default()
            },
        );
        assert!(answer.bound <= answer.regs && answer.regs <= answer.start);
        assert_eq!(answer.max_live, 3);
    }

    #[test]
    fn below_max_live_is_reported_as_needing_spills() {
        let p = chromatic::parse(PAIR).expect("parses");
        let v = p.target.class_by_name("v").expect("class v");
        let answer = min_regs(&p.functions[0], &p.target, v, 2, None, Limits::default());
        assert!(matches!(
            answer,
            Err(OracleError::NeedsSpilling {
                max_live: 3,
                budget: 2,
                ..
            })
        ));
    }
}
