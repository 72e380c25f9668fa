//! LLVM's structurized control-flow pseudos lowered to EXEC arithmetic on the allocated
//! registers.
//!
//! `si-lower-control-flow` (LLVM 19, `SILowerControlFlow.cpp`) runs before register
//! allocation, so a function handed back after allocation must carry its result. With
//! `W` the wave's mask width (`_B64` and `$exec` on wave64, `_B32` and `$exec_lo` on
//! wave32) and `D` the pseudo's result:
//! - `D = SI_IF C, %bb.T`: `D = S_AND_SAVEEXEC_W C` (D = old EXEC, EXEC &= C), then
//!   `D = S_XOR_W $exec, D` (D = the lanes that skip the then-side), and
//!   `S_CBRANCH_EXECZ %bb.T` among the terminators;
//! - `D = SI_ELSE S, %bb.T`: `D = S_OR_SAVEEXEC_W S` (D = the then-side's lanes, EXEC =
//!   both sides), `$exec = S_XOR_W $exec, D` (the else-side's lanes), `S_CBRANCH_EXECZ`;
//! - `SI_END_CF S`: `$exec = S_OR_W $exec, S`;
//! - `D = SI_IF_BREAK C, S`: `D = S_AND_W $exec, C`, `D = S_OR_W D, S` (the importer
//!   makes D early-clobber, so D overlaps neither operand);
//! - `SI_LOOP M, %bb.H`: `$exec = S_ANDN2_W $exec, M`, `S_CBRANCH_EXECNZ %bb.H`.
//!
//! LLVM writes the EXEC updates as `_term` terminators so that the allocator puts no
//! spill code after them; after allocation that order is fixed, and the plain opcodes are
//! what `_term` expands to. Each writes `$scc`, which no value crosses here.

use super::super::ast::{InstAst, OperandKind};
use super::super::MirError;
use super::liveins::Unit;
use super::Emitted;
use crate::program::{Location, Op};
use crate::target::Target;

/// The pseudos lowered here.
pub fn is_control(opcode: &str) -> bool {
    matches!(
        opcode,
        "SI_IF" | "SI_ELSE" | "SI_END_CF" | "SI_IF_BREAK" | "SI_LOOP"
    )
}

/// The terminators whose branch the lowering writes.
pub fn is_lowered(opcode: &str) -> bool {
    matches!(opcode, "SI_IF" | "SI_ELSE" | "SI_LOOP")
}

/// A pseudo's instructions at its place, and the branch that joins the terminators.
pub struct Lowered {
    pub body: Vec<Emitted>,
    pub branch: Option<String>,
}

pub fn lower(ast: &InstAst, op: &Op, target: &Target, wave: u16) -> Result<Lowered, MirError> {
    let (w, exec) = if wave == 64 {
        ("B64", "$exec")
    } else {
        ("B32", "$exec_lo")
    };
    let whole_exec = "$exec";
    let fail = |message: &str| MirError {
        pos: ast.pos,
        message: format!("`{}`: {message}", ast.opcode),
    };
    let reg = |loc: Option<Location>| -> Result<(String, Vec<Unit>), MirError> {
        let loc = loc.ok_or_else(|| fail("an operand without a register"))?;
        let Location::Reg { class, first, len } = loc else {
            return Err(fail("a mask outside the registers"));
        };
        let name = super::body::register_name(target, loc).ok_or_else(|| fail("not an SGPR"))?;
        Ok((name, (first..first + len).map(|u| (class, u)).collect()))
    };
    let uses: Vec<(String, Vec<Unit>)> = op.uses().map(|u| reg(u.loc)).collect::<Result<_, _>>()?;
    let def = op.defs.first().map(|d| reg(d.loc)).transpose()?;
    let target_block = ast.operands.iter().find_map(|o| match o.kind {
        OperandKind::Block(b) => Some(b),
        _ => None,
    });
    let inst = |text: String, defs: &[&Vec<Unit>], uses: &[&Vec<Unit>]| Emitted {
        text,
        defs: defs.iter().flat_map(|d| d.iter().copied()).collect(),
        uses: uses.iter().flat_map(|u| u.iter().copied()).collect(),
    };
    let branch = |opcode: &str| -> Result<Option<String>, MirError> {
        let b = target_block.ok_or_else(|| fail("names no block"))?;
        Ok(Some(format!("{opcode} %bb.{b}, implicit $exec")))
    };
    let operand = |i: usize| uses.get(i).ok_or_else(|| fail("a mask operand is missing"));
    let result = || def.as_ref().ok_or_else(|| fail("the result is missing"));
    let lowered = match ast.opcode.as_str() {
        "SI_IF" => {
            let ((c, cu), (d, du)) = (operand(0)?, result()?);
            Lowered {
                body: vec![
                    inst(format!("{d} = S_AND_SAVEEXEC_{w} {c}, implicit-def {whole_exec}, implicit-def dead $scc, implicit {whole_exec}"), &[du], &[cu]),
                    inst(format!("{d} = S_XOR_{w} {exec}, {d}, implicit-def dead $scc"), &[du], &[du]),
                ],
                branch: branch("S_CBRANCH_EXECZ")?,
            }
        }
        "SI_ELSE" => {
            let ((s, su), (d, du)) = (operand(0)?, result()?);
            Lowered {
                body: vec![
                    inst(format!("{d} = S_OR_SAVEEXEC_{w} {s}, implicit-def {whole_exec}, implicit-def dead $scc, implicit {whole_exec}"), &[du], &[su]),
                    inst(format!("{exec} = S_XOR_{w} {exec}, {d}, implicit-def dead $scc"), &[], &[du]),
                ],
                branch: branch("S_CBRANCH_EXECZ")?,
            }
        }
        "SI_END_CF" => {
            let (s, su) = operand(0)?;
            Lowered {
                body: vec![inst(
                    format!("{exec} = S_OR_{w} {exec}, {s}, implicit-def dead $scc"),
                    &[],
                    &[su],
                )],
                branch: None,
            }
        }
        "SI_IF_BREAK" => {
            let ((c, cu), (s, su), (d, du)) = (operand(0)?, operand(1)?, result()?);
            if du.iter().any(|u| su.contains(u)) {
                return Err(fail("the result shares a register with the mask it ORs"));
            }
            Lowered {
                body: vec![
                    inst(
                        format!("{d} = S_AND_{w} {exec}, {c}, implicit-def dead $scc"),
                        &[du],
                        &[cu],
                    ),
                    inst(
                        format!("{d} = S_OR_{w} {d}, {s}, implicit-def dead $scc"),
                        &[du],
                        &[du, su],
                    ),
                ],
                branch: None,
            }
        }
        "SI_LOOP" => {
            let (m, mu) = operand(0)?;
            Lowered {
                body: vec![inst(
                    format!("{exec} = S_ANDN2_{w} {exec}, {m}, implicit-def dead $scc"),
                    &[],
                    &[mu],
                )],
                branch: branch("S_CBRANCH_EXECNZ")?,
            }
        }
        _ => return Err(fail("not a control-flow pseudo")),
    };
    Ok(lowered)
}
