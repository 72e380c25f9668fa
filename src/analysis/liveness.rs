//! Liveness of SSA values: live-in and live-out sets per block, and kill points.
//!
//! Brandner, Boissinot, Darte, Dupont de Dinechin & Rastello, "Computing Liveness Sets for
//! SSA-Form Programs" (2011), path exploration: for each value and each use, walk
//! predecessors backwards from the use's block until the defining block, marking live-in
//! and live-out on the way; a phi argument is a use at the end of its predecessor. The
//! work is proportional to the size of the result, with no values × blocks bitsets, and
//! each block's sets come out sorted because values are processed in index order.
//!
//! Per-lane values walk the logical CFG; uniform values walk the linear CFG
//! ([`super::divergence`]), so a uniform value used on the else-side of a divergent branch
//! is live through the whole then-side.
//!
//! Kill points come from one backward walk per block: a use whose value is not live below
//! it is its last use there. A value used twice by one instruction is killed once. The
//! same walk ([`Liveness::walk_backward`] over a [`LiveSet`]) gives the live set before and
//! after every instruction, for pressure and the allocator. The blocks are walked from the
//! last to the first, the reverse of the order in which the walk before it wrote or read
//! the function (validation's copy for edge splitting, SSA repair): a function larger than
//! the cache is then met first where that walk left it in the cache, not where it has
//! already been evicted (a whole-function walk in the same order as the last one misses
//! on every line once the function outgrows the cache).
//!
//! The walk starts from every value's definition block and use sites ([`Sites`]), gathered
//! block by block: by a walk of their own, or by one that reads every block anyway
//! (validation, also for the function that edge splitting makes of the one it reads; the
//! spiller's SSA repair, adding the reads it renames once it has resolved them).
//!
//! Layout: the per-block sets are compressed rows ([`Rows`]), not one vector per block,
//! grouped from pairs gathered in fixed-size chunks ([`Pairs`]), which growth never copies.

use super::cfg::Graph;
use super::rows::{Pairs, Rows};
use crate::program::{Block, BlockData, Function, Use, Value};
use crate::target::{ClassId, Target};

/// Where in a block: `0..insts.len()` are instructions, `insts.len()` is the terminator.
pub type Point = u32;

#[derive(Clone, Debug, PartialEq)]
pub struct Liveness {
    live_in: Rows<Value>,
    live_out: Rows<Value>,
    /// Per block, `(point, value)` pairs sorted by point: the value's last use is there.
    kills: Rows<(Point, Value)>,
    /// Values defined but never used.
    dead: Vec<bool>,
    def_block: Vec<Block>,
}

impl Liveness {
    /// `logical` is the function's CFG, `linear` its linear CFG (equal without divergence).
    pub fn new(f: &Function, target: &Target, logical: &Graph, linear: &Graph) -> Liveness {
        Liveness::observed(f, target, (logical, linear), Sites::of(f), |_, _, _| {})
    }

    /// As [`Liveness::new`], from the definition and use sites of `f` (gathered by a walk
    /// that read `f` anyway, or [`Sites::of`]), calling `observe` at every position of the
    /// backward walk of every block that finds the kill points, from the last block to the
    /// first, so that an analysis of the live sets ([`super::pressure`]) shares that walk
    /// instead of reading the function again.
    pub fn observed(
        f: &Function,
        target: &Target,
        (logical, linear): (&Graph, &Graph),
        sites: Sites,
        observe: impl FnMut(Block, At, &LiveSet<'_>),
    ) -> Liveness {
        let n = f.blocks.len();
        let (def_block, uses) = sites.finish(f);
        let mut live_in = Pairs::expecting(uses.entry_count());
        let mut live_out = Pairs::expecting(uses.entry_count());
        let mut stamp_in = vec![u32::MAX; n];
        let mut stamp_out = vec![u32::MAX; n];
        let mut stack = Vec::new();
        for v in f.value_ids() {
            let graph = if target.class(f.value(v).class).uniform {
                linear
            } else {
                logical
            };
            let def = def_block[v.index()];
            for &(block, via_phi) in uses.row(v) {
                if via_phi && stamp_out[block.index()] != v.0 {
                    stamp_out[block.index()] = v.0;
                    live_out.push(block, v);
                }
                stack.push(block);
                while let Some(b) = stack.pop() {
                    if b == def || stamp_in[b.index()] == v.0 {
                        continue;
                    }
                    stamp_in[b.index()] = v.0;
                    live_in.push(b, v);
                    for &p in graph.preds(b) {
                        if stamp_out[p.index()] != v.0 {
                            stamp_out[p.index()] = v.0;
                            live_out.push(p, v);
                        }
                        stack.push(p);
                    }
                }
            }
        }
        let dead = f.value_ids().map(|v| uses.row(v).is_empty()).collect();
        let mut liveness = Liveness {
            live_in: live_in.grouped(n),
            live_out: live_out.grouped(n),
            kills: Rows::default(),
            dead,
            def_block,
        };
        liveness.kills = kill_points(f, target, &liveness, observe);
        liveness
    }

    /// Values live on entry to `b` (phi definitions of `b` excluded), sorted.
    pub fn live_in(&self, b: Block) -> &[Value] {
        self.live_in.row(b)
    }

    /// Values live on exit from `b` (including phi arguments of its successors), sorted.
    pub fn live_out(&self, b: Block) -> &[Value] {
        self.live_out.row(b)
    }

    /// How many values the live-in sets of all blocks hold together.
    pub fn live_in_count(&self) -> usize {
        self.live_in.entry_count()
    }

    /// How many values the live-out sets of all blocks hold together.
    pub fn live_out_count(&self) -> usize {
        self.live_out.entry_count()
    }

    /// Values whose last use in `b` is at `point`, in operand order.
    pub fn kills_at(&self, b: Block, point: Point) -> impl Iterator<Item = Value> + '_ {
        let kills = self.kills.row(b);
        let start = kills.partition_point(|&(p, _)| p < point);
        kills[start..]
            .iter()
            .take_while(move |&&(p, _)| p == point)
            .map(|&(_, v)| v)
    }

    pub fn is_killed_at(&self, b: Block, point: Point, v: Value) -> bool {
        self.kills_at(b, point).any(|k| k == v)
    }

    /// Whether `v` is never used.
    pub fn is_dead(&self, v: Value) -> bool {
        self.dead[v.index()]
    }

    /// The block defining `v`.
    pub fn def_block(&self, v: Value) -> Block {
        self.def_block[v.index()]
    }
}

/// Where each value is defined, and where it is used, gathered block by block in block
/// order: per value, its use sites, `(block, false)` for an operand in `block`, `(pred,
/// true)` for a phi argument coming from `pred`. Liveness starts from them; a walk that
/// reads every block anyway (validation) can gather them on the way, also for the function
/// that splitting some of the edges will make of the one it reads.
#[derive(Debug)]
pub struct Sites {
    def_block: Vec<Block>,
    uses: Pairs<Value, (Block, bool)>,
    /// Per block, the edges into it to be split: `(pred, the block that will split it)`.
    split: Rows<(Block, Block)>,
    /// The blocks gathered so far.
    blocks: usize,
}

/// The room [`Sites`] makes at first for the reads of the values, in reads per two
/// values (a value of regalloc2's generated functions or of the corpus is read 1.1 to 1.4
/// times), so that gathering them rarely grows the table.
const READS_PER_TWO_VALUES: usize = 3;

impl Sites {
    /// No block gathered yet, for `f` once `split` (edges of `f`) are split by new blocks
    /// numbered from `f.blocks.len()` on in their order, as [`super::cfg::split_edges`]
    /// does: a phi argument that comes over a split edge comes from the edge's new block,
    /// which holds nothing else.
    pub fn new(f: &Function, split: &[(Block, Block)]) -> Sites {
        let first = f.blocks.len();
        let into = (split.iter().enumerate())
            .map(|(k, &(pred, b))| (b, (pred, Block((first + k) as u32))))
            .collect();
        let split = Rows::grouped(first, into);
        Sites {
            def_block: vec![Block(0); f.values.len()],
            uses: Pairs::expecting(READS_PER_TWO_VALUES * f.values.len() / 2),
            split,
            blocks: 0,
        }
    }

    /// The sites of every block of `f`, from one pass over it.
    pub fn of(f: &Function) -> Sites {
        let mut sites = Sites::new(f, &[]);
        f.blocks.iter().for_each(|block| sites.push(block));
        sites
    }

    /// Gathers the next block of the function read, in block order.
    pub fn push(&mut self, block: &BlockData) {
        self.push_except(block, |_| false);
    }

    /// Gathers the next block of the function read, in block order, but the reads of the
    /// values `later` picks: whoever renames those reads afterwards adds them
    /// ([`Sites::add_use`]) once it knows what they read.
    pub fn push_except(&mut self, block: &BlockData, later: impl Fn(Value) -> bool) {
        let b = Block(self.blocks as u32);
        self.blocks += 1;
        for phi in &block.phis {
            self.def_block[phi.def.value.index()] = b;
            for arg in phi.args.iter().filter(|a| !later(a.value)) {
                let from = self.coming_from(arg.block, b);
                self.uses.push(arg.value, (from, true));
            }
        }
        for op in block.insts.iter().filter_map(|i| i.op()) {
            for d in &op.defs {
                self.def_block[d.value.index()] = b;
            }
            let uses = op.uses().filter(|u| !later(u.value));
            uses.for_each(|u| self.uses.push(u.value, (b, false)));
        }
        for u in block.term.uses().iter().filter(|u| !later(u.value)) {
            self.uses.push(u.value, (b, false));
        }
    }

    /// A read of `v` in `block` (`via_phi`: a phi argument coming from `block`) that
    /// [`Sites::push_except`] left out.
    pub fn add_use(&mut self, v: Value, (block, via_phi): (Block, bool)) {
        self.uses.push(v, (block, via_phi));
    }

    /// `v`, a value made after its block was gathered, is defined in `b`.
    pub fn define(&mut self, v: Value, b: Block) {
        if self.def_block.len() <= v.index() {
            self.def_block.resize(v.index() + 1, Block(0));
        }
        self.def_block[v.index()] = b;
    }

    /// The block an edge `pred → b` leaves from once split: its new block, or `pred`.
    fn coming_from(&self, pred: Block, b: Block) -> Block {
        self.split
            .row(b)
            .iter()
            .find(|&&(p, _)| p == pred)
            .map_or(pred, |&(_, new)| new)
    }

    /// The defining block of each value, and each value's use sites as a row, once every
    /// block of `f` is gathered.
    fn finish(self, f: &Function) -> (Vec<Block>, Rows<(Block, bool)>) {
        let blocks = self.blocks + self.split.entry_count();
        assert_eq!(blocks, f.blocks.len(), "every block is gathered");
        (self.def_block, self.uses.grouped(f.values.len()))
    }
}

/// A position of the backward walk of a block ([`Liveness::walk_backward`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Just after the instruction or terminator at this point (its defs removed next).
    After(Point),
    /// Just before it: its uses are live.
    Before(Point),
    /// Block entry, after the phis: the set is the live-in set.
    Entry,
}

/// A set of live values with their units per register class: O(1) insert, remove and
/// membership (a sparse set: `slot[v]` is `v`'s index in `members`), iteration in the
/// order of insertion up to removals.
#[derive(Clone, Debug)]
pub struct LiveSet<'f> {
    f: &'f Function,
    members: Vec<Value>,
    slot: Vec<u32>,
    units: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl<'f> LiveSet<'f> {
    /// An empty set for values of `f` in the register classes of `target`.
    pub fn new(f: &'f Function, target: &Target) -> LiveSet<'f> {
        LiveSet {
            f,
            members: Vec::new(),
            slot: vec![ABSENT; f.values.len()],
            units: vec![0; target.classes.len()],
        }
    }

    pub fn contains(&self, v: Value) -> bool {
        self.slot[v.index()] != ABSENT
    }

    /// The members, in no particular order.
    pub fn values(&self) -> &[Value] {
        &self.members
    }

    /// Units of `class` taken by the members.
    pub fn units(&self, class: ClassId) -> u32 {
        self.units.get(class.index()).copied().unwrap_or(0)
    }

    /// Units per class, indexed by class.
    pub fn all_units(&self) -> &[u32] {
        &self.units
    }

    /// Adds `v`; false when it was already there.
    pub fn insert(&mut self, v: Value) -> bool {
        if self.contains(v) {
            return false;
        }
        self.slot[v.index()] = self.members.len() as u32;
        self.members.push(v);
        self.count(v, |units, n| *units += n);
        true
    }

    /// Removes `v`; false when it was not there.
    pub fn remove(&mut self, v: Value) -> bool {
        let slot = self.slot[v.index()];
        if slot == ABSENT {
            return false;
        }
        self.slot[v.index()] = ABSENT;
        self.members.swap_remove(slot as usize);
        if let Some(&moved) = self.members.get(slot as usize) {
            self.slot[moved.index()] = slot;
        }
        self.count(v, |units, n| *units -= n);
        true
    }

    pub fn clear(&mut self) {
        for v in self.members.drain(..) {
            self.slot[v.index()] = ABSENT;
        }
        self.units.iter_mut().for_each(|u| *u = 0);
    }

    fn count(&mut self, v: Value, apply: impl FnOnce(&mut u32, u32)) {
        let data = self.f.value(v);
        if let Some(units) = self.units.get_mut(data.class.index()) {
            apply(units, u32::from(data.size));
        }
    }
}

impl Liveness {
    /// Walks `b` backward from its live-out set, calling `visit` with the live set at every
    /// position: `After(term)`, `Before(term)`, then `After(i)`, `Before(i)` for each
    /// instruction from last to first, then `Entry`. Definitions leave the set between
    /// `After` and `Before` (a dead def is never in it), uses join it. Instructions added by
    /// allocation (copies, spills…) define and use nothing here.
    pub fn walk_backward(
        &self,
        f: &Function,
        b: Block,
        live: &mut LiveSet<'_>,
        mut visit: impl FnMut(At, &LiveSet<'_>),
    ) {
        let block = f.block(b);
        live.clear();
        for &v in self.live_out(b) {
            live.insert(v);
        }
        let term = block.insts.len() as Point;
        visit(At::After(term), live);
        for u in block.term.uses() {
            live.insert(u.value);
        }
        visit(At::Before(term), live);
        for (i, inst) in block.insts.iter().enumerate().rev() {
            visit(At::After(i as Point), live);
            if let Some(op) = inst.op() {
                op.defs.iter().for_each(|d| _ = live.remove(d.value));
                op.uses().for_each(|u| _ = live.insert(u.value));
            }
            visit(At::Before(i as Point), live);
        }
        for phi in &block.phis {
            live.remove(phi.def.value);
        }
        visit(At::Entry, live);
    }
}

/// Last uses per block from one backward walk each, from the last block to the first: a
/// use whose value is not live just after its instruction is its last use; a value used
/// twice there is killed once.
fn kill_points(
    f: &Function,
    target: &Target,
    liveness: &Liveness,
    mut observe: impl FnMut(Block, At, &LiveSet<'_>),
) -> Rows<(Point, Value)> {
    let mut live = LiveSet::new(f, target);
    let mut block_kills = Vec::new();
    let mut from_last = Vec::with_capacity(kills_bound(f, liveness));
    let mut ends = Vec::with_capacity(f.blocks.len());
    for b in (0..f.blocks.len() as u32).rev().map(Block) {
        let block = f.block(b);
        block_kills.clear();
        liveness.walk_backward(f, b, &mut live, |at, live| {
            observe(b, at, live);
            let At::After(point) = at else { return };
            let first = block_kills.len();
            for u in uses_at(block, point) {
                if !live.contains(u.value) && !block_kills[first..].contains(&(point, u.value)) {
                    block_kills.push((point, u.value));
                }
            }
            block_kills[first..].reverse();
        });
        from_last.extend(block_kills.iter().rev());
        ends.push(from_last.len());
    }
    let mut kills = Rows::with_capacity(f.blocks.len(), from_last.len());
    for k in (0..ends.len()).rev() {
        let start = k.checked_sub(1).map_or(0, |previous| ends[previous]);
        kills.push_row(from_last[start..ends[k]].iter().copied());
    }
    kills
}

/// At most how many kill points `f` has: a value dies at most once in a block, and only in
/// one where it is live on entry or defined, so that the list of them never moves.
fn kills_bound(f: &Function, liveness: &Liveness) -> usize {
    liveness.live_in_count() + f.values.len()
}

/// The value operands read at `point` of `block` (none for allocation's instructions).
pub fn uses_at(block: &BlockData, point: Point) -> impl Iterator<Item = &Use> + '_ {
    let (op, term) = match block.insts.get(point as usize) {
        Some(inst) => (inst.op(), None),
        None => (None, Some(block.term.uses())),
    };
    op.into_iter()
        .flat_map(|op| op.uses())
        .chain(term.into_iter().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::cfg::Graph;

    const STRAIGHT: &str = "target gfx9\nfunc @f {\nb:\n  %a:v1 = x\n  %b:v2 = y %a\n  %c:v1 = z %a, %b, %a\n  ret %c\n}\n";

    /// Sites gathered from a function before its edges are split are those of the split
    /// function: a phi argument over a split edge comes from the edge's new block, found
    /// by the edge's predecessor among the edges split into the phi's block.
    #[test]
    fn sites_gathered_before_splitting_are_those_after() {
        let src = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  %x:v1 = x\n  branch uniform %c, b, j\nb:\n  %y:v1 = y\n  branch uniform %c, j, k\nk:\n  ret\nj:\n  %m:v1 = phi [a: %x], [b: %y]\n  ret %m\n}\n";
        let f = &crate::parse(src).unwrap().functions[0];
        let edges = Graph::of_function(f).critical_edges();
        assert_eq!(edges, [(Block(0), Block(3)), (Block(1), Block(3))]);
        let mut before = Sites::new(f, &edges);
        f.blocks.iter().for_each(|block| before.push(block));
        let mut split = f.clone();
        crate::analysis::cfg::split_edges(&mut split, &edges);
        assert_eq!(before.finish(&split), Sites::of(&split).finish(&split));
    }

    #[test]
    fn backward_walk_reports_every_position() {
        let p = crate::parse(STRAIGHT).unwrap();
        let f = &p.functions[0];
        let cfg = Graph::of_function(f);
        let liveness = Liveness::new(f, &p.target, &cfg, &cfg);
        let v = p.target.class_by_name("v").unwrap();
        let mut live = LiveSet::new(f, &p.target);
        let mut seen = Vec::new();
        liveness.walk_backward(f, Block(0), &mut live, |at, live| {
            let mut names: Vec<&str> = live.values().iter().map(|&x| &*f.value(x).name).collect();
            names.sort();
            seen.push((at, names.join(" "), live.units(v)));
        });
        let expected = [
            (At::After(3), "", 0),
            (At::Before(3), "c", 1),
            (At::After(2), "c", 1),
            (At::Before(2), "a b", 3),
            (At::After(1), "a b", 3),
            (At::Before(1), "a", 1),
            (At::After(0), "a", 1),
            (At::Before(0), "", 0),
            (At::Entry, "", 0),
        ];
        let expected: Vec<_> = expected.map(|(at, s, u)| (at, s.to_string(), u)).into();
        assert_eq!(seen, expected);
        let kills = |point| liveness.kills_at(Block(0), point).collect::<Vec<_>>();
        assert_eq!(kills(2), [Value(0), Value(1)], "%a used twice, killed once");
        assert_eq!(kills(1), []);
        assert_eq!(kills(3), [Value(2)]);
    }

    #[test]
    fn live_set_insert_remove_keep_units() {
        let p = crate::parse(STRAIGHT).unwrap();
        let f = &p.functions[0];
        let v = p.target.class_by_name("v").unwrap();
        let mut live = LiveSet::new(f, &p.target);
        assert!(live.insert(Value(0)) && live.insert(Value(1)) && live.insert(Value(2)));
        assert!(!live.insert(Value(1)));
        assert_eq!(live.units(v), 4);
        assert!(live.remove(Value(0)));
        assert!(!live.remove(Value(0)));
        assert!(!live.contains(Value(0)) && live.contains(Value(1)) && live.contains(Value(2)));
        assert_eq!(live.values(), [Value(2), Value(1)]);
        assert_eq!(live.units(v), 3);
        live.clear();
        assert_eq!((live.values().len(), live.units(v)), (0, 0));
    }
}
