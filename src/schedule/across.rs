//! Rematerialisation across blocks: cheap pure values held across loops and branches are
//! recomputed in the blocks that use them, from operands live there anyway.
//!
//! Compilers emit address offsets, bounds and compares once, before the loops and branches
//! that read them (`tid + 640`, `tid + 768`, … computed in the entry block and each compared
//! with the tile size inside a loop; `setp`s whose predicates steer a later store loop).
//! Held in registers they cross every point in between; ptxas instead recomputes them where
//! they are read. This pass does the same before allocation, following Briggs, Cooper &
//! Torczon, "Rematerialization" (PLDI 1992): a value is recomputed where its operands are
//! available. Per round:
//!
//! 1. **Hot points.** From the function's pressure, the instructions where a class's demand
//!    exceeds its budget, or, with [`Goal::Minimise`] and the class within its budget, where
//!    it reaches the class's maximum.
//! 2. **Candidates.** Values of that class live across a hot point, defined by an operation
//!    the verifier may recompute ([`recomputable`], one definition), that the rewrite below
//!    takes off that point.
//! 3. **Plans.** In every block `B` other than the definition's that reads the value (an
//!    operand, the terminator, or a phi argument on an edge leaving `B`), a copy of the
//!    definition goes right before the first reading, and `B`'s readings take it. Each
//!    operand of the definition must then be at hand: live there anyway; or recomputed in
//!    turn (a chain, up to [`MAX_DEPTH`] operations, `remat` operations always); or, for a
//!    value of a scarcer class than the operand (a predicate from 32-bit registers, where an
//!    excess predicate would be spilled anyway), held there longer. The definition's block
//!    dominates every reading, so an operand there still holds the value the definition
//!    read (the rule the verifier checks, `verifier/src/fresh.rs`).
//! 4. **Choice.** Candidates are taken in value order, skipping one that a taken plan relies
//!    on being live, or whose plan relies on a taken one.
//!
//! A round is kept when it lowers the function's score (classes' units over budget at
//! their maxima, then the maxima, then the units over budget summed over all points); the
//! first round that does not ends the pass, undone. The copies are recorded in [`Remats`]
//! like the per-block ones and folded into `remat` instructions after allocation.

use super::remat::{recomputable, Remats, MAX_DEPTH};
use super::Goal;
use crate::analysis::liveness::{At, LiveSet};
use crate::analysis::Analysis;
use crate::program::{Block, Function, Inst, InstKind, Operand, Value};
use crate::target::{ClassId, Target};
use rustc_hash::FxHashMap;

/// The most rounds run.
const ROUNDS: usize = 4;

/// Recomputes values across blocks in `f` (valid SSA, analysed by `analysis`) while that
/// lowers its score; the copies are recorded in `remats`. Returns the function and its
/// analysis.
pub fn rematerialise(
    f: &Function,
    analysis: Analysis,
    target: &Target,
    budget: &[u16],
    goal: Goal,
    remats: &mut Remats,
) -> (Function, Analysis) {
    let mut func = f.clone();
    let mut analysis = analysis;
    let mut best = score(&func, &analysis, target, budget);
    for _ in 0..ROUNDS {
        let before = (func.clone(), remats.clone());
        if !round(&mut func, &analysis, target, budget, goal, remats) {
            break;
        }
        let next = Analysis::new(&func, target);
        let now = score(&func, &next, target, budget);
        if now >= best {
            (func, *remats) = before;
            break;
        }
        (best, analysis) = (now, next);
    }
    (func, analysis)
}

/// Units over budget at the classes' maxima, the maxima, then units over budget summed over
/// every instruction.
fn score(f: &Function, a: &Analysis, target: &Target, budget: &[u16]) -> (u32, u32, u64) {
    let mut over_at_max = 0;
    let mut maxima = 0;
    let mut over_everywhere = 0u64;
    for c in target.class_ids() {
        let (max, limit) = (a.pressure.max_live(c), u32::from(budget[c.index()]));
        over_at_max += max.saturating_sub(limit);
        maxima += max;
        for b in f.block_ids() {
            for i in 0..f.block(b).insts.len() as u32 {
                over_everywhere += u64::from(a.pressure.at(b, Some(i), c).saturating_sub(limit));
            }
        }
    }
    (over_at_max, maxima, over_everywhere)
}

/// One round on `func` as `a` analyses it; whether anything was recomputed.
fn round(
    func: &mut Function,
    a: &Analysis,
    target: &Target,
    budget: &[u16],
    goal: Goal,
    remats: &mut Remats,
) -> bool {
    let mut planner = Planner::new(func, a, target);
    let mut wanted: Vec<Value> = Vec::new();
    for c in target.class_ids() {
        if let Some(threshold) = threshold(a, c, budget[c.index()], goal) {
            wanted.extend(planner.relieving(c, threshold));
        }
    }
    wanted.sort_unstable();
    wanted.dedup();
    let plans = planner.choose(&wanted);
    if plans.is_empty() {
        return false;
    }
    let defs = planner.def;
    apply(func, &plans, &defs, remats);
    true
}

/// The demand of class `c` from which an instruction is hot, if any is.
fn threshold(a: &Analysis, c: ClassId, budget: u16, goal: Goal) -> Option<u32> {
    let max = a.pressure.max_live(c);
    let budget = u32::from(budget);
    if max > budget {
        Some(budget + 1)
    } else if goal == Goal::Minimise && max > 0 {
        Some(max)
    } else {
        None
    }
}

/// Where a value is read in one block: the first and last instruction (the terminator is
/// `insts.len()`), and whether it is a phi argument on an edge leaving the block.
#[derive(Clone, Copy, Debug)]
struct Reading {
    block: Block,
    first: u32,
    last: u32,
    leaves: bool,
}

/// A definition's place: its block and instruction (`None` for a phi).
type Place = (Block, Option<u32>);

/// A point of a block: before instruction `at` (`insts.len()`: before the terminator).
type Point = (Block, u32);

/// Recomputing one value: per block reading it, where its copies go and the chain copied
/// there (operands first, the value last).
#[derive(Clone, Debug)]
struct Plan {
    value: Value,
    copies: Vec<(Point, Vec<Value>)>,
    /// Values the copies read that must stay live where they are read.
    relies_on: Vec<Value>,
}

/// What [`Planner::relieving`] has found about a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    Unseen,
    /// It could have a plan; no hot point its recomputation takes it off is found yet.
    Candidate,
    /// Its recomputation takes it off a hot point.
    Relieved,
    /// It can have no plan.
    Never,
}

/// The instructions of one block after which recomputing a value takes it off: those
/// before `before` and those after `after`.
#[derive(Clone, Copy)]
struct Relief {
    before: u32,
    after: u32,
}

impl Relief {
    const NOWHERE: Relief = Relief {
        before: 0,
        after: u32::MAX,
    };
    const EVERYWHERE: Relief = Relief {
        before: u32::MAX,
        after: u32::MAX,
    };

    fn takes_off(self, i: u32) -> bool {
        i < self.before || i > self.after
    }
}

/// Definitions and readings of every value, and the plans made so far.
struct Planner<'a> {
    f: &'a Function,
    a: &'a Analysis,
    target: &'a Target,
    def: Vec<Option<Place>>,
    readings: Vec<Vec<Reading>>,
    plans: FxHashMap<Value, Option<Plan>>,
}

impl<'a> Planner<'a> {
    fn new(f: &'a Function, a: &'a Analysis, target: &'a Target) -> Planner<'a> {
        let mut def = vec![None; f.values.len()];
        let mut readings: Vec<Vec<Reading>> = vec![Vec::new(); f.values.len()];
        let mut read = |v: Value, block: Block, at: u32, leaves: bool| {
            let list = &mut readings[v.index()];
            match list.last_mut().filter(|r| r.block == block) {
                Some(r) => {
                    r.last = r.last.max(at);
                    r.leaves |= leaves;
                }
                None => list.push(Reading {
                    block,
                    first: at,
                    last: at,
                    leaves,
                }),
            }
        };
        for b in f.block_ids() {
            let block = f.block(b);
            for phi in &block.phis {
                def[phi.def.value.index()] = Some((b, None));
            }
            for (i, inst) in block.insts.iter().enumerate() {
                let Some(op) = inst.op() else { continue };
                op.defs
                    .iter()
                    .for_each(|d| def[d.value.index()] = Some((b, Some(i as u32))));
                op.uses().for_each(|u| read(u.value, b, i as u32, false));
            }
            let end = block.insts.len() as u32;
            block
                .term
                .uses()
                .iter()
                .for_each(|u| read(u.value, b, end, false));
            for s in block.term.successors() {
                for phi in &f.block(s).phis {
                    for arg in phi.args.iter().filter(|arg| arg.block == b) {
                        read(arg.value, b, end, true);
                    }
                }
            }
        }
        Planner {
            f,
            a,
            target,
            def,
            readings,
            plans: FxHashMap::default(),
        }
    }

    /// Values of class `c` live across an instruction whose demand reaches `threshold`,
    /// with a plan that takes them off it.
    /// A value is first asked whether it could have a plan at all (of the class, defined
    /// by an operation that may be recomputed); one that could is looked at per hot point
    /// until one is found that its recomputation takes it off. So a value live across many
    /// hot points costs a flag, not an entry per point, and where in a block its
    /// recomputation takes it off ([`Relief`]) is found once per block it is looked at in.
    fn relieving(&mut self, c: ClassId, threshold: u32) -> Vec<Value> {
        let (f, a) = (self.f, self.a);
        let mut states = vec![Look::Unseen; f.values.len()];
        let mut reliefs: Vec<Option<(Block, Relief)>> = vec![None; f.values.len()];
        let mut live = LiveSet::new(f, self.target);
        let planner = &*self;
        for b in f.block_ids() {
            if a.pressure.block_max(f, b, c) < threshold {
                continue;
            }
            a.liveness.walk_backward(f, b, &mut live, |at, live| {
                let At::After(i) = at else { return };
                let Some(op) = f.block(b).insts.get(i as usize).and_then(|inst| inst.op()) else {
                    return;
                };
                if a.pressure.at(b, Some(i), c) < threshold {
                    return;
                }
                let defined_here = |v: Value| op.defs.iter().any(|d| d.value == v);
                for &v in live.values() {
                    let state = &mut states[v.index()];
                    if *state == Look::Unseen {
                        let could = f.value(v).class == c && planner.single_recomputable(v);
                        *state = if could { Look::Candidate } else { Look::Never };
                    }
                    if *state != Look::Candidate || defined_here(v) {
                        continue;
                    }
                    let relief = match reliefs[v.index()] {
                        Some((block, relief)) if block == b => relief,
                        _ => {
                            let relief = planner.relief(v, b);
                            reliefs[v.index()] = Some((b, relief));
                            relief
                        }
                    };
                    if relief.takes_off(i) {
                        *state = Look::Relieved;
                    }
                }
            });
        }
        let mut values: Vec<Value> = (0..f.values.len())
            .filter(|&k| states[k] == Look::Relieved)
            .map(|k| Value(k as u32))
            .collect();
        values.retain(|&v| self.plan(v).is_some());
        values
    }

    /// Where in block `b` recomputing `v` in its reading blocks leaves it dead.
    fn relief(&self, v: Value, b: Block) -> Relief {
        let Some((home, Some(_))) = self.def[v.index()] else {
            return Relief::NOWHERE;
        };
        match self.readings[v.index()].iter().find(|r| r.block == b) {
            None => Relief::EVERYWHERE,
            Some(r) => Relief {
                before: if b == home { 0 } else { r.first },
                after: if r.leaves { u32::MAX } else { r.last },
            },
        }
    }

    /// The plan recomputing `v`, when every reading block can have one.
    fn plan(&mut self, v: Value) -> Option<&Plan> {
        if !self.plans.contains_key(&v) {
            let plan = self.make_plan(v);
            self.plans.insert(v, plan);
        }
        self.plans[&v].as_ref()
    }

    fn make_plan(&mut self, v: Value) -> Option<Plan> {
        let (home, Some(_)) = self.def[v.index()]? else {
            return None;
        };
        if !self.single_recomputable(v) {
            return None;
        }
        let mut plan = Plan {
            value: v,
            copies: Vec::new(),
            relies_on: Vec::new(),
        };
        let readings = self.readings[v.index()].clone();
        for r in readings.iter().filter(|r| r.block != home) {
            let at = (r.block, r.first);
            let mut chain = Vec::new();
            self.chain(v, at, MAX_DEPTH, &mut chain, &mut plan.relies_on)?;
            plan.copies.push((at, chain));
        }
        (!plan.copies.is_empty()).then_some(plan)
    }

    /// Whether `v` is the one definition of an operation the verifier may recompute in
    /// another block: one that reads no fixed register, since another block may hold
    /// another value in it (AMD `$exec` inside a divergent region).
    fn single_recomputable(&self, v: Value) -> bool {
        let Some((b, Some(i))) = self.def[v.index()] else {
            return false;
        };
        self.f.block(b).insts[i as usize].op().is_some_and(|op| {
            op.defs.len() == 1 && op.regs.is_empty() && recomputable(self.f, self.target, op, &[])
        })
    }

    /// Appends to `chain` the copies recomputing `v` at `at` (operands first), and to
    /// `relies_on` the operands read there as they are; `None` when some operand is neither
    /// at hand nor recomputable within `depth` operations.
    fn chain(
        &mut self,
        v: Value,
        at: Point,
        depth: usize,
        chain: &mut Vec<Value>,
        relies_on: &mut Vec<Value>,
    ) -> Option<()> {
        let Some((b, Some(i))) = self.def[v.index()] else {
            return None;
        };
        let op = self.f.block(b).insts[i as usize].op()?;
        let operands: Vec<Value> = op.uses().map(|u| u.value).collect();
        for x in operands {
            if self.live_before(x, at) || self.may_hold(v, x) {
                relies_on.push(x);
            } else if self.remat_op(x) || (depth > 1 && self.single_recomputable(x)) {
                self.chain(x, at, depth - 1, chain, relies_on)?;
            } else {
                return None;
            }
        }
        if !chain.contains(&v) {
            chain.push(v);
        }
        Some(())
    }

    /// Whether `x` is defined by a `remat` operation (no operands: one value anywhere).
    fn remat_op(&self, x: Value) -> bool {
        let Some((b, Some(i))) = self.def[x.index()] else {
            return false;
        };
        self.f.block(b).insts[i as usize]
            .op()
            .is_some_and(|op| op.remat && op.defs.len() == 1)
    }

    /// Whether operand `x` may be held longer for `v`: `v`'s class is scarcer.
    fn may_hold(&self, v: Value, x: Value) -> bool {
        let (cv, cx) = (self.f.value(v).class, self.f.value(x).class);
        cv != cx && self.target.class(cv).units < self.target.class(cx).units
    }

    /// Whether `x` is live just before point `at`.
    fn live_before(&self, x: Value, (b, i): Point) -> bool {
        let defined_before = match self.def[x.index()] {
            Some((d, at)) if d == b => at.is_none_or(|k| k < i),
            _ => self.a.liveness.live_in(b).binary_search(&x).is_ok(),
        };
        let read_after = self.a.liveness.live_out(b).binary_search(&x).is_ok()
            || self.readings[x.index()]
                .iter()
                .any(|r| r.block == b && r.last >= i);
        defined_before && read_after
    }

    /// The plans of `wanted` (in order) that can be taken together.
    fn choose(&mut self, wanted: &[Value]) -> Vec<Plan> {
        let mut taken: Vec<Plan> = Vec::new();
        let mut relied: Vec<Value> = Vec::new();
        for &v in wanted {
            let Some(plan) = self.plan(v).cloned() else {
                continue;
            };
            let clashes = relied.contains(&v)
                || plan
                    .relies_on
                    .iter()
                    .any(|x| taken.iter().any(|p| p.value == *x));
            if !clashes {
                relied.extend(plan.relies_on.iter().copied());
                taken.push(plan);
            }
        }
        taken
    }
}

/// Inserts every plan's copies and points the readings of each block at its copy.
fn apply(f: &mut Function, plans: &[Plan], defs: &[Option<Place>], remats: &mut Remats) {
    let mut inserts: Vec<(Point, Vec<Inst>)> = Vec::new();
    for plan in plans {
        for &(at, ref chain) in &plan.copies {
            let (insts, copy) = copies(f, chain, defs, remats);
            rename_readings(f, at.0, plan.value, copy);
            inserts.push((at, insts));
        }
    }
    inserts.sort_by_key(|&((b, i), _)| (b, std::cmp::Reverse(i)));
    for ((b, i), insts) in inserts {
        let at = i as usize;
        f.blocks[b.index()].insts.splice(at..at, insts);
    }
}

/// Copies of the chain's definitions (each an operation's only definition, at its place in
/// `defs`), each reading the copies before it; and the last copy's value.
fn copies(
    f: &mut Function,
    chain: &[Value],
    defs: &[Option<Place>],
    remats: &mut Remats,
) -> (Vec<Inst>, Value) {
    let mut renamed: FxHashMap<Value, Value> = FxHashMap::default();
    let mut out = Vec::with_capacity(chain.len());
    for &v in chain {
        let Some((b, Some(i))) = defs[v.index()] else {
            continue;
        };
        let mut inst = f.blocks[b.index()].insts[i as usize].clone();
        let copy = remats.new_copy(f, v);
        if let InstKind::Op(op) = &mut inst.kind {
            op.defs.iter_mut().for_each(|d| d.value = copy);
            for o in &mut op.operands {
                if let Operand::Value(u) = o {
                    u.value = renamed.get(&u.value).copied().unwrap_or(u.value);
                }
            }
        }
        renamed.insert(v, copy);
        out.push(inst);
    }
    let last = chain.last().and_then(|v| renamed.get(v)).copied();
    (out, last.unwrap_or(chain[0]))
}

/// Readings of `v` in block `b` (operands, terminator, phi arguments on its outgoing
/// edges) read `copy` instead.
fn rename_readings(f: &mut Function, b: Block, v: Value, copy: Value) {
    let swap = |value: &mut Value| {
        if *value == v {
            *value = copy;
        }
    };
    let block = &mut f.blocks[b.index()];
    for inst in &mut block.insts {
        if let InstKind::Op(op) = &mut inst.kind {
            for o in &mut op.operands {
                if let Operand::Value(u) = o {
                    swap(&mut u.value);
                }
            }
        }
    }
    block
        .term
        .uses_mut()
        .iter_mut()
        .for_each(|u| swap(&mut u.value));
    let succs: Vec<Block> = block.term.successors().collect();
    for s in succs {
        for phi in &mut f.blocks[s.index()].phis {
            phi.args
                .iter_mut()
                .filter(|arg| arg.block == b)
                .for_each(|arg| swap(&mut arg.value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Planner;
    use crate::analysis::Analysis;
    use crate::program::{Block, Function, Value};

    /// `%k` read at the end of its block and twice in the next; `%z` only in the last.
    const READ_LATER: &str = "target sm_80
func @f {
entry:
  %a:r2 = ld.param.u64 remat reads
  %x:r1 = ld.global.b32 %a reads
  %k:r1 = add.s32 %x, 4
  %y:r1 = ld.global.b32 %a reads
  %z:r1 = add.s32 %y, %k
  jump next
next:
  %u:r1 = ld.global.b32 %a reads
  %w:r1 = add.s32 %u, %k
  %v:r1 = add.s32 %w, %k
  st.global.b32 %a, %v writes
  jump last
last:
  st.global.b32 %a, %z writes
  ret
}
";

    fn value(f: &Function, name: &str) -> Value {
        let k = f.values.iter().position(|d| d.name == name);
        Value(k.unwrap_or_else(|| panic!("no %{name}")) as u32)
    }

    /// The instructions of block `b` that recomputing `name` takes it off.
    fn taken_off(name: &str, b: u32) -> Vec<u32> {
        let p = crate::parse(READ_LATER).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let a = Analysis::new(f, &p.target);
        let planner = Planner::new(f, &a, &p.target);
        let relief = planner.relief(value(f, name), Block(b));
        let insts = f.blocks[b as usize].insts.len() as u32;
        (0..insts).filter(|&i| relief.takes_off(i)).collect()
    }

    #[test]
    fn a_value_is_taken_off_where_its_block_does_not_read_it_yet_or_any_more() {
        assert_eq!(taken_off("k", 0), Vec::<u32>::new());
        assert_eq!(taken_off("k", 1), vec![0, 3]);
        assert_eq!(taken_off("z", 1), vec![0, 1, 2, 3]);
        assert_eq!(taken_off("x", 0), vec![3, 4]);
    }
}
