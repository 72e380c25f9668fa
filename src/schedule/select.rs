//! Phis of constants over a two-way branch, recomputed as selects where they are read.
//!
//! A compiler that branches to pick a set of constants — CUDA's `erff` picks one of two
//! polynomials by `|x| >= 0.8` and Triton inlines it per element — leaves, after SSA
//! construction, one phi per coefficient whose arguments are all constants, each live from
//! the join to its use. ptxas holds none of them: it reads the constant at the use,
//! selected by the branch's predicate (`selp`, or an immediate in each arm). The phi's
//! value is a pure function of the predicate: where the predicate still holds the value
//! that decided the incoming edge, `select(p, c_then, c_else)` recomputes it (Briggs,
//! Cooper & Torczon, "Rematerialization", PLDI 1992, recompute a value from operands that
//! are at hand; here the operand is the branch's condition).
//!
//! A phi of block `J` qualifies ([`arms`]) when `J` has two predecessors, the block `B`
//! that immediately dominates `J` ends with a branch on `p` to two different blocks, each
//! predecessor is reached from `B` along one side only (the predecessor is `B` itself with
//! `J` one target, or it is reached from exactly one target without passing `B` again),
//! the two sides differ, and each argument is a constant operation (a `remat` operation
//! whose one operand is an immediate). The target must have a select writing the phi's
//! class under the condition's class ([`Target::select_opcode`]). `p` is an SSA value
//! whose definition dominates `B`, so between the last run of `B` and any point `J`
//! dominates it cannot be defined again, and it selects the argument of the edge taken
//! (`docs/FORMAT.md`, "Selects of phis", states the rule the verifier checks).
//!
//! [`rematerialise`] replaces such a phi by a select operation defining the phi's own value,
//! placed before its first reading in `J` (or at the end of `J` when `J` does not read
//! it), where `p` is live anyway, so it adds no predicate pressure; phis read by another
//! phi or a terminator stay. The select is a cheap pure operation like any other, so the
//! scheduler moves it and [`super::remat`] and [`super::across`] copy it next to later
//! readings. After allocation [`Remats::fold`] writes each select and each copy of it as a
//! `remat` of the phi reading `p`; the phi's constant arguments remain, unread.

use super::remat::Remats;
use crate::analysis::cfg::Graph;
use crate::analysis::dom::DomTree;
use crate::analysis::Analysis;
use crate::program::{
    Block, Def, Effect, Function, Inst, InstKind, Op, Operand, Phi, RegAccesses, Terminator, Use,
    Value,
};
use crate::target::Target;
use smallvec::smallvec;

/// A phi a select recomputes: the condition of the branch that chose its incoming edge and
/// the constant arguments of the edges on its then-side and else-side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arms {
    pub cond: Value,
    pub then_value: Value,
    pub else_value: Value,
}

/// Which target of a branch an edge into the join was reached from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Then,
    Else,
}

/// The arms of `phi` of block `join`, if a select recomputes it (the module's rule).
pub fn arms(f: &Function, cfg: &Graph, dom: &DomTree, join: Block, phi: &Phi) -> Option<Arms> {
    let branch = dom.idom(join)?;
    let Terminator::Branch {
        cond,
        then_block,
        else_block,
        ..
    } = f.blocks[branch.index()].term
    else {
        return None;
    };
    if then_block == else_block || phi.args.len() != 2 || cfg.preds(join).len() != 2 {
        return None;
    }
    if !phi.args.iter().all(|a| is_constant(f, a.value)) {
        return None;
    }
    let reach = |start: Block| reachable_avoiding(cfg, start, branch);
    let (from_then, from_else) = (reach(then_block), reach(else_block));
    let side = |pred: Block| -> Option<Side> {
        let (t, e) = if pred == branch {
            (then_block == join, else_block == join)
        } else {
            (from_then[pred.index()], from_else[pred.index()])
        };
        match (t, e) {
            (true, false) => Some(Side::Then),
            (false, true) => Some(Side::Else),
            _ => None,
        }
    };
    let [a, b] = [&phi.args[0], &phi.args[1]];
    match (side(a.block)?, side(b.block)?) {
        (Side::Then, Side::Else) => Some(Arms {
            cond: cond.value,
            then_value: a.value,
            else_value: b.value,
        }),
        (Side::Else, Side::Then) => Some(Arms {
            cond: cond.value,
            then_value: b.value,
            else_value: a.value,
        }),
        _ => None,
    }
}

/// The immediate a constant operation defining `v` writes, if one does.
pub fn constant(f: &Function, v: Value) -> Option<i64> {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(Inst::op)
        .find(|op| op.defs.iter().any(|d| d.value == v))
        .filter(|op| op.remat && op.defs.len() == 1)
        .and_then(|op| match op.operands.as_slice() {
            [Operand::Imm(x)] => Some(x.get()),
            _ => None,
        })
}

fn is_constant(f: &Function, v: Value) -> bool {
    constant(f, v).is_some()
}

/// Blocks reached from `start` by paths that do not enter `avoid` (`start` too, unless it
/// is `avoid`).
fn reachable_avoiding(cfg: &Graph, start: Block, avoid: Block) -> Vec<bool> {
    let mut seen = vec![false; cfg.len()];
    if start == avoid {
        return seen;
    }
    seen[start.index()] = true;
    let mut stack = vec![start];
    while let Some(b) = stack.pop() {
        for &s in cfg.succs(b) {
            if s != avoid && !seen[s.index()] {
                seen[s.index()] = true;
                stack.push(s);
            }
        }
    }
    seen
}

/// One phi to replace: its block and index, its select, and where the select goes.
struct Selected {
    join: usize,
    phi: usize,
    op: Op,
    at: usize,
}

/// Replaces every phi a select recomputes, where the target has the select and the
/// condition is live at the select's place anyway; records the selects in `remats`.
/// Returns the function and its analysis (recomputed if anything changed).
pub fn rematerialise(
    f: &Function,
    analysis: Analysis,
    target: &Target,
    remats: &mut Remats,
) -> (Function, Analysis) {
    let mut chosen = Vec::new();
    for j in 0..f.blocks.len() {
        for p in 0..f.blocks[j].phis.len() {
            chosen.extend(select_for(f, &analysis, target, j, p));
        }
    }
    if chosen.is_empty() {
        return (f.clone(), analysis);
    }
    let mut func = f.clone();
    chosen.sort_by_key(|s| std::cmp::Reverse((s.join, s.phi)));
    for s in &chosen {
        func.blocks[s.join].phis.remove(s.phi);
    }
    chosen.sort_by_key(|s| std::cmp::Reverse((s.join, s.at, s.phi)));
    for s in chosen {
        remats.note_select(s.op.defs[0].value);
        let pos = s.op.defs[0].pos;
        let inst = Inst {
            kind: InstKind::Op(s.op),
            pos,
        };
        func.blocks[s.join].insts.insert(s.at, inst);
    }
    let analysis = Analysis::new(&func, target);
    (func, analysis)
}

/// The select replacing phi `p` of block `j`, if it qualifies.
fn select_for(
    f: &Function,
    analysis: &Analysis,
    target: &Target,
    j: usize,
    p: usize,
) -> Option<Selected> {
    let phi = &f.blocks[j].phis[p];
    let join = Block(j as u32);
    let arms = arms(f, &analysis.cfg, &analysis.dom, join, phi)?;
    let x = phi.def.value;
    let opcode = target.select_opcode(f.value(x).class, f.value(arms.cond).class)?;
    let at = place(f, j, x)?;
    let block = &f.blocks[j];
    let cond_live = analysis.liveness.live_out(join).contains(&arms.cond)
        || block.term.uses().iter().any(|u| u.value == arms.cond)
        || block.insts[at..]
            .iter()
            .filter_map(Inst::op)
            .any(|op| op.uses().any(|u| u.value == arms.cond));
    cond_live.then(|| Selected {
        join: j,
        phi: p,
        op: Op {
            opcode: opcode.into(),
            defs: smallvec![Def::new(x, phi.pos)],
            operands: smallvec![Operand::Value(Use {
                value: arms.cond,
                fixed: None,
                loc: None,
                pos: phi.pos,
            })],
            effect: Effect::None,
            regs: RegAccesses::default(),
            remat: false,
        },
        at,
    })
}

/// Where the select of `x` (a phi of block `j`) goes: before the first operation of `j`
/// reading it, else at the end of `j`; `None` when a phi or a terminator reads `x`.
fn place(f: &Function, j: usize, x: Value) -> Option<usize> {
    for b in &f.blocks {
        let in_phi = b.phis.iter().flat_map(|p| &p.args).any(|a| a.value == x);
        if in_phi || b.term.uses().iter().any(|u| u.value == x) {
            return None;
        }
    }
    let block = &f.blocks[j];
    let first = block
        .insts
        .iter()
        .position(|i| i.op().is_some_and(|op| op.uses().any(|u| u.value == x)));
    Some(first.unwrap_or(block.insts.len()))
}
