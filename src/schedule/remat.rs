//! Rematerialisation before allocation: cheap pure values are recomputed next to their
//! later uses instead of being held across a block's peak.
//!
//! Rematerialisation replaces a live range by a recomputation where the value's operands
//! are at hand (Briggs, Cooper & Torczon, "Rematerialization", PLDI 1992). Here it runs
//! before allocation and is driven by pressure, like the rematerialising stage of LLVM's
//! GCN scheduler and the recomputation ptxas does: per block and class, the point of
//! highest demand is found (by the same pressure rule as the scheduler, [`super::peak`]);
//! every value of the class live across it, defined in the block by a cheap pure
//! operation ([`recomputable`]) and dead after the block, is a candidate for a copy of its
//! definition placed right before its next use. The copy reads the definition's operands,
//! which must then be live there: an operand live there anyway costs nothing, any other is
//! either held longer or recomputed in turn (a *chain*, up to [`MAX_DEPTH`] operations).
//! Candidates are grouped by the values they keep live across the peak, since one kept
//! source serves many derived values (a packed `b32` unpacked into two halves and each
//! converted to `f32`: holding the `b32` and recomputing unpack and conversion halves the
//! units). Groups are taken greedily by the units they free at the peak less the units
//! their sources add there, a source taken counting as free for the next groups; other
//! classes' sources must fit those classes' budgets at the peak.
//!
//! A round applies its groups (copies, with fresh values, and the uses from the copy on
//! renamed to them) and measures the block again. Rounds go on while the block's score
//! (units over budget, then units) does not grow; the block keeps the state of the last
//! round that lowered it, so a block never gets worse and nothing is recomputed that did
//! not help. With [`Goal::StopAtBudget`] a block whose classes all fit their budgets is left
//! alone.
//!
//! The copies are ordinary operations for the allocator. After allocation [`Remats::fold`]
//! turns each into a `remat` instruction of the original value reading the copy's operand
//! locations, so the allocation is written against the original program: the verifier
//! accepts such a `remat` only for a pure definition of the same block, reading that
//! definition's operands, each of which it checks holds its value, and the interpreter
//! runs the definition again on them.

use super::peak::{step_back, Live};
use super::{score, Goal};
use crate::program::{
    Effect, Function, Inst, InstKind, Op, Operand, RegAccessKind, Use, Value, ValueData,
};
use crate::target::Target;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::smallvec;
use std::collections::{BTreeMap, BTreeSet};

/// The longest chain of operations recomputed for one value.
pub const MAX_DEPTH: usize = 3;

/// Opcodes (up to the first `.`) cheap enough to recompute: one ALU instruction on the
/// GPUs modelled (PTX integer and float arithmetic, moves, conversions, compares, selects,
/// bit operations). Multi-function-unit operations (`div`, `sqrt`, `ex2`, …), memory and
/// cross-lane operations are not in it.
const CHEAP: &[&str] = &[
    "mov", "cvt", "cvta", "add", "sub", "mul", "mad", "fma", "neg", "abs", "min", "max", "shl",
    "shr", "shf", "and", "or", "xor", "not", "lop3", "bfe", "bfi", "prmt", "selp", "setp", "set",
];

/// AMDGPU VALU instructions (MIR names without the `V_` prefix and the `_e32`/`_e64`
/// encoding suffix) cheap enough to recompute: full-rate single-cycle vector ALU
/// operations on gfx9 and RDNA3 — moves, 32-bit integer add/subtract, shifts and bit
/// operations, bit-field extract/insert, byte permute, selects on a lane mask, and `f32`
/// add, multiply, fused multiply-add, min and max (AMD, "AMD Instinct MI300 ISA Reference
/// Guide" and "RDNA3 Instruction Set Architecture", chapter "Vector ALU Operations").
/// Transcendentals (`V_RCP_F32`, …), `V_MUL_LO_U32` (quarter rate), DPP and SDWA forms,
/// cross-lane operations (`V_PERMLANE*`, `V_READLANE_B32`) and the two-address `V_*MAC*`
/// forms are not in it.
const CHEAP_VALU: &[&str] = &[
    "MOV_B32",
    "ADD_U32",
    "SUB_U32",
    "SUBREV_U32",
    "ADD3_U32",
    "LSHL_ADD_U32",
    "ADD_LSHL_U32",
    "LSHLREV_B32",
    "LSHRREV_B32",
    "ASHRREV_I32",
    "AND_B32",
    "OR_B32",
    "XOR_B32",
    "NOT_B32",
    "OR3_B32",
    "AND_OR_B32",
    "XOR3_B32",
    "BFE_U32",
    "BFE_I32",
    "BFI_B32",
    "PERM_B32",
    "CNDMASK_B32",
    "ADD_F32",
    "SUB_F32",
    "MUL_F32",
    "FMA_F32",
    "MIN_F32",
    "MAX_F32",
];

/// Whether `opcode` is one ALU instruction: a PTX opcode whose base is in [`CHEAP`], or an
/// AMDGPU VALU instruction of [`CHEAP_VALU`] in its VOP2/VOP3 encoding.
fn cheap(opcode: &str) -> bool {
    let base = opcode.split('.').next().unwrap_or_default();
    let valu = opcode
        .strip_prefix("V_")
        .and_then(|o| o.strip_suffix("_e64").or_else(|| o.strip_suffix("_e32")));
    CHEAP.contains(&base) || valu.is_some_and(|name| CHEAP_VALU.contains(&name))
}

/// The recomputations added to a function, for [`Remats::fold`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Remats {
    /// The first value index the copies take; every value from it on is a copy.
    first_copy: usize,
    /// Per copy (from `first_copy` on), the original value it recomputes.
    origin: Vec<Value>,
    /// Phis replaced by a select operation defining them ([`super::select`]).
    selects: Vec<Value>,
}

impl Remats {
    /// No recomputation yet in `f`: copies will take values from its last on.
    pub fn new(f: &Function) -> Remats {
        Remats {
            first_copy: f.values.len(),
            origin: Vec::new(),
            selects: Vec::new(),
        }
    }

    /// The operations added: copies, and the selects that stand for phis.
    pub fn added(&self) -> usize {
        self.origin.len() + self.selects.len()
    }

    /// Records that phi `v` is now defined by a select operation, which [`Remats::fold`]
    /// writes as a `remat` of the phi.
    pub fn note_select(&mut self, v: Value) {
        self.selects.push(v);
    }

    /// Whether `v` is one of the copies (the allocator may append values of its own
    /// after them).
    pub fn is_copy(&self, v: Value) -> bool {
        (self.first_copy..self.first_copy + self.origin.len()).contains(&v.index())
    }

    /// The original value of `v` (itself unless it is a copy).
    fn root(&self, v: Value) -> Value {
        if self.is_copy(v) {
            self.origin[v.index() - self.first_copy]
        } else {
            v
        }
    }

    /// A fresh value of `f` for a copy of `v`, recorded as recomputing `v`'s original.
    pub fn new_copy(&mut self, f: &mut Function, v: Value) -> Value {
        let copy = Value(f.values.len() as u32);
        let data = f.value(v).clone();
        f.values.push(ValueData {
            name: compact_str::format_compact!("{}.remat{}", data.name, self.origin.len()),
            ..data
        });
        self.origin.push(self.root(v));
        copy
    }

    /// Keeps each copy in `ops` after the original definition it recomputes, when that is
    /// in the block too: an operation reading the copy then comes after the definition of
    /// the value it reads, as in the original program (the verifier's order rule).
    pub fn order_copies(&self, ops: &[&Op], deps: &mut super::deps::Deps) {
        if self.origin.is_empty() {
            return;
        }
        let defined_at: FxHashMap<Value, u32> = ops
            .iter()
            .enumerate()
            .flat_map(|(k, op)| op.defs.iter().map(move |d| (d.value, k as u32)))
            .collect();
        for (k, op) in ops.iter().enumerate() {
            let Some(d) = op.defs.first().filter(|d| self.is_copy(d.value)) else {
                continue;
            };
            if let Some(&original) = defined_at.get(&self.root(d.value)) {
                deps.add_edge(original, k as u32);
            }
        }
    }

    /// Rewrites an allocation of the rematerialised function as one of the original: each
    /// copy's operation becomes `remat LOC <- %original (its operands)`, every other mention
    /// of a copy names its original, and each copy's value takes its original's name (as
    /// the values the allocator adds for a value do), so nothing names a copy.
    pub fn fold(&self, allocated: &mut Function) {
        if self.added() == 0 {
            return;
        }
        for block in &mut allocated.blocks {
            for phi in &mut block.phis {
                phi.args
                    .iter_mut()
                    .for_each(|a| a.value = self.root(a.value));
            }
            for inst in &mut block.insts {
                self.fold_inst(&mut inst.kind);
            }
        }
        for (k, &v) in self.origin.iter().enumerate() {
            let name = allocated.values[v.index()].name.clone();
            allocated.values[self.first_copy + k].name = name;
        }
    }

    fn fold_inst(&self, kind: &mut InstKind) {
        let root_use = |u: &Use| Use {
            value: self.root(u.value),
            ..*u
        };
        match kind {
            InstKind::Op(op) => {
                let copy = match op.defs.as_slice() {
                    [d] if self.is_copy(d.value) || self.selects.contains(&d.value) => d.loc,
                    _ => None,
                };
                if let Some(dst) = copy {
                    *kind = InstKind::Remat {
                        dst,
                        value: self.root(op.defs[0].value),
                        uses: op.uses().map(root_use).collect(),
                    };
                    return;
                }
                for o in &mut op.operands {
                    if let Operand::Value(u) = o {
                        u.value = self.root(u.value);
                    }
                }
            }
            InstKind::ParallelCopy(moves) => {
                moves.iter_mut().for_each(|m| m.value = self.root(m.value));
            }
            InstKind::Spill(m) | InstKind::Reload(m) => m.value = self.root(m.value),
            InstKind::Remat { value, uses, .. } => {
                *value = self.root(*value);
                uses.iter_mut().for_each(|u| *u = root_use(u));
            }
            InstKind::Swap(..) => {}
        }
    }
}

/// Whether def `v` of `op` may be recomputed: a `remat` operation, or a cheap pure one
/// with operands (one definition, or a `mov` unpacking a value into parts) whose
/// definitions and operands take no constraint and are per-lane, and whose fixed
/// registers are only read, registers its block (`block_writes`, [`written_registers`])
/// never writes — so they hold the same value wherever in the block it runs again (AMD
/// `$exec` and `$mode`, read by every VALU instruction). These are the definitions the
/// verifier accepts a recomputation of.
pub fn recomputable(f: &Function, target: &Target, op: &Op, block_writes: &[&str]) -> bool {
    let base = op.opcode.split('.').next().unwrap_or_default();
    let unconstrained = op.effect == Effect::None
        && op
            .regs
            .iter()
            .all(|r| r.kind == RegAccessKind::Read && !block_writes.contains(&r.reg.as_str()))
        && op.uses().all(|u| u.fixed.is_none())
        && op.defs.iter().all(|d| {
            d.fixed.is_none()
                && d.tied.is_none()
                && !d.early_clobber
                && !d.pinned
                && !target.class(f.value(d.value).class).uniform
        });
    let cheap = op.remat
        || (op.uses().next().is_some()
            && cheap(&op.opcode)
            && (op.defs.len() == 1 || base == "mov"));
    unconstrained && cheap
}

/// The fixed registers some operation of `ops` writes or clobbers, sorted and distinct.
pub fn written_registers<'o>(ops: &[&'o Op]) -> Vec<&'o str> {
    let mut regs: Vec<&str> = ops
        .iter()
        .flat_map(|op| &op.regs)
        .filter(|r| r.kind != RegAccessKind::Read)
        .map(|r| r.reg.as_str())
        .collect();
    regs.sort_unstable();
    regs.dedup();
    regs
}

/// One round on block `b` of `f` (valid SSA, operations only; `live_end` is what is live
/// after its operations): per class, the recomputations that lower the demand at its peak
/// point, applied. Copies get fresh values, which `remats` records. Returns whether any
/// was added. `live` is a scratch set made for `f` before any recomputation.
pub fn round(
    f: &mut Function,
    b: usize,
    live_end: &[Value],
    target: &Target,
    (budget, goal): (&[u16], Goal),
    remats: &mut Remats,
    live: &mut Live,
) -> bool {
    let mut added = false;
    for class in 0..target.classes.len() {
        if let Some(plan) = plan_round(f, b, live_end, target, (budget, goal), class, live) {
            apply(f, b, &plan, remats);
            added = true;
        }
    }
    added
}

/// A block's instructions and the values and copies as they were.
#[derive(Debug)]
pub struct Snapshot {
    insts: Vec<Inst>,
    values: usize,
    copies: usize,
}

impl Snapshot {
    pub fn of(f: &Function, b: usize, remats: &Remats) -> Snapshot {
        Snapshot {
            insts: f.blocks[b].insts.clone(),
            values: f.values.len(),
            copies: remats.origin.len(),
        }
    }

    pub fn restore(&self, f: &mut Function, b: usize, remats: &mut Remats) {
        f.blocks[b].insts.clone_from(&self.insts);
        f.values.truncate(self.values);
        remats.origin.truncate(self.copies);
    }
}

/// A block's instructions with the values and copies added since a [`Snapshot`]: one
/// attempt at the block, to put back after another attempt from the same snapshot.
#[derive(Debug)]
pub struct Attempt {
    insts: Vec<Inst>,
    values: Vec<ValueData>,
    origin: Vec<Value>,
}

impl Snapshot {
    /// What was done to block `b` since this snapshot.
    pub fn attempt(&self, f: &Function, b: usize, remats: &Remats) -> Attempt {
        Attempt {
            insts: f.blocks[b].insts.clone(),
            values: f.values[self.values..].to_vec(),
            origin: remats.origin[self.copies..].to_vec(),
        }
    }

    /// Puts `attempt`, made from this snapshot, back in place of whatever came since.
    pub fn replay(&self, attempt: Attempt, f: &mut Function, b: usize, remats: &mut Remats) {
        self.restore(f, b, remats);
        f.blocks[b].insts = attempt.insts;
        f.values.extend(attempt.values);
        remats.origin.extend(attempt.origin);
    }
}

/// The block's score ([`score`]) in its current order; `None` if it holds a non-operation.
/// `live` is a scratch set made for `f` before any recomputation.
pub fn block_score(
    f: &Function,
    b: usize,
    live_end: &[Value],
    budget: &[u16],
    live: &mut Live,
) -> Option<(u32, u32)> {
    let ops = ops_of(f, b)?;
    let order: Vec<u32> = (0..ops.len() as u32).collect();
    live.fit(f);
    Some(score(
        &super::peak::peak(&ops, &order, live_end, live),
        budget,
    ))
}

fn ops_of(f: &Function, b: usize) -> Option<Vec<&Op>> {
    f.blocks[b].insts.iter().map(|i| i.op()).collect()
}

/// One recomputation: the chain of values to copy (operands first) before the operation
/// at `at`, the last of which is the value whose uses from `at` on take the copy.
#[derive(Clone, Debug)]
struct Remat {
    chain: Vec<Value>,
    at: usize,
}

/// Where values are defined and used in a block, and what is live at its peak point.
struct Block<'f> {
    f: &'f Function,
    ops: Vec<&'f Op>,
    def_at: FxHashMap<Value, usize>,
    uses: Uses,
    live_end: FxHashSet<Value>,
    target: &'f Target,
    /// The fixed registers the block writes ([`written_registers`]).
    writes: Vec<&'f str>,
}

impl<'f> Block<'f> {
    fn new(f: &'f Function, ops: Vec<&'f Op>, live_end: &[Value], target: &'f Target) -> Self {
        let mut def_at = FxHashMap::default();
        for (k, op) in ops.iter().enumerate() {
            for d in &op.defs {
                def_at.insert(d.value, k);
            }
        }
        Block {
            f,
            writes: written_registers(&ops),
            uses: Uses::new(&ops),
            ops,
            def_at,
            live_end: live_end.iter().copied().collect(),
            target,
        }
    }

    /// Whether `v` is read at or after operation `at` (or after the block).
    fn live_at(&self, v: Value, at: usize) -> bool {
        self.live_end.contains(&v)
            || self
                .uses
                .of(v)
                .is_some_and(|u| u.last().is_some_and(|&k| k >= at))
    }

    /// Whether `v` is defined in the block by an operation that may be recomputed, and
    /// dies in the block.
    fn recomputable(&self, v: Value) -> bool {
        !self.live_end.contains(&v)
            && self
                .def_at
                .get(&v)
                .is_some_and(|&k| recomputable(self.f, self.target, self.ops[k], &self.writes))
    }

    /// Where to recompute `v`, live across operation `p`: at the use ending the longest
    /// stretch between two of its uses that ends after `p`. The original definition stays
    /// (it is the program's own operation) and serves the uses before; rescheduling then
    /// sinks it towards them.
    fn split_point(&self, v: Value, p: usize) -> Option<usize> {
        let uses = self.uses.of(v)?;
        uses.windows(2)
            .filter(|w| w[1] > p && w[1] > w[0])
            .max_by_key(|w| (w[1] - w[0], std::cmp::Reverse(w[1])))
            .map(|w| w[1])
    }

    /// Recomputing `v` before operation `at` through `depth` levels of its definitions:
    /// the values copied (operands first) and the values that must then be live at `at`
    /// but are not yet.
    fn chain(
        &self,
        v: Value,
        at: usize,
        depth: usize,
        chain: &mut Vec<Value>,
        held: &mut BTreeSet<Value>,
    ) {
        let op = self.ops[self.def_at[&v]];
        for u in op.uses() {
            if self.live_at(u.value, at) {
                continue;
            }
            if depth > 1 && self.recomputable(u.value) {
                self.chain(u.value, at, depth - 1, chain, held);
            } else {
                held.insert(u.value);
            }
        }
        if !chain.contains(&v) {
            chain.push(v);
        }
    }

    fn units(&self, v: Value) -> u32 {
        u32::from(self.f.value(v).size)
    }

    fn class(&self, v: Value) -> usize {
        self.f.value(v).class.index()
    }
}

/// Per value, the operations of a block that read it, in order (one entry per reading),
/// as one sorted table instead of a vector per value.
struct Uses {
    /// The values read, sorted, one per reading.
    values: Vec<Value>,
    /// The operation of each reading, in the order of `values`.
    ops: Vec<usize>,
}

impl Uses {
    fn new(ops: &[&Op]) -> Uses {
        let mut readings: Vec<(Value, usize)> = ops
            .iter()
            .enumerate()
            .flat_map(|(k, op)| op.uses().map(move |u| (u.value, k)))
            .collect();
        readings.sort_unstable();
        let (values, ops) = readings.into_iter().unzip();
        Uses { values, ops }
    }

    /// The operations reading `v`, in order; `None` when none does.
    fn of(&self, v: Value) -> Option<&[usize]> {
        let start = self.values.partition_point(|&w| w < v);
        let end = start + self.values[start..].partition_point(|&w| w == v);
        (end > start).then(|| &self.ops[start..end])
    }
}

/// The point of highest demand of class `class` among `ops`.
struct Peak {
    /// The demand of the class there.
    most: u32,
    /// The first operation where it is reached.
    at: usize,
    /// The demand per class there.
    demand: Vec<u32>,
    /// Whether every class fits its budget at every operation of the block.
    fits: bool,
}

/// The [`Peak`] of class `class` among `ops` against `budget`; `None` for no operations.
fn peak_point(
    ops: &[&Op],
    class: usize,
    live: &mut Live,
    live_end: &[Value],
    budget: &[u16],
) -> Option<Peak> {
    live.reset(live_end);
    let mut demand = Vec::new();
    let mut peak: Option<Peak> = None;
    let mut fits = true;
    for k in (0..ops.len()).rev() {
        step_back(ops[k], live, &mut demand);
        fits &= demand.iter().zip(budget).all(|(&n, &b)| n <= u32::from(b));
        match &mut peak {
            Some(p) if demand[class] < p.most => {}
            Some(p) => {
                (p.most, p.at) = (demand[class], k);
                p.demand.clone_from(&demand);
            }
            None => {
                peak = Some(Peak {
                    most: demand[class],
                    at: k,
                    demand: demand.clone(),
                    fits: true,
                })
            }
        }
    }
    peak.map(|p| Peak { fits, ..p })
}

/// The recomputations of one round against class `class`'s peak; `None` when there is
/// nothing to gain. With [`Goal::StopAtBudget`] a class within its budget is still worked
/// on while another class of the block is over its own: the classes meet in one order, and
/// a predicate recomputed next to its later use lets the next reordering shorten the
/// 32-bit values around it.
fn plan_round(
    f: &Function,
    b: usize,
    live_end: &[Value],
    target: &Target,
    (budget, goal): (&[u16], Goal),
    class: usize,
    live: &mut Live,
) -> Option<Vec<Remat>> {
    let ops = ops_of(f, b)?;
    live.fit(f);
    let Peak {
        most: peak,
        at: p,
        demand: demand_at_p,
        fits,
    } = peak_point(&ops, class, live, live_end, budget)?;
    if peak == 0 || (goal == Goal::StopAtBudget && fits) {
        return None;
    }
    let block = Block::new(f, ops, live_end, target);
    live.reset(live_end);
    for k in (p + 1..block.ops.len()).rev() {
        live.move_above(block.ops[k]);
    }
    let touched_after = block.ops[p + 1..]
        .iter()
        .flat_map(|op| op.uses().map(|u| u.value));
    let after: FxHashSet<Value> = live_end
        .iter()
        .copied()
        .chain(touched_after)
        .filter(|&v| live.contains(v))
        .collect();
    let at_p: FxHashSet<Value> = block.ops[p]
        .uses()
        .map(|u| u.value)
        .chain(block.ops[p].defs.iter().map(|d| d.value))
        .collect();
    let mut candidates: Vec<Value> = after
        .iter()
        .copied()
        .filter(|&v| block.class(v) == class && !at_p.contains(&v) && block.recomputable(v))
        .collect();
    candidates.sort_unstable();
    let groups = group(&block, &candidates, p, &after);
    let headroom: Vec<i64> = demand_at_p
        .iter()
        .zip(budget)
        .map(|(&d, &b)| i64::from(b) - i64::from(d))
        .collect();
    let plan = choose(&block, groups, class, headroom);
    (!plan.is_empty()).then_some(plan)
}

/// Per set of values a recomputation keeps live across the peak (those not live there
/// already), the candidates that would do so, each with its chain: every depth of chain
/// of every candidate.
type Groups = BTreeMap<Vec<Value>, Vec<(Value, Remat)>>;

fn group(block: &Block<'_>, candidates: &[Value], p: usize, after: &FxHashSet<Value>) -> Groups {
    let mut groups: Groups = BTreeMap::new();
    for &v in candidates {
        let Some(at) = block.split_point(v, p) else {
            continue;
        };
        let mut seen: Vec<Vec<Value>> = Vec::new();
        for depth in 1..=MAX_DEPTH {
            let (mut chain, mut held) = (Vec::new(), BTreeSet::new());
            block.chain(v, at, depth, &mut chain, &mut held);
            let key: Vec<Value> = held.into_iter().filter(|s| !after.contains(s)).collect();
            if seen.contains(&key) {
                continue;
            }
            seen.push(key.clone());
            groups
                .entry(key)
                .or_default()
                .push((v, Remat { chain, at }));
        }
    }
    groups
}

/// Groups taken greedily by the units of `class` they free at the peak, less those their
/// held values add; the values held by a group taken are free for the next. Held values
/// of other classes must fit `headroom` (budget less demand at the peak, per class).
fn choose(block: &Block<'_>, groups: Groups, class: usize, mut headroom: Vec<i64>) -> Vec<Remat> {
    let mut freed: FxHashSet<Value> = FxHashSet::default();
    let mut taken: FxHashSet<Value> = FxHashSet::default();
    let mut plan = Vec::new();
    loop {
        let mut best: Option<(i64, &Vec<Value>)> = None;
        for (key, members) in &groups {
            let Some(gain) = gain(block, key, members, class, &freed, &taken, &headroom) else {
                continue;
            };
            if gain > 0 && best.is_none_or(|(g, _)| gain > g) {
                best = Some((gain, key));
            }
        }
        let Some((_, key)) = best else {
            return plan;
        };
        for &s in key.iter().filter(|s| !freed.contains(s)) {
            headroom[block.class(s)] -= i64::from(block.units(s));
        }
        for (v, remat) in &groups[key] {
            if taken.insert(*v) {
                plan.push(remat.clone());
            }
        }
        freed.extend(key.iter().copied());
    }
}

/// What taking a group gains in `class` at the peak, or `None` when it frees nothing or
/// its held values of another class do not fit (a class it holds nothing of is not
/// touched, even where the peak is already over that class's budget).
fn gain(
    block: &Block<'_>,
    key: &[Value],
    members: &[(Value, Remat)],
    class: usize,
    freed: &FxHashSet<Value>,
    taken: &FxHashSet<Value>,
    headroom: &[i64],
) -> Option<i64> {
    let mut members_taken: FxHashSet<Value> = FxHashSet::default();
    let frees: i64 = members
        .iter()
        .filter(|(v, _)| !taken.contains(v) && members_taken.insert(*v))
        .map(|(v, _)| i64::from(block.units(*v)))
        .sum();
    if frees == 0 {
        return None;
    }
    let mut cost = vec![0i64; headroom.len()];
    for &s in key.iter().filter(|s| !freed.contains(s)) {
        cost[block.class(s)] += i64::from(block.units(s));
    }
    let fits = (0..cost.len()).all(|c| c == class || cost[c] == 0 || cost[c] <= headroom[c]);
    fits.then_some(frees - cost[class])
}

/// Inserts the copies of `plan` and renames the uses they take over, in one pass over the
/// block. The recomputations are taken latest position first (in plan order among equal
/// positions), each copy placed before the copies already at its position: an operation
/// of the block reads the copy of every recomputation placed at or before it, and a copy
/// reads the copies of those taken after its own.
fn apply(f: &mut Function, b: usize, plan: &[Remat], remats: &mut Remats) {
    let mut plan = plan.to_vec();
    plan.sort_by_key(|r| std::cmp::Reverse(r.at));
    let defined = definitions(f.values.len(), &f.blocks[b].insts);
    let made: Vec<Vec<Inst>> = plan
        .iter()
        .map(|remat| copies(f, b, &defined, remat, remats))
        .collect();
    let mut takes_over: TakesOver = vec![None; defined.len()];
    for (k, (remat, copies)) in plan.iter().zip(&made).enumerate() {
        let value = *remat.chain.last().expect("a chain ends with its value");
        if let Some(op) = copies.last().and_then(|i| i.op()) {
            takes_over[value.index()] = Some((op.defs[0].value, k));
        }
    }
    let block = std::mem::take(&mut f.blocks[b].insts);
    let mut insts = Vec::with_capacity(block.len() + made.iter().map(Vec::len).sum::<usize>());
    let mut placed = plan.iter().zip(made).enumerate().rev().peekable();
    for (at, mut inst) in block.into_iter().enumerate() {
        while let Some((k, (_, copies))) = placed.next_if(|(_, (r, _))| r.at == at) {
            for mut copy in copies {
                rename(&mut copy, &takes_over, |taker| taker > k);
                insts.push(copy);
            }
        }
        rename(&mut inst, &takes_over, |taker| plan[taker].at <= at);
        insts.push(inst);
    }
    debug_assert!(placed.next().is_none(), "every copy goes before a use");
    f.blocks[b].insts = insts;
}

/// Per value (indexed by value), the instruction of a block defining it and the index of
/// its definition there.
type Definitions = Vec<Option<(usize, usize)>>;

/// Per value of the block (indexed by value), the copy taking over its uses and the index
/// of its recomputation in the order taken.
type TakesOver = Vec<Option<(Value, usize)>>;

/// The [`Definitions`] of `insts`, for a function of `values` values.
fn definitions(values: usize, insts: &[Inst]) -> Definitions {
    let mut defined = vec![None; values];
    for (k, inst) in insts.iter().enumerate() {
        for (d, def) in inst
            .op()
            .into_iter()
            .flat_map(|op| op.defs.iter().enumerate())
        {
            defined[def.value.index()].get_or_insert((k, d));
        }
    }
    defined
}

/// The copies of a chain's operations, each defining a fresh value and reading the copies
/// before it where it read their originals (`defined`: [`definitions`] of block `b`).
fn copies(
    f: &mut Function,
    b: usize,
    defined: &Definitions,
    remat: &Remat,
    remats: &mut Remats,
) -> Vec<Inst> {
    let mut renamed: FxHashMap<Value, Value> = FxHashMap::default();
    let mut out = Vec::with_capacity(remat.chain.len());
    for &v in &remat.chain {
        let Some(&Some((k, d))) = defined.get(v.index()) else {
            continue;
        };
        let mut inst = f.blocks[b].insts[k].clone();
        let InstKind::Op(op) = &mut inst.kind else {
            continue;
        };
        let copy = remats.new_copy(f, v);
        let mut def = op.defs[d];
        def.value = copy;
        op.defs = smallvec![def];
        for o in &mut op.operands {
            if let Operand::Value(u) = o {
                u.value = renamed.get(&u.value).copied().unwrap_or(u.value);
            }
        }
        renamed.insert(v, copy);
        out.push(inst);
    }
    out
}

/// The uses in `inst` of a value some recomputation takes over read its copy, for the
/// recomputations (by their index in the order taken) that `reads_copy_of` admits.
fn rename(inst: &mut Inst, takes_over: &TakesOver, reads_copy_of: impl Fn(usize) -> bool) {
    let InstKind::Op(op) = &mut inst.kind else {
        return;
    };
    for o in &mut op.operands {
        if let Operand::Value(u) = o {
            let taker = takes_over.get(u.value.index()).copied().flatten();
            if let Some((copy, _)) = taker.filter(|&(_, k)| reads_copy_of(k)) {
                u.value = copy;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{schedule_function, Goal};
    use super::{apply, copies, definitions, round, Remat, Remats};
    use crate::analysis::Analysis;
    use crate::program::{Function, InstKind, Operand, Value};

    /// The softmax shape: packed halves loaded, unpacked, converted, reduced to a maximum
    /// across the wave (a barrier), then each converted value used again after it.
    fn softmax(pairs: usize) -> String {
        let mut s = String::from(
            "target sm_80\nfunc @softmax {\nentry:\n  %a:r2 = ld.param.u64 remat reads\n",
        );
        for k in 0..pairs {
            s += &format!("  %p{k}:r1 = ld.global.b32 %a reads\n");
            s += &format!("  %h{}:r1, %h{}:r1 = mov.b32 %p{k}\n", 2 * k, 2 * k + 1);
        }
        for k in 0..2 * pairs {
            s += &format!("  %f{k}:r1 = cvt.f32.f16 %h{k}\n");
        }
        s += "  %m0:r1 = max.f32 %f0, %f1\n";
        for k in 2..2 * pairs {
            s += &format!("  %m{}:r1 = max.f32 %m{}, %f{k}\n", k - 1, k - 2);
        }
        s += &format!("  %m:r1 = shfl.sync.bfly.b32 %m{} barrier\n", 2 * pairs - 2);
        s += "  %s0:r1 = sub.f32 %f0, %m\n";
        for k in 1..2 * pairs {
            s += &format!("  %e{k}:r1 = sub.f32 %f{k}, %m\n");
            s += &format!("  %s{k}:r1 = add.f32 %s{}, %e{k}\n", k - 1);
        }
        s += &format!(
            "  st.global.f32 %a, %s{} writes\n  ret\n}}\n",
            2 * pairs - 1
        );
        s
    }

    /// The same shape in AMDGPU VALU operations, each reading `$exec`, with `exec_write`
    /// (an operation writing `$exec`, or nothing) after the loads.
    fn valu_softmax(pairs: usize, exec_write: &str) -> String {
        let mut s = String::from("target generic s=16 v=256\nfunc @softmax {\nentry:\n");
        s += "  %a:v1 = tid\n";
        for k in 0..pairs {
            s += &format!("  %p{k}:v1 = GLOBAL_LOAD_DWORD %a reads implicit(exec)\n");
        }
        s += exec_write;
        for k in 0..pairs {
            let (lo, hi) = (2 * k, 2 * k + 1);
            s += &format!("  %f{lo}:v1 = V_LSHLREV_B32_e64 %p{k} implicit(exec)\n");
            s += &format!("  %f{hi}:v1 = V_AND_B32_e64 %p{k} implicit(exec)\n");
        }
        s += "  %m0:v1 = V_MAX_F32_e64 %f0, %f1 implicit(exec, mode)\n";
        for k in 2..2 * pairs {
            s += &format!(
                "  %m{}:v1 = V_MAX_F32_e64 %m{}, %f{k} implicit(exec, mode)\n",
                k - 1,
                k - 2
            );
        }
        s += &format!(
            "  %m:v1 = V_PERMLANEX16_B32_e64 %m{} barrier implicit(exec)\n",
            2 * pairs - 2
        );
        s += "  %s0:v1 = V_SUB_F32_e64 %f0, %m implicit(exec, mode)\n";
        for k in 1..2 * pairs {
            s += &format!("  %e{k}:v1 = V_SUB_F32_e64 %f{k}, %m implicit(exec, mode)\n");
            s += &format!(
                "  %s{k}:v1 = V_ADD_F32_e64 %s{}, %e{k} implicit(exec, mode)\n",
                k - 1
            );
        }
        s += &format!(
            "  GLOBAL_STORE_DWORD %a, %s{} writes implicit(exec)\n  ret\n}}\n",
            2 * pairs - 1
        );
        s
    }

    /// Copies added and VGPR MaxLive before and after scheduling `text`.
    fn remat_effect(text: &str) -> (usize, u32, u32) {
        let p = crate::parse(text).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let budget: Vec<u16> = p.target.classes.iter().map(|c| c.units).collect();
        let s = schedule_function(f, &p.target, &budget, Goal::Minimise);
        let v = p.target.class_by_name("v").expect("class v");
        let before = Analysis::new(f, &p.target).pressure.max_live(v);
        let after = Analysis::new(&s.func, &p.target).pressure.max_live(v);
        (s.remats.added(), before, after)
    }

    #[test]
    fn valu_unpacks_reading_exec_are_recomputed_unless_the_block_writes_exec() {
        let (added, before, after) = remat_effect(&valu_softmax(16, ""));
        assert!(added >= 32, "{added} copies");
        assert!(after * 3 <= before * 2, "max_live v {before} -> {after}");
        let written = "  %x:s1 = S_AND_SAVEEXEC_B32 %a implicit(exec) implicit_def(exec)\n";
        let (added, _, _) = remat_effect(&valu_softmax(16, written));
        assert_eq!(added, 0);
    }

    /// Two predicates live at once, the first read again at the end beside the 32-bit
    /// value it was computed from; the 32-bit values take four units.
    const PREDICATE_HELD_OVER: &str = "target sm_80
func @f {
entry:
  %a:r2 = ld.param.u64 remat reads
  %x:r1 = ld.global.b32 %a reads
  %y:r1 = ld.global.b32 %a reads
  %q:p1 = setp.lt.s32 %x, 4
  %v:r1 = selp.b32 %x, %y, %q
  %t:p1 = setp.lt.s32 %y, 4
  %u:r1 = selp.b32 %v, %y, %t
  %s:r1 = selp.b32 %u, %x, %q
  st.global.b32 %a, %s writes
  ret
}
";

    /// The predicates recomputed by one round at budget `r` units and 7 predicates.
    fn predicates_recomputed_at(r: u16) -> usize {
        let mut p = crate::parse(PREDICATE_HELD_OVER).unwrap_or_else(|e| panic!("{e}"));
        let target = p.target.clone();
        let f = &mut p.functions[0];
        let mut remats = Remats::new(f);
        let mut live = crate::schedule::Live::new(f, &target);
        let budget = [r, 7];
        round(
            f,
            0,
            &[],
            &target,
            (&budget, Goal::StopAtBudget),
            &mut remats,
            &mut live,
        );
        let pred = target.class_by_name("p").expect("class p");
        let origins = remats.origin.iter();
        origins.filter(|&&v| f.value(v).class == pred).count()
    }

    /// Classes meet in one order: with the 32-bit class over its budget, the predicate
    /// class is worked on although it fits its own; once every class fits, nothing is.
    #[test]
    fn a_class_within_budget_is_recomputed_while_another_is_over() {
        assert_eq!(predicates_recomputed_at(2), 1);
        assert_eq!(predicates_recomputed_at(8), 0);
    }

    #[test]
    fn holding_packed_sources_halves_the_peak_of_the_softmax_shape() {
        let p = crate::parse(&softmax(16)).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let budget: Vec<u16> = p.target.classes.iter().map(|c| c.units).collect();
        let s = schedule_function(f, &p.target, &budget, Goal::Minimise);
        let r = p.target.class_by_name("r").expect("class r");
        let before = Analysis::new(f, &p.target).pressure.max_live(r);
        let after = Analysis::new(&s.func, &p.target).pressure.max_live(r);
        assert!(s.remats.added() >= 32, "{} copies", s.remats.added());
        assert!(after * 3 <= before * 2, "max_live r {before} -> {after}");
    }

    /// The insertion [`apply`] replaces, kept as its model: copies inserted one at a time,
    /// latest position first, each renaming the uses from its position on in the block as
    /// it then stands.
    fn apply_one_by_one(f: &mut Function, b: usize, plan: &[Remat], remats: &mut Remats) {
        let mut plan = plan.to_vec();
        plan.sort_by_key(|r| std::cmp::Reverse(r.at));
        for remat in &plan {
            let defined = definitions(f.values.len(), &f.blocks[b].insts);
            let copies = copies(f, b, &defined, remat, remats);
            let value = *remat.chain.last().expect("a chain ends with its value");
            if let Some(copy) = copies
                .last()
                .and_then(|i| i.op())
                .map(|op| op.defs[0].value)
            {
                for inst in &mut f.blocks[b].insts[remat.at..] {
                    let InstKind::Op(op) = &mut inst.kind else {
                        continue;
                    };
                    for o in &mut op.operands {
                        match o {
                            Operand::Value(u) if u.value == value => u.value = copy,
                            _ => {}
                        }
                    }
                }
            }
            f.blocks[b].insts.splice(remat.at..remat.at, copies);
        }
    }

    /// A plan of recomputations drawn from `bytes` on block 0 of `f`: distinct values, each
    /// copied before one of its later readings (several at one position), with its first
    /// operand defined in the block copied too on odd draws.
    fn drawn_plan(f: &Function, bytes: &[u8]) -> Vec<Remat> {
        let ops: Vec<_> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        let defined = definitions(f.values.len(), &f.blocks[0].insts);
        let mut plan: Vec<Remat> = Vec::new();
        for pair in bytes.chunks(2) {
            let v = Value(u32::from(pair[0]) % f.values.len() as u32);
            let readings: Vec<usize> = (0..ops.len())
                .filter(|&k| ops[k].uses().any(|u| u.value == v))
                .collect();
            let Some((d, _)) = defined[v.index()] else {
                continue;
            };
            if readings.is_empty() || plan.iter().any(|r| r.chain.last() == Some(&v)) {
                continue;
            }
            let at = readings[usize::from(pair[1]) % readings.len()];
            let operand = ops[d]
                .uses()
                .map(|u| u.value)
                .find(|w| defined[w.index()].is_some());
            let chain = match operand {
                Some(w) if pair[1] % 2 == 1 => vec![w, v],
                _ => vec![v],
            };
            plan.push(Remat { chain, at });
        }
        plan
    }

    #[test]
    fn applying_a_plan_in_one_pass_matches_inserting_each_copy_in_turn() {
        let p = crate::parse(&softmax(6)).unwrap_or_else(|e| panic!("{e}"));
        for seed in 0..500u64 {
            let bytes: Vec<u8> = (0..2 + 2 * (seed % 16))
                .map(|k| ((seed * 31 + k).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
                .collect();
            let plan = drawn_plan(&p.functions[0], &bytes);
            let (mut one_pass, mut model) = (p.functions[0].clone(), p.functions[0].clone());
            let (mut remats, mut model_remats) = (Remats::new(&one_pass), Remats::new(&model));
            apply(&mut one_pass, 0, &plan, &mut remats);
            apply_one_by_one(&mut model, 0, &plan, &mut model_remats);
            assert_eq!(one_pass, model, "seed {seed}: {plan:?}");
            assert_eq!(remats, model_remats, "seed {seed}");
        }
    }
}
