//! The parsed MIR: what [`super::parse`] reads and [`super::lower`] turns into a program.

use crate::program::Pos;
use std::collections::HashMap;

/// A `.mir` file: the target from its embedded IR and one entry per machine function.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// `"target-cpu"="gfx942"` of the embedded IR, with its position.
    pub cpu: Option<(String, Pos)>,
    /// `+wavefrontsize64` among the target features.
    pub wave64_feature: bool,
    pub functions: Vec<FunctionAst>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionAst {
    pub name: String,
    pub pos: Pos,
    /// `registers:` — virtual register number → class name and where it is declared.
    pub classes: HashMap<u32, (String, Pos)>,
    pub blocks: Vec<BlockAst>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlockAst {
    /// `N` of `bb.N`.
    pub number: u32,
    pub pos: Pos,
    pub successors: Vec<u32>,
    pub insts: Vec<InstAst>,
}

/// `defs = flags OPCODE operands :: memory-operands`.
#[derive(Clone, Debug, PartialEq)]
pub struct InstAst {
    pub pos: Pos,
    pub defs: Vec<OperandAst>,
    pub opcode: String,
    pub operands: Vec<OperandAst>,
    /// Memory operands say `store` / `load`.
    pub stores: bool,
    pub loads: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OperandKind {
    VReg {
        id: u32,
        sub: Option<String>,
        class: Option<String>,
    },
    Phys(String),
    Imm(i64),
    Block(u32),
    /// `%subreg.NAME`: the sub-register index a `REG_SEQUENCE` puts its source at.
    SubRegIndex(String),
    /// Anything allocation does not read: IR references, symbols,
    /// strings, floats, `target-flags(...)`.
    Other,
}

/// Register flags written before an operand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub killed: bool,
    pub dead: bool,
    pub undef: bool,
    pub implicit: bool,
    pub implicit_def: bool,
    pub early_clobber: bool,
    /// `def` inside the operand list (`INLINEASM` outputs).
    pub def: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OperandAst {
    pub kind: OperandKind,
    pub flags: Flags,
    pub pos: Pos,
}

impl OperandAst {
    /// Whether this operand writes its register.
    pub fn is_def(&self) -> bool {
        self.flags.def || self.flags.implicit_def
    }
}
