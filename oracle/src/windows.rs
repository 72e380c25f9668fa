//! The placement variables of the assignment models ([`minregs`](crate::minregs),
//! [`copies`](crate::copies)): `x[g,r]`, one 0-1 variable per aligned window a group may
//! take below an upper bound — a constant when there is one window only — with exactly one
//! chosen per group; and per instant, the windows that cover each unit, on which the
//! models state their own capacity rows.

use crate::problem::ClassProblem;
use crate::solver::{Ilp, Op, Var};
use crate::start::Assignment;

/// Per group, (first unit, variable) of each window; a single window is `None` (always
/// taken).
pub type Candidates = Vec<Vec<(u16, Option<Var>)>>;

/// The windows of every group, added to `ilp`.
#[derive(Debug, Default)]
pub struct Windows {
    pub x: Candidates,
    pub variables: usize,
    pub constraints: usize,
    /// Some group has no window below the upper bound.
    pub empty: bool,
}

/// The window each group takes in a solution (`set` tells which variables are 1).
pub fn chosen(x: &Candidates, set: impl Fn(Var) -> bool) -> Assignment {
    x.iter()
        .map(|cands| {
            cands
                .iter()
                .find(|&&(_, x)| x.is_none_or(&set))
                .map_or(0, |&(r, _)| r)
        })
        .collect()
}

/// Adds `x[g,r]` for every group of `p` and window below `upper`, and `Σ_r x[g,r] = 1`.
pub fn add(p: &ClassProblem, upper: u16, ilp: &mut Ilp) -> Windows {
    let mut w = Windows::default();
    for g in &p.groups {
        let firsts: Vec<u16> = (0..=upper.saturating_sub(g.size))
            .filter(|&r| r + g.size <= upper && g.allows(r))
            .collect();
        w.empty |= firsts.is_empty();
        let vars: Vec<(u16, Option<Var>)> = if firsts.len() == 1 {
            vec![(firsts[0], None)]
        } else {
            firsts.iter().map(|&r| (r, Some(ilp.binary(0.0)))).collect()
        };
        if vars.len() > 1 {
            w.variables += vars.len();
            let one: Vec<(Var, f64)> = vars.iter().filter_map(|&(_, x)| Some((x?, 1.0))).collect();
            ilp.constrain(one, Op::Eq, 1.0);
            w.constraints += 1;
        }
        w.x.push(vars);
    }
    w
}

/// Per instant of `p`: for each unit below `upper`, the window variables covering it and
/// how many always-taken windows do.
pub fn coverage<'a>(
    p: &'a ClassProblem,
    x: &'a Candidates,
    upper: u16,
) -> impl Iterator<Item = Vec<(Vec<(Var, f64)>, f64)>> + 'a {
    let width = usize::from(upper);
    p.instants.iter().map(move |set| {
        let mut units: Vec<(Vec<(Var, f64)>, f64)> = vec![(Vec::new(), 0.0); width];
        for &g in set {
            let size = p.groups[g].size;
            for &(r, var) in &x[g] {
                for unit in &mut units[usize::from(r)..usize::from(r + size)] {
                    match var {
                        Some(var) => unit.0.push((var, 1.0)),
                        None => unit.1 += 1.0,
                    }
                }
            }
        }
        units
    })
}
