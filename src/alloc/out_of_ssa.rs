//! Out of SSA: phis and location mismatches become parallel copies on CFG edges.
//!
//! Sreedhar-free translation as in Hack & Goos and Mesa ACO: after assignment every phi
//! keeps its register, and on each edge `P → S` the copies are the phi arguments moved to
//! the phi registers plus every live-in value whose location at the end of `P` differs
//! from where `S` expects it (per-lane values on logical edges, uniform values on linear
//! edges). The copies of an edge go at the end of `P` when `P` ends in a `jump`, else at
//! the top of `S`, which then has `P` as its only predecessor: `prepare` split every edge
//! that has neither place before allocation. A then-side exit `X` of a divergent branch
//! has two linear successors (the else-arm, and the join when no lane takes the
//! else-side), but both expect uniform values at the branch block's locations
//! (`Divergence::anchor`), so the copies at its end serve both. Each parallel copy is
//! sequentialised with the registers busy at that point.

use super::assign::{Assigned, Boundaries, BoundaryState};
use super::parallel_copy::sequentialise;
use super::{AllocError, TEMP_SLOT};
use crate::analysis::Analysis;
use crate::program::*;
use crate::target::{ClassId, Target};
use std::collections::BTreeMap;

/// The moves gathered at one site, and the edges they serve.
type SiteMoves = (Vec<Move>, Vec<(Block, Block)>);

/// Where an edge's copies go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Site {
    End(Block),
    Start(Block),
}

/// The copies of every edge at their sites, sequentialised into `asg.func`, with
/// temporaries among the first `temps` units of each class.
pub fn lower(
    asg: Assigned,
    target: &Target,
    a: &Analysis,
    temps: &[u16],
) -> Result<Function, AllocError> {
    let sites = gather(&asg, target, a)?;
    if sites.is_empty() {
        return Ok(asg.func);
    }
    let recomputable = |v: Value| asg.recomputable[v.index()];
    let mut func = asg.func;
    let mut busy = Busy::new(target, temps);
    for (site, (moves, edges)) in sites {
        busy.fill(&func, a, site, &asg.entry);
        let held = |c, u| busy.holds(c, u);
        let insts = sequentialise(&moves, target, &held, &recomputable, TEMP_SLOT);
        let pos = func.block(edges[0].1).pos;
        let insts = insts.into_iter().map(|kind| Inst { kind, pos });
        match site {
            Site::End(b) => func.blocks[b.index()].insts.extend(insts),
            Site::Start(b) => {
                func.blocks[b.index()].insts.splice(0..0, insts);
            }
        }
    }
    Ok(func)
}

/// The moves of every edge, gathered at their sites (edge by edge, in visiting order).
fn gather(
    asg: &Assigned,
    target: &Target,
    a: &Analysis,
) -> Result<BTreeMap<Site, SiteMoves>, AllocError> {
    let mut sites: BTreeMap<Site, SiteMoves> = BTreeMap::new();
    let (mut preds, mut moves) = (Vec::new(), Vec::new());
    for &s in asg.order.iter().filter(|&&s| a.cfg.is_reachable(s)) {
        edge_preds(a, s, &mut preds);
        for &p in &preds {
            edge_moves(asg, target, a, (p, s), &mut moves);
            for &m in &moves {
                let site = site_for(&asg.func, a, (p, s), &m, target)?;
                let (moves, edges) = sites.entry(site).or_default();
                add_move(moves, m, &asg.func, p)?;
                if !edges.contains(&(p, s)) {
                    edges.push((p, s));
                }
            }
        }
    }
    Ok(sites)
}

/// Adds `m` to the moves of a site unless it is there already; two different moves into
/// one unit would be a contradiction between the edges the site serves.
fn add_move(moves: &mut Vec<Move>, m: Move, func: &Function, p: Block) -> Result<(), AllocError> {
    if moves.contains(&m) {
        return Ok(());
    }
    if moves
        .iter()
        .any(|o| super::operands::overlaps(o.dst, m.dst))
    {
        return Err(AllocError::Internal {
            function: func.name.clone(),
            message: format!(
                "the edges out of `{}` want different values in one register",
                func.block(p).name
            ),
        });
    }
    moves.push(m);
    Ok(())
}

/// Predecessors of `s` on logical or linear edges, each once, in block order, into
/// `preds`.
fn edge_preds(a: &Analysis, s: Block, preds: &mut Vec<Block>) {
    preds.clear();
    preds.extend_from_slice(a.cfg.preds(s));
    preds.extend_from_slice(a.divergence.linear.preds(s));
    preds.sort_unstable();
    preds.dedup();
    preds.retain(|p| a.cfg.is_reachable(*p));
}

fn lookup(state: &BoundaryState, v: Value) -> Option<Location> {
    state
        .binary_search_by_key(&v, |&(w, _)| w)
        .ok()
        .map(|i| state[i].1)
}

fn is_uniform(target: &Target, func: &Function, v: Value) -> bool {
    target.class(func.value(v).class).uniform
}

/// The moves the edge `p → s` needs, into `moves`: phi arguments on a logical edge, and
/// live-ins whose location differs (per-lane values on logical edges, uniform ones on
/// linear edges).
fn edge_moves(
    asg: &Assigned,
    target: &Target,
    a: &Analysis,
    (p, s): (Block, Block),
    moves: &mut Vec<Move>,
) {
    let func = &asg.func;
    let exit = asg.exit.of(p);
    let logical = a.cfg.preds(s).contains(&p);
    let linear = a.divergence.linear.preds(s).contains(&p);
    let phis = &func.block(s).phis;
    moves.clear();
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
    for &(v, dst) in asg.entry.of(s) {
        let relevant = if is_uniform(target, func, v) {
            linear
        } else {
            logical
        };
        if !relevant || phis.iter().any(|phi| phi.def.value == v) {
            continue;
        }
        if let Some(src) = lookup(exit, v) {
            moves.push(Move { dst, src, value: v });
        }
    }
    moves.retain(|m| m.dst != m.src);
}

/// The end of `p` when it ends in a jump, else the top of `s` when `p` is its only
/// predecessor on the move's CFG.
fn site_for(
    func: &Function,
    a: &Analysis,
    (p, s): (Block, Block),
    m: &Move,
    target: &Target,
) -> Result<Site, AllocError> {
    let preds = if is_uniform(target, func, m.value) {
        a.divergence.linear.preds(s)
    } else {
        a.cfg.preds(s)
    };
    if matches!(func.block(p).term, Terminator::Jump { .. }) {
        Ok(Site::End(p))
    } else if preds == [p]
        && !func
            .block(s)
            .phis
            .iter()
            .any(|phi| phi.def.loc == Some(m.dst))
    {
        Ok(Site::Start(s))
    } else {
        Err(AllocError::Internal {
            function: func.name.clone(),
            message: format!(
                "the edge `{}` → `{}` needs copies but has no place for them",
                func.block(p).name,
                func.block(s).name
            ),
        })
    }
}

/// Units holding a value after a site's copies, per class as bits (bit `u % 64` of word
/// `u / 64` for unit `u`), refilled site by site: the values live into the blocks that
/// run next (every logical and linear successor of the block whose end holds the copies,
/// or the block whose top does), and the operands of a terminator that runs after them.
/// A unit the copies only read is free once they have read it, so it may break a cycle
/// (`parallel_copy`). Units from `temps` on count as busy so that temporaries stay below.
struct Busy {
    /// Per class: the units from `temps` on, the state before any value is marked.
    empty: Vec<Vec<u64>>,
    held: Vec<Vec<u64>>,
}

impl Busy {
    fn new(target: &Target, temps: &[u16]) -> Busy {
        let empty: Vec<Vec<u64>> = target
            .class_ids()
            .map(|c: ClassId| {
                let units = usize::from(target.class(c).units);
                let mut words = vec![0u64; units.div_ceil(64)];
                for u in usize::from(temps[c.index()])..units {
                    words[u / 64] |= 1 << (u % 64);
                }
                words
            })
            .collect();
        Busy {
            held: empty.clone(),
            empty,
        }
    }

    /// The units held after the copies at `site`.
    fn fill(&mut self, func: &Function, a: &Analysis, site: Site, entry: &Boundaries) {
        for (held, empty) in self.held.iter_mut().zip(&self.empty) {
            held.copy_from_slice(empty);
        }
        match site {
            Site::End(p) => {
                for l in func.block(p).term.uses().iter().filter_map(|u| u.loc) {
                    self.mark(l);
                }
                let next = a.cfg.succs(p).iter().chain(a.divergence.linear.succs(p));
                for s in next {
                    self.mark_all(entry.of(*s));
                }
            }
            Site::Start(s) => self.mark_all(entry.of(s)),
        }
    }

    fn mark_all(&mut self, state: &BoundaryState) {
        for &(_, l) in state {
            self.mark(l);
        }
    }

    fn mark(&mut self, l: Location) {
        let Location::Reg { class, first, len } = l else {
            return;
        };
        let words = &mut self.held[class.index()];
        for u in usize::from(first)..usize::from(first) + usize::from(len) {
            if let Some(w) = words.get_mut(u / 64) {
                *w |= 1 << (u % 64);
            }
        }
    }

    /// Whether `unit` of `class` holds a value after the copies.
    fn holds(&self, class: ClassId, unit: u16) -> bool {
        let u = usize::from(unit);
        self.held[class.index()][u / 64] & (1 << (u % 64)) != 0
    }
}
