//! Starting solutions for the branch and bound: the one read off another allocator's
//! allocation (where every value sits at its definition), and a greedy first fit in
//! definition order (optimal for SSA programs of single-unit values without constraints,
//! whose interference graphs are chordal: Hack & Goos, "Optimal register allocation for
//! SSA-form programs in polynomial time", IPL 2006). The better feasible one seeds the
//! solver and is the answer when the solver finds nothing better in its limits, so the
//! oracle is never worse than the allocation it was handed, when that fits the model.

use crate::problem::ClassProblem;
use chromatic::program::{Function, Location};

/// First register per group.
pub type Assignment = Vec<u16>;

/// The registers an assignment uses: its highest unit plus one, at least the reserved.
pub fn registers(p: &ClassProblem, a: &[u16]) -> u16 {
    p.groups
        .iter()
        .zip(a)
        .map(|(g, &first)| first + g.size)
        .fold(p.reserved, u16::max)
}

/// Whether `a` satisfies every constraint of `p` within `cap` units.
pub fn feasible(p: &ClassProblem, a: &[u16], cap: u16) -> bool {
    let placed = p
        .groups
        .iter()
        .zip(a)
        .all(|(g, &first)| g.allows(first) && first + g.size <= cap);
    placed && p.instants.iter().all(|set| disjoint(p, set, a))
}

fn disjoint(p: &ClassProblem, set: &[usize], a: &[u16]) -> bool {
    let mut ranges: Vec<(u16, u16)> = set
        .iter()
        .map(|&g| (a[g], a[g] + p.groups[g].size))
        .collect();
    ranges.sort_unstable();
    ranges.windows(2).all(|w| w[0].1 <= w[1].0)
}

/// Per group, where `allocated` (an allocation of `original`) defines its first member.
pub fn wishes(p: &ClassProblem, original: &Function, allocated: &Function) -> Vec<Option<u16>> {
    let mut at: Vec<Option<u16>> = vec![None; original.values.len()];
    for block in &allocated.blocks {
        let phis = block.phis.iter().map(|phi| &phi.def);
        let defs = block
            .insts
            .iter()
            .filter_map(|i| i.op())
            .flat_map(|op| &op.defs);
        for d in phis.chain(defs) {
            let same = original
                .values
                .get(d.value.index())
                .is_some_and(|v| v.name == allocated.value(d.value).name);
            if let (true, Some(Location::Reg { first, .. })) = (same, d.loc) {
                at[d.value.index()] = Some(first);
            }
        }
    }
    p.groups.iter().map(|g| at[g.members[0].index()]).collect()
}

/// The wishes as an assignment, when every group has one.
pub fn complete(wishes: &[Option<u16>]) -> Option<Assignment> {
    wishes.iter().copied().collect()
}

/// First fit in definition order, fixed groups first, each group at its wish when that
/// fits; `None` when a group finds no room within `cap`.
pub fn greedy(p: &ClassProblem, cap: u16, wishes: Option<&[Option<u16>]>) -> Option<Assignment> {
    let neighbours = neighbours(p);
    let mut a: Vec<Option<u16>> = vec![None; p.groups.len()];
    let fixed = (0..p.groups.len()).filter(|&g| p.groups[g].fixed.is_some());
    let free = (0..p.groups.len()).filter(|&g| p.groups[g].fixed.is_none());
    for g in fixed.chain(free) {
        let group = &p.groups[g];
        let taken: Vec<(u16, u16)> = neighbours[g]
            .iter()
            .filter_map(|&n| Some((a[n]?, p.groups[n].size)))
            .collect();
        let fits = |r: u16| {
            group.allows(r)
                && taken
                    .iter()
                    .all(|&(f, s)| r + group.size <= f || f + s <= r)
        };
        let wish = wishes
            .and_then(|w| w[g])
            .filter(|&r| r + group.size <= cap && fits(r));
        a[g] = Some(wish.or_else(|| (0..=cap.checked_sub(group.size)?).find(|&r| fits(r)))?);
    }
    a.into_iter().collect()
}

/// Per group, the groups it shares an instant with.
fn neighbours(p: &ClassProblem) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); p.groups.len()];
    for set in &p.instants {
        for &g in set {
            out[g].extend(set.iter().filter(|&&h| h != g));
        }
    }
    for n in &mut out {
        n.sort_unstable();
        n.dedup();
    }
    out
}
