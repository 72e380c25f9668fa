//! The spiller's decisions ([`belady`](super::belady)) become code: reloads (or remats)
//! where a value enters the registers, stores where it is needed, the code that couples
//! blocks on their edges, memory phis, and SSA repaired around the reloads.
//!
//! Coupling (Braun & Hack §4.4): on an edge `P → S`, a value S holds in registers at its
//! entry but P does not at its end is reloaded at P's end; one P holds but S does not is
//! stored there (if it is not in memory already); a register phi's argument is reloaded
//! where P lacks it; a memory phi's argument is stored into the phi's location. After
//! `prepare`, an edge that needs coupling code comes from a block with one successor.
//!
//! Stores (§4.5 and the issue's placement rule): a value needs a store on every path from
//! its definition to a reload. Candidate places are the points where it leaves the
//! registers while live (evictions, in blocks and on edges); a store goes at the first of
//! them on each path, found by a forward "stored on every path" dataflow. When the stores
//! so placed would run more often (by block frequency) than one store right after the
//! definition, that one store is used instead: a value defined before a loop and evicted
//! inside it is stored once before the loop; one defined in a loop and evicted after it
//! is stored after the loop. A value reloaded only on edges that spill it around itself
//! (store, then reload, on the edge) needs no other store. Rematerialisable values are
//! never stored; values spilled to a register of another class (PTX predicates, Intel
//! flags) are moved there once, after the definition.

use super::belady::{Decisions, DefFlags};
use super::edges::{self, EdgeCode, EdgeOp, Need, Successor};
use super::pseudo;
use super::repair;
use super::slots::{Access, Sites};
use super::sorted::SortedSet;
use crate::alloc::AllocError;
use crate::analysis::cfg::Graph;
use crate::analysis::liveness::{self, Liveness};
use crate::program::*;
use crate::target::{ClassId, SpillTarget, Target};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet};

/// Where a spilled value can be found again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// The spill location (memory slot or lanes) owned by this value.
    Slot(Value),
    /// A register of another class, held by this value.
    Holder(Value),
    /// Recomputed by its rematerialisable definition.
    Remat,
}

/// A phi whose value lives in its spill location: its arguments are stored there at the
/// end of each predecessor, its uses reload from there.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPhi {
    pub block: Block,
    pub phi: Phi,
}

/// The function being spilled and what the spiller knows about its values.
#[derive(Debug)]
pub struct State<'t> {
    pub f: Function,
    pub target: &'t Target,
    /// Per value: the original value it is an instance of.
    pub origin: Vec<Value>,
    pub home: Vec<Option<Home>>,
    pub memory_phis: Vec<MemoryPhi>,
    /// Values owning a spill location, in the order they got one.
    pub owners: Vec<Value>,
    /// Per value: whether its definition is rematerialisable; the pinned values.
    pub flags: DefFlags,
    /// Per block that lost memory phis: its phis in their original order (phis the
    /// spiller placed before may follow; they are gone again by then).
    pub phi_order: BTreeMap<Block, Vec<Value>>,
    /// Where the stores and reloads of spill locations are, kept as they are inserted.
    pub sites: Sites,
}

/// What the rewrite of one class reads besides the decisions.
#[derive(Debug)]
pub struct ClassInput<'a> {
    pub class: ClassId,
    pub budget: u16,
    /// The function's logical CFG, which SSA repair follows.
    pub cfg: &'a Graph,
    /// The CFG the class's values follow (the linear CFG for uniform classes).
    pub graph: &'a Graph,
    pub loops: &'a crate::analysis::loops::Loops,
    /// The class's blocks in [`visit_order`](super::belady::visit_order).
    pub order: &'a [Block],
    pub liveness: &'a Liveness,
    pub freq: &'a [f64],
}

/// Where inserted code goes in a block: before an instruction (or at the block's end,
/// index = instruction count), in this order among code at one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    AfterDef,
    Evict,
    Reload,
    EdgeStore,
    Edge,
}

impl<'t> State<'t> {
    /// The state of `f` before anything is spilled; the spiller rewrites `f` in place.
    pub fn new(f: Function, target: &'t Target) -> State<'t> {
        State {
            origin: f.value_ids().collect(),
            home: vec![None; f.values.len()],
            memory_phis: Vec::new(),
            owners: Vec::new(),
            flags: DefFlags::new(&f),
            phi_order: BTreeMap::new(),
            sites: Sites::new(f.blocks.len()),
            f,
            target,
        }
    }

    /// A new value standing for the same original value as `like`.
    fn fresh(&mut self, like: Value, class: ClassId, tag: &str) -> Value {
        fresh_value(
            &mut self.f,
            &mut self.origin,
            &mut self.home,
            &mut self.flags,
            like,
            class,
            tag,
        )
    }

    /// Applies the decisions for one class; returns the definition and use sites of the
    /// rewritten function, which SSA repair gathers as it reads it.
    pub fn apply(
        &mut self,
        d: &Decisions,
        input: &ClassInput,
    ) -> Result<liveness::Sites, AllocError> {
        let mut code = Code::default();
        let memory_phis = self.take_memory_phis(d);
        let coupling = self.couple(d, input, &memory_phis);
        let mut is_reloaded = vec![false; self.f.values.len()];
        for (b, plan) in d.blocks.iter().enumerate() {
            for &(at, v) in &plan.reloads {
                is_reloaded[v.index()] = true;
                code.push(Block(b as u32), at, Slot::Reload, Pending::Reload(v));
            }
        }
        for (b, edge) in &coupling {
            let end = self.f.block(*b).insts.len() as u32;
            for op in &edge.ops {
                let pending = match *op {
                    EdgeOp::Reload(v) => {
                        is_reloaded[v.index()] = true;
                        Pending::Reload(v)
                    }
                    EdgeOp::Store { value, owner } => Pending::Store(value, owner),
                };
                code.push(*b, end, Slot::Edge, pending);
            }
        }
        let reloaded: Vec<Value> = (0..is_reloaded.len() as u32)
            .map(Value)
            .filter(|v| is_reloaded[v.index()])
            .collect();
        let memory_phi_values: FxHashSet<Value> =
            memory_phis.iter().map(|m| m.phi.def.value).collect();
        for &v in &reloaded {
            self.ensure_home(v, memory_phi_values.contains(&v));
        }
        code.items.retain(|&(_, _, _, p)| match p {
            Pending::Store(v, owner) => {
                v != owner || matches!(self.home[v.index()], Some(Home::Slot(_)))
            }
            _ => true,
        });
        self.place_stores(d, input, &coupling, &reloaded, &mut code);
        let defs = self.insert(code);
        let tracked: Vec<Value> = reloaded
            .iter()
            .copied()
            .chain(memory_phis.iter().map(|m| m.phi.def.value))
            .collect();
        let removed: Vec<Value> = memory_phis.iter().map(|m| m.phi.def.value).collect();
        self.memory_phis.extend(memory_phis);
        self.repair(input.cfg, &tracked, &defs, &removed)
    }

    /// Removes the class's memory phis from their blocks; each owns a location. They come
    /// sorted by block.
    fn take_memory_phis(&mut self, d: &Decisions) -> Vec<MemoryPhi> {
        let mut out = Vec::new();
        let mut in_memory = vec![false; self.f.values.len()];
        for v in &d.memory_phis {
            in_memory[v.index()] = true;
        }
        for b in self.f.block_ids().collect::<Vec<_>>() {
            let phis = &self.f.blocks[b.index()].phis;
            if !phis.iter().any(|p| in_memory[p.def.value.index()]) {
                continue;
            }
            let order = phis.iter().map(|p| p.def.value).collect();
            self.phi_order.entry(b).or_insert(order);
            let phis = std::mem::take(&mut self.f.blocks[b.index()].phis);
            let (memory, register): (Vec<Phi>, Vec<Phi>) = phis
                .into_iter()
                .partition(|p| in_memory[p.def.value.index()]);
            self.f.blocks[b.index()].phis = register;
            for phi in memory {
                let v = phi.def.value;
                self.home[v.index()] = Some(Home::Slot(v));
                self.owners.push(v);
                out.push(MemoryPhi { block: b, phi });
            }
        }
        out
    }

    /// The coupling code at the end of every block ([`edges`]).
    fn couple(
        &self,
        d: &Decisions,
        input: &ClassInput,
        memory_phis: &[MemoryPhi],
    ) -> Vec<(Block, EdgeCode)> {
        let of_class = |v: Value| self.f.value(v).class == input.class;
        let units = |v: Value| {
            let data = self.f.value(v);
            let a = self.target.class(data.class).align.alignment(data.size);
            u32::from(data.size.div_ceil(a) * a)
        };
        let room = |set: &SortedSet| edges::fits_in(&self.f, self.target, input.budget, set);
        let mut out = Vec::new();
        for p in self.f.block_ids() {
            let succs: Vec<Successor> = input
                .graph
                .succs(p)
                .iter()
                .map(|&s| Successor {
                    entry: &d.blocks[s.index()].entry,
                    live_in: input
                        .liveness
                        .live_in(s)
                        .iter()
                        .copied()
                        .filter(|&v| of_class(v))
                        .collect(),
                    phis: self
                        .f
                        .block(s)
                        .phis
                        .iter()
                        .filter(|phi| of_class(phi.def.value))
                        .map(|phi| (phi, false))
                        .chain(memory_phis_of(memory_phis, s).map(|m| (&m.phi, true)))
                        .collect(),
                })
                .collect();
            let plan = &d.blocks[p.index()];
            let need = Need::of_edges(p, &plan.exit, &plan.protected, &succs);
            let code = edges::edge_code(&need, &room, &units);
            if !code.leaving.is_empty() || !code.ops.is_empty() {
                out.push((p, code));
            }
        }
        out
    }

    /// Gives a reloaded value its home: recomputed, a register of another class, or a
    /// spill location of its own.
    fn ensure_home(&mut self, v: Value, is_memory_phi: bool) {
        if self.home[v.index()].is_some() {
            return;
        }
        if self.flags.remat[v.index()] && !is_memory_phi {
            self.home[v.index()] = Some(Home::Remat);
            return;
        }
        if let Some(class) = self.holder_class(v).filter(|_| !is_memory_phi) {
            let h = self.fresh(v, class, "h");
            self.home[v.index()] = Some(Home::Holder(h));
            return;
        }
        self.home[v.index()] = Some(Home::Slot(v));
        self.owners.push(v);
    }

    /// The class of registers `v` spills into, when its class spills to another class
    /// that has tuples of its size.
    fn holder_class(&self, v: Value) -> Option<ClassId> {
        let data = self.f.value(v);
        self.target
            .class(data.class)
            .spill
            .iter()
            .find_map(|t| match *t {
                SpillTarget::Class { class } if self.target.class(class).allows_size(data.size) => {
                    Some(class)
                }
                _ => None,
            })
    }

    /// Stores for every reloaded value with a slot or a holder.
    fn place_stores(
        &mut self,
        d: &Decisions,
        input: &ClassInput,
        coupling: &[(Block, EdgeCode)],
        reloaded: &[Value],
        code: &mut Code,
    ) {
        let def_sites = self.def_sites(reloaded, input.liveness);
        let mut evictions: FxHashMap<Value, Vec<(Block, u32, Slot)>> = FxHashMap::default();
        for (b, plan) in d.blocks.iter().enumerate() {
            for &(at, v) in &plan.evictions {
                evictions
                    .entry(v)
                    .or_default()
                    .push((Block(b as u32), at, Slot::Evict));
            }
        }
        for (b, edge) in coupling {
            let end = self.f.block(*b).insts.len() as u32;
            for &v in &edge.leaving {
                evictions
                    .entry(v)
                    .or_default()
                    .push((*b, end, Slot::EdgeStore));
            }
        }
        let order = input.order;
        let in_blocks: FxHashSet<Value> = d
            .blocks
            .iter()
            .flat_map(|plan| plan.reloads.iter().map(|&(_, v)| v))
            .collect();
        let not_around = reloaded_not_around(coupling);
        let spans = live_spans(input, order, &def_sites, self.f.values.len());
        for &v in reloaded {
            let Some(&(def_block, def_at)) = def_sites.get(&v) else {
                continue;
            };
            match self.home[v.index()] {
                Some(Home::Holder(h)) => {
                    code.push(def_block, def_at, Slot::AfterDef, Pending::ClassStore(h, v));
                }
                Some(Home::Slot(_)) if !in_blocks.contains(&v) && !not_around.contains(&v) => {}
                Some(Home::Slot(_)) => {
                    let points = evictions.get(&v).map_or(&[][..], Vec::as_slice);
                    let span = &spans[v.index()];
                    let stores = first_evictions(input, span, def_block, points);
                    let spread: f64 = stores.iter().map(|&(b, _, _)| input.freq[b.index()]).sum();
                    if stores.is_empty() || input.freq[def_block.index()] <= spread {
                        code.push(def_block, def_at, Slot::AfterDef, Pending::Store(v, v));
                    } else {
                        for (b, at, slot) in stores {
                            code.push(b, at, slot, Pending::Store(v, v));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Where each of `values` is defined: block, and the index right after its defining
    /// instruction (0 for a phi). Only the blocks that liveness says define them are read
    /// (definitions do not move while spilling), not the whole function.
    fn def_sites(&self, values: &[Value], liveness: &Liveness) -> FxHashMap<Value, (Block, u32)> {
        let mut sites = FxHashMap::default();
        let mut wanted = vec![false; self.f.values.len()];
        for v in values {
            wanted[v.index()] = true;
        }
        let mut blocks: Vec<Block> = values.iter().map(|&v| liveness.def_block(v)).collect();
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            let block = self.f.block(b);
            for phi in &block.phis {
                if wanted[phi.def.value.index()] {
                    sites.insert(phi.def.value, (b, 0));
                }
            }
            for (k, inst) in block.insts.iter().enumerate() {
                for def in inst.op().into_iter().flat_map(|op| &op.defs) {
                    if wanted[def.value.index()] {
                        sites.insert(def.value, (b, k as u32 + 1));
                    }
                }
            }
        }
        sites
    }

    /// Builds the pseudo-operations and puts them in their blocks, recording the stores
    /// and reloads of spill locations in [`State::sites`]; returns, for every reload made,
    /// the value it stands for.
    fn insert(&mut self, code: Code) -> FxHashMap<Value, Value> {
        let mut defs = FxHashMap::default();
        let mut per_block: Vec<Vec<Inserted>> = vec![Vec::new(); self.f.blocks.len()];
        for (seq, (b, at, slot, pending)) in code.items.into_iter().enumerate() {
            let pos = self.position(b, at);
            let (inst, access) = match pending {
                Pending::Reload(v) => {
                    let class = self.f.value(v).class;
                    let x = self.fresh(v, class, "r");
                    self.home[x.index()] = self.home[v.index()];
                    defs.insert(x, v);
                    match self.home[v.index()] {
                        Some(Home::Remat) => (pseudo::remat(x, pos), None),
                        Some(Home::Holder(h)) => (pseudo::class_reload(x, h, pos), None),
                        _ => (pseudo::reload(x, v, pos), Some(reload_of(v))),
                    }
                }
                Pending::Store(v, owner) => (pseudo::store(v, owner, pos), Some(store_into(owner))),
                Pending::ClassStore(h, v) => (pseudo::class_store(h, v, pos), None),
            };
            per_block[b.index()].push((at, slot, seq, access, inst));
        }
        let blocks = per_block.into_iter().enumerate();
        for (b, mut items) in blocks.filter(|(_, items)| !items.is_empty()) {
            let b = Block(b as u32);
            items.sort_by_key(|&(at, slot, seq, ..)| (at, slot, seq));
            let inserted: Vec<(u32, Option<Access>)> = items
                .iter()
                .map(|&(at, _, _, access, _)| (at, access))
                .collect();
            self.sites.insert(b, &inserted);
            let old = std::mem::take(&mut self.f.blocks[b.index()].insts);
            let mut merged = Vec::with_capacity(old.len() + items.len());
            let mut items = items.into_iter().peekable();
            for (k, inst) in old.into_iter().enumerate() {
                while let Some((.., add)) = items.next_if(|&(at, ..)| at as usize <= k) {
                    merged.push(add);
                }
                merged.push(inst);
            }
            merged.extend(items.map(|(.., add)| add));
            self.f.blocks[b.index()].insts = merged;
        }
        defs
    }

    fn position(&self, b: Block, at: u32) -> Pos {
        let block = self.f.block(b);
        block
            .insts
            .get(at as usize)
            .map_or(block.term.pos(), |i| i.pos)
    }

    /// Renames every use of a reloaded value or memory phi to its reaching definition.
    fn repair(
        &mut self,
        cfg: &Graph,
        tracked: &[Value],
        defs: &FxHashMap<Value, Value>,
        removed: &[Value],
    ) -> Result<liveness::Sites, AllocError> {
        let (origin, home, flags) = (&mut self.origin, &mut self.home, &mut self.flags);
        let mut fresh = |f: &mut Function, like: Value| {
            let class = f.value(like).class;
            let v = fresh_value(f, origin, home, flags, like, class, "p");
            home[v.index()] = home[like.index()];
            v
        };
        repair::repair(&mut self.f, cfg, tracked, defs, removed, &mut fresh).map_err(|v| {
            AllocError::Internal {
                function: self.f.name.clone(),
                message: format!(
                    "`%{}` is read where no definition reaches after spilling",
                    self.f.value(v).name
                ),
            }
        })
    }
}

fn reload_of(owner: Value) -> Access {
    Access {
        owner,
        store: false,
    }
}

fn store_into(owner: Value) -> Access {
    Access { owner, store: true }
}

/// The memory phis of block `b`, in `memory_phis` sorted by block.
fn memory_phis_of(memory_phis: &[MemoryPhi], b: Block) -> impl Iterator<Item = &MemoryPhi> {
    let start = memory_phis.partition_point(|m| m.block < b);
    memory_phis[start..]
        .iter()
        .take_while(move |m| m.block == b)
}

fn fresh_value(
    f: &mut Function,
    origin: &mut Vec<Value>,
    home: &mut Vec<Option<Home>>,
    flags: &mut DefFlags,
    like: Value,
    class: ClassId,
    tag: &str,
) -> Value {
    let v = Value(f.values.len() as u32);
    let data = f.value(like);
    let fresh = ValueData {
        name: compact_str::format_compact!("{}.{tag}{}", data.name, v.0),
        class,
        size: data.size,
        pos: data.pos,
    };
    f.values.push(fresh);
    origin.push(origin[like.index()]);
    home.push(None);
    flags.push();
    v
}

/// The values some edge reloads before storing them on that edge itself; every reload of
/// any other value follows its own store (it was spilled around the edge, [`edges`]),
/// which is all those reloads need.
fn reloaded_not_around(coupling: &[(Block, EdgeCode)]) -> FxHashSet<Value> {
    let mut out = FxHashSet::default();
    for (_, edge) in coupling {
        let (mut stored, mut reloaded) = (BTreeSet::new(), BTreeSet::new());
        for &op in &edge.ops {
            match op {
                EdgeOp::Store { value, owner } if value == owner => {
                    stored.insert(value);
                }
                EdgeOp::Reload(v) if reloaded.insert(v) && !stored.contains(&v) => {
                    out.insert(v);
                }
                _ => {}
            }
        }
    }
    out
}

/// Per value with a definition site: the blocks that define it or where it is live in,
/// in visit order (the only blocks its store dataflow visits); empty for other values.
fn live_spans(
    input: &ClassInput,
    order: &[Block],
    def_sites: &FxHashMap<Value, (Block, u32)>,
    values: usize,
) -> Vec<Vec<Block>> {
    let mut spans: Vec<Vec<Block>> = vec![Vec::new(); values];
    for &b in order {
        for &v in input.liveness.live_in(b) {
            if def_sites.contains_key(&v) {
                spans[v.index()].push(b);
            }
        }
    }
    let mut rank = vec![0usize; input.freq.len()];
    for (k, &b) in order.iter().enumerate() {
        rank[b.index()] = k;
    }
    for (&v, &(def_block, _)) in def_sites {
        let span = &mut spans[v.index()];
        let at = span.partition_point(|x| rank[x.index()] < rank[def_block.index()]);
        if span.get(at) != Some(&def_block) {
            span.insert(at, def_block);
        }
    }
    spans
}

/// The points among `points` where the value is not yet stored on every path from its
/// definition: a forward dataflow over `span`, the blocks where it lives, in visit order.
fn first_evictions(
    input: &ClassInput,
    span: &[Block],
    def_block: Block,
    points: &[(Block, u32, Slot)],
) -> Vec<(Block, u32, Slot)> {
    if points.is_empty() {
        return Vec::new();
    }
    let mut points = points.to_vec();
    points.sort();
    let mut stored_out: FxHashMap<Block, bool> =
        FxHashMap::with_capacity_and_hasher(span.len(), Default::default());
    let mut chosen = Vec::new();
    for &b in span {
        let mut stored = b != def_block
            && input
                .graph
                .preds(b)
                .iter()
                .filter_map(|p| stored_out.get(p).copied())
                .fold(None, |acc: Option<bool>, s| Some(acc.unwrap_or(true) && s))
                .unwrap_or(false);
        let start = points.partition_point(|&(x, ..)| x < b);
        if let Some(&first) = points[start..].first().filter(|&&(x, ..)| x == b) {
            if !stored {
                chosen.push(first);
                stored = true;
            }
        }
        stored_out.insert(b, stored);
    }
    chosen
}

/// An instruction built for a block: where it goes (before instruction `at`, ordered by
/// slot and then by when it was asked for), its access to a spill location, if any, and
/// the instruction.
type Inserted = (u32, Slot, usize, Option<Access>, Inst);

/// One piece of code waiting to be built.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Reload(Value),
    /// Store the value into the owner's location.
    Store(Value, Value),
    /// Move the value into its holder.
    ClassStore(Value, Value),
}

#[derive(Clone, Debug, Default)]
struct Code {
    items: Vec<(Block, u32, Slot, Pending)>,
}

impl Code {
    fn push(&mut self, b: Block, at: u32, slot: Slot, p: Pending) {
        self.items.push((b, at, slot, p));
    }
}
