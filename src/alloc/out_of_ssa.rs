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
//!
//! A block splitting an edge must not change the linear CFG that uniform values were
//! allocated for, nor put uniform copies on paths other than its edge. Where it would (an
//! edge out of a divergent branch, or out of a then-region), the copies of that kind of
//! every edge out of `P` go at the end of `P`, before its terminator, when one parallel
//! copy there satisfies every successor and keeps the terminator's operands; otherwise the
//! program is rejected. After placement `structure::split_changes` checks the new linear
//! CFG, and copies of the split blocks it names are hoisted the same way, until none is.

use super::assign::{Assigned, BoundaryState};
use super::parallel_copy::sequentialise;
use super::structure::{self, SplitBlock};
use super::{AllocError, TEMP_SLOT};
use crate::analysis::{cfg, Analysis};
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
    Split(Block, Block),
}

/// The moves of one edge `(p, s)`: per-lane and uniform.
struct EdgeMoves {
    edge: (Block, Block),
    per_lane: Vec<Move>,
    uniform: Vec<Move>,
}

pub fn lower(
    asg: Assigned,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Result<Function, AllocError> {
    let edges: Vec<EdgeMoves> = asg
        .order
        .iter()
        .copied()
        .filter(|&s| a.cfg.is_reachable(s))
        .flat_map(|s| edge_preds(a, s).into_iter().map(move |p| (p, s)))
        .map(|(p, s)| {
            let (per_lane, uniform) = edge_moves(
                &asg.func,
                target,
                a,
                (p, s),
                &asg.entry[s.index()],
                &asg.exit[p.index()],
            );
            EdgeMoves {
                edge: (p, s),
                per_lane,
                uniform,
            }
        })
        .collect();
    let mut hoisted = hoisted_blocks(&asg.func, a, &edges);
    loop {
        let sites = gather_sites(&asg, target, a, &edges, &hoisted)?;
        let (func, splits) = place(&asg, target, budget, sites);
        let mut blamed = structure::split_changes(a, &func, &splits);
        blamed.retain(|b| !hoisted.contains(b));
        if blamed.is_empty() {
            return Ok(func);
        }
        hoisted.extend(blamed);
        hoisted.sort();
    }
}

/// Sequentialises each site's copies into a copy of the function, splitting edges where
/// needed; returns the function and the blocks that split edges.
fn place(
    asg: &Assigned,
    target: &Target,
    budget: &[u16],
    sites: BTreeMap<Site, SiteMoves>,
) -> (Function, Vec<SplitBlock>) {
    let mut func = asg.func.clone();
    let mut splits: Vec<SplitBlock> = Vec::new();
    let busy: Vec<Vec<Vec<bool>>> = sites
        .iter()
        .map(|(&site, (_, edges))| {
            let hoisted = match site {
                Site::Start(_) => sites.get(&Site::End(edges[0].0)),
                _ => None,
            };
            let extra: Vec<Location> =
                hoisted.map_or(Vec::new(), |m| m.0.iter().map(|m| m.dst).collect());
            busy_units(
                &func,
                target,
                budget,
                (site, edges),
                &extra,
                (&asg.entry, &asg.exit),
            )
        })
        .collect();
    for ((site, (moves, edges)), busy) in sites.into_iter().zip(busy) {
        let insts = sequentialise(
            &moves,
            target,
            &|c, u| busy[c.index()][usize::from(u)],
            TEMP_SLOT,
        );
        let pos = func.block(edges[0].1).pos;
        let insts = insts.into_iter().map(|kind| Inst { kind, pos });
        match site {
            Site::End(b) => func.blocks[b.index()].insts.extend(insts),
            Site::Start(b) => {
                func.blocks[b.index()].insts.splice(0..0, insts);
            }
            Site::Split(from, to) => {
                let uniform = moves
                    .iter()
                    .any(|m| target.class(func.value(m.value).class).uniform);
                let block = cfg::split_edge(&mut func, from, to);
                let edge = (from, to);
                splits.push(SplitBlock {
                    block,
                    edge,
                    uniform,
                });
                func.blocks[block.index()].insts.extend(insts);
            }
        }
    }
    (func, splits)
}

/// Blocks whose outgoing copies of one kind (uniform: `true`, per-lane: `false`) all go at
/// their end, before the terminator, because some edge's copies of that kind have no
/// safe place on it (`split_is_safe`). Hoisting one edge's copies hoists all of the
/// block's copies of that kind: copies at a successor's top would otherwise read registers
/// the hoisted copy already overwrote.
fn hoisted_blocks(func: &Function, a: &Analysis, edges: &[EdgeMoves]) -> Vec<(Block, bool)> {
    let mut hoisted = Vec::new();
    for e in edges {
        for (moves, uniform) in [(&e.per_lane, false), (&e.uniform, true)] {
            if moves.is_empty() {
                continue;
            }
            let phi = carries_phi(moves, func, e.edge.1);
            let hoist = match site_for(func, a, e.edge, uniform, phi) {
                Some(Site::End(_) | Site::Start(_)) => false,
                Some(Site::Split(..)) => !split_is_safe(func, a, e.edge, uniform),
                None => true,
            };
            if hoist {
                hoisted.push((e.edge.0, uniform));
            }
        }
    }
    hoisted.sort();
    hoisted.dedup();
    hoisted
}

/// Whether a block splitting `p → s` may hold copies of the kind `uniform` says, as far as
/// the shape around `p` tells (`structure::split_changes` checks the result). A new block
/// can lie on more paths of the linear CFG than its edge: a new else-arm runs after the
/// then-side, a new then-arm whose sibling is the join falls into the else-side, a new
/// block leaving a then-region falls into its else-side. So uniform copies (which follow
/// the linear CFG) go on a split edge only from a uniform branch, or to a divergent
/// branch's then-arm (or its else-arm when the then-arm is the join), and only from a
/// block leaving no then-region. Per-lane copies may go on any split edge.
fn split_is_safe(func: &Function, a: &Analysis, (p, s): (Block, Block), uniform: bool) -> bool {
    let leaves_no_region = a.divergence.linear.succs(p).len() == a.cfg.succs(p).len();
    match func.block(p).term {
        Terminator::Branch {
            kind: BranchKind::Uniform,
            ..
        } => !uniform || leaves_no_region,
        Terminator::Branch {
            kind: BranchKind::Divergent,
            then_block,
            else_block,
            ..
        } => {
            let join = a.pdom.ipdom(p);
            !uniform
                || (then_block != else_block
                    && Some(s) != join
                    && (s == then_block || join == Some(then_block))
                    && leaves_no_region)
        }
        _ => !uniform,
    }
}

/// The moves per site, with the edges each site serves.
fn gather_sites(
    asg: &Assigned,
    target: &Target,
    a: &Analysis,
    edges: &[EdgeMoves],
    hoisted: &[(Block, bool)],
) -> Result<BTreeMap<Site, SiteMoves>, AllocError> {
    let func = &asg.func;
    let mut sites: BTreeMap<Site, SiteMoves> = BTreeMap::new();
    let mut add = |site: Site, moves: &[Move], edge: (Block, Block)| {
        let entry = sites.entry(site).or_default();
        for m in moves {
            if !entry.0.contains(m) {
                entry.0.push(*m);
            }
        }
        entry.1.push(edge);
    };
    for e in edges {
        let (p, s) = e.edge;
        for (moves, uniform) in [(&e.per_lane, false), (&e.uniform, true)] {
            if moves.is_empty() || hoisted.contains(&(p, uniform)) {
                continue;
            }
            let site = site_for(func, a, e.edge, uniform, carries_phi(moves, func, s))
                .ok_or_else(|| unsupported_edge(func, p, s))?;
            add(site, moves, e.edge);
        }
    }
    for &(p, uniform) in hoisted {
        let hoist = Hoist {
            func,
            target,
            a,
            p,
            uniform,
        };
        let (end, starts) = hoist
            .plan(edges, &asg.entry, &asg.exit[p.index()])
            .ok_or_else(|| unplaceable(func, p, uniform))?;
        let graph = hoist.graph();
        for &s in graph.succs(p) {
            add(Site::End(p), &end, (p, s));
        }
        for (s, moves) in starts {
            add(Site::Start(s), &moves, (p, s));
        }
    }
    sites.retain(|_, (moves, _)| !moves.is_empty());
    Ok(sites)
}

/// The copy at the end of a block, and the copies at the top of its private successors.
type HoistPlan = (Vec<Move>, Vec<(Block, Vec<Move>)>);

/// The copies of one kind (uniform or per-lane) of every edge out of `p`, hoisted to the
/// end of `p`, before its terminator.
struct Hoist<'a> {
    func: &'a Function,
    target: &'a Target,
    a: &'a Analysis,
    p: Block,
    uniform: bool,
}

impl Hoist<'_> {
    fn graph(&self) -> &cfg::Graph {
        if self.uniform {
            &self.a.divergence.linear
        } else {
            &self.a.cfg
        }
    }

    fn of_kind(&self, v: Value) -> bool {
        self.target.class(self.func.value(v).class).uniform == self.uniform
    }

    /// Whether `s` has `p` as its only predecessor and no phis: its copies can follow the
    /// hoisted ones at its top, from wherever those leave the values.
    fn private(&self, s: Block) -> bool {
        self.graph().preds(s) == [self.p] && self.func.block(s).phis.is_empty()
    }

    /// The hoisted copy, and the copies at the top of private successors: `None` unless
    /// the hoisted copy leaves every value and phi of this kind that each other successor
    /// expects where it expects it, and the terminator's operands in place (no two moves
    /// write one unit, no move overwrites a unit still needed).
    fn plan(
        &self,
        edges: &[EdgeMoves],
        entry: &[BoundaryState],
        exit: &BoundaryState,
    ) -> Option<HoistPlan> {
        let mut end: Vec<Move> = Vec::new();
        for e in edges
            .iter()
            .filter(|e| e.edge.0 == self.p && !self.private(e.edge.1))
        {
            let moves = if self.uniform {
                &e.uniform
            } else {
                &e.per_lane
            };
            for m in moves {
                if !end.contains(m) {
                    end.push(*m);
                }
            }
        }
        let term = self.func.block(self.p).term.uses();
        let after = state_after(exit, term, &end)?;
        let holds = |v: Value, l: Location| {
            units(l)
                .into_iter()
                .all(|(u, k)| after.get(&u) == Some(&(v, k)))
        };
        let mut starts = Vec::new();
        for &s in self.graph().succs(self.p) {
            let expected = self.expected(s, &entry[s.index()], exit);
            if !self.private(s) {
                if !expected.iter().all(|&(v, l)| holds(v, l)) {
                    return None;
                }
                continue;
            }
            let mut moves = Vec::new();
            for (v, dst) in expected {
                let here = lookup(exit, v)
                    .into_iter()
                    .chain(end.iter().filter(|m| m.value == v).map(|m| m.dst));
                let src = here.into_iter().find(|&l| holds(v, l))?;
                if src != dst {
                    moves.push(Move { dst, src, value: v });
                }
            }
            starts.push((s, moves));
        }
        let mut operands = term.iter().filter_map(|u| Some((u.value, u.loc?)));
        operands.all(|(v, l)| holds(v, l)).then_some((end, starts))
    }

    /// The values of this kind live into `s` from `p` and the phi arguments `s` takes from
    /// `p`, with the locations `s` expects them in.
    fn expected(
        &self,
        s: Block,
        entry: &BoundaryState,
        exit: &BoundaryState,
    ) -> Vec<(Value, Location)> {
        let phis = &self.func.block(s).phis;
        let live_in = entry.iter().copied().filter(|&(v, _)| {
            lookup(exit, v).is_some() && !phis.iter().any(|phi| phi.def.value == v)
        });
        let logical = self.a.cfg.succs(self.p).contains(&s);
        let phi_args = phis.iter().filter(|_| logical).filter_map(|phi| {
            let arg = phi.args.iter().find(|arg| arg.block == self.p)?;
            lookup(exit, arg.value).and(Some((arg.value, phi.def.loc?)))
        });
        live_in
            .chain(phi_args)
            .filter(|&(v, _)| self.of_kind(v))
            .collect()
    }
}

/// Which value (and which of its units) each register unit holds after `moves` run at the
/// end of a block with live-out state `exit` and terminator operands `term`; `None` when
/// two moves write one unit.
fn state_after(
    exit: &BoundaryState,
    term: &[Use],
    moves: &[Move],
) -> Option<BTreeMap<(ClassId, u16), (Value, u16)>> {
    let mut after = BTreeMap::new();
    let held = exit
        .iter()
        .copied()
        .chain(term.iter().filter_map(|u| Some((u.value, u.loc?))));
    for (v, l) in held {
        for (unit, k) in units(l) {
            after.insert(unit, (v, k));
        }
    }
    let mut written = Vec::new();
    for m in moves {
        for (unit, k) in units(m.dst) {
            if written.contains(&unit) {
                return None;
            }
            written.push(unit);
            after.insert(unit, (m.value, k));
        }
    }
    Some(after)
}

/// The register units of `l` with their offsets in it.
fn units(l: Location) -> Vec<((ClassId, u16), u16)> {
    match l {
        Location::Reg { class, first, len } => (0..len).map(|k| ((class, first + k), k)).collect(),
        _ => Vec::new(),
    }
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

fn unplaceable(func: &Function, p: Block, uniform: bool) -> AllocError {
    let kind = if uniform { "uniform" } else { "per-lane" };
    AllocError::Constraint {
        function: func.name.clone(),
        block: func.block(p).name.clone(),
        pos: func.block(p).term.pos(),
        message: format!(
            "the copies of {kind} values on the edges out of `{}` have no safe place: splitting an edge would change the linear CFG, and one copy before the branch cannot serve every successor",
            func.block(p).name
        ),
    }
}

/// Units holding a value around a site, per class: at the end of each edge's predecessor
/// and the start of its successor, the terminator's operands for a copy at a block's end,
/// and `extra` (where a hoisted copy put values). Units outside the budget count as busy
/// so that temporaries stay inside it.
fn busy_units(
    func: &Function,
    target: &Target,
    budget: &[u16],
    (site, edges): (Site, &[(Block, Block)]),
    extra: &[Location],
    (entry, exit): (&[BoundaryState], &[BoundaryState]),
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
    let mut held: Vec<Location> = extra.to_vec();
    for &(p, s) in edges {
        let states = exit[p.index()].iter().chain(&entry[s.index()]);
        held.extend(states.map(|&(_, l)| l));
    }
    if let Site::End(p) = site {
        held.extend(func.block(p).term.uses().iter().filter_map(|u| u.loc));
    }
    for l in held {
        for ((class, u), _) in units(l) {
            if let Some(b) = busy[class.index()].get_mut(usize::from(u)) {
                *b = true;
            }
        }
    }
    busy
}
