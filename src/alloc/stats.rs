//! Allocation statistics, as GPU compiler engineers compare them (Mesa shader-db, RADV):
//! per class MaxLive, registers used (highest + 1), copies, swaps and units moved (plain
//! and weighted by block frequency), and false dependencies; per function occupancy and
//! allocation time.
//!
//! A false dependency is a pair of instructions at most [`FALSE_DEP_WINDOW`] apart in a
//! block where the later one writes a unit the earlier one read (write-after-read) or
//! wrote (write-after-write): what a post-RA scheduler cannot reorder. `round-robin`
//! register choice exists to lower it.

use crate::analysis::{cfg, dom, loops, Analysis};
use crate::program::*;
use crate::target::Target;

/// Instructions closer than this count as dependent for `false_deps`.
pub const FALSE_DEP_WINDOW: usize = 4;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassStats {
    pub class: String,
    pub max_live: u32,
    pub regs_used: u16,
    pub copies: u32,
    pub swaps: u32,
    pub copy_units: u32,
    pub weighted_copies: f64,
    pub false_deps: u32,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FunctionStats {
    pub function: String,
    pub instructions: usize,
    /// Waves (AMD) or warps (NVIDIA) the registers used allow; `None` without a model.
    pub occupancy: Option<u32>,
    pub classes: Vec<ClassStats>,
    pub alloc_time_us: u64,
}

pub fn collect(
    original: &Function,
    allocated: &Function,
    target: &Target,
    a: &Analysis,
    micros: u64,
) -> FunctionStats {
    let mut classes: Vec<ClassStats> = target
        .class_ids()
        .map(|c| ClassStats {
            class: target.class(c).name.clone(),
            max_live: a.pressure.max_live(c),
            regs_used: 0,
            copies: 0,
            swaps: 0,
            copy_units: 0,
            weighted_copies: 0.0,
            false_deps: 0,
        })
        .collect();
    let cfg = cfg::Graph::of_function(allocated);
    let freq = loops::frequencies(
        allocated,
        &loops::Loops::new(&cfg, &dom::DomTree::new(&cfg)),
    );
    for (b, block) in allocated.blocks.iter().enumerate() {
        count_copies(block, freq[b], &mut classes);
        count_false_deps(block, &mut classes);
        for l in block_locations(block) {
            if let Location::Reg { class, first, len } = l {
                let s = &mut classes[class.index()];
                s.regs_used = s.regs_used.max(first + len);
            }
        }
    }
    let used: Vec<u16> = classes.iter().map(|c| c.regs_used).collect();
    FunctionStats {
        function: original.name.clone(),
        instructions: original.op_count(),
        occupancy: target.occupancy(&used),
        classes,
        alloc_time_us: micros,
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

/// Every location an instruction of the block mentions.
fn block_locations(block: &BlockData) -> Vec<Location> {
    let mut locs: Vec<Location> = block.phis.iter().filter_map(|p| p.def.loc).collect();
    for inst in &block.insts {
        let (reads, writes) = accesses(inst);
        locs.extend(reads);
        locs.extend(writes);
    }
    locs.extend(block.term.uses().iter().filter_map(|u| u.loc));
    locs
}

/// The locations an instruction reads and writes.
fn accesses(inst: &Inst) -> (Vec<Location>, Vec<Location>) {
    match &inst.kind {
        InstKind::Op(op) => (
            op.uses().filter_map(|u| u.loc).collect(),
            op.defs.iter().filter_map(|d| d.loc).collect(),
        ),
        InstKind::ParallelCopy(moves) => (
            moves.iter().map(|m| m.src).collect(),
            moves.iter().map(|m| m.dst).collect(),
        ),
        InstKind::Swap(x, y) => (vec![*x, *y], vec![*x, *y]),
        InstKind::Spill(m) | InstKind::Reload(m) => (vec![m.src], vec![m.dst]),
        InstKind::Remat { dst, .. } => (Vec::new(), vec![*dst]),
    }
}

/// Whether two register ranges share a unit.
pub(crate) fn overlaps(a: Location, b: Location) -> bool {
    match (a, b) {
        (
            Location::Reg {
                class: c1,
                first: f1,
                len: l1,
            },
            Location::Reg {
                class: c2,
                first: f2,
                len: l2,
            },
        ) => c1 == c2 && f1 < f2 + l2 && f2 < f1 + l1,
        _ => false,
    }
}

fn count_false_deps(block: &BlockData, classes: &mut [ClassStats]) {
    let access: Vec<(Vec<Location>, Vec<Location>)> = block.insts.iter().map(accesses).collect();
    for (j, (_, writes)) in access.iter().enumerate() {
        for (reads_k, writes_k) in &access[j.saturating_sub(FALSE_DEP_WINDOW - 1)..j] {
            for &w in writes {
                if reads_k.iter().chain(writes_k).any(|&x| overlaps(w, x)) {
                    if let Some(c) = w.reg_class() {
                        classes[c.index()].false_deps += 1;
                    }
                }
            }
        }
    }
}
