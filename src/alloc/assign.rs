//! SSA register assignment in dominance order, with live-range splitting by parallel copies.
//!
//! Hack & Goos, "Register Allocation for Programs in SSA Form" (CC 2006): with SSA, a
//! greedy assignment in an order where definitions come before uses needs no more
//! registers than MaxLive; Mesa ACO's `register_allocation` adds constraints by moving
//! values out of the way with a parallel copy before the instruction.
//!
//! Blocks are visited in reverse post-order of the *linear* CFG (a dominance order in which
//! each then-side precedes its else-side). A live-in value takes the location it had at
//! the end of the first visited predecessor — logical predecessors for per-lane values,
//! linear ones for uniform values; mismatches on other edges become edge copies
//! (`out_of_ssa`). Phis get a register at block entry, preferring one where an argument
//! already sits. At each instruction:
//!
//! 1. fixed uses are moved into their registers, displacing what sits there;
//! 2. a tied use that stays live is duplicated into another register, so the def can
//!    overwrite the original;
//! 3. early-clobber defs are placed while every use is still held;
//! 4. killed uses free their registers; late defs are placed — tied into their use's
//!    register, fixed into theirs (displacing), else the `prefer`red operand's register,
//!    else the policy's first free window, else the window displacing the fewest units.
//!
//! 5. when that fails because the file is fragmented (a tuple finds no window even with
//!    its occupants moved, as ACO's sliding window can fail), the instruction is retried
//!    after compacting its classes: values repacked by decreasing width around the fixed
//!    registers and values that may not move, with windows kept for its defs.
//!
//! All moves an instruction needs form one parallel copy placed just before it; a move's
//! destination never overlaps a unit the instruction reads. Uniform values live into a
//! block of a divergent then-region are never moved there: the then-side falls through
//! into the else-side on the linear CFG, so such a move would need copies on an edge that
//! exists only in the linear CFG.

use super::parallel_copy::sequentialise;
use super::regfile::{Packing, Policy, RegFile};
use super::stats::overlaps;
use super::{AllocError, TEMP_SLOT};
use crate::analysis::Analysis;
use crate::program::*;
use crate::target::{ClassId, Target};

/// Value locations at block boundaries, sorted by value.
pub type BoundaryState = Vec<(Value, Location)>;

/// The result of assignment: the function with locations and per-instruction copies
/// (still parallel), and where values are at every block boundary.
#[derive(Debug)]
pub struct Assigned {
    pub func: Function,
    pub entry: Vec<BoundaryState>,
    pub exit: Vec<BoundaryState>,
    /// Blocks in the order they were visited.
    pub order: Vec<Block>,
}

/// `restore_before_divergent`: uniform values that moved inside a block ending in a
/// divergent branch go back to their entry registers before the branch, where they only
/// trade places among themselves (the fallback when `out_of_ssa` finds no safe place for
/// their copies on the edges out of the branch).
pub fn assign(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
    policy: Policy,
    restore_before_divergent: bool,
) -> Result<Assigned, AllocError> {
    let spread: Vec<u16> = target
        .class_ids()
        .map(|c| a.pressure.max_live(c).min(u32::from(u16::MAX)) as u16)
        .collect();
    let order = visit_order(a);
    let mut s = Assigner {
        f,
        target,
        a,
        regs: RegFile::new(target, budget, &spread, policy),
        loc: vec![None; f.values.len()],
        placed: Vec::new(),
        visited: vec![false; f.blocks.len()],
        entry: vec![Vec::new(); f.blocks.len()],
        exit: vec![Vec::new(); f.blocks.len()],
        fixed_in_then: Vec::new(),
        in_then_region: a.divergence.in_then_region.clone(),
        func: f.clone(),
        moves: Vec::new(),
        duplicates: Vec::new(),
        block: Block(0),
        restore_before_divergent,
    };
    s.fixed_in_then = fixed_units_in_then_regions(f, target, &s.in_then_region);
    for &b in &order {
        s.block(b)?;
    }
    Ok(Assigned {
        func: s.func,
        entry: s.entry,
        exit: s.exit,
        order,
    })
}

/// Reverse post-order of the linear CFG, then blocks it does not reach.
fn visit_order(a: &Analysis) -> Vec<Block> {
    let mut order = a.divergence.linear.rpo().to_vec();
    let mut seen = vec![false; a.cfg.len()];
    for b in &order {
        seen[b.index()] = true;
    }
    order.extend(
        (0..a.cfg.len() as u32)
            .map(Block)
            .filter(|b| !seen[b.index()]),
    );
    order
}

/// Units of uniform classes that operands inside then-regions are fixed to, sorted.
fn fixed_units_in_then_regions(
    f: &Function,
    target: &Target,
    inside: &[bool],
) -> Vec<(ClassId, u16)> {
    let mut units = Vec::new();
    for (block, _) in f.blocks.iter().zip(inside).filter(|(_, &i)| i) {
        let ops = block.insts.iter().filter_map(Inst::op);
        let fixed = ops
            .flat_map(|op| {
                op.defs
                    .iter()
                    .filter_map(|d| d.fixed)
                    .chain(op.uses().filter_map(|u| u.fixed))
            })
            .chain(block.term.uses().iter().filter_map(|u| u.fixed));
        for loc in fixed {
            if let Location::Reg { class, first, len } = loc {
                if target.class(class).uniform {
                    units.extend((first..first + len).map(|u| (class, u)));
                }
            }
        }
    }
    units.sort();
    units.dedup();
    units
}

/// One pending move of the parallel copy before the current instruction.
#[derive(Clone, Copy, Debug)]
struct Pending {
    value: Value,
    from: Location,
    to: Location,
}

struct Assigner<'a> {
    f: &'a Function,
    target: &'a Target,
    a: &'a Analysis,
    regs: RegFile,
    loc: Vec<Option<Location>>,
    /// Values given a location in the current block, to clear at its end.
    placed: Vec<Value>,
    visited: Vec<bool>,
    entry: Vec<BoundaryState>,
    exit: Vec<BoundaryState>,
    in_then_region: Vec<bool>,
    /// Units of uniform classes fixed by an operand inside a then-region.
    fixed_in_then: Vec<(ClassId, u16)>,
    func: Function,
    moves: Vec<Pending>,
    /// Copies of tied operands that stay live, made before the current instruction.
    duplicates: Vec<Move>,
    block: Block,
    restore_before_divergent: bool,
}

/// What the current instruction reads and defines, for the constraint phases.
struct InstView {
    uses: Vec<Use>,
    /// Per use, the register it reads when that differs from the value's location
    /// (a tied use duplicated elsewhere).
    read_at: Vec<Option<Location>>,
    killed: Vec<Value>,
    def_locs: Vec<Option<Location>>,
    /// Copies made for fixed uses of values that stay in place; freed after the instruction.
    copies: Vec<(Value, Location)>,
    pos: Pos,
}

impl Assigner<'_> {
    fn reg_of(&self, v: Value, first: u16) -> Location {
        let data = self.f.value(v);
        Location::Reg {
            class: data.class,
            first,
            len: data.size,
        }
    }

    fn align_of(&self, v: Value) -> u16 {
        let data = self.f.value(v);
        self.target.class(data.class).align.alignment(data.size)
    }

    fn set_loc(&mut self, v: Value, l: Location) {
        if self.loc[v.index()].is_none() {
            self.placed.push(v);
        }
        self.loc[v.index()] = Some(l);
        self.regs.occupy(l, v);
    }

    fn error(&self, pos: Pos, message: String) -> AllocError {
        AllocError::Constraint {
            function: self.f.name.clone(),
            block: self.f.block(self.block).name.clone(),
            pos,
            message,
        }
    }

    fn name(&self, v: Value) -> String {
        format!("%{}", self.f.value(v).name)
    }

    fn block(&mut self, b: Block) -> Result<(), AllocError> {
        self.block = b;
        self.regs.clear();
        for &v in self.a.liveness.live_in(b) {
            let l = match self.inherited(b, v) {
                Some(l) => l,
                None => self
                    .free_reg(v, &|_, _| true)
                    .ok_or_else(|| self.pressure_error(v))?,
            };
            self.set_loc(v, l);
        }
        self.phis(b)?;
        let mut entry: BoundaryState = self
            .placed
            .iter()
            .filter_map(|&v| Some((v, self.loc[v.index()]?)))
            .collect();
        entry.sort_by_key(|&(v, _)| v);
        self.entry[b.index()] = entry;
        self.free_dead_phis(b);
        let insts = std::mem::take(&mut self.func.blocks[b.index()].insts);
        let mut out = Vec::with_capacity(insts.len());
        for (i, inst) in insts.into_iter().enumerate() {
            match inst.kind {
                InstKind::Op(op) => self.op(b, i, op, inst.pos, &mut out)?,
                _ => return Err(self.error(inst.pos, "the input is already allocated".into())),
            }
        }
        self.func.blocks[b.index()].insts = out;
        self.terminator(b)?;
        let exit = self
            .a
            .liveness
            .live_out(b)
            .iter()
            .filter_map(|&v| Some((v, self.loc[v.index()]?)))
            .collect();
        self.exit[b.index()] = exit;
        self.visited[b.index()] = true;
        for v in std::mem::take(&mut self.placed) {
            self.loc[v.index()] = None;
        }
        Ok(())
    }

    /// The location `v` had at the end of the first visited predecessor (logical for
    /// per-lane values, linear for uniform ones). Uniform values prefer a predecessor that
    /// ends in a divergent branch: copies on that edge could only go on a block splitting
    /// it, and such a block becomes a new arm of the branch that the linear CFG runs after
    /// the other side, where the copies would clobber uniform values.
    fn inherited(&self, b: Block, v: Value) -> Option<Location> {
        let uniform = self.target.class(self.f.value(v).class).uniform;
        let graph = if uniform {
            &self.a.divergence.linear
        } else {
            &self.a.cfg
        };
        let mut preds: Vec<Block> = graph
            .preds(b)
            .iter()
            .copied()
            .filter(|p| self.visited[p.index()])
            .collect();
        if uniform {
            preds.sort_by_key(|&p| !self.ends_divergent(p));
        }
        preds.into_iter().find_map(|p| {
            let exit = &self.exit[p.index()];
            exit.binary_search_by_key(&v, |&(w, _)| w)
                .ok()
                .map(|i| exit[i].1)
        })
    }

    fn ends_divergent(&self, b: Block) -> bool {
        matches!(
            self.f.block(b).term,
            Terminator::Branch {
                kind: BranchKind::Divergent,
                ..
            }
        )
    }

    /// A free aligned window for `v` among `allowed` units. Uniform values first try to
    /// stay off the units that instructions inside divergent then-regions need fixed:
    /// there a uniform value cannot be moved out of the way.
    fn free_reg(&mut self, v: Value, allowed: &dyn Fn(ClassId, u16) -> bool) -> Option<Location> {
        let data = self.f.value(v);
        let (class, size) = (data.class, data.size);
        let align = self.align_of(v);
        let hinted = self.target.class(class).uniform && !self.fixed_in_then.is_empty();
        let fixed = &self.fixed_in_then;
        let first = if hinted {
            let away = |u: u16| allowed(class, u) && !fixed.contains(&(class, u));
            self.regs.find_free(class, size, align, &away)
        } else {
            None
        };
        let first = match first {
            Some(first) => first,
            None => self
                .regs
                .find_free(class, size, align, &|u| allowed(class, u))?,
        };
        Some(Location::Reg {
            class,
            first,
            len: size,
        })
    }

    fn pressure_error(&self, v: Value) -> AllocError {
        let data = self.f.value(v);
        let class = &self.target.class(data.class).name;
        self.error(
            data.pos,
            format!(
                "no aligned `{class}` window of {} units is free for {}",
                data.size,
                self.name(v)
            ),
        )
    }

    fn phis(&mut self, b: Block) -> Result<(), AllocError> {
        for k in 0..self.f.block(b).phis.len() {
            let phi = &self.f.block(b).phis[k];
            let v = phi.def.value;
            let wanted = phi
                .args
                .iter()
                .filter(|a| self.visited[a.block.index()])
                .find_map(|a| {
                    let exit = &self.exit[a.block.index()];
                    exit.binary_search_by_key(&a.value, |&(w, _)| w)
                        .ok()
                        .map(|i| exit[i].1)
                });
            let l = match wanted {
                Some(Location::Reg { class, first, len })
                    if self.regs.is_free(class, first, len, &|_| true) =>
                {
                    Location::Reg { class, first, len }
                }
                _ => self
                    .free_reg(v, &|_, _| true)
                    .ok_or_else(|| self.pressure_error(v))?,
            };
            self.set_loc(v, l);
            self.func.blocks[b.index()].phis[k].def.loc = Some(l);
        }
        Ok(())
    }

    fn free_dead_phis(&mut self, b: Block) {
        for phi in &self.f.block(b).phis {
            let v = phi.def.value;
            if self.a.liveness.is_dead(v) {
                if let Some(l) = self.loc[v.index()] {
                    self.regs.release(l, v);
                }
            }
        }
    }

    /// Whether `v` may not be moved in the current block.
    fn pinned_uniform(&self, v: Value) -> bool {
        self.in_then_region[self.block.index()]
            && self.target.class(self.f.value(v).class).uniform
            && self.a.liveness.def_block(v) != self.block
    }

    /// Where `v` is before the pending parallel copy runs: a copy made in the same
    /// parallel copy reads that location, not the one `v` is moving to.
    fn before_moves(&self, v: Value) -> Option<Location> {
        match self.moves.iter().find(|m| m.value == v) {
            Some(m) => Some(m.from),
            None => self.loc[v.index()],
        }
    }

    /// Records that `v` moves to `to` in the parallel copy before the instruction.
    fn relocate(&mut self, v: Value, to: Location) {
        let Some(from) = self.loc[v.index()] else {
            return;
        };
        self.regs.release(from, v);
        match self.moves.iter().position(|m| m.value == v) {
            Some(i) if self.moves[i].from == to => {
                self.moves.remove(i);
            }
            Some(i) => self.moves[i].to = to,
            None => self.moves.push(Pending { value: v, from, to }),
        }
        self.set_loc(v, to);
    }

    /// Units a move's destination may not take: those read by the instruction and those
    /// of defs already placed.
    fn blocked(&self, view: &InstView) -> Vec<(ClassId, u16)> {
        let mut units = Vec::new();
        let mut add = |l: Location| {
            if let Location::Reg { class, first, len } = l {
                units.extend((first..first + len).map(|u| (class, u)));
            }
        };
        for (u, read) in view.uses.iter().zip(&view.read_at) {
            if let Some(l) = read.or(self.loc[u.value.index()]) {
                add(l);
            }
        }
        view.def_locs.iter().flatten().for_each(|&l| add(l));
        units
    }

    /// Makes `window` free by moving its occupants elsewhere (not into blocked units or
    /// the window). Fails if an occupant is pinned.
    /// For a `late` def the window may end up holding operands that die at the instruction
    /// (see `exchange_with_killed`).
    fn clear_window(
        &mut self,
        window: Location,
        view: &InstView,
        late: bool,
        pinned: &dyn Fn(Value) -> bool,
    ) -> Result<(), AllocError> {
        let Location::Reg { class, first, len } = window else {
            return Ok(());
        };
        let mut victims: Vec<Value> = Vec::new();
        for u in first..first + len {
            if let Some(v) = self.regs.occupant(class, u) {
                if !victims.contains(&v) {
                    victims.push(v);
                }
            }
        }
        let mut blocked = self.blocked(view);
        blocked.extend((first..first + len).map(|u| (class, u)));
        let copy_only = |v: Value| !self.loc[v.index()].is_some_and(|l| overlaps(l, window));
        if let Some(&v) = victims
            .iter()
            .find(|&&v| pinned(v) || self.pinned_uniform(v) || copy_only(v))
        {
            let message = format!(
                "{} occupies {} and cannot be moved here",
                self.name(v),
                crate::print::location(self.target, window)
            );
            return Err(self.error(view.pos, message));
        }
        for v in victims {
            let to = match self.free_reg(v, &|c, u| !blocked.contains(&(c, u))) {
                Some(to) => to,
                None if late => self.exchange_with_killed(v, window, view)?,
                None => return Err(self.no_room(v, view.pos)),
            };
            self.relocate(v, to);
            if let Location::Reg { class, first, len } = to {
                blocked.extend((first..first + len).map(|u| (class, u)));
            }
        }
        Ok(())
    }

    fn no_room(&self, v: Value, pos: Pos) -> AllocError {
        self.error(
            pos,
            format!("no register left to move {} out of the way", self.name(v)),
        )
    }

    /// Every free unit is taken: find a register range outside `window` holding only
    /// operands that die at this instruction, move those operands into the units `v`
    /// leaves in the window (the late def overwrites them after they are read), and return
    /// the range for `v`.
    fn exchange_with_killed(
        &mut self,
        v: Value,
        window: Location,
        view: &InstView,
    ) -> Result<Location, AllocError> {
        let Location::Reg {
            class,
            first: w0,
            len: wlen,
        } = window
        else {
            return Err(self.no_room(v, view.pos));
        };
        let (size, align) = (self.f.value(v).size, self.align_of(v));
        let limit = self.regs.limit(class);
        for start in (0..limit.saturating_sub(size - 1)).step_by(usize::from(align)) {
            let range = start..start + size;
            if range.clone().any(|u| (w0..w0 + wlen).contains(&u)) {
                continue;
            }
            let Some(occupants) = self.killed_occupants(class, &range, view) else {
                continue;
            };
            if let Some(plan) = self.places_in_window(&occupants, v, window, &range, view) {
                for (x, to) in plan {
                    self.relocate(x, to);
                }
                return Ok(Location::Reg {
                    class,
                    first: start,
                    len: size,
                });
            }
        }
        Err(self.no_room(v, view.pos))
    }

    /// The operands in `range`, if every unit there is free or read by an operand that
    /// dies at this instruction (late defs are placed after those are released) and may
    /// move: not one read from a fixed register, nor a copy the instruction reads.
    fn killed_occupants(
        &self,
        class: ClassId,
        range: &std::ops::Range<u16>,
        view: &InstView,
    ) -> Option<Vec<Value>> {
        let reads = self.use_units(view);
        let mut occupants = Vec::new();
        for u in range.clone() {
            if self.regs.occupant(class, u).is_some() {
                return None;
            }
            let reader = view
                .killed
                .iter()
                .copied()
                .find(|&x| covers(self.loc[x.index()], class, u));
            if reader.is_none() && reads.contains(&(class, u)) {
                return None;
            }
            if let Some(x) = reader {
                let fixed_use = view.uses.iter().any(|u| u.value == x && u.fixed.is_some());
                if self.pinned_uniform(x) || fixed_use {
                    return None;
                }
                if !occupants.contains(&x) {
                    occupants.push(x);
                }
            }
        }
        Some(occupants)
    }

    /// Places for `occupants` inside `window`: units free or held by `leaving`, read by no
    /// operand, outside `avoid`. A unit `leaving` holds is read there only when the
    /// instruction reads `leaving` in place (a fixed use of a value the late def
    /// overwrites): its other uses follow it to its new register.
    fn places_in_window(
        &self,
        occupants: &[Value],
        leaving: Value,
        window: Location,
        avoid: &std::ops::Range<u16>,
        view: &InstView,
    ) -> Option<Vec<(Value, Location)>> {
        let Location::Reg {
            class,
            first: w0,
            len: wlen,
        } = window
        else {
            return None;
        };
        let reads = self.units_read_in_place(view, leaving);
        let left_by = |u: u16| covers(self.loc[leaving.index()], class, u);
        let mut taken: Vec<u16> = Vec::new();
        let mut plan = Vec::new();
        for &x in occupants {
            let (size, align) = (self.f.value(x).size, self.align_of(x));
            let usable = |u: u16| {
                let free = self.regs.occupant(class, u).is_none() || left_by(u);
                free && !reads.contains(&(class, u)) && !taken.contains(&u) && !avoid.contains(&u)
            };
            let start = (w0..w0 + wlen)
                .step_by(usize::from(align))
                .find(|&s| s + size <= w0 + wlen && (s..s + size).all(usable))?;
            taken.extend(start..start + size);
            plan.push((
                x,
                Location::Reg {
                    class,
                    first: start,
                    len: size,
                },
            ));
        }
        Some(plan)
    }

    /// Assigns one instruction. When its constraints cannot be met in the fragmented file
    /// (a tuple finds no window even with other values moved out of the way), the file is
    /// compacted first and the constraints are met again (ACO's last resort).
    fn op(
        &mut self,
        b: Block,
        i: usize,
        mut op: Op,
        pos: Pos,
        out: &mut Vec<Inst>,
    ) -> Result<(), AllocError> {
        let placed = self.placed.len();
        self.regs.mark();
        let view = match self.constrain(b, i, &op, pos) {
            Ok(view) => view,
            Err(e) => {
                self.rollback(placed);
                self.compact_for(b, i, &op);
                self.constrain(b, i, &op, pos).map_err(|_| e)?
            }
        };
        self.emit_moves(out, &view);
        let mut k = 0;
        for operand in &mut op.operands {
            if let Operand::Value(u) = operand {
                u.loc = view.read_at[k].or(self.loc[u.value.index()]);
                k += 1;
            }
        }
        for (d, l) in op.defs.iter_mut().zip(&view.def_locs) {
            d.loc = *l;
        }
        for d in &op.defs {
            if self.a.liveness.is_dead(d.value) {
                if let Some(l) = d.loc {
                    self.regs.release(l, d.value);
                }
            }
        }
        for &(v, copy) in &view.copies {
            if self.loc[v.index()] != Some(copy) {
                self.regs.release(copy, v);
            }
        }
        out.push(Inst {
            kind: InstKind::Op(op),
            pos,
        });
        Ok(())
    }

    /// Meets the constraints of `op` (fixed uses, tied copies, early then late defs) and
    /// returns what the instruction reads and defines; the moves wait in `self.moves`.
    fn constrain(&mut self, b: Block, i: usize, op: &Op, pos: Pos) -> Result<InstView, AllocError> {
        let killed: Vec<Value> = self.a.liveness.kills_at(b, i as u32).collect();
        let uses: Vec<Use> = op.uses().copied().collect();
        let mut view = InstView {
            read_at: vec![None; uses.len()],
            copies: Vec::new(),
            uses,
            killed,
            def_locs: vec![None; op.defs.len()],
            pos,
        };
        self.fixed_uses(&mut view, &late_fixed_defs(op))?;
        self.duplicate_tied(op, &mut view)?;
        self.place_defs(op, &mut view, true)?;
        for &v in &view.killed {
            let copies = view.copies.iter().filter(|&&(w, _)| w == v);
            for l in self.loc[v.index()]
                .into_iter()
                .chain(copies.map(|&(_, l)| l))
            {
                self.regs.release(l, v);
            }
        }
        self.place_defs(op, &mut view, false)?;
        Ok(view)
    }

    /// Returns to the state before the current instruction: the register file's changes
    /// undone, pending moves taken back, its defs unplaced (moves and duplicates start
    /// empty at every instruction).
    fn rollback(&mut self, placed: usize) {
        self.regs.undo_to_mark();
        for m in std::mem::take(&mut self.moves) {
            self.loc[m.value.index()] = Some(m.from);
        }
        for v in self.placed.drain(placed..) {
            self.loc[v.index()] = None;
        }
        self.duplicates.clear();
    }

    /// Repacks every class `op` touches ([`RegFile::compaction`]). First with windows
    /// kept free for the defs that may go anywhere, everything packed by width (enough
    /// when the defs fit beside every operand); else values the instruction does not read
    /// at the bottom, then operands that live on, then those it kills, so that the units
    /// late defs may take (killed and free ones) form one range at the top. Values that
    /// may not move in this block stay where they are.
    fn compact_for(&mut self, b: Block, i: usize, op: &Op) {
        let killed: Vec<Value> = self.a.liveness.kills_at(b, i as u32).collect();
        let read: Vec<Value> = op.uses().map(|u| u.value).collect();
        let group = |v: Value| match (read.contains(&v), killed.contains(&v)) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        };
        let mut classes: Vec<ClassId> = op
            .uses()
            .map(|u| self.f.value(u.value).class)
            .chain(op.defs.iter().map(|d| self.f.value(d.value).class))
            .collect();
        classes.sort();
        classes.dedup();
        for class in classes {
            let free_defs: Vec<(u16, u16)> = op
                .defs
                .iter()
                .filter(|d| d.tied.is_none() && d.fixed.is_none())
                .filter(|d| self.f.value(d.value).class == class)
                .map(|d| (self.f.value(d.value).size, self.align_of(d.value)))
                .collect();
            let fixed = self.fixed_ranges(op, class, &killed);
            let pinned = |v| self.pinned_uniform(v);
            let by_width = |v| (0, self.align_of(v));
            let by_group = |v| (group(v), self.align_of(v));
            let packed = |key: &dyn Fn(Value) -> (u8, u16), free: &[(u16, u16)]| {
                let want = Packing {
                    key,
                    pinned: &pinned,
                    free,
                    fixed: &fixed,
                };
                self.regs.compaction(class, &want)
            };
            let plan = packed(&by_width, &free_defs).or_else(|| packed(&by_group, &[]));
            for (v, first) in plan.unwrap_or_default() {
                self.relocate(v, self.reg_of(v, first));
            }
        }
    }

    /// The registers of `class` that operands of `op` are fixed to, with the value a use
    /// brings there: none for defs, for a value that may not move, for a second register
    /// of one value, or for a value that lives on where a late def overwrites it (each of
    /// those reads a copy there, see `fixed_uses`).
    fn fixed_ranges(
        &self,
        op: &Op,
        class: ClassId,
        killed: &[Value],
    ) -> Vec<(u16, u16, Option<Value>)> {
        let late_fixed = late_fixed_defs(op);
        let brought = |v: Value, at: Location| {
            let copied = overwritten_live(v, at, killed, &late_fixed);
            (!copied && !self.pinned_uniform(v)).then_some(v)
        };
        let uses = op
            .uses()
            .filter_map(|u| Some((u.fixed?, brought(u.value, u.fixed?))));
        let defs = op.defs.iter().filter_map(|d| Some((d.fixed?, None)));
        let mut out: Vec<(u16, u16, Option<Value>)> = Vec::new();
        for (loc, value) in uses.chain(defs) {
            let Location::Reg {
                class: c,
                first,
                len,
            } = loc
            else {
                continue;
            };
            let moved_already = value.is_some_and(|v| out.iter().any(|o| o.2 == Some(v)));
            if c == class {
                out.push((first, len, value.filter(|_| !moved_already)));
            }
        }
        out
    }

    /// Sequentialises the pending parallel copy into `out`. Temporaries may use neither a
    /// unit holding a value nor one the instruction reads.
    fn emit_moves(&mut self, out: &mut Vec<Inst>, view: &InstView) {
        let moves: Vec<Move> = std::mem::take(&mut self.moves)
            .into_iter()
            .filter(|m| m.from != m.to)
            .map(|m| Move {
                dst: m.to,
                src: m.from,
                value: m.value,
            })
            .chain(std::mem::take(&mut self.duplicates))
            .collect();
        if moves.is_empty() {
            return;
        }
        let reads = self.use_units(view);
        let busy = |c: ClassId, u: u16| {
            u >= self.regs.limit(c) || self.regs.occupant(c, u).is_some() || reads.contains(&(c, u))
        };
        for kind in sequentialise(&moves, self.target, &busy, TEMP_SLOT) {
            out.push(Inst {
                kind,
                pos: view.pos,
            });
        }
    }

    /// Moves each fixed use into its register. When a late def fixed to the same units
    /// overwrites it and the value lives on, the instruction reads a copy (or the value's
    /// old register, which a move out of the way leaves intact) and the value survives
    /// elsewhere. A value fixed to several registers moves to one (where it already is, if
    /// it is in one) and reaches the others as copies.
    fn fixed_uses(
        &mut self,
        view: &mut InstView,
        late_fixed_defs: &[Location],
    ) -> Result<(), AllocError> {
        let fixed: Vec<(Value, Location)> = view
            .uses
            .iter()
            .filter_map(|u| Some((u.value, u.fixed?)))
            .collect();
        let primary: Vec<(Value, Location)> = fixed
            .iter()
            .map(|&(v, first)| {
                let here = fixed
                    .iter()
                    .find(|&&(w, m)| w == v && self.loc[v.index()] == Some(m));
                let first = fixed
                    .iter()
                    .find(|&&(w, _)| w == v)
                    .map_or(first, |&(_, l)| l);
                (v, here.map_or(first, |&(_, m)| m))
            })
            .collect();
        for &(v, want) in &fixed {
            let extra = !primary.contains(&(v, want));
            if fixed
                .iter()
                .any(|&(w, l)| w == v && l != want && overlaps(l, want))
            {
                return Err(self.error(
                    view.pos,
                    format!("{} is fixed to overlapping registers", self.name(v)),
                ));
            }
            if let Some(&(w, _)) = fixed.iter().find(|&&(w, l)| w != v && overlaps(l, want)) {
                let message = format!(
                    "{} and {} are fixed to overlapping registers",
                    self.name(v),
                    self.name(w)
                );
                return Err(self.error(view.pos, message));
            }
            let overwritten = overwritten_live(v, want, &view.killed, late_fixed_defs);
            if self.loc[v.index()] == Some(want) {
                if overwritten {
                    read_fixed_at(view, v, want);
                }
                continue;
            }
            self.check_in_budget(want, view.pos)?;
            let in_place: Vec<Value> = fixed
                .iter()
                .filter(|&&(w, l)| w != v && self.loc[w.index()] == Some(l))
                .map(|&(w, _)| w)
                .collect();
            self.clear_window(want, view, false, &|w| in_place.contains(&w))?;
            if self.pinned_uniform(v) || overwritten || extra {
                self.copy_for_fixed_use(v, want, view, !overwritten);
            } else {
                self.relocate(v, want);
            }
        }
        Ok(())
    }

    /// A uniform value that may not move in this block reaches its fixed register as a
    /// copy that lives only for this instruction.
    /// `hold`: the copy keeps its units until after the instruction (else a fixed def
    /// takes them).
    fn copy_for_fixed_use(&mut self, v: Value, want: Location, view: &mut InstView, hold: bool) {
        let Some(here) = self.before_moves(v) else {
            return;
        };
        self.duplicates.push(Move {
            dst: want,
            src: here,
            value: v,
        });
        if hold {
            self.regs.occupy(want, v);
            view.copies.push((v, want));
        }
        read_fixed_at(view, v, want);
    }

    fn check_in_budget(&self, l: Location, pos: Pos) -> Result<(), AllocError> {
        if let Location::Reg { class, first, len } = l {
            if u32::from(first) + u32::from(len) > u32::from(self.regs.limit(class)) {
                let message = format!(
                    "fixed register {} is outside the budget of {} `{}` registers",
                    crate::print::location(self.target, l),
                    self.regs.limit(class),
                    self.target.class(class).name
                );
                return Err(self.error(pos, message));
            }
        }
        Ok(())
    }

    /// A tied use whose value lives on — or whose dying register another tied def already
    /// takes — is copied into a free register; the instruction reads and overwrites the
    /// copy, and the value stays where it is.
    fn duplicate_tied(&mut self, op: &Op, view: &mut InstView) -> Result<(), AllocError> {
        let mut taken: Vec<Value> = Vec::new();
        for d in &op.defs {
            let Some(t) = d.tied else { continue };
            let Some(Operand::Value(u)) = op.operands.get(usize::from(t)).copied() else {
                continue;
            };
            if op.defs.iter().filter(|e| e.tied == Some(t)).count() > 1 {
                let message = format!("two definitions are tied to operand {t}");
                return Err(self.error(view.pos, message));
            }
            let Some(here) = self.before_moves(u.value) else {
                continue;
            };
            if view.killed.contains(&u.value) && !taken.contains(&u.value) {
                taken.push(u.value);
                continue;
            }
            let blocked = self.blocked(view);
            let to = self
                .free_reg(u.value, &|c, x| !blocked.contains(&(c, x)))
                .ok_or_else(|| self.no_room(u.value, view.pos))?;
            self.duplicates.push(Move {
                dst: to,
                src: here,
                value: u.value,
            });
            view.read_at[use_index(op, t)] = Some(to);
            self.regs.occupy(to, d.value);
        }
        Ok(())
    }

    /// Places the early-clobber defs (`early == true`) or the others; tied defs first, as
    /// they have no choice (another def must not take their operand's freed register),
    /// then fixed defs (another def must not take a fixed use's register they overwrite).
    fn place_defs(&mut self, op: &Op, view: &mut InstView, early: bool) -> Result<(), AllocError> {
        let mut order: Vec<usize> = (0..op.defs.len())
            .filter(|&k| op.defs[k].early_clobber == early)
            .collect();
        order.sort_by_key(|&k| (op.defs[k].tied.is_none(), op.defs[k].fixed.is_none()));
        for k in order {
            let d = &op.defs[k];
            let l = self.def_location(op, d, view)?;
            view.def_locs[k] = Some(l);
            self.set_loc(d.value, l);
        }
        Ok(())
    }

    fn def_location(
        &mut self,
        op: &Op,
        d: &Def,
        view: &mut InstView,
    ) -> Result<Location, AllocError> {
        if let Some(t) = d.tied {
            let k = use_index(op, t);
            let u = view.uses[k].value;
            return Ok(view.read_at[k]
                .or(self.loc[u.index()])
                .unwrap_or(self.reg_of(d.value, 0)));
        }
        let defs: Vec<Value> = op.defs.iter().map(|e| e.value).collect();
        if let Some(want) = d.fixed {
            self.check_in_budget(want, view.pos)?;
            self.clear_window(want, view, !d.early_clobber, &|w| defs.contains(&w))?;
            return Ok(want);
        }
        let uses_units = self.use_units(view);
        let avoid = |c: ClassId, u: u16| d.early_clobber && uses_units.contains(&(c, u));
        if let Some(Location::Reg { class, first, len }) = d
            .prefer
            .and_then(|p| self.loc[view.uses[use_index(op, p)].value.index()])
        {
            let fits = class == self.f.value(d.value).class && len == self.f.value(d.value).size;
            if fits && self.regs.is_free(class, first, len, &|u| !avoid(class, u)) {
                return Ok(Location::Reg { class, first, len });
            }
        }
        if let Some(l) = self.free_reg(d.value, &|c, u| !avoid(c, u)) {
            return Ok(l);
        }
        self.split_for(d.value, view, &avoid, &defs, !d.early_clobber)
    }

    /// The units the instruction reads, but not those of `moving` where it reads `moving`
    /// from its own location (those reads follow it when it moves).
    fn units_read_in_place(&self, view: &InstView, moving: Value) -> Vec<(ClassId, u16)> {
        let mut units = Vec::new();
        for (u, read) in view.uses.iter().zip(&view.read_at) {
            let at = match read {
                Some(l) => Some(*l),
                None if u.value == moving => None,
                None => self.loc[u.value.index()],
            };
            if let Some(Location::Reg { class, first, len }) = at {
                units.extend((first..first + len).map(|x| (class, x)));
            }
        }
        units
    }

    fn use_units(&self, view: &InstView) -> Vec<(ClassId, u16)> {
        let mut units = Vec::new();
        for (u, read) in view.uses.iter().zip(&view.read_at) {
            if let Some(Location::Reg { class, first, len }) = read.or(self.loc[u.value.index()]) {
                units.extend((first..first + len).map(|x| (class, x)));
            }
        }
        units
    }

    /// No aligned window is free: take the one displacing the fewest units.
    fn split_for(
        &mut self,
        v: Value,
        view: &mut InstView,
        avoid: &dyn Fn(ClassId, u16) -> bool,
        defs: &[Value],
        late: bool,
    ) -> Result<Location, AllocError> {
        let data = self.f.value(v);
        let (class, size) = (data.class, data.size);
        let align = self.align_of(v);
        let uses: Vec<Value> = view.uses.iter().map(|u| u.value).collect();
        let killed = view.killed.clone();
        let pinned = |w: Value| {
            defs.contains(&w)
                || (uses.contains(&w) && !killed.contains(&w))
                || self.pinned_uniform(w)
        };
        let (first, _) = self
            .regs
            .cheapest_window(class, size, align, &|u| !avoid(class, u), &pinned)
            .ok_or_else(|| self.pressure_error(v))?;
        let window = Location::Reg {
            class,
            first,
            len: size,
        };
        self.clear_window(window, view, late, &|w| defs.contains(&w))?;
        Ok(window)
    }

    fn terminator(&mut self, b: Block) -> Result<(), AllocError> {
        let uses: Vec<Use> = self.f.block(b).term.uses().to_vec();
        let pos = self.f.block(b).term.pos();
        let mut view = InstView {
            read_at: vec![None; uses.len()],
            copies: Vec::new(),
            uses,
            killed: Vec::new(),
            def_locs: Vec::new(),
            pos,
        };
        if self.restore_before_divergent && self.ends_divergent(b) {
            self.restore_uniform_entry(b);
        }
        self.fixed_uses(&mut view, &[])?;
        let mut out = std::mem::take(&mut self.func.blocks[b.index()].insts);
        self.emit_moves(&mut out, &view);
        self.func.blocks[b.index()].insts = out;
        let locs: Vec<Option<Location>> = view
            .uses
            .iter()
            .zip(&view.read_at)
            .map(|(u, read)| read.or(self.loc[u.value.index()]))
            .collect();
        for (u, l) in self.func.blocks[b.index()]
            .term
            .uses_mut()
            .iter_mut()
            .zip(locs)
        {
            u.loc = l;
        }
        Ok(())
    }

    /// Moves the uniform values live out of `b` that moved inside it back to where they
    /// entered it, when every register they go back to is free or left by another of
    /// them: then each successor sees them where the block's predecessors left them.
    fn restore_uniform_entry(&mut self, b: Block) {
        let entry = &self.entry[b.index()];
        let back: Vec<(Value, Location)> = self
            .a
            .liveness
            .live_out(b)
            .iter()
            .filter(|&&v| self.target.class(self.f.value(v).class).uniform)
            .filter(|&&v| !self.pinned_uniform(v))
            .filter_map(|&v| {
                let i = entry.binary_search_by_key(&v, |&(w, _)| w).ok()?;
                let at_entry = entry[i].1;
                (self.loc[v.index()] != Some(at_entry)).then_some((v, at_entry))
            })
            .collect();
        let movers: Vec<Value> = back.iter().map(|&(v, _)| v).collect();
        let room = back.iter().all(|&(_, l)| {
            let Location::Reg { class, first, len } = l else {
                return false;
            };
            (first..first + len).all(|u| {
                self.regs
                    .occupant(class, u)
                    .is_none_or(|o| movers.contains(&o))
            })
        });
        if room {
            for (v, l) in back {
                self.relocate(v, l);
            }
        }
    }
}

/// Whether `v`, read from `at`, lives on past the instruction while a late def fixed to
/// overlapping units overwrites `at`: then the instruction reads a copy there.
fn overwritten_live(v: Value, at: Location, killed: &[Value], late_fixed: &[Location]) -> bool {
    !killed.contains(&v) && late_fixed.iter().any(|&d| overlaps(d, at))
}

/// The registers `op`'s late (not early-clobber) defs are fixed to.
fn late_fixed_defs(op: &Op) -> Vec<Location> {
    op.defs
        .iter()
        .filter(|d| !d.early_clobber)
        .filter_map(|d| d.fixed)
        .collect()
}

/// The uses of `v` fixed to `want` read there.
fn read_fixed_at(view: &mut InstView, v: Value, want: Location) {
    for (k, u) in view.uses.iter().enumerate() {
        if u.value == v && u.fixed == Some(want) {
            view.read_at[k] = Some(want);
        }
    }
}

/// Whether `loc` is a register range of `class` containing `unit`.
fn covers(loc: Option<Location>, class: ClassId, unit: u16) -> bool {
    matches!(loc, Some(Location::Reg { class: c, first, len }) if c == class && (first..first + len).contains(&unit))
}

/// The index among value operands of operand `operand`.
fn use_index(op: &Op, operand: u16) -> usize {
    op.operands[..usize::from(operand)]
        .iter()
        .filter(|o| o.as_use().is_some())
        .count()
}
