//! A reference interpreter: an executable SIMT semantics shared by original and allocated
//! programs, so that two programs can be compared by their traces.
//!
//! A wave of W lanes (default 4) runs under an exec mask. Every op is an uninterpreted
//! function: the token of part p of def d is `hash(op id, inputs, d, p)`, where the op id
//! is (block name, the op's opcode, value names and immediates, and how many equal ops
//! came before it in the block) — the same wherever a scheduler puts it — and the inputs are the operand
//! tokens of one lane (per-lane defs, lane index mixed in) or of all active lanes (uniform
//! defs). Locations never written hold a distinct undefined token. Uniform registers and
//! lanes of registers (`v7.l5`) are written whatever the exec mask; per-lane registers and
//! scratch slots only in active lanes, except that a move from a uniform register into a
//! slot writes every lane (whole-wave, `docs/FORMAT.md`). An original program reads and
//! writes SSA values (uniform values for every lane); an allocated program reads and writes
//! locations, runs its artefacts, and takes phis as already in place.
//!
//! Branches: the outcome is `hash(seed, condition token, visit count of the block)`, once
//! per wave for a uniform branch, per lane for a divergent one. A divergent branch runs the
//! then-lanes from T until the join (the immediate post-dominator, computed on each
//! program's own CFG), then the else-lanes from E until the join, then the union from the
//! join (an arm that is the join just waits); a walk that reaches no join runs to the
//! returns. A budget of traced events ends loops. The trace is the sequence of (op id, exec
//! mask, input tokens of the active lanes), with branches and returns as ops; two programs
//! agree iff these are equal up to the order of the ops between two branches or returns
//! (a block reordered within its dependences; the verifier checks the order itself). Beside it the trace records where each event ran (block and
//! instruction, for `chromatic run --trace` and `--against`) and the blocks in the order
//! the wave ran them (against which `tests/linear_cfg.rs` checks the linear CFG).
//!
//! Selects: an allocated program run against its original ([`run_allocation`]) may
//! recompute a phi of constants by a `remat` reading a branch condition (`select.rs`).
//! The interpreter keeps, per lane, the outcome of the last branch it decided on each
//! condition token; the select writes, per lane, the constant of the side that outcome
//! took (the constant's operation run again), and an undefined token in a lane whose
//! operand no branch decided on.

use crate::cfg::Cfg;
use crate::unit::{units, Unit};
use chromatic::{BranchKind, Function, InstKind, Location, Operand, Target, Terminator, Use};
use rustc_hash::FxHashMap;

/// How to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Lanes in the wave, 1 to 64.
    pub lanes: u32,
    /// Seed of the branch outcomes.
    pub seed: u64,
    /// Traced events after which the run stops.
    pub max_events: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lanes: 4,
            seed: 0,
            max_events: 10_000,
        }
    }
}

/// One executed op, branch or return.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// Hash of (block name, the op's signature and occurrence); the terminator has one
    /// of its own.
    pub op: u64,
    pub mask: u64,
    /// Operand tokens, lane after lane (active lanes only).
    pub inputs: Vec<u64>,
}

/// Where an event ran: a block and one of its instructions (`None`: the terminator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Site {
    pub block: usize,
    pub inst: Option<usize>,
}

/// What a run did. Two traces are equal when the same events ran (`events`, `halted`);
/// where they ran (`sites`, `path`) differs between a program and its allocation, whose
/// instructions and blocks are numbered differently.
#[derive(Clone, Debug)]
pub struct Trace {
    pub events: Vec<Event>,
    /// Whether the event budget ended the run.
    pub halted: bool,
    /// Per event, where it ran.
    pub sites: Vec<Site>,
    /// The blocks in the order the wave ran them.
    pub path: Vec<usize>,
}

impl PartialEq for Trace {
    fn eq(&self, other: &Trace) -> bool {
        self.canonical() == other.canonical() && self.halted == other.halted
    }
}

impl Eq for Trace {}

impl Trace {
    pub fn digest(&self) -> u64 {
        let mut h = mix(0, self.events.len() as u64);
        for e in self.canonical() {
            h = mix(mix(mix(h, e.op), e.mask), fold(0, &e.inputs));
        }
        mix(h, u64::from(self.halted))
    }

    /// The events with each run of ops between two branches or returns sorted: ops a
    /// scheduler may reorder within a block are compared as a set, each with its inputs.
    /// A run the event budget cut short is left out: in two orders of its block the cut
    /// keeps different ops of it.
    fn canonical(&self) -> Vec<&Event> {
        let mut out: Vec<&Event> = Vec::with_capacity(self.events.len());
        let mut start = 0;
        for (i, (e, site)) in self.events.iter().zip(&self.sites).enumerate() {
            if site.inst.is_none() {
                out[start..].sort_by(|x, y| event_order(x, y));
                out.push(e);
                start = out.len();
            } else {
                out.push(e);
            }
            debug_assert_eq!(out.len(), i + 1);
        }
        if self.halted {
            out.truncate(start);
        } else {
            out[start..].sort_by(|x, y| event_order(x, y));
        }
        out
    }

    /// The index of the first event where two traces differ (`None` when equal): within
    /// the first run of ops that differs as a set, the first event that differs in place.
    pub fn first_divergence(&self, other: &Trace) -> Option<usize> {
        let (a, b) = (self.canonical(), other.canonical());
        let common = a.len().min(b.len());
        let first = (0..common).find(|&i| a[i] != b[i]);
        let run_start = |i: usize| {
            (0..i)
                .rev()
                .find(|&k| self.sites[k].inst.is_none())
                .map_or(0, |k| k + 1)
        };
        match first {
            Some(i) => {
                let start = run_start(i);
                (start..common)
                    .find(|&k| self.events[k] != other.events[k])
                    .or(Some(i))
            }
            None => (self != other).then_some(common),
        }
    }
}

/// Runs `f` (original or allocated: allocated when it carries locations).
pub fn run(f: &Function, target: &Target, config: &Config) -> Trace {
    run_machine(Machine::new(f, target, config))
}

/// Runs the allocation `allocated` of `original`, whose phis of constants its `remat`s may
/// recompute as selects on the branch conditions that decide them (`select.rs`).
pub fn run_allocation(
    allocated: &Function,
    original: &Function,
    target: &Target,
    config: &Config,
) -> Trace {
    let mut m = Machine::new(allocated, target, config);
    m.selects = selects_by_name(original, target);
    run_machine(m)
}

/// Per phi name, its selects as (condition, then-side constant, else-side constant) names.
fn selects_by_name(o: &Function, target: &Target) -> FxHashMap<String, Vec<[String; 3]>> {
    let name = |v: chromatic::Value| o.value(v).name.to_string();
    crate::select::selects(o, target)
        .into_iter()
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(v, s)| {
            let arms = s
                .iter()
                .map(|s| [name(s.cond), name(s.then_value), name(s.else_value)])
                .collect();
            (o.values[v].name.to_string(), arms)
        })
        .collect()
}

fn run_machine(mut m: Machine<'_>) -> Trace {
    m.region(0, m.full_mask(), None);
    Trace {
        events: m.events,
        halted: m.halted,
        sites: m.sites,
        path: m.path,
    }
}

/// splitmix64's finaliser applied to `h ^ x`.
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    let mut z = (h ^ x).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fold(h: u64, xs: &[u64]) -> u64 {
    xs.iter().fold(mix(h, xs.len() as u64), |h, &x| mix(h, x))
}

fn event_order(x: &Event, y: &Event) -> std::cmp::Ordering {
    (x.op, x.mask, &x.inputs).cmp(&(y.op, y.mask, &y.inputs))
}

/// What identifies an op within its block whatever its place: its opcode, the names of the
/// values it defines and reads, and its immediates.
fn op_signature(f: &Function, op: &chromatic::Op) -> u64 {
    let mut h = name_hash(&op.opcode);
    for d in &op.defs {
        h = mix(h, name_hash(&f.value(d.value).name));
    }
    for operand in &op.operands {
        h = match operand {
            Operand::Value(u) => mix(h, name_hash(&f.value(u.value).name)),
            Operand::Imm(x) => mix(mix(h, 1), x.get() as u64),
        };
    }
    h
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0x51AB_E11D, |h, b| mix(h, u64::from(b)))
}

const UNDEF_VALUE: u64 = 0xDEAD_0001;
const UNDEF_UNIT: u64 = 0xDEAD_0002;
const STORE_LANES: usize = 64;

struct Machine<'a> {
    f: &'a Function,
    target: &'a Target,
    /// Per block, its immediate post-dominator: where the lanes of a branch reconverge.
    ipdom: Vec<Option<usize>>,
    config: Config,
    allocated: bool,
    /// Original mode: per value, `size × lanes` tokens (part-major).
    env: Vec<Vec<u64>>,
    /// Allocated mode: per register or slot unit, one token per lane.
    store: FxHashMap<Unit, Vec<u64>>,
    /// Per lane, the block it ran last (phi selection).
    last: Vec<usize>,
    visits: Vec<u64>,
    /// Per block: hash of its name, and the id of each instruction's op (artefacts: none).
    op_ids: Vec<Vec<Option<u64>>>,
    term_ids: Vec<u64>,
    /// Value → (op id, def index, block, instruction) of its defining op (for remat).
    defined_by: FxHashMap<usize, (u64, usize, usize, usize)>,
    /// Phi name → its selects as (condition, then-constant, else-constant) names.
    selects: FxHashMap<String, Vec<[String; 3]>>,
    /// Per lane: condition token → whether the last branch decided on it took the
    /// then-side.
    decided: Vec<FxHashMap<u64, bool>>,
    events: Vec<Event>,
    sites: Vec<Site>,
    path: Vec<usize>,
    halted: bool,
}

impl<'a> Machine<'a> {
    fn new(f: &'a Function, target: &'a Target, config: &Config) -> Machine<'a> {
        let lanes = config.lanes.clamp(1, 64) as usize;
        let mut op_ids = Vec::new();
        let mut term_ids = Vec::new();
        let mut defined_by = FxHashMap::default();
        for (bi, b) in f.blocks.iter().enumerate() {
            let base = name_hash(&b.name);
            let mut seen: FxHashMap<u64, u64> = FxHashMap::default();
            let mut ids = Vec::new();
            for (ii, inst) in b.insts.iter().enumerate() {
                ids.push(inst.op().map(|op| {
                    let signature = op_signature(f, op);
                    let occurrence = seen.entry(signature).or_insert(0);
                    let id = mix(mix(base, signature), *occurrence);
                    *occurrence += 1;
                    for (d, def) in op.defs.iter().enumerate() {
                        defined_by.insert(def.value.index(), (id, d, bi, ii));
                    }
                    id
                }));
            }
            op_ids.push(ids);
            term_ids.push(mix(base, u64::MAX));
        }
        Machine {
            f,
            target,
            ipdom: Cfg::new(f).post_dominators(),
            config: Config {
                lanes: lanes as u32,
                ..*config
            },
            allocated: f.is_allocated() && !f.values.is_empty(),
            env: f
                .values
                .iter()
                .enumerate()
                .map(|(v, d)| vec![mix(UNDEF_VALUE, v as u64); usize::from(d.size) * lanes])
                .collect(),
            store: FxHashMap::default(),
            last: vec![usize::MAX; lanes],
            visits: vec![0; f.blocks.len()],
            op_ids,
            term_ids,
            defined_by,
            selects: FxHashMap::default(),
            decided: vec![FxHashMap::default(); lanes],
            events: Vec::new(),
            sites: Vec::new(),
            path: Vec::new(),
            halted: false,
        }
    }

    fn lanes(&self) -> usize {
        self.config.lanes as usize
    }

    fn full_mask(&self) -> u64 {
        u64::MAX >> (64 - self.lanes())
    }

    fn active(&self, mask: u64) -> impl Iterator<Item = usize> {
        (0..self.lanes()).filter(move |l| mask >> l & 1 == 1)
    }

    fn first_active(&self, mask: u64) -> usize {
        mask.trailing_zeros() as usize
    }

    fn is_uniform_value(&self, v: chromatic::Value) -> bool {
        self.target.class(self.f.value(v).class).uniform
    }

    fn record(&mut self, site: Site, op: u64, mask: u64, inputs: Vec<u64>) {
        self.events.push(Event { op, mask, inputs });
        self.sites.push(site);
        if self.events.len() >= self.config.max_events {
            self.halted = true;
        }
    }

    /// Runs from `start` with `mask` until `stop`; returns the lanes that reached it.
    fn region(&mut self, start: usize, mask: u64, stop: Option<usize>) -> u64 {
        let (mut b, mut mask, mut arrived) = (start, mask, 0u64);
        loop {
            if Some(b) == stop {
                return arrived | mask;
            }
            if mask == 0 || self.halted {
                return arrived;
            }
            self.block(b, mask);
            if self.halted {
                return arrived;
            }
            let term = &self.f.blocks[b].term;
            match *term {
                Terminator::Jump { target, .. } => b = target.index(),
                Terminator::Ret { ref uses, .. } => {
                    let inputs = self.lane_inputs(uses.iter(), mask);
                    self.record(terminator(b), self.term_ids[b], mask, inputs);
                    return arrived;
                }
                Terminator::Branch {
                    kind,
                    ref cond,
                    then_block,
                    else_block,
                    ..
                } => {
                    let taken = self.decide(b, kind, cond, mask);
                    let (t, e) = (then_block.index(), else_block.index());
                    let (mt, me) = (mask & taken, mask & !taken);
                    let join = self.ipdom[b];
                    if join.is_some() && join == stop {
                        if Some(e) == join {
                            (arrived, b, mask) = (arrived | me, t, mt);
                        } else {
                            arrived |= self.arm(t, mt, join);
                            (b, mask) = (e, me);
                        }
                        continue;
                    }
                    mask = self.arm(t, mt, join) | self.arm(e, me, join);
                    match join {
                        Some(j) => b = j,
                        None => return arrived,
                    }
                }
            }
        }
    }

    fn arm(&mut self, start: usize, mask: u64, join: Option<usize>) -> u64 {
        if mask == 0 {
            0
        } else if Some(start) == join {
            mask
        } else {
            self.region(start, mask, join)
        }
    }

    /// The lanes that take the then-side; records the branch.
    fn decide(&mut self, b: usize, kind: BranchKind, cond: &Use, mask: u64) -> u64 {
        let inputs = self.lane_inputs(std::iter::once(cond), mask);
        let visit = self.visits[b];
        let seed = self.config.seed;
        let per_lane = inputs.len() / mask.count_ones().max(1) as usize;
        let mut taken = 0u64;
        for (i, l) in self.active(mask).enumerate() {
            let token = fold(0, &inputs[i * per_lane..(i + 1) * per_lane]);
            let outcome = match kind {
                BranchKind::Uniform => {
                    let first = fold(0, &inputs[..per_lane]);
                    mix(mix(seed, first), visit)
                }
                BranchKind::Divergent => mix(mix(mix(seed, token), l as u64), visit),
            };
            taken |= (outcome & 1) << l;
            self.decided[l].insert(token, outcome & 1 == 1);
        }
        self.record(terminator(b), self.term_ids[b], mask, inputs);
        taken
    }

    fn block(&mut self, b: usize, mask: u64) {
        self.visits[b] += 1;
        self.path.push(b);
        if self.path.len() > 16 * self.config.max_events {
            self.halted = true;
            return;
        }
        if !self.allocated {
            self.phis(b, mask);
        }
        for l in self.active(mask).collect::<Vec<_>>() {
            self.last[l] = b;
        }
        for i in 0..self.f.blocks[b].insts.len() {
            if self.halted {
                return;
            }
            self.inst(b, i, mask);
        }
    }

    /// Original mode: every phi of `b` takes, per lane, the argument of the lane's
    /// previous block; all phis read before any is written.
    fn phis(&mut self, b: usize, mask: u64) {
        let block = &self.f.blocks[b];
        let mut writes = Vec::new();
        for phi in &block.phis {
            let v = phi.def.value;
            let size = usize::from(self.f.value(v).size);
            for l in self.active(mask) {
                let arg = phi.args.iter().find(|a| a.block.index() == self.last[l]);
                for p in 0..size {
                    let token =
                        arg.map_or(mix(UNDEF_VALUE, 1), |a| self.value_token(a.value, p, l));
                    writes.push((v, p, l, token));
                }
            }
        }
        let first = self.first_active(mask);
        for (v, p, l, token) in writes {
            if self.is_uniform_value(v) {
                if l == first {
                    self.write_value_all(v, p, token);
                }
            } else {
                self.write_value_lane(v, p, l, token);
            }
        }
    }

    fn value_token(&self, v: chromatic::Value, part: usize, lane: usize) -> u64 {
        self.env[v.index()][part * self.lanes() + lane]
    }

    fn write_value_lane(&mut self, v: chromatic::Value, part: usize, lane: usize, token: u64) {
        let lanes = self.lanes();
        self.env[v.index()][part * lanes + lane] = token;
    }

    fn write_value_all(&mut self, v: chromatic::Value, part: usize, token: u64) {
        let lanes = self.lanes();
        self.env[v.index()][part * lanes..(part + 1) * lanes].fill(token);
    }

    fn inst(&mut self, b: usize, i: usize, mask: u64) {
        let kind = &self.f.blocks[b].insts[i].kind;
        match kind {
            InstKind::Op(op) => {
                let id = self.op_ids[b][i].unwrap_or_default();
                let inputs = self.op_inputs(&op.operands, mask);
                let site = Site {
                    block: b,
                    inst: Some(i),
                };
                self.record(site, id, mask, inputs.concat());
                for (d, def) in op.defs.iter().enumerate() {
                    self.define(id, d, def.value, def.loc, &inputs, mask);
                }
            }
            InstKind::ParallelCopy(moves) => {
                let pairs: Vec<_> = moves.iter().map(|m| (m.src, m.dst)).collect();
                self.moves(&pairs, mask);
            }
            InstKind::Swap(x, y) => self.moves(&[(*x, *y), (*y, *x)], mask),
            InstKind::Spill(m) | InstKind::Reload(m) => self.moves(&[(m.src, m.dst)], mask),
            InstKind::Remat { dst, value, uses } => self.remat(*dst, *value, uses, mask),
        }
    }

    /// Recomputes `value` by its defining op into `dst`, the op's value operands read from
    /// `uses` in order (none for a `remat` op), its immediates kept.
    fn remat(&mut self, dst: Location, value: chromatic::Value, uses: &[Use], mask: u64) {
        let Some(&(id, d, b, i)) = self.defined_by.get(&value.index()) else {
            return self.select(dst, value, uses, mask);
        };
        let mut given = uses.iter();
        let operands: Vec<Operand> = self.f.blocks[b].insts[i]
            .op()
            .map_or(&[][..], |op| &op.operands)
            .iter()
            .filter_map(|o| match o {
                Operand::Imm(_) => Some(*o),
                Operand::Value(_) => given.next().map(|u| Operand::Value(*u)),
            })
            .collect();
        let inputs = self.op_inputs(&operands, mask);
        self.define(id, d, value, Some(dst), &inputs, mask);
    }

    /// A select recomputing phi `value` into `dst`: per lane, the constant of the side the
    /// last branch on the operand's token took; undefined where none decided on it.
    fn select(&mut self, dst: Location, value: chromatic::Value, uses: &[Use], mask: u64) {
        let (mut then_lanes, mut else_lanes) = (0u64, 0u64);
        let arms = match uses {
            [u] => self.select_arms(value, u),
            _ => None,
        };
        if let (Some(_), [u]) = (&arms, uses) {
            for l in self.active(mask).collect::<Vec<_>>() {
                let mut tokens = Vec::new();
                self.use_tokens(u, l, &mut tokens);
                match self.decided[l].get(&fold(0, &tokens)) {
                    Some(true) => then_lanes |= 1 << l,
                    Some(false) => else_lanes |= 1 << l,
                    None => {}
                }
            }
        }
        for l in self
            .active(mask & !(then_lanes | else_lanes))
            .collect::<Vec<_>>()
        {
            units(dst).for_each(|unit| self.set(unit, l, mix(UNDEF_UNIT, unit_hash(unit))));
        }
        if let Some((then_value, else_value)) = arms {
            for (v, lanes) in [(then_value, then_lanes), (else_value, else_lanes)] {
                if lanes != 0 {
                    self.remat(dst, v, &[], lanes);
                }
            }
        }
    }

    /// The then-side and else-side constants of a select of phi `value` reading `cond`.
    fn select_arms(
        &self,
        value: chromatic::Value,
        cond: &Use,
    ) -> Option<(chromatic::Value, chromatic::Value)> {
        let cond_name = &self.f.value(cond.value).name;
        let [_, t, e] = self
            .selects
            .get(self.f.value(value).name.as_str())?
            .iter()
            .find(|[c, _, _]| c == cond_name)?;
        let defined = |name: &str| {
            self.f
                .values
                .iter()
                .enumerate()
                .find(|(v, d)| d.name == name && self.defined_by.contains_key(v))
                .map(|(v, _)| chromatic::Value(v as u32))
        };
        Some((defined(t)?, defined(e)?))
    }

    /// Per lane (all W lanes, inactive ones unused), the tokens of every operand part.
    fn op_inputs(&self, operands: &[Operand], mask: u64) -> Vec<Vec<u64>> {
        (0..self.lanes())
            .map(|l| {
                if mask >> l & 1 == 0 {
                    return Vec::new();
                }
                let mut tokens = Vec::new();
                for o in operands {
                    match o {
                        Operand::Imm(x) => tokens.push(mix(0x1AA, x.get() as u64)),
                        Operand::Value(u) => self.use_tokens(u, l, &mut tokens),
                    }
                }
                tokens
            })
            .collect()
    }

    fn lane_inputs<'u>(&self, uses: impl Iterator<Item = &'u Use> + Clone, mask: u64) -> Vec<u64> {
        let mut tokens = Vec::new();
        for l in self.active(mask) {
            for u in uses.clone() {
                self.use_tokens(u, l, &mut tokens);
            }
        }
        tokens
    }

    fn use_tokens(&self, u: &Use, lane: usize, out: &mut Vec<u64>) {
        match (self.allocated, u.loc) {
            (true, Some(loc)) => out.extend(units(loc).map(|unit| self.get(unit, lane))),
            _ => {
                let size = usize::from(self.f.value(u.value).size);
                out.extend((0..size).map(|p| self.value_token(u.value, p, lane)));
            }
        }
    }

    /// Computes and writes def `d` (value `v`) of op `id`.
    fn define(
        &mut self,
        id: u64,
        d: usize,
        v: chromatic::Value,
        loc: Option<Location>,
        inputs: &[Vec<u64>],
        mask: u64,
    ) {
        let size = usize::from(self.f.value(v).size);
        let uniform = self.is_uniform_value(v);
        let wave = distinct_lane_inputs(inputs, mask);
        for p in 0..size {
            let key = mix(mix(id, d as u64), p as u64);
            let wave_token = mix(key, fold(0, &wave));
            let lane_token = |l: usize| mix(mix(key, fold(0, &inputs[l])), 0x1A4E + l as u64);
            match (self.allocated, loc) {
                (true, Some(loc)) => {
                    let Some(unit) = units(loc).nth(p) else {
                        continue;
                    };
                    for l in self.active(mask).collect::<Vec<_>>() {
                        let token = if uniform { wave_token } else { lane_token(l) };
                        self.set(unit, l, token);
                    }
                }
                _ if uniform => self.write_value_all(v, p, wave_token),
                _ => {
                    for l in self.active(mask).collect::<Vec<_>>() {
                        self.write_value_lane(v, p, l, lane_token(l));
                    }
                }
            }
        }
    }

    /// Simultaneous moves: all sources read (every lane) before any destination is written.
    fn moves(&mut self, pairs: &[(Location, Location)], mask: u64) {
        let reads: Vec<Vec<Vec<u64>>> = pairs
            .iter()
            .map(|(src, _)| {
                units(*src)
                    .map(|u| (0..self.lanes()).map(|l| self.get(u, l)).collect())
                    .collect()
            })
            .collect();
        let first = self.first_active(mask);
        for ((src_loc, dst), src) in pairs.iter().zip(reads) {
            let lanes = if self.whole_wave(*src_loc, *dst) {
                self.full_mask()
            } else {
                mask
            };
            for (unit, tokens) in units(*dst).zip(src) {
                for l in self.active(lanes).collect::<Vec<_>>() {
                    let lane = if unit.is_uniform(self.target) {
                        first
                    } else {
                        l
                    };
                    self.set(unit, l, tokens[lane]);
                }
            }
        }
    }

    /// Whether a move from `src` to `dst` writes every lane whatever the exec mask: a
    /// uniform register stored to memory.
    fn whole_wave(&self, src: Location, dst: Location) -> bool {
        let uniform_src = src
            .reg_class()
            .is_some_and(|c| self.target.class(c).uniform);
        uniform_src && matches!(dst, Location::Slot { .. })
    }

    /// The storage cell of `unit` as seen from `lane`: (register or slot, lane index).
    fn cell(&self, unit: Unit, lane: usize) -> (Unit, usize) {
        match unit {
            Unit::Lane(c, reg, ln) => (Unit::Reg(c, reg), usize::from(ln) % STORE_LANES),
            u if u.is_uniform(self.target) => (u, 0),
            u => (u, lane),
        }
    }

    fn get(&self, unit: Unit, lane: usize) -> u64 {
        let (u, l) = self.cell(unit, lane);
        self.store
            .get(&u)
            .map_or_else(|| mix(mix(UNDEF_UNIT, unit_hash(u)), l as u64), |v| v[l])
    }

    fn set(&mut self, unit: Unit, lane: usize, token: u64) {
        let (u, l) = self.cell(unit, lane);
        let cells = self.store.entry(u).or_insert_with(|| {
            (0..STORE_LANES)
                .map(|l| mix(mix(UNDEF_UNIT, unit_hash(u)), l as u64))
                .collect()
        });
        cells[l] = token;
    }
}

fn terminator(block: usize) -> Site {
    Site { block, inst: None }
}

fn unit_hash(u: Unit) -> u64 {
    match u {
        Unit::Reg(c, r) => mix(u64::from(c), u64::from(r)),
        Unit::Slot(s) => mix(0x5107, u64::from(s)),
        Unit::Lane(c, r, l) => mix(mix(u64::from(c), u64::from(r)), u64::from(l) + 0x1A4E),
    }
}

/// The inputs of the active lanes, each distinct one once, in order: a uniform result is a
/// function of what the lanes read, not of how many lanes are active (a constant
/// recomputed under a partial exec mask is the same constant).
fn distinct_lane_inputs(inputs: &[Vec<u64>], mask: u64) -> Vec<u64> {
    let mut seen: Vec<&Vec<u64>> = inputs
        .iter()
        .enumerate()
        .filter(|(l, _)| mask >> l & 1 == 1)
        .map(|(_, i)| i)
        .collect();
    seen.sort();
    seen.dedup();
    seen.into_iter().flatten().copied().collect()
}
