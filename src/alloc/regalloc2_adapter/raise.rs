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
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Which value each location holds, as far as the walk knows: chromatic's view (one
/// value a location) and regalloc2's (a phi is also in every location holding its
/// argument at the end of every incoming edge, until that location is written).
#[derive(Clone, Debug, Default)]
struct Holders {
    label: BTreeMap<Location, Value>,
    also: BTreeMap<Location, BTreeSet<Value>>,
}

impl Holders {
    fn write(&mut self, loc: Location, v: Value) {
        self.label.insert(loc, v);
        self.also.remove(&loc);
    }

    /// A phi entering `loc`: the bits there are the phi's argument's, which stays there
    /// as an alias.
    fn enter_phi(&mut self, loc: Location, phi: Value) {
        if let Some(old) = self.label.insert(loc, phi) {
            self.also.entry(loc).or_default().insert(old);
        }
    }

    /// A move from `src` to `dst`; returns the value it moves in chromatic's view.
    fn copy(&mut self, src: Location, dst: Location) -> Option<Value> {
        let value = self.label.get(&src).copied();
        match value {
            Some(v) => self.label.insert(dst, v),
            None => self.label.remove(&dst),
        };
        match self.also.get(&src).cloned() {
            Some(set) => self.also.insert(dst, set),
            None => self.also.remove(&dst),
        };
        value
    }

    fn find(&self, v: Value) -> Option<Location> {
        self.label.iter().find(|(_, &x)| x == v).map(|(&l, _)| l)
    }

    /// Where regalloc2 reads `v` from `loc` holding it only as an alias, the copy that
    /// gives `loc` the label `v` in chromatic's view (the bits are the same); the
    /// value it held becomes the alias. `Err` when no location holds `v` by label.
    fn relabel(&mut self, loc: Location, v: Value) -> Result<Option<Move>, ()> {
        let is_alias = self.also.get(&loc).is_some_and(|s| s.contains(&v));
        if self.label.get(&loc) == Some(&v) || !is_alias {
            return Ok(None);
        }
        let src = self.find(v).ok_or(())?;
        let set = self.also.entry(loc).or_default();
        set.remove(&v);
        if let Some(old) = self.label.insert(loc, v) {
            set.insert(old);
        }
        Ok(Some(Move {
            dst: loc,
            src,
            value: v,
        }))
    }
}

/// An allocated function and the moves the adapter added for unread phis.
#[derive(Debug)]
pub struct Raised {
    pub func: Function,
    pub dead_phi_moves: usize,
    /// Copies of a value onto itself that give a phi's name to a register regalloc2
    /// reads it from as its argument's (see [`raise`]).
    pub relabels: usize,
}

/// `f` (the prepared function `lowered` was built from) allocated as `out` says.
/// An error names what regalloc2 left out that chromatic's model needs.
pub fn raise(f: &Function, lowered: &Lowered, out: &Output) -> Result<Raised, String> {
    let cfg = Graph::of_function(f);
    let params = param_allocations(f, lowered, out);
    let mut g = f.clone();
    let mut at_end: Vec<Option<Holders>> = vec![None; f.blocks.len()];
    let mut relabels = 0;
    for &b in cfg.rpo() {
        let preds = cfg.preds(b);
        let mut items: Vec<InstOrEdit> = out
            .block_insts_and_edits(lowered, lowered.block(b))
            .collect();
        if let [p] = preds {
            let cut = in_edge_moves(f, b, &items, &params);
            let mut holders = at_end[p.index()].clone().unwrap_or_default();
            let moved = items.drain(..cut).filter_map(|i| edit_of(&i, &mut holders));
            g.blocks[p.index()].insts.extend(moved);
            at_end[p.index()] = Some(holders);
        }
        let mut holders = meet(preds.iter().filter_map(|p| at_end[p.index()].as_ref()));
        alias_phis(f, b, &cfg, &at_end, &mut holders);
        for phi in &mut g.blocks[b.index()].phis {
            phi.def.loc = params.get(&phi.def.value).copied();
            if let Some(loc) = phi.def.loc {
                holders.enter_phi(loc, phi.def.value);
            }
        }
        relabels += raise_block(f, lowered, out, b, &items, &mut g, &mut holders)?;
        at_end[b.index()] = Some(holders);
    }
    relabels += relabel_phi_arguments(&mut g, &cfg, &mut at_end)?;
    let dead_phi_moves = place_unread_phis(&mut g, &cfg, &at_end, out.num_spillslots)?;
    Ok(Raised {
        func: g,
        dead_phi_moves,
        relabels,
    })
}

/// Where each block parameter lives before its block's first instruction.
fn param_allocations(f: &Function, lowered: &Lowered, out: &Output) -> HashMap<Value, Location> {
    let mut entry_of = HashMap::new();
    for b in f.block_ids() {
        let first = lowered.block_insns(lowered.block(b)).first();
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
        return Holders::default();
    };
    let mut out = first.clone();
    for s in states {
        out.label.retain(|loc, v| s.label.get(loc) == Some(v));
        out.also.retain(|loc, set| {
            let other = s.also.get(loc);
            set.retain(|v| other.is_some_and(|o| o.contains(v)));
            !set.is_empty()
        });
    }
    out
}

/// At the end of each edge into a block with phis, gives each phi's location the name of
/// the phi's argument where regalloc2 has the argument there only as an alias; returns
/// the copies added.
fn relabel_phi_arguments(
    g: &mut Function,
    cfg: &Graph,
    at_end: &mut [Option<Holders>],
) -> Result<usize, String> {
    let mut added = 0;
    for b in g.block_ids() {
        for &p in cfg.preds(b) {
            let Some(h) = at_end[p.index()].as_mut() else {
                continue;
            };
            let mut moves = Vec::new();
            for phi in &g.block(b).phis {
                let arg = phi.args.iter().find(|a| a.block == p);
                let (Some(loc), Some(arg)) = (phi.def.loc, arg) else {
                    continue;
                };
                let m = h.relabel(loc, arg.value).map_err(|()| {
                    format!(
                        "at the end of block `{}` regalloc2 has `%{}` only as an alias of another value, in the location of the phi `%{}`, and nowhere by name",
                        g.block(p).name,
                        g.value(arg.value).name,
                        g.value(phi.def.value).name
                    )
                })?;
                moves.extend(m);
            }
            added += moves.len();
            let copies = moves.into_iter().map(|m| Inst {
                kind: InstKind::ParallelCopy(vec![m]),
                pos: Pos::default(),
            });
            g.blocks[p.index()].insts.extend(copies);
        }
    }
    Ok(added)
}

/// Adds each phi of `b` as an alias of every location holding its argument at the end
/// of every predecessor walked so far.
fn alias_phis(f: &Function, b: Block, cfg: &Graph, at_end: &[Option<Holders>], h: &mut Holders) {
    for phi in &f.block(b).phis {
        let ends: Vec<(&Holders, Value)> = cfg
            .preds(b)
            .iter()
            .filter_map(|p| {
                let arg = phi.args.iter().find(|a| a.block == *p)?;
                Some((at_end[p.index()].as_ref()?, arg.value))
            })
            .collect();
        let Some(&(first, arg)) = ends.first() else {
            continue;
        };
        for (&loc, _) in first.label.iter().filter(|(_, &v)| v == arg) {
            if ends.iter().all(|(e, a)| e.label.get(&loc) == Some(a)) {
                h.also.entry(loc).or_default().insert(phi.def.value);
            }
        }
    }
}

/// Block `b` of `g` with its operands located and regalloc2's edits (`items`, the
/// block's instructions and edits in order) inserted; returns the relabelling copies
/// added.
fn raise_block(
    f: &Function,
    lowered: &Lowered,
    out: &Output,
    b: Block,
    items: &[InstOrEdit],
    g: &mut Function,
    holders: &mut Holders,
) -> Result<usize, String> {
    let first = lowered.block_insns(lowered.block(b)).first().index();
    let original = &f.block(b).insts;
    let mut insts = Vec::with_capacity(original.len());
    let mut relabels = 0;
    for item in items {
        match item {
            InstOrEdit::Edit(_) => insts.extend(edit_of(item, holders)),
            InstOrEdit::Inst(i) => {
                let allocs = out.inst_allocs(*i);
                let (located, reads) = match original.get(i.index() - first) {
                    Some(inst) => {
                        let op = located_op(f, inst, allocs);
                        let reads = op
                            .op()
                            .map(|o| o.uses().copied().collect())
                            .unwrap_or_default();
                        (Some(op), reads)
                    }
                    None => {
                        let term = &mut g.blocks[b.index()].term;
                        locate_terminator(f, term, allocs);
                        (None, term.uses().to_vec())
                    }
                };
                for u in &reads {
                    let Some(loc) = u.loc else { continue };
                    let m = holders.relabel(loc, u.value).map_err(|()| {
                        format!(
                            "regalloc2 reads `%{}` in block `{}` from a register that has it only as an alias of its phi argument, and nowhere by name",
                            f.value(u.value).name,
                            f.block(b).name
                        )
                    })?;
                    if let Some(m) = m {
                        relabels += 1;
                        insts.push(Inst {
                            kind: InstKind::ParallelCopy(vec![m]),
                            pos: Pos::default(),
                        });
                    }
                }
                if let Some(op) = located {
                    write_defs(&op, holders);
                    insts.push(op);
                }
            }
        }
    }
    g.blocks[b.index()].insts = insts;
    Ok(relabels)
}

/// How many of the edits that open block `b` are the moves of its phis' arguments into
/// the phis' locations: up to the first write of each phi's location (regalloc2 orders
/// the moves at one point by kind, the edge's moves first).
fn in_edge_moves(
    f: &Function,
    b: Block,
    items: &[InstOrEdit],
    params: &HashMap<Value, Location>,
) -> usize {
    let phi_locs: Vec<Location> = f
        .block(b)
        .phis
        .iter()
        .filter_map(|p| params.get(&p.def.value).copied())
        .collect();
    let mut cut = 0;
    let mut written = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let InstOrEdit::Edit(Edit::Move { from, to }) = item else {
            break;
        };
        let class = from
            .as_reg()
            .or(to.as_reg())
            .map(|r| ClassId(r.class() as u8));
        let dst = class.and_then(|c| Lowered::location(c, *to));
        if let Some(dst) = dst.filter(|d| phi_locs.contains(d) && !written.contains(d)) {
            written.push(dst);
            cut = i + 1;
        }
    }
    cut
}

/// The instruction of an edit (none for an instruction, or a move of nothing).
fn edit_of(item: &InstOrEdit, holders: &mut Holders) -> Option<Inst> {
    match item {
        InstOrEdit::Edit(Edit::Move { from, to }) => edit(*from, *to, holders),
        InstOrEdit::Inst(_) => None,
    }
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
    let value = holders.copy(src, dst).unwrap_or(Value(0));
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
fn located_op(f: &Function, inst: &Inst, allocs: &[Allocation]) -> Inst {
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
    }
    inst
}

fn write_defs(inst: &Inst, holders: &mut Holders) {
    for d in inst.op().into_iter().flat_map(|op| &op.defs) {
        if let Some(loc) = d.loc {
            holders.write(loc, d.value);
        }
    }
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
            let src = slot_of
                .get(&arg)
                .copied()
                .or_else(|| holders.and_then(|h| h.find(arg)));
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
