//! The least frequency-weighted spill cost of one class at a budget, as an allocation the
//! verifier checks: the residency model ([`crate::residency`]) decides where every value is
//! in a register, stored, reloaded or recomputed; [`crate::rewrite`] writes that into the
//! program; the assignment model ([`crate::allocation`], one register per version) gives
//! every version a register within the budget; [`crate::rewrite::restore`] turns the
//! result into spill code on the original function. This is the two-phase optimal
//! allocator of Appel & George (PLDI 2001): spilling decided first by an ILP, registers
//! assigned after, with the assignment an exact model too (so a residency whose
//! assignment needs more registers than the budget is reported, never hidden).
//!
//! The function is first given a place on every edge that needs one (critical edges and
//! edges into phis from a block with several successors, the allocator's own
//! `prepare::split`), so that code at a block's end or entry is code on one edge.
//!
//! Spill destinations follow the target's order of preference for the class
//! (`Target::class(c).spill`): lanes of a register of another class (AMD SGPRs into VGPR
//! lanes, `wave` lanes per register), whole registers of another class (predicates into
//! `r`, flags into `g`), or scratch slots. Lanes and registers are taken from the top of
//! the other class's budget, one lane range or register range per spilled value; a
//! destination is used when that leaves the other class at least its MaxLive, else the next
//! one is tried. A phi lives in memory slots or lanes, never in another class's register,
//! so with a class destination every phi is a register phi. Costs are the target's (`Target::costs`) for that destination.
//!
//! Uniform classes follow the linear CFG; a value they keep in a register across a
//! divergent branch's skip path keeps its definition along it (`Flow::anchors`, the
//! residency model's anchor constraints), as the allocator's spiller does.
//!
//! Outside the model (reported, not solved): a program that already has allocation
//! instructions, and functions where another class needs spilling too at its budget.

use crate::allocation::allocate;
use crate::minregs::{self, Status};
use crate::problem;
use crate::residency::{self, rematerialisable, Input, Residency, UnitCosts};
use crate::rewrite::{restore, rewrite};
use crate::{points, OracleError};
use chromatic::alloc::prepare;
use chromatic::analysis::{cfg::Graph, dom::DomTree, loops};
use chromatic::program::{Function, Location, Value};
use chromatic::target::{ClassId, SpillTarget, Target};
use std::collections::BTreeMap;
use std::time::Instant;

/// How far the two models may go.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    pub residency: residency::Limits,
    pub assignment: minregs::Limits,
}

/// The answer for one class of one function at a budget.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SpillAllocation {
    #[serde(skip)]
    pub class: ClassId,
    pub budget: u16,
    /// `memory`, `lanes of <class>` or `registers of <class>`.
    pub destination: String,
    /// The frequency-weighted cost of the allocation's spill code.
    pub cost: f64,
    /// A proven lower bound for every residency of the model.
    pub bound: f64,
    pub status: Status,
    pub variables: usize,
    pub constraints: usize,
    pub seconds: f64,
    /// The allocation: `f` with locations, spill code and copies.
    #[serde(skip)]
    pub function: Function,
}

/// The least spill cost of `class` in `f` at `budget` (units per class), as an allocation.
pub fn min_spill(
    f: &Function,
    target: &Target,
    class: ClassId,
    budget: &[u16],
    limits: Limits,
) -> Result<SpillAllocation, OracleError> {
    let clock = Instant::now();
    if f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| i.is_artefact())
    {
        return Err(OracleError::OutsideModel(String::from(
            "the program already has allocation instructions",
        )));
    }
    let (g, added) = prepare::split(f);
    let freq = frequencies(&g);
    let (points, flow, shares) = points::points(&g, target, class);
    let cap = budget_of(target, budget, class);
    for destination in &target.class(class).spill {
        let input = Input {
            f: &g,
            points: &points,
            flow: &flow,
            shares: &shares,
            freq: &freq,
            costs: unit_costs(target, destination),
            budget: u32::from(cap),
            memory_phis: !matches!(destination, SpillTarget::Class { .. }),
        };
        let r = residency::solve(&input, limits.residency)?;
        let Some(places) = Places::new(&g, target, budget, destination, &r) else {
            continue;
        };
        let mut function = assign(&g, target, class, &r, &places, limits.assignment)?;
        prepare::drop_empty(&mut function, &added);
        return Ok(SpillAllocation {
            class,
            budget: cap,
            destination: describe(target, destination),
            cost: r.cost,
            bound: r.bound,
            status: r.status,
            variables: r.variables,
            constraints: r.constraints,
            seconds: clock.elapsed().as_secs_f64(),
            function,
        });
    }
    Err(OracleError::OutsideModel(format!(
        "no spill destination of class `{}` has room",
        target.class(class).name
    )))
}

fn budget_of(target: &Target, budget: &[u16], c: ClassId) -> u16 {
    budget
        .get(c.index())
        .copied()
        .unwrap_or(target.class(c).units)
        .min(target.class(c).units)
}

/// Block frequencies as the statistics count them: annotated, else 10^loop depth.
fn frequencies(f: &Function) -> Vec<f64> {
    let cfg = Graph::of_function(f);
    loops::frequencies(f, &loops::Loops::new(&cfg, &DomTree::new(&cfg)))
}

fn unit_costs(target: &Target, destination: &SpillTarget) -> UnitCosts {
    let c = &target.costs;
    let (store, reload) = match destination {
        SpillTarget::Memory => (c.mem_store, c.mem_load),
        SpillTarget::Lanes { .. } => (c.lane_write, c.lane_read),
        SpillTarget::Class { .. } => (c.class_move, c.class_move),
    };
    UnitCosts {
        store,
        reload,
        remat: c.remat,
    }
}

fn describe(target: &Target, destination: &SpillTarget) -> String {
    match destination {
        SpillTarget::Memory => String::from("memory"),
        SpillTarget::Lanes { class, .. } => format!("lanes of {}", target.class(*class).name),
        SpillTarget::Class { class } => format!("registers of {}", target.class(*class).name),
    }
}

/// The spill location of every stored value and memory phi, and the budget left to each
/// class once lane and class-spill registers are set aside.
struct Places {
    of: BTreeMap<Value, Location>,
    budget: Vec<u16>,
}

impl Places {
    fn new(
        f: &Function,
        target: &Target,
        budget: &[u16],
        destination: &SpillTarget,
        r: &Residency,
    ) -> Option<Places> {
        let owner = |v: Value| r.shared.iter().find(|x| x.arg == v).map_or(v, |x| x.phi);
        let mut spilled: Vec<Value> = r.stores.iter().map(|&(_, _, v)| owner(v)).collect();
        spilled.extend(&r.memory_phis);
        spilled.sort();
        spilled.dedup();
        let mut budget: Vec<u16> = target
            .class_ids()
            .map(|c| budget_of(target, budget, c))
            .collect();
        let mut of = BTreeMap::new();
        match *destination {
            SpillTarget::Memory => {
                let mut next = 0u32;
                for v in spilled {
                    let len = f.value(v).size;
                    of.insert(v, Location::Slot { first: next, len });
                    next += u32::from(len);
                }
            }
            SpillTarget::Lanes { class, lanes } => {
                let (mut reg, mut lane) = (budget[class.index()], lanes);
                for v in spilled {
                    let len = f.value(v).size;
                    if lane + len > lanes {
                        reg = reg.checked_sub(1)?;
                        lane = 0;
                    }
                    of.insert(
                        v,
                        Location::Lane {
                            class,
                            reg,
                            first: lane,
                            len,
                        },
                    );
                    lane += len;
                }
                budget[class.index()] = reg;
            }
            SpillTarget::Class { class } => {
                let mut top = budget[class.index()];
                for v in spilled {
                    let len = f.value(v).size;
                    let align = target.class(class).align.alignment(len).max(1);
                    let first = top.checked_sub(len)? / align * align;
                    of.insert(v, Location::Reg { class, first, len });
                    top = first;
                }
                budget[class.index()] = top;
            }
        }
        for x in &r.shared {
            if let Some(&at) = of.get(&x.phi) {
                of.insert(x.arg, at);
            }
        }
        let other = match *destination {
            SpillTarget::Memory => return Some(Places { of, budget }),
            SpillTarget::Lanes { class, .. } | SpillTarget::Class { class } => class,
        };
        let needed = problem::build(f, target, other).map_or(0, |p| p.max_live);
        (budget[other.index()] >= needed).then_some(Places { of, budget })
    }
}

/// The residency written into `f`, every class assigned registers within the budget left,
/// and the result restored as an allocation of `f`.
fn assign(
    f: &Function,
    target: &Target,
    class: ClassId,
    r: &Residency,
    places: &Places,
    limits: minregs::Limits,
) -> Result<Function, OracleError> {
    let rewritten = rewrite(f, class, r)?;
    let assigned = allocate(&rewritten.function, target, &places.budget, None, limits)
        .map_err(|e| OracleError::NoAssignment(e.to_string()))?;
    let remat = rematerialisable(f);
    let slot = |v: Value| {
        places
            .of
            .get(&v)
            .copied()
            .unwrap_or(Location::Slot { first: 0, len: 0 })
    };
    Ok(restore(
        f,
        &assigned.function,
        &rewritten.original,
        r,
        &remat,
        &slot,
    ))
}
