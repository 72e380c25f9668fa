//! SSA values and operations: every use picks a value whose definition dominates it.
//!
//! Uses draw from the builder's available stack (values defined in dominating blocks or
//! earlier in the block, `gen::cfg` keeps it scoped); phis get one argument per
//! predecessor, each from the values available at that predecessor's end. Loop-header
//! phis are made with their preheader argument first and take their back-edge argument
//! once the latch is known; twin header phis swapped on the back edge make a parallel-copy
//! cycle.
//!
//! Constraints are generated so that allocation stays feasible unless
//! `GenConfig::conflicting_fixed` asks otherwise: per instruction and class, the distinct
//! values used plus the defs fit in half the class (tuples padded to a power of two, so
//! alignment cannot fragment them out); fixed registers are aligned, in range and pairwise
//! disjoint among uses and among defs (an early-clobber def also avoids fixed uses); a
//! tied def is not fixed, ties a distinct unfixed operand of its class and size, and is
//! not early-clobber.

use arbitrary::Result;

use super::{overlaps, FnBuilder};
use crate::program::*;
use crate::target::ClassId;

/// Opcodes and what they do to memory and control.
const OPCODES: &[(&str, Effect)] = &[
    ("add", Effect::None),
    ("mul", Effect::None),
    ("mad", Effect::None),
    ("cmp.lt", Effect::None),
    ("split", Effect::None),
    ("mma.sync", Effect::None),
    ("load", Effect::ReadsMemory),
    ("store", Effect::WritesMemory),
    ("fence", Effect::Barrier),
    ("setprio", Effect::Control),
    ("add.cc", Effect::Carry),
];

/// An operation being assembled, with its register budget per class.
struct Draft {
    op: Op,
    /// Units left per class (uses of distinct values and defs both take from it).
    room: Vec<u32>,
    used_values: Vec<Value>,
}

fn padded(size: u16) -> u32 {
    u32::from(size.next_power_of_two())
}

impl FnBuilder<'_, '_> {
    /// Values the function starts from (`arg N`, sometimes fixed).
    pub(super) fn entry_values(&mut self, b: Block) -> Result<()> {
        for i in 0..self.u.int_in_range(1..=3)? {
            let mut draft = self.draft("arg", Effect::None);
            draft.op.operands.push(Operand::imm(i));
            self.add_def(&mut draft)?;
            if draft.op.defs.is_empty() {
                let v = self.new_value(ClassId(0), 1);
                draft.op.defs.push(Def::new(v, Pos::default()));
            }
            self.emit(b, draft.op);
        }
        Ok(())
    }

    /// Random operations and remat constants appended to `b`.
    pub(super) fn fill(&mut self, b: Block) -> Result<()> {
        for _ in 0..self.u.int_in_range(0..=self.cfg.max_insts_per_block)? {
            let op = if self.u.ratio(1, 6)? {
                self.remat_const()?
            } else {
                self.random_op()?
            };
            self.emit(b, op);
        }
        Ok(())
    }

    fn emit(&mut self, b: Block, op: Op) {
        self.avail.extend(op.defs.iter().map(|d| d.value));
        let inst = Inst {
            kind: InstKind::Op(op),
            pos: Pos::default(),
        };
        self.f.blocks[b.index()].insts.push(inst);
    }

    fn draft(&self, opcode: &str, effect: Effect) -> Draft {
        let room = self
            .target
            .classes
            .iter()
            .map(|c| (u32::from(c.units) / 2).max(1))
            .collect();
        Draft {
            op: Op {
                opcode: opcode.into(),
                defs: Defs::new(),
                operands: Operands::new(),
                effect,
                regs: RegAccesses::default(),
                remat: false,
            },
            room,
            used_values: Vec::new(),
        }
    }

    /// `const N remat`: one def, no value operands.
    fn remat_const(&mut self) -> Result<Op> {
        let mut draft = self.draft("const", Effect::None);
        draft.op.remat = true;
        draft.op.operands.push(Operand::imm(self.immediate()?));
        self.add_def(&mut draft)?;
        Ok(draft.op)
    }

    fn immediate(&mut self) -> Result<i64> {
        if self.u.ratio(1, 8)? {
            self.u
                .int_in_range(i64::from(i32::MIN)..=i64::from(u32::MAX))
        } else {
            self.u.int_in_range(-64..=64)
        }
    }

    fn random_op(&mut self) -> Result<Op> {
        let &(opcode, effect) = self.u.choose(OPCODES)?;
        let mut draft = self.draft(opcode, effect);
        for _ in 0..self.u.int_in_range(0..=4)? {
            self.add_operand(&mut draft)?;
        }
        for _ in 0..self.u.int_in_range(0..=2)? {
            self.add_def(&mut draft)?;
        }
        self.fix_uses(&mut draft)?;
        if self.cfg.conflicting_fixed && self.u.ratio(1, 4)? {
            self.conflicting_pair(&mut draft)?;
        }
        Ok(draft.op)
    }

    /// A use of an available value when it fits the budget, else an immediate.
    fn add_operand(&mut self, draft: &mut Draft) -> Result<()> {
        if !self.avail.is_empty() && self.u.ratio(7, 8)? {
            let v = self.pick_recent(&self.avail.clone())?;
            if self.take_use(draft, v) {
                draft.op.operands.push(Operand::Value(plain_use(v)));
                return Ok(());
            }
        }
        draft.op.operands.push(Operand::imm(self.immediate()?));
        Ok(())
    }

    /// Charges a use of `v` to the budget (once per distinct value); false if it does not fit.
    fn take_use(&self, draft: &mut Draft, v: Value) -> bool {
        if draft.used_values.contains(&v) {
            return true;
        }
        let data = self.f.value(v);
        let need = padded(data.size);
        let room = &mut draft.room[data.class.index()];
        if *room < need {
            return false;
        }
        *room -= need;
        draft.used_values.push(v);
        true
    }

    /// A def: tied to an operand, or of a random type with maybe early-clobber, prefer
    /// and a fixed register.
    fn add_def(&mut self, draft: &mut Draft) -> Result<()> {
        if self.u.ratio(1, 6)? && self.add_tied_def(draft)? {
            return Ok(());
        }
        let Some((class, size)) = self.random_type(&draft.room)? else {
            return Ok(());
        };
        draft.room[class.index()] -= padded(size);
        let mut def = Def::new(self.new_value(class, size), Pos::default());
        def.early_clobber = self.u.ratio(1, 8)?;
        if self.u.ratio(1, 8)? {
            def.prefer = self.operand_of_type(draft, class, size)?;
        }
        if self.percent(self.cfg.fixed)? {
            def.fixed = self.fixed_def_loc(draft, &def, class, size)?;
        }
        draft.op.defs.push(def);
        Ok(())
    }

    fn add_tied_def(&mut self, draft: &mut Draft) -> Result<bool> {
        let tied: Vec<u16> = draft.op.defs.iter().filter_map(|d| d.tied).collect();
        let free: Vec<u16> = (0..draft.op.operands.len() as u16)
            .filter(|&i| !tied.contains(&i))
            .filter(|&i| matches!(draft.op.operands[usize::from(i)], Operand::Value(_)))
            .collect();
        if free.is_empty() {
            return Ok(false);
        }
        let index = *self.u.choose(&free)?;
        let Operand::Value(u) = draft.op.operands[usize::from(index)] else {
            return Ok(false);
        };
        let (class, size) = self.type_of(u.value);
        if draft.room[class.index()] < padded(size) {
            return Ok(false);
        }
        draft.room[class.index()] -= padded(size);
        let mut def = Def::new(self.new_value(class, size), Pos::default());
        def.tied = Some(index);
        draft.op.defs.push(def);
        Ok(true)
    }

    pub(super) fn type_of(&self, v: Value) -> (ClassId, u16) {
        let data = self.f.value(v);
        (data.class, data.size)
    }

    /// The index of a value operand of the given type, if any.
    fn operand_of_type(&mut self, draft: &Draft, class: ClassId, size: u16) -> Result<Option<u16>> {
        let matching: Vec<u16> = (0..draft.op.operands.len() as u16)
            .filter(|&i| match draft.op.operands[usize::from(i)] {
                Operand::Value(u) => self.type_of(u.value) == (class, size),
                Operand::Imm(_) => false,
            })
            .collect();
        if matching.is_empty() {
            return Ok(None);
        }
        Ok(Some(*self.u.choose(&matching)?))
    }

    /// A class and size that fit `room`: a size of 1 half the time, else any allowed.
    fn random_type(&mut self, room: &[u32]) -> Result<Option<(ClassId, u16)>> {
        let class = ClassId(self.u.choose_index(self.target.classes.len())? as u8);
        let sizes: Vec<u16> = self
            .target
            .class(class)
            .sizes
            .iter()
            .copied()
            .filter(|&s| (self.cfg.tuples || s == 1) && padded(s) <= room[class.index()])
            .collect();
        if sizes.is_empty() {
            return Ok(None);
        }
        let size = if sizes[0] == 1 && self.u.ratio(1, 2)? {
            1
        } else {
            *self.u.choose(&sizes)?
        };
        Ok(Some((class, size)))
    }

    fn fixed_def_loc(
        &mut self,
        draft: &Draft,
        def: &Def,
        class: ClassId,
        size: u16,
    ) -> Result<Option<Location>> {
        let mut taken: Vec<Location> = draft.op.defs.iter().filter_map(|d| d.fixed).collect();
        if def.early_clobber {
            taken.extend(draft.op.uses().filter_map(|u| u.fixed));
        }
        self.fixed_loc(class, size, &taken)
    }

    /// Fixes some value operands (not tied ones) to disjoint registers; an early-clobber
    /// def's fixed register stays clear of them.
    fn fix_uses(&mut self, draft: &mut Draft) -> Result<()> {
        let tied: Vec<u16> = draft.op.defs.iter().filter_map(|d| d.tied).collect();
        let mut taken: Vec<Location> = draft
            .op
            .defs
            .iter()
            .filter(|d| d.early_clobber)
            .filter_map(|d| d.fixed)
            .collect();
        for i in 0..draft.op.operands.len() {
            let Operand::Value(u) = draft.op.operands[i] else {
                continue;
            };
            if tied.contains(&(i as u16)) || !self.percent(self.cfg.fixed)? {
                continue;
            }
            let (class, size) = self.type_of(u.value);
            if let Some(loc) = self.fixed_loc(class, size, &taken)? {
                taken.push(loc);
                if let Operand::Value(u) = &mut draft.op.operands[i] {
                    u.fixed = Some(loc);
                }
            }
        }
        Ok(())
    }

    /// An aligned register range of the class that overlaps none of `taken` (two tries).
    fn fixed_loc(
        &mut self,
        class: ClassId,
        size: u16,
        taken: &[Location],
    ) -> Result<Option<Location>> {
        let rc = self.target.class(class);
        let (units, align) = (rc.units, rc.align.alignment(size));
        if size > units {
            return Ok(None);
        }
        let slots = (units - size) / align;
        for _ in 0..2 {
            let first = self.u.int_in_range(0..=slots)? * align;
            let loc = Location::Reg {
                class,
                first,
                len: size,
            };
            if !taken.iter().any(|&t| overlaps(t, loc)) {
                return Ok(Some(loc));
            }
        }
        Ok(None)
    }

    /// Two distinct values of one type fixed to the same register, as uses or as defs:
    /// an infeasible instruction (only under `conflicting_fixed`).
    fn conflicting_pair(&mut self, draft: &mut Draft) -> Result<()> {
        let first = self.pick_recent(&self.avail.clone())?;
        let (class, size) = self.type_of(first);
        let Some(loc) = self.fixed_loc(class, size, &[])? else {
            return Ok(());
        };
        if self.u.ratio(1, 2)? {
            for _ in 0..2 {
                let mut def = Def::new(self.new_value(class, size), Pos::default());
                def.fixed = Some(loc);
                draft.op.defs.push(def);
            }
            return Ok(());
        }
        let others: Vec<Value> = (self.avail.iter().copied())
            .filter(|&v| v != first && self.type_of(v) == (class, size))
            .collect();
        if let Some(&second) = others.first() {
            for v in [first, second] {
                let mut u = plain_use(v);
                u.fixed = Some(loc);
                draft.op.operands.push(Operand::Value(u));
            }
        }
        Ok(())
    }

    /// A value from `values`, two times in three among the six newest.
    pub(super) fn pick_recent(&mut self, values: &[Value]) -> Result<Value> {
        let recent = values.len().min(6);
        if recent > 0 && self.u.ratio(2, 3)? {
            let back = self.u.int_in_range(1..=recent)?;
            return Ok(values[values.len() - back]);
        }
        Ok(*self.u.choose(values)?)
    }

    /// A branch condition: any available value, of any class.
    pub(super) fn cond_use(&mut self) -> Result<Use> {
        Ok(plain_use(self.pick_recent(&self.avail.clone())?))
    }

    /// `ret` with up to three values, sometimes fixed to disjoint registers.
    pub(super) fn ret(&mut self, b: Block) -> Result<()> {
        let mut draft = self.draft("ret", Effect::None);
        let mut uses = Vec::new();
        let mut taken = Vec::new();
        for _ in 0..self.u.int_in_range(0..=3)? {
            let v = self.pick_recent(&self.avail.clone())?;
            if !self.take_use(&mut draft, v) {
                continue;
            }
            let mut u = plain_use(v);
            if self.percent(self.cfg.fixed.saturating_mul(3))? {
                let (class, size) = self.type_of(v);
                u.fixed = self.fixed_loc(class, size, &taken)?;
                taken.extend(u.fixed);
            }
            uses.push(u);
        }
        self.f.blocks[b.index()].term = Terminator::Ret {
            uses,
            pos: Pos::default(),
        };
        Ok(())
    }
}

/// Most value operands one consumer of a pressure region takes.
const PRESSURE_CHUNK: usize = 16;

impl FnBuilder<'_, '_> {
    /// The first half of a high-pressure region: many values of one type defined in `b`.
    pub(super) fn pressure_defs(&mut self, b: Block) -> Result<Vec<Value>> {
        let class = ClassId(self.u.choose_index(self.target.classes.len())? as u8);
        let size =
            if self.cfg.tuples && self.target.class(class).allows_size(2) && self.u.ratio(1, 4)? {
                2
            } else {
                1
            };
        let most = self.cfg.max_values_live.max(1);
        let count = self.u.int_in_range(most.div_ceil(2)..=most)?;
        let mut group = Vec::with_capacity(count);
        for _ in 0..count {
            let mut draft = self.draft("mul", Effect::None);
            self.add_operand(&mut draft)?;
            let v = self.new_value(class, size);
            draft.op.defs.push(Def::new(v, Pos::default()));
            group.push(v);
            self.emit(b, draft.op);
        }
        Ok(group)
    }

    /// The second half: every value of `group` used in `b`, in chunks that fit the budget.
    pub(super) fn pressure_uses(&mut self, b: Block, group: &[Value]) -> Result<()> {
        let Some(&first) = group.first() else {
            return Ok(());
        };
        let (class, size) = self.type_of(first);
        let room = (u32::from(self.target.class(class).units) / 2).max(1);
        let chunk = ((room / padded(size)) as usize).clamp(1, PRESSURE_CHUNK);
        for values in group.chunks(chunk) {
            let mut draft = self.draft("add", Effect::None);
            for &v in values {
                draft.op.operands.push(Operand::Value(plain_use(v)));
            }
            if self.u.ratio(1, 2)? {
                let v = self.new_value(class, size);
                draft.op.defs.push(Def::new(v, Pos::default()));
            }
            self.emit(b, draft.op);
        }
        Ok(())
    }
}

fn plain_use(value: Value) -> Use {
    Use {
        value,
        fixed: None,
        loc: None,
        pos: Pos::default(),
    }
}
