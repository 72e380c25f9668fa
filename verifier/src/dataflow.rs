//! The forward dataflow over location units (see the crate documentation for the lattice).
//!
//! State: one [`Label`] per key (`keys.rs`: register units, lanes of registers, the lane
//! and wave views of slot units), dense. The in-state of a block is, per key, the meet over
//! that key's predecessor edges (linear or logical); on a logical edge whose lanes wait
//! for a walk, the per-lane keys written behind their back hold nothing known. At a block's
//! entry each phi's location holds the phi; every incoming edge is checked to bring the
//! phi's argument there. A worklist in reverse postorder iterates to the fixpoint silently,
//! each block's transfer applied through its summary (`summary.rs`: what the block leaves
//! in each key it writes, as a label or as a key of its in-state, found by running the
//! same transfer on symbolic cells); a last pass over every reachable block runs the
//! transfer on labels and reports errors against the stable in-states. Where the linear
//! CFG has no back edge, that last pass in reverse postorder is the fixpoint itself (each
//! block's predecessors come before it), so no iteration runs first.

use crate::cfg::Cfg;
use crate::check::Recompute;
use crate::constraints::class_spilled;
use crate::error::{ErrorKind, Point};
use crate::fresh::Fresh;
use crate::keys::{is_uniform_register, moves_of, Keys};
use crate::sink::{Operand, Sink};
use crate::summary::Summary;
use crate::unit::{units, Unit};
use chromatic::{ClassId, Function, InstKind, Location, Pos, Target, Value};
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// Parts a label can name per value: tuples are at most 128 units (`sm_90`'s `wgmma`
/// accumulators), and 256 leaves room for 16 million values.
const PARTS: u32 = 256;

/// What a unit holds: part `part` of original value `value`, or one of the special labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Label(u32);

impl Label {
    /// No path has reached this point yet (the lattice top; never left at a fixpoint).
    const TOP: Label = Label(u32::MAX);
    /// Never written on some path.
    const UNDEF: Label = Label(u32::MAX - 1);
    /// Different values on different incoming paths.
    const CONFLICT: Label = Label(u32::MAX - 2);
    /// A wave view last written per lane: what it holds may differ between lanes.
    const PER_LANE: Label = Label(u32::MAX - 3);
    /// Overwritten through storage it shares: a register by a write to one of its lanes,
    /// a lane by a write to its whole register.
    const CLOBBERED: Label = Label(u32::MAX - 4);
    /// Overwritten in lanes that waited while a whole-wave store or a lane write ran
    /// elsewhere (`keys.rs`).
    const SKIPPED: Label = Label(u32::MAX - 5);

    pub(crate) fn of(value: u32, part: u16) -> Label {
        Label(value * PARTS + u32::from(part))
    }

    /// Every label that names no value.
    #[cfg(test)]
    pub(crate) const SPECIAL: [Label; 6] = [
        Label::TOP,
        Label::UNDEF,
        Label::CONFLICT,
        Label::PER_LANE,
        Label::CLOBBERED,
        Label::SKIPPED,
    ];

    fn is_value(self) -> bool {
        self.0 < u32::MAX - 5
    }

    fn value(self) -> usize {
        (self.0 / PARTS) as usize
    }

    fn meet(self, other: Label) -> Label {
        match (self, other) {
            (x, y) if x == y => x,
            (Label::TOP, x) | (x, Label::TOP) => x,
            (Label::UNDEF, _) | (_, Label::UNDEF) => Label::UNDEF,
            (Label::PER_LANE, _) | (_, Label::PER_LANE) => Label::PER_LANE,
            (Label::SKIPPED, _) | (_, Label::SKIPPED) => Label::SKIPPED,
            (Label::CLOBBERED, _) | (_, Label::CLOBBERED) => Label::CLOBBERED,
            _ => Label::CONFLICT,
        }
    }
}

/// What a state holds per key: a [`Label`] when the transfer runs on a state, or a
/// symbolic cell when it runs to find a block's summary (`summary.rs`). The transfer only
/// writes labels, copies cells, and moves cells into destinations with [`Bans`].
pub(crate) trait Cell: Copy {
    /// The cell holding `label`.
    fn known(label: Label) -> Self;
    /// This cell moved into a destination that may not receive the values of `bans`.
    fn moved(self, flow: &Flow<'_>, bans: Bans) -> Self;
}

impl Cell for Label {
    fn known(label: Label) -> Label {
        label
    }

    /// A value the destination may not receive leaves nothing known there.
    fn moved(self, flow: &Flow<'_>, bans: Bans) -> Label {
        if flow.banned(bans, self).is_some() {
            Label::UNDEF
        } else {
            self
        }
    }
}

/// The values a move's destination may not receive ([`Flow::bans`]). A cell moved twice
/// obeys both destinations' bans: their union.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bans {
    per_lane: bool,
    uniform: bool,
}

impl Bans {
    pub fn union(self, other: Bans) -> Bans {
        Bans {
            per_lane: self.per_lane || other.per_lane,
            uniform: self.uniform || other.uniform,
        }
    }
}

/// The dataflow problem of one allocated function.
pub(crate) struct Flow<'a> {
    pub a: &'a Function,
    pub o: &'a Function,
    pub target: &'a Target,
    pub cfg: &'a Cfg,
    /// Allocated value → original value index (by name).
    pub value_map: &'a [Option<u32>],
    /// Per original value: how a `remat` may recompute it (empty where the allocation has
    /// no `remat`: nothing else reads it).
    pub recompute: &'a [Recompute<'a>],
    /// Where original values are defined, for recomputations in other blocks.
    fresh: Fresh<'a>,
    keys: Keys,
    /// Whether some branch of the function is divergent.
    divergent: bool,
    /// Per original value: whether it is pinned (no move may read it).
    pinned: &'a [bool],
}

type State = Vec<Label>;

/// The keys of a block's in-state to recompute, each once.
#[derive(Clone, Debug, Default)]
struct Dirty {
    keys: Vec<usize>,
    marked: Vec<bool>,
}

impl Dirty {
    /// Adds `key` of a state of `len` keys, unless it is there already.
    fn mark(&mut self, key: usize, len: usize) {
        self.marked.resize(len, false);
        if !self.marked[key] {
            self.marked[key] = true;
            self.keys.push(key);
        }
    }

    /// The keys marked, leaving none.
    fn take(&mut self) -> Vec<usize> {
        for &k in &self.keys {
            self.marked[k] = false;
        }
        std::mem::take(&mut self.keys)
    }
}

/// A `remat` instruction's parts.
struct Remat<'i> {
    dst: Location,
    value: Value,
    uses: &'i [chromatic::Use],
}

impl<'a> Flow<'a> {
    pub fn new(
        a: &'a Function,
        o: &'a Function,
        target: &'a Target,
        cfg: &'a Cfg,
        value_map: &'a [Option<u32>],
        recompute: &'a [Recompute<'a>],
    ) -> Flow<'a> {
        let divergent = a.blocks.iter().any(|b| b.term.is_divergent());
        Flow {
            a,
            o,
            target,
            cfg,
            value_map,
            recompute,
            fresh: Fresh::new(a, &cfg.succs, value_map, o.values.len()),
            keys: Keys::new(a, target, cfg, divergent),
            divergent,
            pinned: &[],
        }
    }

    /// Which original values are pinned.
    pub fn with_pinned(mut self, pinned: &'a [bool]) -> Flow<'a> {
        self.pinned = pinned;
        self
    }

    /// Whether a move from `src` into a slot writes every lane: `src` is a uniform register
    /// (a whole-wave store, `docs/FORMAT.md`), or no branch is divergent, so the exec mask
    /// stays full.
    fn whole_wave(&self, src: Location) -> bool {
        !self.divergent || is_uniform_register(self.target, src)
    }

    /// Iterates to the fixpoint, then reports every error in a last pass over the blocks in
    /// reverse postorder. Without a back edge in the linear CFG (which holds every logical
    /// edge) every predecessor of a block comes before it in that order, so the last pass
    /// alone is the fixpoint: it keeps each block's out-state for the blocks after it
    /// (`check_block` takes the transfer's steps) and no iteration runs first.
    pub fn run(&self, sink: &mut Sink) {
        let mut outs = if self.has_back_edge() {
            self.fixpoint()
        } else {
            vec![None; self.a.blocks.len()]
        };
        for &b in &self.cfg.rpo {
            let mut state = self.in_state(b, &outs);
            self.check_block(b, &mut state, sink);
            self.check_edges(b, &state, sink);
            if outs[b].is_none() {
                outs[b] = Some(state);
            }
        }
    }

    /// Whether some linear edge between reachable blocks goes to a block not after its
    /// source in reverse postorder.
    fn has_back_edge(&self) -> bool {
        let mut order = vec![usize::MAX; self.a.blocks.len()];
        for (i, &b) in self.cfg.rpo.iter().enumerate() {
            order[b] = i;
        }
        self.cfg.rpo.iter().any(|&b| {
            self.cfg.linear_succs[b]
                .iter()
                .any(|&s| order[s] <= order[b])
        })
    }

    /// The out-state of every reachable block at the fixpoint. A block's first visit runs
    /// its transfer on its whole in-state; a later one recomputes only the keys of its
    /// in-state whose predecessors' out-states changed, and from them, through the block's
    /// summary (`summary.rs`, found on the first revisit), only the keys of its out-state
    /// that depend on them. Each key of each block changes a bounded number of times (the
    /// lattice's height), so deep loop nests, which send changes around many times, cost
    /// per change rather than per block visit.
    fn fixpoint(&self) -> Vec<Option<State>> {
        let n = self.a.blocks.len();
        let mut order = vec![usize::MAX; n];
        for (i, &b) in self.cfg.rpo.iter().enumerate() {
            order[b] = i;
        }
        let mut summaries: Vec<Option<Summary>> = vec![None; n];
        let mut ins: Vec<State> = vec![Vec::new(); n];
        let mut outs: Vec<Option<State>> = vec![None; n];
        let mut dirty: Vec<Dirty> = vec![Dirty::default(); n];
        let mut work: BTreeSet<usize> = (0..self.cfg.rpo.len()).collect();
        while let Some(i) = work.pop_first() {
            let b = self.cfg.rpo[i];
            let changed = if outs[b].is_none() {
                ins[b] = self.in_state(b, &outs);
                let mut out = ins[b].clone();
                self.transfer(b, &mut out);
                outs[b] = Some(out);
                let revisits = self.cfg.linear_succs[b].iter().any(|&s| outs[s].is_some());
                if revisits {
                    (0..self.keys.len()).collect()
                } else {
                    Vec::new()
                }
            } else {
                let keys = dirty[b].take();
                let summary = summaries[b].get_or_insert_with(|| Summary::of(self, b));
                self.revisit(b, keys, summary, &mut ins[b], &mut outs)
            };
            for &s in &self.cfg.linear_succs[b] {
                // A block not visited yet computes its whole in-state on its first visit.
                if outs[s].is_some() && !changed.is_empty() {
                    for &k in &changed {
                        dirty[s].mark(k, self.keys.len());
                        // A lane view takes its slot's wave view where that holds a value.
                        if let Some(own) = self.keys.own_of(k) {
                            dirty[s].mark(own, self.keys.len());
                        }
                    }
                    work.insert(order[s]);
                }
            }
        }
        outs
    }

    /// Recomputes the keys `keys` of block `b`'s in-state `entry` and the keys of its
    /// out-state that its summary derives from those that changed; returns the out keys
    /// that changed.
    fn revisit(
        &self,
        b: usize,
        keys: Vec<usize>,
        summary: &Summary,
        entry: &mut State,
        outs: &mut [Option<State>],
    ) -> Vec<usize> {
        let mut changed_in = Vec::new();
        for k in keys {
            let label = self.in_key(b, k, outs);
            if entry[k] != label {
                entry[k] = label;
                changed_in.push(k);
            }
        }
        let out = outs[b]
            .as_mut()
            .expect("a revisited block has been visited");
        let mut changed_out = Vec::new();
        for k in changed_in {
            for &j in summary.readers(k) {
                let label = summary.resolve(j, self, entry);
                if out[j] != label {
                    out[j] = label;
                    changed_out.push(j);
                }
            }
        }
        changed_out
    }

    /// The in-state of block `b`, from the out-states of the blocks visited so far:
    /// [`Self::in_key`] of every key, computed edge by edge.
    fn in_state(&self, b: usize, outs: &[Option<State>]) -> State {
        if b == 0 {
            return vec![Label::UNDEF; self.keys.len()];
        }
        let mut state = vec![Label::TOP; self.keys.len()];
        for (edges, linear) in [
            (&self.cfg.preds[b], false),
            (&self.cfg.linear_preds[b], true),
        ] {
            for e in edges {
                let Some(out) = &outs[e.from] else { continue };
                let keys = state.iter_mut().zip(out).zip(&self.keys.linear);
                for ((x, &y), _) in keys.filter(|&(_, &l)| l == linear) {
                    *x = x.meet(y);
                }
                for k in self.keys.skipped(e.from, b).filter(|_| !linear) {
                    state[k] = state[k].meet(Label::SKIPPED);
                }
            }
        }
        for (own, wave) in self.keys.views() {
            if state[wave].is_value() {
                state[own] = state[wave];
            }
        }
        state
    }

    /// Key `k` at block `b`'s entry: Undefined at the function's entry; elsewhere the meet
    /// over the key's edges into `b` (linear or logical), except that a lane view takes its
    /// slot's wave view where that holds a value (every lane holds it).
    fn in_key(&self, b: usize, k: usize, outs: &[Option<State>]) -> Label {
        if b == 0 {
            return Label::UNDEF;
        }
        let own = self.meet_key(b, k, outs);
        match self.keys.wave_of(k).map(|w| self.meet_key(b, w, outs)) {
            Some(wave) if wave.is_value() => wave,
            _ => own,
        }
    }

    /// The meet of key `k` over its edges into `b`; on a logical edge whose waiting lanes
    /// had `k` written behind their back, it holds nothing known.
    fn meet_key(&self, b: usize, k: usize, outs: &[Option<State>]) -> Label {
        let linear = self.keys.linear[k];
        let edges = if linear {
            &self.cfg.linear_preds[b]
        } else {
            &self.cfg.preds[b]
        };
        let mut acc = Label::TOP;
        for e in edges {
            let Some(out) = &outs[e.from] else { continue };
            acc = acc.meet(out[k]);
            if !linear && self.keys.skips_any() && self.keys.is_skipped(e.from, b, k) {
                acc = acc.meet(Label::SKIPPED);
            }
        }
        acc
    }

    /// The number of keys, which a state holds one cell each of.
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    fn label(&self, v: Value, part: u16) -> Option<Label> {
        self.value_map[v.index()].map(|o| Label::of(o, part))
    }

    /// The keys a reader of `loc` sees (a uniform reader sees slots' wave views).
    fn keys_of(&self, loc: Location, uniform_reader: bool) -> impl Iterator<Item = usize> + '_ {
        units(loc).map(move |u| self.keys.read_key(u, uniform_reader))
    }

    /// What each unit of `loc` holds, first to last, for a reader uniform or not.
    fn read<'s, C: Cell>(
        &'s self,
        state: &'s [C],
        loc: Location,
        uniform_reader: bool,
    ) -> impl Iterator<Item = C> + 's {
        self.keys_of(loc, uniform_reader).map(|k| state[k])
    }

    /// Writes `cell` to a unit: its own key, a slot's wave view (`wave`: what a store
    /// leaves there), and clobbers the storage it shares.
    fn set<C: Cell>(&self, state: &mut [C], u: Unit, cell: C, wave: C) {
        let keys = self.keys.of(u);
        state[keys.own] = cell;
        if let Some(w) = keys.wave {
            state[w] = wave;
        }
        for &k in self.keys.aliases(keys.own) {
            state[k] = C::known(Label::CLOBBERED);
        }
    }

    fn write_value<C: Cell>(&self, state: &mut [C], loc: Location, v: Value) {
        for (i, u) in units(loc).enumerate() {
            let label = C::known(self.label(v, i as u16).unwrap_or(Label::UNDEF));
            self.set(state, u, label, label);
        }
    }

    /// Block `b`'s transfer on `state`: what its phis, operations and artefacts write.
    /// Checks nothing; [`Self::check_block`] runs the same steps with the checks.
    pub fn transfer<C: Cell>(&self, b: usize, state: &mut [C]) {
        let block = &self.a.blocks[b];
        self.enter(block, state);
        for inst in &block.insts {
            self.step(b, inst, state);
        }
    }

    /// At a block's entry every phi's location holds the phi.
    fn enter<C: Cell>(&self, block: &chromatic::BlockData, state: &mut [C]) {
        for phi in &block.phis {
            if let Some(loc) = phi.def.loc {
                self.write_value(state, loc, phi.def.value);
            }
        }
    }

    /// What instruction `inst` of block `b` writes.
    fn step<C: Cell>(&self, b: usize, inst: &chromatic::Inst, state: &mut [C]) {
        match &inst.kind {
            InstKind::Op(op) => {
                for d in &op.defs {
                    if let Some(loc) = d.loc {
                        self.write_value(state, loc, d.value);
                    }
                }
            }
            InstKind::Remat { dst, value, uses } => {
                let remat = Remat {
                    dst: *dst,
                    value: *value,
                    uses,
                };
                if self.remat_refusal(&remat, b).is_none() {
                    self.write_value(state, *dst, *value);
                } else {
                    for u in units(*dst) {
                        self.set(state, u, C::known(Label::UNDEF), C::known(Label::UNDEF));
                    }
                }
            }
            kind => self.moves(kind, state),
        }
    }

    /// Runs block `b` on `state`, checking every instruction before its step.
    fn check_block(&self, b: usize, state: &mut State, sink: &mut Sink) {
        let block = &self.a.blocks[b];
        self.enter(block, state);
        for (i, inst) in block.insts.iter().enumerate() {
            let at = At {
                block: b,
                point: Point::Inst(i),
                pos: inst.pos,
            };
            self.check_inst(inst, state, &at, sink);
            self.step(b, inst, state);
        }
        let at = At {
            block: b,
            point: Point::Term,
            pos: block.term.pos(),
        };
        self.check_uses(block.term.uses().iter().enumerate(), state, &at, sink);
    }

    /// The checks of one instruction against the state before it.
    fn check_inst(&self, inst: &chromatic::Inst, state: &State, at: &At, sink: &mut Sink) {
        match &inst.kind {
            InstKind::Op(op) => {
                let uses = op.operands.iter().enumerate();
                self.check_uses(
                    uses.filter_map(|(k, o)| Some((k, o.as_use()?))),
                    state,
                    at,
                    sink,
                );
            }
            InstKind::Remat { dst, value, uses } => {
                let remat = Remat {
                    dst: *dst,
                    value: *value,
                    uses,
                };
                self.check_uses(uses.iter().enumerate(), state, at, sink);
                self.check_remat(&remat, at, sink);
            }
            kind => {
                self.check_class_spill(kind, state, at, sink);
                self.check_moves(kind, state, at, sink);
            }
        }
    }

    /// Each located use (numbered) must hold its value.
    fn check_uses<'u>(
        &self,
        uses: impl Iterator<Item = (usize, &'u chromatic::Use)>,
        state: &State,
        at: &At,
        sink: &mut Sink,
    ) {
        for (k, u) in uses {
            if let Some(loc) = u.loc {
                let at = At { pos: u.pos, ..*at };
                self.check_use(state, loc, u.value, &at, Operand::Use(k), sink);
            }
        }
    }

    /// Simultaneous moves: every source is read before any destination is written. A
    /// source that holds nothing known leaves nothing known in its destination, and so does
    /// a value the destination may not hold ([`Self::bans`]). The sources of a few moves
    /// are read into inline storage, without a heap allocation.
    fn moves<C: Cell>(&self, kind: &InstKind, state: &mut [C]) {
        let mut sources: SmallVec<[C; 16]> = SmallVec::new();
        for (src, dst) in moves_of(kind) {
            sources.extend(self.read(state, src, self.holds_uniform(dst)));
        }
        let mut first = 0;
        for (src, dst) in moves_of(kind) {
            let fits = src.len() == dst.len();
            let bans = self.bans(dst);
            let whole_wave = self.whole_wave(src);
            for (i, u) in units(dst).enumerate() {
                let cell = if fits {
                    sources[first + i].moved(self, bans)
                } else {
                    C::known(Label::UNDEF)
                };
                let wave = if whole_wave {
                    cell
                } else {
                    C::known(Label::PER_LANE)
                };
                self.set(state, u, cell, wave);
            }
            first += usize::from(src.len());
        }
    }

    /// The rules of simultaneous moves on the state before them: each rule over every
    /// move, rule by rule, each reading the sources where they stand.
    fn check_moves(&self, kind: &InstKind, state: &State, at: &At, sink: &mut Sink) {
        self.check_scratch_to_uniform(kind, state, at, sink);
        self.check_pinned_sources(kind, state, at, sink);
        for (k, (src, dst)) in moves_of(kind).enumerate() {
            if src.len() != dst.len() {
                continue;
            }
            let bans = self.bans(dst);
            if let Some((kind, label)) = self
                .read(state, src, self.holds_uniform(dst))
                .find_map(|l| Some((self.banned(bans, l)?, l)))
            {
                self.report(sink, kind, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, dst))
                    .found(self.show(label));
            }
        }
    }

    /// No move may read a pinned value.
    fn check_pinned_sources(&self, kind: &InstKind, state: &State, at: &At, sink: &mut Sink) {
        let pinned = |l: &Label| l.is_value() && self.pinned.get(l.value()) == Some(&true);
        for (k, (src, dst)) in moves_of(kind).enumerate() {
            let mut read = self.read(state, src, self.holds_uniform(dst));
            if let Some(label) = read.find(pinned) {
                self.report(sink, ErrorKind::PinnedMoved, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, src))
                    .found(self.show(label));
            }
        }
    }

    /// The values a move may not put into `dst`: a per-lane value may not enter a uniform
    /// register or lanes, nor a uniform value a per-lane register (lanes masked off at the
    /// move would keep an older instance, which a later move back into a uniform register
    /// could read). Slots follow their own rules (wave and lane slots).
    fn bans(&self, dst: Location) -> Bans {
        let uniform = self.holds_uniform(dst);
        Bans {
            per_lane: uniform,
            uniform: !uniform && dst.is_reg(),
        }
    }

    /// The rule a move of `label` into a destination with `bans` breaks, if any.
    fn banned(&self, bans: Bans, label: Label) -> Option<ErrorKind> {
        if !label.is_value() {
            return None;
        }
        match self.is_uniform_value(label.value()) {
            false if bans.per_lane => Some(ErrorKind::PerLaneInUniform),
            true if bans.uniform => Some(ErrorKind::UniformInPerLane),
            _ => None,
        }
    }

    /// A class spill (or its reload) converts one whole value: its source must hold every
    /// part, in order, of one value of the spilled class whose size is the move's width.
    /// Which class pairs may do so is a local rule (`constraints.rs`).
    fn check_class_spill(&self, kind: &InstKind, state: &State, at: &At, sink: &mut Sink) {
        let (Some(class), InstKind::Spill(m) | InstKind::Reload(m)) =
            (class_spilled(self.target, kind), kind)
        else {
            return;
        };
        if m.src.len() != m.dst.len() {
            return;
        }
        let labels: Vec<Label> = self.read(state, m.src, false).collect();
        if self.is_whole_value_of(&labels, class) {
            return;
        }
        let found: Vec<String> = labels.iter().map(|&l| self.show(l)).collect();
        let expected = format!(
            "a whole {}{} value",
            self.target.class(class).name,
            m.src.len()
        );
        self.report(sink, ErrorKind::ClassSpillMismatch, at)
            .operand("move 0")
            .location(chromatic::print::location(self.target, m.src))
            .expected(expected)
            .found(found.join(", "));
    }

    /// Whether `labels` are the parts `0..n`, in order, of one value of `class` and size `n`.
    fn is_whole_value_of(&self, labels: &[Label], class: ClassId) -> bool {
        let Some(&first) = labels.first().filter(|l| l.is_value()) else {
            return false;
        };
        let v = &self.o.values[first.value()];
        let parts = (0..).map(|i| Label::of(first.value() as u32, i));
        v.class == class
            && usize::from(v.size) == labels.len()
            && labels.iter().zip(parts).all(|(&l, part)| l == part)
    }

    /// Under divergence a uniform register or lane may load from a slot only what a
    /// whole-wave store left in every lane: a wave view not last written per lane.
    fn check_scratch_to_uniform(&self, kind: &InstKind, state: &State, at: &At, sink: &mut Sink) {
        if !self.divergent {
            return;
        }
        for (k, (src, dst)) in moves_of(kind).enumerate() {
            let from_scratch = matches!(src, Location::Slot { .. });
            let per_lane = |u: Unit| {
                self.keys
                    .of(u)
                    .wave
                    .is_none_or(|w| state[w] == Label::PER_LANE)
            };
            if from_scratch && self.holds_uniform(dst) && units(src).any(per_lane) {
                self.report(sink, ErrorKind::UniformFromScratch, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, dst));
            }
        }
    }

    /// A recomputation must recompute its value (its operands are checked as uses).
    fn check_remat(&self, r: &Remat<'_>, at: &At, sink: &mut Sink) {
        if let Some(why) = self.remat_refusal(r, at.block) {
            self.report(sink, ErrorKind::NotRematerialisable, at)
                .operand("remat")
                .location(chromatic::print::location(self.target, r.dst))
                .expected(format!("%{}", self.a.value(r.value).name))
                .note(why);
        }
    }

    /// Why `r` in block `in_block` does not recompute its value, if it does not: the
    /// value's definition may not be recomputed, or `r` reads other values than the
    /// definition's operands, or it is in a block the definition's does not dominate
    /// (`fresh.rs`).
    fn remat_refusal(&self, r: &Remat<'_>, in_block: usize) -> Option<String> {
        let how = self.value_map[r.value.index()].map(|o| (o, &self.recompute[o as usize]));
        let operands_given: Vec<Option<u32>> = r
            .uses
            .iter()
            .map(|u| self.value_map[u.value.index()])
            .collect();
        match how {
            Some((_, Recompute::Anywhere)) if r.uses.is_empty() => None,
            Some((_, Recompute::Anywhere)) => Some("a `remat` operation reads no values".into()),
            Some((
                original,
                Recompute::Pure {
                    block,
                    reads_fixed,
                    operands,
                },
            )) => {
                let expected: Vec<Option<u32>> =
                    operands.iter().map(|v| Some(v.index() as u32)).collect();
                if operands_given != expected {
                    Some("it must read the operands of its definition, in order".into())
                } else if *block == self.a.blocks[in_block].name.as_str() {
                    None
                } else if *reads_fixed {
                    Some(format!(
                        "its pure definition in block `{block}` reads fixed registers, which \
                         hold one value only throughout that block"
                    ))
                } else if self.fresh.dominated(original, in_block) {
                    None
                } else {
                    Some(format!(
                        "its pure definition is in block `{block}`, which does not dominate \
                         this one: an operand may have been defined again since it ran"
                    ))
                }
            }
            Some((_, Recompute::Select { join, selects })) => {
                self.select_refusal(join, selects, &operands_given, in_block)
            }
            _ => Some("its definition is neither a `remat` operation nor a pure operation".into()),
        }
    }

    /// Why a select of a phi of block `join` reading `given` in block `in_block` does not
    /// recompute it, if it does not: it must read the condition of a branch that decides the phi, in
    /// a block `join` dominates (`select.rs`).
    fn select_refusal(
        &self,
        join: &str,
        selects: &[crate::select::Select],
        given: &[Option<u32>],
        in_block: usize,
    ) -> Option<String> {
        let reads_cond = |s: &crate::select::Select| given == [Some(s.cond.index() as u32)];
        let join_block = self.a.blocks.iter().position(|b| b.name == join);
        if !selects.iter().any(reads_cond) {
            Some(
                "a phi of constants is recomputed only by a select reading the condition of \
                 the branch that decides its incoming edge"
                    .into(),
            )
        } else if join_block.is_some_and(|j| self.fresh.dominates(j, in_block)) {
            None
        } else {
            Some(format!(
                "the phi is in block `{join}`, which does not dominate this one: the \
                 condition may have been defined again since the edge was taken"
            ))
        }
    }

    fn holds_uniform(&self, loc: Location) -> bool {
        match loc {
            Location::Reg { class, .. } => self.target.class(class).uniform,
            Location::Lane { .. } => true,
            Location::Slot { .. } => false,
        }
    }

    fn is_uniform_value(&self, o: usize) -> bool {
        self.target.class(self.o.values[o].class).uniform
    }

    /// Every unit of `loc` must hold the matching part of `v`, in order.
    fn check_use(
        &self,
        state: &State,
        loc: Location,
        v: Value,
        at: &At,
        op: Operand,
        s: &mut Sink,
    ) {
        self.check_read(state, (loc, v, false), at, op, s)
    }

    /// [`Self::check_use`] for a reader of `loc` expecting `v`, uniform or not.
    fn check_read(
        &self,
        state: &State,
        (loc, v, uniform): (Location, Value, bool),
        at: &At,
        op: Operand,
        s: &mut Sink,
    ) {
        let Some(bad) = (0..loc.len())
            .zip(self.keys_of(loc, uniform))
            .find(|&(i, k)| Some(state[k]) != self.label(v, i))
        else {
            return;
        };
        let (i, k) = bad;
        let value = self.a.value(v);
        let expected = part_name(&value.name, i, value.size);
        let kind = if state[k].is_value() {
            ErrorKind::WrongValue
        } else {
            ErrorKind::UndefinedValue
        };
        let loc = s.loc(loc);
        let found = if state[k].is_value() {
            self.show(state[k])
        } else {
            self.why_unknown(state[k], self.keys.linear[k])
        };
        self.report(s, kind, at)
            .operand(op.to_string())
            .location(loc)
            .expected(expected)
            .found(found);
    }

    /// After block `b`'s last instruction: each successor's phi locations hold the
    /// argument for every edge leaving `b` (linear edges for uniform keys).
    fn check_edges(&self, b: usize, state: &State, sink: &mut Sink) {
        for &s in &self.cfg.linear_succs[b] {
            let at = At {
                block: b,
                point: Point::Edge(s),
                pos: self.a.blocks[b].term.pos(),
            };
            for phi in &self.a.blocks[s].phis {
                let Some(loc) = phi.def.loc else { continue };
                let uniform = self.target.class(self.a.value(phi.def.value).class).uniform;
                let edges = if uniform {
                    &self.cfg.linear_preds[s]
                } else {
                    &self.cfg.preds[s]
                };
                for e in edges.iter().filter(|e| e.from == b) {
                    let Some(arg) = phi.args.iter().find(|x| x.block.index() == e.phi_pred) else {
                        continue;
                    };
                    let phi_name = &self.a.value(phi.def.value).name;
                    let before = sink.errors.len();
                    let name = Operand::Phi(phi_name);
                    self.check_read(state, (loc, arg.value, uniform), &at, name, sink);
                    if let Some(e) = sink.errors.get_mut(before) {
                        e.note(format!(
                            "`%{phi_name}` of block `{}` takes it from this edge, in its location",
                            self.a.blocks[s].name
                        ));
                    }
                }
            }
        }
    }

    fn report<'s>(
        &self,
        sink: &'s mut Sink,
        kind: ErrorKind,
        at: &At,
    ) -> &'s mut crate::VerifyError {
        sink.report(kind, &self.a.blocks[at.block].name, at.point, at.pos)
    }

    /// A label, short: a value's name, or what stands in for none.
    fn show(&self, l: Label) -> String {
        match l {
            Label::TOP => "nothing (unreachable)".into(),
            Label::UNDEF => "nothing".into(),
            Label::CONFLICT => "different values".into(),
            Label::PER_LANE => "a value written per lane".into(),
            Label::CLOBBERED | Label::SKIPPED => "an overwritten value".into(),
            l => {
                let v = &self.o.values[l.value()];
                part_name(&v.name, (l.0 % PARTS) as u16, v.size)
            }
        }
    }

    /// What is wrong with a location holding the non-value `l`, as the end of a sentence
    /// about it; `linear`: the key follows the linear CFG, which paths then are.
    fn why_unknown(&self, l: Label, linear: bool) -> String {
        let (path, paths) = if linear {
            (
                "path of the linear CFG (the order the wave runs blocks)",
                "paths of the linear CFG (the order the wave runs blocks)",
            )
        } else {
            ("path", "paths")
        };
        match l {
            Label::TOP => "is never reached".into(),
            Label::UNDEF => format!("is not written on every {path} to here"),
            Label::CONFLICT => format!("holds different values on different {paths} to here"),
            Label::PER_LANE => "holds a value written per lane, which lanes may not share".into(),
            Label::CLOBBERED => {
                "was overwritten through its register or one of its lanes (they share storage)"
                    .into()
            }
            Label::SKIPPED => "was overwritten by a whole-wave store or a lane write while \
                these lanes waited for a side of a divergent branch"
                .into(),
            l => format!("holds `{}`", self.show(l)),
        }
    }
}

/// `%x` for a one-unit value, `%x[1]` for part 1 of a tuple.
fn part_name(name: &str, part: u16, size: u16) -> String {
    if size == 1 {
        format!("%{name}")
    } else {
        format!("%{name}[{part}]")
    }
}

/// Where the transfer function is, for reports.
#[derive(Clone, Copy)]
struct At {
    block: usize,
    point: Point,
    pos: Pos,
}
