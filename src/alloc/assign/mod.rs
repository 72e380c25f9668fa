//! SSA register assignment in dominance order, with live-range splitting by parallel copies.
//!
//! Hack & Goos, "Register Allocation for Programs in SSA Form" (CC 2006): with SSA, a
//! greedy assignment in an order where definitions come before uses needs no more
//! registers than MaxLive. Mesa ACO's `register_allocation` adds operand constraints by
//! moving values out of the way with a parallel copy before the instruction.
//!
//! Blocks are visited in reverse post-order of the linear CFG (a dominance order in which
//! each then-side precedes its else-side). [`entry`] places a block's live-ins and phis;
//! [`instruction`] meets each instruction's constraints with one solve of the
//! [`packing`](super::packing) problem its operands make ([`operands`](super::operands))
//! and one parallel copy. Where values are at each block's entry and exit is recorded;
//! out of SSA turns mismatches on edges into copies.
//!
//! Uniform values around a divergent branch (in block B, arms T and E, join J) follow the
//! linear CFG, where the then-side falls into the else-side and either side may be
//! skipped when no lane takes it (ACO's then/invert/endif blocks): the else-arm E and the
//! join J take B's exit locations for their uniform live-ins (the *anchor*), so the skip
//! paths need no copies; the exits of the then-side and of the else-side return uniform
//! values to those locations with copies at their ends (`out_of_ssa`). Inside the sides
//! uniform values move freely.

mod entry;
mod foresight;
mod instruction;
mod parts;

use super::regfile::{Policy, RegFile};
use super::spill::pseudo;
use super::AllocError;
use crate::analysis::rows::Rows;
use crate::analysis::Analysis;
use crate::program::*;
use crate::target::Target;

/// Value locations at a block boundary, sorted by value.
pub type BoundaryState = [(Value, Location)];

/// The value locations at one boundary (entry or exit) of every block: one table in the
/// order the blocks were visited, with each block's span into it, rather than a vector
/// per block, so that recording them takes no heap block per block and reading them in
/// visiting order (out of SSA) reads one array from start to end.
#[derive(Debug)]
pub struct Boundaries {
    /// Per block: where its state starts and ends in `pairs` (empty until recorded).
    spans: Vec<(u32, u32)>,
    pairs: Vec<(Value, Location)>,
}

impl Boundaries {
    /// No state yet for any of `blocks` blocks; room for `pairs` pairs in all.
    fn new(blocks: usize, pairs: usize) -> Boundaries {
        Boundaries {
            spans: vec![(0, 0); blocks],
            pairs: Vec::with_capacity(pairs),
        }
    }

    /// The state of block `b`, sorted by value; empty until recorded.
    pub fn of(&self, b: Block) -> &BoundaryState {
        let (start, end) = self.spans[b.index()];
        &self.pairs[start as usize..end as usize]
    }

    /// Records the state of block `b` (once per block), sorted by value.
    fn record(&mut self, b: Block, state: impl Iterator<Item = (Value, Location)>) {
        let start = self.pairs.len();
        self.pairs.extend(state);
        self.pairs[start..].sort_by_key(|&(v, _)| v);
        self.spans[b.index()] = (start as u32, self.pairs.len() as u32);
    }
}

/// The result of assignment: the function with locations and per-instruction copies
/// (sequentialised), and where values are at every block boundary.
#[derive(Debug)]
pub struct Assigned {
    pub func: Function,
    pub entry: Boundaries,
    pub exit: Boundaries,
    /// Blocks in the order they were visited.
    pub order: Vec<Block>,
    /// Per value: whether a `remat` operation (or the spiller's `%remat`) defines it, so
    /// that a copy cycle may recompute it ([`crate::alloc::parallel_copy`]).
    pub recomputable: Vec<bool>,
}

/// What assignment must know of the whole function before it walks it: the values
/// defined `pinned` (they never move, so where they go is decided by looking ahead), the
/// values a copy cycle may recompute, and the split elements a later collect regroups.
/// Gathered block by block, by a walk that reads every block anyway (validation, for the
/// function edge splitting makes of the one it reads: splitting adds no value and no
/// operation), or by [`Survey::of`].
#[derive(Debug, PartialEq)]
pub struct Survey {
    pinned: Vec<bool>,
    recomputable: Vec<bool>,
    parts: parts::PartsGathering,
}

impl Survey {
    /// An empty survey of `f`, whose blocks are then pushed in order.
    pub fn new(f: &Function) -> Survey {
        Survey {
            pinned: vec![false; f.values.len()],
            recomputable: vec![false; f.values.len()],
            parts: parts::PartsGathering::default(),
        }
    }

    /// The survey of `f`, by a walk of its own.
    pub fn of(f: &Function) -> Survey {
        let mut survey = Survey::new(f);
        f.blocks.iter().for_each(|block| survey.push(block));
        survey
    }

    /// Records the next block of the function.
    pub fn push(&mut self, block: &BlockData) {
        let phis = block.phis.iter().map(|phi| &phi.def);
        mark_pinned(phis, &mut self.pinned);
        for op in block.insts.iter().filter_map(Inst::op) {
            mark_pinned(&op.defs, &mut self.pinned);
            mark_recomputable(op, &mut self.recomputable);
            self.parts.push(op);
        }
    }
}

/// Assigns registers within `budget` to every value of `f`, whose pressure fits it; copy
/// temporaries stay within `temps` (per class, at least `budget`). `survey` is `f`'s
/// ([`Survey`]). `f` is moved, not copied: its instructions are taken out and assigned in
/// place (a block's vector is rebuilt only where copies go between its instructions), the
/// assigner reads the rest and records what it changes (phi and terminator locations) on
/// the side, and the function is completed with them at the end.
pub fn assign(
    mut f: Function,
    target: &Target,
    a: &Analysis,
    (budget, temps): (&[u16], &[u16]),
    (policy, survey): (Policy, Survey),
) -> Result<Assigned, AllocError> {
    let spread: Vec<u16> = target
        .class_ids()
        .map(|c| a.pressure.max_live(c).min(u32::from(u16::MAX)) as u16)
        .collect();
    let order = visit_order(a);
    let insts: Vec<Vec<Inst>> = f
        .blocks
        .iter_mut()
        .map(|block| std::mem::take(&mut block.insts))
        .collect();
    let changes = {
        let Survey {
            pinned,
            recomputable,
            parts,
        } = survey;
        let parts = parts.finish();
        let foresight = foresight::Foresight::new(&f, &insts, &a.liveness, &pinned);
        let mut s = Assigner {
            f: &f,
            target,
            a,
            regs: RegFile::new(target, budget, &spread, policy),
            temps,
            loc: vec![None; f.values.len()],
            placed: Vec::new(),
            entry_live_in: Vec::new(),
            visited: vec![false; f.blocks.len()],
            entry: Boundaries::new(f.blocks.len(), entry_pairs(&f, a)),
            exit: Boundaries::new(f.blocks.len(), a.liveness.live_out_count()),
            insts,
            phi_locs: f
                .blocks
                .iter()
                .map(|block| block.phis.iter().map(|phi| phi.def.loc).collect())
                .collect(),
            term_reads: vec![Vec::new(); f.blocks.len()],
            block: Block(0),
            phi_uses: phi_uses(&f),
            pinned,
            recomputable,
            foresight,
            parts,
        };
        let mut buffers = instruction::Buffers::default();
        for &b in &order {
            s.block(b, &mut buffers)?;
        }
        Changes {
            insts: s.insts,
            phi_locs: s.phi_locs,
            term_reads: s.term_reads,
            entry: s.entry,
            exit: s.exit,
            recomputable: s.recomputable,
        }
    };
    for (((block, insts), phi_locs), reads) in f
        .blocks
        .iter_mut()
        .zip(changes.insts)
        .zip(changes.phi_locs)
        .zip(changes.term_reads)
    {
        block.insts = insts;
        for (phi, l) in block.phis.iter_mut().zip(phi_locs) {
            phi.def.loc = l;
        }
        for (u, l) in block.term.uses_mut().iter_mut().zip(reads) {
            u.loc = l;
        }
    }
    Ok(Assigned {
        func: f,
        entry: changes.entry,
        exit: changes.exit,
        order,
        recomputable: changes.recomputable,
    })
}

/// What assignment changes in the function, and where values are at block boundaries.
struct Changes {
    insts: Vec<Vec<Inst>>,
    phi_locs: Vec<Vec<Option<Location>>>,
    term_reads: Vec<Vec<Option<Location>>>,
    entry: Boundaries,
    exit: Boundaries,
    recomputable: Vec<bool>,
}

/// Marks the definitions of `op` when it is a `remat` operation or the spiller's `%remat`
/// of one.
fn mark_recomputable(op: &Op, mask: &mut [bool]) {
    if op.remat || pseudo::is_remat(op) {
        for d in &op.defs {
            mask[d.value.index()] = true;
        }
    }
}

/// Marks the values of `defs` defined `pinned`.
fn mark_pinned<'d>(defs: impl IntoIterator<Item = &'d Def>, mask: &mut [bool]) {
    defs.into_iter()
        .filter(|d| d.pinned)
        .for_each(|d| mask[d.value.index()] = true);
}

/// How many pairs the entries of every block of `f` hold at most: its live-ins and phis.
fn entry_pairs(f: &Function, a: &Analysis) -> usize {
    let phis: usize = f.blocks.iter().map(|block| block.phis.len()).sum();
    a.liveness.live_in_count() + phis
}

/// Per value, the phis (block, index) that take it as an argument, in block order.
fn phi_uses(f: &Function) -> Rows<(Block, usize)> {
    let mut uses = Vec::new();
    for b in f.block_ids() {
        for (k, phi) in f.block(b).phis.iter().enumerate() {
            uses.extend(phi.args.iter().map(|arg| (arg.value, (b, k))));
        }
    }
    Rows::grouped(f.values.len(), uses)
}

/// A block's instructions, assigned in place, with the copies assignment adds: each
/// `(i, copy)` goes before instruction `i` (at the end for `i == insts.len()`), in the
/// order given; `added` is left empty, its buffer kept for the next block. A block that
/// needs no copy keeps its vector, so that assignment writes a large function's
/// instructions where they are instead of into a second copy.
fn with_copies(insts: Vec<Inst>, added: &mut Vec<(usize, Inst)>) -> Vec<Inst> {
    if added.is_empty() {
        return insts;
    }
    let mut out = Vec::with_capacity(insts.len() + added.len());
    let mut added = added.drain(..).peekable();
    for (i, inst) in insts.into_iter().enumerate() {
        while let Some((_, copy)) = added.next_if(|&(at, _)| at == i) {
            out.push(copy);
        }
        out.push(inst);
    }
    out.extend(added.map(|(_, copy)| copy));
    out
}

/// Reverse post-order of the linear CFG, unreachable regions too (`Graph::rpo_all`).
fn visit_order(a: &Analysis) -> Vec<Block> {
    a.divergence.linear.rpo_all()
}

struct Assigner<'a> {
    f: &'a Function,
    target: &'a Target,
    a: &'a Analysis,
    regs: RegFile,
    /// Per class, the units copy temporaries may take.
    temps: &'a [u16],
    loc: Vec<Option<Location>>,
    /// Values given a location in the current block, to clear at its end.
    placed: Vec<Value>,
    /// The live-ins of one class at a block's entry, reused from block to block.
    entry_live_in: Vec<Value>,
    visited: Vec<bool>,
    entry: Boundaries,
    exit: Boundaries,
    /// Per block: its instructions, taken out of the function; assigned once visited.
    insts: Vec<Vec<Inst>>,
    /// Per block and phi: the phi's location once placed.
    phi_locs: Vec<Vec<Option<Location>>>,
    /// Per block: where its terminator reads its uses (empty until visited).
    term_reads: Vec<Vec<Option<Location>>>,
    block: Block,
    /// Per value: the phis (block, index) that take it as an argument.
    phi_uses: Rows<(Block, usize)>,
    /// Per value: whether it is `pinned` (it never moves once placed).
    pinned: Vec<bool>,
    /// Per value: whether a copy cycle may recompute it instead of saving it.
    recomputable: Vec<bool>,
    /// Per pinned value: the registers fixed operands claim while it lives.
    foresight: foresight::Foresight,
    /// Split elements and collects that keep tuples in place.
    parts: parts::Parts,
}

impl Assigner<'_> {
    /// Where `v` would best go: the register of a phi, already placed, that takes it as
    /// an argument (the edge then needs no copy; ACO's phi affinity).
    fn affinity(&self, v: Value) -> Option<Location> {
        let uses = self.phi_uses.row(v);
        uses.iter().find_map(|&(b, k)| self.phi_locs[b.index()][k])
    }

    /// Assigns block `b`; `buf` holds the buffers one instruction's assignment reuses
    /// from the one before.
    fn block(&mut self, b: Block, buf: &mut instruction::Buffers) -> Result<(), AllocError> {
        self.block = b;
        self.regs.clear();
        self.place_entry(b)?;
        let mut insts = std::mem::take(&mut self.insts[b.index()]);
        let mut added = std::mem::take(&mut buf.added);
        let mut copies = std::mem::take(&mut buf.copies);
        added.clear();
        copies.clear();
        for (i, inst) in insts.iter_mut().enumerate() {
            match &mut inst.kind {
                InstKind::Op(op) => self.op((b, i), op, inst.pos, &mut copies, buf)?,
                _ => return Err(self.error(inst.pos, "the input is already allocated".into())),
            }
            added.extend(copies.drain(..).map(|c| (i, c)));
        }
        self.terminator(b, &mut copies, buf)?;
        added.extend(copies.drain(..).map(|c| (insts.len(), c)));
        self.insts[b.index()] = with_copies(insts, &mut added);
        (buf.added, buf.copies) = (added, copies);
        let live_out = self.a.liveness.live_out(b);
        let loc = &self.loc;
        self.exit.record(
            b,
            live_out.iter().filter_map(|&v| Some((v, loc[v.index()]?))),
        );
        self.visited[b.index()] = true;
        for &v in &self.placed {
            self.loc[v.index()] = None;
        }
        self.placed.clear();
        Ok(())
    }

    fn set_loc(&mut self, v: Value, l: Location) {
        if self.loc[v.index()].is_none() {
            self.placed.push(v);
        }
        self.loc[v.index()] = Some(l);
        self.regs.occupy(l, v);
    }

    fn reg_of(&self, v: Value, first: u16) -> Location {
        let data = self.f.value(v);
        Location::Reg {
            class: data.class,
            first,
            len: data.size,
        }
    }

    fn align_of(&self, v: Value) -> u16 {
        let data = self.f.value(v);
        self.target.class(data.class).align.alignment(data.size)
    }

    fn error(&self, pos: Pos, message: String) -> AllocError {
        AllocError::Constraint {
            function: self.f.name.clone(),
            block: self.f.block(self.block).name.clone(),
            pos,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::alloc::operands::overlaps;
    use crate::alloc::{allocate, AllocOptions};
    use crate::program::{Function, InstKind, Location, Value};

    /// Where the operations of `f` read `v`, and where one defines it.
    fn locations_of(f: &Function, v: Value) -> Vec<Option<Location>> {
        let ops = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter_map(|i| i.op());
        ops.flat_map(|op| {
            let defs = op.defs.iter().filter(|d| d.value == v).map(|d| d.loc);
            defs.chain(op.uses().filter(|u| u.value == v).map(|u| u.loc))
        })
        .collect()
    }

    /// A value an operation defines `pinned` stays where it was defined (operations'
    /// pinned definitions count as much as phis'), read by no copy or swap; it is placed
    /// away from the register a later fixed operand wants ([`foresight`](super::foresight)).
    #[test]
    fn a_pinned_definition_is_never_moved() {
        let text = "target generic v=8\nfunc @f {\nentry:\n  %a:v2 = start 0 pinned\n  %x:v1 = load 0 reads\n  %y:v1 = use %x fixed(v1)\n  %d:v2 = wait %a barrier\n  store %y, %d writes\n  ret\n}\n";
        let p = crate::parse(text).expect("parses");
        let options = AllocOptions {
            budget: vec![("v".into(), 8)],
            ..AllocOptions::default()
        };
        let (allocated, _) = allocate(&p, &options).unwrap_or_else(|e| panic!("{e}"));
        let f = &allocated.functions[0];
        let at = locations_of(f, Value(0));
        let home = at[0].expect("placed");
        assert!(at.iter().all(|&l| l == Some(home)), "{at:?}");
        let moved = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .any(|i| match &i.kind {
                InstKind::ParallelCopy(moves) => moves.iter().any(|m| overlaps(m.src, home)),
                InstKind::Swap(x, y) => overlaps(*x, home) || overlaps(*y, home),
                _ => false,
            });
        assert!(!moved, "{}", crate::print(&allocated));
    }
}
