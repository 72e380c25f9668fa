//! The program points of one register class, block by block, in execution order: block
//! entry (live-ins and phi definitions), then before and after every instruction and the
//! terminator. Each point lists the values of the class live there, those that must be in a
//! register (operands before their instruction, definitions after it), and the units that
//! occupy registers without being live across the point (early-clobber and tied
//! definitions before, dead definitions after), so that the capacity of a point matches
//! what the allocator's pressure counts (`analysis::pressure`).

use chromatic::analysis::liveness::{At, LiveSet};
use chromatic::analysis::Analysis;
use chromatic::program::{Block, Def, Function, Inst, Value};
use chromatic::target::{ClassId, Target};

/// Where a point is: reloads may be placed at block entry and before an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Entry,
    Before,
    After,
}

#[derive(Clone, Debug)]
pub struct Point {
    pub kind: Kind,
    /// Values of the class live here, sorted.
    pub live: Vec<Value>,
    /// Values that must be in a register here.
    pub forced: Vec<Value>,
    /// Units taken by definitions that are not in `live`.
    pub extra: u32,
    /// Before an instruction: operands tied to a definition that stay live after it, with
    /// the definition's units, which the copy of such an operand takes while it stays in
    /// a register.
    pub tied: Vec<(Value, u32)>,
}

/// The points of every block for `class`, indexed by block.
pub fn points(f: &Function, target: &Target, a: &Analysis, class: ClassId) -> Vec<Vec<Point>> {
    f.block_ids()
        .map(|b| block_points(f, target, a, class, b))
        .collect()
}

fn block_points(
    f: &Function,
    target: &Target,
    a: &Analysis,
    class: ClassId,
    b: Block,
) -> Vec<Point> {
    let of_class = |vs: &[Value]| -> Vec<Value> {
        let mut vs: Vec<Value> = vs
            .iter()
            .copied()
            .filter(|&v| f.value(v).class == class)
            .collect();
        vs.sort();
        vs.dedup();
        vs
    };
    let block = f.block(b);
    let mut live = LiveSet::new(f, target);
    let mut sets = Vec::new();
    a.liveness.walk_backward(f, b, &mut live, |at, set| {
        sets.push((at, of_class(set.values())))
    });
    sets.reverse();
    (0..sets.len())
        .map(|j| {
            let (at, values) = &sets[j];
            match *at {
                At::Entry => {
                    let phis: Vec<Value> = block.phis.iter().map(|p| p.def.value).collect();
                    let mut values = values.clone();
                    values.extend(of_class(&phis));
                    values.sort();
                    point(Kind::Entry, values, Vec::new(), 0)
                }
                At::Before(i) => {
                    let forced = of_class(&operands(f, b, i));
                    let inst = block.insts.get(i as usize);
                    let mut before = point(
                        Kind::Before,
                        values.clone(),
                        forced,
                        early_clobber(f, inst, class),
                    );
                    before.tied = tied_living_on(f, inst, &sets[j + 1].1, class);
                    before
                }
                At::After(i) => {
                    let forced = of_class(&defs(block.insts.get(i as usize)));
                    let dead = units(f, forced.iter().filter(|v| !values.contains(v)).copied());
                    point(Kind::After, values.clone(), forced, dead)
                }
            }
        })
        .collect()
}

fn point(kind: Kind, live: Vec<Value>, mut forced: Vec<Value>, extra: u32) -> Point {
    forced.retain(|v| live.contains(v));
    Point {
        kind,
        live,
        forced,
        extra,
        tied: Vec::new(),
    }
}

/// The values read at point `i` of `b` (an instruction, or the terminator at `insts.len()`).
fn operands(f: &Function, b: Block, i: u32) -> Vec<Value> {
    chromatic::analysis::liveness::uses_at(f.block(b), i)
        .map(|u| u.value)
        .collect()
}

fn defs(inst: Option<&Inst>) -> Vec<Value> {
    inst.and_then(Inst::op)
        .map(|op| op.defs.iter().map(|d| d.value).collect())
        .unwrap_or_default()
}

/// Units written while the operands are still read: early-clobber definitions.
fn early_clobber(f: &Function, inst: Option<&Inst>, class: ClassId) -> u32 {
    let defs = inst
        .and_then(Inst::op)
        .map(|op| op.defs.as_slice())
        .unwrap_or_default();
    units(
        f,
        defs.iter()
            .filter(|d| d.early_clobber && f.value(d.value).class == class)
            .map(|d| d.value),
    )
}

/// Tied definitions whose operand is live after the instruction, as (operand, units).
fn tied_living_on(
    f: &Function,
    inst: Option<&Inst>,
    live_after: &[Value],
    class: ClassId,
) -> Vec<(Value, u32)> {
    let Some(op) = inst.and_then(Inst::op) else {
        return Vec::new();
    };
    let operand_of = |d: &Def| {
        let t = d.tied?;
        let u = op.operands.get(usize::from(t))?.as_use()?;
        live_after
            .contains(&u.value)
            .then_some((u.value, u32::from(f.value(d.value).size)))
    };
    op.defs
        .iter()
        .filter(|d| f.value(d.value).class == class)
        .filter_map(operand_of)
        .collect()
}

fn units(f: &Function, values: impl Iterator<Item = Value>) -> u32 {
    values.map(|v| u32::from(f.value(v).size)).sum()
}
