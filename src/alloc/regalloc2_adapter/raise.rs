//! regalloc2's output back into an allocated chromatic function.
//!
//! Each operand takes its allocation (registers become `CLASS N`, spill slots `mN`);
//! each edit becomes one instruction where regalloc2 put it: a register-to-register move
//! a one-move `parallel_copy`, a move into a slot a `spill`, out of one a `reload`
//! (regalloc2 never moves between slots). Edits before a block's branch land before its
//! terminator. A phi takes the allocation its block parameter's debug label reports at
//! the block's entry.
//!
//! A block parameter regalloc2 reports no location for is one nothing reads (fastalloc
//! leaves those alone). chromatic still needs every phi in a location that holds its
//! argument at the end of every incoming edge, so each such phi gets a spill slot of its
//! own, filled by one `parallel_copy` at the end of each predecessor from wherever the
//! argument is there. Those moves are the adapter's, not regalloc2's, and counted
//! in [`Raised::dead_phi_moves`].
//!
//! The value names on moves are annotations (the verifier does not trust them): a
//! forward walk in reverse post-order tracks which value each location holds (meeting
//! the predecessors walked so far) and names a move by its source.

use super::lower::Lowered;
use crate::analysis::cfg::Graph;
use crate::program::{Block, Function, Inst, InstKind, Location, Move, Pos, Terminator, Value};
use crate::target::ClassId;
use regalloc2::{Allocation, Edit, Function as _, InstOrEdit, Output, ProgPoint};
use std::collections::{BTreeMap, HashMap};

/// Which value each location holds, as far as the walk knows.
type Holders = BTreeMap<Location, Value>;

/// An allocated function and the moves the adapter added for unread phis.
#[derive(Debug)]
pub struct Raised {
    pub func: Function,
    pub dead_phi_moves: usize,
}

/// `f` (the prepared function `lowered` was built from) allocated as `out` says.
/// An error names what regalloc2 left out that chromatic's model needs.
pub fn raise(f: &Function, lowered: &Lowered, out: &Output) -> Result<Raised, String> {
    let cfg = Graph::of_function(f);
    let params = param_allocations(f, lowered, out);
    let mut g = f.clone();
    let mut at_end: Vec<Option<Holders>> = vec![None; f.blocks.len()];
    for &b in cfg.rpo() {
        let mut holders = meet(
            cfg.preds(b)
                .iter()
                .filter_map(|p| at_end[p.index()].as_ref()),
        );
        for phi in &mut g.blocks[b.index()].phis {
            phi.def.loc = params.get(&phi.def.value).copied();
            if let Some(loc) = phi.def.loc {
                holders.insert(loc, phi.def.value);
            }
        }
        raise_block(f, lowered, out, b, &mut g, &mut holders);
        at_end[b.index()] = Some(holders);
    }
    let dead_phi_moves = place_unread_phis(&mut g, &cfg, &at_end, out.num_spillslots)?;
    Ok(Raised {
        func: g,
        dead_phi_moves,
    })
}

/// Where each block parameter lives before its block's first instruction.
fn param_allocations(f: &Function, lowered: &Lowered, out: &Output) -> HashMap<Value, Location> {
    let mut entry_of = HashMap::new();
    for b in f.block_ids() {
        let first = lowered
            .block_insns(regalloc2::Block::new(b.index()))
            .first();
        for phi in &f.block(b).phis {
            entry_of.insert(phi.def.value.0, ProgPoint::before(first));
        }
    }
    let mut found = HashMap::new();
    for &(label, from, to, alloc) in &out.debug_locations {
        let Some(&entry) = entry_of.get(&label) else {
            continue;
        };
        let value = Value(label);
        if from <= entry && entry < to {
            if let Some(loc) = location(f, value, alloc) {
                found.insert(value, loc);
            }
        }
    }
    found
}

/// The locations every state of `states` agrees on.
fn meet<'a>(mut states: impl Iterator<Item = &'a Holders>) -> Holders {
    let Some(first) = states.next() else {
        return Holders::new();
    };
    let mut out = first.clone();
    for s in states {
        out.retain(|loc, v| s.get(loc) == Some(v));
    }
    out
}

/// Block `b` of `g` with its operands located and regalloc2's edits inserted.
fn raise_block(
    f: &Function,
    lowered: &Lowered,
    out: &Output,
    b: Block,
    g: &mut Function,
    holders: &mut Holders,
) {
    let block = regalloc2::Block::new(b.index());
    let first = lowered.block_insns(block).first().index();
    let original = &f.block(b).insts;
    let mut insts = Vec::with_capacity(original.len());
    for item in out.block_insts_and_edits(lowered, block) {
        match item {
            InstOrEdit::Edit(Edit::Move { from, to }) => {
                if let Some(inst) = edit(*from, *to, holders) {
                    insts.push(inst);
                }
            }
            InstOrEdit::Inst(i) => {
                let allocs = out.inst_allocs(i);
                match original.get(i.index() - first) {
                    Some(inst) => insts.push(located_op(f, inst, allocs, holders)),
                    None => locate_terminator(f, &mut g.blocks[b.index()].term, allocs),
                }
            }
        }
    }
    g.blocks[b.index()].insts = insts;
}

/// The chromatic location of `value`'s allocation.
fn location(f: &Function, value: Value, a: Allocation) -> Option<Location> {
    Lowered::location(f.value(value).class, a)
}

/// A move edit as an instruction; none when it moves nothing (regalloc2 emits those to
/// rename a value in place).
fn edit(from: Allocation, to: Allocation, holders: &mut Holders) -> Option<Inst> {
    let class = from
        .as_reg()
        .or(to.as_reg())
        .map(|r| ClassId(r.class() as u8))?;
    let src = Lowered::location(class, from)?;
    let dst = Lowered::location(class, to)?;
    if src == dst {
        return None;
    }
    let value = holders.get(&src).copied().unwrap_or(Value(0));
    holders.insert(dst, value);
    let m = Move { dst, src, value };
    let kind = match (src, dst) {
        (Location::Reg { .. }, Location::Slot { .. }) => InstKind::Spill(m),
        (Location::Slot { .. }, Location::Reg { .. }) => InstKind::Reload(m),
        _ => InstKind::ParallelCopy(vec![m]),
    };
    Some(Inst {
        kind,
        pos: Pos::default(),
    })
}

/// An operation with its uses (regalloc2's first operands) and defs located.
fn located_op(f: &Function, inst: &Inst, allocs: &[Allocation], holders: &mut Holders) -> Inst {
    let mut inst = inst.clone();
    let InstKind::Op(op) = &mut inst.kind else {
        return inst;
    };
    let mut allocs = allocs.iter();
    for o in &mut op.operands {
        if let crate::program::Operand::Value(u) = o {
            u.loc = allocs.next().and_then(|&a| location(f, u.value, a));
        }
    }
    for d in &mut op.defs {
        d.loc = allocs.next().and_then(|&a| location(f, d.value, a));
        if let Some(loc) = d.loc {
            holders.insert(loc, d.value);
        }
    }
    inst
}

fn locate_terminator(f: &Function, term: &mut Terminator, allocs: &[Allocation]) {
    for (u, &a) in term.uses_mut().iter_mut().zip(allocs) {
        u.loc = location(f, u.value, a);
    }
}

/// Gives every phi without a location a fresh slot, filled at the end of each
/// predecessor; returns the moves added.
fn place_unread_phis(
    g: &mut Function,
    cfg: &Graph,
    at_end: &[Option<Holders>],
    mut next_slot: usize,
) -> Result<usize, String> {
    let mut slot_of: HashMap<Value, Location> = HashMap::new();
    for block in &mut g.blocks {
        for phi in block.phis.iter_mut().filter(|p| p.def.loc.is_none()) {
            let slot = Location::Slot {
                first: next_slot as u32,
                len: 1,
            };
            next_slot += 1;
            phi.def.loc = Some(slot);
            slot_of.insert(phi.def.value, slot);
        }
    }
    let mut added = 0;
    for b in g.block_ids() {
        let moves_by_pred = unread_phi_moves(g, cfg, b, &slot_of, at_end)?;
        for (p, moves) in moves_by_pred {
            added += moves.len();
            g.blocks[p.index()].insts.push(Inst {
                kind: InstKind::ParallelCopy(moves),
                pos: Pos::default(),
            });
        }
    }
    Ok(added)
}

/// Per predecessor of `b`, the moves that fill the slots of `b`'s unread phis.
fn unread_phi_moves(
    g: &Function,
    cfg: &Graph,
    b: Block,
    slot_of: &HashMap<Value, Location>,
    at_end: &[Option<Holders>],
) -> Result<Vec<(Block, Vec<Move>)>, String> {
    let unread: Vec<_> = g
        .block(b)
        .phis
        .iter()
        .filter(|p| slot_of.contains_key(&p.def.value))
        .collect();
    if unread.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for &p in cfg.preds(b) {
        let holders = at_end[p.index()].as_ref();
        let mut moves = Vec::new();
        for phi in &unread {
            let arg = phi.args.iter().find(|a| a.block == p).map(|a| a.value);
            let arg = arg.expect("a phi argument per predecessor");
            let src = slot_of.get(&arg).copied().or_else(|| {
                holders.and_then(|h| h.iter().find(|(_, &v)| v == arg).map(|(&l, _)| l))
            });
            let Some(src) = src else {
                return Err(format!(
                    "regalloc2 keeps `%{}` nowhere at the end of block `{}`, but the unread phi `%{}` of `{}` takes it from there",
                    g.value(arg).name,
                    g.block(p).name,
                    g.value(phi.def.value).name,
                    g.block(b).name
                ));
            };
            moves.push(Move {
                dst: slot_of[&phi.def.value],
                src,
                value: arg,
            });
        }
        out.push((p, moves));
    }
    Ok(out)
}
