//! `quickcheck::Arbitrary` for generated programs, with shrinks that stay valid.
//!
//! Each shrink removes something while keeping every definition dominating its uses:
//! dropping a function; dropping unreachable blocks (and their phi arguments); turning a
//! branch into a jump (removing edges only makes dominance grow; a loop's latch keeps its
//! exit, so the loop shrinks to one iteration and no infinite loop appears); dropping the
//! operations of a block, one operation or one phi together with everything that uses
//! what they define (aborted if a branch condition would lose its value; `ret` just
//! loses the use); clearing an operation's constraints; turning an operation's value
//! operands into immediates (which frees a branch condition from what it was computed
//! from); emptying `ret`. Values left undefined are removed and the rest renumbered in
//! text order.

use quickcheck::{Arbitrary, Gen};

use super::features::dfs;
use super::renumber::{canonical_values, renumber_values};
use super::{generate_from_seed, GenConfig};
use crate::program::*;

/// A generated program, for `quickcheck` properties.
#[derive(Clone, Debug, PartialEq)]
pub struct GenProgram(pub Program);

impl Arbitrary for GenProgram {
    fn arbitrary(g: &mut Gen) -> Self {
        GenProgram(generate_from_seed(u64::arbitrary(g), &GenConfig::default()))
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        Box::new(shrinks(&self.0).into_iter().map(GenProgram))
    }
}

/// Smaller valid programs, most aggressive first.
pub(super) fn shrinks(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    if p.functions.len() > 1 {
        for i in 0..p.functions.len() {
            let mut q = p.clone();
            q.functions.remove(i);
            out.push(q);
        }
    }
    for (i, f) in p.functions.iter().enumerate() {
        for g in function_shrinks(f) {
            let mut q = p.clone();
            q.functions[i] = g;
            out.push(q);
        }
    }
    out
}

fn function_shrinks(f: &Function) -> Vec<Function> {
    let mut out = Vec::new();
    out.extend(drop_unreachable(f));
    out.extend(branches_to_jumps(f));
    out.extend(merge_jump_chains(f));
    out.extend(single_arg_phis(f));
    out.extend(f.block_ids().filter_map(|b| drop_ops(f, b, None)));
    for b in f.block_ids() {
        let block = f.block(b);
        out.extend((0..block.insts.len()).filter_map(|i| drop_ops(f, b, Some(i))));
        out.extend((0..block.phis.len()).filter_map(|i| drop_phi(f, b, i)));
    }
    out.extend(clear_constraints(f));
    out.extend(uses_to_immediates(f));
    out.extend(empty_rets(f));
    out
}

fn drop_unreachable(f: &Function) -> Option<Function> {
    let succs: Vec<Vec<Block>> = f
        .blocks
        .iter()
        .map(|b| b.term.successors().collect())
        .collect();
    let (reachable, _) = dfs(&succs);
    if reachable.iter().all(|&r| r) {
        return None;
    }
    Some(keep_blocks(f, &reachable))
}

/// Every branch as a jump to either side; a latch only to the side that leaves the loop.
fn branches_to_jumps(f: &Function) -> Vec<Function> {
    let succs: Vec<Vec<Block>> = f
        .blocks
        .iter()
        .map(|b| b.term.successors().collect())
        .collect();
    let (_, back_edges) = dfs(&succs);
    let mut out = Vec::new();
    for b in f.block_ids() {
        let Terminator::Branch {
            then_block,
            else_block,
            pos,
            ..
        } = f.block(b).term
        else {
            continue;
        };
        for (keep, lose) in [(then_block, else_block), (else_block, then_block)] {
            if keep == lose || back_edges.contains(&(b, keep)) {
                continue;
            }
            let mut g = f.clone();
            g.blocks[b.index()].term = Terminator::Jump { target: keep, pos };
            for phi in &mut g.blocks[lose.index()].phis {
                phi.args.retain(|a| a.block != b);
            }
            out.push(g);
        }
    }
    out
}

/// A block that jumps to a block with no phis and no other predecessor, merged with it.
fn merge_jump_chains(f: &Function) -> Vec<Function> {
    let mut preds = vec![0usize; f.blocks.len()];
    for block in &f.blocks {
        block.term.successors().for_each(|s| preds[s.index()] += 1);
    }
    let mut out = Vec::new();
    for a in f.block_ids() {
        let Terminator::Jump { target: b, .. } = f.block(a).term else {
            continue;
        };
        if b == a || b.index() == 0 || preds[b.index()] != 1 || !f.block(b).phis.is_empty() {
            continue;
        }
        let mut g = f.clone();
        let tail = g.blocks[b.index()].clone();
        g.blocks[a.index()].insts.extend(tail.insts);
        g.blocks[a.index()].term = tail.term;
        for s in f.block(b).term.successors() {
            for phi in &mut g.blocks[s.index()].phis {
                phi.args
                    .iter_mut()
                    .filter(|x| x.block == b)
                    .for_each(|x| x.block = a);
            }
        }
        let keep: Vec<bool> = f.block_ids().map(|x| x != b).collect();
        out.push(keep_blocks(&g, &keep));
    }
    out
}

/// Each phi with a single argument replaced by that argument.
fn single_arg_phis(f: &Function) -> Vec<Function> {
    let mut out = Vec::new();
    for b in f.block_ids() {
        for (i, phi) in f.block(b).phis.iter().enumerate() {
            let [arg] = phi.args[..] else { continue };
            let mut g = f.clone();
            g.blocks[b.index()].phis.remove(i);
            let mut to = Vec::from_iter(0..g.values.len() as u32);
            to[phi.def.value.index()] = arg.value.0;
            renumber_values(&mut g, &to);
            out.push(canonical_values(g));
        }
    }
    out
}

/// Without op `only` of `b` (all of `b`'s ops when `None`) and everything using their defs.
fn drop_ops(f: &Function, b: Block, only: Option<usize>) -> Option<Function> {
    let mut g = f.clone();
    let insts = std::mem::take(&mut g.blocks[b.index()].insts);
    let mut seed = Vec::new();
    for (i, inst) in insts.into_iter().enumerate() {
        match inst.op() {
            Some(op) if only.is_none_or(|o| o == i) => seed.extend(op.defs.iter().map(|d| d.value)),
            _ => g.blocks[b.index()].insts.push(inst),
        }
    }
    if g.blocks[b.index()].insts.len() == f.block(b).insts.len() {
        return None;
    }
    drop_users(g, &seed)
}

/// Without phi `i` of `b` and everything using its def.
fn drop_phi(f: &Function, b: Block, i: usize) -> Option<Function> {
    let mut g = f.clone();
    let phi = g.blocks[b.index()].phis.remove(i);
    drop_users(g, &[phi.def.value])
}

/// Removes, transitively, every op and phi that uses a value of `seed`; `ret` loses such
/// uses. `None` when a branch condition would lose its value.
fn drop_users(mut g: Function, seed: &[Value]) -> Option<Function> {
    let mut dead = vec![false; g.values.len()];
    for v in seed {
        dead[v.index()] = true;
    }
    while spread_death(&g, &mut dead) {}
    let is_dead = |v: Value| dead[v.index()];
    for block in &mut g.blocks {
        if matches!(&block.term, Terminator::Branch { cond, .. } if is_dead(cond.value)) {
            return None;
        }
        block.phis.retain(|p| !is_dead(p.def.value));
        block.insts.retain(|inst| {
            inst.op()
                .is_none_or(|op| !op.uses().any(|u| is_dead(u.value)))
        });
        if let Terminator::Ret { uses, .. } = &mut block.term {
            uses.retain(|u| !is_dead(u.value));
        }
    }
    Some(canonical_values(g))
}

/// Marks the defs of ops and phis that use a dead value; whether anything changed.
fn spread_death(f: &Function, dead: &mut [bool]) -> bool {
    let mut changed = false;
    let mut kill = |defs: &mut dyn Iterator<Item = Value>, dead: &mut [bool]| {
        for v in defs {
            changed |= !std::mem::replace(&mut dead[v.index()], true);
        }
    };
    for block in &f.blocks {
        for phi in &block.phis {
            if phi.args.iter().any(|a| dead[a.value.index()]) {
                kill(&mut std::iter::once(phi.def.value), dead);
            }
        }
        for op in block.insts.iter().filter_map(Inst::op) {
            if op.uses().any(|u| dead[u.value.index()]) {
                kill(&mut op.defs.iter().map(|d| d.value), dead);
            }
        }
    }
    changed
}

/// Each op with constraints, once with all of them cleared; `ret` without fixed uses.
fn clear_constraints(f: &Function) -> Vec<Function> {
    let mut out = Vec::new();
    for b in f.block_ids() {
        for (i, inst) in f.block(b).insts.iter().enumerate() {
            let Some(op) = inst.op() else { continue };
            let constrained = op.uses().any(|u| u.fixed.is_some())
                || op.defs.iter().any(|d| *d != Def::new(d.value, d.pos));
            if !constrained {
                continue;
            }
            let mut g = f.clone();
            if let InstKind::Op(op) = &mut g.blocks[b.index()].insts[i].kind {
                op.defs.iter_mut().for_each(|d| {
                    *d = Def {
                        loc: d.loc,
                        ..Def::new(d.value, d.pos)
                    }
                });
                op.operands.iter_mut().for_each(|o| {
                    if let Operand::Value(u) = o {
                        u.fixed = None;
                    }
                });
            }
            out.push(g);
        }
    }
    out
}

/// Each op with value operands, once with all of them immediates (and its constraints,
/// which name operands, cleared).
fn uses_to_immediates(f: &Function) -> Vec<Function> {
    let mut out = Vec::new();
    for b in f.block_ids() {
        for (i, inst) in f.block(b).insts.iter().enumerate() {
            if inst.op().is_none_or(|op| op.uses().next().is_none()) {
                continue;
            }
            let mut g = f.clone();
            if let InstKind::Op(op) = &mut g.blocks[b.index()].insts[i].kind {
                for d in &mut op.defs {
                    *d = Def {
                        loc: d.loc,
                        ..Def::new(d.value, d.pos)
                    };
                }
                for o in &mut op.operands {
                    if matches!(o, Operand::Value(_)) {
                        *o = Operand::imm(0);
                    }
                }
            }
            out.push(canonical_values(g));
        }
    }
    out
}

/// Each `ret` with uses, emptied.
fn empty_rets(f: &Function) -> Vec<Function> {
    f.block_ids()
        .filter(|&b| matches!(&f.block(b).term, Terminator::Ret { uses, .. } if !uses.is_empty()))
        .map(|b| {
            let mut g = f.clone();
            if let Terminator::Ret { uses, .. } = &mut g.blocks[b.index()].term {
                uses.clear();
            }
            g
        })
        .collect()
}

/// Only the blocks marked in `keep` (the entry among them, and every successor of a kept
/// block), renumbered; phi arguments from dropped blocks go.
fn keep_blocks(f: &Function, keep: &[bool]) -> Function {
    let mut new_index = vec![u32::MAX; f.blocks.len()];
    let mut g = f.clone();
    g.blocks.clear();
    for (b, block) in f.blocks.iter().enumerate().filter(|(b, _)| keep[*b]) {
        new_index[b] = g.blocks.len() as u32;
        g.blocks.push(block.clone());
    }
    let map = |b: Block| Block(new_index[b.index()]);
    for block in &mut g.blocks {
        for phi in &mut block.phis {
            phi.args.retain(|a| keep[a.block.index()]);
            phi.args.iter_mut().for_each(|a| a.block = map(a.block));
        }
        match &mut block.term {
            Terminator::Jump { target, .. } => *target = map(*target),
            Terminator::Branch {
                then_block,
                else_block,
                ..
            } => {
                *then_block = map(*then_block);
                *else_block = map(*else_block);
            }
            Terminator::Ret { .. } => {}
        }
    }
    canonical_values(g)
}
