//! One instruction: its operand constraints met by one solve and one parallel copy.
//!
//! An instruction without fixed, tied or early-clobber operands takes the fast path of
//! Hack & Goos: its dying operands free their registers, each definition takes a free
//! window (ACO's `get_reg_simple`). Every other instruction, and one whose definitions
//! find no free window, builds the [`packing`] problem of each class it touches
//! ([`operands`]) and solves it with [`packing::near`], which keeps values where they are
//! when it can; the values that move and the copies fixed or tied operands read become
//! one parallel copy before the instruction. A class whose operands the instruction does
//! not fix (its definitions may be fixed, as clobbers are, early clobbers, or tied to an
//! operand that dies here) is solved on the register file's bit masks instead
//! ([`packing::near_held`]): its values stay, so only its definitions need places, and
//! the answer is the one [`packing::near`] gives, unless some value would have to move.

use super::super::operands::{self, Built, Context, OfClass, Operands, Role};
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
    /// The instruction's operands by class.
    of_class: Vec<OfClass>,
    residents: Vec<(Value, Option<u16>)>,
    /// Units held by values a solve leaves out of its problem.
    still: Vec<u64>,
    built: Built,
    /// Where the items of the class solved last go.
    placement: packing::Placement,
    /// The definitions of a class only they constrain, as items (but the tied ones).
    defs: packing::Problem,
    /// The values whose registers the class's tied definitions take over, in order.
    taken_over: Vec<Value>,
    moves: Vec<Move>,
    after: Vec<(Value, Location)>,
    busy: Vec<Location>,
    /// A terminator's uses as operands.
    term_operands: Vec<Operand>,
    /// The copies a block's assignment adds, with the instruction each goes before.
    pub(super) added: Vec<(usize, Inst)>,
    /// The copies one instruction of the block needs.
    pub(super) copies: Vec<Inst>,
}

impl Assigner<'_> {
    /// Assigns operation `i` of `b` in place (the locations of its operands and
    /// definitions); the copies it needs before it go to `copies`.
    pub(super) fn op(
        &mut self,
        (b, i): (Block, usize),
        op: &mut Op,
        pos: Pos,
        copies: &mut Vec<Inst>,
        buf: &mut Buffers,
    ) -> Result<(), AllocError> {
        buf.killed.clear();
        buf.killed.extend(self.a.liveness.kills_at(b, i as u32));
        let killed = std::mem::take(&mut buf.killed);
        self.make_way(op, &killed, pos, copies);
        if self.fast(op, &killed, &mut buf.placed.defs) {
            self.reads_in_place(&op.operands, &mut buf.placed.reads);
        } else {
            let ops = Operands {
                defs: &op.defs,
                operands: &op.operands,
            };
            self.solve(ops, &killed, &[], pos, copies, buf)?;
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
        buf.killed = killed;
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
    /// policy's first. A pinned value also wishes for the register a fixed use of its own
    /// reads, and avoids the registers fixed operands claim while it lives
    /// ([`foresight`](super::foresight)) wherever a window allows.
    fn free_window(&self, op: &Op, d: &Def) -> Option<Location> {
        let data = self.f.value(d.value);
        let preferred = d
            .prefer
            .and_then(|p| op.operands.get(usize::from(p))?.as_use())
            .and_then(|u| self.loc[u.value.index()]);
        let part = self.parts.wish(self.f, op, d.value, &self.loc);
        let own_fixed_use = self.foresight.wished(d.value);
        let align = self.align_of(d.value);
        let unclaimed = |first: u16| !self.foresight.is_claimed(d.value, first, data.size);
        for wished in [own_fixed_use, preferred, part, self.affinity(d.value)]
            .into_iter()
            .flatten()
        {
            if let Location::Reg { class, first, len } = wished {
                if class == data.class
                    && len == data.size
                    && first.is_multiple_of(align)
                    && self.regs.is_free(class, first, len)
                    && unclaimed(first)
                {
                    return Some(wished);
                }
            }
        }
        let first = self
            .regs
            .find_free_where(data.class, data.size, align, unclaimed)
            .or_else(|| self.regs.find_free(data.class, data.size, align))?;
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
    pub(super) fn terminator(
        &mut self,
        b: Block,
        out: &mut Vec<Inst>,
        buf: &mut Buffers,
    ) -> Result<(), AllocError> {
        let term = &self.f.block(b).term;
        let (uses, pos) = (term.uses(), term.pos());
        let mut operands = std::mem::take(&mut buf.term_operands);
        operands.clear();
        operands.extend(uses.iter().map(|u| Operand::Value(*u)));
        let pins = self.conformance(b);
        if uses.iter().any(|u| u.fixed.is_some()) || !pins.is_empty() {
            let ops = Operands::uses_only(&operands);
            self.solve(ops, &[], &pins, pos, out, buf)?;
        } else {
            self.reads_in_place(&operands, &mut buf.placed.reads);
        }
        buf.term_operands = operands;
        let reads = &mut self.term_reads[b.index()];
        reads.clear();
        reads.extend_from_slice(&buf.placed.reads[..uses.len()]);
        Ok(())
    }

    /// The uniform values live out of `b` with the register each must leave `b` in.
    fn conformance(&self, b: Block) -> Vec<(Value, Location)> {
        let Some(owner) = self.a.divergence.conform(b) else {
            return Vec::new();
        };
        let exit = self.exit.of(owner);
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
        buf.placed.reads.clear();
        buf.placed.reads.resize(ops.operands.len(), None);
        buf.placed.defs.clear();
        buf.placed.defs.resize(ops.defs.len(), None);
        buf.moves.clear();
        buf.after.clear();
        buf.busy.clear();
        if let Some(message) = self.pinned_elsewhere(ops, pins) {
            return Err(self.error(pos, message));
        }
        let mut of_class = std::mem::take(&mut buf.of_class);
        OfClass::sort(&self.f.values, ops, &mut of_class);
        self.classes_of(&of_class, pins, &mut buf.classes);
        for k in 0..buf.classes.len() {
            let class = buf.classes[k];
            let problem = Problem {
                ops,
                of: of_class.get(class.index()).unwrap_or(&NO_OPERANDS),
                killed,
                pins,
            };
            if self.solve_defs_only(class, problem, buf) {
                continue;
            }
            if !self.solve_around(class, problem, buf) {
                buf.placement.at = self
                    .solve_whole(class, problem, buf)
                    .ok_or_else(|| self.unmet(class, pos))?;
            }
            let mut sink = Solution {
                placed: &mut buf.placed,
                moves: &mut buf.moves,
                after: &mut buf.after,
                busy: &mut buf.busy,
            };
            self.apply(problem, &buf.built, &buf.placement.at, &mut sink);
        }
        buf.of_class = of_class;
        self.emit(&buf.moves, &buf.busy, pos, out);
        for &(v, l) in &buf.after {
            self.set_loc(v, l);
        }
        for (d, l) in ops.defs.iter().zip(&buf.placed.defs) {
            if let Some(l) = *l {
                self.set_loc(d.value, l);
                self.regs.advance(l);
            }
        }
        Ok(())
    }

    /// A class whose operands the instruction does not fix, with no pin (fixed, tied and
    /// early-clobber definitions are allowed): the answer
    /// [`solve_around`](Self::solve_around) would give, from the register file's bit mask
    /// without building the problem, where that answer moves no value. The operands stay
    /// where they are; a tied definition takes over the register of its operand's value
    /// when that value dies here ([`taken_over`](Self::taken_over)), the other values
    /// read for the last time leave their units to the late definitions, fixed
    /// definitions take their registers, and the others their wishes or first fit in the
    /// packing's canonical order ([`packing::near_held`]); the solution is taken as
    /// [`apply`](Self::apply) takes it. False, with nothing changed, when the class is
    /// constrained otherwise, an operand is not where its location says, a tied
    /// definition needs a copy, a fixed definition's register holds a value, or a
    /// definition finds no room without moving one.
    fn solve_defs_only(&mut self, class: ClassId, problem: Problem, buf: &mut Buffers) -> bool {
        if !problem.pins.is_empty() || !only_defs_constrained(problem, class) {
            return false;
        }
        if self
            .touched_residents(class, problem, &mut buf.residents)
            .is_none()
        {
            return false;
        }
        buf.defs.items.clear();
        buf.taken_over.clear();
        for &d in problem.of.defs() {
            if problem.ops.defs[d].tied.is_none() {
                let item = self.def_item(problem, class, d);
                buf.defs.items.push(item);
                continue;
            }
            match self.taken_over(problem, class, d) {
                Some(v) if !buf.taken_over.contains(&v) => buf.taken_over.push(v),
                _ => return false,
            }
        }
        let residents = &buf.residents;
        self.late_taken(class, problem, (residents, &buf.taken_over), &mut buf.still);
        buf.defs.units = self.regs.limit(class);
        let held = packing::Held {
            early: self.regs.held(class),
            late: &buf.still,
        };
        let order = self.regs.order(class);
        if !packing::near_held(&buf.defs, held, order, &mut buf.placement) {
            return false;
        }
        for &(v, first) in &buf.residents {
            buf.busy
                .push(self.reg_of(v, first.expect("a touched value has a place")));
            if problem.killed.contains(&v) {
                let from = self.loc[v.index()].expect("a resident has a location");
                self.regs.release(from, v);
            }
        }
        for &(k, u) in problem.of.uses() {
            let Some(Location::Reg { first, .. }) = self.loc[u.value.index()] else {
                continue;
            };
            buf.placed.reads[k] = Some(self.reg_of(u.value, first));
        }
        let mut placed = buf.placement.at.iter();
        let mut taken_over = buf.taken_over.iter();
        for &d in problem.of.defs() {
            let def = &problem.ops.defs[d];
            let first = match def.tied {
                None => placed.next().copied(),
                Some(_) => taken_over.next().and_then(|v| match self.loc[v.index()] {
                    Some(Location::Reg { first, .. }) => Some(first),
                    _ => None,
                }),
            };
            buf.placed.defs[d] = first.map(|first| self.reg_of(def.value, first));
        }
        true
    }

    /// The value whose register tied definition `d` takes over, as the problem's builder
    /// shares their item: the value its operand reads, of the class and the definition's
    /// size, read here for the last time; `None` when the builder would make a copy or
    /// pin the item (a fixed definition), which this path does not model.
    fn taken_over(&self, problem: Problem, class: ClassId, d: usize) -> Option<Value> {
        let def = &problem.ops.defs[d];
        let read = problem.ops.operands.get(usize::from(def.tied?))?.as_use()?;
        let (data, value) = (self.f.value(def.value), self.f.value(read.value));
        let same = value.class == class && value.size == data.size;
        let dies = problem.killed.contains(&read.value);
        (def.fixed.is_none() && same && dies).then_some(read.value)
    }

    /// The units of `class` held at the late instant: every unit held, but those of the
    /// `residents` read for the last time whose registers no tied definition takes over
    /// (`taken_over`).
    fn late_taken(
        &self,
        class: ClassId,
        problem: Problem,
        (residents, taken_over): (&[(Value, Option<u16>)], &[Value]),
        taken: &mut Vec<u64>,
    ) {
        taken.clear();
        taken.extend_from_slice(self.regs.held(class));
        for &(v, first) in residents {
            if !problem.killed.contains(&v) || taken_over.contains(&v) {
                continue;
            }
            let first = usize::from(first.unwrap_or(0));
            for u in first..first + usize::from(self.f.value(v).size) {
                taken[u / 64] &= !(1u64 << (u % 64));
            }
        }
    }

    /// Definition `d` of a class [`solve_defs_only`](Self::solve_defs_only) solves as the
    /// item the problem's builder makes of it (both instants for an early clobber, pinned
    /// where it is fixed), with the wish [`wish_affinities`](Self::wish_affinities) adds:
    /// the place of the operand it prefers when that operand reads a value of the class
    /// and its size, else its phi affinity (a pinned value: its
    /// [`pinned_wish`](Self::pinned_wish)).
    fn def_item(&self, problem: Problem, class: ClassId, d: usize) -> packing::Item {
        let def = &problem.ops.defs[d];
        let data = self.f.value(def.value);
        let span = if def.early_clobber {
            packing::Span::Both
        } else {
            packing::Span::Late
        };
        let mut item = packing::Item::new(data.size, self.align_of(def.value), span);
        if let Some(Location::Reg { first, .. }) = def.fixed {
            item.pinned = Some(first);
            return item;
        }
        let preferred = def
            .prefer
            .and_then(|p| problem.ops.operands.get(usize::from(p))?.as_use())
            .filter(|u| {
                let read = self.f.value(u.value);
                read.class == class && read.size == data.size
            })
            .and_then(|u| self.loc[u.value.index()]);
        let wish = if preferred.is_some() {
            preferred
        } else if self.pinned[def.value.index()] {
            self.pinned_wish(def.value)
        } else {
            self.affinity(def.value)
        };
        if let Some(Location::Reg { first, .. }) = wish {
            item.prefer = Some(first);
        }
        item
    }

    /// The class's problem with every value in its registers as an item, solved by
    /// [`packing::near`] into `buf.built`.
    fn solve_whole(
        &mut self,
        class: ClassId,
        problem: Problem,
        buf: &mut Buffers,
    ) -> Option<Vec<u16>> {
        self.regs.residents(class, &mut buf.residents);
        self.prepare(class, problem, &buf.residents, &mut buf.built);
        packing::near(&buf.built.problem, self.regs.order(class))
    }

    /// The class's problem with only the values the instruction touches as items (its
    /// operands, the values `pins` names, the values under a pinned item), the others
    /// held still by the register file's bit mask; solved by [`packing::near_around`]
    /// into `buf.built`, with the answer [`solve_whole`](Self::solve_whole) would give,
    /// in `buf.placement`. False when that answer may move a value left out, or the
    /// register file is not as the values' locations say.
    fn solve_around(&mut self, class: ClassId, problem: Problem, buf: &mut Buffers) -> bool {
        let residents = &mut buf.residents;
        let touched = self.touched_residents(class, problem, residents);
        if touched
            .and_then(|()| self.add_residents_under_pins(class, problem, residents))
            .is_none()
        {
            return false;
        }
        self.prepare(class, problem, &buf.residents, &mut buf.built);
        self.left_alone(class, &buf.residents, &mut buf.still);
        let order = self.regs.order(class);
        packing::near_around(&buf.built.problem, &buf.still, order, &mut buf.placement)
    }

    /// The problem of one class: built, pins and pinned values fixed, affinities wished.
    fn prepare(
        &self,
        class: ClassId,
        problem: Problem,
        residents: &[(Value, Option<u16>)],
        built: &mut Built,
    ) {
        self.build(class, problem, residents, built);
        pin(built, problem.pins);
        self.keep_pinned_in_place(built);
        self.wish_affinities(built, problem.ops);
    }

    /// The values of `class` the operands read or `pins` names, each with its first unit,
    /// in unit order (as [`RegFile::residents`](super::super::regfile::RegFile::residents)
    /// lists them); `None` when one of them is not in the register file where its location says.
    fn touched_residents(
        &self,
        class: ClassId,
        problem: Problem,
        out: &mut Vec<(Value, Option<u16>)>,
    ) -> Option<()> {
        out.clear();
        let pinned = problem.pins.iter().map(|&(v, _)| v);
        let pinned = pinned.filter(|&v| self.f.value(v).class == class);
        for v in problem.of.used_values().chain(pinned) {
            out.push((v, Some(self.resident_first(class, v)?)));
        }
        sort_by_unit(out);
        Some(())
    }

    /// Adds to `residents` the values under the items the problem will pin: the registers
    /// the class's fixed uses read and its fixed definitions write, and those `pins` names
    /// (a pinned value's own item stays where it is, over itself). `None` when one of them
    /// is not where its location says.
    fn add_residents_under_pins(
        &self,
        class: ClassId,
        problem: Problem,
        residents: &mut Vec<(Value, Option<u16>)>,
    ) -> Option<()> {
        let before = residents.len();
        let uses = problem.of.uses().iter().map(|(_, u)| (u.value, u.fixed));
        let defs = problem.of.defs().iter().map(|&d| &problem.ops.defs[d]);
        let pins = problem.pins.iter().map(|&(v, l)| (v, Some(l)));
        let pinned = uses.chain(defs.map(|d| (d.value, d.fixed))).chain(pins);
        for (v, at) in pinned {
            let Some(Location::Reg {
                class: c, first, ..
            }) = at
            else {
                continue;
            };
            if c != class {
                continue;
            }
            for u in first..first.saturating_add(self.f.value(v).size) {
                let Some(w) = self.regs.occupant(class, u) else {
                    continue;
                };
                if !residents.iter().any(|&(r, _)| r == w) {
                    residents.push((w, Some(self.resident_first(class, w)?)));
                }
            }
        }
        if residents.len() > before {
            sort_by_unit(residents);
        }
        Some(())
    }

    /// The first unit of `v` when every unit of its location in `class` holds it.
    fn resident_first(&self, class: ClassId, v: Value) -> Option<u16> {
        let Some(Location::Reg {
            class: c,
            first,
            len,
        }) = self.loc[v.index()]
        else {
            return None;
        };
        let holds = (first..first + len).all(|u| self.regs.occupant(class, u) == Some(v));
        (c == class && holds).then_some(first)
    }

    /// The units of `class` held by values other than `residents`, as bits.
    fn left_alone(&self, class: ClassId, residents: &[(Value, Option<u16>)], still: &mut Vec<u64>) {
        still.clear();
        still.extend_from_slice(self.regs.held(class));
        for &(v, first) in residents {
            let first = usize::from(first.unwrap_or(0));
            for u in first..first + usize::from(self.f.value(v).size) {
                still[u / 64] &= !(1u64 << (u % 64));
            }
        }
    }

    /// The classes the instruction touches, in class order: those its operands sorted by
    /// class (`of_class`) has operands of, and those of the values `pins` names.
    fn classes_of(
        &self,
        of_class: &[OfClass],
        pins: &[(Value, Location)],
        classes: &mut Vec<ClassId>,
    ) {
        classes.clear();
        let with_operands = |c: &ClassId| of_class.get(c.index()).is_some_and(|of| !of.is_empty());
        classes.extend(self.target.class_ids().filter(with_operands));
        if pins.is_empty() {
            return;
        }
        classes.extend(pins.iter().map(|&(v, _)| self.f.value(v).class));
        classes.sort();
        classes.dedup();
    }

    fn build(
        &self,
        class: ClassId,
        problem: Problem,
        residents: &[(Value, Option<u16>)],
        built: &mut Built,
    ) {
        let killed = problem.killed;
        let lives_on = |v: Value| !killed.contains(&v);
        let ctx = Context {
            target: self.target,
            class,
            units: self.regs.limit(class),
            values: &self.f.values,
            lives_on: &lives_on,
        };
        operands::build_of_class(&ctx, residents, (problem.ops, problem.of), built);
    }

    /// Takes the solution of one class: values that move, copies, where operands are read
    /// and definitions written. The class's residents that move or die leave the register
    /// file; `after` lists those that move and stay live, at their new place (a value that
    /// stays where it is keeps its units: nothing placed later overlaps it).
    fn apply(&mut self, problem: Problem, built: &Built, at: &[u16], out: &mut Solution) {
        let (f, ops) = (self.f, problem.ops);
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
                    // A killed value's item spans early only, or a tied definition took it.
                    let lives_on = !problem.killed.contains(&v);
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
        for k in problem.of.operands() {
            if let (Some(i), Some(u)) = (built.reads[k], ops.operands[k].as_use()) {
                out.placed.reads[k] = Some(item_loc(i, u.value));
            }
        }
        for &d in problem.of.defs() {
            if let Some(i) = built.defs[d] {
                out.placed.defs[d] = Some(self.reg_of(ops.defs[d].value, at[i]));
            }
        }
    }

    /// A pinned value that a fixed operand or `pins` wants in another register than the
    /// one it was placed in: it may not move, so the constraint cannot be met.
    fn pinned_elsewhere(&self, ops: Operands, pins: &[(Value, Location)]) -> Option<String> {
        let fixed = ops.operands.iter().filter_map(Operand::as_use);
        let wanted = fixed.filter_map(|u| Some((u.value, u.fixed?)));
        let (v, want, at) = wanted.chain(pins.iter().copied()).find_map(|(v, want)| {
            let at = self.loc[v.index()]?;
            (self.pinned[v.index()] && at != want).then_some((v, want, at))
        })?;
        let show = |l| crate::print::location(self.target, l);
        Some(format!(
            "`%{}` is pinned in {} (it may not move while it lives), but this instruction needs it in {}",
            self.f.value(v).name,
            show(at),
            show(want)
        ))
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
    /// unit holding a value or a copy at the instruction: those `busy` lists, and the
    /// units the register file holds in every class, not only in the classes the copy
    /// moves (an AGPR cycle on gfx942 goes through a VGPR, which may hold a live value).
    fn emit(&self, moves: &[Move], busy: &[Location], pos: Pos, out: &mut Vec<Inst>) {
        if moves.is_empty() {
            return;
        }
        let taken = |c: ClassId, u: u16| {
            u >= self.temps[c.index()]
                || self.regs.occupant(c, u).is_some()
                || busy.iter().any(|&l| {
                    matches!(l, Location::Reg { class, first, len } if class == c && (first..first + len).contains(&u))
                })
        };
        let recomputable = |v: Value| self.recomputable[v.index()];
        for kind in sequentialise(moves, self.target, &taken, &recomputable, TEMP_SLOT) {
            out.push(Inst { kind, pos });
        }
    }
}

impl Assigner<'_> {
    /// Definitions without a `prefer` wish their phi affinity.
    fn wish_affinities(&self, built: &mut Built, ops: Operands) {
        for (item, role) in built.problem.items.iter_mut().zip(&built.roles) {
            let Role::Def(d) = *role else { continue };
            let v = ops.defs[d].value;
            let wish = if self.pinned[v.index()] {
                self.pinned_wish(v)
            } else {
                self.affinity(v)
            };
            if item.prefer.is_none() {
                if let Some(Location::Reg { first, .. }) = wish {
                    item.prefer = Some(first);
                }
            }
        }
    }

    /// Where a pinned definition had best go ([`foresight`](super::foresight)): where a
    /// fixed use of its own reads it, else the first free window no fixed operand claims
    /// while it lives, else its phi affinity.
    fn pinned_wish(&self, v: Value) -> Option<Location> {
        let data = self.f.value(v);
        let unclaimed = |first: u16| !self.foresight.is_claimed(v, first, data.size);
        let own = self.foresight.wished(v).filter(|l| match *l {
            Location::Reg { first, .. } => unclaimed(first),
            _ => false,
        });
        let free = || {
            let align = self.align_of(v);
            let first = self
                .regs
                .find_free_where(data.class, data.size, align, unclaimed)?;
            Some(self.reg_of(v, first))
        };
        own.or_else(free).or_else(|| self.affinity(v))
    }
}

/// What one class's problem is built from: the instruction, the values it reads for the
/// last time, and the values that must end in a given register.
#[derive(Clone, Copy)]
struct Problem<'o> {
    ops: Operands<'o>,
    /// The operands of the class solved.
    of: &'o OfClass,
    killed: &'o [Value],
    pins: &'o [(Value, Location)],
}

/// The operands of a class the instruction has none of (a class only `pins` names).
static NO_OPERANDS: OfClass = OfClass::EMPTY;

/// Residents in unit order, each once.
fn sort_by_unit(residents: &mut Vec<(Value, Option<u16>)>) {
    residents.sort_unstable_by_key(|&(v, first)| (first, v));
    residents.dedup();
}

/// Whether the only constraints the instruction puts on the problem's class are on its
/// definitions (fixed to a register of the class, early clobbers, tied to an operand): no
/// fixed operand.
fn only_defs_constrained(problem: Problem, class: ClassId) -> bool {
    let fixed_in_class = |l: Location| matches!(l, Location::Reg { class: c, .. } if c == class);
    problem.of.uses().iter().all(|(_, u)| u.fixed.is_none())
        && problem.of.defs().iter().all(|&d| {
            let def = &problem.ops.defs[d];
            def.fixed.is_none_or(fixed_in_class)
        })
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
    if pins.is_empty() {
        return;
    }
    for (item, role) in built.problem.items.iter_mut().zip(&built.roles) {
        let Role::Value(v) = *role else { continue };
        if let Some(&(_, Location::Reg { first, .. })) = pins.iter().find(|&&(w, _)| w == v) {
            item.pinned = Some(first);
        }
    }
}
