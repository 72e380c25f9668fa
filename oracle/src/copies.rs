//! The least frequency-weighted copies of a function at a budget, without spilling:
//! optimal coalescing over the assignment problem of [`crate::problem`] (one register
//! per SSA value), the third model of Goodwin & Wilken's 0-1 allocator ("Optimal and
//! near-optimal global register allocation using 0-1 integer programming", SPE 1996)
//! with the affinity penalty of Grund & Hack's optimal coalescing ("A fast cutting-plane
//! algorithm for optimal coalescing", CC 2007): `y ≥ x[a,r] − x[b,r]` for every window
//! `r` of two groups a copy joins.
//!
//! The copies the decoding ([`crate::decode`]) writes are exactly these:
//!
//! - a phi argument in another register than its phi: one move on the edge, at the end of
//!   the predecessor (edges into phis from a block with several successors are split
//!   first, `alloc::prepare::split`, so every such predecessor ends in a jump);
//! - a fixed use whose value sits elsewhere: one move before the instruction; a fixed
//!   definition (its own, or its tied operand's) whose value lives elsewhere: one after;
//! - an operand tied to a definition while it lives on: one move, whatever the
//!   assignment (a constant of the objective).
//!
//! Each move costs the frequency of its block (the statistics' `weighted_copies`). The
//! windows are those below the registers of the starting solution (the allocator's
//! assignment where it is one of the model, else first fit), capped by the budget: the
//! answer is the least copies among assignments that use no more registers than the
//! start, so coalescing never costs occupancy. Warm-started from the start, time and node
//! limits as for [`crate::minregs`].

use crate::decode::decode;
use crate::minregs::{Limits, Status};
use crate::problem::{self, ClassProblem};
use crate::solver::{Failure, Ilp, Op, Var};
use crate::start::{self, Assignment};
use crate::windows;
use crate::OracleError;
use chromatic::alloc::prepare;
use chromatic::analysis::{cfg::Graph, dom::DomTree, loops};
use chromatic::program::{Function, Location, Terminator, Use, Value};
use chromatic::target::{ClassId, Target};
use std::time::Instant;

/// The answer for one class.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ClassCopies {
    #[serde(skip)]
    pub class: ClassId,
    /// Frequency-weighted copies of the best assignment.
    pub cost: f64,
    pub bound: f64,
    pub status: Status,
    /// Registers the windows stay below.
    pub registers: u16,
    pub variables: usize,
    pub constraints: usize,
    pub seconds: f64,
}

/// Every class of a function, and the function allocated with the best assignments.
#[derive(Clone, Debug)]
pub struct Copies {
    pub classes: Vec<ClassCopies>,
    pub function: Function,
}

/// The least copies of every class of `f` within `budget`, starting from `hint` (another
/// allocator's allocation of `f`) where it fits the model.
pub fn min_copies(
    f: &Function,
    target: &Target,
    budget: &[u16],
    hint: Option<&Function>,
    limits: Limits,
) -> Result<Copies, OracleError> {
    let (g, added) = prepare::split(f);
    let freq = frequencies(&g);
    let mut first: Vec<Option<u16>> = vec![None; g.values.len()];
    let mut classes = Vec::new();
    for c in target.class_ids() {
        if !g.values.iter().any(|v| v.class == c) {
            continue;
        }
        let clock = Instant::now();
        let p = problem::build(&g, target, c)?;
        let cap = budget
            .get(c.index())
            .copied()
            .unwrap_or(target.class(c).units)
            .min(p.units);
        if p.max_live > cap {
            return Err(OracleError::NeedsSpilling {
                class: target.class(c).name.clone(),
                max_live: p.max_live,
                budget: cap,
            });
        }
        let start = starting(&p, &g, hint, cap).ok_or(OracleError::Infeasible)?;
        let sites = sites(&g, &p, c, &freq);
        let model = Model::new(&p, &sites, start::registers(&p, &start));
        let (assignment, mut answer) = model.solve(&start, limits)?;
        answer.class = c;
        answer.seconds = clock.elapsed().as_secs_f64();
        for v in g.value_ids() {
            if let Some(group) = p.group_of[v.index()] {
                first[v.index()] = Some(assignment[group]);
            }
        }
        classes.push(answer);
    }
    let mut function = decode(&g, &first)?;
    prepare::drop_empty(&mut function, &added);
    Ok(Copies { classes, function })
}

fn frequencies(f: &Function) -> Vec<f64> {
    let cfg = Graph::of_function(f);
    loops::frequencies(f, &loops::Loops::new(&cfg, &DomTree::new(&cfg)))
}

/// The better of the hint's assignment (where it is one of the model) and first fit.
fn starting(
    p: &ClassProblem,
    f: &Function,
    hint: Option<&Function>,
    cap: u16,
) -> Option<Assignment> {
    let wishes = hint.map(|h| start::wishes(p, f, h));
    let from_hint = wishes
        .as_deref()
        .and_then(start::complete)
        .filter(|a| start::feasible(p, a, cap));
    [
        from_hint,
        start::greedy(p, cap, wishes.as_deref()),
        start::greedy(p, cap, None),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|a| start::registers(p, a))
}

/// What makes a copy: two groups apart, or a group off a fixed register; or nothing
/// (a copy whatever the assignment).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pair {
    Groups(usize, usize),
    Fixed(usize, u16),
    Always,
}

#[derive(Clone, Copy, Debug)]
struct Site {
    pair: Pair,
    freq: f64,
}

/// The copy sites of class `c` in `f`.
fn sites(f: &Function, p: &ClassProblem, c: ClassId, freq: &[f64]) -> Vec<Site> {
    let group = |v: Value| p.group_of[v.index()];
    let fixed_first = |loc: Option<Location>| match loc? {
        Location::Reg { class, first, .. } if class == c => Some(first),
        _ => None,
    };
    let mut sites = Vec::new();
    for b in f.block_ids() {
        let fb = freq[b.index()];
        for phi in &f.block(b).phis {
            let Some(gp) = group(phi.def.value) else {
                continue;
            };
            for a in &phi.args {
                if let Some(ga) = group(a.value).filter(|&ga| ga != gp) {
                    sites.push(Site {
                        pair: Pair::Groups(gp, ga),
                        freq: freq[a.block.index()],
                    });
                }
            }
        }
        for op in f.block(b).insts.iter().filter_map(|i| i.op()) {
            let mut before: Vec<Pair> = Vec::new();
            for (k, u) in op.operands.iter().enumerate() {
                let Some(u) = u.as_use() else { continue };
                let Some(gu) = group(u.value) else { continue };
                let tied = op.defs.iter().find(|d| d.tied == Some(k as u16));
                let pair = match (fixed_first(u.fixed), tied) {
                    (Some(r), _) => Some(Pair::Fixed(gu, r)),
                    (None, Some(d)) => {
                        let written = fixed_first(d.fixed);
                        match (written, group(d.value)) {
                            (Some(r), _) => Some(Pair::Fixed(gu, r)),
                            (None, Some(gd)) if gd != gu => Some(Pair::Always),
                            _ => None,
                        }
                    }
                    (None, None) => None,
                };
                if let Some(pair) = pair.filter(|x| *x == Pair::Always || !before.contains(x)) {
                    before.push(pair);
                }
            }
            for d in &op.defs {
                let Some(gd) = group(d.value) else { continue };
                let tied_fixed = d
                    .tied
                    .and_then(|t| op.operands.get(usize::from(t))?.as_use()?.fixed);
                if let Some(r) = fixed_first(d.fixed.or(tied_fixed)) {
                    before.push(Pair::Fixed(gd, r));
                }
            }
            sites.extend(before.into_iter().map(|pair| Site { pair, freq: fb }));
        }
        sites.extend(terminator_sites(&f.block(b).term, &group, &fixed_first, fb));
    }
    sites
}

fn terminator_sites(
    term: &Terminator,
    group: &dyn Fn(Value) -> Option<usize>,
    fixed_first: &dyn Fn(Option<Location>) -> Option<u16>,
    freq: f64,
) -> Vec<Site> {
    let mut pairs: Vec<Pair> = Vec::new();
    for u in term.uses().iter() {
        let u: &Use = u;
        if let (Some(g), Some(r)) = (group(u.value), fixed_first(u.fixed)) {
            if !pairs.contains(&Pair::Fixed(g, r)) {
                pairs.push(Pair::Fixed(g, r));
            }
        }
    }
    pairs.into_iter().map(|pair| Site { pair, freq }).collect()
}

struct Model<'p> {
    p: &'p ClassProblem,
    sites: &'p [Site],
    upper: u16,
    ilp: Ilp,
    /// Per group, (first unit, variable) of each candidate; a single candidate is `None`.
    x: windows::Candidates,
    /// Per site, its variable (`None` for a copy whatever the assignment).
    y: Vec<Option<Var>>,
    constant: f64,
    variables: usize,
    constraints: usize,
}

impl<'p> Model<'p> {
    fn new(p: &'p ClassProblem, sites: &'p [Site], upper: u16) -> Model<'p> {
        let mut m = Model {
            p,
            sites,
            upper,
            ilp: Ilp::new(),
            x: Vec::new(),
            y: Vec::new(),
            constant: 0.0,
            variables: 0,
            constraints: 0,
        };
        m.add_candidates();
        m.add_instants();
        m.add_sites();
        m
    }

    fn constrain(&mut self, terms: Vec<(Var, f64)>, op: Op, rhs: f64) {
        self.ilp.constrain(terms, op, rhs);
        self.constraints += 1;
    }

    fn add_candidates(&mut self) {
        let w = windows::add(self.p, self.upper, &mut self.ilp);
        self.x = w.x;
        self.variables += w.variables;
        self.constraints += w.constraints;
    }

    /// Per instant and unit: at most one window covers it.
    fn add_instants(&mut self) {
        let instants: Vec<_> = windows::coverage(self.p, &self.x, self.upper).collect();
        for units in instants {
            for (t, constant) in units {
                if t.len() + (constant as usize) >= 2 && !t.is_empty() {
                    self.constrain(t, Op::Le, 1.0 - constant);
                }
            }
        }
    }

    /// `x[g,r]` as (variable or constant).
    fn at(&self, g: usize, r: u16) -> (Option<Var>, f64) {
        match self.x[g].iter().find(|&&(first, _)| first == r) {
            Some(&(_, Some(x))) => (Some(x), 0.0),
            Some(&(_, None)) => (None, 1.0),
            None => (None, 0.0),
        }
    }

    fn add_sites(&mut self) {
        for site in self.sites {
            let y = match site.pair {
                Pair::Always => {
                    self.constant += site.freq;
                    None
                }
                Pair::Groups(a, b) => {
                    let y = self.ilp.fraction(site.freq);
                    for r in self.x[a].iter().map(|&(r, _)| r).collect::<Vec<_>>() {
                        self.differ(y, (a, r), (b, r));
                    }
                    Some(y)
                }
                Pair::Fixed(g, r) => {
                    let y = self.ilp.fraction(site.freq);
                    let (x, c) = self.at(g, r);
                    let mut terms = vec![(y, -1.0)];
                    if let Some(x) = x {
                        terms.push((x, -1.0));
                    }
                    self.constrain(terms, Op::Le, c - 1.0);
                    Some(y)
                }
            };
            self.variables += usize::from(y.is_some());
            self.y.push(y);
        }
    }

    /// `x[a] − x[b] ≤ y` at one window.
    fn differ(&mut self, y: Var, a: (usize, u16), b: (usize, u16)) {
        let (xa, ca) = self.at(a.0, a.1);
        let (xb, cb) = self.at(b.0, b.1);
        let mut terms = vec![(y, -1.0)];
        if let Some(x) = xa {
            terms.push((x, 1.0));
        }
        if let Some(x) = xb {
            terms.push((x, -1.0));
        }
        if terms.len() > 1 {
            self.constrain(terms, Op::Le, cb - ca);
        }
    }

    /// Whether a site makes a copy under an assignment.
    fn copies(site: &Site, a: &[u16]) -> bool {
        match site.pair {
            Pair::Always => true,
            Pair::Groups(x, y) => a[x] != a[y],
            Pair::Fixed(g, r) => a[g] != r,
        }
    }

    /// The cost of an assignment.
    fn cost(&self, a: &[u16]) -> f64 {
        let copies = self.sites.iter().filter(|s| Self::copies(s, a));
        copies.map(|s| s.freq).sum()
    }

    /// The warm start: every variable of the model at the assignment `a`.
    fn hint(&self, a: &[u16]) -> Vec<(Var, f64)> {
        let xs = self.x.iter().zip(a).flat_map(|(cands, &first)| {
            cands
                .iter()
                .filter_map(move |&(r, x)| Some((x?, f64::from(u8::from(r == first)))))
        });
        let ys = self
            .sites
            .iter()
            .zip(&self.y)
            .filter_map(|(site, &y)| Some((y?, f64::from(u8::from(Self::copies(site, a))))));
        xs.chain(ys).collect()
    }

    fn solve(
        &self,
        start: &Assignment,
        limits: Limits,
    ) -> Result<(Assignment, ClassCopies), OracleError> {
        let outcome = match self.ilp.solve(limits.settings(), &self.hint(start)) {
            Ok(outcome) => outcome,
            Err(Failure::Infeasible) => return Err(OracleError::Infeasible),
            Err(Failure::Error(e)) => return Err(OracleError::Solver(e)),
        };
        let assignment = match outcome.values {
            Some(_) => windows::chosen(&self.x, |x| outcome.is_set(x)),
            None => start.clone(),
        };
        let optimal = outcome.optimal;
        let bound = outcome.bound.unwrap_or(0.0);
        let best = if self.cost(start) < self.cost(&assignment) {
            start.clone()
        } else {
            assignment
        };
        let cost = self.cost(&best);
        let bound = (bound + self.constant).min(cost);
        Ok((
            best,
            ClassCopies {
                class: self.p.class,
                cost,
                bound,
                status: if optimal && cost <= bound + 1e-6 {
                    Status::Optimal
                } else {
                    Status::Limit
                },
                registers: self.upper,
                variables: self.variables,
                constraints: self.constraints,
                seconds: 0.0,
            },
        ))
    }
}
