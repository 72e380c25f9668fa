//! The allocation loop of Wimmer & Mössenböck ("Optimized Interval Splitting in a Linear
//! Scan Register Allocator", VEE 2005, §4), over the intervals of [`super::intervals`].
//!
//! Intervals are taken by increasing start. Those that ended are dropped; those in a hole
//! at the current position are *inactive* (their register is free until they resume).
//! `try_allocate_free_reg`: per legal start unit, the point until which it is free (held
//! by an active interval: not at all; by an inactive one or a fixed operand: until they
//! meet). A register free for the whole interval is taken — a hint first (the register
//! of a phi, an argument, a tied operand, the value's previous part), else the lowest or
//! the next round-robin one ([`crate::alloc::baseline::select`]), which keeps allocations
//! compact. Otherwise the register free longest is taken and the interval split before
//! it stops being free. `allocate_blocked_reg`: when none is free at the start, the
//! register whose holders are next used furthest away is chosen; if that is before the
//! interval's own first use, the interval itself goes to memory until just before that
//! use, else the holders are split at the current position and their rest goes to
//! memory until just before their next use. Split positions are chosen as in the paper:
//! the latest legal point, moved to the end of an enclosing block of lower loop depth
//! when there is one, so reloads leave loops.
//!
//! A definition tied to an operand may take that operand's register where the operand's
//! value dies (then no copy is needed).
//!
//! Values of uniform classes (and of classes that do not spill to memory) are never
//! split: they follow the linear CFG, where an edge from a branch to its else-side has no
//! place for a move. They get a register for their whole interval or, as in Poletto &
//! Sarkar's linear scan, the interval ending furthest among them is spilled everywhere
//! and the caller builds the intervals again.

use super::intervals::{Hint, Interval, Intervals, Loc, Numbering};
use crate::alloc::baseline::select::{starts, Chooser};
use crate::alloc::Policy;
use crate::analysis::loops::Loops;
use crate::program::{Block, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Why a scan did not place everything.
#[derive(Debug)]
pub enum Stop {
    /// Unsplittable values to spill everywhere before the next scan.
    Spill(Vec<Value>),
    /// A value that found no register even with everything around it evicted (with tuples,
    /// the free units can be scattered), and whether it may be spilled.
    Stuck { value: Value, spillable: bool },
}

/// Places every interval of `iv` (splitting some) in a register or memory.
pub fn scan(
    iv: &mut Intervals,
    numbering: &Numbering,
    loops: &Loops,
    budget: &[u16],
    policy: Policy,
    values: usize,
) -> Result<(), Stop> {
    let unhandled = iv
        .list
        .iter()
        .enumerate()
        .filter(|(_, it)| it.loc.is_none() && !it.ranges.is_empty())
        .map(|(i, it)| Reverse((it.start(), i as u32)))
        .collect();
    let mut scan = Scan {
        iv,
        numbering,
        loops,
        budget,
        choosers: budget.iter().map(|&k| Chooser::new(policy, k)).collect(),
        unhandled,
        active: Vec::new(),
        inactive: Vec::new(),
        last_reg: vec![None; values],
        spills: Vec::new(),
        stuck: None,
    };
    while let Some(Reverse((pos, i))) = scan.unhandled.pop() {
        scan.advance(pos);
        scan.allocate(i);
    }
    let Scan { spills, stuck, .. } = scan;
    match (spills.is_empty(), stuck) {
        (false, _) => Err(Stop::Spill(spills)),
        (true, Some((value, spillable))) => Err(Stop::Stuck { value, spillable }),
        (true, None) => Ok(()),
    }
}

struct Scan<'a> {
    iv: &'a mut Intervals,
    numbering: &'a Numbering,
    loops: &'a Loops,
    budget: &'a [u16],
    choosers: Vec<Chooser>,
    unhandled: BinaryHeap<Reverse<(u32, u32)>>,
    active: Vec<u32>,
    inactive: Vec<u32>,
    /// Per value, the register its latest part was given.
    last_reg: Vec<Option<u16>>,
    spills: Vec<Value>,
    stuck: Option<(Value, bool)>,
}

/// Per legal start unit, a point: where the register stops being free, or is next
/// needed by its holders.
type PerStart = Vec<(u16, u32)>;

impl Scan<'_> {
    fn it(&self, i: u32) -> &Interval {
        &self.iv.list[i as usize]
    }

    /// Drops the intervals that ended before `pos`; sorts the rest into active and
    /// inactive.
    fn advance(&mut self, pos: u32) {
        let before: Vec<u32> = std::mem::take(&mut self.active)
            .into_iter()
            .chain(std::mem::take(&mut self.inactive))
            .collect();
        for a in before {
            let it = self.it(a);
            if it.end() < pos {
                continue;
            }
            if it.covers(pos) {
                self.active.push(a);
            } else {
                self.inactive.push(a);
            }
        }
    }

    fn allocate(&mut self, i: u32) {
        let free = self.free_until(i);
        if self.place_whole(i, &free) {
            return;
        }
        if !self.it(i).splittable {
            self.spill_furthest(i);
            return;
        }
        let pos = self.it(i).start();
        let best = free.iter().copied().max_by_key(|&(s, fu)| (fu, Reverse(s)));
        if let Some((s, fu)) = best.filter(|&(_, fu)| fu > pos) {
            if let Some(at) = self.split_point(pos, fu) {
                self.assign(i, s);
                self.split_to_unhandled(i, at);
                return;
            }
        }
        self.allocate_blocked(i);
    }

    /// The active interval of the operand a definition tied to it may share a register
    /// with: `i` starts before its instruction, where the operand's value dies.
    fn tie_partner(&self, i: u32) -> Option<u32> {
        let c = self.it(i);
        let x = c.tie?;
        self.active.iter().copied().find(|&a| {
            let o = self.it(a);
            o.value == x && o.end() == c.start() && o.size == c.size
        })
    }

    /// The holders (active, or inactive and meeting `i`) of units `s..s + size` of `i`'s
    /// class, each with the first point it meets `i`; not `i`'s tie partner.
    fn holders(&self, i: u32, s: Option<u16>) -> Vec<(u32, u32)> {
        let partner = self.tie_partner(i);
        let c = self.it(i);
        let pos = c.start();
        let overlaps = |t: u16, size: u16| s.is_none_or(|s| t < s + c.size && s < t + size);
        let active = self.active.iter().map(|&a| (a, Some(pos)));
        let inactive = self
            .inactive
            .iter()
            .map(|&a| (a, self.it(a).intersection(c, pos)));
        active
            .chain(inactive)
            .filter_map(|(a, meet)| {
                let o = self.it(a);
                let Some(Loc::Reg(t)) = o.loc else {
                    return None;
                };
                let holds = o.class == c.class && overlaps(t, o.size) && Some(a) != partner;
                holds.then_some((a, meet?))
            })
            .collect()
    }

    /// Per legal start of `i`, the first point from its start where it is not free.
    fn free_until(&self, i: u32) -> PerStart {
        let c = self.it(i);
        let k = self.budget[c.class.index()];
        let mut unit = vec![u32::MAX; usize::from(k)];
        for (a, meet) in self.holders(i, None) {
            let (Some(Loc::Reg(t)), size) = (self.it(a).loc, self.it(a).size) else {
                continue;
            };
            for u in t..(t + size).min(k) {
                unit[usize::from(u)] = unit[usize::from(u)].min(meet);
            }
        }
        self.per_start(i, |s| {
            unit[usize::from(s)..usize::from(s + c.size)]
                .iter()
                .copied()
                .min()
        })
    }

    /// `at(s)` per legal start of `i`, lowered to the first fixed block of `i` there, and
    /// to its start where it would overlap its tie partner without taking its register.
    fn per_start(&self, i: u32, at: impl Fn(u16) -> Option<u32>) -> PerStart {
        let c = self.it(i);
        let partner = self.tie_partner(i).and_then(|a| match self.it(a).loc {
            Some(Loc::Reg(t)) => Some(t),
            _ => None,
        });
        let misplaced =
            |s: u16| partner.is_some_and(|t| s != t && s < t + c.size && t < s + c.size);
        let fixed: Vec<_> = self
            .iv
            .fixed
            .iter()
            .filter(|f| f.class == c.class && c.covers(f.point))
            .collect();
        starts(c.size, c.align, self.budget[c.class.index()])
            .map(|s| {
                let blocked = fixed
                    .iter()
                    .filter(|f| f.blocks(c.value, s, c.size))
                    .map(|f| f.point);
                let point = if misplaced(s) {
                    c.start()
                } else {
                    at(s).unwrap_or(u32::MAX)
                };
                let point = point.min(blocked.min().unwrap_or(u32::MAX));
                (s, point)
            })
            .collect()
    }

    /// Gives `i` a register free for its whole interval, if there is one.
    fn place_whole(&mut self, i: u32, free: &PerStart) -> bool {
        let c = self.it(i);
        let end = c.end();
        let hints: Vec<u16> = c
            .hints
            .iter()
            .filter_map(|h| match *h {
                Hint::Unit(u) => Some(u),
                Hint::Value(v) => self.last_reg[v.index()],
            })
            .collect();
        let fits = |s: u16| free.iter().any(|&(t, fu)| t == s && fu > end);
        let (size, align, class) = (c.size, c.align, c.class.index());
        match self.choosers[class].pick(size, align, &hints, &fits) {
            Some(s) => {
                self.assign(i, s);
                true
            }
            None => false,
        }
    }

    fn assign(&mut self, i: u32, s: u16) {
        let it = &mut self.iv.list[i as usize];
        it.loc = Some(Loc::Reg(s));
        self.last_reg[it.value.index()] = Some(s);
        self.active.push(i);
    }

    /// Splits `i` at `at`; the rest waits for its turn.
    fn split_to_unhandled(&mut self, i: u32, at: u32) {
        if let Some(tail) = self.iv.list[i as usize].split_at(at) {
            let t = self.push(tail);
            let start = self.it(t).start();
            self.unhandled.push(Reverse((start, t)));
        }
    }

    fn push(&mut self, it: Interval) -> u32 {
        self.iv.list.push(it);
        self.iv.list.len() as u32 - 1
    }

    /// No register is free at the start of `i`: take the one whose holders are needed
    /// furthest away, or send `i` to memory until its first use.
    fn allocate_blocked(&mut self, i: u32) {
        let pos = self.it(i).start();
        let k = usize::from(self.budget[self.it(i).class.index()]);
        let (mut next_use, mut blocked) = (vec![u32::MAX; k], vec![u32::MAX; k]);
        for (a, meet) in self.holders(i, None) {
            let o = self.it(a);
            let Some(Loc::Reg(t)) = o.loc else { continue };
            let resumes = o.range_start_from(pos);
            let next = o.use_from(pos);
            let stays = !o.splittable || next == Some(pos) || (next.is_some() && next == resumes);
            for u in usize::from(t)..(usize::from(t + o.size)).min(k) {
                if stays {
                    blocked[u] = blocked[u].min(meet);
                } else {
                    next_use[u] = next_use[u].min(next.unwrap_or(u32::MAX));
                }
            }
        }
        let size = usize::from(self.it(i).size);
        let block = self.per_start(i, |s| {
            blocked[usize::from(s)..usize::from(s) + size]
                .iter()
                .copied()
                .min()
        });
        let uses = self.per_start(i, |s| {
            next_use[usize::from(s)..usize::from(s) + size]
                .iter()
                .copied()
                .min()
        });
        let best = uses
            .iter()
            .zip(&block)
            .map(|(&(s, u), &(_, b))| (s, u.min(b), b))
            .max_by_key(|&(s, u, _)| (u, Reverse(s)));
        let first = self.it(i).use_from(pos);
        let Some((s, use_pos, block_pos)) = best else {
            return self.stuck(i);
        };
        if first != Some(pos) && first.is_none_or(|f| use_pos < f) {
            return self.send_to_memory(i, pos);
        }
        if use_pos <= pos {
            return self.stuck(i);
        }
        if block_pos <= self.it(i).end() {
            let Some(at) = self.split_point(pos, block_pos) else {
                return self.stuck(i);
            };
            self.split_to_unhandled(i, at);
        }
        for (a, _) in self.holders(i, Some(s)) {
            self.evict(a, pos);
        }
        self.assign(i, s);
    }

    /// `i` lives in memory from `from` until just before its next use, where a new part
    /// waits for a register.
    fn send_to_memory(&mut self, i: u32, from: u32) {
        self.iv.list[i as usize].loc = Some(Loc::Stack);
        let it = self.it(i);
        let Some(next) = it.use_from(it.start()) else {
            return;
        };
        match self.split_point(from.max(it.start()), next) {
            Some(at) => self.split_to_unhandled(i, at),
            None => self.stuck(i),
        }
    }

    /// Splits holder `a` where it next meets the current position; the rest goes to
    /// memory.
    fn evict(&mut self, a: u32, pos: u32) {
        self.active.retain(|&x| x != a);
        self.inactive.retain(|&x| x != a);
        let o = self.it(a);
        let Some(at) = (if o.covers(pos) {
            Some(pos)
        } else {
            o.range_start_from(pos)
        }) else {
            return;
        };
        let rest = if at <= o.start() {
            a
        } else {
            match self.iv.list[a as usize].split_at(at) {
                Some(tail) => self.push(tail),
                None => return,
            }
        };
        self.send_to_memory(rest, pos);
    }

    /// Poletto & Sarkar for an interval that may not be split: spill everywhere the value
    /// of the spillable interval meeting it that ends furthest (possibly itself) until it
    /// fits; the caller scans again.
    fn spill_furthest(&mut self, i: u32) {
        loop {
            let free = self.free_until(i);
            if self.place_whole(i, &free) {
                return;
            }
            let me = self.it(i);
            let victim = self
                .holders(i, None)
                .into_iter()
                .map(|(a, _)| a)
                .filter(|&a| self.it(a).spillable)
                .chain(me.spillable.then_some(i))
                .max_by_key(|&a| (self.it(a).end(), a));
            match victim {
                None => return self.stuck(i),
                Some(v) => {
                    self.spills.push(self.it(v).value);
                    self.iv.list[v as usize].loc = None;
                    self.active.retain(|&x| x != v);
                    self.inactive.retain(|&x| x != v);
                    if v == i {
                        return;
                    }
                }
            }
        }
    }

    fn stuck(&mut self, i: u32) {
        let it = self.it(i);
        self.stuck = self.stuck.or(Some((it.value, it.spillable)));
    }

    /// A point in `(min, max]` where a move may go: the latest, or the end of the last
    /// block in between whose loop depth is lower than at `max` (Wimmer & Mössenböck's
    /// optimal split position).
    fn split_point(&self, min: u32, max: u32) -> Option<u32> {
        let n = self.numbering;
        let latest = if n.is_move_point(max) { max } else { max - 1 };
        if latest <= min {
            return None;
        }
        let (low, high) = (n.block_of(min), n.block_of(max));
        let mut depth = self.loops.depth(high);
        let mut best = latest;
        for b in (low.0..high.0).rev().map(Block) {
            let exit = n.exit(b);
            if self.loops.depth(b) < depth && exit > min {
                depth = self.loops.depth(b);
                best = exit;
            }
        }
        Some(best)
    }
}
