//! Minimum spill cost of one register class at a budget: the 0-1 program of Appel & George
//! ("Optimal spilling for CISC machines with few registers", PLDI 2001), in the form of
//! per-point in-register, reload and store variables, on the SSA function before any
//! allocation.
//!
//! Per value `v` of the class and program point `p` where it is live ([`crate::points`]),
//! `in[v,p]` says it is in a register. Operands are in registers before their instruction
//! and definitions after it; at every point the units in registers, plus definitions that
//! occupy registers without being live across the point, fit the budget. A value may leave
//! its register anywhere for free; it comes back only by a reload (`reload[v,p] ≥ in[v,p] −
//! in[v,p−1]`), placed before an instruction or on a control-flow edge, which needs the
//! value stored (`store[v]`, priced at the coldest block where the value lives: a spiller
//! may store anywhere the value is in a register) unless it is
//! rematerialisable (the reload is then a recomputation). A phi whose result is not in a
//! register at its block's entry is a memory phi: its arguments are stored on the incoming
//! edges, except an argument that is the phi itself or is stored anyway (its own location
//! may be the phi's). Uniform values follow the linear CFG, as in the allocator's liveness.
//!
//! The objective is frequency-weighted: store cost × units × frequency of the defining
//! block (of each incoming edge that stores, for memory phis), reload cost × units × frequency of the
//! block or edge. Costs are the cheapest spill target the class has, so the optimum is a
//! lower bound for the allocator whatever target it uses. Assignment is left out: pressure
//! within the budget is what the spiller promises, as in the allocator.
//!
//! The model is solved by microlp's branch and bound with a node limit, which keeps the
//! result reproducible: the answer is the optimum when proven, else the best bound (and the
//! best solution found, if any).

use crate::points::{self, Kind, Point};
use crate::OracleError;
use chromatic::analysis::cfg::Graph;
use chromatic::analysis::Analysis;
use chromatic::program::{Block, Function, Value};
use chromatic::target::{ClassId, Costs, SpillTarget, Target};
use good_lp::{microlp, variable, Expression, ProblemVariables, SolverModel, Variable};
use std::collections::{BTreeMap, BTreeSet};

/// How far the branch and bound may go.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Branch-and-bound nodes (the root relaxation is not one).
    pub nodes: u64,
    /// Refuse models with more 0-1 variables than this (`None`: no limit).
    pub max_variables: Option<usize>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nodes: 2_000,
            max_variables: None,
        }
    }
}

/// What the solver established about the minimum spill cost.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SpillOptimum {
    /// The minimum, when proven.
    pub optimum: Option<f64>,
    /// The best solution found, when the node limit stopped the search before a proof.
    pub incumbent: Option<f64>,
    /// The best proven lower bound (equals the optimum when proven).
    pub bound: f64,
    pub variables: usize,
}

/// The minimum frequency-weighted spill cost of `class` in `f` with `budget` units.
pub fn min_spill_cost(
    f: &Function,
    target: &Target,
    class: ClassId,
    budget: u32,
    limits: Limits,
) -> Result<SpillOptimum, OracleError> {
    let a = Analysis::new(f, target);
    let points = points::points(f, target, &a, class);
    let mut model = Model::new(f, target, &a, class);
    model.add_points(&points, budget)?;
    model.add_edges(&points);
    model.solve(limits)
}

/// The frequency-independent costs of spilling one unit of the class.
#[derive(Clone, Copy, Debug)]
struct UnitCosts {
    store: f64,
    reload: f64,
    remat: f64,
}

/// The cheapest store and reload among the class's spill targets.
fn unit_costs(target: &Target, class: ClassId) -> UnitCosts {
    let c: &Costs = &target.costs;
    let pairs = target.class(class).spill.iter().map(|t| match t {
        SpillTarget::Memory => (c.mem_store, c.mem_load),
        SpillTarget::Lanes { .. } => (c.lane_write, c.lane_read),
        SpillTarget::Class { .. } => (c.class_move, c.class_move),
    });
    let (store, reload) = pairs
        .reduce(|x, y| if x.0 + x.1 <= y.0 + y.1 { x } else { y })
        .unwrap_or((c.mem_store, c.mem_load));
    UnitCosts {
        store,
        reload,
        remat: c.remat,
    }
}

struct Model<'f> {
    f: &'f Function,
    a: &'f Analysis,
    uniform: bool,
    costs: UnitCosts,
    remat: Vec<bool>,
    phi_arguments: BTreeSet<Value>,
    vars: ProblemVariables,
    constraints: Vec<good_lp::Constraint>,
    objective: Expression,
    /// `in[v,p]` per (block, point index, value).
    regs: BTreeMap<(Block, usize, Value), Variable>,
    /// `store[v]` per value that is reloaded or is a memory phi.
    stores: BTreeMap<Value, Variable>,
    /// The reload of a value on an edge (from, to): one, whether a live-in or phis read it.
    edge_reloads: BTreeMap<(Block, Block, Value), Variable>,
}

impl<'f> Model<'f> {
    fn new(f: &'f Function, target: &Target, a: &'f Analysis, class: ClassId) -> Model<'f> {
        Model {
            f,
            a,
            uniform: target.class(class).uniform,
            costs: unit_costs(target, class),
            remat: rematerialisable(f),
            phi_arguments: phi_arguments(f),
            vars: ProblemVariables::new(),
            constraints: Vec::new(),
            objective: Expression::from(0.0),
            regs: BTreeMap::new(),
            stores: BTreeMap::new(),
            edge_reloads: BTreeMap::new(),
        }
    }

    fn graph(&self) -> &'f Graph {
        if self.uniform {
            &self.a.divergence.linear
        } else {
            &self.a.cfg
        }
    }

    fn units(&self, v: Value) -> f64 {
        f64::from(self.f.value(v).size)
    }

    /// `in[v,p]` as an expression: the constant 1 where `v` must be in a register.
    fn state(&self, b: Block, p: usize, v: Value) -> Expression {
        self.regs
            .get(&(b, p, v))
            .map_or(Expression::from(1.0), |&x| Expression::from(x))
    }

    fn add_points(&mut self, points: &[Vec<Point>], budget: u32) -> Result<(), OracleError> {
        for b in self.f.block_ids() {
            for (p, point) in points[b.index()].iter().enumerate() {
                self.add_variables(b, p, point);
            }
        }
        for b in self.f.block_ids() {
            let block = &points[b.index()];
            for (p, point) in block.iter().enumerate() {
                self.add_capacity(b, p, point, budget)?;
            }
            for p in 1..block.len() {
                self.add_transition(b, &block[p - 1], p, &block[p]);
            }
        }
        Ok(())
    }

    /// `in[v,p]` for each value live at the point that is not forced into a register.
    /// A value out of its register at a point where it is live comes back by a reload
    /// later, so it is stored (or a memory phi): `store[v] + in[v,p] ≥ 1`. The cut is
    /// redundant for integer solutions but makes the relaxation, and so the bounds, much
    /// tighter. It is left out for rematerialisable values and for phi arguments, which
    /// may reach memory through a memory phi's store instead of their own.
    fn add_variables(&mut self, b: Block, p: usize, point: &Point) {
        for &v in point.live.iter().filter(|v| !point.forced.contains(v)) {
            let x = self.vars.add(variable().binary());
            self.regs.insert((b, p, v), x);
            if !self.remat[v.index()] && !self.phi_arguments.contains(&v) {
                let store = self.store(v);
                self.constraints
                    .push((Expression::from(x) + store).geq(1.0));
            }
        }
    }

    /// The units in registers at the point fit the budget. A tied operand that stays in a
    /// register after its instruction needs a copy, which the definition overwrites.
    fn add_capacity(
        &mut self,
        b: Block,
        p: usize,
        point: &Point,
        budget: u32,
    ) -> Result<(), OracleError> {
        let forced: u32 = point
            .forced
            .iter()
            .map(|&v| u32::from(self.f.value(v).size))
            .sum();
        if forced + point.extra > budget {
            return Err(OracleError::BelowLowest {
                block: self.f.block(b).name.clone(),
                needed: forced + point.extra,
                budget,
            });
        }
        let mut used = Expression::from(f64::from(point.extra));
        for &v in &point.live {
            used += self.units(v) * self.state(b, p, v);
        }
        for &(operand, units) in &point.tied {
            used += f64::from(units) * self.state(b, p + 1, operand);
        }
        self.constraints.push(used.leq(f64::from(budget)));
        Ok(())
    }

    /// From one point to the next in a block: a value may come back into a register only
    /// by a reload, and only where reloads go (before an instruction).
    fn add_transition(&mut self, b: Block, prev: &Point, p: usize, point: &Point) {
        let freq = self.a.freq[b.index()];
        for &v in &point.live {
            if !prev.live.contains(&v) {
                continue;
            }
            let (now, before) = (self.state(b, p, v), self.state(b, p - 1, v));
            if point.kind == Kind::Before {
                let reload = self.reload(v, freq);
                self.constraints.push((now - before - reload).leq(0.0));
            } else {
                self.constraints.push((now - before).leq(0.0));
            }
        }
    }

    /// A reload (or remat) variable for `v` at frequency `freq`, tied to its store.
    fn reload(&mut self, v: Value, freq: f64) -> Variable {
        let x = self.vars.add(variable().min(0.0).max(1.0));
        let unit = if self.remat[v.index()] {
            self.costs.remat
        } else {
            self.costs.reload
        };
        self.objective += unit * self.units(v) * freq * x;
        if !self.remat[v.index()] {
            let store = self.store(v);
            self.constraints
                .push((Expression::from(x) - store).leq(0.0));
        }
        x
    }

    /// `store[v]`, created on first need. A spiller may store a value anywhere it is in a
    /// register, not only after its definition (on each path before it first leaves the
    /// register), so one store costs at least the lowest frequency of a block where the
    /// value is defined or live; a phi's stores are priced where its entry is coupled
    /// ([`Self::add_phi_stores`]).
    fn store(&mut self, v: Value) -> Variable {
        if let Some(&s) = self.stores.get(&v) {
            return s;
        }
        let s = self.vars.add(variable().binary());
        self.stores.insert(v, s);
        let def_block = self.a.liveness.def_block(v);
        if !self.phi_args(def_block).contains_key(&v) {
            let freq = self.coldest_live_block(v);
            self.objective += self.costs.store * self.units(v) * freq * s;
        }
        s
    }

    /// The lowest frequency among the block defining `v` and the blocks it is live into.
    fn coldest_live_block(&self, v: Value) -> f64 {
        let def_block = self.a.liveness.def_block(v);
        self.f
            .block_ids()
            .filter(|&b| b == def_block || self.a.liveness.live_in(b).binary_search(&v).is_ok())
            .map(|b| self.a.freq[b.index()])
            .fold(self.a.freq[def_block.index()], f64::min)
    }

    /// A stored phi is stored once at the top of its block while in a register there
    /// (`top ≤ in[phi, entry]`), or is a memory phi, whose arguments are stored on the
    /// incoming edges: `edge + top ≥ store[phi] − store[arg]`. An argument that is the phi
    /// itself needs no store, nor one stored anyway: its own store may go to the phi's
    /// location when their lifetimes allow (the allocator's slot colouring then drops the
    /// edge store). Another phi of the same block never shares the location (both are
    /// live into the block), nor does a rematerialisable value (it has no location).
    fn add_phi_stores(&mut self, b: Block, phi: Value, args: &[(Block, Value)]) {
        let s = self.store(phi);
        let top = self.vars.add(variable().min(0.0).max(1.0));
        let freq = self.coldest_live_block(phi);
        self.objective += self.costs.store * self.units(phi) * freq * top;
        let in_reg = self.state(b, 0, phi);
        self.constraints
            .push((Expression::from(top) - in_reg).leq(0.0));
        let same_block: BTreeSet<Value> =
            self.f.block(b).phis.iter().map(|p| p.def.value).collect();
        for &(pred, arg) in args {
            let covered = if arg == phi {
                Expression::from(s)
            } else if self.remat[arg.index()] || same_block.contains(&arg) {
                Expression::from(0.0)
            } else {
                Expression::from(self.store(arg))
            };
            let edge = self.vars.add(variable().min(0.0).max(1.0));
            let freq = self.edge_frequency(pred, b);
            self.objective += self.costs.store * self.units(phi) * freq * edge;
            self.constraints
                .push((Expression::from(edge) + top - s + covered).geq(0.0));
        }
    }

    /// An edge's frequency: its source's when that has one successor, its target's when
    /// that has one predecessor, else the smaller (the edge is split).
    fn edge_frequency(&self, from: Block, to: Block) -> f64 {
        let g = self.graph();
        let (ff, ft) = (self.a.freq[from.index()], self.a.freq[to.index()]);
        if g.succs(from).len() <= 1 {
            ff
        } else if g.preds(to).len() <= 1 {
            ft
        } else {
            ff.min(ft)
        }
    }

    /// Block entries: a live-in value in a register at entry was in one at the end of
    /// every predecessor, or is reloaded on that edge; a phi in a register at entry has its
    /// argument in a register on each edge (or reloaded there), else it is a memory phi.
    fn add_edges(&mut self, points: &[Vec<Point>]) {
        for b in self.f.block_ids() {
            let Some(entry) = points[b.index()].first() else {
                continue;
            };
            let phis = self.phi_args(b);
            for &v in &entry.live {
                match phis.get(&v) {
                    Some(args) => self.add_phi(b, v, args, points),
                    None => {
                        let preds = self.graph().preds(b).to_vec();
                        let sources = preds.into_iter().map(|p| (p, v)).collect::<Vec<_>>();
                        self.add_coupling(b, v, &sources, points);
                    }
                }
            }
        }
    }

    fn phi_args(&self, b: Block) -> BTreeMap<Value, Vec<(Block, Value)>> {
        self.f
            .block(b)
            .phis
            .iter()
            .map(|phi| {
                let args = phi.args.iter().map(|a| (a.block, a.value)).collect();
                (phi.def.value, args)
            })
            .collect()
    }

    fn add_phi(&mut self, b: Block, phi: Value, args: &[(Block, Value)], points: &[Vec<Point>]) {
        self.add_coupling(b, phi, args, points);
        self.add_phi_stores(b, phi, args);
        let store = self.store(phi);
        let in_reg = self.state(b, 0, phi);
        self.constraints.push((in_reg + store).geq(1.0));
    }

    /// The reload of `v` on the edge from `p` to `b`, shared by everything the edge
    /// feeds from `v` (a live-in and phi arguments, or several phis): one reload serves
    /// them all, the rest are copies.
    fn edge_reload(&mut self, p: Block, b: Block, v: Value) -> Variable {
        if let Some(&x) = self.edge_reloads.get(&(p, b, v)) {
            return x;
        }
        let freq = self.edge_frequency(p, b);
        let x = self.reload(v, freq);
        self.edge_reloads.insert((p, b, v), x);
        x
    }

    /// `v` in a register at the entry of `b` needs, for each (predecessor, source value),
    /// the source in a register at the predecessor's end or a reload on the edge.
    fn add_coupling(
        &mut self,
        b: Block,
        v: Value,
        sources: &[(Block, Value)],
        points: &[Vec<Point>],
    ) {
        for &(p, source) in sources {
            let Some(last) = points[p.index()].len().checked_sub(1) else {
                continue;
            };
            if !points[p.index()][last].live.contains(&source) {
                continue;
            }
            let reload = self.edge_reload(p, b, source);
            let now = self.state(b, 0, v);
            let before = self.state(p, last, source);
            self.constraints.push((now - before - reload).leq(0.0));
        }
    }

    fn solve(self, limits: Limits) -> Result<SpillOptimum, OracleError> {
        let variables = self.regs.len() + self.stores.len();
        if let Some(limit) = limits.max_variables.filter(|&l| variables > l) {
            return Err(OracleError::TooLarge { variables, limit });
        }
        let mut problem = self.vars.minimise(self.objective).using(microlp);
        for c in self.constraints {
            problem.add_constraint(c);
        }
        let options = microlp_options(limits);
        let outcome = problem
            .as_inner()
            .solve_with(options)
            .map_err(|e| OracleError::Solver(e.to_string()))?;
        Ok(match outcome.into_solution() {
            Ok(solution) => {
                let proven = solution.status() == ::microlp::SolutionStatus::Optimal;
                let cost = solution.objective();
                let bound = solution.stats().best_bound.unwrap_or(cost);
                SpillOptimum {
                    optimum: proven.then_some(cost),
                    incumbent: (!proven).then_some(cost),
                    bound: if proven { cost } else { bound },
                    variables,
                }
            }
            Err(interrupted) => SpillOptimum {
                optimum: None,
                incumbent: None,
                bound: interrupted.stats().best_bound.unwrap_or(0.0),
                variables,
            },
        })
    }
}

fn microlp_options(limits: Limits) -> ::microlp::SolveOptions {
    let mut options = ::microlp::SolveOptions::default();
    options.node_limit = Some(limits.nodes);
    options
}

/// Values used as phi arguments.
fn phi_arguments(f: &Function) -> BTreeSet<Value> {
    f.blocks
        .iter()
        .flat_map(|b| &b.phis)
        .flat_map(|phi| phi.args.iter().map(|a| a.value))
        .collect()
}

/// Per value: whether its definition may be recomputed instead of reloaded.
fn rematerialisable(f: &Function) -> Vec<bool> {
    let mut remat = vec![false; f.values.len()];
    for b in f.block_ids() {
        for op in f.block(b).insts.iter().filter_map(|i| i.op()) {
            if op.remat {
                op.defs.iter().for_each(|d| remat[d.value.index()] = true);
            }
        }
    }
    remat
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle's answer for the only function of `text` with class `class` at `budget`.
    fn solve(text: &str, class: &str, budget: u32) -> Result<SpillOptimum, OracleError> {
        let p = chromatic::parse(text).expect("test program parses");
        let c = p.target.class_by_name(class).expect("class");
        min_spill_cost(&p.functions[0], &p.target, c, budget, Limits::default())
    }

    fn optimum(text: &str, class: &str, budget: u32) -> f64 {
        let answer = solve(text, class, budget).expect("solved");
        answer.optimum.expect("proven optimal")
    }

    const STRAIGHT: &str = "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = load 2 reads
  %d:v1 = add %b, %c
  %e:v1 = add %d, %a
  ret %e
}";

    #[test]
    fn a_budget_at_max_live_costs_nothing() {
        assert_eq!(optimum(STRAIGHT, "v", 3), 0.0);
    }

    /// At 2 registers %a must leave while %b and %c are live: one store and one reload at
    /// the generic target's 8 each.
    #[test]
    fn one_value_out_for_one_point_costs_a_store_and_a_reload() {
        assert_eq!(optimum(STRAIGHT, "v", 2), 16.0);
    }

    #[test]
    fn below_what_an_instruction_needs_is_an_error() {
        assert!(matches!(
            solve(STRAIGHT, "v", 1),
            Err(OracleError::BelowLowest { needed: 2, .. })
        ));
    }

    /// %far is live through a loop (frequency 10) that needs both registers: stored once
    /// before the loop and reloaded once after it, never inside.
    #[test]
    fn a_value_live_through_a_loop_is_reloaded_after_it() {
        let text = "target generic v=8
func @f {
entry:
  %far:v1 = load 0 reads
  %x0:v1 = load 1 reads
  jump loop
loop:
  %x:v1 = phi [entry: %x0], [loop: %x1]
  %t:v1 = load 2 reads
  %x1:v1 = add %x, %t
  %c:v1 = cmp %x1
  branch uniform %c, loop, exit
exit:
  %y:v1 = add %x1, %far
  ret %y
}";
        assert_eq!(optimum(text, "v", 2), 16.0);
    }

    /// The loop-header phi %i, read at the top of the loop and after it, leaves its
    /// register where the loop peaks. A spiller stores it once at the top of the loop
    /// (8 × 10) and reloads it after (8): 88. The model prices a store at the coldest
    /// block where the value lives (here the exit), which no spiller can beat but which
    /// ignores that the store must precede the eviction: the bound is 8 + 8.
    #[test]
    fn a_stored_phi_is_priced_no_higher_than_any_spiller_stores_it() {
        let text = "target generic s=4 v=8
func @f {
entry:
  %i0:v1 = mov 0
  %n:s1 = s_mov 0
  jump head
head:
  %i:v1 = phi [entry: %i0], [head: %i2]
  %a:v1 = add %i, %i
  %p:v1 = mov 2
  %q:v1 = mov 3
  %b:v1 = add %p, %q
  %i2:v1 = add %a, %b
  %c:s1 = s_cmp %n
  branch uniform %c, head, exit
exit:
  %y:v1 = add %i, %i2
  ret %y
}";
        assert_eq!(optimum(text, "v", 3), 16.0);
    }

    /// %x, pushed out of registers by the latch, enters the loop header both as a
    /// live-in and as the argument of %p: one reload on the back edge serves both (a
    /// store, 8, and a reload at frequency 10, 80).
    #[test]
    fn a_value_feeding_a_live_in_and_a_phi_on_one_edge_is_reloaded_once() {
        let text = "target generic v=8
func @f {
entry:
  %x:v1 = load 0 reads
  jump head
head:
  %p:v1 = phi [entry: %x], [latch: %x]
  %u:v1 = add %x, %p
  %c:v1 = cmp %u
  branch uniform %c, latch, exit
latch:
  %a:v1 = load 1 reads
  %b:v1 = load 2 reads
  %d:v1 = add %a, %b
  store %d writes
  jump head
exit:
  ret %x
}";
        assert!((optimum(text, "v", 2) - 88.0).abs() < 1e-9);
    }

    /// A rematerialisable value needs no store; its reload is a recomputation at cost 1.
    #[test]
    fn a_rematerialisable_value_is_recomputed() {
        let text = "target generic v=8
func @f {
b:
  %k:v1 = mov 7 remat
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = add %a, %b
  %d:v1 = add %c, %k
  ret %d
}";
        assert_eq!(optimum(text, "v", 2), 1.0);
    }

    /// An operand tied to a definition and live afterwards needs a copy: two values are
    /// live across the instruction, but at 2 registers %a must be out of registers there.
    #[test]
    fn a_tied_operand_that_lives_on_takes_a_register_for_its_copy() {
        let text = "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = mac %a, %b tied(0)
  %d:v1 = add %c, %a
  ret %d
}";
        assert_eq!(optimum(text, "v", 3), 0.0);
        assert_eq!(optimum(text, "v", 2), 16.0);
    }
}
