//! The syntax tree of a PTX module: what the importer and the exporter need, with the
//! byte span and line:col of everything they refer to. Text the tree does not hold
//! (comments, `.loc`, debug sections, declarations of memory symbols) stays in the source,
//! which the exporter copies verbatim around the statements it rewrites.

use crate::program::Pos;

/// A byte range of the source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// The type of a register declaration (PTX ISA §5.2.2, fundamental types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegType {
    /// `.pred`
    pub pred: bool,
    /// Width in bits: 1 for predicates, 8, 16, 32, 64 or 128.
    pub bits: u16,
}

impl RegType {
    /// From a type directive (`.b32`, `.f16x2`, `.pred`, …).
    pub fn from_directive(d: &str) -> Option<RegType> {
        let bits = match d {
            ".pred" => {
                return Some(RegType {
                    pred: true,
                    bits: 1,
                })
            }
            ".b8" | ".u8" | ".s8" => 8,
            ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 16,
            ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" | ".tf32" => 32,
            ".b64" | ".u64" | ".s64" | ".f64" => 64,
            ".b128" => 128,
            _ => return None,
        };
        Some(RegType { pred: false, bits })
    }

    /// Units of 32 bits the value takes in the register file (predicates: one `p` unit).
    pub fn units(self) -> u16 {
        if self.pred {
            1
        } else {
            self.bits.div_ceil(32)
        }
    }
}

/// A declared register variable of a function (one per name and scope).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    pub ty: RegType,
    pub pos: Pos,
}

/// Index into [`FunctionAst::vars`].
pub type VarId = usize;

/// One occurrence of a register in a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegOcc {
    pub var: VarId,
    pub span: Span,
    pub pos: Pos,
}

/// An element of a brace vector `{%r1, 0, _}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Reg(RegOcc),
    Imm(i64, Span),
    /// `_`: a destination element nobody reads.
    Sink(Span),
}

/// An operand as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    Reg(RegOcc),
    /// `!%p`: a negated predicate source.
    Not(RegOcc),
    /// `%tid.x`, `%laneid`, …: read by the hardware, never allocated.
    Special(String, Pos),
    /// A literal (its bit pattern), with the `-` folded in.
    Imm(i64, Span, Pos),
    /// A symbol: a variable, parameter, label or function name.
    Sym(String, Pos),
    /// `[base + offset]`: the base register (when any) is a use, even in a store.
    Addr {
        base: Option<RegOcc>,
        sym: Option<String>,
        pos: Pos,
    },
    Vector(Vec<Elem>, Pos),
    /// `%p|%q`: the two destinations of `setp` and friends (`_` for none).
    Pair(Option<RegOcc>, Option<RegOcc>, Pos),
    /// `(a, b)`: the argument or return lists of `call`.
    List(Vec<Operand>, Pos),
}

impl Operand {
    pub fn pos(&self) -> Pos {
        match self {
            Operand::Reg(r) | Operand::Not(r) => r.pos,
            Operand::Special(_, p)
            | Operand::Imm(_, _, p)
            | Operand::Sym(_, p)
            | Operand::Addr { pos: p, .. }
            | Operand::Vector(_, p)
            | Operand::Pair(_, _, p)
            | Operand::List(_, p) => *p,
        }
    }

    /// Every register occurrence, in text order.
    pub fn regs(&self) -> Vec<RegOcc> {
        match self {
            Operand::Reg(r) | Operand::Not(r) => vec![*r],
            Operand::Addr { base, .. } => base.iter().copied().collect(),
            Operand::Vector(elems, _) => elems
                .iter()
                .filter_map(|e| match e {
                    Elem::Reg(r) => Some(*r),
                    _ => None,
                })
                .collect(),
            Operand::Pair(a, b, _) => a.iter().chain(b.iter()).copied().collect(),
            Operand::List(items, _) => items.iter().flat_map(Operand::regs).collect(),
            Operand::Special(..) | Operand::Imm(..) | Operand::Sym(..) => Vec::new(),
        }
    }
}

/// `@%p` or `@!%p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub reg: RegOcc,
    pub negated: bool,
}

/// One instruction: `[@[!]%p] opcode operands;`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stmt {
    /// From the guard (or opcode) to the `;` inclusive.
    pub span: Span,
    pub pos: Pos,
    pub guard: Option<Guard>,
    pub opcode: String,
    pub operands: Vec<Operand>,
    /// The scope the statement sits in (labels it names resolve from there).
    pub scope: usize,
}

impl Stmt {
    /// The opcode's dot-separated parts: `ld.global.v4.b32` → `["ld", "global", "v4", "b32"]`.
    pub fn parts(&self) -> impl Iterator<Item = &str> + '_ {
        self.opcode.split('.')
    }

    pub fn base(&self) -> &str {
        self.parts().next().unwrap_or_default()
    }

    pub fn has(&self, modifier: &str) -> bool {
        self.parts().skip(1).any(|p| p == modifier)
    }
}

/// What a function body holds, in text order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Stmt(Stmt),
    Label {
        name: String,
        scope: usize,
        span: Span,
        pos: Pos,
    },
    /// A `.reg` declaration: dropped on export, where the allocated registers are declared.
    RegDecl(Span),
}

/// A `.entry` or `.func` with a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionAst {
    pub name: String,
    pub pos: Pos,
    /// `.entry` (a kernel, whose parameters live in the constant bank) or `.func`.
    pub entry: bool,
    pub params: Vec<String>,
    /// Byte offset just after the body's `{` and of its closing `}`.
    pub body_open: usize,
    pub body_close: usize,
    pub items: Vec<Item>,
    pub vars: Vec<Var>,
    /// Parent of each scope (scope 0, the body, has none).
    pub scope_parent: Vec<Option<usize>>,
}

/// A whole module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// The first architecture of `.target` (`sm_90a`).
    pub arch: String,
    pub arch_pos: Pos,
    pub functions: Vec<FunctionAst>,
}
