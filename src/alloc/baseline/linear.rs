//! Linear scan (Poletto & Sarkar, "Linear Scan Register Allocation", TOPLAS 1999).
//!
//! Every range is one interval over a numbering of the program points (blocks in layout
//! order; [`super::ranges`]): the hull of the points where it is live, so intervals that
//! do not overlap never interfere. Intervals are visited by increasing start; those that
//! ended are expired from the active list, and the interval gets the first register no
//! active interval of its class holds ([`super::select`]). When there is none, the
//! interval among the active ones and itself that ends furthest away is spilled (the
//! paper's heuristic), repeatedly, until one fits. Spilled values are stored after their
//! definition and reloaded before each use, and the scan runs again on the rewritten
//! ranges, since the reloads need registers too (the paper reserves registers for them
//! instead). Intervals are not split (Wimmer & Franz's SSA-based splitting, CGO 2010, is
//! not done).

use super::ranges::Model;
use super::select::Chooser;
use super::Round;
use crate::alloc::Policy;

pub fn scan(model: &Model, budget: &[u16], policy: Policy) -> Round {
    let mut order: Vec<u32> = (0..model.ranges.len() as u32)
        .filter(|&i| !model.ranges[i as usize].in_memory)
        .collect();
    order.sort_by_key(|&i| (model.ranges[i as usize].start, i));
    let mut choosers: Vec<Chooser> = budget.iter().map(|&k| Chooser::new(policy, k)).collect();
    let mut held: Vec<Vec<u32>> = budget.iter().map(|&k| vec![0; usize::from(k)]).collect();
    let mut loc: Vec<Option<u16>> = vec![None; model.ranges.len()];
    let mut active: Vec<u32> = Vec::new();
    let mut spills = Vec::new();
    let mut stuck = None;
    for &i in &order {
        let r = &model.ranges[i as usize];
        let (c, start) = (r.class.index(), r.start);
        active.retain(|&a| {
            let keep = model.ranges[a as usize].end >= start;
            if !keep {
                release(model, &mut held, &loc, a);
            }
            keep
        });
        loop {
            let units = &held[c];
            let chosen = choosers[c].choose(
                r,
                &|u| units.get(usize::from(u)).is_none_or(|&n| n > 0),
                &|o| loc[o as usize],
            );
            if let Some(s) = chosen {
                loc[i as usize] = Some(s);
                take(model, &mut held, &loc, i);
                active.push(i);
                break;
            }
            match furthest(model, &active, i) {
                Some(v) if v == i => {
                    spills.push(r.value);
                    break;
                }
                Some(v) => {
                    release(model, &mut held, &loc, v);
                    loc[v as usize] = None;
                    active.retain(|&a| a != v);
                    spills.push(model.ranges[v as usize].value);
                }
                None => {
                    stuck = stuck.or(Some(i));
                    break;
                }
            }
        }
    }
    Round::finish(loc, spills, stuck)
}

/// The spillable interval of `i`'s class, among the active ones and `i`, that ends last.
fn furthest(model: &Model, active: &[u32], i: u32) -> Option<u32> {
    let class = model.ranges[i as usize].class;
    active
        .iter()
        .copied()
        .chain([i])
        .filter(|&a| {
            let r = &model.ranges[a as usize];
            r.class == class && r.cost.is_finite()
        })
        .max_by_key(|&a| (model.ranges[a as usize].end, a))
}

fn take(model: &Model, held: &mut [Vec<u32>], loc: &[Option<u16>], i: u32) {
    update(model, held, loc, i, |n| *n += 1);
}

fn release(model: &Model, held: &mut [Vec<u32>], loc: &[Option<u16>], i: u32) {
    update(model, held, loc, i, |n| *n -= 1);
}

fn update(model: &Model, held: &mut [Vec<u32>], loc: &[Option<u16>], i: u32, f: fn(&mut u32)) {
    let r = &model.ranges[i as usize];
    if let Some(s) = loc[i as usize] {
        for u in s..s + r.size {
            if let Some(n) = held[r.class.index()].get_mut(usize::from(u)) {
                f(n);
            }
        }
    }
}
