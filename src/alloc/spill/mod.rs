//! Spilling: lowers register pressure to the budget *before* assignment, so that SSA
//! assignment, which needs exactly MaxLive registers (Hack & Goos 2006), never fails.
//!
//! The algorithm is Belady's MIN on SSA live ranges, the choice Braun & Hack make ("Register
//! Spilling and Live-Range Splitting for SSA-Form Programs", CC 2009) and Mesa ACO follows,
//! driven by the points where pressure exceeds the budget:
//!
//! 1. Find the first point (reverse post-order) where the demand of a class exceeds its
//!    budget (`analysis::pressure`, which counts uniform values on the linear CFG).
//! 2. Among the values live across that point, evict the one whose next use is furthest
//!    ([`distance`]: instruction counts, with a large penalty for leaving a loop, so a
//!    value live through a loop but unused in it goes first and is reloaded after the
//!    loop, never inside it). A value already spilled or rematerialisable wins ties.
//!    Values have sizes: when the furthest is too small to make the point fit and the
//!    value that would complete the eviction frees it alone (with its reloads in the same
//!    loop), that one goes instead, and the small one keeps its register. Inside a loop,
//!    where each candidate reloaded every iteration costs one reload per iteration
//!    whichever goes, a narrower one that frees the point alone at a lower
//!    frequency-weighted cost (store plus reloads, units times block frequency, in the
//!    spirit of the loop weighting in Braun & Hack's next-use distances) goes instead.
//!    A dead phi is never spilled past its block's entry: it takes no register there,
//!    and its argument stays live to the edge store that would replace it.
//! 3. Give the evicted value a home once ([`rewrite`]): one store right after its
//!    definition, a register of another class (PTX predicates, Intel flags), or nothing
//!    for rematerialisable constants. A phi evicted at its block's entry becomes a memory
//!    phi whose arguments are stored at the end of each predecessor; evicted after some of
//!    its uses, it is stored at the top of its block and those uses keep its register.
//!    After slot colouring, a memory phi's argument already in the phi's location is not
//!    copied onto itself ([`coalesce`]).
//! 4. Split its live range: every use reachable from the point reads a reload (or a remat)
//!    made in the use's own block, which keeps the function in SSA form with no new phi.
//!    Repeat until every point fits.
//!
//! Classes are lowered in spill-dependency order: a class spilling into registers or lanes
//! of another class goes first, so the second sees the extra demand. Uniform values then
//! take lanes of reserved per-lane registers ([`slots`], AMD SGPR → VGPR lanes, which the
//! per-lane budget loses; they sit at the top of the registers that keep the occupancy of
//! what the per-lane class needs, not at the top of its budget), as many as the per-lane class can spare; the rest, and every
//! per-lane value, take scratch slots (a uniform value's store writes every lane, so it
//! may be reloaded under any exec mask). Spill locations are coloured: values whose spilled
//! lifetimes do not interfere share one. [`materialise`] turns the pseudo-operations
//! ([`pseudo`]) into `spill`/`reload`/`remat` once registers are assigned.

pub mod coalesce;
pub mod distance;
pub mod materialise;
pub mod minimum;
pub mod pseudo;
pub mod rewrite;
pub mod slots;

use super::AllocError;
use crate::analysis::{cfg::Graph, liveness::At, liveness::LiveSet, Analysis};
use crate::program::{Block, Function, Location, Phi, Value};
use crate::target::{ClassId, SpillTarget, Target};
use rewrite::{MemoryPhi, State};
use std::collections::{BTreeMap, BTreeSet};

/// A function whose pressure fits the budget, and what [`materialise`] needs afterwards.
#[derive(Debug)]
pub struct Spilled {
    pub func: Function,
    /// The budget left for assignment: reserved lane registers taken out.
    pub budget: Vec<u16>,
    pub plan: Plan,
    /// The analysis of `func`; `None` when nothing was spilled and `func` is the original.
    pub analysis: Option<Analysis>,
}

/// How the spilled function maps back to the original.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per value of the spilled function: the original value.
    pub origin: Vec<Value>,
    pub original_values: usize,
    pub memory_phis: Vec<MemoryPhi>,
    /// Spill location of each owner.
    pub homes: BTreeMap<Value, Location>,
    /// Memory slots used by spills; slots from here on are free for copy temporaries.
    pub memory_slots: u32,
    /// Per-lane registers reserved for lane spills.
    pub lane_registers: u16,
}

/// Lowers the pressure of every class of `f` to `budget`.
/// `a` is the analysis of `f`: when every class fits, nothing is spilled.
pub fn spill(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Result<Spilled, AllocError> {
    let lowest = minimum::lowest_legal(f, target);
    check_lowest(f, target, budget, &lowest)?;
    let mut state = State::new(f, target);
    let fits = |c: ClassId| a.pressure.max_live(c) <= u32::from(budget[c.index()]);
    if target.class_ids().all(fits) {
        return Ok(unspilled(state, budget));
    }
    let mut budget = budget.to_vec();
    let mut homes = BTreeMap::new();
    let mut lane_owners = Vec::new();
    let mut lane_registers = 0;
    let mut analysis = None;
    for c in class_order(target) {
        let a = lower_class(&mut state, c, budget[c.index()])?;
        if let Some((v, lanes)) = lane_target(target, c).filter(|_| !state.owners.is_empty()) {
            let spare = budget[v.index()].saturating_sub(lowest[v.index()].units as u16);
            let owners: Vec<Value> = owners_of_class(&state, c, &lane_owners);
            let phis = memory_phi_slots(&state);
            let placed =
                slots::colour_lanes(&state.f, &a.divergence.linear, &owners, &phis, lanes, spare);
            let regs = slots::lane_registers(&placed, lanes);
            let need = lane_class_need(&state.f, &a, v, lowest[v.index()].units) + regs;
            let top = lane_ceiling(target, v, need, budget[v.index()]);
            for (owner, offset) in placed {
                homes.insert(owner, lane_location(&state, owner, v, top, lanes, offset));
            }
            lane_owners.extend(owners);
            budget[v.index()] = top - regs;
            lane_registers += regs;
        }
        analysis = Some(a);
    }
    let memory: Vec<Value> = state
        .owners
        .iter()
        .copied()
        .filter(|o| !homes.contains_key(o))
        .collect();
    let placed = match &analysis {
        Some(a) if !memory.is_empty() => slots::colour_memory(
            &state.f,
            (&a.cfg, &a.divergence.linear),
            &memory,
            &memory_phi_slots(&state),
            |o| target.class(state.f.value(o).class).uniform,
        ),
        _ => Vec::new(),
    };
    let mut memory_slots = 0;
    for (owner, first) in placed {
        let len = state.f.value(owner).size;
        memory_slots = memory_slots.max(first + u32::from(len));
        homes.insert(owner, Location::Slot { first, len });
    }
    if coalesce::drop_self_copies(&mut state.f, &homes) {
        analysis = Some(Analysis::new(&state.f, target));
    }
    let plan = Plan {
        origin: state.origin,
        original_values: f.values.len(),
        memory_phis: state.memory_phis,
        homes,
        memory_slots,
        lane_registers,
    };
    Ok(Spilled {
        func: state.f,
        budget,
        plan,
        analysis,
    })
}

fn unspilled(state: State, budget: &[u16]) -> Spilled {
    let plan = Plan {
        original_values: state.f.values.len(),
        origin: state.origin,
        ..Plan::default()
    };
    Spilled {
        func: state.f,
        budget: budget.to_vec(),
        plan,
        analysis: None,
    }
}

fn memory_phi_slots(state: &State) -> Vec<(Block, Value)> {
    state
        .memory_phis
        .iter()
        .map(|m| (m.block, m.phi.def.value))
        .collect()
}

fn owners_of_class(state: &State, c: ClassId, taken: &[Value]) -> Vec<Value> {
    state
        .owners
        .iter()
        .copied()
        .filter(|o| state.f.value(*o).class == c && !taken.contains(o))
        .collect()
}

/// Registers the per-lane class needs besides lane registers: its pressure or its lowest
/// legal budget, whichever is higher, plus room for its widest tuple to find an aligned
/// place.
fn lane_class_need(f: &Function, a: &Analysis, v: ClassId, lowest: u32) -> u16 {
    let widest = f
        .value_ids()
        .filter(|&x| f.value(x).class == v)
        .map(|x| f.value(x).size)
        .max()
        .unwrap_or(1);
    let need = a.pressure.max_live(v).max(lowest) + u32::from(widest) - 1;
    u16::try_from(need).unwrap_or(u16::MAX)
}

/// Where the lane registers end: the most registers of the per-lane class that still give
/// the occupancy of `need`, within the budget. Reserving them at the top of the budget
/// instead would make every function that spills a uniform value count the whole file as
/// used (occupancy 1 on AMD with the full budget).
fn lane_ceiling(target: &Target, v: ClassId, need: u16, budget: u16) -> u16 {
    let mut used = vec![0; target.classes.len()];
    used[v.index()] = need.min(budget);
    let same_occupancy = target
        .occupancy(&used)
        .and_then(|n| target.budget_for_occupancy(n).ok())
        .map_or(budget, |b| b[v.index()]);
    same_occupancy.clamp(need.min(budget), budget)
}

fn lane_location(
    state: &State,
    owner: Value,
    v: ClassId,
    k: u16,
    lanes: u16,
    offset: u32,
) -> Location {
    let reg = k - 1 - (offset / u32::from(lanes)) as u16;
    Location::Lane {
        class: v,
        reg,
        first: (offset % u32::from(lanes)) as u16,
        len: state.f.value(owner).size,
    }
}

/// The per-lane class and lane count a class spills into, if it spills to lanes.
fn lane_target(target: &Target, c: ClassId) -> Option<(ClassId, u16)> {
    target.class(c).spill.iter().find_map(|t| match *t {
        SpillTarget::Lanes { class, lanes } => Some((class, lanes)),
        _ => None,
    })
}

/// Classes ordered so that one spilling into another class's registers comes before it.
fn class_order(target: &Target) -> Vec<ClassId> {
    let mut order: Vec<ClassId> = Vec::new();
    fn visit(target: &Target, c: ClassId, order: &mut Vec<ClassId>, seen: &mut Vec<bool>) {
        if std::mem::replace(&mut seen[c.index()], true) {
            return;
        }
        for other in target.class_ids() {
            let spills_into_c = target.class(other).spill.iter().any(|t| match *t {
                SpillTarget::Lanes { class, .. } | SpillTarget::Class { class } => class == c,
                SpillTarget::Memory => false,
            });
            if spills_into_c {
                visit(target, other, order, seen);
            }
        }
        order.push(c);
    }
    let mut seen = vec![false; target.classes.len()];
    for c in target.class_ids() {
        visit(target, c, &mut order, &mut seen);
    }
    order
}

/// A budget below the lowest legal one is an error at the instruction that needs more.
fn check_lowest(
    f: &Function,
    target: &Target,
    budget: &[u16],
    lowest: &[minimum::Need],
) -> Result<(), AllocError> {
    for c in target.class_ids() {
        let need = lowest[c.index()];
        if need.units > u32::from(budget[c.index()]) {
            return Err(AllocError::BelowLowest {
                function: f.name.clone(),
                pos: need.pos,
                class: target.class(c).name.clone(),
                needed: need.units,
                budget: budget[c.index()],
            });
        }
    }
    Ok(())
}

/// Spills values of class `c` until its demand is at most `k` everywhere; returns the
/// analysis of the result.
///
/// One analysis serves a round: the first excess point of every block is handled in
/// reverse post-order, skipping blocks the round has already edited (their indices moved).
/// Elsewhere the analysis may be stale only by values that have become dead; their next
/// use, measured on the edited function, is infinitely far, so they are chosen first and
/// spilling them changes nothing. A round ends early when an edge is split.
fn lower_class(state: &mut State, c: ClassId, k: u16) -> Result<Analysis, AllocError> {
    let limit = 64 + 8 * (state.f.values.len() + count_insts(&state.f));
    let mut budget_left = limit;
    loop {
        let a = Analysis::new(&state.f, state.target);
        let excess = excess_points(&state.f, &a, c, k);
        let Some(&(first_b, first_point)) = excess.first() else {
            return Ok(a);
        };
        if budget_left == 0 {
            return Err(stuck(state, &a, c, k, first_b, first_point));
        }
        let mut touched = vec![false; state.f.blocks.len()];
        for (b, point) in excess {
            if touched[b.index()] {
                continue;
            }
            let Some(victim) = choose_victim(state, &a, (c, k), b, point) else {
                if b == first_b {
                    return Err(stuck(state, &a, c, k, b, point));
                }
                continue;
            };
            budget_left = budget_left.saturating_sub(1);
            let shape = block_shapes(&state.f);
            let reach = reachable_from_end(graph_of(state, &a, c), victim.from.0);
            state.spill_from(victim.value, victim.from, victim.entry, &reach);
            if state.f.blocks.len() != shape.len() {
                break;
            }
            for (t, (old, new)) in touched
                .iter_mut()
                .zip(shape.iter().zip(block_shapes(&state.f)))
            {
                *t |= *old != new;
            }
        }
    }
}

/// Per block: phi and instruction counts, to see which blocks an edit changed.
fn block_shapes(f: &Function) -> Vec<(usize, usize)> {
    f.blocks
        .iter()
        .map(|b| (b.phis.len(), b.insts.len()))
        .collect()
}

fn count_insts(f: &Function) -> usize {
    f.blocks.iter().map(|b| b.insts.len()).sum()
}

fn stuck(
    state: &State,
    a: &Analysis,
    c: ClassId,
    k: u16,
    b: Block,
    point: Option<u32>,
) -> AllocError {
    let data = state.f.block(b);
    let pos = point
        .and_then(|i| data.insts.get(i as usize))
        .map_or(data.pos, |inst| inst.pos);
    AllocError::Pressure {
        function: state.f.name.clone(),
        block: data.name.clone(),
        pos,
        class: state.target.class(c).name.clone(),
        needed: a.pressure.at(b, point, c),
        budget: k,
    }
}

/// The CFG that liveness of class `c` follows: linear for uniform classes.
fn graph_of<'a>(state: &State, a: &'a Analysis, c: ClassId) -> &'a Graph {
    if state.target.class(c).uniform {
        &a.divergence.linear
    } else {
        &a.cfg
    }
}

/// Per block in reverse post-order, the first point where `c` needs more than `k` units.
fn excess_points(f: &Function, a: &Analysis, c: ClassId, k: u16) -> Vec<(Block, Option<u32>)> {
    let mut out = Vec::new();
    for &b in a.cfg.rpo() {
        if a.pressure.block_max(f, b, c) <= u32::from(k) {
            continue;
        }
        let points = std::iter::once(None).chain((0..=f.block(b).insts.len() as u32).map(Some));
        if let Some(point) = points
            .into_iter()
            .find(|&p| a.pressure.at(b, p, c) > u32::from(k))
        {
            out.push((b, point));
        }
    }
    out
}

/// A value to spill and the instruction of its block from which its uses are reloaded.
#[derive(Clone, Copy, Debug)]
struct Victim {
    value: Value,
    from: (Block, usize),
    /// Whether it must leave its register at the entry of `from`'s block (at the block's
    /// first point, or as a phi fed by a predecessor's end): a phi of that block then
    /// becomes a memory phi.
    entry: bool,
}

/// Belady's choice at a point: the candidate whose next use is furthest; spilled or
/// rematerialisable values first among equals, then the lowest value number. Values have
/// sizes, so the furthest may be too small to make the point fit: see [`fitting`].
fn choose_victim(
    state: &State,
    a: &Analysis,
    (c, k): (ClassId, u16),
    b: Block,
    point: Option<u32>,
) -> Option<Victim> {
    let graph = graph_of(state, a, c);
    let candidates = candidates(state, a, (c, k), b, point);
    let mut ranked: Vec<_> = candidates
        .into_iter()
        .rev()
        .filter(|v| point.is_none_or(|i| makes_progress(state, a, v, i as usize)))
        .map(|v| {
            let (start, from) = v.from;
            let dist = distance::next_use(
                &state.f,
                graph,
                &a.loops,
                Some(a.liveness.def_block(v.value)),
                v.value,
                (start, from),
            );
            let homed = state.home[v.value.index()].is_some();
            ((dist, homed, std::cmp::Reverse(v.value)), v)
        })
        .collect();
    ranked.sort_by_key(|&(key, _)| std::cmp::Reverse(key));
    let mut seen = BTreeSet::new();
    ranked.retain(|(_, v)| seen.insert(v.value));
    let ranked: Vec<(u64, Victim)> = ranked.into_iter().map(|(key, v)| (key.0, v)).collect();
    let excess = a.pressure.at(b, point, c).saturating_sub(u32::from(k));
    fitting(&state.f, &ranked, excess, |v| {
        loop_cost(state, a, graph, (c, k), v)
    })
}

/// Among candidates ranked furthest first: the furthest, unless evicting it alone leaves
/// the point over budget and the candidate that would complete the eviction (the first
/// whose units, with those of the ones before it, cover the `excess`) covers it alone and
/// is reloaded in the same loop as the furthest. Evicting that one alone then spills fewer
/// units for the same relief (a 1-unit counter is not spilled on the way to a 4-unit
/// accumulator that frees the point by itself). Then, inside a loop, where Belady's order
/// no longer counts reloads (every candidate reloaded within the loop is reloaded once per
/// iteration, whichever goes), a candidate of the same loop level that frees the point
/// alone at a lower estimated cost (`cost`, see [`loop_cost`]) goes instead: a 2-unit
/// pointer is not spilled where a 1-unit key reloaded as often frees the point too.
fn fitting(
    f: &Function,
    ranked: &[(u64, Victim)],
    excess: u32,
    cost: impl Fn(&Victim) -> Option<f64>,
) -> Option<Victim> {
    let &(furthest_dist, furthest) = ranked.first()?;
    let units = |v: &Victim| u32::from(f.value(v.value).size);
    let level = |dist: u64| dist / distance::LOOP_EXIT;
    let mut covered = 0;
    let mut chosen = furthest;
    for &(dist, v) in ranked {
        covered += units(&v);
        if covered >= excess {
            if units(&v) >= excess && level(dist) == level(furthest_dist) {
                chosen = v;
            }
            break;
        }
    }
    let Some(mut best) = cost(&chosen) else {
        return Some(chosen);
    };
    let belady = chosen;
    let relieves_as_much = |v: &Victim| v.from.0 == belady.from.0 && v.from.1 <= belady.from.1;
    let alone = ranked.iter().filter(|(dist, v)| {
        level(*dist) == level(furthest_dist)
            && (excess..units(&belady)).contains(&units(v))
            && relieves_as_much(v)
    });
    for &(_, v) in alone {
        if let Some(c) = cost(&v).filter(|&c| c < best) {
            (best, chosen) = (c, v);
        }
    }
    Some(chosen)
}

/// The frequency-weighted units that spilling `v` at a point of a loop moves, as
/// [`rewrite`] would place them: a store after its definition (none for a
/// rematerialisable value), and a reload in its own block when used after the point and
/// in every block reachable from there that uses it. `None`:
/// - outside loops, and when none of those reloads is as frequent as the point (the value
///   is not reloaded in every iteration, and Belady's order stands);
/// - when its next use in the block is at a point over the budget `k` (its reload there
///   would need yet another eviction);
/// - for phis (spilled at their block's entry, as memory phis, their stores go on edges;
///   later, they move the pressure to the argument on the back edge), which the estimate
///   does not see;
/// - for a value spilled before, so that a cheap value reloaded right after the point is
///   not evicted again and again.
fn loop_cost(
    state: &State,
    a: &Analysis,
    graph: &Graph,
    (c, k): (ClassId, u16),
    v: &Victim,
) -> Option<f64> {
    let f = &state.f;
    let (b, from) = v.from;
    let freq = |x: Block| a.freq.get(x.index()).copied().unwrap_or(1.0);
    let spilled_before = state.home[v.value.index()].is_some();
    if v.entry || a.loops.depth(b) == 0 || spilled_before || state.phi_block(v.value).is_some() {
        return None;
    }
    let def = a.liveness.def_block(v.value);
    let store = if state.is_remat(v.value) {
        0.0
    } else {
        freq(def)
    };
    let reach = reachable_from_end(graph, b);
    let again = reach.contains(&b) && b != def;
    let next = distance::first_use(f, v.value, b, from);
    if next.is_some_and(|j| a.pressure.at(b, Some(j as u32), c) > u32::from(k)) {
        return None;
    }
    let here = distance::first_use(f, v.value, b, if again { 0 } else { from }).map(|_| b);
    let later = reach
        .into_iter()
        .filter(|&r| r != b && r != def && distance::first_use(f, v.value, r, 0).is_some());
    let reloads: Vec<f64> = here.into_iter().chain(later).map(freq).collect();
    if reloads.iter().all(|&r| r < freq(b)) {
        return None;
    }
    Some(f64::from(f.value(v.value).size) * (store + reloads.iter().sum::<f64>()))
}

/// Whether spilling `v` frees the point at instruction `i` of its block: the reload that
/// would serve the uses after the point must come after it. (A phi spilled at its block's
/// entry becomes a memory phi, and a successor's phi moves its argument into a store; both
/// help, unless nothing reads the phi: a dead phi takes no register past its block's
/// entry, and its argument stays live to the edge store that would replace it.)
fn makes_progress(state: &State, a: &Analysis, v: &Victim, i: usize) -> bool {
    let (b, from) = v.from;
    let d = a.liveness.def_block(v.value);
    let is_phi = state.f.block(d).phis.iter().any(|p| p.def.value == v.value);
    if is_phi && state.memory_phi_at(v.value, d, b, v.entry) {
        return is_read(&state.f, v.value);
    }
    let home = state.home[v.value.index()].unwrap_or(rewrite::Home::Remat);
    state
        .reload_index(v.value, home, b, from)
        .is_none_or(|r| r > i)
}

/// Whether an operand, terminator operand or phi argument reads `x`.
fn is_read(f: &Function, x: Value) -> bool {
    f.blocks.iter().any(|block| {
        let ops = block.insts.iter().filter_map(|i| i.op());
        let mut uses = ops.flat_map(|op| op.uses()).chain(block.term.uses());
        let mut args = block.phis.iter().flat_map(|p| &p.args);
        uses.any(|u| u.value == x) || args.any(|g| g.value == x)
    })
}

/// The values of class `c` whose spilling lowers the demand at the point: values live
/// across it that it does not read, and, when the demand after the instruction is over
/// `k` (or nothing else helps), values it reads that live on; at a block end,
/// successors' phis instead of the arguments passed to them. At a block's entry, the
/// live-in values and the phis, save a dead phi fed a value live into the block (a loop
/// header's phi fed on the back edge by a value live through the loop): as a memory phi
/// it would store that value on the back edge every iteration while the value keeps its
/// register through the loop; spilling the value instead frees the entry and the loop.
fn candidates(
    state: &State,
    a: &Analysis,
    (c, k): (ClassId, u16),
    b: Block,
    point: Option<u32>,
) -> Vec<Victim> {
    let f = &state.f;
    let of_class = |v: &Value| f.value(*v).class == c;
    let block = f.block(b);
    let Some(i) = point else {
        let live_in = a.liveness.live_in(b);
        let frees_nothing_else = |p: &&Phi| {
            let carried = p.args.iter().any(|g| live_in.contains(&g.value));
            carried && !is_read(f, p.def.value)
        };
        let phis = block.phis.iter().filter(|p| !frees_nothing_else(p));
        return live_in
            .iter()
            .copied()
            .chain(phis.map(|p| p.def.value))
            .filter(of_class)
            .map(|value| Victim {
                value,
                from: (b, 0),
                entry: true,
            })
            .collect();
    };
    let i = i as usize;
    let after = live_after(state, a, b, i);
    if i == block.insts.len() {
        return at_block_end(state, b, after.into_iter().filter(of_class));
    }
    let op = block.insts[i].op();
    let used = |v: &Value| op.is_some_and(|op| op.uses().any(|u| u.value == *v));
    let defined = |v: &Value| op.is_some_and(|op| op.defs.iter().any(|d| d.value == *v));
    let live_on: Vec<Value> = after
        .into_iter()
        .filter(of_class)
        .filter(|v| !defined(v))
        .collect();
    let units = |v: &Value| u32::from(f.value(*v).size);
    let defs = op.map_or(0, |op| {
        op.defs
            .iter()
            .map(|d| d.value)
            .filter(of_class)
            .map(|v| units(&v))
            .sum::<u32>()
    });
    let after_over = live_on.iter().map(units).sum::<u32>() + defs > u32::from(k);
    let (through, read): (Vec<Value>, Vec<Value>) = live_on.into_iter().partition(|v| !used(v));
    let victim = |value, from| Victim {
        value,
        from: (b, from),
        entry: false,
    };
    let mut out: Vec<Victim> = through.iter().map(|&v| victim(v, i)).collect();
    if after_over || out.is_empty() {
        out.extend(read.into_iter().map(|v| victim(v, i + 1)));
    }
    out.into_iter()
        .flat_map(|v| for_phi_arguments(state, b, v))
        .collect()
}

/// A value whose only use left in `b` is as an argument to a successor's phi cannot be
/// reloaded any later than the end of `b`: spilling helps only through that phi, which
/// then stores the argument on its edge.
fn for_phi_arguments(state: &State, b: Block, v: Victim) -> Vec<Victim> {
    let f = &state.f;
    let end = f.block(b).insts.len();
    let only_phi_arg = distance::first_use(f, v.value, b, v.from.1) == Some(end)
        && distance::passes_as_phi_arg(f, b, v.value)
        && !f.block(b).term.uses().iter().any(|u| u.value == v.value);
    if only_phi_arg && v.from.0 == b {
        fed_phis(state, b, v.value)
    } else {
        vec![v]
    }
}

/// The phis of `b`'s successors that `b` passes `v` to, as victims.
fn fed_phis(state: &State, b: Block, v: Value) -> Vec<Victim> {
    let f = &state.f;
    let mut out = Vec::new();
    for s in f.block(b).term.successors() {
        let phis = f.block(s).phis.iter();
        let fed = phis.filter(|p| p.args.iter().any(|x| x.block == b && x.value == v));
        out.extend(fed.map(|p| Victim {
            value: p.def.value,
            from: (s, 0),
            entry: true,
        }));
    }
    out
}

/// Candidates at the end of `b`: values live out that the terminator does not read (a
/// value passed to a phi stands for that phi, see [`for_phi_arguments`]).
fn at_block_end(state: &State, b: Block, live_out: impl Iterator<Item = Value>) -> Vec<Victim> {
    let block = state.f.block(b);
    let end = block.insts.len();
    let mut out: Vec<Victim> = live_out
        .filter(|&v| !block.term.uses().iter().any(|u| u.value == v))
        .flat_map(|value| {
            for_phi_arguments(
                state,
                b,
                Victim {
                    value,
                    from: (b, end),
                    entry: false,
                },
            )
        })
        .collect();
    out.sort_by_key(|v| v.value);
    out.dedup_by_key(|v| v.value);
    out
}

/// The values live just after instruction `i` of `b` (its live definitions included).
fn live_after(state: &State, a: &Analysis, b: Block, i: usize) -> Vec<Value> {
    let mut live = LiveSet::new(&state.f, state.target);
    let mut out = Vec::new();
    a.liveness.walk_backward(&state.f, b, &mut live, |at, set| {
        if at == At::After(i as u32) {
            out = set.values().to_vec();
        }
    });
    out.sort();
    out
}

/// Blocks reachable from the end of `b` (successors and beyond).
fn reachable_from_end(graph: &Graph, b: Block) -> Vec<Block> {
    let mut seen = vec![false; graph.len()];
    let mut stack: Vec<Block> = graph.succs(b).to_vec();
    let mut out = Vec::new();
    while let Some(x) = stack.pop() {
        if std::mem::replace(&mut seen[x.index()], true) {
            continue;
        }
        out.push(x);
        stack.extend_from_slice(graph.succs(x));
    }
    out.sort();
    out
}
