//! Spilling: lowers register demand to the budget *before* assignment, so that
//! assignment never fails: Braun & Hack, "Register Spilling and Live-Range Splitting for
//! SSA-Form Programs" (CC 2009), the spiller of Mesa ACO.
//!
//! Per class, in spill-dependency order (a class spilling into registers or lanes of
//! another goes first, so the other sees the extra demand), unless the class fits the
//! budget everywhere with all its live values in registers ([`demand::fits_everywhere`]:
//! then there is nothing to spill, and the analyses below are not run). That answer is
//! taken once for every class, before anything spills, and asked again only for a class
//! whose budget or registers an earlier class's spilling changed (lanes, or another class's
//! registers, it spilled into): a class's spill code reads and defines only values of
//! that class and of its destinations, and an instruction it adds holds of any other class
//! only the values live through it, no more than the instruction after it holds:
//!
//! 1. [`nextuse`]: next-use distances, a backward fixpoint with a penalty for leaving
//!    loops (§3).
//! 2. [`belady`]: the set W of values in registers at each block's entry (loop headers:
//!    values used in the loop, then live-through values while the loop has room; merges:
//!    values in registers in all predecessors, then in some), and Belady's MIN through the
//!    block, where the demand of an instruction is its [`packing`](super::packing)
//!    problem — alignment, fixed registers, tied and early-clobber operands counted as
//!    assignment will place them (§4.1–4.3); a victim's reload is priced where it runs
//!    ([`reload_freq`]: the block of the value's next read, or a loop's entry edge; at
//!    least the back edges of a loop header holding it, [`next_read`]).
//! 3. [`rewrite`]: reloads and remats where values enter W, coupling code on edges,
//!    stores where they are needed (or once after the definition when that runs less
//!    often), memory phis for phis left out of W, and SSA repaired ([`repair`]) with new
//!    phis where reloads meet (§4.4–4.5).
//!
//! Uniform values then take lanes of reserved per-lane registers ([`slots`], AMD SGPR →
//! VGPR lanes, which the per-lane budget loses; they sit at the top of the registers that
//! keep the occupancy of what the per-lane class needs), as many as the per-lane class can
//! spare; the rest, and every per-lane value, take scratch slots (a uniform value's store
//! writes every lane, so it may be reloaded under any exec mask). Spill locations are
//! coloured: values whose spilled lifetimes do not interfere share one. [`materialise`]
//! turns the pseudo-operations ([`pseudo`]) into `spill`/`reload`/`remat` once registers
//! are assigned.

pub mod belady;
pub mod coalesce;
pub mod demand;
pub mod edges;
#[cfg(test)]
mod fixture;
pub mod loop_peak;
pub mod materialise;
pub mod minimum;
pub mod next_read;
pub mod nextuse;
pub mod pinned;
pub mod pseudo;
pub mod reload_freq;
pub mod repair;
pub mod rewrite;
pub mod slots;
pub mod sorted;

use super::AllocError;
use crate::analysis::cfg::Graph;
use crate::analysis::dom::DomTree;
use crate::analysis::liveness;
use crate::analysis::loops::Loops;
use crate::analysis::Analysis;
use crate::program::{Block, Function, Location, Value};
use crate::target::{ClassId, SpillTarget, Target};
use belady::Decisions;
use rewrite::{ClassInput, MemoryPhi, State};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A function whose demand fits the budget, and what [`materialise`] needs afterwards.
#[derive(Debug)]
pub struct Spilled {
    /// The function with its spill code: the input itself, unchanged, when every class
    /// fitted.
    pub func: Function,
    /// The budget left for assignment: reserved lane registers taken out.
    pub budget: Vec<u16>,
    /// How `func` maps back to the input; `None` when every class fitted.
    pub plan: Option<Plan>,
    /// The analysis of `func`; `None` when nothing was spilled and the input's analysis
    /// holds.
    pub analysis: Option<Analysis>,
}

/// How the spilled function maps back to the original.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per value of the spilled function: the original value.
    pub origin: Vec<Value>,
    pub original_values: usize,
    pub memory_phis: Vec<MemoryPhi>,
    /// Per value of the spilled function: the spill location it owns, if any.
    pub homes: Vec<Option<Location>>,
    /// Memory slots used by spills; slots from here on are free for copy temporaries.
    pub memory_slots: u32,
    /// Per-lane registers reserved for lane spills.
    pub lane_registers: u16,
    /// Per block that lost memory phis: its phis in their original order.
    pub phi_order: BTreeMap<Block, Vec<Value>>,
}

/// Lowers the demand of every class of `f` to `budget`, adding the spill code to `f`
/// itself. `a` is the analysis of `f`.
pub fn spill(
    f: Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Result<Spilled, AllocError> {
    let fitting = demand::fits_everywhere_by_class(&f, target, a, budget);
    spill_knowing(f, target, a, budget, fitting)
}

/// [`spill`] with `fitting`, per class, whether it fits `budget` everywhere
/// ([`demand::fits_everywhere`]) already known.
pub fn spill_knowing(
    f: Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
    fitting: Vec<bool>,
) -> Result<Spilled, AllocError> {
    if fitting.iter().all(|&fits| fits) {
        return Ok(Spilled::unspilled(f, budget.to_vec()));
    }
    let lowest = minimum::lowest_legal(&f, target);
    check_lowest(&f, target, budget, &lowest)?;
    let original_values = f.values.len();
    let mut state = State::new(f, target);
    let given = budget;
    let mut budget = budget.to_vec();
    let mut homes = Vec::new();
    let mut lane_owners = Vec::new();
    let mut lane_registers = 0;
    let mut analysis: Option<Analysis> = None;
    let mut disturbed = vec![false; budget.len()];
    for c in class_order(target) {
        let current = analysis.as_ref().unwrap_or(a);
        let fits = if disturbed[c.index()] || budget[c.index()] != given[c.index()] {
            demand::fits_everywhere(&state.f, target, current, c, budget[c.index()])
        } else {
            fitting[c.index()]
        };
        let sites = if fits {
            None
        } else {
            lower_class(&mut state, current, c, budget[c.index()])?
        };
        if let Some(sites) = sites {
            let spilled = Analysis::same_blocks_with_sites(&state.f, target, current, sites);
            analysis = Some(spilled);
            for d in spill_destinations(target, c) {
                disturbed[d.index()] = true;
            }
        }
        let a = analysis.as_ref().unwrap_or(a);
        if let Some((v, lanes)) = lane_target(target, c).filter(|_| !state.owners.is_empty()) {
            let spare = budget[v.index()].saturating_sub(lowest[v.index()].units as u16);
            let list: Vec<Value> = owners_of_class(&state, c, &lane_owners);
            let phis = memory_phi_slots(&state);
            let partners = memory_phi_partners(&state);
            let owners = slots::Owners {
                list: &list,
                phis: &phis,
                partners: &partners,
                sites: &state.sites,
            };
            let placed = slots::colour_lanes(&state.f, &a.divergence.linear, owners, lanes, spare);
            let regs = slots::lane_registers(&placed, lanes);
            let need = lane_class_need(&state.f, a, v, lowest[v.index()].units) + regs;
            let top = lane_ceiling(target, v, need, budget[v.index()]);
            for (owner, offset) in placed {
                let home = lane_location(&state, owner, v, top, lanes, offset);
                set_home(&mut homes, owner, home);
            }
            lane_owners.extend(list);
            budget[v.index()] = top - regs;
            lane_registers += regs;
        }
    }
    let memory: Vec<Value> = state
        .owners
        .iter()
        .copied()
        .filter(|o| home_of(&homes, *o).is_none())
        .collect();
    let (phis, partners) = (memory_phi_slots(&state), memory_phi_partners(&state));
    let owners = slots::Owners {
        list: &memory,
        phis: &phis,
        partners: &partners,
        sites: &state.sites,
    };
    let placed = match &analysis {
        Some(a) if !memory.is_empty() => {
            slots::colour_memory(&state.f, (&a.cfg, &a.divergence.linear), owners, |o| {
                target.class(state.f.value(o).class).uniform
            })
        }
        _ => Vec::new(),
    };
    let mut memory_slots = 0;
    for (owner, first) in placed {
        let len = state.f.value(owner).size;
        memory_slots = memory_slots.max(first + u32::from(len));
        set_home(&mut homes, owner, Location::Slot { first, len });
    }
    if coalesce::drop_self_copies(&mut state.f, &homes, &state.sites) {
        let coalesced = Analysis::same_blocks(&state.f, target, analysis.as_ref().unwrap_or(a));
        analysis = Some(coalesced);
    }
    let plan = Plan {
        origin: state.origin,
        original_values,
        memory_phis: state.memory_phis,
        homes,
        memory_slots,
        lane_registers,
        phi_order: state.phi_order,
    };
    Ok(Spilled {
        func: state.f,
        budget,
        plan: Some(plan),
        analysis,
    })
}

/// The spill location `owner` owns, if any.
pub fn home_of(homes: &[Option<Location>], owner: Value) -> Option<Location> {
    homes.get(owner.index()).copied().flatten()
}

fn set_home(homes: &mut Vec<Option<Location>>, owner: Value, home: Location) {
    if homes.len() <= owner.index() {
        homes.resize(owner.index() + 1, None);
    }
    homes[owner.index()] = Some(home);
}

impl Spilled {
    /// `f` left as it is at `budget`: every class fits it everywhere.
    pub fn unspilled(f: Function, budget: Vec<u16>) -> Spilled {
        Spilled {
            func: f,
            budget,
            plan: None,
            analysis: None,
        }
    }
}

/// Runs the spiller on class `c` of the state's function (analysed by `a`); returns the
/// definition and use sites of the function it rewrote, if it changed anything.
fn lower_class(
    state: &mut State,
    a: &Analysis,
    c: ClassId,
    k: u16,
) -> Result<Option<liveness::Sites>, AllocError> {
    let target = state.target;
    let (graph, loops) = class_graph(a, target.class(c).uniform);
    let order = belady::visit_order(graph, &loops, &state.f);
    let input = belady::Input {
        f: &state.f,
        target,
        a,
        class: c,
        budget: k,
        graph,
        loops: &loops,
        order: &order,
        flags: &state.flags,
    };
    let decisions = belady::decide(&input)?;
    if leaves_all_in_registers(&state.f, a, c, &decisions) {
        return Ok(None);
    }
    let class_input = ClassInput {
        class: c,
        budget: k,
        cfg: &a.cfg,
        graph,
        loops: &loops,
        order: &order,
        liveness: &a.liveness,
        freq: &a.freq,
    };
    state.apply(&decisions, &class_input).map(Some)
}

/// The CFG the values of a class follow (the linear CFG for uniform classes) and its
/// loops.
fn class_graph(a: &Analysis, uniform: bool) -> (&Graph, Cow<'_, Loops>) {
    if uniform {
        let linear = &a.divergence.linear;
        (
            linear,
            Cow::Owned(Loops::new(linear, &DomTree::new(linear))),
        )
    } else {
        (&a.cfg, Cow::Borrowed(&a.loops))
    }
}

/// Whether `decisions` keep every value of class `c` in registers everywhere: no memory
/// phi, reload or eviction, and every live-in and phi in W at each block's entry.
fn leaves_all_in_registers(f: &Function, a: &Analysis, c: ClassId, decisions: &Decisions) -> bool {
    let of_class = |v: &&Value| f.value(**v).class == c;
    let all_at_entry = f.block_ids().all(|b| {
        let live_in = a.liveness.live_in(b).iter().filter(of_class).count();
        let phis = f
            .block(b)
            .phis
            .iter()
            .map(|p| &p.def.value)
            .filter(of_class)
            .count();
        decisions.blocks[b.index()].entry.len() == live_in + phis
    });
    all_at_entry
        && decisions.memory_phis.is_empty()
        && decisions
            .blocks
            .iter()
            .all(|p| p.reloads.is_empty() && p.evictions.is_empty())
}

fn memory_phi_slots(state: &State) -> Vec<(Block, Value)> {
    state
        .memory_phis
        .iter()
        .map(|m| (m.block, m.phi.def.value))
        .collect()
}

/// Each memory phi with each argument that owns a location of its own.
fn memory_phi_partners(state: &State) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    for m in &state.memory_phis {
        for arg in &m.phi.args {
            if arg.value != m.phi.def.value && state.owners.contains(&arg.value) {
                out.push((arg.value, m.phi.def.value));
            }
        }
    }
    out
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

/// The classes whose registers `c` spills into (lanes, or registers of another class).
fn spill_destinations(target: &Target, c: ClassId) -> impl Iterator<Item = ClassId> + '_ {
    target.class(c).spill.iter().filter_map(|t| match *t {
        SpillTarget::Lanes { class, .. } | SpillTarget::Class { class } => Some(class),
        SpillTarget::Memory => None,
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
            let spills_into_c = spill_destinations(target, other).any(|d| d == c);
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
