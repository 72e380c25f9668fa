//! Chaitin–Briggs graph colouring in the style of Mesa's `util/register_allocate.c`.
//!
//! Simplify (Chaitin, "Register allocation & spilling via graph coloring", SIGPLAN 1982):
//! repeatedly remove a node that is trivially colourable and push it on a stack. With
//! tuples of several sizes and alignments, "trivially colourable" is Runeson & Nyström's
//! test ("Retargetable Graph-Coloring Register Allocation for Irregular Architectures",
//! SCOPES 2003): `q(B, C)` is the most registers of class C one register of class B can
//! block (Mesa's `classes[c]->q[b]`), and a node of class C is trivially colourable when
//! the sum of `q(neighbour's class, C)` over its remaining neighbours is below `p(C)`, the
//! registers C has (here the legal start units inside the budget, less those its
//! forbidden units exclude). A class is a shape here: size and alignment.
//! When no node is, the one with the lowest spill cost per unit of degree is pushed
//! anyway (Briggs, Cooper & Torczon, "Improvements to graph coloring register
//! allocation", TOPLAS 1994: optimistic colouring). Select pops the stack and gives each
//! node the first free register ([`super::select`]); a node left without one is an
//! actual spill, and the caller rewrites the program and colours again.

use super::ranges::{Model, Range};
use super::select::{misplaced, starts, Chooser};
use super::Round;
use crate::alloc::Policy;
use std::collections::HashMap;

pub fn color(model: &Model, budget: &[u16], policy: Policy) -> Round {
    let stack = simplify(model, budget);
    select(model, budget, policy, &stack)
}

/// Runeson–Nyström `q(B, C)` for the shapes (size, alignment) of two ranges of one class.
#[derive(Default)]
struct QTable {
    cache: HashMap<(u16, u16, u16, u16, u16), u32>,
}

impl QTable {
    /// The most start units of `of`'s shape that one placement of `by` overlaps.
    fn q(&mut self, by: &Range, of: &Range, budget: u16) -> u32 {
        let key = (by.size, by.align, of.size, of.align, budget);
        *self.cache.entry(key).or_insert_with(|| {
            starts(by.size, by.align, budget)
                .map(|x| {
                    starts(of.size, of.align, budget)
                        .filter(|&y| y < x + by.size && x < y + of.size)
                        .count() as u32
                })
                .max()
                .unwrap_or(0)
        })
    }
}

/// `p`: the start units a range may take, its forbidden units excluded.
fn registers(r: &Range, budget: u16) -> u32 {
    starts(r.size, r.align, budget)
        .filter(|&s| {
            !misplaced(r, s)
                && !r
                    .forbidden
                    .iter()
                    .any(|&(f, len)| s < f.saturating_add(len) && f < s + r.size)
        })
        .count() as u32
}

/// The simplify stack, bottom first.
fn simplify(model: &Model, budget: &[u16]) -> Vec<u32> {
    let n = model.ranges.len();
    let k = |r: &Range| budget[r.class.index()];
    let mut q = QTable::default();
    let mut removed: Vec<bool> = model.ranges.iter().map(|r| r.in_memory).collect();
    let p: Vec<u32> = model.ranges.iter().map(|r| registers(r, k(r))).collect();
    let mut degree = vec![0u32; n];
    for (i, r) in model
        .ranges
        .iter()
        .enumerate()
        .filter(|(i, _)| !removed[*i])
    {
        for &m in &model.adj[i] {
            degree[i] += q.q(&model.ranges[m as usize], r, k(r));
        }
    }
    let mut low: Vec<u32> = (0..n as u32)
        .filter(|&i| !removed[i as usize] && degree[i as usize] < p[i as usize])
        .collect();
    let mut stack = Vec::with_capacity(n);
    let mut left = removed.iter().filter(|r| !**r).count();
    while left > 0 {
        let i = match low.pop() {
            Some(i) if !removed[i as usize] => i,
            Some(_) => continue,
            None => spill_candidate(model, &removed, &degree),
        };
        removed[i as usize] = true;
        left -= 1;
        stack.push(i);
        let ri = &model.ranges[i as usize];
        for &m in &model.adj[i as usize] {
            let (mu, rm) = (m as usize, &model.ranges[m as usize]);
            if removed[mu] {
                continue;
            }
            let was_high = degree[mu] >= p[mu];
            degree[mu] -= q.q(ri, rm, k(rm));
            if was_high && degree[mu] < p[mu] {
                low.push(m);
            }
        }
    }
    stack
}

/// Chaitin's choice: the lowest spill cost per unit of degree; ranges spilling cannot
/// help come last.
fn spill_candidate(model: &Model, removed: &[bool], degree: &[u32]) -> u32 {
    let key = |i: usize| {
        let r = &model.ranges[i];
        (r.cost.is_infinite(), r.cost / f64::from(degree[i].max(1)))
    };
    (0..model.ranges.len())
        .filter(|&i| !removed[i])
        .min_by(|&x, &y| {
            key(x)
                .partial_cmp(&key(y))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map_or(0, |i| i as u32)
}

fn select(model: &Model, budget: &[u16], policy: Policy, stack: &[u32]) -> Round {
    let mut choosers: Vec<Chooser> = budget.iter().map(|&k| Chooser::new(policy, k)).collect();
    let mut loc: Vec<Option<u16>> = vec![None; model.ranges.len()];
    let mut spills = Vec::new();
    let mut stuck = None;
    for &i in stack.iter().rev() {
        let r = &model.ranges[i as usize];
        let k = budget[r.class.index()];
        let mut taken = vec![false; usize::from(k)];
        for &m in &model.adj[i as usize] {
            if let Some(s) = loc[m as usize] {
                let size = model.ranges[m as usize].size;
                for u in s..(s + size).min(k) {
                    taken[usize::from(u)] = true;
                }
            }
        }
        let chosen = choosers[r.class.index()].choose(
            r,
            &|u| taken.get(usize::from(u)).copied().unwrap_or(true),
            &|o| loc[o as usize],
        );
        match chosen {
            Some(s) => loc[i as usize] = Some(s),
            None if r.cost.is_finite() => spills.push(r.value),
            None => stuck = stuck.or(Some(i)),
        }
    }
    Round::finish(loc, spills, stuck)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Value;
    use crate::target::ClassId;

    fn range(size: u16, align: u16) -> Range {
        Range {
            value: Value(0),
            class: ClassId(0),
            size,
            align,
            cost: 1.0,
            forbidden: Vec::new(),
            exact: Vec::new(),
            prefer: Vec::new(),
            in_memory: false,
        }
    }

    /// A single register blocks one aligned pair, an aligned pair two singles, an
    /// unaligned pair up to three unaligned pairs.
    #[test]
    fn q_counts_the_registers_one_neighbour_can_block() {
        let mut q = QTable::default();
        let (single, pair, loose_pair) = (range(1, 1), range(2, 2), range(2, 1));
        assert_eq!(q.q(&single, &pair, 8), 1);
        assert_eq!(q.q(&pair, &single, 8), 2);
        assert_eq!(q.q(&loose_pair, &loose_pair, 8), 3);
        assert_eq!(q.q(&pair, &pair, 8), 1);
        assert_eq!(registers(&pair, 8), 4);
    }
}
