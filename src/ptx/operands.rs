//! Operands SASS reads without a register: the one table of which PTX source positions may
//! take an immediate or a constant-bank operand on sm_80/sm_90, and the rule that decides,
//! per use of a constant, whether it needs a register there.
//!
//! A *constant* is a value defined by an unguarded `mov` of an immediate, an `ld.param` of
//! a kernel parameter (kernel parameters live in constant bank 0 on sm_80/sm_90), a `mov` of
//! a symbol's address, or a read of a launch dimension (`%ntid`, `%nctaid`, also in the
//! constant bank). At each use:
//!
//! - the value zero is the zero register `RZ` and a true predicate is `PT`, readable by any
//!   source position that is not tied to a destination and not part of a tuple: no register
//!   (a tuple source whose elements are all zero is `RZ` too: `STG.E.128 [R2], RZ`);
//! - otherwise, if [`RULES`] lets that source position of the instruction be an immediate or
//!   a constant-bank operand and no other source of the instruction already is one (SASS
//!   ALU instructions encode at most one non-register source, `IADD3`'s/`IMAD`'s/`FFMA`'s/
//!   `LOP3`'s second or third), the use takes the constant directly: no register, no live
//!   range to that use;
//! - otherwise the constant is rematerialised next to the use.
//!
//! The importer applies the rule (`super::constants`); `docs/PTX.md` documents the table
//! and its sources.

use super::ast::{Operand, Stmt};

/// Which source operands (indices into the statement's operands) may be an immediate or a
/// constant-bank operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Any one source operand (the ALU's single non-register slot).
    OneSource,
    /// Each of these operand indices, independently (immediate fields of the encoding).
    Each(&'static [usize]),
}

/// The table, by opcode (first component). Opcodes not listed take no constant operand
/// other than `RZ`/`PT`.
pub const RULES: &[(&str, Rule)] = &[
    // Integer and floating-point arithmetic, logic, shifts, comparisons, selects,
    // bit-field and conversion instructions: IADD3, IMAD, FFMA, FADD, FMUL, DFMA, LOP3, SHF,
    // ISETP, FSETP, SEL, FSEL, BFE/BFI (SGXT, SHF), PRMT, FLO, POPC, I2F/F2I.
    ("add", Rule::OneSource),
    ("addc", Rule::OneSource),
    ("sub", Rule::OneSource),
    ("subc", Rule::OneSource),
    ("mul", Rule::OneSource),
    ("mad", Rule::OneSource),
    ("madc", Rule::OneSource),
    ("mul24", Rule::OneSource),
    ("mad24", Rule::OneSource),
    ("sad", Rule::OneSource),
    ("fma", Rule::OneSource),
    ("min", Rule::OneSource),
    ("max", Rule::OneSource),
    ("abs", Rule::OneSource),
    ("neg", Rule::OneSource),
    ("and", Rule::OneSource),
    ("or", Rule::OneSource),
    ("xor", Rule::OneSource),
    ("not", Rule::OneSource),
    ("cnot", Rule::OneSource),
    ("lop3", Rule::OneSource),
    ("shl", Rule::OneSource),
    ("shr", Rule::OneSource),
    ("shf", Rule::OneSource),
    ("selp", Rule::OneSource),
    ("slct", Rule::OneSource),
    ("setp", Rule::OneSource),
    ("set", Rule::OneSource),
    ("bfe", Rule::OneSource),
    ("bfi", Rule::OneSource),
    ("bfind", Rule::OneSource),
    ("bmsk", Rule::OneSource),
    ("brev", Rule::OneSource),
    ("clz", Rule::OneSource),
    ("popc", Rule::OneSource),
    ("prmt", Rule::OneSource),
    ("dp4a", Rule::OneSource),
    ("dp2a", Rule::OneSource),
    ("copysign", Rule::OneSource),
    ("testp", Rule::OneSource),
    ("cvt", Rule::OneSource),
    ("div", Rule::OneSource),
    ("rem", Rule::OneSource),
    // `shfl.sync d[|p], a, b, c, membermask`: lane (b), clamp (c) and mask are immediate
    // fields of SHFL.
    ("shfl", Rule::Each(&[2, 3, 4])),
    // `vote.sync d, a, membermask`, `redux.sync d, a, membermask`, `match.sync d, a, membermask`.
    ("vote", Rule::Each(&[2])),
    ("redux", Rule::Each(&[2])),
    ("match", Rule::Each(&[2])),
    // `bar.sync a{, b}`: barrier id and thread count; `bar.red d, a{, b}, c`.
    ("bar", Rule::Each(&[0, 1, 2])),
    ("barrier", Rule::Each(&[0, 1, 2])),
    ("nanosleep", Rule::Each(&[0])),
];

/// The rule of an instruction, when the table has one.
pub fn rule(stmt: &Stmt) -> Option<Rule> {
    let base = stmt.base();
    RULES.iter().find(|(op, _)| *op == base).map(|&(_, r)| r)
}

/// Where in an instruction a constant is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// A scalar source operand, by its index among the statement's operands.
    Source(usize),
    /// The guard predicate or a predicate source.
    Guard,
    /// The base register of an address.
    Address,
    /// A tuple source (consecutive registers): `RZ` when every element is zero, else
    /// registers.
    Tuple,
    /// Anything that must be a register: a tuple element, a read-modify-write or tied
    /// operand, the old value a guarded definition keeps.
    Register,
}

/// What a constant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constant {
    /// An immediate: its bit pattern, and whether it is a predicate.
    Imm { bits: i64, pred: bool },
    /// A constant-bank operand (kernel parameter, launch dimension, symbol address).
    Bank,
}

/// How one use of a constant is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// `RZ` or `PT`: free, and it does not take the instruction's constant slot.
    ZeroRegister,
    /// Directly from the encoding or the constant bank: it takes the slot.
    Slot,
    /// In a register, rematerialised next to the use.
    Register,
}

/// Decides how the use of `c` at `pos` of `stmt` is read, when `slot_taken` says whether
/// another source of the instruction already takes the constant slot.
pub fn read(stmt: &Stmt, pos: Position, c: Constant, slot_taken: bool) -> Read {
    let zero_register = match c {
        Constant::Imm { bits, pred: false } => bits == 0,
        Constant::Imm { bits, pred: true } => bits != 0,
        Constant::Bank => false,
    };
    match pos {
        Position::Register | Position::Tuple => Read::Register,
        Position::Guard | Position::Address if zero_register => Read::ZeroRegister,
        Position::Guard | Position::Address => Read::Register,
        Position::Source(_) if zero_register => Read::ZeroRegister,
        Position::Source(i) => match rule(stmt) {
            Some(Rule::OneSource) if !slot_taken => Read::Slot,
            Some(Rule::Each(slots)) if slots.contains(&i) => Read::Slot,
            _ => Read::Register,
        },
    }
}

/// Whether a literal operand of `stmt` already takes the constant slot (a literal zero is
/// `RZ` and takes none).
pub fn literal_takes_slot(stmt: &Stmt) -> bool {
    matches!(rule(stmt), Some(Rule::OneSource))
        && stmt
            .operands
            .iter()
            .any(|o| matches!(o, Operand::Imm(bits, ..) if *bits != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Pos;
    use crate::ptx::ast::Span;

    fn stmt(opcode: &str, operands: Vec<Operand>) -> Stmt {
        Stmt {
            span: Span::default(),
            pos: Pos::default(),
            guard: None,
            opcode: opcode.into(),
            operands,
            scope: 0,
        }
    }

    const BANK: Constant = Constant::Bank;
    const SEVEN: Constant = Constant::Imm {
        bits: 7,
        pred: false,
    };
    const ZERO: Constant = Constant::Imm {
        bits: 0,
        pred: false,
    };
    const TRUE: Constant = Constant::Imm {
        bits: -1,
        pred: true,
    };

    #[test]
    fn alu_takes_one_constant() {
        let add = stmt("add.s32", vec![]);
        assert_eq!(read(&add, Position::Source(2), BANK, false), Read::Slot);
        assert_eq!(read(&add, Position::Source(1), SEVEN, true), Read::Register);
        assert_eq!(
            read(&add, Position::Source(1), ZERO, true),
            Read::ZeroRegister
        );
    }

    #[test]
    fn stores_and_tuples_need_registers_except_zero() {
        let st = stmt("st.global.u32", vec![]);
        assert_eq!(read(&st, Position::Source(1), SEVEN, false), Read::Register);
        assert_eq!(
            read(&st, Position::Source(1), ZERO, false),
            Read::ZeroRegister
        );
        assert_eq!(read(&st, Position::Register, ZERO, false), Read::Register);
        assert_eq!(read(&st, Position::Guard, TRUE, false), Read::ZeroRegister);
        assert_eq!(read(&st, Position::Address, BANK, false), Read::Register);
    }

    #[test]
    fn shuffle_immediate_fields_are_independent() {
        let shfl = stmt("shfl.sync.bfly.b32", vec![]);
        assert_eq!(read(&shfl, Position::Source(2), SEVEN, true), Read::Slot);
        assert_eq!(
            read(&shfl, Position::Source(1), SEVEN, false),
            Read::Register
        );
    }

    #[test]
    fn literals_take_the_slot_unless_zero() {
        let imm = |bits| Operand::Imm(bits, Span::default(), Pos::default());
        assert!(literal_takes_slot(&stmt("mad.wide.s32", vec![imm(4)])));
        assert!(!literal_takes_slot(&stmt("selp.b32", vec![imm(0)])));
        assert!(!literal_takes_slot(&stmt("st.global.u32", vec![imm(4)])));
    }
}
