//! One statement → one pre-SSA instruction: the register groups it defines and reads
//! ([`super::isa`] decides which operand is which), whether vector operands are tuples, the
//! constant it defines (for [`super::operands`]), and how it ends a block. Registers are
//! still PTX variables here; [`super::ssa`] renames them into values.

use super::ast::{Elem, FunctionAst, Operand, RegOcc, RegType, Span, Stmt};
use super::isa::{self, Flow};
use super::operands::{Constant, Position};
use super::PtxError;
use crate::program::{Effect, Pos};

type Result<T> = std::result::Result<T, PtxError>;

/// One element of a register group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LElem {
    Var(RegOcc),
    Imm(i64, Span),
    Sink(Span),
}

/// Registers read or written together: one scalar, or a tuple of consecutive registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub elems: Vec<LElem>,
    pub tuple: bool,
    /// The type of each element.
    pub ty: RegType,
    /// The statement operand it comes from (`None` for the guard).
    pub operand: Option<usize>,
    /// Whether its registers are written in this statement's text (not for the operands
    /// SSA construction adds: the input side of a read-modify-write operand, the
    /// accumulators a `wgmma.wait_group` waits for).
    pub in_text: bool,
    pub pos: Pos,
}

impl Group {
    pub fn scalar(r: RegOcc, ty: RegType, operand: Option<usize>) -> Group {
        Group {
            elems: vec![LElem::Var(r)],
            tuple: false,
            ty,
            operand,
            in_text: true,
            pos: r.pos,
        }
    }

    /// The variables of the group, one per element (`None` for immediates and sinks).
    pub fn vars(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.elems.iter().map(|e| match e {
            LElem::Var(r) => Some(r.var),
            _ => None,
        })
    }
}

/// A source operand of the instruction, in program-operand order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LUse {
    Group(Group, Position),
    Imm(i64),
}

/// How the instruction ends its block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LFlow {
    Next,
    /// `[@p] bra L`: the label and the scope it is looked up from.
    Branch {
        label: String,
        label_pos: Pos,
        uniform: bool,
    },
    Exit,
}

/// One lowered statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LInst {
    /// Index of the statement in the function's items.
    pub item: usize,
    pub pos: Pos,
    pub opcode: String,
    pub defs: Vec<Group>,
    pub uses: Vec<LUse>,
    /// The guard predicate and whether it is negated.
    pub guard: Option<(RegOcc, bool)>,
    /// (definition, use) pairs that must share registers: a read-modify-write operand
    /// (`wgmma` accumulators), the accumulators a `wgmma.wait_group` passes through.
    pub tied: Vec<(usize, usize)>,
    /// Its definitions stay in place for their whole life: the accumulators of
    /// `wgmma.mma_async` and of a `wgmma.wait_group N` with N > 0 (still in flight).
    pub pinned: bool,
    pub prefer: Option<(usize, usize)>,
    pub effect: Effect,
    pub flow: LFlow,
    /// `mov dst, src` between registers of one width: SSA construction forwards `src`.
    pub copy: Option<(RegOcc, RegOcc)>,
    /// An integer conversion between 32 and 64 bits ([`Width`]), `(dst, src)`.
    pub width: Option<(Width, RegOcc, RegOcc)>,
    pub constant: Option<Constant>,
    /// No register operands and recomputable.
    pub remat: bool,
    /// `wgmma.mma_async`: its accumulator (definition 0) and register fragments of A
    /// (definition 1, when in registers) are in flight until a `wgmma.wait_group`; both
    /// are read-modify-write, so that nothing moves them meanwhile.
    pub async_mma: bool,
    /// `wgmma.wait_group N`.
    pub wait: Option<i64>,
}

/// Lowers statement `item` of `f`.
pub fn lower(f: &FunctionAst, item: usize, stmt: &Stmt) -> Result<LInst> {
    let ty = |r: &RegOcc| f.vars[r.var].ty;
    let mut l = LInst {
        item,
        pos: stmt.pos,
        opcode: stmt.opcode.clone(),
        defs: Vec::new(),
        uses: Vec::new(),
        guard: stmt.guard.map(|g| (g.reg, g.negated)),
        tied: Vec::new(),
        pinned: isa::is_async_mma(stmt),
        prefer: isa::prefers_accumulator(stmt),
        effect: isa::effect(stmt),
        flow: LFlow::Next,
        copy: None,
        width: None,
        constant: None,
        remat: false,
        async_mma: isa::is_async_mma(stmt),
        wait: isa::wait_group(stmt),
    };
    if let Some((r, _)) = l.guard {
        if !ty(&r).pred {
            return Err(PtxError {
                pos: r.pos,
                message: format!("the guard `{}` is not a predicate", f.vars[r.var].name),
            });
        }
    }
    l.flow = flow(stmt)?;
    let has_dest = isa::has_destination(stmt);
    for (k, operand) in stmt.operands.iter().enumerate() {
        let fragment = k == 1 && l.async_mma && matches!(operand, Operand::Vector(..));
        if (k == 0 && has_dest) || fragment {
            let groups = def_groups(f, stmt, operand)?;
            if isa::is_read_modify_write(stmt) {
                for g in &groups {
                    l.tied.push((l.defs.len(), l.uses.len()));
                    let input = Group {
                        in_text: false,
                        ..g.clone()
                    };
                    l.uses.push(LUse::Group(input, Position::Register));
                    l.defs.push(g.clone());
                }
            } else {
                l.defs = groups;
            }
        } else {
            use_groups(f, stmt, k, operand, &mut l.uses)?;
        }
    }
    if let Some((r, _)) = l.guard {
        l.uses
            .push(LUse::Group(Group::scalar(r, ty(&r), None), Position::Guard));
    }
    l.copy = copy_of(f, stmt);
    l.width = width_of(f, stmt);
    l.constant = constant_of(f, stmt);
    l.remat = l.guard.is_none()
        && l.defs.len() == 1
        && !l.defs[0].tuple
        && !l.uses.iter().any(|u| matches!(u, LUse::Group(..)))
        && (l.constant.is_some() || reads_stable_special(stmt));
    Ok(l)
}

fn flow(stmt: &Stmt) -> Result<LFlow> {
    Ok(match isa::flow(stmt) {
        Flow::Next if stmt.base() == "brx" => {
            return Err(PtxError {
                pos: stmt.pos,
                message: "unsupported: indirect branch `brx.idx`".into(),
            })
        }
        Flow::Next => LFlow::Next,
        Flow::Exit => LFlow::Exit,
        Flow::Branch { uniform } => match stmt.operands.as_slice() {
            [Operand::Sym(label, pos)] => LFlow::Branch {
                label: label.clone(),
                label_pos: *pos,
                uniform,
            },
            _ => {
                return Err(PtxError {
                    pos: stmt.pos,
                    message: "`bra` takes one label".into(),
                })
            }
        },
    })
}

fn error<T>(pos: Pos, message: impl Into<String>) -> Result<T> {
    Err(PtxError {
        pos,
        message: message.into(),
    })
}

/// The groups operand 0 defines.
fn def_groups(f: &FunctionAst, stmt: &Stmt, operand: &Operand) -> Result<Vec<Group>> {
    let ty = |r: &RegOcc| f.vars[r.var].ty;
    Ok(match operand {
        Operand::Reg(r) => vec![Group::scalar(*r, ty(r), Some(0))],
        Operand::Pair(a, b, _) => a
            .iter()
            .chain(b.iter())
            .map(|r| Group::scalar(*r, ty(r), Some(0)))
            .collect(),
        Operand::Vector(elems, pos) => {
            if let Some(Elem::Imm(_, _)) = elems.iter().find(|e| matches!(e, Elem::Imm(..))) {
                return error(
                    *pos,
                    "a destination vector element must be a register or `_`",
                );
            }
            let group = vector_group(f, stmt, elems, *pos, 0)?;
            if group.tuple {
                vec![group]
            } else {
                group
                    .elems
                    .iter()
                    .filter_map(|e| match e {
                        LElem::Var(r) => Some(Group::scalar(*r, ty(r), Some(0))),
                        _ => None,
                    })
                    .collect()
            }
        }
        other => return error(other.pos(), "expected a destination register"),
    })
}

/// A brace vector as one group (a tuple when the instruction needs consecutive registers).
fn vector_group(
    f: &FunctionAst,
    stmt: &Stmt,
    elems: &[Elem],
    pos: Pos,
    operand: usize,
) -> Result<Group> {
    let mut ty: Option<RegType> = None;
    let mut out = Vec::with_capacity(elems.len());
    for e in elems {
        out.push(match *e {
            Elem::Reg(r) => {
                let t = f.vars[r.var].ty;
                if ty.is_some_and(|ty| ty != t) {
                    return error(r.pos, "vector elements of different register types");
                }
                ty = Some(t);
                LElem::Var(r)
            }
            Elem::Imm(bits, span) => LElem::Imm(bits, span),
            Elem::Sink(span) => LElem::Sink(span),
        });
    }
    let ty = ty.unwrap_or(RegType {
        pred: false,
        bits: 32,
    });
    Ok(Group {
        tuple: !ty.pred && isa::vector_is_tuple(stmt, ty.bits, elems.len()),
        elems: out,
        ty,
        operand: Some(operand),
        in_text: true,
        pos,
    })
}

/// Appends the uses of source operand `k`.
fn use_groups(
    f: &FunctionAst,
    stmt: &Stmt,
    k: usize,
    operand: &Operand,
    uses: &mut Vec<LUse>,
) -> Result<()> {
    let ty = |r: &RegOcc| f.vars[r.var].ty;
    match operand {
        Operand::Reg(r) | Operand::Not(r) => uses.push(LUse::Group(
            Group::scalar(*r, ty(r), Some(k)),
            Position::Source(k),
        )),
        Operand::Imm(bits, ..) => uses.push(LUse::Imm(*bits)),
        Operand::Addr { base: Some(r), .. } => uses.push(LUse::Group(
            Group::scalar(*r, ty(r), Some(k)),
            Position::Address,
        )),
        Operand::Vector(elems, pos) => {
            let group = vector_group(f, stmt, elems, *pos, k)?;
            if group.tuple {
                uses.push(LUse::Group(group, Position::Tuple));
            } else {
                for e in &group.elems {
                    match *e {
                        LElem::Var(r) => uses.push(LUse::Group(
                            Group::scalar(r, ty(&r), Some(k)),
                            Position::Source(k),
                        )),
                        LElem::Imm(bits, _) => uses.push(LUse::Imm(bits)),
                        LElem::Sink(_) => {}
                    }
                }
            }
        }
        Operand::Pair(..) => return error(operand.pos(), "a `p|q` pair is only a destination"),
        Operand::List(items, pos) => {
            if items.iter().any(|i| !i.regs().is_empty()) {
                return error(*pos, "unsupported: registers in a call's argument list");
            }
        }
        Operand::Special(..) | Operand::Sym(..) | Operand::Addr { base: None, .. } => {}
    }
    Ok(())
}

/// `mov d, s` between registers of one width, or `cvta[.to].global d, s` (the identity on
/// sm_80/sm_90, where a generic address of global memory is the global address).
fn copy_of(f: &FunctionAst, stmt: &Stmt) -> Option<(RegOcc, RegOcc)> {
    let identity = stmt.base() == "mov" || (stmt.base() == "cvta" && stmt.has("global"));
    match stmt.operands.as_slice() {
        [Operand::Reg(d), Operand::Reg(s)] if identity && stmt.guard.is_none() => {
            (f.vars[d.var].ty.bits == f.vars[s.var].ty.bits
                && f.vars[d.var].ty.pred == f.vars[s.var].ty.pred)
                .then_some((*d, *s))
        }
        _ => None,
    }
}

/// How an integer `cvt` changes the width of a register between 32 and 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// `cvt.{u,s}64.{u,s}32`: zero- or sign-extends; its low 32 bits are the source.
    Widen,
    /// `cvt.{u,s}32.{u,s}64`: keeps the low 32 bits (PTX ISA, `cvt`: an integer
    /// conversion to a narrower type truncates when `.sat` is absent).
    Truncate,
}

/// The width change of an unguarded integer `cvt d, s` between a 32-bit and a 64-bit
/// register, without `.sat`.
fn width_of(f: &FunctionAst, stmt: &Stmt) -> Option<(Width, RegOcc, RegOcc)> {
    let [Operand::Reg(d), Operand::Reg(s)] = stmt.operands.as_slice() else {
        return None;
    };
    if stmt.base() != "cvt" || stmt.guard.is_some() || stmt.has("sat") {
        return None;
    }
    let types: Vec<&str> = stmt.parts().skip(1).collect();
    let integer =
        |t: &str, bits: &str| t.len() == 3 && t[1..] == *bits && matches!(&t[..1], "u" | "s");
    let (dst_bits, src_bits) = (f.vars[d.var].ty.bits, f.vars[s.var].ty.bits);
    match types.as_slice() {
        [to, from]
            if integer(to, "64") && integer(from, "32") && (dst_bits, src_bits) == (64, 32) =>
        {
            Some((Width::Widen, *d, *s))
        }
        [to, from]
            if integer(to, "32") && integer(from, "64") && (dst_bits, src_bits) == (32, 64) =>
        {
            Some((Width::Truncate, *d, *s))
        }
        _ => None,
    }
}

/// The constant an unguarded scalar definition produces, if any.
fn constant_of(f: &FunctionAst, stmt: &Stmt) -> Option<Constant> {
    if stmt.guard.is_some() {
        return None;
    }
    let [Operand::Reg(d), src] = stmt.operands.as_slice() else {
        return None;
    };
    let pred = f.vars[d.var].ty.pred;
    match (stmt.base(), src) {
        ("mov", Operand::Imm(bits, ..)) => Some(Constant::Imm { bits: *bits, pred }),
        ("mov" | "cvta", Operand::Sym(..)) => Some(Constant::Bank),
        ("mov", Operand::Special(name, _)) if isa::special_in_constant_bank(name) => {
            Some(Constant::Bank)
        }
        (
            "ld",
            Operand::Addr {
                base: None,
                sym: Some(sym),
                ..
            },
        ) if stmt.has("param") && f.entry && f.params.contains(sym) => Some(Constant::Bank),
        _ => None,
    }
}

/// `mov d, %tid.x` and other special registers that stay the same while the thread runs.
fn reads_stable_special(stmt: &Stmt) -> bool {
    matches!(stmt.operands.as_slice(),
        [Operand::Reg(_), Operand::Special(name, _)] if stmt.base() == "mov" && !isa::special_is_volatile(name))
}
