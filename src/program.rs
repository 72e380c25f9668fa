//! The program model: SSA functions of blocks, with operand constraints and, once
//! allocated, locations and the instructions allocation adds.
//!
//! One model serves both sides of allocation. An *original* program has no locations; an
//! *allocated* program is the same program with a location on every operand, phi and
//! terminator use, plus `parallel_copy`, `swap`, `spill`, `reload` and `remat` instructions
//! (and possibly new blocks that split edges). Both print to and parse from the same text
//! format (`docs/FORMAT.md`), so allocations can be saved and checked later.
//!
//! Data layout: values and blocks are dense indices into per-function vectors; instructions
//! live in their block. Every parsed entity remembers its [`Pos`] for diagnostics.
//!
//! An instruction is held in as few heap blocks as its common shapes allow, because whole-
//! function walks over large programs are bound by memory traffic, not by the work per
//! instruction: an opcode is an interned [`Opcode`] (8 bytes: short texts inline, longer
//! ones shared by every operation with that opcode), a value's name a [`CompactString`] (up to 24 bytes inline,
//! no heap block of its own), and an operation's definitions and operands are
//! [`SmallVec`]s that hold the common counts inline ([`Defs`]: one definition; [`Operands`]:
//! two operands, which covers about 85% of the operations of `corpus/`; more move to the
//! heap as a `Vec` would). What few operations carry, the fixed registers they touch
//! ([`RegAccesses`]), is held out of line in one word, so that it does not widen every
//! instruction, and an immediate operand is two 32-bit halves ([`Imm`]), so that an
//! operand keeps a use's 4-byte alignment (a test pins the sizes).

pub use crate::opcode::Opcode;
use crate::target::{ClassId, Target};
pub use compact_str::CompactString;
pub use smallvec::{smallvec, SmallVec};

/// A position in the source text, 1-based. `Pos::default()` (0:0) marks generated code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

entity!(
    /// An SSA value of a function.
    Value
);
entity!(
    /// A basic block of a function; block 0 is the entry.
    Block
);

/// A whole file: one target and its functions.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub target: Target,
    pub functions: Vec<Function>,
}

/// One function: blocks in text order (block 0 is the entry) and the values they define.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub pos: Pos,
    pub blocks: Vec<BlockData>,
    pub values: Vec<ValueData>,
}

/// What every value carries: its name (without `%`), class and size in units.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    pub name: CompactString,
    pub class: ClassId,
    pub size: u16,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlockData {
    pub name: String,
    pub pos: Pos,
    /// Execution frequency when annotated (`bb1 freq=12:`); analyses default to 10^loop-depth.
    pub freq: Option<f64>,
    pub phis: Vec<Phi>,
    pub insts: Vec<Inst>,
    pub term: Terminator,
}

impl BlockData {
    /// Replaces every value the block mentions (phis, instructions, terminator) by `map`
    /// of it, as [`Function::map_values`] does for every block.
    pub fn map_values(&mut self, map: &impl Fn(Value) -> Value) {
        let map = |v: &mut Value| *v = map(*v);
        for phi in &mut self.phis {
            map(&mut phi.def.value);
            phi.args.iter_mut().for_each(|a| map(&mut a.value));
        }
        for inst in &mut self.insts {
            match &mut inst.kind {
                InstKind::Op(op) => {
                    op.defs.iter_mut().for_each(|d| map(&mut d.value));
                    op.operands.iter_mut().for_each(|o| {
                        if let Operand::Value(u) = o {
                            map(&mut u.value);
                        }
                    });
                }
                InstKind::ParallelCopy(moves) => moves.iter_mut().for_each(|m| map(&mut m.value)),
                InstKind::Spill(m) | InstKind::Reload(m) => map(&mut m.value),
                InstKind::Remat { value, .. } => map(value),
                InstKind::Swap(..) => {}
            }
        }
        self.term
            .uses_mut()
            .iter_mut()
            .for_each(|u| map(&mut u.value));
    }
}

/// `%y:v1 = phi [bb1: %a], [bb2: %b]`: one argument per predecessor.
#[derive(Clone, Debug, PartialEq)]
pub struct Phi {
    pub def: Def,
    pub args: Vec<PhiArg>,
    pub pos: Pos,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhiArg {
    pub block: Block,
    pub value: Value,
    pub pos: Pos,
}

/// A location: a register range, memory spill slots, or lanes of a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// `v4`, `v[4:7]`: units `first..first+len` of a class.
    Reg {
        class: ClassId,
        first: u16,
        len: u16,
    },
    /// `m3`, `m[3:4]`: scratch-memory spill slots, one unit each.
    Slot { first: u32, len: u16 },
    /// `v7.l5`, `v7.l[4:5]`: lanes of register `reg` of a per-lane class, one unit each
    /// (AMD SGPR spills to VGPR lanes).
    Lane {
        class: ClassId,
        reg: u16,
        first: u16,
        len: u16,
    },
}

impl Location {
    pub fn len(self) -> u16 {
        match self {
            Location::Reg { len, .. } | Location::Slot { len, .. } | Location::Lane { len, .. } => {
                len
            }
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn is_reg(self) -> bool {
        matches!(self, Location::Reg { .. })
    }

    /// The register class when this is a register range.
    pub fn reg_class(self) -> Option<ClassId> {
        match self {
            Location::Reg { class, .. } => Some(class),
            _ => None,
        }
    }
}

/// A value operand: a use of `value`, with an optional fixed register and, once
/// allocated, its location.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Use {
    pub value: Value,
    pub fixed: Option<Location>,
    pub loc: Option<Location>,
    pub pos: Pos,
}

/// An operand of an operation: a value or an immediate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    Value(Use),
    Imm(Imm),
}

/// An immediate operand's 64 bits, held as two 32-bit halves so that an [`Operand`] keeps
/// a [`Use`]'s 4-byte alignment: 28 bytes an operand instead of 32 (a test pins the sizes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Imm {
    low: u32,
    high: u32,
}

impl Imm {
    pub fn get(self) -> i64 {
        (u64::from(self.high) << 32 | u64::from(self.low)) as i64
    }
}

impl From<i64> for Imm {
    fn from(n: i64) -> Imm {
        let bits = n as u64;
        Imm {
            low: bits as u32,
            high: (bits >> 32) as u32,
        }
    }
}

impl std::fmt::Debug for Imm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Operand {
    /// The immediate operand `n`.
    pub fn imm(n: i64) -> Operand {
        Operand::Imm(n.into())
    }

    pub fn as_use(&self) -> Option<&Use> {
        match self {
            Operand::Value(u) => Some(u),
            Operand::Imm(_) => None,
        }
    }
}

/// An operation's definitions, one inline.
pub type Defs = SmallVec<[Def; 1]>;

/// An operation's operands, two inline.
pub type Operands = SmallVec<[Operand; 2]>;

/// A definition, with its constraints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Def {
    pub value: Value,
    /// Precoloured: the def must be in exactly this register range.
    pub fixed: Option<Location>,
    /// The def must take the register of operand `tied` (an index into the operands).
    pub tied: Option<u16>,
    /// Soft affinity: prefer the register of operand `prefer` (mma-style "same as").
    pub prefer: Option<u16>,
    /// The def is written before the uses are read: it may not share a unit with any use.
    pub early_clobber: bool,
    /// The value stays where it was defined for its whole life: no copy, swap, spill or
    /// reload reads it, and a phi takes it only in the phi's own location (`wgmma`
    /// accumulators in flight, `docs/FORMAT.md`).
    pub pinned: bool,
    pub loc: Option<Location>,
    pub pos: Pos,
}

impl Def {
    pub fn new(value: Value, pos: Pos) -> Def {
        Def {
            value,
            fixed: None,
            tied: None,
            prefer: None,
            early_clobber: false,
            pinned: false,
            loc: None,
            pos,
        }
    }
}

/// What a scheduler may not reorder across (the rules are `docs/FORMAT.md`'s, "Order").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Only its values order it.
    #[default]
    None,
    /// Moves among reads, never across a write, barrier or control op.
    ReadsMemory,
    WritesMemory,
    /// Barriers and fences.
    Barrier,
    /// Non-terminator control (e.g. `s_setprio`, `wgmma.wait_group`).
    Control,
    /// Reads or writes the carry flag (PTX `add.cc`, `addc`, `mad.lo.cc`): keeps its
    /// order among the carry ops of its block, and only there.
    Carry,
}

/// How an operation touches a fixed register outside the allocatable files (AMD `$scc`,
/// `$vcc`, `$exec`, `$m0`, `$mode`): what LLVM's machine IR lists as implicit operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RegAccessKind {
    /// Reads the register (`implicit(scc)`).
    Read,
    /// Writes a value a later operation reads (`implicit_def(scc)`).
    Write,
    /// Writes a value nothing reads (`clobber(scc)`, LLVM's `implicit-def dead`).
    Clobber,
}

/// One access to a fixed register: its name (without `$`) and the kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegAccess {
    pub reg: String,
    pub kind: RegAccessKind,
}

/// The fixed registers an operation touches, out of line: most operations touch none, and
/// then the list is one null word in the operation, with no heap block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
// The box is the point: one word in every operation instead of a vector's three.
#[allow(clippy::box_collection)]
pub struct RegAccesses(Option<Box<Vec<RegAccess>>>);

impl RegAccesses {
    pub fn push(&mut self, access: RegAccess) {
        self.0.get_or_insert_with(Default::default).push(access);
    }
}

impl std::ops::Deref for RegAccesses {
    type Target = [RegAccess];

    fn deref(&self) -> &[RegAccess] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl std::ops::DerefMut for RegAccesses {
    fn deref_mut(&mut self) -> &mut [RegAccess] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
}

impl From<Vec<RegAccess>> for RegAccesses {
    /// An empty list takes no heap block.
    fn from(accesses: Vec<RegAccess>) -> RegAccesses {
        RegAccesses((!accesses.is_empty()).then(|| Box::new(accesses)))
    }
}

impl FromIterator<RegAccess> for RegAccesses {
    fn from_iter<I: IntoIterator<Item = RegAccess>>(iter: I) -> RegAccesses {
        iter.into_iter().collect::<Vec<_>>().into()
    }
}

impl<'a> IntoIterator for &'a RegAccesses {
    type Item = &'a RegAccess;
    type IntoIter = std::slice::Iter<'a, RegAccess>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// An original operation: `%d:v1 = mad %a, %b, %c tied(2)`.
#[derive(Debug, PartialEq)]
pub struct Op {
    pub opcode: Opcode,
    pub defs: Defs,
    pub operands: Operands,
    pub effect: Effect,
    /// The fixed registers it reads and writes, which order it against the operations
    /// that access the same register (`docs/FORMAT.md`, "Order").
    pub regs: RegAccesses,
    /// The op may be recomputed instead of reloaded; it has no value operands.
    pub remat: bool,
}

impl Clone for Op {
    /// Definitions and operands are `Copy`: each list is copied as one slice, not
    /// cloned element by element (the copy validation makes of every input, for one).
    fn clone(&self) -> Op {
        Op {
            opcode: self.opcode.clone(),
            defs: Defs::from_slice(&self.defs),
            operands: Operands::from_slice(&self.operands),
            effect: self.effect,
            regs: self.regs.clone(),
            remat: self.remat,
        }
    }
}

impl Op {
    pub fn uses(&self) -> impl Iterator<Item = &Use> + '_ {
        self.operands.iter().filter_map(Operand::as_use)
    }
}

/// One move of a parallel copy, spill or reload: `dst <- src %value`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    pub dst: Location,
    pub src: Location,
    /// The value the writer believes it moves; an annotation the verifier does not trust.
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InstKind {
    Op(Op),
    /// Simultaneous moves: all sources are read before any destination is written.
    ParallelCopy(Vec<Move>),
    /// Exchange two register ranges of equal length.
    Swap(Location, Location),
    /// Register to spill location (memory, lanes, or another class).
    Spill(Move),
    /// Spill location back to a register.
    Reload(Move),
    /// Recompute the definition of `value` into `dst`: a `remat` operation (no `uses`), or
    /// a pure operation run again on `uses`, its value operands in order, where they still
    /// hold the values it read (`docs/FORMAT.md`, "Rematerialisation").
    Remat {
        dst: Location,
        value: Value,
        uses: Vec<Use>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub kind: InstKind,
    pub pos: Pos,
}

impl Inst {
    pub fn op(&self) -> Option<&Op> {
        match &self.kind {
            InstKind::Op(op) => Some(op),
            _ => None,
        }
    }

    /// Whether allocation added this instruction (copies, swaps, spills, reloads, remats).
    pub fn is_artefact(&self) -> bool {
        !matches!(self.kind, InstKind::Op(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    /// All lanes take the same side.
    Uniform,
    /// Lanes may disagree: the hardware runs both sides under an exec mask (then before else).
    Divergent,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    Jump {
        target: Block,
        pos: Pos,
    },
    Branch {
        kind: BranchKind,
        cond: Use,
        then_block: Block,
        else_block: Block,
        pos: Pos,
    },
    Ret {
        uses: Vec<Use>,
        pos: Pos,
    },
}

impl Terminator {
    /// Whether this is a branch whose lanes may disagree.
    pub fn is_divergent(&self) -> bool {
        matches!(
            self,
            Terminator::Branch {
                kind: BranchKind::Divergent,
                ..
            }
        )
    }

    /// Successors in order (then before else).
    pub fn successors(&self) -> impl Iterator<Item = Block> + '_ {
        let (a, b) = match *self {
            Terminator::Jump { target, .. } => (Some(target), None),
            Terminator::Branch {
                then_block,
                else_block,
                ..
            } => (Some(then_block), Some(else_block)),
            Terminator::Ret { .. } => (None, None),
        };
        a.into_iter().chain(b)
    }

    pub fn uses(&self) -> &[Use] {
        match self {
            Terminator::Jump { .. } => &[],
            Terminator::Branch { cond, .. } => std::slice::from_ref(cond),
            Terminator::Ret { uses, .. } => uses,
        }
    }

    pub fn uses_mut(&mut self) -> &mut [Use] {
        match self {
            Terminator::Jump { .. } => &mut [],
            Terminator::Branch { cond, .. } => std::slice::from_mut(cond),
            Terminator::Ret { uses, .. } => uses,
        }
    }

    pub fn pos(&self) -> Pos {
        match *self {
            Terminator::Jump { pos, .. }
            | Terminator::Branch { pos, .. }
            | Terminator::Ret { pos, .. } => pos,
        }
    }
}

impl Function {
    /// The values defined `pinned` (by an operation or a phi), sorted.
    pub fn pinned_values(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .blocks
            .iter()
            .flat_map(|b| {
                let phis = b.phis.iter().map(|p| &p.def);
                let defs = b.insts.iter().filter_map(Inst::op).flat_map(|op| &op.defs);
                phis.chain(defs)
            })
            .filter(|d| d.pinned)
            .map(|d| d.value)
            .collect();
        out.sort();
        out
    }

    /// Replaces every value the function mentions (defs, uses, phi arguments, the value
    /// annotations of moves) by `map` of it.
    pub fn map_values(&mut self, map: impl Fn(Value) -> Value) {
        for block in &mut self.blocks {
            block.map_values(&map);
        }
    }

    pub fn block(&self, b: Block) -> &BlockData {
        &self.blocks[b.index()]
    }

    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }

    pub fn block_ids(&self) -> impl Iterator<Item = Block> {
        (0..self.blocks.len() as u32).map(Block)
    }

    pub fn value_ids(&self) -> impl Iterator<Item = Value> {
        (0..self.values.len() as u32).map(Value)
    }

    /// Number of original operations (phis and terminators not counted).
    pub fn op_count(&self) -> usize {
        self.blocks
            .iter()
            .map(|b| b.insts.iter().filter(|i| !i.is_artefact()).count())
            .sum()
    }

    /// Whether every definition and use carries a location.
    pub fn is_allocated(&self) -> bool {
        self.blocks.iter().all(|b| {
            b.phis.iter().all(|p| p.def.loc.is_some())
                && b.insts.iter().all(|i| match &i.kind {
                    InstKind::Op(op) => {
                        op.defs.iter().all(|d| d.loc.is_some())
                            && op.uses().all(|u| u.loc.is_some())
                    }
                    _ => true,
                })
                && b.term.uses().iter().all(|u| u.loc.is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The common operations of a parsed program (one definition, up to two operands, value
    /// names of up to 24 bytes) take no heap block of their own, and their opcodes compare equal across parses.
    #[test]
    fn common_operations_are_held_inline() {
        let program = crate::parse(&crate::synth::synthetic(1_000)).expect("synthetic parses");
        let f = &program.functions[0];
        let ops: Vec<&Op> = f
            .blocks
            .iter()
            .flat_map(|b| b.insts.iter().filter_map(Inst::op))
            .collect();
        assert_eq!(ops.len(), f.op_count());
        assert!(ops.len() >= 900, "{} operations", ops.len());
        for op in ops {
            assert!(!op.defs.spilled(), "`{}`: {:?}", op.opcode, op.defs);
            assert!(!op.operands.spilled(), "`{}`: {:?}", op.opcode, op.operands);
        }
        for value in &f.values {
            assert!(!value.name.is_heap_allocated(), "`%{}`", value.name);
        }
        let again = crate::parse(&crate::synth::synthetic(1_000)).expect("synthetic parses");
        let opcodes = |f: &Function| -> Vec<Opcode> {
            f.blocks
                .iter()
                .flat_map(|b| b.insts.iter().filter_map(Inst::op))
                .map(|op| op.opcode.clone())
                .collect()
        };
        assert_eq!(opcodes(f), opcodes(&again.functions[0]));
    }

    /// Every walk over a large function reads its instructions whole, so their size bounds
    /// the memory traffic of the allocator's stages: the sizes are pinned, and a field that
    /// widens every instruction shows here.
    #[test]
    fn instruction_sizes_are_pinned() {
        use std::mem::size_of;
        assert_eq!(size_of::<RegAccesses>(), 8);
        assert_eq!(size_of::<Use>(), 28);
        assert_eq!(size_of::<Operand>(), 28);
        assert_eq!(size_of::<Def>(), 40);
        assert_eq!(size_of::<Opcode>(), 8);
        assert_eq!(size_of::<Op>(), 136);
        assert_eq!(size_of::<Inst>(), 144);
    }

    /// Fixed-register accesses round-trip through the text, and an operation without any
    /// holds no heap block for them.
    #[test]
    fn register_accesses_are_out_of_line() {
        let text = "target gfx9\nfunc @f {\nentry:\n  %a:s1 = s_mov 1 implicit_def(scc) \
                    clobber(vcc)\n  %b:s1 = s_add %a, %a\n  ret %b\n}\n";
        let program = crate::parse(text).expect("parses");
        let f = &program.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(Inst::op).collect();
        let names: Vec<&str> = ops[0].regs.iter().map(|a| a.reg.as_str()).collect();
        assert_eq!(names, ["scc", "vcc"]);
        assert_eq!(ops[1].regs, RegAccesses::default());
        assert!(ops[1].regs.is_empty());
        let printed = crate::print(&program);
        assert!(
            printed.contains("s_mov 1 implicit_def(scc) clobber(vcc)"),
            "{printed}"
        );
    }

    /// Past the inline counts, definitions and operands move to the heap and stay whole.
    #[test]
    fn larger_operations_keep_every_definition_and_operand() {
        let text = "target gfx9\nfunc @f {\nentry:\n  %a:v1, %b:v1 = split_two 1\n  \
                    %c:v1 = v_mad_u32_u24_with_a_long_opcode_name %a, %b, %a\n  ret %c\n}\n";
        let program = crate::parse(text).expect("parses");
        let f = &program.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(Inst::op).collect();
        assert!(ops[0].defs.spilled());
        assert_eq!(ops[0].defs.len(), 2);
        assert!(ops[1].operands.spilled());
        let values: Vec<Value> = ops[1].uses().map(|u| u.value).collect();
        assert_eq!(values, [Value(0), Value(1), Value(0)]);
        let copies: Vec<Op> = ops.iter().map(|&op| op.clone()).collect();
        assert!(copies.iter().zip(&ops).all(|(copy, &op)| copy == op));
        assert!(copies[0].defs.spilled() && copies[1].operands.spilled());
        let printed = crate::print(&program);
        assert!(printed.contains("%a:v1, %b:v1 = split_two 1"), "{printed}");
        assert!(
            printed.contains("%c:v1 = v_mad_u32_u24_with_a_long_opcode_name %a, %b, %a"),
            "{printed}"
        );
    }
}
