//! The program points of one register class, block by block, in execution order: block
//! entry (live-ins and phi definitions), then before and after every instruction and the
//! terminator. Each point lists the values of the class live there, those that must be in a
//! register (operands before their instruction, definitions after it, and phi arguments at
//! the end of every edge that carries them), and the units that occupy registers without
//! being live across the point (early-clobber and tied definitions before, dead
//! definitions after), so that the capacity of a point matches the instants of
//! [`crate::problem`].
//!
//! Liveness is the oracle's own ([`crate::live`], over the class's [`crate::flow`]):
//! nothing here comes from the allocator's analyses.

use crate::flow::Flow;
use crate::live::{Liveness, Set};
use chromatic::program::{Block, Def, Function, Op, Value};
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

/// A phi argument that may reach a memory phi in the phi's own spill location, stored
/// there when it is stored at all, with no store on the edge: the argument is a phi
/// argument of no other phi, and the phi and every such argument of it are never live at
/// one point, so no value in the shared location is overwritten while it is still to be
/// reloaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    pub phi: Value,
    pub block: Block,
    pub from: Block,
    pub arg: Value,
}

/// The points of every block for `class`, indexed by block, the class's flow, and the
/// phi arguments that may share their phi's location.
pub fn points(
    f: &Function,
    target: &Target,
    class: ClassId,
) -> (Vec<Vec<Point>>, Flow, Vec<Share>) {
    let of_class = |v: Value| f.value(v).class == class;
    let flow = Flow::new(f, target.class(class).uniform);
    let live = Liveness::new(f, &flow, &of_class);
    let mut points: Vec<Vec<Point>> = f
        .block_ids()
        .map(|b| block_points(f, class, b, &live.live_out[b.index()]))
        .collect();
    let shares = shares(f, &flow, class, &points);
    force_phi_arguments(f, &flow, class, &shares, &mut points);
    (points, flow, shares)
}

fn shares(f: &Function, flow: &Flow, class: ClassId, points: &[Vec<Point>]) -> Vec<Share> {
    let remat = crate::residency::rematerialisable(f);
    let pinned = f.pinned_values();
    let mut phis_of: Vec<Vec<Value>> = vec![Vec::new(); f.values.len()];
    for phi in f.blocks.iter().flat_map(|b| &b.phis) {
        for a in &phi.args {
            if !phis_of[a.value.index()].contains(&phi.def.value) {
                phis_of[a.value.index()].push(phi.def.value);
            }
        }
    }
    let together = |x: Value, y: Value| {
        points
            .iter()
            .flatten()
            .any(|p| p.live.contains(&x) && p.live.contains(&y))
    };
    let mut out = Vec::new();
    for s in f.block_ids() {
        if flow.preds[s.index()].iter().any(|e| e.from != e.phi_pred) {
            continue;
        }
        for phi in &f.block(s).phis {
            let v = phi.def.value;
            if f.value(v).class != class || pinned.contains(&v) {
                continue;
            }
            let mut candidates: Vec<Value> = phi
                .args
                .iter()
                .map(|a| a.value)
                .filter(|&a| a != v && !remat[a.index()] && !pinned.contains(&a))
                .filter(|&a| phis_of[a.index()] == [v] && !together(v, a))
                .collect();
            candidates.sort();
            candidates.dedup();
            let apart = |a: Value| candidates.iter().all(|&b| b == a || !together(a, b));
            for arg in phi
                .args
                .iter()
                .filter(|a| apart(a.value) && candidates.contains(&a.value))
            {
                out.push(Share {
                    phi: v,
                    block: s,
                    from: arg.block,
                    arg: arg.value,
                });
            }
        }
    }
    out
}

fn block_points(f: &Function, class: ClassId, b: Block, live_out: &Set) -> Vec<Point> {
    let of_class = |v: &Value| f.value(*v).class == class;
    let block = f.block(b);
    let mut live = live_out.clone();
    let term_uses: Vec<Value> = block.term.uses().iter().map(|u| u.value).collect();
    term_uses
        .iter()
        .filter(|v| of_class(v))
        .for_each(|&v| live.insert(v));
    let mut reversed = vec![point(
        Kind::Before,
        live.iter().collect(),
        sorted(term_uses.into_iter().filter(of_class)),
        0,
    )];
    for op in block.insts.iter().rev().filter_map(|i| i.op()) {
        let after: Vec<Value> = live.iter().collect();
        let defs: Vec<Value> = op.defs.iter().map(|d| d.value).filter(of_class).collect();
        let dead = units(f, defs.iter().filter(|v| !after.contains(v)).copied());
        reversed.push(point(
            Kind::After,
            after.clone(),
            sorted(defs.iter().copied()),
            dead,
        ));
        defs.iter().for_each(|&v| live.remove(v));
        let uses: Vec<Value> = op.uses().map(|u| u.value).filter(of_class).collect();
        uses.iter().for_each(|&v| live.insert(v));
        let mut before = point(
            Kind::Before,
            live.iter().collect(),
            sorted(uses.into_iter()),
            early_clobber(f, op, class),
        );
        before.tied = tied_living_on(f, op, &after, class);
        reversed.push(before);
    }
    let phis = block.phis.iter().map(|p| p.def.value).filter(of_class);
    let entry = sorted(live.iter().chain(phis));
    reversed.push(point(Kind::Entry, entry, Vec::new(), 0));
    reversed.reverse();
    reversed
}

/// A phi's argument is in a register at the end of every edge that carries it: a register
/// phi copies it from there, a memory phi stores it from there — unless it may share the
/// phi's location ([`Share`]), which the residency model decides.
fn force_phi_arguments(
    f: &Function,
    flow: &Flow,
    class: ClassId,
    shares: &[Share],
    points: &mut [Vec<Point>],
) {
    for s in f.block_ids() {
        for edge in &flow.preds[s.index()] {
            for phi in f.block(s).phis.iter() {
                if f.value(phi.def.value).class != class {
                    continue;
                }
                let args = phi.args.iter().filter(|a| a.block == edge.phi_pred);
                let Some(last) = points[edge.from.index()].last_mut() else {
                    continue;
                };
                for a in args {
                    let shared = shares
                        .iter()
                        .any(|x| x.phi == phi.def.value && x.from == edge.from && x.arg == a.value);
                    if !shared && last.live.contains(&a.value) && !last.forced.contains(&a.value) {
                        last.forced.push(a.value);
                        last.forced.sort();
                    }
                }
            }
        }
    }
}

fn sorted(values: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut vs: Vec<Value> = values.collect();
    vs.sort();
    vs.dedup();
    vs
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

/// Units written while the operands are still read: early-clobber definitions.
fn early_clobber(f: &Function, op: &Op, class: ClassId) -> u32 {
    units(
        f,
        op.defs
            .iter()
            .filter(|d| d.early_clobber && f.value(d.value).class == class)
            .map(|d| d.value),
    )
}

/// Tied definitions whose operand is live after the instruction, as (operand, units).
fn tied_living_on(
    f: &Function,
    op: &Op,
    live_after: &[Value],
    class: ClassId,
) -> Vec<(Value, u32)> {
    let operand_of = |d: &Def| {
        let t = d.tied?;
        let u = op.operands.get(usize::from(t))?.as_use()?;
        (f.value(u.value).class == class && live_after.contains(&u.value))
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
