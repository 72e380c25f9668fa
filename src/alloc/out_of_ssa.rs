//! Out of SSA: phis and location mismatches become parallel copies on CFG edges.
//!
//! Sreedhar-free translation as in Hack & Goos and Mesa ACO: after assignment every phi
//! keeps its register, and on each edge `P → S` the copies are the phi arguments moved to
//! the phi registers plus every live-in value whose location at the end of `P` differs
//! from where `S` expects it (per-lane values on logical edges, uniform values on linear
//! edges). A copy goes at the end of `P` when `P` ends in a `jump` with a single successor,
//! else at the top of `S` when `S` has a single predecessor, else on a new block that
//! splits the edge; only the edges that need copies are split. Each parallel copy is then
//! sequentialised with the registers busy at that point.

use super::assign::{Assigned, BoundaryState};
use super::parallel_copy::sequentialise;
use super::{AllocError, TEMP_SLOT};
use crate::analysis::{cfg, Analysis};
use crate::program::*;
use crate::target::{ClassId, Target};
use std::collections::BTreeMap;

/// The moves gathered at one site, and the edges they serve (the first one gives the
/// registers busy around the copy).
type SiteMoves = (Vec<Move>, Vec<(Block, Block)>);

/// Where an edge's copies go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Site {
    End(Block),
    Start(Block),
    Split(Block, Block),
}

pub fn lower(
    asg: Assigned,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Result<Function, AllocError> {
    let Assigned {
        mut func,
        entry,
        exit,
        order,
    } = asg;
    let mut sites: BTreeMap<Site, SiteMoves> = BTreeMap::new();
    let reachable: Vec<Block> = order
        .iter()
        .copied()
        .filter(|&b| a.cfg.is_reachable(b))
        .collect();
    for &s in &reachable {
        for p in edge_preds(a, s) {
            let (per_lane, uniform) = edge_moves(
                &func,
                target,
                a,
                (p, s),
                &entry[s.index()],
                &exit[p.index()],
            );
            for (moves, is_uniform) in [(per_lane, false), (uniform, true)] {
                if moves.is_empty() {
                    continue;
                }
                let site = site_for(&func, a, (p, s), is_uniform, carries_phi(&moves, &func, s))
                    .ok_or_else(|| unsupported_edge(&func, p, s))?;
                let entry = sites.entry(site).or_default();
                entry.0.extend(moves);
                entry.1.push((p, s));
            }
        }
    }
    let mut split: BTreeMap<(Block, Block), Block> = BTreeMap::new();
    for (site, (moves, edges)) in sites {
        let (p, s) = edges[0];
        let busy = busy_units(target, budget, &exit[p.index()], &entry[s.index()]);
        let insts = sequentialise(
            &moves,
            target,
            &|c, u| busy[c.index()][usize::from(u)],
            TEMP_SLOT,
        );
        let pos = func.block(s).pos;
        let insts = insts.into_iter().map(|kind| Inst { kind, pos });
        match site {
            Site::End(b) => func.blocks[b.index()].insts.extend(insts),
            Site::Start(b) => {
                func.blocks[b.index()].insts.splice(0..0, insts);
            }
            Site::Split(from, to) => {
                let n = *split
                    .entry((from, to))
                    .or_insert_with(|| cfg::split_edge(&mut func, from, to));
                func.blocks[n.index()].insts.extend(insts);
            }
        }
    }
    Ok(func)
}

/// Predecessors of `s` on logical or linear edges, each once, in block order.
fn edge_preds(a: &Analysis, s: Block) -> Vec<Block> {
    let mut preds: Vec<Block> = a.cfg.preds(s).to_vec();
    preds.extend(a.divergence.linear.preds(s));
    preds.sort();
    preds.dedup();
    preds.retain(|p| a.cfg.is_reachable(*p));
    preds
}

fn lookup(state: &BoundaryState, v: Value) -> Option<Location> {
    state
        .binary_search_by_key(&v, |&(w, _)| w)
        .ok()
        .map(|i| state[i].1)
}

/// The per-lane and the uniform moves the edge `p → s` needs.
fn edge_moves(
    func: &Function,
    target: &Target,
    a: &Analysis,
    (p, s): (Block, Block),
    entry: &BoundaryState,
    exit: &BoundaryState,
) -> (Vec<Move>, Vec<Move>) {
    let logical = a.cfg.preds(s).contains(&p);
    let linear = a.divergence.linear.preds(s).contains(&p);
    let uniform = |v: Value| target.class(func.value(v).class).uniform;
    let mut moves: Vec<Move> = Vec::new();
    let phis = &func.block(s).phis;
    if logical {
        for phi in phis {
            let arg = phi.args.iter().find(|arg| arg.block == p);
            if let (Some(arg), Some(dst)) = (arg, phi.def.loc) {
                if let Some(src) = lookup(exit, arg.value) {
                    moves.push(Move {
                        dst,
                        src,
                        value: arg.value,
                    });
                }
            }
        }
    }
    for &(v, dst) in entry {
        let relevant = if uniform(v) { linear } else { logical };
        if !relevant || phis.iter().any(|phi| phi.def.value == v) {
            continue;
        }
        if let Some(src) = lookup(exit, v) {
            moves.push(Move { dst, src, value: v });
        }
    }
    moves.retain(|m| m.dst != m.src);
    moves.into_iter().partition(|m| !uniform(m.value))
}

/// Where the copies of edge `p → s` go. Copies that fill phi registers must run before
/// `s` is entered (a phi is defined at the block's entry), so they never go at its top.
fn site_for(
    func: &Function,
    a: &Analysis,
    (p, s): (Block, Block),
    uniform: bool,
    phi_copies: bool,
) -> Option<Site> {
    let graph = if uniform {
        &a.divergence.linear
    } else {
        &a.cfg
    };
    let jumps = matches!(func.block(p).term, Terminator::Jump { .. });
    if jumps && graph.succs(p).len() == 1 {
        Some(Site::End(p))
    } else if graph.preds(s).len() == 1 && !phi_copies {
        Some(Site::Start(s))
    } else if a.cfg.preds(s).contains(&p) {
        Some(Site::Split(p, s))
    } else {
        None
    }
}

/// Whether some of `moves` fill a phi register of `s`.
fn carries_phi(moves: &[Move], func: &Function, s: Block) -> bool {
    let phi_locs: Vec<Location> = func
        .block(s)
        .phis
        .iter()
        .filter_map(|phi| phi.def.loc)
        .collect();
    moves.iter().any(|m| phi_locs.contains(&m.dst))
}

fn unsupported_edge(func: &Function, p: Block, s: Block) -> AllocError {
    AllocError::Constraint {
        function: func.name.clone(),
        block: func.block(p).name.clone(),
        pos: func.block(p).term.pos(),
        message: format!(
            "uniform values would need copies on the linear edge `{}` → `{}`, which has no place for them",
            func.block(p).name,
            func.block(s).name
        ),
    }
}

/// Units holding a value on either side of an edge, per class; units outside the budget
/// count as busy so that temporaries stay inside it.
fn busy_units(
    target: &Target,
    budget: &[u16],
    exit: &BoundaryState,
    entry: &BoundaryState,
) -> Vec<Vec<bool>> {
    let mut busy: Vec<Vec<bool>> = target
        .class_ids()
        .map(|c: ClassId| {
            let units = usize::from(target.class(c).units);
            (0..units)
                .map(|u| u >= usize::from(budget[c.index()]))
                .collect()
        })
        .collect();
    for &(_, l) in exit.iter().chain(entry) {
        if let Location::Reg { class, first, len } = l {
            for u in first..first + len {
                if let Some(b) = busy[class.index()].get_mut(usize::from(u)) {
                    *b = true;
                }
            }
        }
    }
    busy
}
