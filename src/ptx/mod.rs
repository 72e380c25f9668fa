//! PTX import and export: NVIDIA kernels as ordinary programs of the `sm_70` to `sm_120`
//! targets, and allocated programs back as PTX that `ptxas` assembles.
//!
//! Import, one stage per module:
//! - [`lexer`], [`parse`] → [`ast`]: a focused PTX parser with positioned errors;
//! - [`lower`] (with the ISA rules of [`isa`]) → [`cfg`]: statements as register groups,
//!   basic blocks and branches (`bra` → `branch divergent`, `bra.uni` → `branch uniform`);
//! - [`wgmma`]: the accumulators each `wgmma.wait_group` waits for;
//! - [`ssa`]: pruned SSA over the PTX registers;
//! - [`cleanup`], [`tuples`]: trivial phis, dead helpers, tuples that were split and put back;
//! - [`constants`] (with the table of [`operands`]): constants at their uses, in the
//!   instruction (no register) where SASS can read them so, else rematerialised next to it;
//! - [`addresses`]: `w + c` used only as address bases folds into the addresses' offsets.
//!
//! Export ([`export`]) rewrites the original text: registers renamed to the allocated
//! ones, declarations replaced, and the copies, spills and reloads of the allocation
//! written as PTX. `docs/PTX.md` lists the PTX facts the code relies on and their sources.

mod addresses;
pub mod ast;
pub mod cfg;
mod cleanup;
mod constants;
pub mod export;
pub mod ir;
pub mod isa;
mod lexer;
pub mod lower;
pub mod operands;
pub mod parse;
pub mod ssa;
mod tuples;
mod wgmma;

use crate::program::{Function, Pos, Program};
use crate::target::Target;
use ast::Module;
use ir::{FunctionMap, IrFunction, Origin, Site};

/// A malformed or unsupported PTX input: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct PtxError {
    pub pos: Pos,
    pub message: String,
}

/// An imported module: the program, and what export needs to write it back as PTX.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub program: Program,
    pub module: ModuleMap,
}

/// The parsed module and, per program function, where its parts come from.
#[derive(Clone, Debug, PartialEq)]
pub struct ModuleMap {
    pub ast: Module,
    pub functions: Vec<FunctionMap>,
}

/// The built-in target of a `.target` architecture: the model of its compute capability
/// (`docs/TARGETS.md`), with any `a`/`f` suffix ignored: `sm_70`/`sm_72` → `sm_70`,
/// `sm_75`, `sm_80`, `sm_86`/`sm_87`/`sm_89` → `sm_86`, `sm_90`, `sm_100`/`sm_103` →
/// `sm_100`, `sm_120`/`sm_121` → `sm_120`.
pub fn target_of(arch: &str, pos: Pos) -> Result<Target, PtxError> {
    let number: Option<u32> = arch
        .strip_prefix("sm_")
        .map(|n| n.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
        .and_then(|n| n.parse().ok());
    let name = match number {
        Some(70 | 72) => "sm_70",
        Some(75) => "sm_75",
        Some(80) => "sm_80",
        Some(86 | 87 | 89) => "sm_86",
        Some(90) => "sm_90",
        Some(100 | 103) => "sm_100",
        Some(120 | 121) => "sm_120",
        _ => {
            return Err(PtxError {
                pos,
                message: format!(
                    "unsupported target `{arch}` (sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, \
                     sm_89, sm_90, sm_100, sm_103, sm_120 and sm_121 are)"
                ),
            })
        }
    };
    Target::builtin(name).map_err(|e| PtxError {
        pos,
        message: e.to_string(),
    })
}

/// Imports a PTX module.
pub fn import(src: &str) -> Result<Imported, PtxError> {
    let ast = parse::parse_module(src)?;
    let target = target_of(&ast.arch, ast.arch_pos)?;
    reject_duplicate_names(&ast.functions)?;
    let mut functions = Vec::with_capacity(ast.functions.len());
    let mut maps = Vec::with_capacity(ast.functions.len());
    for (i, f) in ast.functions.iter().enumerate() {
        let (function, map) = import_function(f, i, &target)?;
        functions.push(function);
        maps.push(map);
    }
    Ok(Imported {
        program: Program { target, functions },
        module: ModuleMap {
            ast,
            functions: maps,
        },
    })
}

/// A module defines each function once (ptxas refuses a second definition), as the
/// printed program must.
fn reject_duplicate_names(functions: &[ast::FunctionAst]) -> Result<(), PtxError> {
    let mut seen = std::collections::HashSet::new();
    match functions.iter().find(|f| !seen.insert(f.name.as_str())) {
        Some(f) => Err(PtxError {
            pos: f.pos,
            message: format!("`{}` is defined a second time", f.name),
        }),
        None => Ok(()),
    }
}

fn import_function(
    f: &ast::FunctionAst,
    index: usize,
    target: &Target,
) -> Result<(Function, FunctionMap), PtxError> {
    let mut blocks = cfg::blocks(f)?;
    wgmma::add_wait_operands(&mut blocks);
    let mut ir = ssa::build(f, &blocks, target)?;
    simplify(&mut ir);
    let kept = constants::place(&mut ir, f);
    cleanup::remove_dead(&mut ir);
    while addresses::fold(&mut ir, f) {
        cleanup::remove_dead(&mut ir);
    }
    pin_phis(&mut ir);
    check_pinned_reads(&ir)?;
    Ok(ir.finish(index, kept))
}

fn simplify(ir: &mut IrFunction) {
    loop {
        let changed =
            cleanup::remove_trivial_phis(ir) | tuples::simplify(ir) | cleanup::remove_dead(ir);
        if !changed {
            return;
        }
    }
}

/// A phi with a pinned argument is pinned: the value stays in flight through it.
fn pin_phis(ir: &mut IrFunction) {
    loop {
        let mut changed = false;
        for bi in 0..ir.blocks.len() {
            for pi in 0..ir.blocks[bi].phis.len() {
                let phi = &ir.blocks[bi].phis[pi];
                let me = phi.def.value.index();
                if !ir.values[me].pinned
                    && phi.args.iter().any(|a| ir.values[a.value.index()].pinned)
                {
                    ir.values[me].pinned = true;
                    changed = true;
                }
            }
        }
        if !changed {
            return;
        }
    }
}

/// A pinned tuple may only be read whole: taking it apart would read registers in flight.
fn check_pinned_reads(ir: &IrFunction) -> Result<(), PtxError> {
    let sites = ir.def_sites();
    for b in &ir.blocks {
        for i in b
            .insts
            .iter()
            .filter(|i| matches!(i.origin, Origin::Split | Origin::Collect))
        {
            if let Some(u) = i.op.uses().find(|u| ir.values[u.value.index()].pinned) {
                let pos = match sites[u.value.index()] {
                    Some(Site::Inst { block, inst, .. }) => ir.blocks[block].insts[inst].pos,
                    _ => i.pos,
                };
                return Err(PtxError {
                    pos,
                    message: "unsupported: a `wgmma` accumulator in flight is read element by element before a `wgmma.wait_group` retires it".into(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
