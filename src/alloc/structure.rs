//! The shape of divergent control flow the allocator supports: structured divergence.
//!
//! GPU compilers structurize divergent control flow before register allocation (Mesa's
//! NIR is structured; LLVM AMDGPU runs `StructurizeCFG`): every divergent branch in block
//! B with arms T and E has an immediate post-dominator J (its join), the region reachable
//! from each arm without passing J or the other arm leaves only to J, and the then-side
//! loops back to B only when the else-side is empty (a divergent loop's latch, whose
//! else-arm is the join). Under that shape the linear CFG of `docs/FORMAT.md` is the order
//! in which the wave runs blocks, which is what `assign` relies on to keep uniform values
//! in place. (When a then-side with a non-empty else-side loops back to B, every iteration
//! leaves an else-side pending and those run back to back, an order the linear CFG lacks:
//! the verifier would accept allocations the interpreter shows wrong.) Programs with other
//! divergent shapes are rejected with an error naming the branch, never allocated wrongly.
//!
//! Whatever the shape, a uniform value must be defined on every path of the linear CFG to
//! its uses, or no allocation can be correct; such programs are rejected too.
//!
//! Out of SSA may split edges; `split_changes` checks that the linear CFG of the result is
//! the original one up to the new blocks. `check_else_arm_phis` checks that the then-side
//! of a divergent branch leaves the else-arm's uniform phis in place.

use super::stats::{accesses, overlaps};
use super::AllocError;
use crate::analysis::cfg::Graph;
use crate::analysis::divergence::{self, Divergence};
use crate::analysis::dom::{DomTree, PostDomTree};
use crate::analysis::Analysis;
use crate::program::{Block, BlockData, BranchKind, Function, Location, Pos, Terminator, Value};
use crate::target::Target;

/// Checks every divergent branch, then the uniform values on the linear CFG; the first
/// problem is the error.
/// Only uniform values see the linear CFG: a function without them (every class of an
/// NVIDIA or Intel target is per-lane) may have any divergent shape.
pub fn check_structured(f: &Function, target: &Target, a: &Analysis) -> Result<(), AllocError> {
    if !f.values.iter().any(|v| target.class(v.class).uniform) {
        return Ok(());
    }
    check_branches(f, a)?;
    check_linear_dominance(f, target, a)
}

/// Every divergent branch is structured.
fn check_branches(f: &Function, a: &Analysis) -> Result<(), AllocError> {
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
                .find_map(|(arm, other)| region_problem(f, a, b, (arm, other), join)),
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
) -> Option<String> {
    if arm == join {
        return None;
    }
    let is_then =
        matches!(f.block(branch).term, Terminator::Branch { then_block, .. } if then_block == arm);
    let may_loop = !is_then || other == join;
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
            if !seen[s.index()] {
                seen[s.index()] = true;
                stack.push(s);
            }
        }
    }
    None
}

/// Every use of a uniform value (a phi argument: the end of its predecessor) is dominated
/// by the value's definition on the linear CFG.
fn check_linear_dominance(f: &Function, target: &Target, a: &Analysis) -> Result<(), AllocError> {
    let dom = DomTree::new(&a.divergence.linear);
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

/// A block added to split the edge `edge`; `uniform`: whether it holds copies of uniform
/// values.
#[derive(Clone, Copy, Debug)]
pub struct SplitBlock {
    pub block: Block,
    pub edge: (Block, Block),
    pub uniform: bool,
}

/// Edge splitting must leave the linear CFG as it was, up to the new blocks: a block with
/// copies of uniform values must lie only on its edge (linear predecessor and successor
/// the edge's ends), and, looking through the other new blocks (which touch no uniform
/// register), every path of the new linear CFG between original blocks must be an
/// original linear edge. Uniform values then see the paths they were allocated for, or
/// fewer. Splitting can break this: a new arm of a divergent branch can turn an if-then
/// into an if-then-else or become an exit of another branch's then-region. Returns, for
/// each offending split block, its edge's source and whether the offence is its uniform
/// copies (`true`) or its place in the graph (`false`), so the caller can put those copies
/// elsewhere.
pub fn split_changes(a: &Analysis, g: &Function, splits: &[SplitBlock]) -> Vec<(Block, bool)> {
    let cfg = Graph::of_function(g);
    let pdom = PostDomTree::new(g, &cfg);
    let linear = Divergence::new(g, &cfg, &pdom).linear;
    let split_of = |b: Block| splits.iter().find(|n| n.block == b);
    let mut blamed = Vec::new();
    for n in splits.iter().filter(|n| n.uniform) {
        let (p, s) = n.edge;
        if linear.preds(n.block) != [p] || linear.succs(n.block) != [s] {
            blamed.push((p, true));
        }
    }
    for x in (0..a.cfg.len() as u32).map(Block) {
        for &d in linear.succs(x) {
            let Some(n) = split_of(d).filter(|n| !n.uniform) else {
                continue;
            };
            let reached = through_split_blocks(&linear, d, &split_of);
            let fits = |y: Block| match split_of(y) {
                Some(m) => m.edge.0 == x,
                None => a.divergence.linear.succs(x).contains(&y),
            };
            if !reached.into_iter().all(fits) {
                blamed.push((n.edge.0, false));
            }
        }
    }
    blamed.sort();
    blamed.dedup();
    blamed
}

/// The blocks reached from `start` (a split block without uniform copies) that are original
/// blocks or split blocks with uniform copies, passing only through the other split blocks.
fn through_split_blocks<'s>(
    linear: &Graph,
    start: Block,
    split_of: &dyn Fn(Block) -> Option<&'s SplitBlock>,
) -> Vec<Block> {
    let mut seen = vec![false; linear.len()];
    let mut stack = vec![start];
    let mut reached = Vec::new();
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b.index()], true) {
            continue;
        }
        match split_of(b) {
            Some(n) if !n.uniform => stack.extend(linear.succs(b)),
            _ => reached.push(b),
        }
    }
    reached
}

/// Checks the allocated function `g`: a uniform phi of a divergent branch's else-arm keeps
/// the argument of the branch in its location across the whole then-region.
///
/// On the linear CFG the then-region's exits fall into the else-arm, and those edges carry
/// the phi arguments of the branch block (`docs/FORMAT.md`): out of SSA puts the uniform
/// phi copies of the else-edge before the branch (`out_of_ssa`, a split block there would
/// run after the then-side), so the phi's location must survive the then-side. Liveness
/// does not see that demand (the argument's use is at the end of the branch block, and
/// the phi is live only from the else-arm on), so assignment and out of SSA may write
/// the location there: an instruction, a copy moving a value back to where the
/// then-region expects it. Such an allocation is rejected with an error at the branch
/// (the caller retries with a tighter budget), never returned.
pub fn check_else_arm_phis(g: &Function, target: &Target) -> Result<(), AllocError> {
    let cfg = Graph::of_function(g);
    let pdom = PostDomTree::new(g, &cfg);
    let mut stamp = vec![u32::MAX; cfg.len()];
    for &p in cfg.rpo() {
        let Terminator::Branch {
            kind: BranchKind::Divergent,
            then_block,
            else_block,
            ..
        } = g.block(p).term
        else {
            continue;
        };
        let join = pdom.ipdom(p);
        if join == Some(then_block) || join == Some(else_block) {
            continue;
        }
        let held = else_arm_phi_locations(g, target, p, else_block);
        if held.is_empty() {
            continue;
        }
        let region = divergence::then_region(&cfg, p, (then_block, else_block, join), &mut stamp);
        for x in region {
            if let Some((phi, at)) = overwritten_in(g.block(x), &held) {
                return Err(AllocError::Constraint {
                    function: g.name.clone(),
                    block: g.block(p).name.clone(),
                    pos: g.block(p).term.pos(),
                    message: format!(
                        "the uniform phi %{} must hold its argument from this branch in {} through the then-side, but `{}` writes there",
                        g.value(phi).name,
                        crate::print::location(target, at),
                        g.block(x).name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The register locations of the uniform phis the else-arm `e` of the branch in `p` must
/// find holding their arguments: the phis of `e` taking one from `p` and, when `e` only
/// jumps on (an edge out of SSA split, whose uniform copies went before the branch) and
/// writes none of them, the phis of its successor taking one from `e`.
fn else_arm_phi_locations(
    g: &Function,
    target: &Target,
    p: Block,
    e: Block,
) -> Vec<(Value, Location)> {
    let mut held = uniform_phi_locations(g, target, p, e);
    if let Terminator::Jump { target: s, .. } = g.block(e).term {
        let next = uniform_phi_locations(g, target, e, s);
        if overwritten_in(g.block(e), &next).is_none() {
            held.extend(next);
        }
    }
    held
}

/// The register locations of the uniform phis of `s` that take an argument from `p`.
fn uniform_phi_locations(
    g: &Function,
    target: &Target,
    p: Block,
    s: Block,
) -> Vec<(Value, Location)> {
    g.block(s)
        .phis
        .iter()
        .filter(|phi| target.class(g.value(phi.def.value).class).uniform)
        .filter(|phi| phi.args.iter().any(|arg| arg.block == p))
        .filter_map(|phi| Some((phi.def.value, phi.def.loc?)))
        .collect()
}

/// The first of `held` that a phi or instruction of `block` writes.
fn overwritten_in(block: &BlockData, held: &[(Value, Location)]) -> Option<(Value, Location)> {
    let phi_writes = block.phis.iter().filter_map(|phi| phi.def.loc);
    let inst_writes = block.insts.iter().flat_map(|i| accesses(i).1);
    phi_writes
        .chain(inst_writes)
        .find_map(|w| held.iter().copied().find(|&(_, l)| overlaps(w, l)))
}
