//! LLVM AMDGPU machine IR (`.mir`) in: the register-allocation input of LLVM's AMDGPU
//! backend as an ordinary program of the `gfx90a`, `gfx942`, `gfx9`, `gfx10-*` or
//! `gfx11-*` target.
//!
//! The input is what `llc -stop-before=phi-node-elimination` prints for an AMDGPU kernel:
//! SSA machine IR with virtual registers, register classes, PHIs and LLVM's structurized
//! divergent control flow (`SI_IF`, `SI_ELSE`, `SI_END_CF`, `SI_IF_BREAK`, `SI_LOOP`).
//! One stage per module:
//! - [`lexer`], [`parse`] → [`ast`]: the subset of MIR that output uses — the YAML
//!   layout read line by line (not a YAML reader), instructions with register flags,
//!   sub-register indices, LLT types (skipped), memory operands (read only for
//!   `load`/`store`), `INLINEASM` operands — with positioned errors;
//! - [`classes`]: LLVM register classes and physical registers as chromatic classes and
//!   locations, and the target of the IR's `"target-cpu"`;
//! - [`implicit`]: the fixed registers (`$scc`, `$vcc`, `$exec`, `$m0`, `$mode`) an
//!   instruction reads, writes or clobbers, which order it in a block;
//! - [`ties`]: the tied operands of the accumulating instructions, which MIR does not print;
//! - [`parts`]: tuples read only by parts, split so their parts die apart (LLVM's
//!   sub-register liveness);
//! - [`lower`]: blocks, PHIs, operations and terminators of the program model;
//! - [`undef_phis`]: PHIs equal but where one is `undef` merged, as LLVM's coalescer
//!   joins them;
//! - [`tuple_phis`]: PHIs of a tuple's parts that a `REG_SEQUENCE` regroups, whose
//!   arguments on an edge are one tuple's parts, made one PHI of the tuple, as LLVM's
//!   coalescer joins sub-register copies into the tuple.
//!
//! The AMD facts (register files, alignment, the unified VGPR/AGPR file and its occupancy)
//! are in `docs/TARGETS.md`.

pub mod ast;
pub mod classes;
pub mod export;
pub mod implicit;
mod lexer;
mod lower;
pub mod parse;
pub mod parts;
pub mod ties;
mod tuple_phis;
mod undef_phis;

use crate::program::{Pos, Program};

/// A malformed or unsupported MIR input: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct MirError {
    pub pos: Pos,
    pub message: String,
}

/// Imports a `.mir` file: one program function per machine function, each checked by
/// the SSA validator (a malformed input that lowers is refused there, with its position).
pub fn import(src: &str) -> Result<Program, MirError> {
    let module = parse::parse_module(src)?;
    let (cpu, pos) = module.cpu.clone().ok_or_else(|| MirError {
        pos: Pos { line: 1, col: 1 },
        message: "no `\"target-cpu\"` in the embedded IR: the target is unknown".into(),
    })?;
    let (target, wave) = classes::target_of(&cpu, module.wave64_feature, pos)?;
    if module.functions.is_empty() {
        return Err(MirError {
            pos: Pos { line: 1, col: 1 },
            message: "no machine function (`---` document with `name:` and `body:`)".into(),
        });
    }
    reject_duplicate_names(&module.functions)?;
    let functions = module
        .functions
        .iter()
        .map(|f| {
            let function = lower::lower_function(f, &target, wave)?;
            crate::analysis::ssa::validate(&function, &target).map_err(|errors| MirError {
                pos: errors[0].pos,
                message: errors[0].message.clone(),
            })?;
            Ok(function)
        })
        .collect::<Result<_, MirError>>()?;
    Ok(Program { target, functions })
}

/// A module names each machine function once, as the printed program must.
fn reject_duplicate_names(functions: &[ast::FunctionAst]) -> Result<(), MirError> {
    let mut seen = std::collections::HashSet::new();
    match functions.iter().find(|f| !seen.insert(f.name.as_str())) {
        Some(f) => Err(MirError {
            pos: f.pos,
            message: format!("duplicate machine function `{}`", f.name),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
