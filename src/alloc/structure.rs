//! The shape of divergent control flow the allocator supports: structured divergence.
//!
//! GPU compilers structurize divergent control flow before register allocation (Mesa's
//! NIR is structured; LLVM AMDGPU runs `StructurizeCFG`): every divergent branch in block
//! B with arms T and E has an immediate post-dominator J (its join), the region reachable
//! from each arm without passing J or the other arm leaves only to J (a divergent loop,
//! whose latch branches back into the loop, is such a shape). Under that shape the then-side's exits reach the else-side only along the
//! linear CFG, which is what `assign` relies on to keep uniform values in place. Programs
//! with other divergent shapes are rejected with an error naming the branch, never
//! allocated wrongly.

use super::AllocError;
use crate::analysis::Analysis;
use crate::program::{Block, BranchKind, Function, Terminator};

/// Checks every divergent branch; the first unstructured one is the error.
pub fn check_structured(f: &Function, a: &Analysis) -> Result<(), AllocError> {
    for &b in a.cfg.rpo() {
        let Terminator::Branch {
            kind: BranchKind::Divergent,
            then_block,
            else_block,
            pos,
            ..
        } = f.block(b).term
        else {
            continue;
        };
        let problem = match a.pdom.ipdom(b) {
            None => Some("it has no join (no block post-dominates it)".to_string()),
            Some(join) => [(then_block, else_block), (else_block, then_block)]
                .into_iter()
                .find_map(|(arm, other)| region_problem(f, a, b, arm, other, join)),
        };
        if let Some(problem) = problem {
            return Err(AllocError::Constraint {
                function: f.name.clone(),
                block: f.block(b).name.clone(),
                pos,
                message: format!(
                    "unstructured divergent branch: {problem}; structurize the CFG first"
                ),
            });
        }
    }
    Ok(())
}

/// What is wrong with the region of `arm`, if anything.
fn region_problem(
    f: &Function,
    a: &Analysis,
    branch: Block,
    arm: Block,
    other: Block,
    join: Block,
) -> Option<String> {
    if arm == join {
        return None;
    }
    let mut seen = vec![false; f.blocks.len()];
    let mut stack = vec![arm];
    seen[arm.index()] = true;
    while let Some(x) = stack.pop() {
        if a.cfg.succs(x).is_empty() {
            return Some(format!(
                "`{}` returns inside the side starting at `{}`",
                f.block(x).name,
                f.block(arm).name
            ));
        }
        for &s in a.cfg.succs(x) {
            if s == join || s == branch {
                continue;
            }
            if s == other {
                return Some(format!(
                    "`{}` jumps from one side into the other, `{}`",
                    f.block(x).name,
                    f.block(s).name
                ));
            }
            if !seen[s.index()] {
                seen[s.index()] = true;
                stack.push(s);
            }
        }
    }
    None
}
