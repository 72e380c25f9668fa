//! One instruction: its operand constraints met by one solve and one parallel copy.
//!
//! An instruction without fixed, tied or early-clobber operands takes the fast path of
//! Hack & Goos: its dying operands free their registers, each definition takes a free
//! window (ACO's `get_reg_simple`). Every other instruction, and one whose definitions
//! find no free window, builds the [`packing`] problem of each class it touches
//! ([`operands`]) and solves it with [`packing::near`], which keeps values where they are
//! when it can; the values that move and the copies fixed or tied operands read become
//! one parallel copy before the instruction.

use super::super::operands::{self, Built, Context, Operands, Role};
use super::super::packing;
use super::super::parallel_copy::sequentialise;
use super::super::TEMP_SLOT;
use super::Assigner;
use crate::alloc::AllocError;
use crate::program::*;
use crate::target::ClassId;

/// What the solves of an instruction's classes add up to.
struct Solution<'p> {
    placed: &'p mut Placed,
    /// The parallel copy before the instruction.
    moves: &'p mut Vec<Move>,
    /// Values live after the instruction, at their new place.
    after: &'p mut Vec<(Value, Location)>,
    /// Units holding a value or a copy while the instruction reads.
    busy: &'p mut Vec<Location>,
}

/// Where an instruction's operands are read and its definitions written.
#[derive(Debug, Default)]
pub(super) struct Placed {
    reads: Vec<Option<Location>>,
    defs: Vec<Option<Location>>,
}

/// Buffers one instruction's assignment reuses from the one before.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    killed: Vec<Value>,
    placed: Placed,
    classes: Vec<ClassId>,
    residents: Vec<(Value, Option<u16>)>,
    built: Built,
    moves: Vec<Move>,
    after: Vec<(Value, Location)>,
    busy: Vec<Location>,
}

impl Assigner<'_> {
    pub(super) fn op(
        &mut self,
        b: Block,
        i: usize,
        mut op: Op,
        pos: Pos,
        out: &mut Vec<Inst>,
    ) -> Result<(), AllocError> {
        let mut buf = std::mem::take(&mut self.buffers);
        buf.killed.clear();
        buf.killed.extend(self.a.liveness.kills_at(b, i as u32));
        let killed = std::mem::take(&mut buf.killed);
        self.make_way(&op, &killed, pos, out);
        if self.fast(&op, &killed, &mut buf.placed.defs) {
            self.reads_in_place(&op.operands, &mut buf.placed.reads);
        } else {
            let ops = Operands {
                defs: &op.defs,
                operands: &op.operands,
            };
            self.solve(ops, &killed, &[], pos, out, &mut buf)?;
        }
        for (operand, l) in op.operands.iter_mut().zip(&buf.placed.reads) {
            if let Operand::Value(u) = operand {
                u.loc = *l;
            }
        }
        for (d, l) in op.defs.iter_mut().zip(&buf.placed.defs) {
            d.loc = *l;
            if let Some(l) = *l {
                if self.a.liveness.is_dead(d.value) {
                    self.regs.release(l, d.value);
                }
            }
        }
        out.push(Inst {
            kind: InstKind::Op(op),
            pos,
        });
        buf.killed = killed;
        self.buffers = buf;
        Ok(())
    }

    /// When the register a definition has an affinity for is held by values that are
    /// not where they are wanted either, but whose own register of affinity is free,
    /// those values move there first (a copy the edge would need anyway, made early so
    /// that the two do not end up exchanging places through a cycle).
    fn make_way(&mut self, op: &Op, killed: &[Value], pos: Pos, out: &mut Vec<Inst>) {
        let [d] = op.defs.as_slice() else { return };
        if is_constrained(op) {
            return;
        }
        let data = self.f.value(d.value);
        let Some(Location::Reg { class, first, len }) = self.affinity(d.value) else {
            return;
        };
        if class != data.class || len != data.size {
            return;
        }
        let mut occupants: Vec<Value> = (first..first + len)
            .filter_map(|u| self.regs.occupant(class, u))
            .filter(|v| !killed.contains(v))
            .collect();
        occupants.dedup();
        let stuck = |v: &Value| op.uses().any(|u| u.value == *v) || self.pinned[v.index()];
        if occupants.is_empty() || occupants.iter().any(stuck) {
            return;
        }
        let mut moves = Vec::new();
        for &x in &occupants {
            let Some(
                to @ Location::Reg {
                    first: f2, len: l2, ..
                },
            ) = self.affinity(x)
            else {
                return;
            };
            let overlaps = f2 < first + len && first < f2 + l2;
            if overlaps
                || !self.regs.is_free(class, f2, l2)
                || moves.iter().any(|m: &Move| operands::overlaps(m.dst, to))
            {
                return;
            }
            let from = self.loc[x.index()].expect("an occupant has a location");
            moves.push(Move {
                dst: to,
                src: from,
                value: x,
            });
        }
        for m in &moves {
            self.regs.release(m.src, m.value);
            self.set_loc(m.value, m.dst);
        }
        let busy: Vec<Location> = moves.iter().map(|m| m.dst).collect();
        self.emit(&moves, &busy, pos, out);
    }

    /// Operands read where their values are, into `reads`.
    fn reads_in_place(&self, operands: &[Operand], reads: &mut Vec<Option<Location>>) {
        reads.clear();
        reads.extend(
            operands
                .iter()
                .map(|o| o.as_use().and_then(|u| self.loc[u.value.index()])),
        );
    }

    /// The fast path: no constraints, and every definition finds a free window once the
    /// dying operands are released; `defs` gets their locations. False (with nothing
    /// changed) otherwise.
    fn fast(&mut self, op: &Op, killed: &[Value], defs: &mut Vec<Option<Location>>) -> bool {
        if is_constrained(op) {
            return false;
        }
        for &v in killed {
            if let Some(l) = self.loc[v.index()] {
                self.regs.release(l, v);
            }
        }
        defs.clear();
        for d in &op.defs {
            match self.free_window(op, d) {
                Some(l) => {
                    self.set_loc(d.value, l);
                    self.regs.advance(l);
                    defs.push(Some(l));
                }
                None => {
                    self.undo_fast(killed, defs, op);
                    return false;
                }
            }
        }
        true
    }

    /// A free window for `d`: its `prefer`red operand's register if that is free, else
    /// its place in a tuple it is part of ([`parts`](super::parts)), else its phi affinity, else the
    /// policy's first.
    fn free_window(&self, op: &Op, d: &Def) -> Option<Location> {
        let data = self.f.value(d.value);
        let preferred = d
            .prefer
            .and_then(|p| op.operands.get(usize::from(p))?.as_use())
            .and_then(|u| self.loc[u.value.index()]);
        let part = self.parts.wish(self.f, op, d.value, &self.loc);
        let align = self.align_of(d.value);
        for wished in [preferred, part, self.affinity(d.value)]
            .into_iter()
            .flatten()
        {
            if let Location::Reg { class, first, len } = wished {
                if class == data.class
                    && len == data.size
                    && first.is_multiple_of(align)
                    && self.regs.is_free(class, first, len)
                {
                    return Some(wished);
                }
            }
        }
        let first = self.regs.find_free(data.class, data.size, align)?;
        Some(self.reg_of(d.value, first))
    }

    fn undo_fast(&mut self, killed: &[Value], defs: &[Option<Location>], op: &Op) {
        for (d, l) in op.defs.iter().zip(defs) {
            if let Some(l) = *l {
                self.regs.release(l, d.value);
                self.loc[d.value.index()] = None;
                self.placed.retain(|&v| v != d.value);
            }
        }
        for &v in killed {
            if let Some(l) = self.loc[v.index()] {
                self.regs.occupy(l, v);
            }
        }
    }

    /// Solves the packing problem of every class the instruction touches and emits the
    /// parallel copy that brings the register file there.
    /// Fixed uses of the terminator are met like an instruction's; the others are read
    /// where their values are. A divergent branch whose join belongs to an enclosing
    /// branch first returns uniform values to where they left that branch
    /// ([`Divergence::conform`](crate::analysis::divergence::Divergence::conform)).
    pub(super) fn terminator(&mut self, b: Block, out: &mut Vec<Inst>) -> Result<(), AllocError> {
        let term = &self.f.block(b).term;
        let (uses, pos) = (term.uses(), term.pos());
        let operands: Vec<Operand> = uses.iter().map(|u| Operand::Value(*u)).collect();
        let pins = self.conformance(b);
        let mut buf = std::mem::take(&mut self.buffers);
        if uses.iter().any(|u| u.fixed.is_some()) || !pins.is_empty() {
            let ops = Operands::uses_only(&operands);
            self.solve(ops, &[], &pins, pos, out, &mut buf)?;
        } else {
            self.reads_in_place(&operands, &mut buf.placed.reads);
        }
        let reads = &mut self.term_reads[b.index()];
        reads.clear();
        reads.extend_from_slice(&buf.placed.reads[..uses.len()]);
        self.buffers = buf;
        Ok(())
    }

    /// The uniform values live out of `b` with the register each must leave `b` in.
    fn conformance(&self, b: Block) -> Vec<(Value, Location)> {
        let Some(owner) = self.a.divergence.conform(b) else {
            return Vec::new();
        };
        let exit = &self.exit[owner.index()];
        self.a
            .liveness
            .live_out(b)
            .iter()
            .filter(|&&v| self.target.class(self.f.value(v).class).uniform)
            .filter_map(|&v| Some((v, super::entry::lookup(exit, v)?)))
            .collect()
    }

    /// Solves the packing problem of every class the instruction touches (or `pins`
    /// names: values that must be in a given register) and emits the parallel copy that
    /// brings the register file there; `buf.placed` gets where operands are read and
    /// definitions written.
    fn solve(
        &mut self,
        ops: Operands,
        killed: &[Value],
        pins: &[(Value, Location)],
        pos: Pos,
        out: &mut Vec<Inst>,
        buf: &mut Buffers,
    ) -> Result<(), AllocError> {
        let placed = &mut buf.placed;
        placed.reads.clear();
        placed.reads.resize(ops.operands.len(), None);
        placed.defs.clear();
        placed.defs.resize(ops.defs.len(), None);
        buf.moves.clear();
        buf.after.clear();
        buf.busy.clear();
        self.classes_of(ops, pins, &mut buf.classes);
        for &class in &buf.classes {
            self.regs.residents(class, &mut buf.residents);
            self.build(class, ops, killed, &buf.residents, &mut buf.built);
            let built = &mut buf.built;
            pin(built, pins);
            self.keep_pinned_in_place(built);
            self.wish_affinities(built, ops);
            let at = packing::near(&built.problem, self.regs.order(class))
                .ok_or_else(|| self.unmet(class, pos))?;
            let mut sink = Solution {
                placed,
                moves: &mut buf.moves,
                after: &mut buf.after,
                busy: &mut buf.busy,
            };
            self.apply(ops, built, &at, &mut sink);
        }
        self.emit(&buf.moves, &buf.busy, pos, out);
        for &(v, l) in &buf.after {
            self.set_loc(v, l);
        }
        for (d, l) in ops.defs.iter().zip(&placed.defs) {
            if let Some(l) = *l {
                self.set_loc(d.value, l);
                self.regs.advance(l);
            }
        }
        Ok(())
    }

    fn classes_of(&self, ops: Operands, pins: &[(Value, Location)], classes: &mut Vec<ClassId>) {
        classes.clear();
        classes.extend(
            ops.operands
                .iter()
                .filter_map(Operand::as_use)
                .map(|u| u.value)
                .chain(ops.defs.iter().map(|d| d.value))
                .chain(pins.iter().map(|&(v, _)| v))
                .map(|v| self.f.value(v).class),
        );
        classes.sort();
        classes.dedup();
    }

    fn build(
        &self,
        class: ClassId,
        ops: Operands,
        killed: &[Value],
        residents: &[(Value, Option<u16>)],
        built: &mut Built,
    ) {
        let f = self.f;
        let shape = |v: Value| (f.value(v).class, f.value(v).size);
        let lives_on = |v: Value| !killed.contains(&v);
        let ctx = Context {
            target: self.target,
            class,
            units: self.regs.limit(class),
            shape: &shape,
            lives_on: &lives_on,
        };
        operands::build_into(&ctx, residents, ops, built);
    }

    /// Takes the solution of one class: values that move, copies, where operands are read
    /// and definitions written. The class's residents that move or die leave the register
    /// file; `after` lists those that move and stay live, at their new place (a value that
    /// stays where it is keeps its units: nothing placed later overlaps it).
    fn apply(&mut self, ops: Operands, built: &Built, at: &[u16], out: &mut Solution) {
        let f = self.f;
        let item_loc = |i: usize, v: Value| Location::Reg {
            class: f.value(v).class,
            first: at[i],
            len: f.value(v).size,
        };
        for (i, role) in built.roles.iter().enumerate() {
            match *role {
                Role::Value(v) => {
                    let from = self.loc[v.index()].expect("a resident has a location");
                    let to = item_loc(i, v);
                    if from != to {
                        out.moves.push(Move {
                            dst: to,
                            src: from,
                            value: v,
                        });
                    }
                    out.busy.push(to);
                    let lives_on = built.problem.items[i].span != packing::Span::Early
                        && !built.defs.contains(&Some(i));
                    if from == to && lives_on {
                        continue;
                    }
                    self.regs.release(from, v);
                    if lives_on {
                        out.after.push((v, to));
                    }
                }
                Role::Copy(v) => {
                    let from = self.loc[v.index()].expect("a copied value has a location");
                    let to = item_loc(i, v);
                    out.moves.push(Move {
                        dst: to,
                        src: from,
                        value: v,
                    });
                    out.busy.push(to);
                }
                Role::Def(_) => {}
            }
        }
        for (k, item) in built.reads.iter().enumerate() {
            if let (Some(i), Some(u)) = (item, ops.operands[k].as_use()) {
                out.placed.reads[k] = Some(item_loc(*i, u.value));
            }
        }
        for (d, item) in built.defs.iter().enumerate() {
            if let Some(i) = item {
                out.placed.defs[d] = Some(self.reg_of(ops.defs[d].value, at[*i]));
            }
        }
    }

    fn unmet(&self, class: ClassId, pos: Pos) -> AllocError {
        self.error(
            pos,
            format!(
                "the operands of this instruction and the values live across it do not fit in {} `{}` registers",
                self.regs.limit(class),
                self.target.class(class).name
            ),
        )
    }

    /// Sequentialises the parallel copy before the instruction; temporaries avoid every
    /// unit holding a value or a copy at the instruction.
    fn emit(&self, moves: &[Move], busy: &[Location], pos: Pos, out: &mut Vec<Inst>) {
        if moves.is_empty() {
            return;
        }
        let taken = |c: ClassId, u: u16| {
            u >= self.regs.limit(c)
                || busy.iter().any(|&l| {
                    matches!(l, Location::Reg { class, first, len } if class == c && (first..first + len).contains(&u))
                })
        };
        for kind in sequentialise(moves, self.target, &taken, TEMP_SLOT) {
            out.push(Inst { kind, pos });
        }
    }
}

impl Assigner<'_> {
    /// Definitions without a `prefer` wish their phi affinity.
    fn wish_affinities(&self, built: &mut Built, ops: Operands) {
        for (item, role) in built.problem.items.iter_mut().zip(&built.roles) {
            let Role::Def(d) = *role else { continue };
            if item.prefer.is_none() {
                if let Some(Location::Reg { first, .. }) = self.affinity(ops.defs[d].value) {
                    item.prefer = Some(first);
                }
            }
        }
    }
}

/// Whether an operation has fixed, tied or early-clobber operands.
fn is_constrained(op: &Op) -> bool {
    op.uses().any(|u| u.fixed.is_some())
        || op
            .defs
            .iter()
            .any(|d| d.fixed.is_some() || d.tied.is_some() || d.early_clobber)
}

impl Assigner<'_> {
    /// Pinned values stay where they are: their items are pinned to their current place.
    fn keep_pinned_in_place(&self, built: &mut Built) {
        for (item, role) in built.problem.items.iter_mut().zip(&built.roles) {
            if let Role::Value(v) = *role {
                if self.pinned[v.index()] {
                    item.pinned = item.pinned.or(item.current);
                }
            }
        }
    }
}

/// Pins the items of values that must sit in a given register.
fn pin(built: &mut Built, pins: &[(Value, Location)]) {
    for (item, role) in built.problem.items.iter_mut().zip(&built.roles) {
        let Role::Value(v) = *role else { continue };
        if let Some(&(_, Location::Reg { first, .. })) = pins.iter().find(|&&(w, _)| w == v) {
            item.pinned = Some(first);
        }
    }
}
