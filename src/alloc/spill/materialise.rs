//! After assignment and out-of-SSA: the spiller's pseudo-operations become `spill`,
//! `reload` and `remat` instructions at the registers assignment chose, every value is
//! renamed back to the original value it is an instance of, the phis the spiller placed
//! for reloads go (out of SSA already put their copies on the edges, so the phi's
//! register holds the value on entry however the block is reached), memory phis return
//! with their spill location, and the temporary slots that copy sequentialisation used
//! move above the spill slots. One walk over the blocks does all of it per block, so a
//! large function is read from memory once, not once per step; it takes the blocks from
//! the last to the first, the reverse of assignment's walk before it, so that what that
//! walk left in the cache is read first (a walk in the same order over a function larger
//! than the cache would find each block evicted just before it is read).

use super::pseudo::{self, Pseudo};
use super::Plan;
use crate::alloc::AllocError;
use crate::program::*;

/// Rewrites the lowered function `g` of the spilled function into an allocation of the
/// function `plan` maps it back to.
pub fn materialise(mut g: Function, plan: &Plan) -> Result<Function, AllocError> {
    let name = g.name.clone();
    let fail = |message: String| AllocError::Internal {
        function: name.clone(),
        message,
    };
    let origin = |v: Value| plan.origin[v.index()];
    for block in g.blocks.iter_mut().rev() {
        for inst in &mut block.insts {
            shift_temporaries(&mut inst.kind, plan.memory_slots);
            if let Some(kind) = lower_pseudo(inst, plan).map_err(&fail)? {
                inst.kind = kind;
            }
        }
        block
            .phis
            .retain(|phi| phi.def.value.index() < plan.original_values);
        block.map_values(&origin);
    }
    restore_memory_phis(&mut g, plan).map_err(&fail)?;
    g.values.truncate(plan.original_values);
    Ok(g)
}

fn shift_temporaries(kind: &mut InstKind, by: u32) {
    let shift = |loc: &mut Location| {
        if let Location::Slot { first, .. } = loc {
            *first += by;
        }
    };
    match kind {
        InstKind::ParallelCopy(moves) => moves.iter_mut().for_each(|m| {
            shift(&mut m.dst);
            shift(&mut m.src);
        }),
        InstKind::Spill(m) | InstKind::Reload(m) => {
            shift(&mut m.dst);
            shift(&mut m.src);
        }
        InstKind::Swap(x, y) => {
            shift(x);
            shift(y);
        }
        InstKind::Op(_) | InstKind::Remat { .. } => {}
    }
}

/// The instruction a pseudo-operation becomes (`None` for an operation of the program).
fn lower_pseudo(inst: &Inst, plan: &Plan) -> Result<Option<InstKind>, String> {
    let Some(op) = inst.op() else {
        return Ok(None);
    };
    let Some(kind) = pseudo::classify(op) else {
        return Ok(None);
    };
    let origin = |v: Value| plan.origin[v.index()];
    let used = op.uses().next().and_then(|u| Some((u.value, u.loc?)));
    let defined = op.defs.first().and_then(|d| Some((d.value, d.loc?)));
    let home = pseudo::owner(op).and_then(|o| super::home_of(&plan.homes, o));
    let lowered = match (kind, used, defined, home) {
        (Pseudo::Store, Some((v, src)), _, Some(dst)) => InstKind::Spill(Move {
            dst,
            src,
            value: origin(v),
        }),
        (Pseudo::Reload, _, Some((v, dst)), Some(src)) => InstKind::Reload(Move {
            dst,
            src,
            value: origin(v),
        }),
        (Pseudo::Remat, _, Some((v, dst)), _) => InstKind::Remat {
            dst,
            value: origin(v),
            uses: Vec::new(),
        },
        (Pseudo::ClassStore, Some((v, src)), Some((_, dst)), _) => InstKind::Spill(Move {
            dst,
            src,
            value: origin(v),
        }),
        (Pseudo::ClassReload, Some((_, src)), Some((v, dst)), _) => InstKind::Reload(Move {
            dst,
            src,
            value: origin(v),
        }),
        _ => return Err(format!("`{}` at {} lacks a location", op.opcode, inst.pos)),
    };
    Ok(Some(lowered))
}

/// Puts each memory phi back in its block, in the original phi order, with its spill
/// location, naming the split block where out-of-SSA split one of its edges.
fn restore_memory_phis(g: &mut Function, plan: &Plan) -> Result<(), String> {
    for mp in &plan.memory_phis {
        let mut phi = mp.phi.clone();
        phi.def.loc = Some(
            super::home_of(&plan.homes, phi.def.value)
                .ok_or_else(|| format!("memory phi at {} has no spill location", phi.pos))?,
        );
        phi.def.value = plan.origin[phi.def.value.index()];
        for arg in &mut phi.args {
            arg.value = plan.origin[arg.value.index()];
            arg.block = pred_in(g, arg.block, mp.block);
        }
        g.blocks[mp.block.index()].phis.push(phi);
    }
    for (b, original) in &plan.phi_order {
        let order = |v: Value| original.iter().position(|&x| x == v);
        g.blocks[b.index()].phis.sort_by_key(|p| order(p.def.value));
    }
    Ok(())
}

/// The predecessor of `to` in `g` standing for the original edge `from → to`: `from`
/// itself, or the block out-of-SSA inserted on that edge.
fn pred_in(g: &Function, from: Block, to: Block) -> Block {
    if g.block(from).term.successors().any(|s| s == to) {
        return from;
    }
    g.block(from)
        .term
        .successors()
        .find(|&n| g.block(n).term.successors().eq([to]))
        .unwrap_or(from)
}
