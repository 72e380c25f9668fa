//! Where each value of one class is, at every program point, at a budget: in a register or
//! not, with its stored copy valid or not — the 0-1 program of Appel & George ("Optimal
//! spilling for CISC machines with few registers", PLDI 2001) over the SSA function, with
//! stores anywhere the value is in a register (Colombet, Brandner & Darte, "Studying
//! optimal spilling in the light of SSA", TACO 2011, for where stores may go).
//!
//! Per value `v` live at point `p` ([`crate::points`]):
//!
//! - `in[v,p]` (0-1; the constant 1 where `v` is an operand, a definition, a phi argument
//!   at the end of an edge, or pinned): `v` is in a register;
//! - `m[v,p]` (0 ≤ m ≤ 1): `v`'s spill location holds it; `s[v,p]` (0-1) stores it there
//!   from its register (`s ≤ in`, `m[p] ≤ m[p−1] + s[p]`; a definition's location holds
//!   nothing before a store). Stores are placed at a value's definition and at block
//!   entries only, which loses nothing: within a block every point costs the same, a
//!   store later in a stretch in a register may move to its start, and a store after a
//!   reload is useless (the location already holds the value); a live value out of its register has its location valid
//!   (`in + m ≥ 1`: it comes back only by a reload, and no store happens while it is
//!   out), redundant for 0-1 solutions but what makes the relaxation tight;
//! - `r[v,p]` (0 ≤ r ≤ 1) before an instruction or at a block's entry: a reload from the
//!   location (`r[p] ≤ m[p−1]`), or a recomputation for a rematerialisable value;
//!   `in[p] ≤ in[p−1] + r[p]`: a value comes back into a register only by one;
//! - block entries: a live-in in a register was in one at the end of every predecessor in
//!   the class's flow or is reloaded at the entry (`r ≤ m` at the end of every
//!   predecessor), and its location holds it only where it did at the end of every
//!   predecessor or it is stored at the entry;
//! - a phi is a register phi (`in[phi,entry]` from its copies) or a *memory phi* (`mp`):
//!   its location is written on every incoming edge by a store of the argument from its
//!   register, paid at the edge's frequency — or, for an argument that may share the
//!   phi's location ([`crate::points::Share`]: never live with the phi or the phi's other
//!   such arguments, argument of no other phi), by the argument's own store into that
//!   location (`z ≤ mp`, `m[arg] ≥ z` at the edge): an arrival the spill code pays for,
//!   never a free one;
//! - at every point the units in registers, plus definitions that take registers without
//!   being live across the point and copies of tied operands that live on, fit the budget.
//!
//! The objective is the frequency-weighted cost of stores, reloads and recomputations at
//! the target's per-unit costs for the spill destination chosen. Every solution is a
//! residency that [`crate::rewrite`] turns into a program and [`crate::allocation`]
//! assigns registers. The solver ([`crate::solver`]) is warm-started from the residency that
//! keeps in registers only what must be there (stored at each definition, reloaded before
//! each use), which is the answer when the limits stop the search before a solution of
//! its own; time and node limits make it anytime.

use crate::flow::Flow;
use crate::minregs::Status;
use crate::points::{Kind, Point, Share};
use crate::solver::{Failure, Ilp, Op, Settings, Solver, Var};
use crate::OracleError;
use chromatic::program::{Block, Function, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The per-unit cost of a store, a reload and a recomputation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitCosts {
    pub store: f64,
    pub reload: f64,
    pub remat: f64,
}

/// How far the solver may go, and the largest model it takes on.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub time: Duration,
    pub nodes: Option<u64>,
    /// Refuse models with more variables than this (`OracleError::TooLarge`).
    pub max_variables: usize,
    pub solver: Solver,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(10),
            nodes: None,
            max_variables: 20_000,
            solver: Solver::Microlp,
        }
    }
}

/// The input of the model: one class of one function, at a budget.
#[derive(Debug)]
pub struct Input<'a> {
    pub f: &'a Function,
    pub points: &'a [Vec<Point>],
    pub flow: &'a Flow,
    pub shares: &'a [Share],
    pub freq: &'a [f64],
    pub costs: UnitCosts,
    pub budget: u32,
    /// Whether a phi may live in its spill location (memory slots and lanes may hold a
    /// phi, another class's register may not: `docs/FORMAT.md`).
    pub memory_phis: bool,
}

/// The residency of the best solution, with the solver's bound.
#[derive(Clone, Debug)]
pub struct Residency {
    /// Per block and point, the values in a register there, sorted.
    pub resident: Vec<Vec<Vec<Value>>>,
    /// (block, point, value): a store from the register at that point.
    pub stores: Vec<(Block, usize, Value)>,
    /// (block, point, value): a reload (or recomputation) into a register at that point.
    pub reloads: Vec<(Block, usize, Value)>,
    /// Phis whose location is their spill location.
    pub memory_phis: Vec<Value>,
    /// Arguments that reach their memory phi in its location, stored there (no edge store).
    pub shared: Vec<Share>,
    /// The frequency-weighted cost of the spill code above.
    pub cost: f64,
    /// A proven lower bound on the cost of every solution of the model.
    pub bound: f64,
    pub status: Status,
    pub variables: usize,
    pub constraints: usize,
}

type Key = (usize, usize, Value);

/// The least-cost residency of the class at the budget.
pub fn solve(input: &Input, limits: Limits) -> Result<Residency, OracleError> {
    let mut m = Model::new(input);
    m.add_variables()?;
    if m.variables > limits.max_variables {
        return Err(OracleError::TooLarge {
            variables: m.variables,
            limit: limits.max_variables,
        });
    }
    m.add_transitions();
    m.add_entries();
    m.add_anchors();
    m.solve(limits)
}

/// A state in a constraint: a variable, or the constant 1.
#[derive(Clone, Copy)]
enum Term {
    Var(Var),
    One,
}

struct Model<'a> {
    input: &'a Input<'a>,
    remat: Vec<bool>,
    pinned: Vec<bool>,
    ilp: Ilp,
    in_reg: BTreeMap<Key, Var>,
    mem: BTreeMap<Key, Var>,
    store: BTreeMap<Key, Var>,
    reload: BTreeMap<Key, Var>,
    memory_phi: BTreeMap<Value, Var>,
    share: Vec<(Share, Var)>,
    variables: usize,
    constraints: usize,
}

impl<'a> Model<'a> {
    fn new(input: &'a Input<'a>) -> Model<'a> {
        let f = input.f;
        let mut pinned = vec![false; f.values.len()];
        f.pinned_values()
            .iter()
            .for_each(|v| pinned[v.index()] = true);
        Model {
            input,
            remat: rematerialisable(f),
            pinned,
            ilp: Ilp::new(),
            in_reg: BTreeMap::new(),
            mem: BTreeMap::new(),
            store: BTreeMap::new(),
            reload: BTreeMap::new(),
            memory_phi: BTreeMap::new(),
            share: Vec::new(),
            variables: 0,
            constraints: 0,
        }
    }

    fn units(&self, v: Value) -> f64 {
        f64::from(self.input.f.value(v).size)
    }

    /// Stored and reloaded through a spill location (not recomputed, not pinned).
    fn stored(&self, v: Value) -> bool {
        !self.remat[v.index()] && !self.pinned[v.index()]
    }

    fn is_phi(&self, b: usize, v: Value) -> bool {
        self.input.f.blocks[b].phis.iter().any(|p| p.def.value == v)
    }

    fn binary(&mut self, cost: f64) -> Var {
        self.variables += 1;
        self.ilp.binary(cost)
    }

    fn fraction(&mut self, cost: f64) -> Var {
        self.variables += 1;
        self.ilp.fraction(cost)
    }

    fn state(&self, key: Key) -> Term {
        self.in_reg.get(&key).map_or(Term::One, |&x| Term::Var(x))
    }

    /// `Σ coefficient × term ≤ rhs`, constants moved to the right, a variable named twice
    /// (an operand tied to two definitions) summed.
    fn at_most(&mut self, terms: &[(Term, f64)], rhs: f64) {
        let mut vars = Vec::new();
        let mut rhs = rhs;
        for &(t, c) in terms {
            match t {
                Term::Var(x) => match vars.iter_mut().find(|(y, _)| *y == x) {
                    Some((_, sum)) => *sum += c,
                    None => vars.push((x, c)),
                },
                Term::One => rhs -= c,
            }
        }
        if vars.is_empty() {
            return;
        }
        self.ilp.constrain(vars, Op::Le, rhs);
        self.constraints += 1;
    }

    fn add_variables(&mut self) -> Result<(), OracleError> {
        let input = self.input;
        for (b, block) in input.points.iter().enumerate() {
            let freq = input.freq[b];
            for (j, point) in block.iter().enumerate() {
                for &v in &point.live {
                    self.add_value_at(b, j, point, v, freq);
                }
            }
        }
        for (b, block) in input.points.iter().enumerate() {
            for (j, point) in block.iter().enumerate() {
                self.add_capacity(b, j, point)?;
            }
        }
        Ok(())
    }

    fn add_value_at(&mut self, b: usize, j: usize, point: &Point, v: Value, freq: f64) {
        let key = (b, j, v);
        let forced = point.forced.contains(&v) || self.pinned[v.index()];
        if !forced {
            let x = self.binary(0.0);
            self.in_reg.insert(key, x);
        }
        if self.stored(v) {
            let m = self.fraction(0.0);
            self.mem.insert(key, m);
            self.at_most(&[(Term::Var(m), -1.0), (self.state(key), -1.0)], -1.0);
            let defined = j > 0 && !self.input.points[b][j - 1].live.contains(&v);
            if j == 0 || defined {
                let cost = self.input.costs.store * self.units(v) * freq;
                let s = self.binary(cost);
                self.store.insert(key, s);
                self.at_most(&[(Term::Var(s), 1.0), (self.state(key), -1.0)], 0.0);
            }
        }
        if !self.pinned[v.index()] && self.may_reload(b, j, point, v) {
            let unit = if self.remat[v.index()] {
                self.input.costs.remat
            } else {
                self.input.costs.reload
            };
            let r = self.fraction(unit * self.units(v) * freq);
            self.reload.insert(key, r);
        }
    }

    /// Reloads go before an instruction (of a value live before the previous point) and at
    /// a block's entry (a live-in with a predecessor, or a phi).
    fn may_reload(&self, b: usize, j: usize, point: &Point, v: Value) -> bool {
        match point.kind {
            Kind::Before => j > 0 && self.input.points[b][j - 1].live.contains(&v),
            Kind::Entry => self.is_phi(b, v) || !self.input.flow.preds[b].is_empty(),
            Kind::After => false,
        }
    }

    fn add_capacity(&mut self, b: usize, j: usize, point: &Point) -> Result<(), OracleError> {
        let f = self.input.f;
        let budget = self.input.budget;
        let forced: u32 = point
            .live
            .iter()
            .filter(|&&v| matches!(self.state((b, j, v)), Term::One))
            .map(|&v| u32::from(f.value(v).size))
            .sum();
        if forced + point.extra > budget {
            return Err(OracleError::BelowLowest {
                block: f.blocks[b].name.clone(),
                needed: forced + point.extra,
                budget,
            });
        }
        let mut terms: Vec<(Term, f64)> = point
            .live
            .iter()
            .map(|&v| (self.state((b, j, v)), self.units(v)))
            .collect();
        for &(operand, units) in &point.tied {
            terms.push((self.state((b, j + 1, operand)), f64::from(units)));
        }
        self.at_most(&terms, f64::from(budget) - f64::from(point.extra));
        Ok(())
    }

    /// From one point to the next in a block.
    fn add_transitions(&mut self) {
        let input = self.input;
        for (b, block) in input.points.iter().enumerate() {
            for j in 1..block.len() {
                for &v in &block[j].live {
                    if block[j - 1].live.contains(&v) {
                        self.carry(b, j, v, &[(b, j - 1)]);
                    } else if let (Some(&m), Some(&s)) =
                        (self.mem.get(&(b, j, v)), self.store.get(&(b, j, v)))
                    {
                        self.at_most(&[(Term::Var(m), 1.0), (Term::Var(s), -1.0)], 0.0);
                    }
                }
            }
        }
    }

    /// `v` at point `j` of block `b` from each of `from` (points that precede it): in a
    /// register only if it was or is reloaded here; reloaded only from a valid location;
    /// its location valid only if it was or is stored here.
    fn carry(&mut self, b: usize, j: usize, v: Value, from: &[(usize, usize)]) {
        let key = (b, j, v);
        let now = self.state(key);
        let reload = self.reload.get(&key).copied();
        for &(pb, pj) in from {
            let before = self.state((pb, pj, v));
            let mut terms = vec![(now, 1.0), (before, -1.0)];
            if let Some(r) = reload {
                terms.push((Term::Var(r), -1.0));
            }
            self.at_most(&terms, 0.0);
            let Some(&m_before) = self.mem.get(&(pb, pj, v)) else {
                continue;
            };
            if let Some(r) = reload {
                self.at_most(&[(Term::Var(r), 1.0), (Term::Var(m_before), -1.0)], 0.0);
            }
            if let Some(&m) = self.mem.get(&key) {
                let mut terms = vec![(Term::Var(m), 1.0), (Term::Var(m_before), -1.0)];
                if let Some(&s) = self.store.get(&key) {
                    terms.push((Term::Var(s), -1.0));
                }
                self.at_most(&terms, 0.0);
            }
        }
    }

    /// Block entries: live-ins from the ends of the predecessors, phis from their edges.
    fn add_entries(&mut self) {
        let input = self.input;
        for (b, block) in input.points.iter().enumerate() {
            let Some(entry) = block.first() else {
                continue;
            };
            for &v in &entry.live {
                if self.is_phi(b, v) {
                    self.add_phi(b, v);
                    continue;
                }
                let from: Vec<(usize, usize)> = self.predecessor_ends(b, v);
                if from.is_empty() {
                    self.not_stored_before(b, 0, v);
                } else {
                    self.carry(b, 0, v, &from);
                }
            }
        }
    }

    /// Skip paths of divergent branches ([`Flow::anchors`]): a value in a register at the
    /// entry of X and at the end of every flow predecessor of X (not reloaded there) was
    /// in one at the end of B and at every point between, so that one definition reaches
    /// X on every path. With `K = in[X] + Σ in[pred end] − n` (1 exactly when all are):
    /// `in[p] ≥ K` at each such point p.
    fn add_anchors(&mut self) {
        let input = self.input;
        for &(branch, x) in &input.flow.anchors {
            let (b, x) = (branch.index(), x.index());
            let Some(entry) = input.points[x].first() else {
                continue;
            };
            let between = input.flow.between(branch, Block(x as u32));
            let last = input.points[b].len() - 1;
            for &v in &entry.live {
                if self.is_phi(x, v) || !input.points[b][last].live.contains(&v) {
                    continue;
                }
                let ends = self.predecessor_ends(x, v);
                let mut kept: Vec<(Term, f64)> = ends
                    .iter()
                    .map(|&(pb, pj)| (self.state((pb, pj, v)), 1.0))
                    .collect();
                kept.push((self.state((x, 0, v)), 1.0));
                let along = between.iter().flat_map(|blk| {
                    let blk = blk.index();
                    (0..input.points[blk].len()).map(move |j| (blk, j))
                });
                let points: Vec<(usize, usize)> = std::iter::once((b, last))
                    .chain(along)
                    .filter(|&(pb, pj)| input.points[pb][pj].live.contains(&v))
                    .collect();
                for p in points {
                    let mut terms = kept.clone();
                    terms.push((self.state((p.0, p.1, v)), -1.0));
                    self.at_most(&terms, ends.len() as f64);
                }
            }
        }
    }

    /// The last points of the flow predecessors of `b` where `v` is live.
    fn predecessor_ends(&self, b: usize, v: Value) -> Vec<(usize, usize)> {
        let mut ends: Vec<(usize, usize)> = Vec::new();
        for e in &self.input.flow.preds[b] {
            let p = e.from.index();
            let last = self.input.points[p].len() - 1;
            if self.input.points[p][last].live.contains(&v) && !ends.contains(&(p, last)) {
                ends.push((p, last));
            }
        }
        ends
    }

    /// The location holds nothing before the first store.
    fn not_stored_before(&mut self, b: usize, j: usize, v: Value) {
        if let Some(&m) = self.mem.get(&(b, j, v)) {
            let mut terms = vec![(Term::Var(m), 1.0)];
            if let Some(&s) = self.store.get(&(b, j, v)) {
                terms.push((Term::Var(s), -1.0));
            }
            self.at_most(&terms, 0.0);
        }
        if let Some(&r) = self.reload.get(&(b, j, v)) {
            self.at_most(&[(Term::Var(r), 1.0)], 0.0);
        }
    }

    /// A register phi is in a register at entry (or a memory phi reloaded there); a memory
    /// phi's location holds it at entry, paid by a store on every incoming edge.
    fn add_phi(&mut self, b: usize, phi: Value) {
        let key = (b, 0, phi);
        if self.pinned[phi.index()] {
            return;
        }
        if !self.input.memory_phis {
            self.at_most(&[(self.state(key), -1.0)], -1.0);
            self.not_stored_before(b, 0, phi);
            return;
        }
        let f = self.input.f;
        let edges: f64 = f.blocks[b]
            .phis
            .iter()
            .find(|p| p.def.value == phi)
            .map_or(0.0, |p| {
                p.args
                    .iter()
                    .map(|a| self.input.freq[a.block.index()])
                    .sum()
            });
        let cost = self.input.costs.store * self.units(phi) * edges;
        let mp = self.binary(cost);
        self.memory_phi.insert(phi, mp);
        let now = self.state(key);
        let mut terms = vec![(now, 1.0), (Term::Var(mp), 1.0)];
        if let Some(&r) = self.reload.get(&key) {
            terms.push((Term::Var(r), -1.0));
            self.at_most(&[(Term::Var(r), 1.0), (Term::Var(mp), -1.0)], 0.0);
        }
        self.at_most(&terms, 1.0);
        self.add_shares(b, phi, mp);
        if let (Some(&m), Some(&s)) = (self.mem.get(&key), self.store.get(&key)) {
            let terms = [
                (Term::Var(m), 1.0),
                (Term::Var(mp), -1.0),
                (Term::Var(s), -1.0),
            ];
            self.at_most(&terms, 0.0);
        }
    }

    /// An argument that may share the memory phi's location (`z ≤ mp`) saves the edge
    /// store, needs its own stored copy at the edge (`m ≥ z`) and may then be out of
    /// registers there (`in ≥ 1 − z`).
    fn add_shares(&mut self, b: usize, phi: Value, mp: Var) {
        let input = self.input;
        for share in input
            .shares
            .iter()
            .filter(|x| x.phi == phi && x.block.index() == b)
        {
            let p = share.from.index();
            let last = (p, input.points[p].len() - 1, share.arg);
            let Some(&m) = self.mem.get(&last) else {
                continue;
            };
            let saved = input.costs.store * self.units(phi) * input.freq[p];
            let z = self.binary(-saved);
            self.at_most(&[(Term::Var(z), 1.0), (Term::Var(mp), -1.0)], 0.0);
            self.at_most(&[(Term::Var(z), 1.0), (Term::Var(m), -1.0)], 0.0);
            self.at_most(&[(self.state(last), -1.0), (Term::Var(z), -1.0)], -1.0);
            self.share.push((*share, z));
        }
    }

    /// The residency that keeps in registers only what must be there: every value stored
    /// where it is defined, every phi in memory. Feasible whenever the forced units fit.
    fn start(&self) -> Vec<(Var, f64)> {
        let mut hint: Vec<(Var, f64)> = Vec::new();
        hint.extend(self.in_reg.values().map(|&x| (x, 0.0)));
        hint.extend(self.memory_phi.values().map(|&x| (x, 1.0)));
        hint.extend(self.share.iter().map(|&(_, z)| (z, 1.0)));
        for (&(b, j, v), &s) in &self.store {
            let defined = j > 0 && !self.input.points[b][j - 1].live.contains(&v);
            hint.push((s, f64::from(u8::from(defined))));
        }
        hint
    }

    fn solve(self, limits: Limits) -> Result<Residency, OracleError> {
        let settings = Settings {
            solver: limits.solver,
            time: limits.time,
            nodes: limits.nodes,
        };
        let outcome = match self.ilp.solve(settings, &self.start()) {
            Ok(outcome) => outcome,
            Err(Failure::Infeasible) => return Err(OracleError::Infeasible),
            Err(Failure::Error(e)) => return Err(OracleError::Solver(e)),
        };
        let bound = outcome.bound.unwrap_or(0.0);
        if outcome.values.is_none() {
            let start: BTreeMap<Var, f64> = self.start().into_iter().collect();
            let mut residency = self.read(|x| start.get(&x).is_some_and(|&v| v > 0.5));
            residency.bound = bound.min(residency.cost);
            return Ok(residency);
        }
        let mut residency = self.read(|x| outcome.is_set(x));
        residency.bound = bound.min(residency.cost);
        residency.status = if outcome.optimal && residency.cost <= bound + 1e-6 {
            Status::Optimal
        } else {
            Status::Limit
        };
        Ok(residency)
    }

    /// The residency a solution's 0-1 values give, and the cost of its spill code.
    fn read(&self, set: impl Fn(Var) -> bool) -> Residency {
        let input = self.input;
        let resident_at =
            |b: usize, j: usize, v: Value| self.in_reg.get(&(b, j, v)).is_none_or(|&x| set(x));
        let resident: Vec<Vec<Vec<Value>>> = input
            .points
            .iter()
            .enumerate()
            .map(|(b, block)| {
                (0..block.len())
                    .map(|j| {
                        let live = block[j].live.iter().copied();
                        live.filter(|&v| resident_at(b, j, v)).collect()
                    })
                    .collect()
            })
            .collect();
        let memory_phis: Vec<Value> = self
            .memory_phi
            .iter()
            .filter(|&(_, &x)| set(x))
            .map(|(&v, _)| v)
            .collect();
        let shared: Vec<Share> = self
            .share
            .iter()
            .filter(|&&(_, z)| set(z))
            .map(|&(x, _)| x)
            .collect();
        let stores: Vec<(Block, usize, Value)> = self
            .store
            .iter()
            .filter(|&(_, &s)| set(s))
            .map(|(&(b, j, v), _)| (Block(b as u32), j, v))
            .collect();
        let mut reloads = Vec::new();
        for (b, block) in input.points.iter().enumerate() {
            for (j, point) in block.iter().enumerate() {
                for &v in &resident[b][j] {
                    let from = match point.kind {
                        Kind::Entry => self.predecessor_ends(b, v),
                        Kind::Before => vec![(b, j - 1)],
                        Kind::After => Vec::new(),
                    };
                    let phi_in_memory = j == 0 && memory_phis.contains(&v);
                    let missing = from.iter().any(|&(pb, pj)| !resident[pb][pj].contains(&v));
                    let arrives = j == 0 || block[j - 1].live.contains(&v);
                    if phi_in_memory || (missing && arrives) {
                        reloads.push((Block(b as u32), j, v));
                    }
                }
            }
        }
        let mut r = Residency {
            resident,
            stores,
            reloads,
            memory_phis,
            shared,
            cost: 0.0,
            bound: 0.0,
            status: Status::Limit,
            variables: self.variables,
            constraints: self.constraints,
        };
        r.cost = self.cost_of(&r);
        r
    }

    fn cost_of(&self, r: &Residency) -> f64 {
        let input = self.input;
        let c = input.costs;
        let at = |b: Block| input.freq[b.index()];
        let stores: f64 = r
            .stores
            .iter()
            .map(|&(b, _, v)| c.store * self.units(v) * at(b))
            .sum();
        let reloads: f64 = r
            .reloads
            .iter()
            .map(|&(b, _, v)| {
                let unit = if self.remat[v.index()] {
                    c.remat
                } else {
                    c.reload
                };
                unit * self.units(v) * at(b)
            })
            .sum();
        let phis: f64 = r
            .memory_phis
            .iter()
            .map(|&phi| {
                let edges: f64 = input
                    .f
                    .blocks
                    .iter()
                    .flat_map(|blk| &blk.phis)
                    .filter(|p| p.def.value == phi)
                    .flat_map(|p| &p.args)
                    .map(|a| at(a.block))
                    .sum();
                c.store * self.units(phi) * edges
            })
            .sum();
        let saved: f64 = r
            .shared
            .iter()
            .map(|x| c.store * self.units(x.phi) * at(x.from))
            .sum();
        stores + reloads + phis - saved
    }
}

/// Per value: whether its definition may be recomputed instead of reloaded.
pub fn rematerialisable(f: &Function) -> Vec<bool> {
    let mut remat = vec![false; f.values.len()];
    for block in &f.blocks {
        for op in block.insts.iter().filter_map(|i| i.op()) {
            if op.remat {
                op.defs.iter().for_each(|d| remat[d.value.index()] = true);
            }
        }
    }
    remat
}
