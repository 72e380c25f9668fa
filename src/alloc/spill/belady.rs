//! Which values of a class are in registers where: the W sets of Braun & Hack, "Register
//! Spilling and Live-Range Splitting for SSA-Form Programs" (CC 2009).
//!
//! Blocks are visited in reverse post-order of the class's CFG. Each starts with a set W
//! of values in registers ([`Belady::entry_set`], §4.2–4.3 of the paper):
//!
//! - at a loop header, the live-ins and phis used in the loop, by next use, then values
//!   live through the loop while the loop's peak leaves room (both counted in units
//!   rounded up to alignment, [`super::loop_peak`]), the costliest to leave out per unit
//!   of room first ([`Belady::through_taken`]), and, in a class without
//!   a swap, a unit for the copy temporary of phis a back edge exchanges
//!   ([`Belady::copy_temp_victim`]);
//! - elsewhere, the values in registers at the end of every visited predecessor, then
//!   those in some, by next use; when they do not fit the budget as the packing places
//!   them (alignment counted exactly), those MIN would evict at the block's first
//!   position stay out, a phi priced with the stores a memory phi
//!   needs on its incoming edges ([`Belady::leave_out_at_merge`]); a single predecessor
//!   passes its set on;
//! - (uniform classes) the else-arm and the join of a divergent branch take what the
//!   branch block kept for them (see below).
//!
//! Phis left out of W are memory phis. Then Belady's MIN runs through the block
//! ([`Belady::walk`], §4.1): before each instruction its operands are reloaded into W;
//! while the instruction's [`packing`](super::super::packing) problem does not fit the
//! budget, a value in W leaves ([`Belady::victim`]: among values that stay out for the
//! rest of the loop, the farthest for its cost, its useful units counted against the
//! loop's excess at its peak, one the loop header the block enters would leave out
//! anyway first; else the cheapest to get back among values not needed before the
//! crowding ends) — before the
//! instruction if it is not an operand, after it if it is an operand that lives on. Before
//! an instruction that fixes a value of a class without a swap, values leave by the same
//! rule until W leaves a unit for the temporary of the copy assignment may put there
//! ([`Demand::leaves_copy_temp`]), when one other than the operands can go. The
//! demand is exactly what assignment must place, so assignment never fails where this
//! succeeded. Evictions and reloads are recorded; the code that couples blocks (reloads
//! and stores on edges) and the stores follow from the sets ([`super::place`]). Once
//! every block is walked, a loop header's live-in that the loop's peak evicts after its
//! read enters the loop in memory where reloading it at its first reads costs less than
//! reloading it on the edges whose ends lack it, the back edges among them
//! ([`Belady::enter_loops_in_memory`]).
//!
//! Uniform values follow the linear CFG, on which a divergent branch block B reaches its
//! else-arm E, and then its join J, without running any code when no lane takes a side
//! (`Divergence::anchor`). Those paths have no place for a reload or a store, and SSA has
//! no phi for them: the values W holds at E must be the ones B's W held, with the same
//! definition, on every path — so the values B keeps for E are not evicted anywhere in
//! the then-side, and those it keeps for J nowhere in the else-side (ACO's linear phis
//! with their skip-path copies, made identities). When MIN evicts one of them in a side,
//! B stops keeping it (it is stored at B's end and reloaded after the side), and MIN
//! prices the eviction with those reloads ([`Belady::demotion_freq`]). A
//! loop header inside a side holds a kept value the loop does not read only while the
//! loop's pressure leaves room for it, as it holds any value live through the loop
//! ([`Belady::demote_kept_crowding_loop`]).

use super::demand::{self, Demand};
use super::edges;
use super::loop_peak::LoopPeaks;
use super::next_read::{self, NextRead};
use super::nextuse::{NextUse, Uses, LOOP_EXIT, NEVER};
use super::reload_freq::ReloadFreq;
use super::sorted::SortedSet;
use crate::alloc::AllocError;
use crate::analysis::cfg::Graph;
use crate::analysis::divergence;
use crate::analysis::loops::Loops;
use crate::analysis::Analysis;
use crate::program::*;
use crate::target::{ClassId, SpillTarget, Target};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The decisions for one class.
#[derive(Clone, Debug, Default)]
pub struct Decisions {
    pub blocks: Vec<BlockPlan>,
    /// Phis of the class left out of registers at their block's entry.
    pub memory_phis: Vec<Value>,
}

/// What happens to one block's values of the class.
#[derive(Clone, Debug, Default)]
pub struct BlockPlan {
    pub visited: bool,
    /// W at the entry (live-ins and register phis), sorted.
    pub entry: Vec<Value>,
    /// W at the end (live-outs), sorted.
    pub exit: Vec<Value>,
    /// Values leaving the registers while still live, with the position before which
    /// they are last in a register (their store, if they need one, goes there).
    pub evictions: Vec<(u32, Value)>,
    /// Values reloaded before a position.
    pub reloads: Vec<(u32, Value)>,
    /// Values of the exit kept in registers for a divergent side still to run: the
    /// code coupling the block to its successors may not move them out.
    pub protected: Vec<Value>,
}

/// Which side of a divergent branch a block lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Then,
    Else,
}

impl Side {
    /// The sides whose kept sets a value evicted in this side leaves: through the
    /// then-side the join is reached too (when no lane takes the else-side).
    fn demoted_with(self) -> &'static [Side] {
        match self {
            Side::Then => &[Side::Then, Side::Else],
            Side::Else => &[Side::Else],
        }
    }
}

/// What the spiller of one class reads.
#[derive(Debug)]
pub struct Input<'a> {
    pub f: &'a Function,
    pub target: &'a Target,
    pub a: &'a Analysis,
    pub class: ClassId,
    pub budget: u16,
    /// The class's CFG (linear for uniform classes) and its loops.
    pub graph: &'a Graph,
    pub loops: &'a Loops,
    /// The class's blocks in [`visit_order`], found once for every stage of the class.
    pub order: &'a [Block],
    /// Per value: whether its definition is rematerialisable, and the values defined
    /// `pinned` ([`DefFlags`]).
    pub flags: &'a DefFlags,
}

/// Runs MIN over every block of the class.
pub fn decide(input: &Input) -> Result<Decisions, AllocError> {
    let uses = Uses::new(input.f, input.class);
    let uniform = input.target.class(input.class).uniform;
    let divergence = &input.a.divergence;
    let next = NextUse::new(
        input.f,
        input.class,
        &uses,
        (input.graph, input.loops),
        input.order,
        &input.a.liveness,
        &|b, s| uniform && divergence.is_skip(b, s),
    );
    let reload_freq = ReloadFreq::new(
        input.f,
        input.class,
        &uses,
        (input.graph, input.loops),
        input.order,
        &input.a.liveness,
        &input.a.freq,
    );
    let sources = next_read::Sources {
        f: input.f,
        class: input.class,
        graph: input.graph,
        loops: input.loops,
        liveness: &input.a.liveness,
    };
    let next_read = NextRead::new(&sources, &next, input.order, &input.a.freq);
    let demand = Demand::new(input.f, input.target, input.class, input.budget);
    let loop_peaks = LoopPeaks::new(input.f, &input.a.liveness, input.loops, &demand);
    let mut b = Belady {
        input,
        uses,
        next,
        reload_freq,
        next_read,
        plans: vec![BlockPlan::default(); input.f.blocks.len()],
        memory_phis: Vec::new(),
        sides: vec![Vec::new(); input.f.blocks.len()],
        kept: BTreeMap::new(),
        costs: unit_costs(input),
        evicted: vec![false; input.f.values.len()],
        horizon: vec![0; input.f.values.len()],
        pinned: input.flags.pinned.iter().copied().collect(),
        demand,
        loop_peaks,
        latch_freq: latch_frequencies(input),
        candidates: Vec::new(),
        crowded: Vec::new(),
    };
    b.crowded = b.crowded_from_entry();
    if input.target.class(input.class).uniform {
        b.find_sides();
    }
    for &block in input.order {
        b.block(block)?;
    }
    b.enter_loops_in_memory();
    b.drop_unneeded();
    b.record_protected();
    Ok(Decisions {
        blocks: b.plans,
        memory_phis: b.memory_phis,
    })
}

/// A reverse post-order of `graph` in which every loop's blocks are contiguous: the
/// depth-first search explores the successors that leave the most loops first, so they
/// come after the loop. A loop's back edges are thus visited before anything after the
/// loop — in particular before the else-side that follows a then-side on the linear
/// CFG, which reads what the then-side kept. The entry's region comes first, then each
/// region from a block without predecessors, then whatever is left.
pub fn visit_order(graph: &Graph, loops: &Loops, f: &Function) -> Vec<Block> {
    let mut seen = vec![false; f.blocks.len()];
    let mut order = Vec::with_capacity(f.blocks.len());
    let roots = std::iter::once(Block(0)).chain(
        f.block_ids()
            .filter(|&b| b != Block(0) && graph.preds(b).is_empty()),
    );
    for root in roots.collect::<Vec<_>>() {
        if root.index() < f.blocks.len() && !seen[root.index()] {
            order.extend(loop_contiguous_rpo(graph, loops, root, &mut seen));
        }
    }
    order.extend(f.block_ids().filter(|b| !seen[b.index()]));
    order
}

fn loop_contiguous_rpo(graph: &Graph, loops: &Loops, root: Block, seen: &mut [bool]) -> Vec<Block> {
    let succs = |b: Block| {
        let mut s = graph.succs(b).to_vec();
        s.sort_by_key(|&x| loops.depth(x));
        s
    };
    let mut stack = vec![(root, succs(root), 0usize)];
    let mut post = Vec::new();
    seen[root.index()] = true;
    while let Some((b, ss, k)) = stack.last_mut() {
        match ss.get(*k).copied() {
            Some(s) => {
                *k += 1;
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    stack.push((s, succs(s), 0));
                }
            }
            None => {
                post.push(*b);
                stack.pop();
            }
        }
    }
    post.reverse();
    post
}

/// What getting a value back costs, per unit: a remat, or a reload from where the class
/// spills first; and what storing it costs (nothing for a remat).
#[derive(Clone, Copy, Debug)]
struct UnitCosts {
    reload: f64,
    store: f64,
}

/// Per block: for a loop header, the highest frequency among its predecessors inside
/// the loop (its latches, where a back edge's coupling code runs); 0 for other blocks.
fn latch_frequencies(input: &Input) -> Vec<f64> {
    let mut out = vec![0.0; input.f.blocks.len()];
    for &h in input.loops.headers() {
        let body = input.loops.body(h);
        let latches = input.graph.preds(h).iter();
        let latches = latches.filter(|p| body.binary_search(p).is_ok());
        out[h.index()] = latches.map(|p| input.a.freq[p.index()]).fold(0.0, f64::max);
    }
    out
}

fn unit_costs(input: &Input) -> (UnitCosts, UnitCosts) {
    let costs = &input.target.costs;
    let class = input.target.class(input.class);
    let (load, store) = match class.spill.first() {
        Some(SpillTarget::Lanes { .. }) => (costs.lane_read, costs.lane_write),
        Some(SpillTarget::Class { .. }) => (costs.class_move, costs.class_move),
        _ => (costs.mem_load, costs.mem_store),
    };
    let slot = UnitCosts {
        reload: load,
        store,
    };
    let remat = UnitCosts {
        reload: costs.remat,
        store: 0.0,
    };
    (slot, remat)
}

/// What the definitions say about values, from one pass over the function.
#[derive(Clone, Debug, Default)]
pub struct DefFlags {
    /// Per value: whether its definition is rematerialisable.
    pub remat: Vec<bool>,
    /// The values defined `pinned` (by an instruction or a phi), sorted.
    pub pinned: Vec<Value>,
}

impl DefFlags {
    pub fn new(f: &Function) -> DefFlags {
        let mut flags = DefFlags {
            remat: vec![false; f.values.len()],
            pinned: Vec::new(),
        };
        for block in &f.blocks {
            flags.note(block.phis.iter().map(|p| &p.def), false);
            for op in block.insts.iter().filter_map(Inst::op) {
                flags.note(&op.defs, op.remat);
            }
        }
        flags.pinned.sort();
        flags
    }

    fn note<'d>(&mut self, defs: impl IntoIterator<Item = &'d Def>, remat: bool) {
        for d in defs {
            self.remat[d.value.index()] |= remat;
            if d.pinned {
                self.pinned.push(d.value);
            }
        }
    }

    /// A new value, defined neither rematerialisable nor pinned.
    pub fn push(&mut self) {
        self.remat.push(false);
    }
}

struct Belady<'i, 'a> {
    input: &'i Input<'a>,
    uses: Uses,
    next: NextUse,
    /// Where an eviction's reload runs ([`ReloadFreq`]).
    reload_freq: ReloadFreq<'a>,
    /// Where a value's next-use path reads it, and whether it enters a loop first
    /// ([`NextRead`]).
    next_read: NextRead<'a>,
    plans: Vec<BlockPlan>,
    memory_phis: Vec<Value>,
    /// Per block: the divergent branches whose sides it lies in (uniform classes).
    sides: Vec<Vec<(Block, Side)>>,
    /// Per branch block and side: the values kept in registers through that side.
    kept: BTreeMap<(Block, u8), BTreeSet<Value>>,
    /// Costs of values spilled to their class's first target, and of remats.
    costs: (UnitCosts, UnitCosts),
    /// Per value: whether it was evicted somewhere already (its store is placed; another
    /// eviction needs none).
    evicted: Vec<bool>,
    /// Values defined `pinned`: never evicted, protected everywhere they live.
    pinned: BTreeSet<Value>,
    /// Per value, while a block is walked: it lives on after position `i` exactly when
    /// its horizon exceeds `i` (its last read in the block; `u32::MAX` when it is live
    /// out; 0 otherwise).
    horizon: Vec<u32>,
    demand: Demand<'a>,
    /// Per block in a loop: its peak in rounded units ([`LoopPeaks`]).
    loop_peaks: LoopPeaks,
    /// Per loop header: the highest frequency of its back edges (0 elsewhere).
    latch_freq: Vec<f64>,
    /// The candidates of the last eviction: one buffer for every eviction.
    candidates: Vec<Candidate>,
    /// Per block: how many positions from its first instruction on stay over the budget
    /// (see [`Belady::crowded_from_entry`]).
    crowded: Vec<u64>,
}

/// What a walk through a block decided.
#[derive(Clone, Debug, Default)]
struct Walked {
    reloads: Vec<(u32, Value)>,
    evictions: Vec<(u32, Value)>,
}

/// What an eviction at one instruction is asked for.
struct Ask<'a> {
    w: &'a Set,
    reads: &'a [Value],
    dropped: &'a BTreeSet<Value>,
    operands_too: bool,
    excess: u32,
    /// The most units the loop holding the block exceeds the budget by anywhere.
    loop_excess: u32,
    /// Positions after the instruction that stay over the budget.
    crowded: u64,
    /// Values the loop header the block enters leaves out anyway ([`Belady::doomed`]).
    doomed: &'a [Value],
}

/// A value that may be evicted.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    value: Value,
    operand: bool,
    distance: u64,
    /// Distance times the units the excess (see `cost`) needs of it, per `size`.
    gain: u128,
    size: u128,
    /// Store and reload cost per useful unit (of the excess, or of the loop's excess
    /// for a value that stays out for the rest of the loop), per execution of the block.
    cost: f64,
    /// Whether the loop header the block enters leaves it out anyway.
    doomed: bool,
    /// Whether it is next read only after the loop holding the block and, out, stays
    /// out for the rest of that loop ([`Belady::stays_out_for_the_loop`]).
    after_loop: bool,
}

/// The values live through a loop, nearest next use first, and the units the loop's
/// pressure leaves them at its header (B&H §4.2).
#[derive(Clone, Debug)]
struct Through {
    values: Vec<Value>,
    room: u32,
}

/// The loop a block enters at its end, from its only predecessor outside the loop.
struct NextLoop {
    header: Block,
    through: Through,
    /// The positions in the block of the definitions of the header's live-ins and of
    /// the phi arguments the block passes it.
    defined_at: FxHashMap<Value, u32>,
}

/// The candidate to evict (see [`Belady::victim`]): the farthest for its cost among
/// those next used after the loop that stay out for the rest of it (priced per unit of
/// the loop's excess, not only this one's: out, its units serve every crowded point of
/// the rest of the loop), one the loop header the block enters leaves out anyway first
/// (`doomed`: its eviction costs nothing more); else, among those
/// next used after the `crowded` positions, the first of the cheapest way to cover the
/// `excess` ([`cheapest_cover`]); else the farthest for its cost
/// (next-use distance per unit of store and reload cost per useful unit: Belady's
/// farthest when every cost is the same, size-aware, and weighed by where the reload
/// runs).
fn choose(candidates: &[Candidate], crowded: u64, excess: u32) -> Option<(Value, bool)> {
    let by_score = |c: &&Candidate| (Score(c.gain, c.size), std::cmp::Reverse(c.value));
    let distance_per_cost = |c: &Candidate| c.distance as f64 / c.cost.max(f64::MIN_POSITIVE);
    let farthest_for_its_cost = |x: &&Candidate, y: &&Candidate| {
        distance_per_cost(x)
            .total_cmp(&distance_per_cost(y))
            .then_with(|| by_score(x).cmp(&by_score(y)))
    };
    let after_loop = candidates.iter().filter(|c| c.after_loop);
    let doomed_first = |x: &&Candidate, y: &&Candidate| {
        x.doomed
            .cmp(&y.doomed)
            .then_with(|| farthest_for_its_cost(x, y))
    };
    if let Some(c) = after_loop.max_by(doomed_first) {
        return Some((c.value, c.operand));
    }
    let mut beyond: Vec<&Candidate> = candidates.iter().filter(|c| c.distance > crowded).collect();
    beyond.sort_by(|x, y| {
        x.cost
            .total_cmp(&y.cost)
            .then_with(|| by_score(y).cmp(&by_score(x)))
    });
    let cheapest = cheapest_cover(&beyond, excess);
    cheapest
        .or_else(|| candidates.iter().max_by(farthest_for_its_cost))
        .map(|c| (c.value, c.operand))
}

/// The first victim of the cheapest way to cover `excess` units, `by_cost` sorted by
/// cost per useful unit. Victims are chosen one at a time, so a value smaller than the
/// excess, cheapest per unit, brings others after it: the cheapest value covering the
/// excess alone goes first when it costs less in all than the cheapest set of smaller
/// values that cover it together ([`cheapest_smaller_cover`]); otherwise that set's
/// cheapest value per unit goes. Compared per unit only, one register more (one unit of
/// excess less) could turn a choice of one large value into a run of small ones costing
/// more together. When no value covers the excess alone, that set's cheapest value goes;
/// when no set covers it either, the cheapest value per unit.
fn cheapest_cover<'c>(by_cost: &[&'c Candidate], excess: u32) -> Option<&'c Candidate> {
    let first = *by_cost.first()?;
    let covers = |c: &Candidate| c.size >= u128::from(excess);
    if covers(first) {
        return Some(first);
    }
    let alone = by_cost.iter().find(|c| covers(c));
    match (alone, cheapest_smaller_cover(by_cost, excess)) {
        (Some(c), Some((together, _))) if c.cost * f64::from(excess) < together => Some(c),
        (Some(c), None) => Some(c),
        (_, Some((_, i))) => Some(by_cost[i]),
        (None, None) => Some(first),
    }
}

/// The least total cost of values of `by_cost` smaller than `excess` that cover it
/// together, and the index of that set's first value (the cheapest per unit); `None`
/// when they cannot. Exact, a 0-1 knapsack over units (per count of units, the cheapest
/// set covering at least that many; `O(values × excess)`, sought only when the values
/// hold the excess, so over at most their units), so that a set whose values, taken
/// cheapest per unit first, overshoot the excess does not stand for a cheaper set that
/// covers it exactly (generated seed 802, class `q`: a 3-unit value went for want of
/// seeing that a 1-unit and a 2-unit value cost less together).
fn cheapest_smaller_cover(by_cost: &[&Candidate], excess: u32) -> Option<(f64, usize)> {
    let smaller = || {
        by_cost
            .iter()
            .enumerate()
            .filter(|(_, c)| c.size < u128::from(excess))
    };
    if smaller().map(|(_, c)| c.size).sum::<u128>() < u128::from(excess) {
        return None;
    }
    let need = excess as usize;
    let mut best = vec![(f64::INFINITY, usize::MAX); need + 1];
    best[0].0 = 0.0;
    for (i, c) in smaller() {
        let (size, total) = (c.size as usize, c.cost * c.size as f64);
        for u in (1..=need).rev() {
            let (base, first) = best[u.saturating_sub(size)];
            if base + total < best[u].0 {
                best[u] = (base + total, first.min(i));
            }
        }
    }
    Some(best[need])
}

/// A victim's score, `gain / size`, compared without division.
#[derive(Clone, Copy, Debug)]
struct Score(u128, u128);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0 * other.1).cmp(&(other.0 * self.1))
    }
}

/// W while a block is walked: the values and their units.
#[derive(Clone, Debug, Default)]
struct Set {
    values: SortedSet,
}

impl Belady<'_, '_> {
    fn f(&self) -> &Function {
        self.input.f
    }

    fn size(&self, v: Value) -> u16 {
        self.demand.size(v)
    }

    /// What reloading and storing a unit of `v` costs: a remat's costs when it is
    /// recomputed, else those of its class's first spill target.
    fn unit_costs(&self, v: Value) -> UnitCosts {
        if self.input.flags.remat[v.index()] {
            self.costs.1
        } else {
            self.costs.0
        }
    }

    fn of_class(&self, v: Value) -> bool {
        self.demand.of_class(v)
    }

    fn rounded(&self, v: Value) -> u32 {
        self.demand.rounded(v)
    }

    /// Whether instruction `i`'s problem fits the budget with `w` in registers.
    fn fits(&self, b: Block, i: u32, w: &Set, lives: &dyn Fn(Value) -> bool) -> bool {
        let (defs, ops) = demand::operands_at(self.f(), b, i);
        self.demand.fits((defs, &ops), &w.values, lives)
    }

    /// Whether the copy assignment may put before instruction `i` finds a free unit for
    /// its temporary with `w` in registers ([`Demand::leaves_copy_temp`]).
    fn leaves_copy_temp(&self, b: Block, i: u32, w: &Set) -> bool {
        let (defs, ops) = demand::operands_at(self.f(), b, i);
        self.demand.leaves_copy_temp((defs, &ops), &w.values)
    }

    /// Units over the budget at the early and late instants, by the sums.
    fn overflow(&self, b: Block, i: u32, w: &Set, lives: &dyn Fn(Value) -> bool) -> (u32, u32) {
        let (defs, _) = demand::operands_at(self.f(), b, i);
        self.demand.overflow(defs, &w.values, lives)
    }

    fn find_sides(&mut self) {
        let f = self.input.f;
        let a = self.input.a;
        for &b in a.cfg.rpo() {
            let Terminator::Branch {
                kind: BranchKind::Divergent,
                then_block,
                else_block,
                ..
            } = f.block(b).term
            else {
                continue;
            };
            if a.divergence.anchor(else_block) != Some(b) {
                continue;
            }
            let join = a.join(b);
            for (arm, other, side) in [
                (then_block, else_block, Side::Then),
                (else_block, then_block, Side::Else),
            ] {
                let mut stamp = vec![u32::MAX; f.blocks.len()];
                for x in divergence::then_region(&a.cfg, b, (arm, other, join), &mut stamp) {
                    self.sides[x.index()].push((b, side));
                }
            }
        }
    }

    fn side_key(branch: Block, side: Side) -> (Block, u8) {
        (branch, side as u8)
    }

    /// Values that may not leave the registers in `b`: those kept for a divergent side
    /// (which may still go, demoted, [`Self::demotion_freq`]) and pinned values (never).
    fn protected(&self, b: Block) -> BTreeSet<Value> {
        let mut out = self.pinned.clone();
        for &(branch, side) in &self.sides[b.index()] {
            if let Some(kept) = self.kept.get(&Self::side_key(branch, side)) {
                out.extend(kept.iter().copied());
            }
        }
        out
    }

    /// `v` may be evicted in `b` after all: no branch whose side holds `b` keeps it —
    /// through the then-side the join is reached too (when no lane takes the
    /// else-side), so the branch keeps it for neither.
    fn demote(&mut self, b: Block, v: Value) {
        for &(branch, side) in &self.sides[b.index()] {
            for &s in side.demoted_with() {
                if let Some(kept) = self.kept.get_mut(&Self::side_key(branch, s)) {
                    kept.remove(&v);
                }
            }
        }
    }

    /// Whether demoting `v` in `b` comes in time: no block that would have taken `v`
    /// from a kept set (an else-arm, a join) has been visited yet.
    fn demotable(&self, b: Block, v: Value) -> bool {
        self.sides[b.index()].iter().all(|&(branch, side)| {
            side.demoted_with().iter().all(|&s| {
                let keeps = self
                    .kept
                    .get(&Self::side_key(branch, s))
                    .is_some_and(|k| k.contains(&v));
                let reader = self.kept_reader(branch, s);
                !keeps || reader.is_none_or(|r| !self.plans[r.index()].visited)
            })
        })
    }

    /// The block that takes what `branch` keeps through `side`: the else-arm after the
    /// then-side, the join after the else-side.
    fn kept_reader(&self, branch: Block, side: Side) -> Option<Block> {
        match (side, &self.f().block(branch).term) {
            (Side::Then, Terminator::Branch { else_block, .. }) => Some(*else_block),
            _ => self.input.a.join(branch),
        }
    }

    /// How often `v`, evicted in `b`, is reloaded for the blocks that would have taken
    /// it from a kept set: the eviction demotes it ([`Self::demote`]), and each such
    /// else-arm or join then reloads it (§3.4), beside the reload at its next read.
    /// Priced at the next read alone, a value kept through a then-side looked as cheap
    /// as any (generated seed 441, class `a`: a one-unit value read again in the
    /// then-side went where a two-unit one had, and its else-arm and join reloaded it,
    /// 2,657 at `a=43`, 2,801 at `a=44`).
    fn demotion_freq(&self, b: Block, v: Value) -> f64 {
        let mut readers: Vec<Block> = Vec::new();
        for &(branch, side) in &self.sides[b.index()] {
            for &s in side.demoted_with() {
                let keeps = self
                    .kept
                    .get(&Self::side_key(branch, s))
                    .is_some_and(|k| k.contains(&v));
                readers.extend(self.kept_reader(branch, s).filter(|_| keeps));
            }
        }
        readers.sort_unstable();
        readers.dedup();
        readers.iter().map(|r| self.input.a.freq[r.index()]).sum()
    }

    fn block(&mut self, b: Block) -> Result<(), AllocError> {
        let loop_entry = self.is_loop_entry(b);
        if loop_entry {
            self.demote_kept_crowding_loop(b);
        }
        let mut entry = self.entry_set(b);
        if loop_entry {
            self.drop_doomed(b, &mut entry)?;
            self.fit_rotations(b, &mut entry);
        }
        let phis: Vec<Value> = self
            .f()
            .block(b)
            .phis
            .iter()
            .map(|p| p.def.value)
            .filter(|&v| self.of_class(v))
            .collect();
        for phi in phis {
            if !entry.values.contains(&phi) {
                self.memory_phis.push(phi);
            }
        }
        self.plans[b.index()].entry = entry.values.iter().copied().collect();
        let (mut exit, mut walked) = self.walk(b, entry, false)?;
        self.reload_before_back_edges(b, &mut exit, &mut walked);
        let plan = &mut self.plans[b.index()];
        plan.exit = exit.values.into_iter().collect();
        plan.reloads = walked.reloads;
        plan.evictions = walked.evictions;
        plan.visited = true;
        self.fit_back_edges(b);
        self.keep_for_sides(b);
        Ok(())
    }

    /// Braun & Hack reload what a loop header's W lacks on the back edge (§4.4). A
    /// latch that also leaves the loop reloads such a value before its terminator
    /// instead, when the terminator (its operands counted) has room for it, the back
    /// edge runs as often as the latch, the header reads the value before evicting it,
    /// and a successor entered from the latch alone reads it: the loop pays the same,
    /// and that successor receives the value in a register instead of reloading it.
    /// Values nearest their next use go first.
    fn reload_before_back_edges(&self, b: Block, w: &mut Set, walked: &mut Walked) {
        if self.input.graph.succs(b).len() < 2 {
            return;
        }
        let live_out = self.input.a.liveness.live_out(b);
        let mut wanted: Vec<Value> = live_out
            .iter()
            .copied()
            .filter(|&v| self.of_class(v) && !w.values.contains(&v))
            .filter(|&v| self.back_edge_reloads(b, v, &walked.evictions))
            .filter(|&v| self.exit_reads(b, v))
            .collect();
        wanted.sort_by_cached_key(|&v| (self.next.at_end(b, v), v));
        let n = self.f().block(b).insts.len() as u32;
        let lives = |v: Value| live_out.contains(&v);
        let mut held = Set {
            values: w.values.clone(),
        };
        for r in self.reads_at(b, n) {
            held.values.insert(r);
        }
        for v in wanted {
            held.values.insert(v);
            if self.fits(b, n, &held, &lives) && self.leaves_copy_temp(b, n, &held) {
                w.values.insert(v);
                walked.reloads.push((n, v));
            } else {
                held.values.remove(&v);
            }
        }
    }

    /// Whether a back edge of `b` (through empty blocks with one successor) enters a
    /// visited loop header, or `b` itself (whose walk evicted `evictions`), that `v`
    /// lives into (not one of its phis), holds it at its entry and reads it there before
    /// any eviction, and runs as often as `b`.
    fn back_edge_reloads(&self, b: Block, v: Value, evictions: &[(u32, Value)]) -> bool {
        let graph = self.input.graph;
        let freq = &self.input.a.freq;
        graph.succs(b).iter().any(|&s| {
            let (mut last, mut t) = (b, s);
            let entered = |t: Block| t == b || self.plans[t.index()].visited;
            for _ in 0..self.plans.len() {
                if entered(t) || !self.is_passage(t) {
                    break;
                }
                last = t;
                t = graph.succs(t)[0];
            }
            let evicted = if t == b {
                evictions
            } else {
                &self.plans[t.index()].evictions
            };
            entered(t)
                && self.input.a.liveness.live_in(t).contains(&v)
                && self.plans[t.index()].entry.binary_search(&v).is_ok()
                && self.read_before_eviction(t, v, evicted)
                && freq[last.index()] >= freq[b.index()]
        })
    }

    /// Whether a successor of `b` still to be visited, entered from `b` alone (so its W
    /// starts as `b`'s), reads `v`.
    fn exit_reads(&self, b: Block, v: Value) -> bool {
        let graph = self.input.graph;
        graph.succs(b).iter().any(|&s| {
            s != b
                && !self.plans[s.index()].visited
                && graph.preds(s).len() == 1
                && self.first_read_in_block(s, v).is_some()
        })
    }

    /// Whether `b` reads `v` before its walk (which evicted `evictions`) evicts it.
    fn read_before_eviction(&self, b: Block, v: Value, evictions: &[(u32, Value)]) -> bool {
        self.first_read_in_block(b, v)
            .is_some_and(|r| evictions.iter().all(|&(at, x)| x != v || r <= at))
    }

    /// An empty block without phis that jumps to one successor.
    fn is_passage(&self, b: Block) -> bool {
        let block = self.f().block(b);
        block.insts.is_empty() && block.phis.is_empty() && self.input.graph.succs(b).len() == 1
    }

    /// A loop header's W must leave room for the code on its back edges. A rotation
    /// through a memory phi (a register phi takes a memory phi's old value while that
    /// phi's location takes the register phi's) needs the memory value's room while the
    /// register value is still held, and two such rotations can block each other. The
    /// coupling of each back edge is sequenced in advance, as if the edge's block ended
    /// with W still in registers (what the body evicts on the way only makes room);
    /// while it does not fit, the largest phi in a rotation leaves W (it becomes a memory
    /// phi: rotations between memory locations need room only for the values moved),
    /// else the live-through value used farthest away. Protected values stay. Where it
    /// fits only by spilling a live-in around the edge (a store and a reload on every
    /// iteration), that live-in leaves W instead: the loop then reloads it where it
    /// reads it, a reload without the store, and not at all on paths that do not read it.
    /// Where the back edges fit but exchange register phis that need a copy temporary,
    /// a value live through the loop leaves W for it ([`Self::copy_temp_victim`]).
    fn fit_rotations(&mut self, b: Block, entry: &mut Set) {
        let back_edges: Vec<Block> = self
            .input
            .graph
            .preds(b)
            .iter()
            .copied()
            .filter(|p| !self.plans[p.index()].visited)
            .collect();
        loop {
            let codes: Vec<edges::EdgeCode> = back_edges
                .iter()
                .map(|&p| self.back_edge_code(b, p, entry))
                .collect();
            let victim = if codes.iter().any(|c| c.stuck.is_some()) {
                self.rotation_victim(b, entry)
            } else {
                self.spilled_around_live_in(b, entry, &codes)
                    .or_else(|| self.copy_temp_victim(b, entry, &back_edges))
            };
            let Some(v) = victim else {
                return;
            };
            entry.values.remove(&v);
            if self.protected(b).contains(&v) {
                self.demote(b, v);
            }
        }
    }

    /// In a class without a swap (and without another class's unit to copy through), a
    /// back edge on which register phis exchange their values (a cycle of phis, each
    /// taking another's argument) breaks that cycle through a free unit (§5 of
    /// `docs/ALLOCATOR.md`); when the header's W fills the budget there is none at the
    /// edge's end, and the cycle goes through a scratch slot: a store and a reload on
    /// every iteration. The copy temporary is part of the demand: W leaves one unit
    /// free, and a value live through the loop (not read in it, not a phi) makes room,
    /// the one used farthest away — stored once before the loop and reloaded after it.
    /// A value a divergent branch keeps through the side holding the loop is such a
    /// value too, while demoting it comes in time ([`Self::demotable`]): stored at the
    /// branch, reloaded after the side. When the loop reads every other value, the
    /// cycle keeps its slot: any of them would be reloaded on every iteration too.
    fn copy_temp_victim(&self, b: Block, entry: &Set, back_edges: &[Block]) -> Option<Value> {
        let class = self.input.target.class(self.input.class);
        if class.has_swap || class.copy_temp.is_some() || self.input.budget < 2 {
            return None;
        }
        let exchanges = back_edges
            .iter()
            .any(|&p| self.exchanges_register_phis(b, p, entry));
        let spare = self.input.budget - 1;
        if !exchanges || edges::fits_in(self.f(), self.input.target, spare, &entry.values) {
            return None;
        }
        let protected = self.protected(b);
        let read = self.read_in(self.input.loops.body(b), b);
        let live_in = self.input.a.liveness.live_in(b);
        entry
            .values
            .iter()
            .copied()
            .filter(|v| live_in.binary_search(v).is_ok())
            .filter(|v| !read.contains(v) && !self.pinned.contains(v))
            .filter(|&v| !protected.contains(&v) || self.demotable(b, v))
            .max_by_key(|&v| (self.entry_distance(b, v), self.size(v), v))
    }

    /// Whether the edge from `p` into `b` passes the values of phis of `b` in `entry` on
    /// to one another along a cycle that needs a temporary: no register phi off the
    /// cycle takes one of them too (its copy, made first, would serve as the
    /// temporary).
    fn exchanges_register_phis(&self, b: Block, p: Block, entry: &Set) -> bool {
        let phis = &self.f().block(b).phis;
        let arg_of = |v: Value| {
            phis.iter()
                .find(|phi| phi.def.value == v && entry.values.contains(&v))
                .and_then(|phi| phi.args.iter().find(|a| a.block == p))
                .map(|a| a.value)
        };
        let cycle_from = |start: Value| {
            let mut cycle = vec![start];
            for _ in 0..phis.len() {
                match arg_of(cycle[cycle.len() - 1]) {
                    Some(a) if a == start => return (cycle.len() > 1).then_some(cycle),
                    Some(a) => cycle.push(a),
                    None => return None,
                }
            }
            None
        };
        let copied_elsewhere = |cycle: &[Value]| {
            phis.iter()
                .map(|phi| phi.def.value)
                .filter(|v| !cycle.contains(v))
                .any(|v| arg_of(v).is_some_and(|a| cycle.contains(&a)))
        };
        phis.iter()
            .filter_map(|phi| cycle_from(phi.def.value))
            .any(|cycle| !copied_elsewhere(&cycle))
    }

    /// A live-in of the header `b` (not a phi, not protected) in `entry` that one of the
    /// back edges' `codes` spills around.
    fn spilled_around_live_in(
        &self,
        b: Block,
        entry: &Set,
        codes: &[edges::EdgeCode],
    ) -> Option<Value> {
        let protected = self.protected(b);
        let live_in = self.input.a.liveness.live_in(b);
        codes.iter().flat_map(|c| c.spilled_around()).find(|v| {
            entry.values.contains(v)
                && live_in.binary_search(v).is_ok()
                && !protected.contains(v)
                && !self.pinned.contains(v)
        })
    }

    /// The coupling on the back edge from `p` into the header `b` with W `entry` (see
    /// [`Self::fit_rotations`]).
    fn back_edge_code(&self, b: Block, p: Block, entry: &Set) -> edges::EdgeCode {
        let f = self.f();
        let phis: Vec<&Phi> = f
            .block(b)
            .phis
            .iter()
            .filter(|phi| self.of_class(phi.def.value))
            .collect();
        let is_phi = |v: Value| phis.iter().any(|phi| phi.def.value == v);
        let live_in = self.input.a.liveness.live_in(b);
        let in_registers = |v: Value| {
            entry.values.contains(&v) || !is_phi(v) && live_in.binary_search(&v).is_err()
        };
        let mut held: Vec<Value> = entry
            .values
            .iter()
            .copied()
            .filter(|&v| !is_phi(v))
            .collect();
        for phi in &phis {
            let Some(arg) = phi.args.iter().find(|a| a.block == p) else {
                continue;
            };
            if self.of_class(arg.value) && in_registers(arg.value) {
                held.push(arg.value);
            }
        }
        held.sort();
        held.dedup();
        let sorted: Vec<Value> = entry.values.iter().copied().collect();
        let successor = edges::Successor {
            entry: &sorted,
            live_in: live_in
                .iter()
                .copied()
                .filter(|&v| self.of_class(v))
                .collect(),
            phis: phis
                .iter()
                .map(|&phi| (phi, !entry.values.contains(&phi.def.value)))
                .collect(),
        };
        let protected: Vec<Value> = self
            .protected(b)
            .into_iter()
            .filter(|v| held.binary_search(v).is_ok())
            .collect();
        let need = edges::Need::of_edges(p, &held, &protected, &[successor]);
        let room = |set: &SortedSet| edges::fits_in(f, self.input.target, self.input.budget, set);
        let size = |v: Value| u32::from(self.size(v));
        edges::edge_code(&need, &room, &size)
    }

    /// What leaves a loop header's W to make its back edges fit: the largest phi in a
    /// rotation with a memory phi, else the value in W used farthest away; never a
    /// protected value.
    fn rotation_victim(&self, b: Block, entry: &Set) -> Option<Value> {
        let protected = self.protected(b);
        let phis = &self.f().block(b).phis;
        let memory =
            |v: Value| phis.iter().any(|phi| phi.def.value == v) && !entry.values.contains(&v);
        let in_rotation = |v: Value| {
            phis.iter().any(|phi| {
                let feeds = phi.def.value == v && phi.args.iter().any(|a| memory(a.value));
                let fed = memory(phi.def.value) && phi.args.iter().any(|a| a.value == v);
                feeds || fed
            })
        };
        let open = entry
            .values
            .iter()
            .copied()
            .filter(|v| !protected.contains(v));
        let rotating = open
            .clone()
            .filter(|&v| in_rotation(v))
            .max_by_key(|&v| (self.size(v), v));
        rotating.or_else(|| open.max_by_key(|&v| (self.entry_distance(b, v), self.size(v), v)))
    }

    /// The code coupling `b` to successors visited already (a back edge; after
    /// `prepare` such a block has only that successor) must fit with the values
    /// protected for divergent sides held throughout. When a rotation through a memory
    /// phi needs more room than that leaves, the largest protected value the successor
    /// wants leaves at the end instead (demoted: the side it was kept for reloads it),
    /// until the edge fits.
    fn fit_back_edges(&mut self, b: Block) {
        let succs = self.input.graph.succs(b);
        if succs.is_empty() || !succs.iter().all(|s| self.plans[s.index()].visited) {
            return;
        }
        while let Some(need) = self.stuck_edge(b) {
            let protected = self.protected(b);
            let victim = need
                .held
                .iter()
                .copied()
                .filter(|v| protected.contains(v) && need.wanted.contains(v))
                .filter(|&v| !self.pinned.contains(&v) && self.demotable(b, v))
                .max_by_key(|&v| (self.size(v), v));
            let Some(v) = victim else { return };
            self.demote(b, v);
            let n = self.f().block(b).insts.len() as u32;
            let plan = &mut self.plans[b.index()];
            plan.exit.retain(|&x| x != v);
            plan.evictions.push((n, v));
            self.evicted[v.index()] = true;
        }
    }

    /// The coupling need at the end of `b` when its code does not fit.
    fn stuck_edge(&self, b: Block) -> Option<edges::Need> {
        let f = self.f();
        let succs: Vec<edges::Successor> = self
            .input
            .graph
            .succs(b)
            .iter()
            .map(|&s| edges::Successor {
                entry: &self.plans[s.index()].entry,
                live_in: self
                    .input
                    .a
                    .liveness
                    .live_in(s)
                    .iter()
                    .copied()
                    .filter(|&v| self.of_class(v))
                    .collect(),
                phis: f
                    .block(s)
                    .phis
                    .iter()
                    .filter(|phi| self.of_class(phi.def.value))
                    .map(|phi| (phi, self.memory_phis.contains(&phi.def.value)))
                    .collect(),
            })
            .collect();
        let plan = &self.plans[b.index()];
        let protected: Vec<Value> = self
            .protected(b)
            .into_iter()
            .filter(|v| plan.exit.binary_search(v).is_ok())
            .collect();
        let need = edges::Need::of_edges(b, &plan.exit, &protected, &succs);
        let room = |set: &SortedSet| edges::fits_in(f, self.input.target, self.input.budget, set);
        let size = |v: Value| u32::from(self.size(v));
        edges::edge_code(&need, &room, &size).stuck.map(|_| need)
    }

    /// Values in registers at a block's entry that leave them before anything reads
    /// them — there or after, on every path — were reloaded or kept for nothing: a loop
    /// header keeps a value its inner loop then evicts before use, and the outer back
    /// edge reloads it every iteration. A backward fixpoint finds, per block, the entry
    /// values that are read in a register before leaving it; the others leave W from
    /// the entry (and their eviction before the first read goes), which only frees
    /// registers the walk had counted as taken. Values kept for a divergent side stay while
    /// the block that reads the kept set (the else-arm, the join) holds them, and so do
    /// phis (a phi left out would be a memory phi, stored on every incoming edge, where
    /// its eviction stores it once), and so does a value evicted in a block whose only
    /// predecessor branches and runs more often ([`Self::eviction_stays_in`]: out of the
    /// entry, its store would move to that predecessor's end). When a reader drops a
    /// kept value, the branch no
    /// longer keeps it, and the side's blocks may drop it in the next round: otherwise
    /// the side would reload, for nobody, a value its branch had kept when the loop
    /// around it had room for it.
    fn drop_unneeded(&mut self) {
        self.drop_unneeded_round();
        while self.release_kept() {
            self.drop_unneeded_round();
        }
    }

    /// Restricts each kept set to what its reader still holds at its entry: the else-arm
    /// for the then-side (a value the join is kept for stays: the then-side reaches the
    /// join when no lane takes the else-side), the join for the else-side. Returns whether
    /// a set changed.
    fn release_kept(&mut self) -> bool {
        let mut changed = false;
        let keys: Vec<(Block, u8)> = self.kept.keys().copied().collect();
        for (branch, side) in keys {
            let then_side = side == Side::Then as u8;
            let reader = match &self.f().block(branch).term {
                Terminator::Branch { else_block, .. } if then_side => Some(*else_block),
                _ => self.input.a.join(branch),
            };
            let Some(reader) = reader else { continue };
            let for_join = self
                .kept
                .get(&Self::side_key(branch, Side::Else))
                .cloned()
                .unwrap_or_default();
            let entry = &self.plans[reader.index()].entry;
            let held =
                |v: &Value| entry.binary_search(v).is_ok() || then_side && for_join.contains(v);
            if let Some(kept) = self.kept.get_mut(&(branch, side)) {
                let before = kept.len();
                kept.retain(held);
                changed |= kept.len() != before;
            }
        }
        changed
    }

    fn drop_unneeded_round(&mut self) {
        let order = self.input.order;
        let needed = self.needed_at_entries(order);
        for &b in order {
            let protected = self.protected(b);
            let phis: Vec<Value> = self.f().block(b).phis.iter().map(|p| p.def.value).collect();
            let unneeded: Vec<Value> = self.plans[b.index()]
                .entry
                .iter()
                .copied()
                .filter(|v| !needed[b.index()].contains(v) && !protected.contains(v))
                .filter(|v| !phis.contains(v))
                .collect();
            for v in unneeded {
                self.leave_from_entry(b, v);
            }
        }
    }

    /// Per block, the values of its entry W that are needed there ([`Self::needed_at_entry`]):
    /// a least fixpoint, growing from nothing. A worklist seeded in post-order puts a
    /// block's predecessors back when its set grows; the sets only grow, so the order of
    /// the visits does not change the fixpoint, and a block is visited again only when a
    /// successor changed, not on every round.
    fn needed_at_entries(&self, order: &[Block]) -> Vec<SortedSet> {
        let mut needed: Vec<SortedSet> = (self.plans.iter())
            .map(|plan| SortedSet::with_capacity(plan.entry.len()))
            .collect();
        let mut queued = vec![false; self.plans.len()];
        order.iter().for_each(|b| queued[b.index()] = true);
        let mut work: VecDeque<Block> = order.iter().rev().copied().collect();
        while let Some(b) = work.pop_front() {
            queued[b.index()] = false;
            let mut grew = false;
            for &v in &self.plans[b.index()].entry {
                if !needed[b.index()].contains(&v) && self.needed_at_entry(b, v, &needed) {
                    needed[b.index()].insert(v);
                    grew = true;
                }
            }
            if grew {
                for &p in self.input.graph.preds(b) {
                    if !std::mem::replace(&mut queued[p.index()], true) {
                        work.push_back(p);
                    }
                }
            }
        }
        needed
    }

    /// Records, per block, the exit values the final kept sets protect.
    fn record_protected(&mut self) {
        for b in self.input.f.block_ids() {
            let protected = self.protected(b);
            let plan = &mut self.plans[b.index()];
            plan.protected = plan
                .exit
                .iter()
                .copied()
                .filter(|v| protected.contains(v))
                .collect();
        }
    }

    /// Whether `v`, in registers at the entry of `b`, is read there before it leaves
    /// them, or stays in them to the end into a successor that needs it, or leaves them
    /// where its store runs less often than on the edge into `b`
    /// ([`Self::eviction_stays_in`]).
    fn needed_at_entry(&self, b: Block, v: Value, needed: &[SortedSet]) -> bool {
        let plan = &self.plans[b.index()];
        let first_eviction = plan
            .evictions
            .iter()
            .filter(|e| e.1 == v)
            .map(|e| e.0)
            .min();
        match (self.first_read_in_block(b, v), first_eviction) {
            (Some(r), Some(e)) if r <= e => return true,
            (Some(_), None) => return true,
            (_, Some(_)) => return self.eviction_stays_in(b, v),
            (None, None) => {}
        }
        plan.exit.binary_search(&v).is_ok()
            && self.input.graph.succs(b).iter().any(|s| {
                let entry = &self.plans[s.index()].entry;
                entry.binary_search(&v).is_ok() && needed[s.index()].contains(&v)
                    || self.passes_to_phi(b, *s, v)
            })
    }

    /// Whether `v`, evicted in `b` before any read, stays in registers at `b`'s entry up
    /// to that eviction: out of the entry, it would leave on the edge from `b`'s only
    /// predecessor, and an edge from a block with several successors is coupled at that
    /// block's end ([`edges`]), so its store would run there, more often than in `b`
    /// (generated seed 242, class `v`: an eviction in a block at frequency 0.25 priced
    /// there became a store at the end of its predecessor, in a loop at frequency 10).
    fn eviction_stays_in(&self, b: Block, v: Value) -> bool {
        let graph = self.input.graph;
        let &[p] = graph.preds(b) else {
            return false;
        };
        let freq = &self.input.a.freq;
        graph.succs(p).len() > 1
            && freq[p.index()] > freq[b.index()]
            && self.plans[p.index()].exit.binary_search(&v).is_ok()
    }

    /// The first position where an instruction or the terminator of `b` reads `v` (a phi
    /// argument for a successor is no such read: it is passed on at the end, in a
    /// register or in memory as the phi is).
    fn first_read_in_block(&self, b: Block, v: Value) -> Option<u32> {
        let n = self.f().block(b).insts.len() as u32;
        self.uses
            .next(b, v, 0)
            .filter(|&r| r < n || self.reads_at(b, n).contains(&v))
    }

    /// Whether `b` passes `v` to a phi of `s` kept in registers.
    fn passes_to_phi(&self, b: Block, s: Block, v: Value) -> bool {
        let entry = &self.plans[s.index()].entry;
        self.f().block(s).phis.iter().any(|phi| {
            entry.binary_search(&phi.def.value).is_ok()
                && phi.args.iter().any(|a| a.block == b && a.value == v)
        })
    }

    /// `v` is not in registers at the entry of `b` after all: nor in the block until
    /// its first read or eviction (that eviction goes), nor at its end when neither
    /// happens.
    fn leave_from_entry(&mut self, b: Block, v: Value) {
        let first_read = self.first_read_in_block(b, v);
        let plan = &mut self.plans[b.index()];
        plan.entry.retain(|&x| x != v);
        let first_eviction = plan
            .evictions
            .iter()
            .filter(|e| e.1 == v)
            .map(|e| e.0)
            .min();
        match (first_read, first_eviction) {
            (_, Some(e)) => {
                if let Some(i) = plan.evictions.iter().position(|&(at, x)| x == v && at == e) {
                    plan.evictions.remove(i);
                }
            }
            (None, None) => plan.exit.retain(|&x| x != v),
            (Some(_), None) => {}
        }
    }

    /// A value a loop header holds at its entry (B&H §4.2: used in the loop, so taken while
    /// the budget has room) is reloaded on every edge into the header, or into a block
    /// that holds it from there on, whose end lacks it: a back edge, after the loop's
    /// peak evicted it past its read. Entering the loop in memory instead, it is reloaded
    /// where it is read first; in a nested loop a read in the inner loop costs what the
    /// inner back edge's reload costs, and the outer back edge's reload goes. Once every
    /// block is walked, for each header in visit order and each live-in it holds, the
    /// region holding it from the header's entry up to its first read or eviction
    /// ([`Self::held_from`]) gives both prices: the reloads on the edges into the region
    /// from blocks whose end lacks it, against one reload at each first read. The value
    /// leaves the region when the reads cost less. Registers only empty, so every
    /// instruction still fits; the reloads it still needs run where it is read.
    fn enter_loops_in_memory(&mut self) {
        let order = self.input.order;
        for &h in order.iter().filter(|&&h| self.input.loops.is_header(h)) {
            let phis: Vec<Value> = self.f().block(h).phis.iter().map(|p| p.def.value).collect();
            let held: Vec<Value> = self.plans[h.index()]
                .entry
                .iter()
                .copied()
                .filter(|v| !phis.contains(v) && !self.pinned.contains(v))
                .collect();
            for v in held {
                let Some(region) = self.held_from(h, v) else {
                    continue;
                };
                if self.reads_cost(&region, v) < self.arrivals_cost(&region, v) {
                    for x in region {
                        self.leave_before_read(x, v);
                    }
                }
            }
        }
    }

    /// The blocks holding `v` from the entry of `h` on, up to its first read or eviction
    /// in each: `h`, then every successor whose entry holds it of a block that neither
    /// reads nor evicts it, but the block defining it: a phi `v` reached around a back
    /// edge is a new value there, in registers by that block's own entry set (found by
    /// fuzzing: a phi of an outer loop's header, held through an inner loop, left the
    /// outer header's entry without becoming a memory phi, and its reload read a slot
    /// nothing stored). None where a block of it keeps `v` for a divergent side, or
    /// passes it to a register phi.
    fn held_from(&self, h: Block, v: Value) -> Option<Vec<Block>> {
        let def_block = self.input.a.liveness.def_block(v);
        let uniform = self.input.target.class(self.input.class).uniform;
        let mut region = vec![h];
        let mut in_region = BTreeSet::from([h]);
        let mut k = 0;
        while k < region.len() {
            let x = region[k];
            k += 1;
            let anchored = uniform && self.input.a.divergence.anchor(x).is_some();
            if anchored || self.protected(x).contains(&v) {
                return None;
            }
            if self.first_read_in_block(x, v).is_some() || self.first_eviction(x, v).is_some() {
                continue;
            }
            for &s in self.input.graph.succs(x) {
                if self.passes_to_phi(x, s, v) {
                    return None;
                }
                let holds = self.plans[s.index()].entry.binary_search(&v).is_ok();
                if holds && s != def_block && in_region.insert(s) {
                    region.push(s);
                }
            }
        }
        Some(region)
    }

    /// The position of the first eviction of `v` in `b`'s walk.
    fn first_eviction(&self, b: Block, v: Value) -> Option<u32> {
        let evictions = &self.plans[b.index()].evictions;
        evictions.iter().filter(|e| e.1 == v).map(|e| e.0).min()
    }

    /// Whether `b` reads `v` before its walk evicts it.
    fn read_first(&self, b: Block, v: Value) -> bool {
        match (self.first_read_in_block(b, v), self.first_eviction(b, v)) {
            (Some(r), Some(e)) => r <= e,
            (read, _) => read.is_some(),
        }
    }

    /// What the reloads of `v` on the edges into `region` cost: one at the end of every
    /// visited predecessor of a block of it that lacks `v` there.
    fn arrivals_cost(&self, region: &[Block], v: Value) -> f64 {
        let freq = &self.input.a.freq;
        let lacks = |p: Block| {
            let plan = &self.plans[p.index()];
            plan.visited && plan.exit.binary_search(&v).is_err()
        };
        region
            .iter()
            .flat_map(|&x| self.input.graph.preds(x))
            .filter(|&&p| lacks(p))
            .map(|p| freq[p.index()])
            .sum()
    }

    /// What reloading `v` where `region` reads it first costs.
    fn reads_cost(&self, region: &[Block], v: Value) -> f64 {
        let freq = &self.input.a.freq;
        region
            .iter()
            .filter(|&&x| self.read_first(x, v))
            .map(|x| freq[x.index()])
            .sum()
    }

    /// `v` is not in registers at the entry of `b` after all: a block that reads it
    /// before any eviction reloads it there, others leave it as [`Self::leave_from_entry`]
    /// does.
    fn leave_before_read(&mut self, b: Block, v: Value) {
        if !self.read_first(b, v) {
            self.leave_from_entry(b, v);
            return;
        }
        let read = self.first_read_in_block(b, v).expect("read first");
        let plan = &mut self.plans[b.index()];
        plan.entry.retain(|&x| x != v);
        let at = plan.reloads.partition_point(|&r| r < (read, v));
        plan.reloads.insert(at, (read, v));
    }

    /// At a loop header inside a divergent side, a value the branch keeps for a later
    /// block that the loop does not read is live through the loop like any other, and
    /// stays in registers only while the loop's pressure leaves room for it, as
    /// [`Self::loop_entry`] takes values live through (B&H §4.2): kept beyond that room,
    /// it is forced into W first and crowds out the values the loop reads, which are then
    /// reloaded on every iteration. The kept values past the room (nearest next use
    /// first) are demoted while that comes in time: stored once at the branch, reloaded
    /// where read after the side.
    fn demote_kept_crowding_loop(&mut self, b: Block) {
        let body = self.input.loops.body(b);
        let read = self.read_in(body, b);
        let live_in = self.input.a.liveness.live_in(b);
        let phis = self.f().block(b).phis.iter().map(|p| p.def.value);
        let through: Vec<Value> = live_in
            .iter()
            .copied()
            .chain(phis)
            .filter(|&v| self.of_class(v) && !read.contains(&v))
            .collect();
        let through_units: u32 = through.iter().map(|&v| self.rounded(v)).sum();
        let loop_max = self.loop_pressure(body);
        let k = u32::from(self.input.budget);
        let room = k.saturating_sub(loop_max.saturating_sub(through_units));
        let protected = self.protected(b);
        let mut kept: Vec<Value> = through
            .into_iter()
            .filter(|v| protected.contains(v) && !self.pinned.contains(v))
            .filter(|v| live_in.binary_search(v).is_ok())
            .collect();
        kept.sort_by_cached_key(|&v| (self.entry_distance(b, v), v));
        let mut taken = 0;
        for v in kept {
            let need = self.rounded(v);
            if taken + need <= room {
                taken += need;
            } else if self.demotable(b, v) {
                self.demote(b, v);
            }
        }
    }

    /// The class's most units live at once anywhere in the loop `body`, each value
    /// rounded up to its alignment as the values live through it are ([`LoopPeaks`]).
    fn loop_pressure(&self, body: &[Block]) -> u32 {
        self.loop_peaks.of(body)
    }

    /// Whether `b` is a loop header entered from outside (its back edges not visited).
    fn is_loop_entry(&self, b: Block) -> bool {
        let anchored = self.input.target.class(self.input.class).uniform
            && self.input.a.divergence.anchor(b).is_some();
        let preds = self.input.graph.preds(b);
        let visited = preds
            .iter()
            .filter(|p| self.plans[p.index()].visited)
            .count();
        !anchored && self.input.loops.is_header(b) && visited < preds.len()
    }

    /// At a loop header, values MIN would evict in the header before reading them enter
    /// the loop in memory instead: kept, they cost a store and a reload every iteration.
    /// An operand evicted after the instruction that reads it first counts too: held
    /// from the entry, it is reloaded on the back edges every iteration, as often as at
    /// that read, and takes a register up to it. A phi goes only when the header reads it
    /// after the eviction: as a memory phi its store moves to the edges, where an
    /// argument evicted anyway fills the phi's location with its own store; a phi the
    /// header does not read stays (left out, it would be stored on every incoming edge,
    /// where its eviction stores it once).
    ///
    /// Which values MIN evicts depends on which others the entry holds: a value evicted
    /// before its read took room that, left out, lets another stay (generated seed 791,
    /// class `a`: at `a=15` an 8-unit value the header never reads took the room of a
    /// 1-unit value read in it, and both went, 3,521 at `a=14`, 3,787 at `a=15`). So once
    /// the doomed values are out, each comes back, the header's first read nearest first,
    /// where the walk from the entry with it evicts no value of the entry before its read.
    fn drop_doomed(&mut self, b: Block, entry: &mut Set) -> Result<(), AllocError> {
        let mut doomed = self.evicted_unread(b, entry)?;
        entry.values.retain(|v| !doomed.contains(v));
        doomed.sort_by_key(|&v| (self.uses.next(b, v, 0).unwrap_or(u32::MAX), v));
        doomed.dedup();
        for v in doomed {
            entry.values.insert(v);
            if !self.evicted_unread(b, entry)?.is_empty() {
                entry.values.remove(&v);
            }
        }
        Ok(())
    }

    /// The values of `entry` that MIN, walking header `b` from it, evicts at or before
    /// their first read there and that may leave the entry ([`Self::drop_doomed`]).
    fn evicted_unread(&mut self, b: Block, entry: &Set) -> Result<Vec<Value>, AllocError> {
        let (_, trial) = self.walk(b, entry.clone(), true)?;
        let protected = self.protected(b);
        let phis: Vec<Value> = self.f().block(b).phis.iter().map(|p| p.def.value).collect();
        let doomed = trial.evictions.into_iter().filter(|&(at, v)| {
            let first_read = self.uses.next(b, v, 0);
            let read_before = first_read.is_some_and(|u| u < at);
            let phi_read_later = first_read.is_some_and(|u| u >= at) || !phis.contains(&v);
            entry.values.contains(&v) && !read_before && !protected.contains(&v) && phi_read_later
        });
        Ok(doomed.map(|(_, v)| v).collect())
    }

    /// After a divergent branch block: what it keeps in registers for its else-arm
    /// (through the then-side) and for its join (through the else-side; when the
    /// else-side loops back to the branch, whose join then follows blocks visited before
    /// it, only what enclosing sides keep anyway).
    fn keep_for_sides(&mut self, b: Block) {
        let f = self.input.f;
        let a = self.input.a;
        let Terminator::Branch {
            kind: BranchKind::Divergent,
            else_block,
            ..
        } = f.block(b).term
        else {
            return;
        };
        if !self.input.target.class(self.input.class).uniform
            || a.divergence.anchor(else_block) != Some(b)
        {
            return;
        }
        let exit = &self.plans[b.index()].exit;
        let live_in = |s: Block| -> BTreeSet<Value> {
            exit.iter()
                .copied()
                .filter(|v| a.liveness.live_in(s).binary_search(v).is_ok())
                .collect()
        };
        let for_else = live_in(else_block);
        let loops_back = self.sides[b.index()].contains(&(b, Side::Else));
        let outer = self.protected(b);
        let for_join = match a.join(b) {
            Some(j) if a.divergence.anchor(j) == Some(b) => {
                let mut kept = live_in(j);
                if loops_back {
                    kept.retain(|v| outer.contains(v));
                }
                kept
            }
            _ => BTreeSet::new(),
        };
        self.kept.insert(Self::side_key(b, Side::Then), for_else);
        self.kept.insert(Self::side_key(b, Side::Else), for_join);
    }

    /// The values in registers at the entry of `b`.
    fn entry_set(&self, b: Block) -> Set {
        let f = self.f();
        let a = self.input.a;
        let uniform = self.input.target.class(self.input.class).uniform;
        let live_in: Vec<Value> = a
            .liveness
            .live_in(b)
            .iter()
            .copied()
            .filter(|&v| self.of_class(v))
            .collect();
        if let Some(branch) = a.divergence.anchor(b).filter(|_| uniform) {
            let side = if self.is_else_arm(branch, b) {
                Side::Then
            } else {
                Side::Else
            };
            let kept = self.kept.get(&Self::side_key(branch, side));
            let values = live_in
                .iter()
                .copied()
                .filter(|v| kept.is_some_and(|k| k.contains(v)))
                .collect();
            return Set { values };
        }
        let phis: Vec<Value> = f
            .block(b)
            .phis
            .iter()
            .map(|p| p.def.value)
            .filter(|&v| self.of_class(v))
            .collect();
        let visited: Vec<Block> = self
            .input
            .graph
            .preds(b)
            .iter()
            .copied()
            .filter(|p| self.plans[p.index()].visited)
            .collect();
        let forced: Vec<Value> = {
            let protected = self.protected(b);
            live_in
                .iter()
                .chain(phis.iter().filter(|v| self.pinned.contains(v)))
                .copied()
                .filter(|v| protected.contains(v))
                .collect()
        };
        let candidates: Vec<Value> = live_in.iter().chain(&phis).copied().collect();
        let header =
            self.input.loops.is_header(b) && visited.len() < self.input.graph.preds(b).len();
        let ranked = if header {
            self.loop_entry(b, &candidates, &visited)
        } else {
            self.merge_entry(b, &candidates, &visited)
        };
        let mut set = Set::default();
        let mut units: u32 = forced.iter().map(|&v| self.rounded(v)).sum();
        set.values.extend(forced.iter().copied());
        if !header {
            self.leave_out_at_merge(b, &mut set, &forced, ranked);
            return set;
        }
        for v in ranked {
            if set.values.contains(&v) {
                continue;
            }
            let need = self.rounded(v);
            if units + need <= u32::from(self.input.budget) {
                units += need;
                set.values.insert(v);
            }
        }
        set
    }

    /// A merge's W: every ranked candidate, then, while they do not fit the budget as
    /// packed ([`Self::packs`]: not their sizes rounded up to alignment, which count a
    /// gap where a smaller value fits), the one
    /// MIN would evict first at the block's first position leaves ([`choose`]: next used
    /// after the loop, else the cheapest to leave out among those next used after the
    /// crowded positions, else Belady's farthest), the last to leave coming back while
    /// it fits. Leaving a value out is an eviction on the incoming edges,
    /// priced as MIN prices one (a store where it is not stored yet, and a reload),
    /// except that a phi left out is a memory phi, stored on every incoming edge
    /// ([`Self::entry_candidate`]).
    fn leave_out_at_merge(&self, b: Block, set: &mut Set, forced: &[Value], ranked: Vec<Value>) {
        let k = u32::from(self.input.budget);
        set.values.extend(ranked);
        let mut units: u32 = set.values.iter().map(|&v| self.rounded(v)).sum();
        let crowded = self.crowded[b.index()].saturating_sub(1);
        let mut left_out = Vec::new();
        while !self.packs(&set.values) {
            let excess = units.saturating_sub(k).max(1);
            let candidates: Vec<Candidate> = set
                .values
                .iter()
                .filter(|v| !forced.contains(v))
                .filter_map(|&v| self.entry_candidate(b, v, excess))
                .collect();
            let Some((v, _)) = choose(&candidates, crowded, excess) else {
                break;
            };
            set.values.remove(&v);
            units -= self.rounded(v);
            left_out.push(v);
        }
        for v in left_out.into_iter().rev() {
            set.values.insert(v);
            if !self.packs(&set.values) {
                set.values.remove(&v);
            }
        }
    }

    /// Whether `set` fits the budget as the packing places it, alignment included: a
    /// block's entry holds exactly what its first instruction's problem places, which
    /// can be more than the sizes rounded up to their alignment allow.
    fn packs(&self, set: &SortedSet) -> bool {
        edges::fits_in(self.f(), self.input.target, self.input.budget, set)
    }

    /// `v` as a candidate to leave out of a merge's W ([`Self::candidate`] at the first
    /// position); a phi's store is the one on every incoming edge whose argument is not
    /// stored already, each weighted by its predecessor's frequency. A dead phi is needed
    /// at the entry only (as at a loop header, [`Self::loop_entry`]): its next use is now.
    fn entry_candidate(&self, b: Block, v: Value, excess: u32) -> Option<Candidate> {
        let none = BTreeSet::new();
        let empty = Set::default();
        let ask = Ask {
            w: &empty,
            reads: &[],
            dropped: &none,
            operands_too: false,
            excess,
            loop_excess: 0,
            crowded: 0,
            doomed: &[],
        };
        let mut c = self.candidate(b, 0, v, &ask)?;
        let Some(phi) = self.f().block(b).phis.iter().find(|p| p.def.value == v) else {
            return Some(c);
        };
        if self.input.a.liveness.is_dead(v) {
            c.distance = 0;
            c.gain = 0;
            c.after_loop = false;
        }
        let freq = &self.input.a.freq;
        let here = freq[b.index()].max(f64::MIN_POSITIVE);
        let stores: f64 = phi
            .args
            .iter()
            .filter(|a| !self.evicted[a.value.index()])
            .map(|a| self.costs.0.store * freq[a.block.index()] / here)
            .sum();
        let size = f64::from(self.size(v));
        let useful = f64::from(u32::from(self.size(v)).min(excess).max(1));
        c.cost = (stores + self.costs.0.reload) * size / useful;
        Some(c)
    }

    fn is_else_arm(&self, branch: Block, b: Block) -> bool {
        matches!(self.f().block(branch).term, Terminator::Branch { else_block, .. } if else_block == b)
    }

    /// Distance from the entry of `b` to the next use of `v` (a phi of `b` included).
    fn entry_distance(&self, b: Block, v: Value) -> u64 {
        self.next.from(&self.uses, b, v, 0)
    }

    /// Loop header: candidates read in the loop by next use, then those live through the
    /// loop while its peak leaves room (B&H §4.2), the costliest to leave out per unit of
    /// room first ([`Self::through_taken`]). A dead phi comes first: it takes a
    /// register at the entry only, where as a memory phi its arguments would be stored. A value only carried around the
    /// loop to a phi counts as live through: keeping it costs a register everywhere in
    /// the loop, and a phi left out is a memory phi, whose back-edge argument is stored
    /// once instead of reloaded. A value live through that no entering predecessor ends
    /// with in a register is a candidate only when its reload on the entering edges runs
    /// less often than the one at its next read after the loop ([`ReloadFreq`]): the loop
    /// never reads it, so reloading it before the loop gains nothing inside, and the
    /// entering edges may run on every iteration of an enclosing loop.
    fn loop_entry(&self, b: Block, candidates: &[Value], visited: &[Block]) -> Vec<Value> {
        let (mut out, through) = self.loop_ranking(b, candidates);
        let freq = &self.input.a.freq;
        let entering: f64 = visited.iter().map(|p| freq[p.index()]).sum();
        let held = |v: Value| visited.iter().any(|&p| self.in_register_at_end(b, v, p));
        out.extend(self.through_taken(b, &through, entering, &held));
        out
    }

    /// The loop header `b`'s candidates read in the loop (and dead phis), by next use,
    /// and those live through it, with the room the loop's pressure leaves them.
    fn loop_ranking(&self, b: Block, candidates: &[Value]) -> (Vec<Value>, Through) {
        let body = self.input.loops.body(b);
        let read = self.read_in(body, b);
        let dead = |v: Value| self.input.a.liveness.is_dead(v);
        let used_in_loop = |v: Value| read.contains(&v) || dead(v);
        let (mut used, mut through): (Vec<Value>, Vec<Value>) =
            candidates.iter().partition(|&&v| used_in_loop(v));
        let by_distance = |v: &Value| (!dead(*v), self.entry_distance(b, *v), *v);
        used.sort_by_cached_key(by_distance);
        through.sort_by_cached_key(by_distance);
        let k = u32::from(self.input.budget);
        let used_units: u32 = used.iter().map(|&v| self.rounded(v)).sum();
        let through_units: u32 = through.iter().map(|&v| self.rounded(v)).sum();
        let loop_max = self.loop_pressure(body);
        let room = if used_units < k {
            k.saturating_sub(loop_max.saturating_sub(through_units))
        } else {
            0
        };
        let through = Through {
            values: through,
            room,
        };
        (used, through)
    }

    /// The values live through the loop that header `b` takes while they fit the room:
    /// those `held` in a register at the end of an entering predecessor, and those whose
    /// reload on the entering edges (at frequency `entering`) runs less often than the
    /// one at their next read after the loop. The room is a knapsack: the values that
    /// cost the most left out, per unit of room they take ([`Self::leave_out_cost`] times
    /// their share of their rounded units), come first, nearest next use first among
    /// equals. By next use alone, a value the header holds and has stored already, or
    /// a rematerialisable one, took the room from one it would have to store.
    fn through_taken(
        &self,
        b: Block,
        through: &Through,
        entering: f64,
        held: &dyn Fn(Value) -> bool,
    ) -> Vec<Value> {
        let mut candidates: Vec<(Value, f64)> = through
            .values
            .iter()
            .filter(|&&v| held(v) || entering < self.reload_freq.at_end(b, v))
            .map(|&v| {
                let share = f64::from(self.size(v)) / f64::from(self.rounded(v));
                (v, self.leave_out_cost(b, v, held(v), entering) * share)
            })
            .collect();
        candidates.sort_by(|x, y| y.1.total_cmp(&x.1));
        let mut taken = Vec::new();
        let mut units = 0;
        for (v, _) in candidates {
            let need = self.rounded(v);
            if units + need <= through.room {
                units += need;
                taken.push(v);
            }
        }
        taken
    }

    /// What leaving `v`, live through the loop of header `b`, out of W costs, per unit
    /// of its size, priced as MIN prices an eviction ([`Self::candidate`]): a phi of `b`
    /// is then a memory phi, its arguments stored on every edge into `b`; another value
    /// `held` in a register at the end of an entering predecessor is stored where that
    /// runs less often, after its definition or on the entering edges (at frequency
    /// `entering`), unless it is stored already; both are then reloaded where read after
    /// the loop ([`ReloadFreq`]), or on every back edge of an enclosing loop that holds
    /// it ([`Self::outer_back_edges`]). A value in memory costs that reload less the one
    /// on the entering edges that taking it in needs.
    fn leave_out_cost(&self, b: Block, v: Value, held: bool, entering: f64) -> f64 {
        let costs = self.unit_costs(v);
        let freq = &self.input.a.freq;
        let reloads = self
            .reload_freq
            .at_end(b, v)
            .max(self.outer_back_edges(b, v));
        let reload_after = costs.reload * reloads;
        if self.f().block(b).phis.iter().any(|phi| phi.def.value == v) {
            let edges: f64 = self
                .input
                .graph
                .preds(b)
                .iter()
                .map(|p| freq[p.index()])
                .sum();
            costs.store * edges + reload_after
        } else if held {
            let def = self.input.a.liveness.def_block(v);
            let store = if self.evicted[v.index()] {
                0.0
            } else {
                costs.store * freq[def.index()].min(entering)
            };
            store + reload_after
        } else {
            reload_after - costs.reload * entering
        }
    }

    /// The summed frequency of the back edges of the innermost visited loop header
    /// enclosing loop header `b` that holds `v` at its entry (not as its phi), where `v`
    /// is read next in that loop's next iteration (its next read is in a block of the
    /// loop visited already, reached around a back edge): left out of `b`'s W, `v` is
    /// then missing at each of those back edges, and B&H §4.2's coupling reloads it on
    /// every one, not once where it is read — unless [`Self::enter_loops_in_memory`]
    /// moves those reloads to its first reads in the loop, which then bound the price.
    /// 0 otherwise: read later in the iteration, `v` is reloaded there and held to the
    /// back edges; read only after the loop, it leaves the header's W
    /// ([`Self::drop_unneeded`]). Priced at one reload, four one-unit values that an
    /// outer loop reloaded on its two back edges took the room of an eight-unit value
    /// read once after the inner loop (generated seed 308, class `v`: 1,245 at `v=98`,
    /// 1,557 at `v=99`).
    fn outer_back_edges(&self, b: Block, v: Value) -> f64 {
        let loops = self.input.loops;
        let Some(h) = self.holding_header(loops.enclosing(b), v) else {
            return 0.0;
        };
        let body = loops.body(h);
        let next_iteration =
            |r: Block| body.binary_search(&r).is_ok() && self.plans[r.index()].visited;
        if !self.next_read.read_block(b, v).is_some_and(next_iteration) {
            return 0.0;
        }
        let freq = &self.input.a.freq;
        let latches = self.input.graph.preds(h).iter();
        let latches = latches.filter(|p| body.binary_search(p).is_ok());
        let edges: f64 = latches.map(|p| freq[p.index()]).sum();
        let region = self.held_from(h, v);
        region.map_or(edges, |region| edges.min(self.reads_cost(&region, v)))
    }

    /// The innermost visited loop header from `header` outwards that holds `v` at its
    /// entry, not as its phi.
    fn holding_header(&self, mut header: Option<Block>, v: Value) -> Option<Block> {
        while let Some(h) = header {
            let plan = &self.plans[h.index()];
            let is_phi = || self.f().block(h).phis.iter().any(|p| p.def.value == v);
            if plan.visited && plan.entry.binary_search(&v).is_ok() && !is_phi() {
                return Some(h);
            }
            header = self.input.loops.enclosing(h);
        }
        None
    }

    /// The values an instruction, terminator or phi (but one of `header`) of `blocks`
    /// reads: a value only passed back to the header's phis is carried around the loop,
    /// not read in it. A hash set, filled in one pass over the reads: a loop of
    /// a large function reads thousands of values and only a few are asked, so neither a
    /// sorted set nor a flag per value of the function (cleared for every loop header,
    /// quadratic in a function of many loops) pays.
    fn read_in(&self, blocks: &[Block], header: Block) -> FxHashSet<Value> {
        let f = self.f();
        let mut read = FxHashSet::default();
        for &x in blocks {
            let block = f.block(x);
            let phis = if x == header {
                &[][..]
            } else {
                &block.phis[..]
            };
            let args = phis.iter().flat_map(|p| p.args.iter().map(|a| a.value));
            let ops = block.insts.iter().filter_map(|inst| inst.op());
            let uses = ops.flat_map(|op| op.uses().map(|u| u.value));
            let term = block.term.uses().iter().map(|u| u.value);
            read.extend(args.chain(uses).chain(term));
        }
        read
    }

    /// Elsewhere: values in registers at the end of every visited predecessor, then those
    /// in some, each group by next use (B&H §4.3), rematerialisable values last (Mesa
    /// ACO's spiller prefers them too: a remat costs less than any reload). A phi counts as in registers where its
    /// argument is. A value (not a phi) in registers at the end of only some predecessors
    /// is a candidate only when reloading it on the others' edges is cheaper than
    /// reloading it once where it is next read ([`Self::reload_weight`]: in the block, or
    /// after it where [`ReloadFreq`] puts that reload): where the sides of a divergent
    /// branch both run, their edges into the join add up, and one reload after the join
    /// is the cheaper; a value read next on a hot path after the block is cheaper to
    /// reload on a cold edge into it.
    fn merge_entry(&self, b: Block, candidates: &[Value], visited: &[Block]) -> Vec<Value> {
        let f = self.f();
        let in_pred = |v: Value, p: Block| self.in_register_at_end(b, v, p);
        let freq = &self.input.a.freq;
        let is_phi = |v: Value| f.block(b).phis.iter().any(|phi| phi.def.value == v);
        let mut all = Vec::new();
        let mut some = Vec::new();
        for &v in candidates {
            let n = visited.iter().filter(|&&p| in_pred(v, p)).count();
            let missing: f64 = visited
                .iter()
                .filter(|&&p| !in_pred(v, p))
                .map(|p| freq[p.index()])
                .sum();
            if n == visited.len() && n > 0 {
                all.push(v);
            } else if n > 0 && (is_phi(v) || missing < self.reload_weight(b, 0, v)) {
                some.push(v);
            }
        }
        let remat = &self.input.flags.remat;
        let by_distance = |v: &Value| (remat[v.index()], self.entry_distance(b, *v), *v);
        all.sort_by_cached_key(by_distance);
        some.sort_by_cached_key(by_distance);
        all.extend(some);
        all
    }

    /// Whether `v`, live into `b` or a phi of `b`, is in a register at the end of its
    /// visited predecessor `p`: a phi is where its argument from `p` is.
    fn in_register_at_end(&self, b: Block, v: Value, p: Block) -> bool {
        let arg = self.arg_from(b, v, p);
        self.plans[p.index()].exit.binary_search(&arg).is_ok()
    }

    /// What `p` passes to `v`, live into `b` or a phi of `b`: the phi's argument from
    /// `p`, else `v` itself.
    fn arg_from(&self, b: Block, v: Value, p: Block) -> Value {
        self.f()
            .block(b)
            .phis
            .iter()
            .find(|phi| phi.def.value == v)
            .and_then(|phi| phi.args.iter().find(|a| a.block == p))
            .map_or(v, |a| a.value)
    }

    /// Belady's MIN through `b` from `w`; returns W at the end. At the terminator the
    /// values read are its operands; the phi arguments the block passes on stay in W
    /// as values whose next use is now, and may leave it like any other.
    fn walk(&mut self, b: Block, w: Set, dry: bool) -> Result<(Set, Walked), AllocError> {
        let mut horizon = std::mem::take(&mut self.horizon);
        let touched = self.fill_horizon(b, &mut horizon);
        let walked = self.walk_with(b, w, dry, &horizon);
        touched.iter().for_each(|v| horizon[v.index()] = 0);
        self.horizon = horizon;
        walked
    }

    /// Sets the horizon of the values `b` reads or keeps live out; returns them.
    fn fill_horizon(&self, b: Block, horizon: &mut [u32]) -> Vec<Value> {
        let mut touched = Vec::new();
        for &(v, at) in self.uses.in_block(b) {
            horizon[v.index()] = at;
            touched.push(v);
        }
        for &v in self.input.a.liveness.live_out(b) {
            horizon[v.index()] = u32::MAX;
            touched.push(v);
        }
        touched
    }

    fn walk_with(
        &mut self,
        b: Block,
        mut w: Set,
        dry: bool,
        horizon: &[u32],
    ) -> Result<(Set, Walked), AllocError> {
        let mut walked = Walked::default();
        let f = self.input.f;
        let n = f.block(b).insts.len() as u32;
        let mut crowded: Option<Vec<u64>> = None;
        let mut loop_excess: Option<u32> = None;
        let mut next_loop: Option<Option<NextLoop>> = None;
        let mut reads = Vec::new();
        for i in 0..=n {
            self.fill_reads(b, i, &mut reads);
            for &v in &reads {
                if w.values.insert(v) {
                    walked.reloads.push((i, v));
                }
            }
            let living = |v: Value| horizon[v.index()] > i;
            let mut dropped: BTreeSet<Value> = BTreeSet::new();
            let mut victims: Vec<(Value, bool)> = Vec::new();
            loop {
                let lives = |v: Value| living(v) && !dropped.contains(&v);
                let fits = self.fits(b, i, &w, &lives);
                if fits && self.leaves_copy_temp(b, i, &w) {
                    break;
                }
                let (early, late) = self.overflow(b, i, &w, &lives);
                let operands_too = !fits && i < n && early == 0;
                let excess = if operands_too { late } else { early }.max(1);
                let next_loop = next_loop.get_or_insert_with(|| self.next_loop(b));
                let doomed = next_loop
                    .as_ref()
                    .map_or_else(Vec::new, |l| self.doomed(b, i, l, &w, &dropped));
                let ask = Ask {
                    w: &w,
                    reads: &reads,
                    dropped: &dropped,
                    operands_too,
                    excess,
                    loop_excess: *loop_excess.get_or_insert_with(|| self.loop_excess(b)),
                    crowded: crowded.get_or_insert_with(|| self.crowded_runs(b))[i as usize],
                    doomed: &doomed,
                };
                let victim = self.victim(b, i, &ask, dry);
                let Some((v, operand)) = victim else {
                    if fits {
                        break;
                    }
                    return Err(self.stuck(b, i));
                };
                victims.push((v, operand));
                if operand {
                    dropped.insert(v);
                } else {
                    w.values.remove(&v);
                }
            }
            self.keep_needed_victims(b, i, &mut w, &mut dropped, &mut victims, &living);
            for &(v, _) in &victims {
                walked.evictions.push((i, v));
                if !dry {
                    self.evicted[v.index()] = true;
                }
            }
            w.values.retain(|&v| living(v) && !dropped.contains(&v));
            if i < n {
                for d in self.defs_at(b, i) {
                    if living(d) {
                        w.values.insert(d);
                    }
                }
            }
        }
        Ok((w, walked))
    }

    /// The distinct values of the class instruction `i` reads (the terminator's uses at
    /// the block's last position).
    fn reads_at(&self, b: Block, i: u32) -> Vec<Value> {
        let mut reads = Vec::new();
        self.fill_reads(b, i, &mut reads);
        reads
    }

    /// [`Self::reads_at`] into `reads`, a buffer reused from instruction to instruction.
    fn fill_reads(&self, b: Block, i: u32, reads: &mut Vec<Value>) {
        reads.clear();
        let block = self.f().block(b);
        match block.insts.get(i as usize).map(|inst| &inst.kind) {
            Some(InstKind::Op(op)) => reads.extend(op.uses().map(|u| u.value)),
            Some(_) => {}
            None => reads.extend(block.term.uses().iter().map(|u| u.value)),
        }
        reads.retain(|&v| self.of_class(v));
        reads.sort();
        reads.dedup();
    }

    fn defs_at(&self, b: Block, i: u32) -> Vec<Value> {
        match &self.f().block(b).insts[i as usize].kind {
            InstKind::Op(op) => op
                .defs
                .iter()
                .map(|d| d.value)
                .filter(|&v| self.of_class(v))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Once the instruction fits, victims whose eviction turned out unnecessary (a later,
    /// larger one freed enough) come back, the last chosen first; where the victims left
    /// a unit for the temporary of the copy before the instruction, only while it stays.
    fn keep_needed_victims(
        &self,
        b: Block,
        i: u32,
        w: &mut Set,
        dropped: &mut BTreeSet<Value>,
        victims: &mut Vec<(Value, bool)>,
        living: &dyn Fn(Value) -> bool,
    ) {
        let temp = self.leaves_copy_temp(b, i, w);
        let mut k = victims.len();
        while k > 0 {
            k -= 1;
            let (v, operand) = victims[k];
            if operand {
                dropped.remove(&v);
            } else {
                w.values.insert(v);
            }
            let lives = |x: Value| living(x) && !dropped.contains(&x);
            if self.fits(b, i, w, &lives) && (!temp || self.leaves_copy_temp(b, i, w)) {
                victims.remove(k);
            } else if operand {
                dropped.insert(v);
            } else {
                w.values.remove(&v);
            }
        }
    }

    /// The value to evict at instruction `i` ([`choose`]). Among values next used only
    /// after the current loop that stay out for the rest of it, the farthest for its
    /// cost, its useful units those the loop's peak exceeds the budget by, when more than
    /// the excess here ([`Self::loop_excess`]: out, its units serve the rest of the loop,
    /// and priced by the excess here alone, one unit of excess less let a one-unit value
    /// reloaded on an outer back edge go where a two-unit value reloaded after the outer
    /// loop had, generated seed 173, class `q`), a value the loop header the block enters
    /// leaves out anyway first ([`Self::doomed`]); Belady's farthest whatever its cost
    /// evicted values reloaded in hot blocks before cheaper ones. Otherwise, among
    /// values next used after the positions that stay over the budget (`crowded`, on
    /// into the successors), the first of the cheapest way to cover the excess: the
    /// cheapest to evict per useful unit, unless the smaller values it would bring with
    /// it cost more together than one value covering the excess alone (their store and
    /// reload, weighted by where they run: a loop-invariant value is stored once before
    /// the loop, a value defined in the loop every iteration; the reload runs where the
    /// value is read next, [`ReloadFreq`]; a remat needs no store; a 4-unit value
    /// evicted for one missing unit pays for three), the farthest among equals. When
    /// every candidate comes back while the registers are still over the budget, the
    /// farthest for its cost: next-use distance per unit of that cost (Belady's farthest
    /// weighted by the share of its units the `excess` needs, when costs are equal).
    /// Operands that live on are candidates (to leave after the instruction) when only
    /// the late instant overflows. A value kept through a divergent side is priced with the
    /// reloads its demotion brings ([`Self::demotion_freq`]).
    /// Returns the value and whether it is an operand.
    fn victim(&mut self, b: Block, i: u32, ask: &Ask, dry: bool) -> Option<(Value, bool)> {
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let open = ask.w.values.iter().filter(|v| !ask.dropped.contains(v));
        candidates.extend(open.filter_map(|&v| self.candidate(b, i, v, ask)));
        let found = choose(&candidates, ask.crowded, ask.excess);
        self.candidates = candidates;
        if let Some((v, _)) = found.filter(|_| !dry) {
            self.demote(b, v);
        }
        found
    }

    /// The loop `b`, in no loop itself, enters at its end: its one successor, a loop
    /// header whose other predecessors are in the loop. Inside a loop, the value MIN
    /// keeps instead of one the next header leaves out lives on around the back edge,
    /// where a crowded run later evicts smaller values one unit at a time in its place
    /// (generated seed 242, class `v`: 7,608 → 9,528 at `v=49` when blocks in loops
    /// counted too).
    fn next_loop(&self, b: Block) -> Option<NextLoop> {
        let graph = self.input.graph;
        let loops = self.input.loops;
        let &[h] = graph.succs(b) else {
            return None;
        };
        if loops.depth(b) > 0 || !loops.is_header(h) {
            return None;
        }
        let body = loops.body(h);
        if !graph.preds(h).iter().all(|p| *p == b || body.contains(p)) {
            return None;
        }
        let f = self.f();
        let live_in = self.input.a.liveness.live_in(h).iter().copied();
        let phis = f.block(h).phis.iter().map(|p| p.def.value);
        let candidates: Vec<Value> = live_in.chain(phis).filter(|&v| self.of_class(v)).collect();
        let (_, through) = self.loop_ranking(h, &candidates);
        let passed: BTreeSet<Value> = candidates.iter().map(|&v| self.arg_from(h, v, b)).collect();
        let n = f.block(b).insts.len() as u32;
        let defined_at = (0..n)
            .flat_map(|i| self.defs_at(b, i).into_iter().map(move |d| (d, i)))
            .filter(|(d, _)| passed.contains(d))
            .collect();
        Some(NextLoop {
            header: h,
            through,
            defined_at,
        })
    }

    /// The values in W at instruction `i` of `b` that the loop header `b` enters next
    /// leaves out of its W anyway (B&H §4.2: the loop's pressure leaves no room for
    /// them), with every value of W that lives into the header held until `b`'s end,
    /// and the values `b` defines from `i` on too. Evicting one costs nothing the header
    /// would not spend: it is stored before the loop and reloaded after it either way,
    /// and the header takes the same values without it.
    fn doomed(
        &self,
        b: Block,
        i: u32,
        next_loop: &NextLoop,
        w: &Set,
        dropped: &BTreeSet<Value>,
    ) -> Vec<Value> {
        let h = next_loop.header;
        let later = |x: Value| next_loop.defined_at.get(&x).is_some_and(|&at| at >= i);
        let held = |v: Value| {
            let x = self.arg_from(h, v, b);
            (w.values.contains(&x) && !dropped.contains(&x)) || later(x)
        };
        let freq = self.input.a.freq[b.index()];
        let taken: FxHashSet<Value> = self
            .through_taken(h, &next_loop.through, freq, &held)
            .into_iter()
            .collect();
        let is_phi = |v: &Value| self.f().block(h).phis.iter().any(|p| p.def.value == *v);
        let mut doomed: Vec<Value> = next_loop
            .through
            .values
            .iter()
            .filter(|v| !taken.contains(v) && !is_phi(v) && w.values.contains(v))
            .copied()
            .collect();
        doomed.sort_unstable();
        doomed
    }

    /// Per position `i` of `b`: how many positions after it the demand (with nothing
    /// spilled) stays over the budget, on into the successors (the shortest such run
    /// among them); a value needed again within them would have to come back while the
    /// registers are still full.
    fn crowded_runs(&self, b: Block) -> Vec<u64> {
        let n = self.f().block(b).insts.len() as u32;
        let mut runs = vec![0; n as usize + 1];
        runs[n as usize] = self.crowded_after(b);
        for i in (0..n).rev() {
            let j = i + 1;
            runs[i as usize] = if self.over(b, j) {
                runs[j as usize] + 1
            } else {
                0
            };
        }
        runs
    }

    /// Whether the demand at position `j` of `b` (with nothing spilled) exceeds the
    /// budget.
    fn over(&self, b: Block, j: u32) -> bool {
        let k = u32::from(self.input.budget);
        self.input.a.pressure.at(b, Some(j), self.input.class) > k
    }

    /// Per block: how many positions from its first instruction on the demand (with
    /// nothing spilled) stays over the budget, through its successors when the whole
    /// block does — the shortest run among them, a shortest-path fixpoint (Bellman-Ford
    /// over the blocks in reverse visit order); a run that never ends counts as
    /// reaching past the loop ([`LOOP_EXIT`]).
    fn crowded_from_entry(&self) -> Vec<u64> {
        let f = self.f();
        let order = self.input.order;
        let leading: Vec<Option<u64>> = f
            .block_ids()
            .map(|b| {
                let n = f.block(b).insts.len() as u32;
                (0..=n).position(|j| !self.over(b, j)).map(|j| j as u64)
            })
            .collect();
        let mut runs: Vec<u64> = leading.iter().map(|l| l.unwrap_or(LOOP_EXIT)).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in order.iter().rev() {
                if leading[b.index()].is_some() {
                    continue;
                }
                let after = self
                    .running_succs(b)
                    .iter()
                    .map(|s| runs[s.index()])
                    .min()
                    .unwrap_or(0);
                let run = (f.block(b).insts.len() as u64 + 1 + after).min(LOOP_EXIT);
                if run < runs[b.index()] {
                    runs[b.index()] = run;
                    changed = true;
                }
            }
        }
        runs
    }

    /// How many positions after the end of `b` stay over the budget: the shortest run
    /// among its successors ([`Self::crowded_from_entry`]).
    fn crowded_after(&self, b: Block) -> u64 {
        self.running_succs(b)
            .iter()
            .map(|s| self.crowded[s.index()])
            .min()
            .unwrap_or(0)
    }

    /// The successors of `b` the wave runs next: on the linear CFG, not the edges taken
    /// only when no lane takes a divergent side (`Divergence::is_skip`), unless every
    /// edge is one.
    fn running_succs(&self, b: Block) -> Vec<Block> {
        let succs = self.input.graph.succs(b);
        let divergence = &self.input.a.divergence;
        let uniform = self.input.target.class(self.input.class).uniform;
        let running: Vec<Block> = succs
            .iter()
            .copied()
            .filter(|&s| !uniform || !divergence.is_skip(b, s))
            .collect();
        if running.is_empty() {
            succs.to_vec()
        } else {
            running
        }
    }
    fn candidate(&self, b: Block, i: u32, v: Value, ask: &Ask) -> Option<Candidate> {
        if self.pinned.contains(&v) {
            return None;
        }
        let operand = ask.reads.contains(&v);
        let distance = self.next.from(&self.uses, b, v, i + u32::from(operand));
        if operand && (!ask.operands_too || distance == NEVER) {
            return None;
        }
        let size = u32::from(self.size(v));
        let after_loop = self.stays_out_for_the_loop(b, v, distance);
        let needed = if after_loop {
            ask.excess.max(ask.loop_excess)
        } else {
            ask.excess
        };
        let useful = size.min(needed).max(1);
        let costs = self.unit_costs(v);
        let freq = &self.input.a.freq;
        let here = freq[b.index()].max(f64::MIN_POSITIVE);
        let def = self.input.a.liveness.def_block(v);
        let store = if self.evicted[v.index()] {
            0.0
        } else {
            costs.store * (freq[def.index()] / here).min(1.0)
        };
        let reads = self.reload_weight(b, i + u32::from(operand), v) + self.demotion_freq(b, v);
        let reload = costs.reload * reads / here;
        let per_unit = (store + reload) * f64::from(size) / f64::from(useful);
        Some(Candidate {
            value: v,
            operand,
            distance,
            gain: u128::from(distance) * u128::from(useful),
            size: u128::from(size),
            cost: per_unit,
            doomed: ask.doomed.binary_search(&v).is_ok(),
            after_loop,
        })
    }

    /// How many units the innermost loop holding `b` exceeds the budget by at its peak
    /// (with nothing spilled); 0 outside loops.
    fn loop_excess(&self, b: Block) -> u32 {
        let loops = self.input.loops;
        loops.innermost(b).map_or(0, |h| {
            let peak = self.loop_pressure(loops.body(h));
            peak.saturating_sub(u32::from(self.input.budget))
        })
    }

    /// Whether `v`, `distance` from its next read in `b`, is read next only after the
    /// loop holding `b` and, evicted, stays out for the rest of that loop, as the
    /// after-loop rule of [`choose`] takes it: it is never read again, or no loop holds
    /// `b`, or it lives into the innermost loop's header, or its next-use path enters a
    /// loop before leaving that one (it stays out across the inner loop; [`NextRead`]).
    /// A value defined in the loop and read only after it comes back with every
    /// definition: stored every iteration, and reloaded on the exit edges, where a phi it
    /// feeds becomes a memory phi (generated seed 701, class `p`: 247 at `p=6`, 414 at
    /// `p=7`, where three values costing less went instead).
    fn stays_out_for_the_loop(&self, b: Block, v: Value, distance: u64) -> bool {
        if distance < LOOP_EXIT {
            return false;
        }
        if distance == NEVER {
            return true;
        }
        let Some(h) = self.input.loops.innermost(b) else {
            return true;
        };
        let lives_in = self.input.a.liveness.live_in(h).binary_search(&v).is_ok();
        lives_in || self.next_read.enters_loop_first(b, v)
    }

    /// The frequency at which `v`, leaving the registers at position `at` of `b`, is
    /// reloaded: `b`'s own when `b` reads it again, else that of the block that would
    /// reload it after `b` ([`ReloadFreq`]) — or more, when a visited loop header around
    /// `b` holds it: the header's W then lacks it at the back edges, where B&H §4.2's
    /// coupling reloads it, unless [`Self::enter_loops_in_memory`] moves that reload to
    /// the read. So the reload runs at the back edges' frequency, or at the frequency of
    /// the block of its next read ([`NextRead`]) where that is lower (generated seed 174,
    /// class `v`: a value evicted inside two loops whose headers held it, priced at the
    /// frequency 1 of the block entering the inner loop that reads it, was reloaded on
    /// back edges at frequencies 100 and 10).
    fn reload_weight(&self, b: Block, at: u32, v: Value) -> f64 {
        if self.uses.next(b, v, at).is_some() {
            return self.input.a.freq[b.index()];
        }
        let after = self.reload_freq.at_end(b, v);
        let back_edges = self.back_edge_freq(b, v);
        if back_edges <= after {
            return after;
        }
        after.max(back_edges.min(self.next_read.read_freq(b, v)))
    }

    /// The highest frequency of the back edges of the innermost visited loop header
    /// around `b` that holds `v` at its entry (not as its phi); 0 when none does.
    fn back_edge_freq(&self, b: Block, v: Value) -> f64 {
        let header = self.holding_header(self.input.loops.innermost(b), v);
        header.map_or(0.0, |h| self.latch_freq[h.index()])
    }

    fn stuck(&self, b: Block, i: u32) -> AllocError {
        let block = self.f().block(b);
        let pos = block
            .insts
            .get(i as usize)
            .map_or(block.term.pos(), |inst| inst.pos);
        AllocError::Pressure {
            function: self.f().name.clone(),
            block: block.name.clone(),
            pos,
            class: self.input.target.class(self.input.class).name.clone(),
            needed: u32::from(self.input.budget) + 1,
            budget: self.input.budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(value: u32, size: u128, cost: f64) -> Candidate {
        Candidate {
            value: Value(value),
            operand: false,
            distance: 10,
            gain: 10,
            size,
            cost,
            doomed: false,
            after_loop: false,
        }
    }

    /// Taken cheapest per unit first, 2 + 2 units cost 42 and the 4-unit value covering
    /// the excess of 3 alone (36) would go; 2 + 1 units cover it for 32. With that 1-unit
    /// value dearer, the large one goes. Where none covers an excess of 4 alone, 2 + 2 units
    /// (44) go rather than 3 + 2 (52), and where no set covers it, the cheapest per unit.
    #[test]
    fn the_cheapest_cover_is_exact_where_the_greedy_one_overshoots() {
        let list = [
            candidate(0, 2, 10.0),
            candidate(1, 2, 11.0),
            candidate(2, 1, 12.0),
            candidate(3, 4, 12.0),
        ];
        let by_cost: Vec<&Candidate> = list.iter().collect();
        assert_eq!(cheapest_smaller_cover(&by_cost, 3), Some((32.0, 0)));
        assert_eq!(cheapest_cover(&by_cost, 3).map(|c| c.value), Some(Value(0)));
        let dearer = [
            candidate(0, 2, 10.0),
            candidate(3, 4, 12.0),
            candidate(2, 1, 20.0),
        ];
        let by_cost: Vec<&Candidate> = dearer.iter().collect();
        assert_eq!(cheapest_cover(&by_cost, 3).map(|c| c.value), Some(Value(3)));
        let none_alone = [&dearer[0], &dearer[2]];
        assert_eq!(
            cheapest_cover(&none_alone, 3).map(|c| c.value),
            Some(Value(0))
        );
        let overshooting = [
            candidate(0, 3, 10.0),
            candidate(1, 2, 11.0),
            candidate(2, 2, 11.0),
        ];
        let by_cost: Vec<&Candidate> = overshooting.iter().collect();
        assert_eq!(cheapest_cover(&by_cost, 4).map(|c| c.value), Some(Value(1)));
        assert_eq!(cheapest_cover(&by_cost, 8).map(|c| c.value), Some(Value(0)));
    }
}
