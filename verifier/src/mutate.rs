//! The mutation engine: breaks a correct allocation at random and asks whether the checker
//! notices, measuring it against ground truth.
//!
//! Most mutations change the allocation only; one ([`MutationKind::BranchTurnedDivergent`])
//! changes the original and the allocation alike, and the mutant is judged against the
//! changed original. A mutant is *non-equivalent* when the interpreter's traces of
//! original and mutant differ on some of a few seeds, or when a small constraint check
//! written here (range, alignment, fixed, tied, early-clobber, parallel-copy destinations
//! and swaps that overlap; independent of the checker's) fails on the mutant although it
//! passed on the allocation; a mutant that reverses two operations whose effects conflict
//! ([`MutationKind::BreakDependence`]) is non-equivalent by construction, since the
//! interpreter models neither memory nor fixed registers. A mutant is *detected* when [`verify`] reports at least one
//! error. The goal: no non-equivalent mutant missed. A detected mutant may be equivalent:
//! the interpreter runs a few seeds on a few lanes, while the checker covers every path and
//! exec mask. Random choices come from splitmix64 (Steele, Lea & Flood 2014), seeded.

use crate::cfg::Cfg;
use crate::check::verify;
use crate::interp::{self, mix, Config};
use crate::order::effect_that_orders;
use chromatic::{
    BranchKind, ClassId, Effect, Function, Inst, InstKind, Location, Move, Op, Operand,
    RegAccessKind, Target, Terminator,
};
use std::fmt;

/// What a mutation does to the allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MutationKind {
    /// A use reads another register of its class.
    UseOtherRegister,
    /// One move of a parallel copy is dropped.
    DropCopy,
    /// A parallel copy becomes sequential moves (which may clobber a source).
    SequentialCopy,
    /// A reload is dropped.
    DropReload,
    /// A reload reads the neighbouring slot.
    WrongSlot,
    /// A tuple def moves by one unit (misaligned, or overlapping a neighbour).
    ShiftTuple,
    /// A uniform register is written at the start of the then-side of a divergent branch.
    UniformClobberInArm,
    /// A fixed def or use leaves its register.
    BreakFixed,
    /// A tied def leaves its use's register.
    BreakTied,
    /// An early-clobber def takes a use's register.
    BreakEarlyClobber,
    /// A def moves beyond the class's units.
    ExceedBudget,
    /// A uniform register's store to a slot goes through a per-lane register, so it writes
    /// only the active lanes instead of the whole wave.
    SpillThroughPerLane,
    /// A parallel copy gains a move into a destination it already writes.
    OverlappingCopy,
    /// A swap's second location moves to overlap its first.
    OverlappingSwap,
    /// A uniform branch becomes divergent, in the original and the allocation alike, and a
    /// uniform register the else-side reads is overwritten at the end of a block where the
    /// then-walk ends: harmless while one side runs, wrong once the else-lanes run after
    /// the then-lanes. Where the then-side enters the else-side or loops back to its branch
    /// (unstructured divergence), the then-walk ends inside the else-side, which then runs
    /// again after reusing the register itself.
    BranchTurnedDivergent,
    /// An operation moves above the nearest earlier one its effect keeps it after (a read
    /// above a write, barrier or control op; two of those swapped; a carry op above the
    /// carry op before it; an access to a fixed register above a write of it, or a clobber
    /// above a read), when the two differ: the order a scheduler may not change.
    BreakDependence,
    /// An operand of a `remat` that recomputes a pure operation reads another register of
    /// its class.
    BreakRemat,
    /// A select recomputing a phi of constants (`select.rs`) reads another value of its
    /// condition's class, from where that value was defined, instead of the condition of
    /// the branch that decides the phi.
    SelectWrongPredicate,
    /// A select recomputing a phi of constants recomputes another phi selected by the same
    /// condition instead: that phi's constants in its place.
    SelectOtherConstants,
}

const KINDS: [MutationKind; 19] = [
    MutationKind::UseOtherRegister,
    MutationKind::DropCopy,
    MutationKind::SequentialCopy,
    MutationKind::DropReload,
    MutationKind::WrongSlot,
    MutationKind::ShiftTuple,
    MutationKind::UniformClobberInArm,
    MutationKind::BreakFixed,
    MutationKind::BreakTied,
    MutationKind::BreakEarlyClobber,
    MutationKind::ExceedBudget,
    MutationKind::SpillThroughPerLane,
    MutationKind::OverlappingCopy,
    MutationKind::OverlappingSwap,
    MutationKind::BranchTurnedDivergent,
    MutationKind::BreakDependence,
    MutationKind::BreakRemat,
    MutationKind::SelectWrongPredicate,
    MutationKind::SelectOtherConstants,
];

/// A mutated allocation, with the original it is to be checked against when the mutation
/// changed that too.
#[derive(Clone, Debug)]
pub struct Mutation {
    pub kind: MutationKind,
    pub original: Option<Function>,
    pub allocated: Function,
}

/// One mutant's verdicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    pub kind: MutationKind,
    pub equivalent: bool,
    pub detected: bool,
}

/// The outcome of [`mutate_check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutationReport {
    /// Errors the checker found on the unmutated allocation (false alarms if non-zero).
    pub baseline_errors: usize,
    /// Whether the unmutated allocation's traces equal the original's on every seed.
    pub baseline_agrees: bool,
    pub mutants: Vec<Mutant>,
}

impl MutationReport {
    pub fn non_equivalent(&self) -> usize {
        self.mutants.iter().filter(|m| !m.equivalent).count()
    }

    pub fn detected(&self) -> usize {
        self.mutants.iter().filter(|m| m.detected).count()
    }

    /// Non-equivalent mutants the checker accepted.
    pub fn missed(&self) -> usize {
        self.mutants
            .iter()
            .filter(|m| !m.equivalent && !m.detected)
            .count()
    }
}

impl fmt::Display for MutationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agrees = if self.baseline_agrees { "yes" } else { "NO" };
        writeln!(
            f,
            "baseline errors: {}  baseline traces agree: {agrees}",
            self.baseline_errors
        )?;
        for kind in KINDS {
            let of: Vec<_> = self.mutants.iter().filter(|m| m.kind == kind).collect();
            if of.is_empty() {
                continue;
            }
            let count = |p: &dyn Fn(&Mutant) -> bool| of.iter().filter(|m| p(m)).count();
            writeln!(
                f,
                "{kind:?}: {}  non-equivalent: {}  detected: {}  missed: {}",
                of.len(),
                count(&|m| !m.equivalent),
                count(&|m| m.detected),
                count(&|m| !m.equivalent && !m.detected)
            )?;
        }
        write!(
            f,
            "mutants: {}  non-equivalent: {}  detected: {}  missed: {}",
            self.mutants.len(),
            self.non_equivalent(),
            self.detected(),
            self.missed()
        )
    }
}

/// A splitmix64 generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0, 0)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Makes `n` mutants of `allocated` and judges each.
pub fn mutate_check(
    original: &Function,
    allocated: &Function,
    target: &Target,
    n: usize,
    seed: u64,
) -> MutationReport {
    let mut rng = Rng::new(seed);
    let seeds: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
    let traces: Vec<_> = seeds
        .iter()
        .map(|&s| interp::run(original, target, &config(s)))
        .collect();
    let changes = |f: &Function| {
        seeds
            .iter()
            .zip(&traces)
            .any(|(&s, t)| interp::run_allocation(f, original, target, &config(s)) != *t)
    };
    let differ = |o: &Function, f: &Function| {
        seeds.iter().any(|&s| {
            interp::run(o, target, &config(s)) != interp::run_allocation(f, o, target, &config(s))
        })
    };
    let base_broken = constraint_broken(allocated, target);
    let mut mutants = Vec::new();
    for _ in 0..n {
        let Some(m) = mutate(original, allocated, target, &mut rng) else {
            break;
        };
        let changed = match &m.original {
            Some(o) => differ(o, &m.allocated),
            None => changes(&m.allocated),
        };
        let broken = !base_broken && constraint_broken(&m.allocated, target)
            || m.kind == MutationKind::BreakDependence;
        let against = m.original.as_ref().unwrap_or(original);
        mutants.push(Mutant {
            kind: m.kind,
            equivalent: !changed && !broken,
            detected: !verify(against, &m.allocated, target, None).is_empty(),
        });
    }
    MutationReport {
        baseline_errors: verify(original, allocated, target, None).len(),
        baseline_agrees: !changes(allocated),
        mutants,
    }
}

fn config(seed: u64) -> Config {
    Config {
        seed,
        max_events: 2_000,
        ..Config::default()
    }
}

/// One random applicable mutation of the allocation `f` of `original`, or `None` when
/// none applies.
pub fn mutate(
    original: &Function,
    f: &Function,
    target: &Target,
    rng: &mut Rng,
) -> Option<Mutation> {
    let mut order = KINDS;
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    for kind in order {
        if kind == MutationKind::BranchTurnedDivergent {
            if let Some((o, a)) = turn_divergent(original, f, target, rng) {
                return Some(Mutation {
                    kind,
                    original: Some(o),
                    allocated: a,
                });
            }
            continue;
        }
        let mut m = f.clone();
        if apply(kind, &mut m, target, rng) {
            return Some(Mutation {
                kind,
                original: None,
                allocated: m,
            });
        }
    }
    None
}

/// Every place of a kind in `f`: (block, instruction) pairs where `pick` applies.
fn sites(f: &Function, pick: impl Fn(&Inst) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (b, block) in f.blocks.iter().enumerate() {
        out.extend(
            (0..block.insts.len())
                .filter(|&i| pick(&block.insts[i]))
                .map(|i| (b, i)),
        );
    }
    out
}

fn choose<T: Copy>(xs: &[T], rng: &mut Rng) -> Option<T> {
    (!xs.is_empty()).then(|| xs[rng.below(xs.len())])
}

fn shift(loc: Location, by: u16) -> Location {
    match loc {
        Location::Reg { class, first, len } => Location::Reg {
            class,
            first: first.wrapping_add(by),
            len,
        },
        Location::Slot { first, len } => Location::Slot {
            first: first + u32::from(by),
            len,
        },
        Location::Lane {
            class,
            reg,
            first,
            len,
        } => Location::Lane {
            class,
            reg,
            first: first.wrapping_add(by),
            len,
        },
    }
}

fn apply(kind: MutationKind, f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    match kind {
        MutationKind::UseOtherRegister => use_other_register(f, target, rng),
        MutationKind::DropCopy | MutationKind::SequentialCopy => copy_mutation(kind, f, rng),
        MutationKind::DropReload | MutationKind::WrongSlot => reload_mutation(kind, f, rng),
        MutationKind::UniformClobberInArm => uniform_clobber(f, target, rng),
        MutationKind::SpillThroughPerLane => spill_through_per_lane(f, target, rng),
        MutationKind::OverlappingCopy => overlapping_copy(f, rng),
        MutationKind::OverlappingSwap => overlapping_swap(f, rng),
        MutationKind::BreakDependence => break_dependence(f, rng),
        MutationKind::BreakRemat => break_remat(f, target, rng),
        MutationKind::SelectWrongPredicate => select_wrong_predicate(f, rng),
        MutationKind::SelectOtherConstants => select_other_constants(f, rng),
        _ => def_mutation(kind, f, target, rng),
    }
}

/// Whether an op with effect `y` must stay after an earlier op with effect `x`: memory
/// reads conflict with writes, barriers and control ops, those with each other, carry ops
/// with carry ops.
fn effects_conflict(x: Effect, y: Effect) -> bool {
    match (x, y) {
        (Effect::Carry, Effect::Carry) => true,
        (Effect::Carry | Effect::None, _) | (_, Effect::Carry | Effect::None) => false,
        (Effect::ReadsMemory, Effect::ReadsMemory) => false,
        _ => true,
    }
}

/// Whether `y` must stay after an earlier `x` through a fixed register both access: a
/// write conflicts with every access, a read followed by a clobber conflicts; two reads,
/// two clobbers, or a clobber followed by a read do not.
fn regs_conflict(x: &Op, y: &Op) -> bool {
    use RegAccessKind::{Clobber, Read, Write};
    x.regs.iter().any(|a| {
        y.regs.iter().any(|b| {
            a.reg == b.reg && matches!((a.kind, b.kind), (Write, _) | (_, Write) | (Read, Clobber))
        })
    })
}

/// What an operation computes: its opcode and the values and immediates it writes and
/// reads, in order. Two ops equal so are the same operation of the original, in either
/// order.
#[derive(PartialEq)]
struct Computes<'f> {
    opcode: &'f str,
    defs: Vec<chromatic::Value>,
    operands: Vec<Result<chromatic::Value, i64>>,
}

fn computes(inst: &Inst) -> Option<Computes<'_>> {
    let op = inst.op()?;
    let operands = op
        .operands
        .iter()
        .map(|o| match o {
            Operand::Value(u) => Ok(u.value),
            Operand::Imm(x) => Err(x.get()),
        })
        .collect();
    Some(Computes {
        opcode: &op.opcode,
        defs: op.defs.iter().map(|d| d.value).collect(),
        operands,
    })
}

fn break_dependence(f: &mut Function, rng: &mut Rng) -> bool {
    let mut pairs = Vec::new();
    for (b, block) in f.blocks.iter().enumerate() {
        let ops: Vec<(usize, &Op)> = block
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| inst.op().map(|op| (i, op)))
            .collect();
        for (k, &(j, later)) in ops.iter().enumerate() {
            let earlier = ops[..k].iter().rev().find(|&&(_, x)| {
                effects_conflict(effect_that_orders(x), effect_that_orders(later))
                    || regs_conflict(x, later)
            });
            let distinct = |i: usize| computes(&block.insts[i]) != computes(&block.insts[j]);
            pairs.extend(
                earlier
                    .filter(|&&(i, _)| distinct(i))
                    .map(|&(i, _)| (b, i, j)),
            );
        }
    }
    let Some((b, i, j)) = choose(&pairs, rng) else {
        return false;
    };
    let inst = f.blocks[b].insts.remove(j);
    f.blocks[b].insts.insert(i, inst);
    true
}

fn use_other_register(f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    let s = sites(f, |i| {
        i.op()
            .is_some_and(|op| op.uses().any(|u| u.loc.is_some_and(|l| l.is_reg())))
    });
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let InstKind::Op(op) = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    let uses: Vec<usize> = (0..op.operands.len())
        .filter(|&k| op.operands[k].as_use().is_some())
        .collect();
    let Some(k) = choose(&uses, rng) else {
        return false;
    };
    let Operand::Value(u) = &mut op.operands[k] else {
        return false;
    };
    move_register(u, target, rng)
}

/// `u` reads another register of its class; whether it moved.
fn move_register(u: &mut chromatic::Use, target: &Target, rng: &mut Rng) -> bool {
    let Some(Location::Reg { class, first, len }) = u.loc else {
        return false;
    };
    let room = target.class(class).units.saturating_sub(len);
    let other =
        (first as usize + 1 + rng.below(usize::from(room.max(1)))) % (usize::from(room) + 1);
    u.loc = Some(Location::Reg {
        class,
        first: other as u16,
        len,
    });
    other as u16 != first
}

fn break_remat(f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    let s = sites(
        f,
        |i| matches!(&i.kind, InstKind::Remat { uses, .. } if !uses.is_empty()),
    );
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let InstKind::Remat { uses, .. } = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    let k = rng.below(uses.len());
    move_register(&mut uses[k], target, rng)
}

/// The `remat`s with one operand of a value no operation or phi of `f` defines: selects
/// of phis of constants the allocation left out.
fn select_sites(f: &Function) -> Vec<(usize, usize)> {
    let mut defined = vec![false; f.values.len()];
    for b in &f.blocks {
        b.phis
            .iter()
            .for_each(|p| defined[p.def.value.index()] = true);
        for op in b.insts.iter().filter_map(|i| i.op()) {
            op.defs.iter().for_each(|d| defined[d.value.index()] = true);
        }
    }
    sites(f, |i| {
        matches!(&i.kind, InstKind::Remat { value, uses, .. }
            if uses.len() == 1 && !defined[value.index()])
    })
}

fn select_wrong_predicate(f: &mut Function, rng: &mut Rng) -> bool {
    let Some((b, i)) = choose(&select_sites(f), rng) else {
        return false;
    };
    let InstKind::Remat { uses, .. } = &f.blocks[b].insts[i].kind else {
        return false;
    };
    let cond = uses[0];
    let class = f.value(cond.value).class;
    let others: Vec<(chromatic::Value, Location)> = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.op())
        .flat_map(|op| &op.defs)
        .filter(|d| d.value != cond.value && f.value(d.value).class == class)
        .filter_map(|d| d.loc.map(|loc| (d.value, loc)))
        .collect();
    let Some((value, loc)) = choose(&others, rng) else {
        return false;
    };
    if let InstKind::Remat { uses, .. } = &mut f.blocks[b].insts[i].kind {
        uses[0].value = value;
        uses[0].loc = Some(loc);
    }
    true
}

fn select_other_constants(f: &mut Function, rng: &mut Rng) -> bool {
    let selects: Vec<(chromatic::Value, chromatic::Value)> = select_sites(f)
        .into_iter()
        .filter_map(|(b, i)| match &f.blocks[b].insts[i].kind {
            InstKind::Remat { value, uses, .. } => Some((*value, uses[0].value)),
            _ => None,
        })
        .collect();
    let Some((b, i)) = choose(&select_sites(f), rng) else {
        return false;
    };
    let InstKind::Remat { value, uses, .. } = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    let others: Vec<chromatic::Value> = selects
        .iter()
        .filter(|(v, c)| *c == uses[0].value && v != value)
        .map(|(v, _)| *v)
        .collect();
    let Some(other) = choose(&others, rng) else {
        return false;
    };
    *value = other;
    true
}

fn copy_mutation(kind: MutationKind, f: &mut Function, rng: &mut Rng) -> bool {
    let min = if kind == MutationKind::DropCopy { 1 } else { 2 };
    let s = sites(
        f,
        |i| matches!(&i.kind, InstKind::ParallelCopy(m) if m.len() >= min),
    );
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let insts = &mut f.blocks[b].insts;
    let InstKind::ParallelCopy(moves) = insts[i].kind.clone() else {
        return false;
    };
    if kind == MutationKind::DropCopy {
        let mut rest = moves;
        rest.remove(rng.below(rest.len()));
        insts[i].kind = InstKind::ParallelCopy(rest);
    } else {
        let pos = insts[i].pos;
        let seq = moves.iter().map(|m| Inst {
            kind: InstKind::ParallelCopy(vec![*m]),
            pos,
        });
        insts.splice(i..=i, seq);
    }
    true
}

fn reload_mutation(kind: MutationKind, f: &mut Function, rng: &mut Rng) -> bool {
    let s = sites(f, |i| matches!(i.kind, InstKind::Reload(_)));
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let insts = &mut f.blocks[b].insts;
    if kind == MutationKind::DropReload {
        insts.remove(i);
    } else if let InstKind::Reload(m) = &mut insts[i].kind {
        m.src = shift(m.src, 1);
    }
    true
}

/// Writes a uniform register (one the function uses) at the start of a then-side.
fn uniform_clobber(f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    let arms: Vec<usize> = f
        .blocks
        .iter()
        .filter_map(|b| match b.term {
            Terminator::Branch {
                kind: BranchKind::Divergent,
                then_block,
                ..
            } => Some(then_block.index()),
            _ => None,
        })
        .collect();
    let mut regs = Vec::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        for d in inst.op().into_iter().flat_map(|op| &op.defs) {
            if let Some(Location::Reg { class, first, len }) = d.loc {
                if target.class(class).uniform {
                    regs.push((Location::Reg { class, first, len }, d.value));
                }
            }
        }
    }
    let (Some(arm), Some((dst, value)), Some((src, _))) =
        (choose(&arms, rng), choose(&regs, rng), choose(&regs, rng))
    else {
        return false;
    };
    if src == dst || src.len() != dst.len() {
        return false;
    }
    let pos = f.blocks[arm].pos;
    f.blocks[arm].insts.insert(
        0,
        Inst {
            kind: InstKind::ParallelCopy(vec![Move { dst, src, value }]),
            pos,
        },
    );
    true
}

/// Routes a store from a uniform register to a slot through a register of a per-lane
/// class: `spill m <- s` becomes `parallel_copy vT <- s` then `spill m <- vT`.
fn spill_through_per_lane(f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    let uniform_reg = |l: Location| l.reg_class().is_some_and(|c| target.class(c).uniform);
    let s = sites(
        f,
        |i| matches!(i.kind, InstKind::Spill(m) if uniform_reg(m.src) && !m.dst.is_reg()),
    );
    let per_lane: Vec<ClassId> = (0..target.classes.len())
        .map(|c| ClassId(c as u8))
        .filter(|&c| !target.class(c).uniform)
        .collect();
    let (Some((b, i)), Some(class)) = (choose(&s, rng), choose(&per_lane, rng)) else {
        return false;
    };
    let insts = &mut f.blocks[b].insts;
    let InstKind::Spill(store) = &mut insts[i].kind else {
        return false;
    };
    let len = store.src.len();
    let room = target.class(class).units.saturating_sub(len);
    let via = Location::Reg {
        class,
        first: rng.below(usize::from(room) + 1) as u16,
        len,
    };
    let copy = Move {
        dst: via,
        src: store.src,
        value: store.value,
    };
    store.src = via;
    let pos = insts[i].pos;
    let copy = Inst {
        kind: InstKind::ParallelCopy(vec![copy]),
        pos,
    };
    insts.insert(i, copy);
    true
}

/// Appends to a parallel copy a move into the destination of one of its moves, from the
/// source of a move of the same width (possibly the same move).
fn overlapping_copy(f: &mut Function, rng: &mut Rng) -> bool {
    let s = sites(
        f,
        |i| matches!(&i.kind, InstKind::ParallelCopy(m) if !m.is_empty()),
    );
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let InstKind::ParallelCopy(moves) = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    let target = moves[rng.below(moves.len())];
    let same_width: Vec<Move> = moves
        .iter()
        .copied()
        .filter(|m| m.src.len() == target.dst.len())
        .collect();
    let Some(from) = choose(&same_width, rng) else {
        return false;
    };
    moves.push(Move {
        dst: target.dst,
        ..from
    });
    true
}

/// Makes a swap's two locations overlap: the second becomes the first shifted by one unit
/// (the first itself for one unit).
fn overlapping_swap(f: &mut Function, rng: &mut Rng) -> bool {
    let s = sites(f, |i| matches!(i.kind, InstKind::Swap(..)));
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let InstKind::Swap(x, y) = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    *y = if x.len() > 1 { shift(*x, 1) } else { *x };
    true
}

/// Turns one uniform branch divergent in the original and the allocation (unless the
/// original's join of that branch has a uniform phi: no longer a valid program), and
/// overwrites a uniform register the else-walk reads where the then-walk ends.
fn turn_divergent(
    original: &Function,
    f: &Function,
    target: &Target,
    rng: &mut Rng,
) -> Option<(Function, Function)> {
    let uniform_branch = |g: &Function, name: &str| {
        g.blocks.iter().position(|b| {
            b.name == name
                && matches!(
                    b.term,
                    Terminator::Branch {
                        kind: BranchKind::Uniform,
                        ..
                    }
                )
        })
    };
    let candidates: Vec<(usize, usize)> = f
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(ai, b)| Some((uniform_branch(original, &b.name)?, ai)))
        .filter(|&(_, ai)| uniform_branch(f, &f.blocks[ai].name).is_some())
        .collect();
    let (oi, ai) = choose(&candidates, rng)?;
    let (mut o, mut a) = (original.clone(), f.clone());
    for (g, b) in [(&mut o, oi), (&mut a, ai)] {
        if let Terminator::Branch { kind, .. } = &mut g.blocks[b].term {
            *kind = BranchKind::Divergent;
        }
    }
    let join = Cfg::new(&o).post_dominators()[oi];
    let uniform_phi_at_join = join.is_some_and(|j| {
        o.blocks[j]
            .phis
            .iter()
            .any(|p| target.class(o.value(p.def.value).class).uniform)
    });
    if uniform_phi_at_join {
        return None;
    }
    clobber_read_after_then_walk(&mut a, ai, target, rng).then_some((o, a))
}

/// Overwrites, at the end of a block where the then-walk of the divergent branch in block
/// `b` ends (it jumps to the join or returns), a uniform register the else-walk reads, from
/// another uniform register of the same width.
fn clobber_read_after_then_walk(
    f: &mut Function,
    b: usize,
    target: &Target,
    rng: &mut Rng,
) -> bool {
    let cfg = Cfg::new(f);
    let Some(d) = cfg.divergent.iter().find(|d| d.branch == b) else {
        return false;
    };
    let ends: Vec<usize> = d
        .then_walk
        .iter()
        .copied()
        .filter(|&x| cfg.succs[x].is_empty() || cfg.succs[x].iter().any(|&s| Some(s) == d.join))
        .collect();
    let uniform = |l: &Location| l.reg_class().is_some_and(|c| target.class(c).uniform);
    let read_in_else: Vec<(Location, chromatic::Value)> = d
        .else_walk
        .iter()
        .flat_map(|&x| uses_in(&f.blocks[x]))
        .filter(|(l, _)| uniform(l))
        .collect();
    let written: Vec<Location> = f
        .blocks
        .iter()
        .flat_map(|block| &block.insts)
        .flat_map(|i| i.op().into_iter().flat_map(|op| &op.defs))
        .filter_map(|d| d.loc)
        .filter(uniform)
        .collect();
    let (Some(end), Some((dst, value))) = (choose(&ends, rng), choose(&read_in_else, rng)) else {
        return false;
    };
    let sources: Vec<Location> = written
        .into_iter()
        .filter(|&l| l.len() == dst.len() && l != dst)
        .collect();
    let Some(src) = choose(&sources, rng) else {
        return false;
    };
    let pos = f.blocks[end].term.pos();
    f.blocks[end].insts.push(Inst {
        kind: InstKind::ParallelCopy(vec![Move { dst, src, value }]),
        pos,
    });
    true
}

/// The (location, value) of every use of a block's operations and terminator.
fn uses_in(block: &chromatic::BlockData) -> Vec<(Location, chromatic::Value)> {
    let ops = block
        .insts
        .iter()
        .filter_map(|i| i.op())
        .flat_map(|op| op.uses());
    ops.chain(block.term.uses())
        .filter_map(|u| Some((u.loc?, u.value)))
        .collect()
}

/// Fixed, tied, early-clobber, tuple shift and budget mutations: move one def.
fn def_mutation(kind: MutationKind, f: &mut Function, target: &Target, rng: &mut Rng) -> bool {
    let fits = |op: &chromatic::Op, d: &chromatic::Def| match kind {
        MutationKind::BreakFixed => d.fixed.is_some(),
        MutationKind::BreakTied => d.tied.is_some(),
        MutationKind::BreakEarlyClobber => {
            d.early_clobber
                && op
                    .uses()
                    .any(|u| u.loc.map(|l| l.len()) == d.loc.map(|l| l.len()))
        }
        MutationKind::ShiftTuple => d.loc.is_some_and(|l| l.len() >= 2),
        _ => d.loc.is_some(),
    };
    let s = sites(f, |i| {
        i.op().is_some_and(|op| op.defs.iter().any(|d| fits(op, d)))
    });
    let Some((b, i)) = choose(&s, rng) else {
        return false;
    };
    let InstKind::Op(op) = &mut f.blocks[b].insts[i].kind else {
        return false;
    };
    let Some(k) = (0..op.defs.len()).find(|&k| fits(op, &op.defs[k])) else {
        return false;
    };
    let Some(loc) = op.defs[k].loc else {
        return false;
    };
    let new = match kind {
        MutationKind::BreakEarlyClobber => op
            .uses()
            .filter_map(|u| u.loc)
            .find(|l| l.len() == loc.len()),
        MutationKind::ExceedBudget => loc.reg_class().map(|c| Location::Reg {
            class: c,
            first: target.class(c).units,
            len: loc.len(),
        }),
        MutationKind::BreakTied => Some(shift(loc, loc.len())),
        _ => Some(shift(loc, 1)),
    };
    op.defs[k].loc = new;
    new.is_some() && new != Some(loc)
}

/// A small constraint check of its own: range, alignment, fixed, tied, early-clobber, and
/// parallel copies and swaps whose destinations overlap.
fn constraint_broken(f: &Function, target: &Target) -> bool {
    ops_broken(f, target) || moves_overlap(f)
}

/// Whether some parallel copy writes one register, slot or lane twice, or some swap
/// exchanges overlapping locations (written out here, apart from the checker's).
fn moves_overlap(f: &Function) -> bool {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|inst| match &inst.kind {
            InstKind::ParallelCopy(moves) => moves.iter().enumerate().any(|(i, m)| {
                moves[..i]
                    .iter()
                    .any(|earlier| share_storage(m.dst, earlier.dst))
            }),
            InstKind::Swap(x, y) => share_storage(*x, *y),
            _ => false,
        })
}

/// Whether two locations share storage: a register unit, a slot, or a lane (a register
/// holds all its lanes).
fn share_storage(a: Location, b: Location) -> bool {
    let (a_end, b_end) = (end(a), end(b));
    match (a, b) {
        (
            Location::Reg {
                class: x, first: p, ..
            },
            Location::Reg {
                class: y, first: q, ..
            },
        ) => x == y && u32::from(p) < b_end && u32::from(q) < a_end,
        (Location::Slot { first: p, .. }, Location::Slot { first: q, .. }) => {
            p < b_end && q < a_end
        }
        (
            Location::Lane {
                class: x,
                reg: r,
                first: p,
                ..
            },
            Location::Lane {
                class: y,
                reg: s,
                first: q,
                ..
            },
        ) => x == y && r == s && u32::from(p) < b_end && u32::from(q) < a_end,
        (
            Location::Reg {
                class: x, first, ..
            },
            Location::Lane { class: y, reg, .. },
        )
        | (
            Location::Lane { class: y, reg, .. },
            Location::Reg {
                class: x, first, ..
            },
        ) => {
            let reg_end = if a.is_reg() { a_end } else { b_end };
            x == y && u32::from(first) <= u32::from(reg) && u32::from(reg) < reg_end
        }
        _ => false,
    }
}

/// One past the last unit (register, slot or lane) of a location.
fn end(l: Location) -> u32 {
    let first = match l {
        Location::Reg { first, .. } | Location::Lane { first, .. } => u32::from(first),
        Location::Slot { first, .. } => first,
    };
    first + u32::from(l.len())
}

/// Range, alignment, fixed, tied and early-clobber of every operation.
fn ops_broken(f: &Function, target: &Target) -> bool {
    let bad_reg = |loc: Option<Location>, size: u16| match loc {
        Some(Location::Reg { class, first, len }) => {
            let c = target.class(class);
            len != size
                || first as u32 + len as u32 > c.units as u32
                || first % c.align.alignment(size) != 0
        }
        _ => false,
    };
    let overlap = |a: Location, b: Location| match (a, b) {
        (
            Location::Reg {
                class: x,
                first: a0,
                len: al,
            },
            Location::Reg {
                class: y,
                first: b0,
                len: bl,
            },
        ) => x == y && a0 < b0 + bl && b0 < a0 + al,
        _ => false,
    };
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.op())
        .any(|op| {
            op.uses().any(|u| {
                bad_reg(u.loc, f.value(u.value).size) || u.fixed.is_some_and(|x| Some(x) != u.loc)
            }) || op.defs.iter().any(|d| {
                bad_reg(d.loc, f.value(d.value).size)
                    || d.fixed.is_some_and(|x| Some(x) != d.loc)
                    || d.tied.is_some_and(|t| {
                        op.operands
                            .get(usize::from(t))
                            .and_then(|o| o.as_use())
                            .and_then(|u| u.loc)
                            != d.loc
                    })
                    || (d.early_clobber
                        && op
                            .uses()
                            .filter_map(|u| u.loc)
                            .any(|u| d.loc.is_some_and(|l| overlap(u, l))))
            })
        })
}
