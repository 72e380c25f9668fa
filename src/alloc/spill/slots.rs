//! Spill-slot colouring: spilled values whose spilled lifetimes do not interfere share a
//! location, as registers do in Chaitin-style allocators.
//!
//! A location is live from a store into it to the last reload from it: a backward
//! dataflow over the stores and reloads of each owner, on the CFG its units follow:
//! logical for scratch slots of per-lane values; linear for lanes and for scratch slots of
//! uniform values, which are written regardless of the exec mask (`docs/FORMAT.md`). The
//! two kinds of scratch owner never share a slot: a whole-wave store would overwrite
//! lanes that a per-lane owner's lifetime on the logical CFG does not see. Stores dominate
//! reloads (one store right after the definition, or one at the end of every predecessor
//! of a memory phi), so two lifetimes overlap exactly when one owner is live just after a
//! store of the other. A memory phi's location is live into its block even when no reload
//! follows: the phi itself names it there. Owners are then placed greedily in order, each
//! at the lowest offset free of its interfering neighbours; a tuple takes consecutive
//! units, which for lanes stay in one register.
//!
//! The stores and reloads come from [`Sites`], which the rewrite fills as it inserts them,
//! not from a walk over the function: a large function is not read again for the few
//! instructions that touch spill locations.

use super::sorted::SortedSet;
use crate::analysis::cfg::Graph;
use crate::program::{Block, Function, Value};
use rustc_hash::FxHashMap;

/// A store into (`store`) or a reload from an owner's spill location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub owner: Value,
    pub store: bool,
}

/// Per block, its stores into and reloads from spill locations: (instruction index,
/// access), in instruction order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sites {
    blocks: Vec<Vec<(u32, Access)>>,
}

impl Sites {
    /// No accesses in any of `blocks` blocks.
    pub fn new(blocks: usize) -> Sites {
        Sites {
            blocks: vec![Vec::new(); blocks],
        }
    }

    /// Records instructions inserted into `b`: each goes before the instruction that was
    /// at index `at` (after those inserted there before it), given in the order they go,
    /// with its access if it is a store or a reload. The accesses already recorded move
    /// down by the instructions inserted at or above them.
    pub fn insert(&mut self, b: Block, inserted: &[(u32, Option<Access>)]) {
        let old = std::mem::take(&mut self.blocks[b.index()]);
        let mut merged = Vec::with_capacity(old.len() + inserted.len());
        let mut old = old.into_iter().peekable();
        for (j, &(at, access)) in inserted.iter().enumerate() {
            let shift = j as u32;
            while let Some((k, a)) = old.next_if(|&(k, _)| k < at) {
                merged.push((k + shift, a));
            }
            if let Some(a) = access {
                merged.push((at + shift, a));
            }
        }
        let shift = inserted.len() as u32;
        merged.extend(old.map(|(k, a)| (k + shift, a)));
        self.blocks[b.index()] = merged;
    }

    /// Where a reload from a spill location comes right before a store into one: the
    /// block and the reload's index. Only there can a reload and a store copy a location
    /// onto itself ([`super::coalesce`]).
    pub fn reloads_before_stores(&self) -> impl Iterator<Item = (Block, usize)> + '_ {
        self.blocks.iter().enumerate().flat_map(|(b, accesses)| {
            accesses
                .windows(2)
                .filter(|pair| !pair[0].1.store && pair[1].1.store && pair[1].0 == pair[0].0 + 1)
                .map(move |pair| (Block(b as u32), pair[0].0 as usize))
        })
    }
}

/// The owners to colour and what ties them: memory phis (their block, their owner), and
/// partners (a memory phi's argument and the phi) that want one location, so that the
/// argument's store fills the phi and the edge copies nothing; and where the function
/// stores and reloads each owner.
#[derive(Clone, Copy, Debug)]
pub struct Owners<'a> {
    pub list: &'a [Value],
    pub phis: &'a [(Block, Value)],
    pub partners: &'a [(Value, Value)],
    pub sites: &'a Sites,
}

impl<'a> Owners<'a> {
    fn only(&self, list: &'a [Value]) -> Owners<'a> {
        Owners { list, ..*self }
    }
}

/// Scratch slots for the owners: (owner, first slot). Per-lane owners are coloured on the
/// logical CFG from slot 0; owners for which `uniform` holds on the linear CFG, in the
/// slots above.
pub fn colour_memory(
    f: &Function,
    (logical, linear): (&Graph, &Graph),
    owners: Owners,
    uniform: impl Fn(Value) -> bool,
) -> Vec<(Value, u32)> {
    let (wave, lane): (Vec<Value>, Vec<Value>) = owners.list.iter().partition(|&&o| uniform(o));
    let mut placed = colour_slots(f, logical, owners.only(&lane));
    let base = slots_end(f, &placed);
    let above = colour_slots(f, linear, owners.only(&wave));
    placed.extend(above.into_iter().map(|(o, first)| (o, base + first)));
    placed
}

/// Nothing to colour costs nothing: the interference of no owners would still walk the
/// function and solve its dataflow over every block.
fn colour_slots(f: &Function, graph: &Graph, owners: Owners) -> Vec<(Value, u32)> {
    if owners.list.is_empty() {
        return Vec::new();
    }
    let adj = interference(graph, owners);
    place(f, owners, &adj, None, u32::MAX)
}

/// The first slot after every placed owner.
fn slots_end(f: &Function, placed: &[(Value, u32)]) -> u32 {
    placed
        .iter()
        .map(|&(o, first)| first + u32::from(f.value(o).size))
        .max()
        .unwrap_or(0)
}

/// Lanes for `owners`, `lanes` per register and at most `regs` registers: (owner, lane
/// offset counted across registers). Owners that do not fit are left out.
pub fn colour_lanes(
    f: &Function,
    linear: &Graph,
    owners: Owners,
    lanes: u16,
    regs: u16,
) -> Vec<(Value, u32)> {
    let adj = interference(linear, owners);
    let limit = u32::from(lanes) * u32::from(regs);
    place(f, owners, &adj, Some(u32::from(lanes)), limit)
}

/// How many registers the placed lanes occupy.
pub fn lane_registers(placed: &[(Value, u32)], lanes: u16) -> u16 {
    placed
        .iter()
        .map(|&(_, offset)| offset / u32::from(lanes) + 1)
        .max()
        .unwrap_or(0) as u16
}

/// Greedy colouring in owner order: a partner's location when it fits, else the lowest
/// that does.
fn place(
    f: &Function,
    owners: Owners,
    adj: &[Vec<usize>],
    row: Option<u32>,
    limit: u32,
) -> Vec<(Value, u32)> {
    let list = owners.list;
    let partners = partners_by_index(owners);
    let mut at: Vec<Option<u32>> = vec![None; list.len()];
    let mut taken = Taken::default();
    for (i, &o) in list.iter().enumerate() {
        let len = u32::from(f.value(o).size);
        taken.fill(
            adj[i]
                .iter()
                .filter_map(|&j| Some((at[j]?, u32::from(f.value(list[j]).size)))),
        );
        let fits = |t: u32| row.is_none_or(|r| t % r + len <= r) && taken.is_free(t, len);
        let partner = partners[i].iter().filter_map(|&j| at[j]).find(|&t| fits(t));
        let first = partner.unwrap_or_else(|| taken.lowest(len, row, &fits));
        if first + len <= limit {
            at[i] = Some(first);
        }
    }
    list.iter()
        .zip(at)
        .filter_map(|(&o, t)| Some((o, t?)))
        .collect()
}

/// Per owner (by its index in the list), the indices of its partners, in the order of
/// the partner pairs.
fn partners_by_index(owners: Owners) -> Vec<Vec<usize>> {
    let mut index: FxHashMap<Value, usize> = FxHashMap::default();
    for (i, &o) in owners.list.iter().enumerate() {
        index.entry(o).or_insert(i);
    }
    let mut partners = vec![Vec::new(); owners.list.len()];
    for &(x, y) in owners.partners {
        if let (Some(&i), Some(&j)) = (index.get(&x), index.get(&y)) {
            partners[i].push(j);
            if i != j {
                partners[j].push(i);
            }
        }
    }
    partners
}

/// The locations an owner's placed neighbours hold, one bit per location: whether a
/// window is free is a few word tests, and the search for the lowest free one skips
/// whole words that are taken.
#[derive(Debug, Default)]
struct Taken {
    bits: Vec<u64>,
}

impl Taken {
    /// Marks the intervals (start, units), after clearing the marks of the owner before.
    fn fill(&mut self, intervals: impl Iterator<Item = (u32, u32)>) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        for (s, n) in intervals {
            for t in s..s + n {
                let word = (t / 64) as usize;
                if word >= self.bits.len() {
                    self.bits.resize(word + 1, 0);
                }
                self.bits[word] |= 1 << (t % 64);
            }
        }
    }

    fn is_taken(&self, t: u32) -> bool {
        self.bits
            .get((t / 64) as usize)
            .is_some_and(|w| w & (1 << (t % 64)) != 0)
    }

    /// Whether no interval covers a location of `t..t + len`.
    fn is_free(&self, t: u32, len: u32) -> bool {
        (t..t + len).all(|u| !self.is_taken(u))
    }

    /// The lowest location not taken at or above `from`.
    fn next_free(&self, from: u32) -> u32 {
        let mut word = (from / 64) as usize;
        let mut mask = !0u64 << (from % 64);
        while let Some(&w) = self.bits.get(word) {
            let free = !w & mask;
            if free != 0 {
                return word as u32 * 64 + free.trailing_zeros();
            }
            word += 1;
            mask = !0;
        }
        from.max(word as u32 * 64)
    }

    /// The lowest location where `fits` holds (0 when none does below the marks and a
    /// register's worth above them, where nothing is taken).
    fn lowest(&self, len: u32, row: Option<u32>, fits: &dyn Fn(u32) -> bool) -> u32 {
        let end = self.bits.len() as u32 * 64 + len + row.unwrap_or(0);
        let mut t = self.next_free(0);
        while t <= end {
            if fits(t) {
                return t;
            }
            t = self.next_free(t + 1);
        }
        0
    }
}

/// Per owner, the owners whose lifetimes overlap its own (in no order, an owner stored
/// twice may list one twice: colouring only marks their locations).
fn interference(graph: &Graph, owners: Owners) -> Vec<Vec<usize>> {
    let index: FxHashMap<Value, usize> = owners
        .list
        .iter()
        .enumerate()
        .map(|(i, &o)| (o, i))
        .collect();
    let accesses = accesses(owners.sites, &index);
    let live_out = live_out_sets(graph, &accesses, &index, owners.phis);
    let mut adj = vec![Vec::new(); owners.list.len()];
    for (b, block) in accesses.iter().enumerate() {
        let mut live = live_out[b].clone();
        walk_back(block, &mut live, |o, live| {
            for &other in live.iter().filter(|&&x| x != o) {
                adj[o].push(other);
                adj[other].push(o);
            }
        });
    }
    adj
}

/// Per block, its stores into and reloads from the owners' locations in order: the
/// owner's index and whether it is a store. The dataflow walks these lists only.
fn accesses(sites: &Sites, index: &FxHashMap<Value, usize>) -> Vec<Vec<(usize, bool)>> {
    sites
        .blocks
        .iter()
        .map(|block| {
            block
                .iter()
                .filter_map(|&(_, a)| Some((*index.get(&a.owner)?, a.store)))
                .collect()
        })
        .collect()
}

/// Owners live at the end of each block, to the fixpoint.
fn live_out_sets(
    graph: &Graph,
    accesses: &[Vec<(usize, bool)>],
    index: &FxHashMap<Value, usize>,
    phis: &[(Block, Value)],
) -> Vec<SortedSet<usize>> {
    let n = accesses.len();
    let mut entry: Vec<SortedSet<usize>> = vec![SortedSet::default(); n];
    for (d, owner) in phis {
        if let Some(&i) = index.get(owner) {
            entry[d.index()].insert(i);
        }
    }
    let mut live_in: Vec<SortedSet<usize>> = entry.clone();
    let mut live_out: Vec<SortedSet<usize>> = vec![SortedSet::default(); n];
    let order = graph.rpo_all();
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev() {
            let out: SortedSet<usize> = graph
                .succs(b)
                .iter()
                .flat_map(|s| live_in[s.index()].iter().copied())
                .collect();
            let mut live = out.clone();
            walk_back(&accesses[b.index()], &mut live, |_, _| {});
            live_out[b.index()] = out;
            live.extend(entry[b.index()].iter().copied());
            if live != live_in[b.index()] {
                live_in[b.index()] = live;
                changed = true;
            }
        }
    }
    live_out
}

/// Walks a block's accesses backward from `live` (owners live at its end): a reload
/// makes its owner live, a store ends it; `at_store` sees each stored owner with the
/// owners live just after.
fn walk_back(
    accesses: &[(usize, bool)],
    live: &mut SortedSet<usize>,
    mut at_store: impl FnMut(usize, &SortedSet<usize>),
) {
    for &(o, store) in accesses.iter().rev() {
        if store {
            at_store(o, live);
            live.remove(&o);
        } else {
            live.insert(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inserting instructions block by block, as the rewrite does for each class, leaves
    /// the recorded accesses where the instructions went: the same list as a walk over a
    /// model block that holds, per instruction, its access if it has one.
    #[test]
    fn sites_follow_the_instructions_inserted() {
        let mut seed = 5u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..500 {
            let mut sites = Sites::new(1);
            let mut model: Vec<Option<Access>> = vec![None; next(6) as usize];
            for _ in 0..1 + next(3) {
                let mut inserted: Vec<(u32, Option<Access>)> = (0..next(6))
                    .map(|_| {
                        let at = next(model.len() as u64 + 1) as u32;
                        let access = (next(3) > 0).then(|| Access {
                            owner: Value(next(4) as u32),
                            store: next(2) == 0,
                        });
                        (at, access)
                    })
                    .collect();
                inserted.sort_by_key(|&(at, _)| at);
                let mut merged = Vec::new();
                let mut items = inserted.iter().peekable();
                for (k, &inst) in model.iter().enumerate() {
                    while let Some(&(_, add)) = items.next_if(|&&(at, _)| at as usize <= k) {
                        merged.push(add);
                    }
                    merged.push(inst);
                }
                merged.extend(items.map(|&(_, add)| add));
                model = merged;
                sites.insert(Block(0), &inserted);
                let walked: Vec<(u32, Access)> = model
                    .iter()
                    .enumerate()
                    .filter_map(|(k, a)| Some((k as u32, (*a)?)))
                    .collect();
                assert_eq!(sites.blocks[0], walked, "{inserted:?}");
            }
        }
    }

    /// A reload right before a store is found wherever the rewrite put one, and nowhere
    /// else: not a store before a reload, not a reload and a store apart.
    #[test]
    fn reloads_before_stores_are_the_adjacent_pairs() {
        let access = |owner, store| {
            Some(Access {
                owner: Value(owner),
                store,
            })
        };
        let mut sites = Sites::new(3);
        sites.insert(Block(0), &[(0, access(1, false)), (0, access(1, true))]);
        sites.insert(Block(1), &[(0, access(2, true)), (0, access(2, false))]);
        sites.insert(
            Block(2),
            &[(0, access(3, false)), (0, None), (0, access(3, true))],
        );
        sites.insert(Block(2), &[(3, access(4, false)), (3, access(5, true))]);
        let found: Vec<(Block, usize)> = sites.reloads_before_stores().collect();
        assert_eq!(found, [(Block(0), 0), (Block(2), 3)]);
    }

    /// The search over free locations finds the lowest that fits, as trying every
    /// location from 0 does, for slots and for lanes in registers of 4 and 8.
    #[test]
    fn lowest_is_the_first_location_that_fits() {
        let mut seed = 9u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut taken = Taken::default();
        for _ in 0..5_000 {
            let intervals: Vec<(u32, u32)> = (0..next(12))
                .map(|_| (next(150) as u32, 1 + next(4) as u32))
                .collect();
            taken.fill(intervals.iter().copied());
            let len = 1 + next(4) as u32;
            for row in [None, Some(4), Some(8)] {
                let fits = |t: u32| {
                    row.is_none_or(|r| t % r + len <= r)
                        && intervals.iter().all(|&(s, n)| t + len <= s || s + n <= t)
                };
                let naive = (0..).find(|&t| fits(t)).expect("room above every interval");
                assert_eq!(
                    taken.lowest(len, row, &fits),
                    naive,
                    "{intervals:?} {len} {row:?}"
                );
            }
        }
    }
}
