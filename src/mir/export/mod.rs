//! MIR export: an allocated kernel handed back to LLVM as post-allocation machine IR.
//!
//! The output is the input file with each machine function's `body:` written again with
//! physical registers, in the form LLVM 19 prints after its last register-allocation pass
//! (`-stop-after=virtregrewriter,1`), so that `llc-19 -start-after=virtregrewriter,1`
//! continues from it to final assembly: stack-slot colouring, copy propagation,
//! prologue/epilogue insertion (which expands the spill pseudos against the frame),
//! post-RA pseudo expansion (`COPY` → moves), scheduling, waitcnt insertion, emission.
//! That is the first stage of the AMDGPU pipeline that accepts a function without virtual
//! registers; everything before it (PHI elimination, two-address, `si-lower-control-flow`,
//! the register coalescer and the three allocation passes) is what chromatic replaces.
//!
//! What is written (the module docs of [`body`] and [`control`] give the rules):
//! - every original instruction as written, its virtual registers replaced by the
//!   allocated physical registers (`%7.sub1` by the register of that unit);
//! - the importer's forwarded `COPY`s and PHIs disappear; `REG_SEQUENCE` and the
//!   importer's tuple splits become `COPY`s of their parts; allocation's copies become
//!   one `COPY` per 32-bit unit (`postrapseudos` turns them into moves of any class);
//!   swaps become `V_SWAP_B32`; spills and reloads to scratch the `SI_SPILL_{S,V,A}32`
//!   pseudos on one 4-byte spill-slot stack object per slot unit; SGPR spills to VGPR
//!   lanes `V_WRITELANE_B32` / `V_READLANE_B32`, as `si-lower-sgpr-spills` writes them;
//! - the structurized control-flow pseudos lowered to EXEC arithmetic, as
//!   `si-lower-control-flow` does ([`control`]);
//! - edges the allocator split become blocks after the function's last block, ending in
//!   `S_BRANCH`; the branches into them are retargeted;
//! - each block's `liveins:` from the registers the written code reads ([`liveins`]);
//!   a register read at the entry before any write (a value undefined on some path, the
//!   VGPR that receives SGPR lanes) gets an `IMPLICIT_DEF` there, as LLVM writes for its
//!   lane VGPRs;
//! - in the header, `registers:` emptied, the spill slots under `stack:`, and
//!   `hasSpilledSGPRs` / `hasSpilledVGPRs` set.
//!
//! The AMD facts used (pseudo operand lists, EXEC lowering) and their sources are in
//! `docs/TARGETS.md`.

mod body;
mod control;
mod line;
mod liveins;

use super::parse::parse_module;
use super::MirError;
use crate::program::Program;

/// Why an allocated program could not be written as MIR.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("@{function}: cannot export: {message}")]
pub struct ExportError {
    pub function: String,
    pub message: String,
}

/// One written instruction and the register units it reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Emitted {
    pub text: String,
    pub defs: Vec<liveins::Unit>,
    pub uses: Vec<liveins::Unit>,
}

/// The MIR text of `allocated`, an allocation of the functions imported from `source`.
pub fn export(source: &str, allocated: &Program) -> Result<String, ExportError> {
    let whole = |message: String| ExportError {
        function: allocated
            .functions
            .first()
            .map_or_else(String::new, |f| f.name.clone()),
        message,
    };
    let module = parse_module(source).map_err(|e: MirError| whole(e.to_string()))?;
    if module.functions.len() != allocated.functions.len() {
        return Err(whole(format!(
            "the source has {} machine functions, the allocation {}",
            module.functions.len(),
            allocated.functions.len()
        )));
    }
    let wave = match &module.cpu {
        Some((cpu, pos)) => {
            super::classes::target_of(cpu, module.wave64_feature, *pos)
                .map_err(|e| whole(e.to_string()))?
                .1
        }
        None => return Err(whole("no target-cpu in the source".into())),
    };
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::with_capacity(source.len() * 2);
    let mut at = 0;
    for (ast, function) in module.functions.iter().zip(&allocated.functions) {
        let fail = |message: String| ExportError {
            function: function.name.clone(),
            message,
        };
        let span = body::FunctionSpan::find(&lines, ast.pos.line as usize - 1)
            .ok_or_else(|| fail("no `body:` after the function's `name:`".into()))?;
        let written = body::write_function(&lines, &span, ast, function, &allocated.target, wave)
            .map_err(fail)?;
        for l in &lines[at..span.header_start] {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(&written);
        at = span.end;
    }
    for l in &lines[at..] {
        out.push_str(l);
        out.push('\n');
    }
    Ok(out)
}
