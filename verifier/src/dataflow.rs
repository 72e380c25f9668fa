//! The forward dataflow over location units (see the crate documentation for the lattice).
//!
//! State: one [`Label`] per unit the function names (register units, memory slots, lanes
//! of registers), dense by key. Keys of uniform registers, of lanes and of wave slots
//! follow the linear CFG; keys of per-lane registers and lane slots follow the logical CFG.
//! The in-state of a block is, per key, the meet over that key's predecessor edges, after
//! renaming on each edge the phi argument found at a phi's location to the phi itself. A
//! worklist in reverse postorder iterates to the fixpoint silently; a last pass over every
//! reachable block reports errors against the stable in-states.

use crate::cfg::{Cfg, Edge};
use crate::constraints::class_spilled;
use crate::error::{ErrorKind, Point};
use crate::sink::Sink;
use crate::unit::{units, Unit};
use chromatic::{ClassId, Function, InstKind, Location, Op, Phi, Pos, Target, Value};
use std::collections::{BTreeSet, HashMap, HashSet};

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
    /// A wave slot last written per lane: what it holds may differ between lanes.
    const PER_LANE: Label = Label(u32::MAX - 3);

    fn of(value: u32, part: u16) -> Label {
        Label(value * PARTS + u32::from(part))
    }

    fn is_value(self) -> bool {
        self.0 < u32::MAX - 3
    }

    fn value(self) -> usize {
        (self.0 / PARTS) as usize
    }

    fn meet(self, other: Label) -> Label {
        match (self, other) {
            (Label::TOP, x) | (x, Label::TOP) => x,
            (x, y) if x == y => x,
            (Label::UNDEF, _) | (_, Label::UNDEF) => Label::UNDEF,
            (Label::PER_LANE, _) | (_, Label::PER_LANE) => Label::PER_LANE,
            _ => Label::CONFLICT,
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
    /// Per original value: whether its definition is rematerialisable.
    pub remat_ok: &'a [bool],
    keys: HashMap<Unit, usize>,
    linear: Vec<bool>,
    /// Per key: whether it is a wave slot.
    wave_slot: Vec<bool>,
    /// Whether some branch of the function is divergent.
    divergent: bool,
    /// Per original value: whether it is pinned (no move may read it).
    pinned: &'a [bool],
}

type State = Vec<Label>;

impl<'a> Flow<'a> {
    pub fn new(
        a: &'a Function,
        o: &'a Function,
        target: &'a Target,
        cfg: &'a Cfg,
        value_map: &'a [Option<u32>],
        remat_ok: &'a [bool],
    ) -> Flow<'a> {
        let mut flow = Flow {
            a,
            o,
            target,
            cfg,
            value_map,
            remat_ok,
            keys: HashMap::new(),
            linear: Vec::new(),
            wave_slot: Vec::new(),
            divergent: a.blocks.iter().any(|b| b.term.is_divergent()),
            pinned: &[],
        };
        let wave_slots = flow.wave_slots();
        for loc in all_locations(a) {
            for u in units(loc) {
                if !flow.keys.contains_key(&u) {
                    let wave = wave_slots.contains(&u);
                    flow.keys.insert(u, flow.linear.len());
                    flow.linear.push(u.is_uniform(target) || wave);
                    flow.wave_slot.push(wave);
                }
            }
        }
        flow
    }

    /// Which original values are pinned.
    pub fn with_pinned(mut self, pinned: &'a [bool]) -> Flow<'a> {
        self.pinned = pinned;
        self
    }

    /// The slot units some move writes in every lane.
    fn wave_slots(&self) -> HashSet<Unit> {
        let mut out = HashSet::new();
        for inst in self.a.blocks.iter().flat_map(|b| &b.insts) {
            for (src, dst) in moves_of(&inst.kind) {
                if matches!(dst, Location::Slot { .. }) && self.whole_wave(src) {
                    out.extend(units(dst));
                }
            }
        }
        out
    }

    /// Whether a move from `src` into a slot writes every lane: `src` is a uniform register
    /// (a whole-wave store, `docs/FORMAT.md`), or no branch is divergent, so the exec mask
    /// stays full.
    fn whole_wave(&self, src: Location) -> bool {
        !self.divergent || (src.is_reg() && self.holds_uniform(src))
    }

    /// Iterates to the fixpoint, then reports every error.
    pub fn run(&self, sink: &mut Sink) {
        let n = self.a.blocks.len();
        let mut outs: Vec<Option<State>> = vec![None; n];
        let mut order = vec![usize::MAX; n];
        for (i, &b) in self.cfg.rpo.iter().enumerate() {
            order[b] = i;
        }
        let mut work: BTreeSet<usize> = (0..self.cfg.rpo.len()).collect();
        while let Some(i) = work.pop_first() {
            let b = self.cfg.rpo[i];
            let mut state = self.in_state(b, &outs);
            self.block(b, &mut state, None);
            if outs[b].as_ref() != Some(&state) {
                outs[b] = Some(state);
                work.extend(self.cfg.linear_succs[b].iter().map(|&s| order[s]));
            }
        }
        for &b in &self.cfg.rpo {
            let mut state = self.in_state(b, &outs);
            self.block(b, &mut state, Some(sink));
            self.check_edges(b, &state, sink);
        }
    }

    fn in_state(&self, b: usize, outs: &[Option<State>]) -> State {
        let keys = self.linear.len();
        if b == 0 {
            return vec![Label::UNDEF; keys];
        }
        let logical = self.meet_over(b, &self.cfg.preds[b], outs);
        let linear = self.meet_over(b, &self.cfg.linear_preds[b], outs);
        (0..keys)
            .map(|k| {
                if self.linear[k] {
                    linear[k]
                } else {
                    logical[k]
                }
            })
            .collect()
    }

    fn meet_over(&self, b: usize, edges: &[Edge], outs: &[Option<State>]) -> State {
        let mut acc = vec![Label::TOP; self.linear.len()];
        for e in edges {
            let Some(out) = &outs[e.from] else { continue };
            let mut incoming = out.clone();
            self.rename_phis(b, e.phi_pred, &mut incoming);
            for (x, y) in acc.iter_mut().zip(incoming) {
                *x = x.meet(y);
            }
        }
        acc
    }

    /// On the edge from `pred` into `b`: a phi's location holding the argument for `pred`
    /// now holds the phi; holding anything else, it holds nothing known.
    fn rename_phis(&self, b: usize, pred: usize, state: &mut State) {
        for phi in &self.a.blocks[b].phis {
            let (Some(loc), Some(phi_label)) = (phi.def.loc, self.value_map[phi.def.value.index()])
            else {
                continue;
            };
            let arg = self.phi_arg(phi, pred);
            for (i, u) in units(loc).enumerate() {
                let k = self.keys[&u];
                let holds_arg = arg.is_some_and(|v| state[k] == Label::of(v, i as u16));
                state[k] = if holds_arg {
                    Label::of(phi_label, i as u16)
                } else {
                    Label::UNDEF
                };
            }
        }
    }

    fn phi_arg(&self, phi: &Phi, pred: usize) -> Option<u32> {
        let arg = phi.args.iter().find(|a| a.block.index() == pred)?;
        self.value_map[arg.value.index()]
    }

    fn label(&self, v: Value, part: u16) -> Option<Label> {
        self.value_map[v.index()].map(|o| Label::of(o, part))
    }

    fn keys_of(&self, loc: Location) -> impl Iterator<Item = usize> + '_ {
        units(loc).map(|u| self.keys[&u])
    }

    fn read(&self, state: &State, loc: Location) -> Vec<Label> {
        self.keys_of(loc).map(|k| state[k]).collect()
    }

    fn write_value(&self, state: &mut State, loc: Location, v: Value) {
        for (i, k) in self.keys_of(loc).enumerate() {
            state[k] = self.label(v, i as u16).unwrap_or(Label::UNDEF);
        }
    }

    /// Runs block `b` on `state`, reporting into `sink` when given.
    fn block(&self, b: usize, state: &mut State, mut sink: Option<&mut Sink>) {
        let block = &self.a.blocks[b];
        for phi in &block.phis {
            if let Some(loc) = phi.def.loc {
                self.write_value(state, loc, phi.def.value);
            }
        }
        for (i, inst) in block.insts.iter().enumerate() {
            let at = At {
                block: b,
                point: Point::Inst(i),
                pos: inst.pos,
            };
            match &inst.kind {
                InstKind::Op(op) => self.op(op, state, &at, sink.as_deref_mut()),
                InstKind::Remat { dst, value } => {
                    self.remat(*dst, *value, state, &at, sink.as_deref_mut())
                }
                kind => {
                    if let Some(sink) = sink.as_deref_mut() {
                        self.check_class_spill(kind, state, &at, sink);
                    }
                    self.moves(&moves_of(kind), state, &at, sink.as_deref_mut())
                }
            }
        }
        let at = At {
            block: b,
            point: Point::Term,
            pos: block.term.pos(),
        };
        for (k, u) in block.term.uses().iter().enumerate() {
            if let (Some(loc), Some(sink)) = (u.loc, sink.as_deref_mut()) {
                let at = At { pos: u.pos, ..at };
                self.check_use(state, loc, u.value, &at, &format!("use {k}"), sink);
            }
        }
    }

    fn op(&self, op: &Op, state: &mut State, at: &At, sink: Option<&mut Sink>) {
        if let Some(sink) = sink {
            for (k, operand) in op.operands.iter().enumerate() {
                if let Some((u, loc)) = operand.as_use().and_then(|u| Some((u, u.loc?))) {
                    let at = At { pos: u.pos, ..*at };
                    self.check_use(state, loc, u.value, &at, &format!("use {k}"), sink);
                }
            }
        }
        for d in &op.defs {
            if let Some(loc) = d.loc {
                self.write_value(state, loc, d.value);
            }
        }
    }

    /// Simultaneous moves: every source is read before any destination is written. A
    /// source that holds nothing known leaves nothing known in its destination.
    fn moves(
        &self,
        pairs: &[(Location, Location)],
        state: &mut State,
        at: &At,
        mut sink: Option<&mut Sink>,
    ) {
        let sources: Vec<Vec<Label>> = pairs.iter().map(|(s, _)| self.read(state, *s)).collect();
        if let Some(sink) = sink.as_deref_mut() {
            self.check_scratch_to_uniform(pairs, state, at, sink);
            self.check_pinned_sources(pairs, &sources, at, sink);
        }
        for (k, ((src, dst), labels)) in pairs.iter().zip(sources).enumerate() {
            let labels = if labels.len() == usize::from(dst.len()) {
                labels
            } else {
                vec![Label::UNDEF; usize::from(dst.len())]
            };
            let misplaced = labels
                .iter()
                .find_map(|&l| Some((self.misplaced(*dst, l)?, l)));
            if let (Some((kind, label)), Some(sink)) = (misplaced, sink.as_deref_mut()) {
                self.report(sink, kind, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, *dst))
                    .found(self.show(label));
            }
            let whole_wave = self.whole_wave(*src);
            for (key, label) in self.keys_of(*dst).zip(labels) {
                state[key] = if self.wave_slot[key] && !whole_wave {
                    Label::PER_LANE
                } else if self.misplaced(*dst, label).is_some() {
                    Label::UNDEF
                } else {
                    label
                };
            }
        }
    }

    /// No move may read a pinned value.
    fn check_pinned_sources(
        &self,
        pairs: &[(Location, Location)],
        sources: &[Vec<Label>],
        at: &At,
        sink: &mut Sink,
    ) {
        for (k, ((src, _), labels)) in pairs.iter().zip(sources).enumerate() {
            let pinned = |l: &&Label| l.is_value() && self.pinned.get(l.value()) == Some(&true);
            if let Some(&label) = labels.iter().find(pinned) {
                self.report(sink, ErrorKind::PinnedMoved, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, *src))
                    .found(self.show(label));
            }
        }
    }

    /// The rule a move of `label` into `dst` breaks, if any: a per-lane value may not enter
    /// a uniform register or lanes, nor a uniform value a per-lane register (lanes masked
    /// off at the move would keep an older instance, which a later move back into a
    /// uniform register could read). Slots follow their own rules (wave and lane slots).
    fn misplaced(&self, dst: Location, label: Label) -> Option<ErrorKind> {
        if !label.is_value() {
            return None;
        }
        match (
            self.is_uniform_value(label.value()),
            self.holds_uniform(dst),
        ) {
            (false, true) => Some(ErrorKind::PerLaneInUniform),
            (true, false) if dst.is_reg() => Some(ErrorKind::UniformInPerLane),
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
        let labels = self.read(state, m.src);
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
    /// whole-wave store left in every lane: a wave slot not last written per lane.
    fn check_scratch_to_uniform(
        &self,
        pairs: &[(Location, Location)],
        state: &State,
        at: &At,
        sink: &mut Sink,
    ) {
        if !self.divergent {
            return;
        }
        for (k, (src, dst)) in pairs.iter().enumerate() {
            let from_scratch = matches!(src, Location::Slot { .. });
            let per_lane = |key: usize| !self.wave_slot[key] || state[key] == Label::PER_LANE;
            if from_scratch && self.holds_uniform(*dst) && self.keys_of(*src).any(per_lane) {
                self.report(sink, ErrorKind::UniformFromScratch, at)
                    .operand(format!("move {k}"))
                    .location(chromatic::print::location(self.target, *dst));
            }
        }
    }

    fn remat(&self, dst: Location, v: Value, state: &mut State, at: &At, sink: Option<&mut Sink>) {
        let ok = self.value_map[v.index()].is_some_and(|o| self.remat_ok[o as usize]);
        if ok {
            self.write_value(state, dst, v);
            return;
        }
        for k in self.keys_of(dst) {
            state[k] = Label::UNDEF;
        }
        if let Some(sink) = sink {
            self.report(sink, ErrorKind::NotRematerialisable, at)
                .operand("remat")
                .location(chromatic::print::location(self.target, dst))
                .expected(format!("%{}", self.a.value(v).name));
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
    fn check_use(&self, state: &State, loc: Location, v: Value, at: &At, op: &str, s: &mut Sink) {
        let Some(bad) = (0..loc.len())
            .zip(self.keys_of(loc))
            .find(|&(i, k)| Some(state[k]) != self.label(v, i))
        else {
            return;
        };
        let (i, k) = bad;
        self.report_mismatch(
            s,
            at,
            op,
            loc,
            format!("%{}[{i}]", self.a.value(v).name),
            state[k],
        );
    }

    fn report_mismatch(
        &self,
        s: &mut Sink,
        at: &At,
        op: &str,
        loc: Location,
        exp: String,
        found: Label,
    ) {
        let kind = if found.is_value() {
            ErrorKind::WrongValue
        } else {
            ErrorKind::UndefinedValue
        };
        let loc = s.loc(loc);
        self.report(s, kind, at)
            .operand(op)
            .location(loc)
            .expected(exp)
            .found(self.show(found));
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
                let edges = match self.keys_of(loc).next() {
                    Some(k) if self.linear[k] => &self.cfg.linear_preds[s],
                    _ => &self.cfg.preds[s],
                };
                for e in edges.iter().filter(|e| e.from == b) {
                    let Some(arg) = phi.args.iter().find(|x| x.block.index() == e.phi_pred) else {
                        continue;
                    };
                    let op = format!("phi %{}", self.a.value(phi.def.value).name);
                    self.check_use(state, loc, arg.value, &at, &op, sink);
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

    fn show(&self, l: Label) -> String {
        match l {
            Label::TOP => "unreachable".into(),
            Label::UNDEF => "undefined".into(),
            Label::CONFLICT => "conflict".into(),
            Label::PER_LANE => "written per lane".into(),
            l => format!("%{}[{}]", self.o.values[l.value()].name, l.0 % PARTS),
        }
    }
}

/// Where the transfer function is, for reports.
#[derive(Clone, Copy)]
struct At {
    block: usize,
    point: Point,
    pos: Pos,
}

/// The (source, destination) pairs of an artefact's moves.
fn moves_of(kind: &InstKind) -> Vec<(Location, Location)> {
    match kind {
        InstKind::ParallelCopy(moves) => moves.iter().map(|m| (m.src, m.dst)).collect(),
        InstKind::Swap(x, y) => vec![(*x, *y), (*y, *x)],
        InstKind::Spill(m) | InstKind::Reload(m) => vec![(m.src, m.dst)],
        InstKind::Op(_) | InstKind::Remat { .. } => Vec::new(),
    }
}

/// Every location the allocated function names.
fn all_locations(f: &Function) -> Vec<Location> {
    let mut locs = Vec::new();
    for b in &f.blocks {
        locs.extend(b.phis.iter().filter_map(|p| p.def.loc));
        for inst in &b.insts {
            match &inst.kind {
                InstKind::Op(op) => {
                    locs.extend(op.defs.iter().filter_map(|d| d.loc));
                    locs.extend(op.uses().filter_map(|u| u.loc));
                }
                kind => locs.extend(crate::constraints::artefact_locations(kind)),
            }
        }
        locs.extend(b.term.uses().iter().filter_map(|u| u.loc));
    }
    locs
}
