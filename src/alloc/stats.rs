//! Allocation statistics, as GPU compiler engineers compare them (Mesa shader-db, RADV):
//! per class MaxLive, registers used (highest + 1, lane-spill registers included), copies,
//! swaps and units moved (plain and weighted by block frequency), false dependencies, and
//! spill code; per function occupancy, spill slots, lane registers and allocation time.
//!
//! Spill code is read from the allocated program alone, whoever wrote it: `spill` to a
//! memory slot, to lanes of a register, or to a register of another class; `reload` from
//! any of them; `remat`. Each counts for the class of its register side, and costs the
//! target's per-unit cost ([`crate::target::Costs`]) × units × block frequency.
//!
//! A false dependency is a pair of instructions at most [`FALSE_DEP_WINDOW`] apart in a
//! block where the later one writes a unit the earlier one read (write-after-read) or
//! wrote (write-after-write): what a post-RA scheduler cannot reorder. `round-robin`
//! register choice exists to lower it.

use crate::analysis::{cfg, dom, loops, Analysis};
use crate::program::*;
use crate::target::{ClassId, Costs, Target};
use std::collections::BTreeSet;

/// Instructions closer than this count as dependent for `false_deps`.
pub const FALSE_DEP_WINDOW: usize = 4;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassStats {
    pub class: String,
    /// MaxLive of the program allocated (after scheduling, when it ran).
    pub max_live: u32,
    /// MaxLive in the emitted order (equal to `max_live` without scheduling).
    pub max_live_emitted: u32,
    pub regs_used: u16,
    pub copies: u32,
    pub swaps: u32,
    pub copy_units: u32,
    pub weighted_copies: f64,
    pub false_deps: u32,
    /// Spills of this class's registers to memory slots.
    pub spills: u32,
    /// Spills to lanes of a register (AMD SGPR → VGPR lanes).
    pub lane_spills: u32,
    /// Spills to a register of another class (predicates, flags).
    pub class_spills: u32,
    /// Reloads into this class, from any spill location.
    pub reloads: u32,
    pub remats: u32,
    /// Spills, reloads and remats: per-unit target cost × units × block frequency.
    pub spill_cost: f64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FunctionStats {
    pub function: String,
    pub instructions: usize,
    /// Waves (AMD) or warps (NVIDIA) the registers used allow; `None` without a model.
    pub occupancy: Option<u32>,
    pub classes: Vec<ClassStats>,
    /// Distinct memory slot units used by spills, reloads, copies and swaps.
    pub spill_slots: u32,
    /// Distinct registers holding lane spills.
    pub lane_registers: u32,
    pub alloc_time_us: u64,
    /// Stages the pipeline ran again for this function (0: every stage ran once).
    pub retries: u32,
    /// Blocks the scheduler reordered before allocation.
    pub blocks_scheduled: u32,
}

impl FunctionStats {
    /// Records what scheduling did: the emitted order's MaxLive and the blocks reordered.
    pub fn note_schedule(&mut self, scheduled: &crate::schedule::Scheduled) {
        for (c, &m) in self.classes.iter_mut().zip(&scheduled.max_live_emitted) {
            c.max_live_emitted = m;
        }
        self.blocks_scheduled = scheduled.blocks_reordered;
    }
}

/// What the allocation already knows about the allocated function: the analysis of the
/// original (with its edges split), the frequencies of the allocated function's blocks,
/// the original's operations ([`Function::op_count`]) and the time it took.
#[derive(Debug)]
pub struct Measured<'a> {
    pub analysis: &'a Analysis,
    pub freq: &'a [f64],
    pub ops: usize,
    pub micros: u64,
}

/// The statistics of `allocated`, whose block frequencies are computed here.
pub fn collect(
    original: &Function,
    allocated: &Function,
    target: &Target,
    a: &Analysis,
    micros: u64,
) -> FunctionStats {
    let cfg = cfg::Graph::of_function(allocated);
    let freq = loops::frequencies(
        allocated,
        &loops::Loops::new(&cfg, &dom::DomTree::new(&cfg)),
    );
    let measured = Measured {
        analysis: a,
        freq: &freq,
        ops: original.op_count(),
        micros,
    };
    collect_measured(original, allocated, target, &measured)
}

/// The statistics of `allocated`, with what the allocation measured.
pub fn collect_measured(
    original: &Function,
    allocated: &Function,
    target: &Target,
    measured: &Measured,
) -> FunctionStats {
    let Measured {
        analysis: a,
        freq,
        ops,
        micros,
    } = *measured;
    let mut classes: Vec<ClassStats> = target
        .class_ids()
        .map(|c| ClassStats {
            class: target.class(c).name.clone(),
            max_live: a.pressure.max_live(c),
            max_live_emitted: a.pressure.max_live(c),
            regs_used: 0,
            copies: 0,
            swaps: 0,
            copy_units: 0,
            weighted_copies: 0.0,
            false_deps: 0,
            spills: 0,
            lane_spills: 0,
            class_spills: 0,
            reloads: 0,
            remats: 0,
            spill_cost: 0.0,
        })
        .collect();
    let mut storage = Storage::default();
    let mut access = Accesses::default();
    let mut recent = Recent::new(target);
    for (b, block) in allocated.blocks.iter().enumerate() {
        count_copies(block, freq[b], &mut classes);
        count_spill_code(block, freq[b], &target.costs, &mut classes);
        access.of_block(block);
        recent.count_false_deps(&access, &mut classes);
        let phis = block.phis.iter().filter_map(|p| p.def.loc);
        let term = block.term.uses().iter().filter_map(|u| u.loc);
        for l in phis.chain(access.locs.iter().copied()).chain(term) {
            storage.note(l, &mut classes);
        }
    }
    let used: Vec<u16> = classes.iter().map(|c| c.regs_used).collect();
    FunctionStats {
        function: original.name.clone(),
        instructions: ops,
        occupancy: target.occupancy(&used),
        classes,
        spill_slots: storage.slots.len() as u32,
        lane_registers: storage.lane_regs.len() as u32,
        alloc_time_us: micros,
        retries: 0,
        blocks_scheduled: 0,
    }
}

/// The memory slot units and lane registers a function mentions.
#[derive(Default)]
struct Storage {
    slots: BTreeSet<u32>,
    lane_regs: BTreeSet<(ClassId, u16)>,
}

impl Storage {
    /// Records `l`; registers (lane registers too) raise their class's `regs_used`.
    fn note(&mut self, l: Location, classes: &mut [ClassStats]) {
        let (class, end) = match l {
            Location::Reg { class, first, len } => (class, first.saturating_add(len)),
            Location::Lane { class, reg, .. } => {
                self.lane_regs.insert((class, reg));
                (class, reg.saturating_add(1))
            }
            Location::Slot { first, len } => {
                self.slots
                    .extend((0..u32::from(len)).map(|i| first.saturating_add(i)));
                return;
            }
        };
        if let Some(s) = classes.get_mut(class.index()) {
            s.regs_used = s.regs_used.max(end);
        }
    }
}

/// Counts spills, reloads and remats for the class of their register side, with their
/// frequency-weighted cost.
fn count_spill_code(block: &BlockData, freq: f64, costs: &Costs, classes: &mut [ClassStats]) {
    for inst in &block.insts {
        let (reg, unit_cost, counter): (Location, f64, fn(&mut ClassStats)) = match &inst.kind {
            InstKind::Spill(m) => match m.dst {
                Location::Slot { .. } => (m.src, costs.mem_store, |s| s.spills += 1),
                Location::Lane { .. } => (m.src, costs.lane_write, |s| s.lane_spills += 1),
                Location::Reg { .. } => (m.src, costs.class_move, |s| s.class_spills += 1),
            },
            InstKind::Reload(m) => {
                let unit_cost = match m.src {
                    Location::Slot { .. } => costs.mem_load,
                    Location::Lane { .. } => costs.lane_read,
                    Location::Reg { .. } => costs.class_move,
                };
                (m.dst, unit_cost, |s| s.reloads += 1)
            }
            InstKind::Remat { dst, .. } => (*dst, costs.remat, |s| s.remats += 1),
            _ => continue,
        };
        let Some(s) = reg.reg_class().and_then(|c| classes.get_mut(c.index())) else {
            continue;
        };
        counter(s);
        s.spill_cost += unit_cost * f64::from(reg.len()) * freq;
    }
}

fn count_copies(block: &BlockData, freq: f64, classes: &mut [ClassStats]) {
    for inst in &block.insts {
        match &inst.kind {
            InstKind::ParallelCopy(moves) => {
                for m in moves {
                    if let Some(c) = m.dst.reg_class() {
                        let s = &mut classes[c.index()];
                        s.copies += 1;
                        s.copy_units += u32::from(m.dst.len());
                        s.weighted_copies += freq;
                    }
                }
            }
            InstKind::Swap(x, _) => {
                if let Some(c) = x.reg_class() {
                    let s = &mut classes[c.index()];
                    s.swaps += 1;
                    s.copy_units += u32::from(x.len());
                    s.weighted_copies += freq;
                }
            }
            _ => {}
        }
    }
}

/// The locations a block's instructions read and write, in one buffer reused from block
/// to block.
#[derive(Default)]
struct Accesses {
    locs: Vec<Location>,
    /// Per instruction: where its reads start, where its writes start and end in `locs`.
    insts: Vec<(usize, usize, usize)>,
}

impl Accesses {
    fn of_block(&mut self, block: &BlockData) {
        self.locs.clear();
        self.insts.clear();
        for inst in &block.insts {
            let start = self.locs.len();
            let writes = push_accesses(inst, &mut self.locs);
            self.insts.push((start, writes, self.locs.len()));
        }
    }

    fn reads(&self, i: usize) -> &[Location] {
        let (start, writes, _) = self.insts[i];
        &self.locs[start..writes]
    }

    fn writes(&self, i: usize) -> &[Location] {
        let (_, writes, end) = self.insts[i];
        &self.locs[writes..end]
    }
}

/// Pushes the locations an instruction reads, then those it writes; returns where the
/// writes start.
fn push_accesses(inst: &Inst, locs: &mut Vec<Location>) -> usize {
    match &inst.kind {
        InstKind::Op(op) => {
            locs.extend(op.uses().filter_map(|u| u.loc));
            let writes = locs.len();
            locs.extend(op.defs.iter().filter_map(|d| d.loc));
            writes
        }
        InstKind::ParallelCopy(moves) => {
            locs.extend(moves.iter().map(|m| m.src));
            let writes = locs.len();
            locs.extend(moves.iter().map(|m| m.dst));
            writes
        }
        InstKind::Swap(x, y) => {
            locs.extend([*x, *y]);
            let writes = locs.len();
            locs.extend([*x, *y]);
            writes
        }
        InstKind::Spill(m) | InstKind::Reload(m) => {
            locs.push(m.src);
            locs.push(m.dst);
            locs.len() - 1
        }
        InstKind::Remat { dst, .. } => {
            locs.push(*dst);
            locs.len() - 1
        }
    }
}

/// Per class and unit, the last instructions (numbered across the function from 1; 0
/// for none) that read or wrote it, latest first: as many as a false dependency can
/// reach back. Counting against them costs the units an instruction touches, not the
/// locations of the instructions before it. One table for every unit of the target,
/// sized once: a class's units start at its offset in `starts`.
struct Recent {
    units: Vec<[u32; FALSE_DEP_WINDOW - 1]>,
    /// Per class, where its units start in `units`; then the end of the last class.
    starts: Vec<usize>,
    /// Instructions numbered so far, in earlier blocks.
    seen: u32,
}

impl Recent {
    /// No instruction seen yet, with a record for every unit of `target`'s classes.
    fn new(target: &Target) -> Recent {
        let mut starts = Vec::with_capacity(target.classes.len() + 1);
        let mut total = 0;
        for class in &target.classes {
            starts.push(total);
            total += usize::from(class.units);
        }
        starts.push(total);
        Recent {
            units: vec![[0; FALSE_DEP_WINDOW - 1]; total],
            starts,
            seen: 0,
        }
    }

    /// Counts the false dependencies of one block's instructions: per instruction and
    /// register it writes, the instructions of the block at most `FALSE_DEP_WINDOW - 1`
    /// before it that read or wrote a unit of that register.
    fn count_false_deps(&mut self, access: &Accesses, classes: &mut [ClassStats]) {
        let first = self.seen + 1;
        for j in 0..access.insts.len() {
            let now = first + j as u32;
            for &w in access.writes(j) {
                let Location::Reg { class, .. } = w else {
                    continue;
                };
                let earlier = self.touched_since(w, now, first);
                classes[class.index()].false_deps += earlier.count_ones();
            }
            for &x in access.reads(j).iter().chain(access.writes(j)) {
                self.note(x, now);
            }
        }
        self.seen += access.insts.len() as u32;
    }

    /// The instructions from `first` on, before `now`, that touched a unit of `w`: bit
    /// `now - k - 1` for instruction `k`.
    fn touched_since(&mut self, w: Location, now: u32, first: u32) -> u32 {
        let mut earlier = 0;
        for last in self.units_of(w) {
            for &k in last.iter() {
                if k >= first && k < now && now - k < FALSE_DEP_WINDOW as u32 {
                    earlier |= 1 << (now - k - 1);
                }
            }
        }
        earlier
    }

    /// Records that instruction `now` touched the units of `x`.
    fn note(&mut self, x: Location, now: u32) {
        for last in self.units_of(x) {
            if last[0] != now {
                for i in (1..last.len()).rev() {
                    last[i] = last[i - 1];
                }
                last[0] = now;
            }
        }
    }

    /// The records of the units of a register range (none for other locations, nor for
    /// units outside the register's class).
    fn units_of(&mut self, l: Location) -> &mut [[u32; FALSE_DEP_WINDOW - 1]] {
        let Location::Reg { class, first, len } = l else {
            return &mut [];
        };
        let (Some(&start), Some(&end)) = (
            self.starts.get(class.index()),
            self.starts.get(class.index() + 1),
        ) else {
            return &mut [];
        };
        let first = start + usize::from(first);
        let last = first + usize::from(len);
        if last > end {
            return &mut [];
        }
        &mut self.units[first..last]
    }
}
