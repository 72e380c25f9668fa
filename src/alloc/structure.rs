//! The shape of divergent control flow the allocator supports: structured divergence.
//!
//! GPU compilers structurize divergent control flow before register allocation (Mesa's
//! NIR is structured; LLVM AMDGPU runs `StructurizeCFG` and gives every divergent `if` its
//! own `endif` block). The checks run on the function with its copy-less edges split
//! (`prepare`). Every divergent branch in block B with arms T and E has an immediate
//! post-dominator J (its join); the region reachable from each arm without passing J or
//! the other arm leaves only to J; the then-side loops back to B only when the else-side
//! is empty (a divergent loop's latch, whose else-arm is the join); and when neither arm
//! is J, every predecessor of J lies in one of the two sides and J is not the entry (a
//! branch nested in a side may share J). Under that shape the linear CFG of `docs/FORMAT.md` is the
//! order in which the wave runs blocks, and the paths on which it skips a side run
//! from B's end straight to E or J, which `Divergence::anchor` gives B's locations. (When
//! a then-side with a non-empty else-side loops back to B, every iteration leaves an
//! else-side pending and those run back to back, an order the linear CFG lacks.) Programs
//! with other divergent shapes are rejected with an error naming the branch, never
//! allocated wrongly.
//!
//! Whatever the shape, a uniform value must be defined on every path of the linear CFG to
//! its uses, or no allocation can be correct; such programs are rejected too.
//!
//! Only uniform values follow the linear CFG: a function without them may have any shape.
//! Without a divergent branch the linear CFG is the logical one, on which validation
//! has checked that every definition dominates its uses: such a function passes both
//! checks, and is not walked.

use super::AllocError;
use crate::analysis::divergence;
use crate::analysis::dom::DomTree;
use crate::analysis::Analysis;
use crate::program::{Block, BranchKind, Function, Pos, Terminator, Value};
use crate::target::Target;

/// Checks every divergent branch, then the uniform values on the linear CFG; the first
/// problem is the error.
/// Only uniform values see the linear CFG: a function without them (every class of an
/// NVIDIA or Intel target is per-lane) may have any divergent shape. A function without a
/// divergent branch has no branch to check, and its linear CFG is its validated logical
/// one.
pub fn check_structured(f: &Function, target: &Target, a: &Analysis) -> Result<(), AllocError> {
    if !f.values.iter().any(|v| target.class(v.class).uniform)
        || !f.blocks.iter().any(|b| b.term.is_divergent())
    {
        return Ok(());
    }
    check_branches(f, a)?;
    check_linear_dominance(f, target, a)
}

/// Every divergent branch is structured.
fn check_branches(f: &Function, a: &Analysis) -> Result<(), AllocError> {
    let mut marks = Marks::new(f);
    for b in a.cfg.rpo_all() {
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
        let problem = match a.join(b) {
            None => Some("it has no join (no block post-dominates it)".to_string()),
            Some(join) => [(then_block, else_block), (else_block, then_block)]
                .into_iter()
                .find_map(|(arm, other)| region_problem(f, a, b, (arm, other), join, &mut marks))
                .or_else(|| shared_join(f, a, b, (then_block, else_block), join, &mut marks)),
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

/// What is wrong with the region of `arm`, if anything. A then-side may loop back to the
/// branch only when the else-side is empty (a divergent loop's latch): otherwise each
/// iteration leaves an else-side pending, and the pending else-sides run one after the
/// other, an order the linear CFG has no edge for.
fn region_problem(
    f: &Function,
    a: &Analysis,
    branch: Block,
    (arm, other): (Block, Block),
    join: Block,
    marks: &mut Marks,
) -> Option<String> {
    if arm == join {
        return None;
    }
    let is_then =
        matches!(f.block(branch).term, Terminator::Branch { then_block, .. } if then_block == arm);
    let may_loop = !is_then || other == join;
    marks.clear();
    let mut stack = vec![arm];
    marks.mark(arm);
    while let Some(x) = stack.pop() {
        if a.cfg.succs(x).is_empty() {
            return Some(format!(
                "`{}` returns inside the side starting at `{}`",
                f.block(x).name,
                f.block(arm).name
            ));
        }
        for &s in a.cfg.succs(x) {
            if s == branch && !may_loop {
                return Some(format!(
                    "the then-side starting at `{}` loops back to the branch from `{}` before the join, while the else-side is not empty",
                    f.block(arm).name,
                    f.block(x).name
                ));
            }
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
            if marks.mark(s) {
                stack.push(s);
            }
        }
    }
    None
}

/// Whether the join of the branch in `branch` is reached from outside: when neither arm
/// is the join, the join's anchor (the first divergent branch with that join) must be
/// this branch or enclose it in a side, every predecessor of the join must lie in a
/// side of the anchor, and the join may not be the entry.
fn shared_join(
    f: &Function,
    a: &Analysis,
    branch: Block,
    (then_block, else_block): (Block, Block),
    join: Block,
    marks: &mut Marks,
) -> Option<String> {
    if join == then_block || join == else_block {
        return None;
    }
    if join == Block(0) {
        return Some(format!(
            "its join `{}` is the entry block",
            f.block(join).name
        ));
    }
    let owner = a.divergence.anchor(join).unwrap_or(branch);
    let sides = sides_of(f, a, owner, join, marks);
    if owner != branch && !sides.contains(&branch) {
        return Some(format!(
            "it shares its join `{}` with the branch in `{}` without lying in one of its sides",
            f.block(join).name,
            f.block(owner).name
        ));
    }
    let outsider = a.cfg.preds(join).iter().find(|p| !sides.contains(p))?;
    Some(format!(
        "its join `{}` is also reached from `{}`, outside its two sides",
        f.block(join).name,
        f.block(*outsider).name
    ))
}

/// The blocks of both sides of the divergent branch in `branch` with join `join`.
fn sides_of(
    f: &Function,
    a: &Analysis,
    branch: Block,
    join: Block,
    marks: &mut Marks,
) -> Vec<Block> {
    let Terminator::Branch {
        then_block,
        else_block,
        ..
    } = f.block(branch).term
    else {
        return Vec::new();
    };
    let mut side = |arm: Block, other: Block| {
        let region =
            divergence::then_region(&a.cfg, branch, (arm, other, Some(join)), &mut marks.stamp);
        region
            .iter()
            .for_each(|b| marks.stamp[b.index()] = u32::MAX);
        region
    };
    let mut sides = side(then_block, else_block);
    sides.extend(side(else_block, then_block));
    sides
}

/// Per-block scratch marks shared by the branches' walks, each cleared in time
/// proportional to what it marked: one allocation per function instead of one per branch.
struct Marks {
    /// [`divergence::then_region`]'s stamps, all `u32::MAX` between uses.
    stamp: Vec<u32>,
    seen: Vec<bool>,
    marked: Vec<Block>,
}

impl Marks {
    fn new(f: &Function) -> Marks {
        Marks {
            stamp: vec![u32::MAX; f.blocks.len()],
            seen: vec![false; f.blocks.len()],
            marked: Vec::new(),
        }
    }

    /// Marks `b`; false when it was marked already.
    fn mark(&mut self, b: Block) -> bool {
        if std::mem::replace(&mut self.seen[b.index()], true) {
            return false;
        }
        self.marked.push(b);
        true
    }

    fn clear(&mut self) {
        for b in self.marked.drain(..) {
            self.seen[b.index()] = false;
        }
    }
}

/// Every use of a uniform value (a phi argument: the end of its predecessor) is dominated
/// by the value's definition on the linear CFG.
///
/// Uniform values are live on the linear CFG, so a use that its definition does not
/// dominate makes the value live into a reachable block its definition does not dominate
/// (the use's block, or for a phi argument its predecessor, unless that defines it), and
/// such a block continues a path around the definition to a use. The live-in sets decide
/// it without reading the instructions; only a function that fails reads them, for the
/// first use to report.
fn check_linear_dominance(f: &Function, target: &Target, a: &Analysis) -> Result<(), AllocError> {
    let dom = DomTree::new(&a.divergence.linear);
    let bypassed = |b: Block| {
        a.liveness.live_in(b).iter().any(|&v| {
            target.class(f.value(v).class).uniform && !dom.dominates(a.liveness.def_block(v), b)
        })
    };
    if !a.divergence.linear.rpo().iter().any(|&b| bypassed(b)) {
        return Ok(());
    }
    first_bypassed_use(f, target, a, &dom)
}

/// The error for the first use, in reverse post-order of the linear CFG, of a uniform value
/// whose definition does not dominate it there.
fn first_bypassed_use(
    f: &Function,
    target: &Target,
    a: &Analysis,
    dom: &DomTree,
) -> Result<(), AllocError> {
    for &b in a.divergence.linear.rpo() {
        let bypassed = uses_at(f, b).into_iter().find(|&(v, _)| {
            let def = a.liveness.def_block(v);
            target.class(f.value(v).class).uniform && def != b && !dom.dominates(def, b)
        });
        if let Some((v, pos)) = bypassed {
            return Err(AllocError::Constraint {
                function: f.name.clone(),
                block: f.block(b).name.clone(),
                pos,
                message: format!(
                    "uniform `%{}` is not defined on every path of the linear CFG to this use (a then-region is entered around its definition); structurize the CFG first",
                    f.value(v).name
                ),
            });
        }
    }
    Ok(())
}

/// The values `b` uses, with their positions: operands, the terminator's uses, and the
/// phi arguments its successors take from it.
fn uses_at(f: &Function, b: Block) -> Vec<(Value, Pos)> {
    let block = f.block(b);
    let ops = block
        .insts
        .iter()
        .filter_map(|i| i.op())
        .flat_map(|op| op.uses());
    let mut uses: Vec<(Value, Pos)> = ops
        .chain(block.term.uses())
        .map(|u| (u.value, u.pos))
        .collect();
    for s in block.term.successors() {
        let args = f.block(s).phis.iter().flat_map(|phi| &phi.args);
        uses.extend(
            args.filter(|arg| arg.block == b)
                .map(|arg| (arg.value, arg.pos)),
        );
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function with uniform values and no divergent branch is not walked: the walks it
    /// skips find nothing in it either.
    #[test]
    fn functions_without_a_divergent_branch_pass_the_walks_they_skip() {
        let sources = [
            include_str!("../../corpus/critical_edges.chr"),
            include_str!("../../corpus/diamond_uniform.chr"),
            include_str!("../../corpus/irreducible.chr"),
            include_str!("../../corpus/multiple_functions.chr"),
            include_str!("../../corpus/nested_loops.chr"),
            include_str!("../../corpus/swap_cycle3.chr"),
        ];
        for src in sources {
            let p = crate::parse(src).expect("parses");
            for f in &p.functions {
                let (split, _) = super::super::prepare::split(f);
                let a = Analysis::new(&split, &p.target);
                assert!(!split.blocks.iter().any(|b| b.term.is_divergent()));
                assert_eq!(check_branches(&split, &a), Ok(()), "@{}", f.name);
                let walked = check_linear_dominance(&split, &p.target, &a);
                assert_eq!(walked, Ok(()), "@{}", f.name);
                assert_eq!(check_structured(&split, &p.target, &a), Ok(()));
            }
        }
    }
}
