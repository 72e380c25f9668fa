//! The edits the spiller makes to the SSA function: give a value a home (a store after its
//! definition — at the top of its block for a phi —, a holder register of another class,
//! or nothing when it is rematerialisable), turn a phi spilled at its block's entry into a
//! memory phi, and split a live range by reloading
//! the value before its uses. Every edit keeps the function in SSA form without new phis:
//! a reload serves only the uses after it in its own block, so it dominates them.

use super::pseudo::{self, Pseudo};
use crate::analysis::cfg::split_edge;
use crate::program::*;
use crate::target::{ClassId, SpillTarget, Target};

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

/// The function being spilled and what the spiller knows about each of its values.
#[derive(Debug)]
pub struct State<'t> {
    pub f: Function,
    pub target: &'t Target,
    /// Per value: the original value it is an instance of.
    pub origin: Vec<Value>,
    pub home: Vec<Option<Home>>,
    /// Per original value: whether its definition is rematerialisable.
    remat: Vec<bool>,
    pub memory_phis: Vec<MemoryPhi>,
    /// Values owning a spill location, in the order they got one.
    pub owners: Vec<Value>,
}

impl<'t> State<'t> {
    pub fn new(f: &Function, target: &'t Target) -> State<'t> {
        let mut remat = vec![false; f.values.len()];
        for op in f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter_map(|i| i.op())
        {
            for d in &op.defs {
                remat[d.value.index()] = op.remat;
            }
        }
        State {
            f: f.clone(),
            target,
            origin: f.value_ids().collect(),
            home: vec![None; f.values.len()],
            remat,
            memory_phis: Vec::new(),
            owners: Vec::new(),
        }
    }

    /// Spills `x` so that it is no longer live from instruction `from` of `b` on: every
    /// use reachable from there (without passing `x`'s definition) reads a reload made in
    /// its own block. `reach` lists the blocks reachable from `b`'s end on `x`'s CFG.
    /// A phi that must leave its register at its block's `entry` becomes a memory phi;
    /// spilled later, it is stored once at the top of its block, so its uses before the
    /// point keep reading its register.
    pub fn spill_from(
        &mut self,
        x: Value,
        (b, from): (Block, usize),
        entry: bool,
        reach: &[Block],
    ) {
        if let Some(d) = self
            .phi_block(x)
            .filter(|&d| self.memory_phi_at(x, d, b, entry))
        {
            self.to_memory_phi(x, d);
            return;
        }
        let from = match self.ensure_home(x) {
            Some((at_b, at)) if at_b == b && at <= from => from + 1,
            _ => self.home_store_in(x, b).map_or(from, |at| from.max(at + 1)),
        };
        let def = self.def_block(x);
        let whole_b = reach.contains(&b) && Some(b) != def;
        self.reload_in_block(x, b, if whole_b { 0 } else { from });
        for &r in reach.iter().filter(|&&r| r != b && Some(r) != def) {
            self.reload_in_block(x, r, 0);
        }
    }

    /// Turns the phi defining `x` in `d` into a memory phi. Its arguments are stored on
    /// the edges: at the end of a predecessor with one successor, else in a new block
    /// splitting the edge (the slot must keep the current value on the other edges).
    pub fn to_memory_phi(&mut self, x: Value, d: Block) {
        let Some(k) = self.f.block(d).phis.iter().position(|p| p.def.value == x) else {
            return;
        };
        let mut phi = self.f.blocks[d.index()].phis.remove(k);
        match self.home_store_in(x, d) {
            Some(at) => {
                self.f.blocks[d.index()].insts.remove(at);
            }
            None => self.owners.push(x),
        }
        self.home[x.index()] = Some(Home::Slot(x));
        for arg in &mut phi.args {
            if self.f.block(arg.block).term.successors().count() > 1 {
                arg.block = split_edge(&mut self.f, arg.block, d);
            }
            if arg.value != x {
                let at = self.f.block(arg.block).insts.len();
                let store = pseudo::store(arg.value, x, phi.pos);
                self.f.blocks[arg.block.index()].insts.insert(at, store);
            }
        }
        self.memory_phis.push(MemoryPhi { block: d, phi });
        for b in self.f.block_ids().collect::<Vec<_>>() {
            self.reload_in_block(x, b, 0);
        }
    }

    /// Whether spilling the phi `x` of `d` at the entry of `b` (when `entry`) makes it a
    /// memory phi: at its own block's entry, also when it is already stored at the top of
    /// its block (that store goes, as a store there frees nothing at the entry), but not
    /// when it is held in a register of another class.
    pub fn memory_phi_at(&self, x: Value, d: Block, b: Block, entry: bool) -> bool {
        entry && b == d && matches!(self.home[x.index()], None | Some(Home::Slot(_)))
    }

    /// Where in `b` the store giving `x` its home is, if it is there.
    fn home_store_in(&self, x: Value, b: Block) -> Option<usize> {
        self.f.block(b).insts.iter().position(|i| {
            i.op().is_some_and(|op| match pseudo::classify(op) {
                Some(Pseudo::Store) => pseudo::owner(op) == Some(x) && reads(op, x),
                Some(Pseudo::ClassStore) => reads(op, x),
                _ => false,
            })
        })
    }

    /// Whether `x` is recomputed rather than reloaded.
    pub fn is_remat(&self, x: Value) -> bool {
        self.remat[self.origin[x.index()].index()]
    }

    /// The block whose phi defines `x`, if a phi does.
    pub fn phi_block(&self, x: Value) -> Option<Block> {
        self.f
            .block_ids()
            .find(|&b| self.f.block(b).phis.iter().any(|p| p.def.value == x))
    }

    /// The block defining `x` (by phi or operation); `None` for a memory phi.
    pub fn def_block(&self, x: Value) -> Option<Block> {
        self.f.block_ids().find(|&b| {
            let block = self.f.block(b);
            block.phis.iter().any(|p| p.def.value == x)
                || block
                    .insts
                    .iter()
                    .filter_map(|i| i.op())
                    .any(|op| defines(op, x))
        })
    }

    /// Gives `x` a home if it has none; returns where an instruction was inserted.
    fn ensure_home(&mut self, x: Value) -> Option<(Block, usize)> {
        if self.home[x.index()].is_some() {
            return None;
        }
        let (home, inserted) = if self.remat[self.origin[x.index()].index()] {
            (Home::Remat, None)
        } else {
            match self.spill_target(x) {
                SpillTarget::Class { class } => {
                    let h = self.fresh(x, class, "h");
                    let at = self.insert_after_def(x, |pos| pseudo::class_store(h, x, pos));
                    (Home::Holder(h), at)
                }
                SpillTarget::Memory | SpillTarget::Lanes { .. } => {
                    let at = self.insert_after_def(x, |pos| pseudo::store(x, x, pos));
                    self.owners.push(x);
                    (Home::Slot(x), at)
                }
            }
        };
        self.home[x.index()] = Some(home);
        inserted
    }

    /// The preferred spill destination of `x`: a register of another class that has
    /// tuples of `x`'s size, else a spill location (lanes and memory are chosen among when
    /// slots are coloured).
    fn spill_target(&self, x: Value) -> SpillTarget {
        let data = self.f.value(x);
        let targets = &self.target.class(data.class).spill;
        let class_target = targets.iter().find_map(|t| match *t {
            SpillTarget::Class { class } if self.target.class(class).allows_size(data.size) => {
                Some(SpillTarget::Class { class })
            }
            _ => None,
        });
        class_target.unwrap_or(SpillTarget::Memory)
    }

    /// Inserts `make`'s instruction right after the operation defining `x`, or at the top
    /// of the block of the phi defining it.
    fn insert_after_def(
        &mut self,
        x: Value,
        make: impl FnOnce(Pos) -> Inst,
    ) -> Option<(Block, usize)> {
        if let Some(d) = self.phi_block(x) {
            let block = &mut self.f.blocks[d.index()];
            let pos = block.phis.iter().find(|p| p.def.value == x)?.pos;
            block.insts.insert(0, make(pos));
            return Some((d, 0));
        }
        for (b, block) in self.f.blocks.iter_mut().enumerate() {
            let at = block
                .insts
                .iter()
                .position(|i| i.op().is_some_and(|op| defines(op, x)));
            if let Some(i) = at {
                let pos = block.insts[i].pos;
                block.insts.insert(i + 1, make(pos));
                return Some((Block(b as u32), i + 1));
            }
        }
        None
    }

    /// A new value standing for the same original value as `like`.
    fn fresh(&mut self, like: Value, class: ClassId, tag: &str) -> Value {
        let data = self.f.value(like).clone();
        let v = Value(self.f.values.len() as u32);
        self.f.values.push(ValueData {
            name: format!("{}.{tag}{}", data.name, v.0),
            class,
            size: data.size,
            pos: data.pos,
        });
        self.origin.push(self.origin[like.index()]);
        self.home.push(None);
        v
    }

    /// Reloads `x` before its first use in `b` at or after instruction `from` and renames
    /// that use and every later one in `b` (terminator and phi arguments included).
    fn reload_in_block(&mut self, x: Value, b: Block, from: usize) {
        let Some(home) = self.home[x.index()] else {
            return;
        };
        let Some(at) = self.reload_index(x, home, b, from) else {
            return;
        };
        let fresh = self.fresh(x, self.f.value(x).class, "r");
        self.home[fresh.index()] = Some(home);
        let pos = self
            .f
            .block(b)
            .insts
            .get(at)
            .map_or(self.f.block(b).term.pos(), |i| i.pos);
        let reload = match home {
            Home::Slot(owner) => pseudo::reload(fresh, owner, pos),
            Home::Holder(h) => pseudo::class_reload(fresh, h, pos),
            Home::Remat => pseudo::remat(fresh, pos),
        };
        let block = &mut self.f.blocks[b.index()];
        block.insts.insert(at, reload);
        for inst in &mut block.insts[at + 1..] {
            if let InstKind::Op(op) = &mut inst.kind {
                rename_uses(op, x, fresh);
            }
        }
        for u in block.term.uses_mut() {
            if u.value == x {
                u.value = fresh;
            }
        }
        let succs: Vec<Block> = block.term.successors().collect();
        for s in succs {
            for phi in &mut self.f.blocks[s.index()].phis {
                for arg in phi.args.iter_mut().filter(|a| a.block == b && a.value == x) {
                    arg.value = fresh;
                }
            }
        }
    }
}

impl State<'_> {
    /// Where a reload of `x` serving its uses in `b` from instruction `from` on goes:
    /// before the first of them, and before the store into its slot that a memory phi's
    /// edge makes in `b` (after that store the slot holds the phi's next value). A result
    /// at or before `from` means no reload can serve those uses there.
    pub fn reload_index(&self, x: Value, home: Home, b: Block, from: usize) -> Option<usize> {
        let at = super::distance::first_use(&self.f, x, b, from)?;
        let Home::Slot(owner) = home else {
            return Some(at);
        };
        let is_phi = self.memory_phis.iter().any(|m| m.phi.def.value == owner);
        let rewritten = self.f.block(b).insts.iter().position(|i| {
            i.op().is_some_and(|op| {
                pseudo::classify(op) == Some(pseudo::Pseudo::Store)
                    && pseudo::owner(op) == Some(owner)
            })
        });
        Some(match rewritten {
            Some(t) if is_phi => at.min(t),
            _ => at,
        })
    }
}

fn defines(op: &Op, x: Value) -> bool {
    op.defs.iter().any(|d| d.value == x)
}

fn rename_uses(op: &mut Op, from: Value, to: Value) {
    for operand in &mut op.operands {
        if let Operand::Value(u) = operand {
            if u.value == from {
                u.value = to;
            }
        }
    }
}

/// Whether `op` reads `x`.
fn reads(op: &Op, x: Value) -> bool {
    op.uses().any(|u| u.value == x)
}
