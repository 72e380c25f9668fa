//! Coverage: which features a program exercises, counted, so a fuzzing campaign or a
//! property test can show that every shape and constraint was generated.
//!
//! Features are read from the program itself, not from the generator's bookkeeping, so
//! the counts also describe hand-written or shrunk programs. Loops are found from the
//! back edges of a depth-first search from the entry (exactly the dominator back edges on
//! the reducible CFGs the generator builds); a loop's body is what reaches its latches
//! backwards without passing the header.

use std::fmt;

use super::overlaps;
use crate::program::*;
use crate::target::Target;

macro_rules! features {
    ($($name:ident => $text:literal,)*) => {
        /// One thing a program can exercise.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Feature { $($name,)* }

        impl Feature {
            /// Every feature, in declaration order.
            pub const ALL: &'static [Feature] = &[$(Feature::$name,)*];

            pub fn name(self) -> &'static str {
                match self { $(Feature::$name => $text,)* }
            }
        }
    };
}

features! {
    Diamond => "diamond",
    Loop => "loop",
    SelfLoop => "self loop",
    NestedLoop => "nested loop",
    MultiBackEdge => "several back edges",
    MultiExitLoop => "multi-exit loop",
    DivergentBackEdge => "divergent back edge",
    UniformBranch => "uniform branch",
    DivergentBranch => "divergent branch",
    JoinIsThenTarget => "join is a branch target",
    CriticalEdge => "critical edge",
    UnreachableBlock => "unreachable block",
    JoinPhi => "join phi",
    LoopHeaderPhi => "loop-header phi",
    UniformPhi => "uniform phi",
    PhiSwapCycle => "phi swap cycle",
    UniformValue => "uniform value",
    CopyViaValue => "value of a class whose cycles copy through another",
    Tuple1 => "tuple 1",
    Tuple2 => "tuple 2",
    Tuple3 => "tuple 3",
    Tuple4 => "tuple 4",
    Tuple8 => "tuple 8",
    Tuple16 => "tuple 16",
    MultiDef => "several defs",
    Immediate => "immediate",
    FixedDef => "fixed def",
    FixedUse => "fixed use",
    FixedRet => "fixed ret use",
    FixedTwice => "one value fixed to two registers",
    TiedKilled => "tied to a killed use",
    TiedLive => "tied to a live use",
    EarlyClobber => "early-clobber",
    Prefer => "prefer",
    Remat => "remat",
    ReadsMemory => "reads",
    WritesMemory => "writes",
    Barrier => "barrier",
    Control => "control",
    Carry => "carry",
    Freq => "block frequency",
    HighPressure => "high pressure (>= 8 uses)",
    ConflictingFixed => "conflicting fixed",
    SeveralFunctions => "several functions",
    GenericTarget => "generic target",
}

/// How many times each feature was hit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureSet {
    counts: Vec<u64>,
}

impl FeatureSet {
    pub fn count(&self, f: Feature) -> u64 {
        self.counts.get(f as usize).copied().unwrap_or(0)
    }

    pub fn hits(&self, f: Feature) -> bool {
        self.count(f) > 0
    }

    pub fn add(&mut self, f: Feature, n: u64) {
        if self.counts.len() < Feature::ALL.len() {
            self.counts.resize(Feature::ALL.len(), 0);
        }
        self.counts[f as usize] += n;
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &FeatureSet) {
        for &f in Feature::ALL {
            self.add(f, other.count(f));
        }
    }

    /// Features of `wanted` never hit.
    pub fn missing(&self, wanted: &[Feature]) -> Vec<Feature> {
        wanted.iter().copied().filter(|&f| !self.hits(f)).collect()
    }
}

impl fmt::Display for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &feature in Feature::ALL {
            writeln!(f, "{:>34} {}", feature.name(), self.count(feature))?;
        }
        Ok(())
    }
}

/// The features `p` hits, each counted once per occurrence.
pub fn features(p: &Program) -> FeatureSet {
    let mut set = FeatureSet::default();
    set.add(Feature::SeveralFunctions, u64::from(p.functions.len() > 1));
    set.add(Feature::GenericTarget, u64::from(p.target.spec.is_some()));
    for f in &p.functions {
        let cfg = Shape::of(f);
        cfg.count_blocks(f, &mut set);
        cfg.count_loops(f, &mut set);
        count_values(f, &p.target, &mut set);
        count_phis(f, &p.target, &cfg, &mut set);
        count_ops(f, &cfg, &mut set);
    }
    set
}

/// Successors, predecessors, reachability and DFS back edges of one function.
struct Shape {
    succs: Vec<Vec<Block>>,
    preds: Vec<Vec<Block>>,
    reachable: Vec<bool>,
    back_edges: Vec<(Block, Block)>,
}

impl Shape {
    fn of(f: &Function) -> Shape {
        let n = f.blocks.len();
        let succs: Vec<Vec<Block>> = f
            .blocks
            .iter()
            .map(|b| b.term.successors().collect())
            .collect();
        let mut preds = vec![Vec::new(); n];
        for (b, ss) in succs.iter().enumerate() {
            for s in ss {
                preds[s.index()].push(Block(b as u32));
            }
        }
        let (reachable, back_edges) = dfs(&succs);
        Shape {
            succs,
            preds,
            reachable,
            back_edges,
        }
    }

    fn count_blocks(&self, f: &Function, set: &mut FeatureSet) {
        for b in f.block_ids() {
            let data = f.block(b);
            set.add(
                Feature::UnreachableBlock,
                u64::from(!self.reachable[b.index()]),
            );
            set.add(Feature::Freq, u64::from(data.freq.is_some()));
            if !self.reachable[b.index()] {
                continue;
            }
            let succs = &self.succs[b.index()];
            let critical = succs.len() > 1 && succs.iter().any(|s| self.preds[s.index()].len() > 1);
            set.add(Feature::CriticalEdge, u64::from(critical));
            if let Terminator::Branch {
                kind,
                then_block,
                else_block,
                ..
            } = data.term
            {
                let feature = match kind {
                    BranchKind::Uniform => Feature::UniformBranch,
                    BranchKind::Divergent => Feature::DivergentBranch,
                };
                set.add(feature, 1);
                let single = |s: Block| self.preds[s.index()] == [b];
                let diamond = then_block != else_block && single(then_block) && single(else_block);
                set.add(Feature::Diamond, u64::from(diamond));
                let join_first =
                    !single(then_block) && single(else_block) && !self.is_header(then_block);
                set.add(Feature::JoinIsThenTarget, u64::from(join_first));
            }
        }
    }

    fn is_header(&self, b: Block) -> bool {
        self.back_edges.iter().any(|&(_, h)| h == b)
    }

    /// The blocks of the loop headed by `header`, as a mask.
    fn loop_body(&self, header: Block) -> Vec<bool> {
        let mut body = vec![false; self.succs.len()];
        body[header.index()] = true;
        let mut work: Vec<Block> = self
            .back_edges
            .iter()
            .filter(|e| e.1 == header)
            .map(|e| e.0)
            .collect();
        while let Some(b) = work.pop() {
            if !std::mem::replace(&mut body[b.index()], true) {
                work.extend(
                    self.preds[b.index()]
                        .iter()
                        .copied()
                        .filter(|p| self.reachable[p.index()]),
                );
            }
        }
        body
    }

    fn count_loops(&self, f: &Function, set: &mut FeatureSet) {
        let mut headers: Vec<Block> = self.back_edges.iter().map(|e| e.1).collect();
        headers.sort();
        headers.dedup();
        for &h in &headers {
            let body = self.loop_body(h);
            set.add(Feature::Loop, 1);
            let nested = headers.iter().any(|&o| o != h && body[o.index()]);
            set.add(Feature::NestedLoop, u64::from(nested));
            let exits = (0..body.len())
                .filter(|&b| body[b])
                .flat_map(|b| self.succs[b].iter())
                .filter(|s| !body[s.index()])
                .count();
            set.add(Feature::MultiExitLoop, u64::from(exits > 1));
            let latches = self.back_edges.iter().filter(|e| e.1 == h).count();
            set.add(Feature::MultiBackEdge, u64::from(latches > 1));
        }
        for &(latch, header) in &self.back_edges {
            set.add(Feature::SelfLoop, u64::from(latch == header));
            let divergent = matches!(
                f.block(latch).term,
                Terminator::Branch {
                    kind: BranchKind::Divergent,
                    ..
                }
            );
            set.add(Feature::DivergentBackEdge, u64::from(divergent));
        }
    }

    /// Whether `to` can be reached from the successors of `from`.
    fn reaches_after(&self, from: Block, to: Block) -> bool {
        let mut seen = vec![false; self.succs.len()];
        let mut work = self.succs[from.index()].clone();
        while let Some(b) = work.pop() {
            if b == to {
                return true;
            }
            if !std::mem::replace(&mut seen[b.index()], true) {
                work.extend(self.succs[b.index()].iter().copied());
            }
        }
        false
    }
}

/// Reachability from block 0 and the edges to a block on the DFS stack.
pub(super) fn dfs(succs: &[Vec<Block>]) -> (Vec<bool>, Vec<(Block, Block)>) {
    let n = succs.len();
    let mut seen = vec![false; n];
    let mut on_stack = vec![false; n];
    let mut back = Vec::new();
    if n == 0 {
        return (seen, back);
    }
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    seen[0] = true;
    on_stack[0] = true;
    while let Some(top) = stack.last_mut() {
        let (b, next) = *top;
        top.1 += 1;
        match succs[b].get(next) {
            Some(s) if on_stack[s.index()] => back.push((Block(b as u32), *s)),
            Some(s) if !seen[s.index()] => {
                seen[s.index()] = true;
                on_stack[s.index()] = true;
                stack.push((s.index(), 0));
            }
            Some(_) => {}
            None => {
                on_stack[b] = false;
                stack.pop();
            }
        }
    }
    (seen, back)
}

fn count_values(f: &Function, target: &Target, set: &mut FeatureSet) {
    for v in &f.values {
        set.add(
            Feature::UniformValue,
            u64::from(target.class(v.class).uniform),
        );
        set.add(
            Feature::CopyViaValue,
            u64::from(target.class(v.class).copy_temp.is_some()),
        );
        let tuple = match v.size {
            1 => Feature::Tuple1,
            2 => Feature::Tuple2,
            3 => Feature::Tuple3,
            4 => Feature::Tuple4,
            8 => Feature::Tuple8,
            _ => Feature::Tuple16,
        };
        set.add(tuple, 1);
    }
}

fn count_phis(f: &Function, target: &Target, cfg: &Shape, set: &mut FeatureSet) {
    for b in f.block_ids() {
        let phis = &f.block(b).phis;
        let feature = if cfg.is_header(b) {
            Feature::LoopHeaderPhi
        } else {
            Feature::JoinPhi
        };
        set.add(feature, phis.len() as u64);
        let uniform = phis
            .iter()
            .filter(|p| target.class(f.value(p.def.value).class).uniform);
        set.add(Feature::UniformPhi, uniform.count() as u64);
        for &pred in &cfg.preds[b.index()] {
            set.add(Feature::PhiSwapCycle, u64::from(has_cycle(phis, pred)));
        }
    }
}

/// Whether, on the edge from `pred`, some phis' arguments are each other's defs in a cycle.
fn has_cycle(phis: &[Phi], pred: Block) -> bool {
    let source = |i: usize| -> Option<usize> {
        let arg = phis[i].args.iter().find(|a| a.block == pred)?;
        phis.iter().position(|p| p.def.value == arg.value)
    };
    (0..phis.len()).any(|start| {
        let mut i = start;
        for _ in 0..phis.len() {
            match source(i) {
                Some(j) if j == start => return i != start,
                Some(j) => i = j,
                None => return false,
            }
        }
        false
    })
}

fn count_ops(f: &Function, cfg: &Shape, set: &mut FeatureSet) {
    for b in f.block_ids() {
        let data = f.block(b);
        let fixed_ret = data
            .term
            .uses()
            .iter()
            .filter(|u| u.fixed.is_some())
            .count();
        if matches!(data.term, Terminator::Ret { .. }) {
            set.add(Feature::FixedRet, fixed_ret as u64);
        }
        for (i, op) in data
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| Some((i, inst.op()?)))
        {
            count_op(op, set);
            for d in op.defs.iter().filter(|d| d.tied.is_some()) {
                let live = tied_value(op, d).is_some_and(|v| used_after(f, cfg, b, i, v));
                let feature = if live {
                    Feature::TiedLive
                } else {
                    Feature::TiedKilled
                };
                set.add(feature, 1);
            }
        }
    }
}

fn count_op(op: &Op, set: &mut FeatureSet) {
    let uses: Vec<&Use> = op.uses().collect();
    set.add(Feature::MultiDef, u64::from(op.defs.len() > 1));
    let immediates = op
        .operands
        .iter()
        .filter(|o| matches!(o, Operand::Imm(_)))
        .count();
    set.add(Feature::Immediate, immediates as u64);
    set.add(
        Feature::FixedDef,
        op.defs.iter().filter(|d| d.fixed.is_some()).count() as u64,
    );
    set.add(
        Feature::FixedUse,
        uses.iter().filter(|u| u.fixed.is_some()).count() as u64,
    );
    set.add(
        Feature::EarlyClobber,
        op.defs.iter().filter(|d| d.early_clobber).count() as u64,
    );
    set.add(
        Feature::Prefer,
        op.defs.iter().filter(|d| d.prefer.is_some()).count() as u64,
    );
    set.add(Feature::Remat, u64::from(op.remat));
    set.add(Feature::HighPressure, u64::from(uses.len() >= 8));
    set.add(
        Feature::ConflictingFixed,
        u64::from(has_conflicting_fixed(op)),
    );
    set.add(Feature::FixedTwice, u64::from(fixed_twice(&uses)));
    let effect = match op.effect {
        Effect::None => None,
        Effect::ReadsMemory => Some(Feature::ReadsMemory),
        Effect::WritesMemory => Some(Feature::WritesMemory),
        Effect::Barrier => Some(Feature::Barrier),
        Effect::Control => Some(Feature::Control),
        Effect::Carry => Some(Feature::Carry),
    };
    if let Some(feature) = effect {
        set.add(feature, 1);
    }
}

/// Whether one value is used twice with different fixed registers.
fn fixed_twice(uses: &[&Use]) -> bool {
    uses.iter().enumerate().any(|(i, a)| {
        a.fixed.is_some()
            && uses[i + 1..]
                .iter()
                .any(|b| a.value == b.value && b.fixed.is_some() && a.fixed != b.fixed)
    })
}

fn tied_value(op: &Op, d: &Def) -> Option<Value> {
    op.operands
        .get(usize::from(d.tied?))?
        .as_use()
        .map(|u| u.value)
}

/// Whether `v` is used after instruction `at` of `b`: later in `b`, by its terminator, or
/// anywhere reachable from `b`'s successors (phi arguments count at their predecessor).
fn used_after(f: &Function, cfg: &Shape, b: Block, at: usize, v: Value) -> bool {
    f.block_ids().any(|other| {
        let data = f.block(other);
        let in_phis = f.block_ids().any(|s| {
            f.block(s)
                .phis
                .iter()
                .flat_map(|p| &p.args)
                .any(|a| a.block == other && a.value == v)
        });
        let in_term = data.term.uses().iter().any(|u| u.value == v);
        let in_ops = |skip: usize| {
            data.insts
                .iter()
                .skip(skip)
                .filter_map(Inst::op)
                .any(|op| op.uses().any(|u| u.value == v))
        };
        if other == b && (in_ops(at + 1) || in_term || in_phis) {
            return true;
        }
        cfg.reaches_after(b, other) && (in_ops(0) || in_term || in_phis)
    })
}

/// Two distinct values among the uses, or two defs, or an early-clobber def and a use,
/// fixed to overlapping registers.
fn has_conflicting_fixed(op: &Op) -> bool {
    let uses: Vec<(Value, Location)> = op
        .uses()
        .filter_map(|u| Some((u.value, u.fixed?)))
        .collect();
    let defs: Vec<(Value, Location)> = op
        .defs
        .iter()
        .filter_map(|d| Some((d.value, d.fixed?)))
        .collect();
    let early: Vec<Location> = op
        .defs
        .iter()
        .filter(|d| d.early_clobber)
        .filter_map(|d| d.fixed)
        .collect();
    let clash = |xs: &[(Value, Location)]| {
        xs.iter()
            .enumerate()
            .any(|(i, a)| xs[i + 1..].iter().any(|b| a.0 != b.0 && overlaps(a.1, b.1)))
    };
    clash(&uses) || clash(&defs) || early.iter().any(|&e| uses.iter().any(|u| overlaps(e, u.1)))
}
