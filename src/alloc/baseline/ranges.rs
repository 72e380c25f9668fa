//! The live ranges the baseline allocators colour, and what constrains them.
//!
//! Each SSA value is one live range, kept in one register for its whole life (no
//! splitting), as in Chaitin's allocator after copies are inserted for phis (Chaitin,
//! "Register allocation & spilling via graph coloring", 1982). A spilled value is stored
//! right after its definition and reloaded before each instruction that reads it; its
//! range shrinks to the definition, and each reload is a range of its own, live only
//! just before its reader. A spilled phi lives in memory (a memory phi, `docs/FORMAT.md`).
//!
//! Constraints become interference or forbidden units, never range splitting: an operand
//! fixed to R is copied into R just before its instruction, so no other range live there
//! may use R; a definition fixed to R is written to R and copied to its own register
//! right after, so no range live after the instruction may use R; a tied definition
//! receives its operand by a copy into its own register before the instruction, so it
//! interferes with every range live before it except that operand's; an early-clobber
//! definition interferes with the operands. Phis interfere with each other and with
//! what is live into their block; a phi's arguments are copied on the incoming edges.
//!
//! Liveness is [`crate::analysis::liveness`]: uniform values on the linear CFG, so a
//! uniform value live into the else-side of a divergent branch interferes with
//! everything in the then-side — the simplest sound treatment of divergence.
//!

use crate::analysis::Analysis;
use crate::program::{Block, Function, Location, Op, Terminator, Use, Value};
use crate::target::{ClassId, SpillTarget, Target};
use std::collections::{BTreeSet, HashMap};

/// A spill cost for what spilling cannot shrink.
pub const UNSPILLABLE: f64 = f64::INFINITY;

/// A register the colourer should try first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pref {
    /// This first unit (a fixed operand's register).
    Unit(u16),
    /// The register of another range once coloured (phi and argument, tied operands).
    Range(u32),
}

#[derive(Clone, Debug)]
pub struct Range {
    pub value: Value,
    pub class: ClassId,
    pub size: u16,
    pub align: u16,
    /// Frequency-weighted cost of spilling the value; [`UNSPILLABLE`] when spilling
    /// would not help (reloads, what is spilled already, dead values) or is not allowed
    /// (uniform phis, classes without memory spills).
    pub cost: f64,
    /// Register ranges `(first, len)` of its class it may not overlap.
    pub forbidden: Vec<(u16, u16)>,
    /// Register ranges it may overlap only by starting exactly there: a fixed register
    /// its value is copied into while the value's own register must stay intact.
    pub exact: Vec<(u16, u16)>,
    pub prefer: Vec<Pref>,
    /// A memory phi: no register.
    pub in_memory: bool,
}

/// Where a reload range sits: before the instruction at `point` of the block
/// (`insts.len()`: before the terminator, with the phi copies of the outgoing edge).
pub type ReloadKey = (Block, u32, Value);

#[derive(Debug)]
pub struct Model {
    /// Value `v`'s range is `ranges[v]`; reload ranges follow.
    pub ranges: Vec<Range>,
    pub adj: Vec<Vec<u32>>,
    pub reloads: HashMap<ReloadKey, u32>,
}

impl Model {
    /// The range holding `v` at `point` of `b`.
    pub fn range_at(&self, b: Block, point: u32, v: Value) -> u32 {
        self.reloads.get(&(b, point, v)).copied().unwrap_or(v.0)
    }
}

/// The register operand `i` of `op` must be read from, when an operand or a definition
/// tied to it is fixed.
pub fn fixed_read(op: &Op, i: usize) -> Option<Location> {
    let tied_fixed = op
        .defs
        .iter()
        .find(|d| d.tied.map(usize::from) == Some(i))
        .and_then(|d| d.fixed);
    op.operands[i].as_use().and_then(|u| u.fixed).or(tied_fixed)
}

/// The definition tied to operand `i` that is fixed nowhere (it receives the operand by a
/// copy into its own register).
pub fn free_tie(op: &Op, i: usize) -> Option<usize> {
    if fixed_read(op, i).is_some() {
        return None;
    }
    op.defs
        .iter()
        .position(|d| d.tied.map(usize::from) == Some(i))
}

/// Builds the model for `f` (edges already split) with `spilled` values in memory.
pub fn build(f: &Function, target: &Target, a: &Analysis, spilled: &BTreeSet<Value>) -> Model {
    let weights = use_weights(f, a);
    let mut b = Builder {
        f,
        a,
        spilled,
        model: Model {
            ranges: f
                .value_ids()
                .map(|v| main_range(f, target, a, spilled, v, weights[v.index()]))
                .collect(),
            adj: vec![Vec::new(); f.values.len()],
            reloads: HashMap::new(),
        },
    };
    for block in f.block_ids() {
        b.block(block);
    }
    for list in &mut b.model.adj {
        list.sort_unstable();
        list.dedup();
    }
    b.model
}

/// Per value, its uses weighted by block frequency (a phi argument at the end of its
/// predecessor).
fn use_weights(f: &Function, a: &Analysis) -> Vec<f64> {
    let mut w = vec![0.0; f.values.len()];
    for b in f.block_ids() {
        let block = f.block(b);
        let ops = block.insts.iter().filter_map(|i| i.op());
        for u in ops.flat_map(|op| op.uses()).chain(block.term.uses()) {
            w[u.value.index()] += a.freq[b.index()];
        }
        for arg in block.phis.iter().flat_map(|p| &p.args) {
            w[arg.value.index()] += a.freq[arg.block.index()];
        }
    }
    w
}

/// The range of value `v`: a store at the definition and a load at every use, weighted
/// by block frequency, is its spill cost.
fn main_range(
    f: &Function,
    target: &Target,
    a: &Analysis,
    spilled: &BTreeSet<Value>,
    v: Value,
    use_weight: f64,
) -> Range {
    let data = f.value(v);
    let class = target.class(data.class);
    let def_block = a.liveness.def_block(v);
    let is_phi = f.blocks[def_block.index()]
        .phis
        .iter()
        .any(|p| p.def.value == v);
    let uniform_phi = is_phi && class.uniform;
    let to_memory = class.spill.contains(&SpillTarget::Memory);
    let spillable = !(a.liveness.is_dead(v) || spilled.contains(&v) || !to_memory || uniform_phi);
    let size = f64::from(data.size);
    let costs = &target.costs;
    let cost =
        costs.mem_store * size * a.freq[def_block.index()] + costs.mem_load * size * use_weight;
    Range {
        value: v,
        class: data.class,
        size: data.size,
        align: class.align.alignment(data.size),
        cost: if spillable { cost } else { UNSPILLABLE },
        forbidden: Vec::new(),
        exact: Vec::new(),
        prefer: Vec::new(),
        in_memory: is_phi && spilled.contains(&v),
    }
}

struct Builder<'a> {
    f: &'a Function,
    a: &'a Analysis,
    spilled: &'a BTreeSet<Value>,
    model: Model,
}

impl Builder<'_> {
    /// Walks `b` backward from its live-out set.
    fn block(&mut self, b: Block) {
        let block = &self.f.blocks[b.index()];
        let mut live: BTreeSet<u32> = self
            .a
            .liveness
            .live_out(b)
            .iter()
            .filter(|v| !self.spilled.contains(v))
            .map(|v| v.0)
            .collect();
        self.edge_reloads(b, &mut live);
        self.terminator(b, &block.term, &mut live);
        for (i, inst) in block.insts.iter().enumerate().rev() {
            if let Some(op) = inst.op() {
                self.instruction(b, i as u32, op, &mut live);
            }
        }
        self.phis(b, &mut live);
    }

    fn interfere(&mut self, x: u32, y: u32) {
        let (rx, ry) = (
            &self.model.ranges[x as usize],
            &self.model.ranges[y as usize],
        );
        if x != y && rx.class == ry.class && !rx.in_memory && !ry.in_memory {
            self.model.adj[x as usize].push(y);
            self.model.adj[y as usize].push(x);
        }
    }

    fn forbid(&mut self, r: u32, loc: Location) {
        if let Location::Reg { class, first, len } = loc {
            let range = &mut self.model.ranges[r as usize];
            if range.class == class {
                range.forbidden.push((first, len));
            }
        }
    }

    /// The range of `v` read at `point`: a new reload range when `v` is spilled.
    fn read(&mut self, b: Block, point: u32, v: Value) -> u32 {
        if !self.spilled.contains(&v) {
            return v.0;
        }
        if let Some(&r) = self.model.reloads.get(&(b, point, v)) {
            return r;
        }
        let main = &self.model.ranges[v.index()];
        let range = Range {
            cost: UNSPILLABLE,
            forbidden: Vec::new(),
            exact: Vec::new(),
            prefer: Vec::new(),
            in_memory: false,
            ..*main
        };
        let r = self.model.ranges.len() as u32;
        self.model.ranges.push(range);
        self.model.adj.push(Vec::new());
        self.model.reloads.insert((b, point, v), r);
        r
    }

    /// Spilled phi arguments of the successor are reloaded at the end of `b`.
    fn edge_reloads(&mut self, b: Block, live: &mut BTreeSet<u32>) {
        let Terminator::Jump { target, .. } = self.f.blocks[b.index()].term else {
            return;
        };
        let n = self.f.blocks[b.index()].insts.len() as u32;
        for phi in &self.f.blocks[target.index()].phis {
            for arg in phi.args.iter().filter(|arg| arg.block == b) {
                if self.spilled.contains(&arg.value) {
                    let r = self.read(b, n, arg.value);
                    if !self.model.ranges[phi.def.value.index()].in_memory {
                        let pref = Pref::Range(phi.def.value.0);
                        self.model.ranges[r as usize].prefer.push(pref);
                    }
                    live.insert(r);
                }
            }
        }
    }

    fn terminator(&mut self, b: Block, term: &Terminator, live: &mut BTreeSet<u32>) {
        let n = self.f.blocks[b.index()].insts.len() as u32;
        let uses: Vec<(u32, Option<Location>)> = term
            .uses()
            .iter()
            .map(|u: &Use| (self.read(b, n, u.value), u.fixed))
            .collect();
        live.extend(uses.iter().map(|(r, _)| *r));
        let reloads: Vec<u32> = live
            .iter()
            .copied()
            .filter(|&r| self.is_reload(r))
            .collect();
        self.reads_interfere(&reloads, live);
        for &(r, fixed) in &uses {
            if let Some(loc) = fixed {
                self.fixed_read(r, loc, live);
            }
        }
    }

    /// Reload ranges start just before their reader: they interfere with what is live
    /// there.
    fn reads_interfere(&mut self, reloads: &[u32], live: &BTreeSet<u32>) {
        for &r in reloads {
            for &w in live.iter() {
                self.interfere(r, w);
            }
        }
    }

    /// `r` is copied into `loc` before its reader: nothing else live there may use it,
    /// and `r` itself only by being there already (the copy would overwrite the rest of
    /// it).
    fn fixed_read(&mut self, r: u32, loc: Location, live: &BTreeSet<u32>) {
        for &w in live.iter().filter(|&&w| w != r) {
            self.forbid(w, loc);
        }
        if let Location::Reg { first, len, .. } = loc {
            let range = &mut self.model.ranges[r as usize];
            range.prefer.push(Pref::Unit(first));
            range.exact.push((first, len));
        }
    }

    fn is_reload(&self, r: u32) -> bool {
        r as usize >= self.f.values.len()
    }

    /// One instruction, backward: its definitions against what is live after it, then
    /// its operands (reload ranges where spilled) against what is live before it, then
    /// the constraints of fixed, early-clobber and tied operands.
    fn instruction(&mut self, b: Block, i: u32, op: &Op, live: &mut BTreeSet<u32>) {
        live.retain(|&r| !self.is_reload(r));
        let defs: Vec<u32> = op.defs.iter().map(|d| d.value.0).collect();
        self.definitions(op, &defs, live);
        for &r in &defs {
            live.remove(&r);
        }
        let operands: Vec<Option<u32>> = op
            .operands
            .iter()
            .map(|o| o.as_use().map(|u| self.read(b, i, u.value)))
            .collect();
        live.extend(operands.iter().flatten());
        let reloads: Vec<u32> = operands
            .iter()
            .flatten()
            .copied()
            .filter(|&r| self.is_reload(r))
            .collect();
        self.reads_interfere(&reloads, live);
        for (k, r) in operands.iter().enumerate() {
            if let (Some(r), Some(loc)) = (r, fixed_read(op, k)) {
                self.fixed_read(*r, loc, live);
            }
        }
        for (k, &r) in defs.iter().enumerate() {
            self.read_constraints(op, k, r, &operands, live);
        }
    }

    /// Definitions interfere with each other and with everything live after them.
    fn definitions(&mut self, op: &Op, defs: &[u32], live: &BTreeSet<u32>) {
        let mut after_set = live.clone();
        after_set.extend(defs);
        for (d, &r) in op.defs.iter().zip(defs) {
            for &w in after_set.iter() {
                self.interfere(r, w);
            }
            if let Some(loc) = d.fixed {
                self.fixed_def(r, loc, live, defs);
            }
        }
    }

    /// Definition `k` (range `r`) against the reads: an early-clobber one shares no unit
    /// with an operand; a tied one receives its operand before the instruction, so it
    /// interferes with everything live there but that operand — unless another operand
    /// reads the same value from its own register, which the copy must not touch.
    fn read_constraints(
        &mut self,
        op: &Op,
        k: usize,
        r: u32,
        operands: &[Option<u32>],
        live: &BTreeSet<u32>,
    ) {
        let d = &op.defs[k];
        let tie = d
            .tied
            .map(usize::from)
            .filter(|&t| free_tie(op, t) == Some(k));
        if d.early_clobber || tie.is_some() {
            for loc in (0..op.operands.len()).filter_map(|o| fixed_read(op, o)) {
                self.forbid(r, loc);
            }
        }
        if d.early_clobber {
            for &o in operands.iter().flatten() {
                self.interfere(r, o);
                if let Some(loc) = d.fixed {
                    self.forbid(o, loc);
                }
            }
        }
        let Some(x) = tie.and_then(|t| operands[t]) else {
            return;
        };
        let read_elsewhere = operands
            .iter()
            .enumerate()
            .any(|(o, v)| Some(o) != tie && *v == Some(x));
        let exempt = if read_elsewhere { u32::MAX } else { x };
        for &w in live.iter().filter(|&&w| w != exempt) {
            self.interfere(r, w);
        }
        self.model.ranges[r as usize].prefer.push(Pref::Range(x));
        self.model.ranges[x as usize].prefer.push(Pref::Range(r));
    }

    /// A definition written to `loc` and copied to its own register after: no range live
    /// after the instruction, nor another definition, may use `loc`.
    fn fixed_def(&mut self, r: u32, loc: Location, live: &BTreeSet<u32>, defs: &[u32]) {
        for &w in live.iter().chain(defs).filter(|&&w| w != r) {
            self.forbid(w, loc);
        }
        if let Location::Reg { first, .. } = loc {
            self.model.ranges[r as usize].prefer.push(Pref::Unit(first));
        }
    }

    /// Phis are defined together at the entry: they interfere with each other and with
    /// the block's live-in ranges; each prefers its arguments' registers.
    fn phis(&mut self, b: Block, live: &mut BTreeSet<u32>) {
        live.retain(|&r| !self.is_reload(r));
        let phis: Vec<u32> = self.f.blocks[b.index()]
            .phis
            .iter()
            .map(|p| p.def.value.0)
            .collect();
        for &p in &phis {
            live.remove(&p);
        }
        for &p in &phis {
            for &w in live.iter().chain(&phis) {
                self.interfere(p, w);
            }
        }
        for phi in &self.f.blocks[b.index()].phis {
            let p = phi.def.value.0;
            for arg in &phi.args {
                if !self.spilled.contains(&arg.value) {
                    self.model.ranges[p as usize]
                        .prefer
                        .push(Pref::Range(arg.value.0));
                    self.model.ranges[arg.value.index()]
                        .prefer
                        .push(Pref::Range(p));
                }
            }
        }
    }
}
