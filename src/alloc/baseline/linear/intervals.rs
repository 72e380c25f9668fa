//! Lifetime intervals with holes and use positions (Wimmer & Mössenböck, "Optimized
//! Interval Splitting in a Linear Scan Register Allocator", VEE 2005, §3), built from the
//! SSA liveness sets in one backward walk per block (Wimmer & Franz, "Linear Scan Register
//! Allocation on SSA Form", CGO 2010, §4: no iterative data flow is needed because the
//! live-in sets come from SSA liveness).
//!
//! Program points are numbered over the blocks in layout order: a block's entry (its phis
//! are defined there), before and after each instruction (operands are read before,
//! definitions written after), and its exit (the terminator and the outgoing phi
//! arguments read there). An interval is a list of closed point ranges; its *uses* are
//! the points where it must be in a register (operands, definitions, phis at the entry).
//! An early-clobber definition, and one tied to an operand it receives by a copy, start
//! before the instruction. Fixed operands become [`Fixed`] blocks: at that point no
//! other value may hold the register (the value itself only by being exactly there).

use crate::alloc::baseline::ranges::{fixed_read, free_tie};
use crate::analysis::Analysis;
use crate::program::{Block, Function, Location, Op, Value};
use crate::target::{ClassId, SpillTarget, Target};
use std::collections::{BTreeMap, BTreeSet};

/// Where an interval lives once allocated: a register (its first unit) or the value's
/// spill slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    Reg(u16),
    Stack,
}

/// A register an interval should try first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hint {
    /// A fixed operand's first unit.
    Unit(u16),
    /// Where another value was last given a register (phi and argument, tied operands).
    Value(Value),
}

#[derive(Clone, Debug)]
pub struct Interval {
    pub value: Value,
    pub class: ClassId,
    pub size: u16,
    pub align: u16,
    /// Closed point ranges, sorted and disjoint.
    pub ranges: Vec<(u32, u32)>,
    /// Points where it must be in a register, sorted.
    pub uses: Vec<u32>,
    /// Whether it may be split (values of per-lane classes that spill to memory).
    pub splittable: bool,
    /// Whether it may leave its register for memory at all.
    pub spillable: bool,
    pub hints: Vec<Hint>,
    /// For a definition that receives a tied operand by a copy: the operand's value,
    /// whose register it may take where that value dies (then there is no copy).
    pub tie: Option<Value>,
    pub loc: Option<Loc>,
}

impl Interval {
    pub fn start(&self) -> u32 {
        self.ranges[0].0
    }

    pub fn end(&self) -> u32 {
        self.ranges[self.ranges.len() - 1].1
    }

    pub fn covers(&self, p: u32) -> bool {
        let i = self.ranges.partition_point(|&(_, e)| e < p);
        self.ranges.get(i).is_some_and(|&(s, _)| s <= p)
    }

    /// The first point at or after `from` that both cover.
    pub fn intersection(&self, other: &Interval, from: u32) -> Option<u32> {
        let (mut i, mut j) = (0, 0);
        while i < self.ranges.len() && j < other.ranges.len() {
            let (a, b) = (self.ranges[i], other.ranges[j]);
            let lo = a.0.max(b.0).max(from);
            if lo <= a.1.min(b.1) {
                return Some(lo);
            }
            if a.1 < b.1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        None
    }

    /// The first point at or after `from` where it must be in a register.
    pub fn use_from(&self, from: u32) -> Option<u32> {
        let i = self.uses.partition_point(|&u| u < from);
        self.uses.get(i).copied()
    }

    /// The first range start at or after `from`.
    pub fn range_start_from(&self, from: u32) -> Option<u32> {
        self.ranges.iter().map(|r| r.0).find(|&s| s >= from)
    }

    /// Cuts off and returns the part from point `at` on; `self` keeps what lies before.
    /// `None` when nothing of `self` lies at or after `at`, or nothing before it.
    pub fn split_at(&mut self, at: u32) -> Option<Interval> {
        if at <= self.start() || at > self.end() {
            return None;
        }
        let mut tail_ranges = Vec::new();
        let mut head_ranges = Vec::new();
        for &(s, e) in &self.ranges {
            if e < at {
                head_ranges.push((s, e));
            } else if s >= at {
                tail_ranges.push((s, e));
            } else {
                head_ranges.push((s, at - 1));
                tail_ranges.push((at, e));
            }
        }
        let cut = self.uses.partition_point(|&u| u < at);
        let tail_uses = self.uses.split_off(cut);
        self.ranges = head_ranges;
        Some(Interval {
            ranges: tail_ranges,
            uses: tail_uses,
            hints: vec![Hint::Value(self.value)],
            tie: None,
            loc: None,
            ..self.clone()
        })
    }
}

/// A register unit range no value but `owner` may hold at `point`; `owner` only by
/// starting exactly at `first` when `exact`, anywhere when not.
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    pub class: ClassId,
    pub first: u16,
    pub len: u16,
    pub point: u32,
    pub owner: Value,
    pub exact: bool,
}

impl Fixed {
    /// Whether an interval of `value` at units `s..s + size` may not be there at `point`.
    pub fn blocks(&self, value: Value, s: u16, size: u16) -> bool {
        let overlaps = s < self.first + self.len && self.first < s + size;
        overlaps && (value != self.owner || (self.exact && s != self.first))
    }
}

/// The numbering of program points.
#[derive(Debug)]
pub struct Numbering {
    entries: Vec<u32>,
    exits: Vec<u32>,
}

impl Numbering {
    pub fn new(f: &Function) -> Numbering {
        let (mut entries, mut exits) = (Vec::new(), Vec::new());
        let mut next = 0;
        for block in &f.blocks {
            entries.push(next);
            next += 1 + 2 * block.insts.len() as u32;
            exits.push(next);
            next += 1;
        }
        Numbering { entries, exits }
    }

    pub fn entry(&self, b: Block) -> u32 {
        self.entries[b.index()]
    }

    pub fn exit(&self, b: Block) -> u32 {
        self.exits[b.index()]
    }

    /// The point before instruction `i` of `b` (after it is one more).
    pub fn before(&self, b: Block, i: usize) -> u32 {
        self.entry(b) + 1 + 2 * i as u32
    }

    pub fn block_of(&self, p: u32) -> Block {
        Block(self.entries.partition_point(|&e| e <= p) as u32 - 1)
    }

    /// Whether a register may receive a value by a move inserted at `p`: before an
    /// instruction or the terminator, or on the edges into a block. Not between reading
    /// the operands and writing the definitions of one instruction.
    pub fn is_move_point(&self, p: u32) -> bool {
        let entry = self.entry(self.block_of(p));
        p == entry || (p - entry) % 2 == 1
    }
}

/// All intervals of a function (one per value, before splitting) and its fixed blocks.
#[derive(Debug)]
pub struct Intervals {
    pub list: Vec<Interval>,
    pub fixed: Vec<Fixed>,
}

/// Builds one interval per value; values in `spilled` are cut into a register interval at
/// each use (and the definition) and memory in between, so they never need a register
/// across a block boundary.
pub fn build(
    f: &Function,
    target: &Target,
    a: &Analysis,
    numbering: &Numbering,
    spilled: &BTreeSet<Value>,
) -> Intervals {
    let mut b = Builder {
        list: f
            .value_ids()
            .map(|v| empty_interval(f, target, a, v))
            .collect(),
        fixed: Vec::new(),
    };
    for block in f.block_ids() {
        b.block(f, a, numbering, block);
    }
    let mut list = Vec::new();
    for mut it in b.list {
        it.ranges.sort_unstable();
        it.uses.sort_unstable();
        it.uses.dedup();
        if spilled.contains(&it.value) {
            list.extend(spill_everywhere(it));
        } else {
            list.push(it);
        }
    }
    Intervals {
        list,
        fixed: b.fixed,
    }
}

fn empty_interval(f: &Function, target: &Target, a: &Analysis, v: Value) -> Interval {
    let data = f.value(v);
    let class = target.class(data.class);
    let def_block = a.liveness.def_block(v);
    let is_phi = f.block(def_block).phis.iter().any(|p| p.def.value == v);
    let to_memory = class.spill.contains(&SpillTarget::Memory);
    let spillable = to_memory && !(class.uniform && is_phi);
    Interval {
        value: v,
        class: data.class,
        size: data.size,
        align: class.align.alignment(data.size),
        ranges: Vec::new(),
        uses: Vec::new(),
        splittable: spillable && !class.uniform,
        spillable,
        hints: Vec::new(),
        tie: None,
        loc: None,
    }
}

/// A value spilled everywhere: a register at each use point (a definition tied or
/// early-clobber keeps both of its points), its slot everywhere else.
fn spill_everywhere(mut it: Interval) -> Vec<Interval> {
    let uses = it.uses.clone();
    let mut cuts = Vec::new();
    for (k, &u) in uses.iter().enumerate() {
        if k == 0 || uses[k - 1] + 1 != u {
            cuts.push(u);
        }
        if uses.get(k + 1) != Some(&(u + 1)) {
            cuts.push(u + 1);
        }
    }
    let mut parts = Vec::new();
    for &cut in cuts.iter().rev() {
        if let Some(tail) = it.split_at(cut) {
            parts.push(tail);
        }
    }
    parts.push(it);
    parts.reverse();
    for part in &mut parts {
        part.splittable = false;
        part.spillable = false;
        if part.uses.is_empty() {
            part.loc = Some(Loc::Stack);
        }
    }
    parts
}

struct Builder {
    list: Vec<Interval>,
    fixed: Vec<Fixed>,
}

impl Builder {
    fn range(&mut self, v: Value, from: u32, to: u32) {
        self.list[v.index()].ranges.push((from, to));
    }

    fn use_at(&mut self, v: Value, p: u32) {
        self.list[v.index()].uses.push(p);
    }

    fn fix(&mut self, loc: Option<Location>, point: u32, owner: Value, exact: bool) {
        if let Some(Location::Reg { class, first, len }) = loc {
            self.fixed.push(Fixed {
                class,
                first,
                len,
                point,
                owner,
                exact,
            });
            self.list[owner.index()].hints.push(Hint::Unit(first));
        }
    }

    /// Walks `b` backward: `open` maps each live value to the end of its open range.
    fn block(&mut self, f: &Function, a: &Analysis, n: &Numbering, b: Block) {
        let block = f.block(b);
        let (entry, exit) = (n.entry(b), n.exit(b));
        let mut open: BTreeMap<Value, u32> =
            a.liveness.live_out(b).iter().map(|&v| (v, exit)).collect();
        for u in block.term.uses() {
            open.entry(u.value).or_insert(exit);
            self.use_at(u.value, exit);
            self.fix(u.fixed, exit, u.value, true);
        }
        for (i, inst) in block.insts.iter().enumerate().rev() {
            if let Some(op) = inst.op() {
                self.instruction(op, n.before(b, i), &mut open);
            }
        }
        for phi in &block.phis {
            let p = phi.def.value;
            let end = open.remove(&p).unwrap_or(entry);
            self.range(p, entry, end);
            self.use_at(p, entry);
            for arg in &phi.args {
                self.list[p.index()].hints.push(Hint::Value(arg.value));
                self.list[arg.value.index()].hints.push(Hint::Value(p));
            }
        }
        for (v, end) in open {
            self.range(v, entry, end);
        }
    }

    fn instruction(&mut self, op: &Op, before: u32, open: &mut BTreeMap<Value, u32>) {
        let after = before + 1;
        for (k, d) in op.defs.iter().enumerate() {
            let end = open.remove(&d.value).unwrap_or(after);
            let tie = d
                .tied
                .map(usize::from)
                .filter(|&t| free_tie(op, t) == Some(k));
            let start = if d.early_clobber || tie.is_some() {
                self.use_at(d.value, before);
                before
            } else {
                after
            };
            self.range(d.value, start, end);
            self.use_at(d.value, after);
            self.fix(d.fixed, after, d.value, false);
            if d.early_clobber {
                self.fix(d.fixed, before, d.value, false);
            }
            if let Some(x) = tie.and_then(|t| op.operands[t].as_use()) {
                self.list[d.value.index()].hints.push(Hint::Value(x.value));
                self.list[d.value.index()].tie = Some(x.value);
            }
        }
        for (k, u) in op.operands.iter().enumerate() {
            let Some(u) = u.as_use() else { continue };
            open.entry(u.value).or_insert(before);
            self.use_at(u.value, before);
            self.fix(fixed_read(op, k), before, u.value, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(ranges: &[(u32, u32)], uses: &[u32]) -> Interval {
        Interval {
            value: Value(0),
            class: ClassId(0),
            size: 1,
            align: 1,
            ranges: ranges.to_vec(),
            uses: uses.to_vec(),
            splittable: true,
            spillable: true,
            hints: Vec::new(),
            tie: None,
            loc: Some(Loc::Reg(3)),
        }
    }

    /// A split inside a range cuts it; one in a hole leaves the tail starting where the
    /// interval resumes; uses go with their part, and the tail is placed afresh.
    #[test]
    fn split_cuts_ranges_and_uses() {
        let mut it = interval(&[(2, 9), (20, 25)], &[2, 5, 9, 22]);
        let tail = it.split_at(6).expect("a tail");
        assert_eq!(
            (it.ranges.clone(), it.uses.clone()),
            (vec![(2, 5)], vec![2, 5])
        );
        assert_eq!(
            (tail.ranges.clone(), tail.uses.clone()),
            (vec![(6, 9), (20, 25)], vec![9, 22])
        );
        assert_eq!(tail.loc, None);
        let mut tail = tail;
        let rest = tail.split_at(12).expect("a tail");
        assert_eq!(
            (tail.ranges, rest.start(), rest.end()),
            (vec![(6, 9)], 20, 25)
        );
        let mut whole = interval(&[(2, 9)], &[2]);
        assert!(whole.split_at(2).is_none() && whole.split_at(10).is_none());
    }

    #[test]
    fn intersection_and_coverage_skip_holes() {
        let a = interval(&[(0, 4), (10, 14)], &[]);
        let b = interval(&[(5, 11)], &[]);
        assert_eq!(a.intersection(&b, 0), Some(10));
        assert_eq!(a.intersection(&b, 12), None);
        assert!(a.covers(4) && !a.covers(7) && a.covers(10));
        assert_eq!(a.range_start_from(5), Some(10));
    }

    /// Moves go before an instruction, before the terminator or on the edges into a
    /// block; never between an instruction's reads and its writes.
    #[test]
    fn move_points() {
        let f = crate::parse("target generic v=4\nfunc @f {\nentry:\n  %a:v1 = load reads\n  store %a writes\n  ret\n}\n")
            .expect("parses")
            .functions
            .remove(0);
        let n = Numbering::new(&f);
        let points: Vec<bool> = (0..=n.exit(Block(0))).map(|p| n.is_move_point(p)).collect();
        assert_eq!(points, [true, true, false, true, false, true]);
    }
}
