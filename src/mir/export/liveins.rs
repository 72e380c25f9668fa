//! The physical registers live into each block of the exported function.
//!
//! LLVM's machine verifier, which runs when `llc` reads MIR, and its post-allocation
//! passes (register scavenging, copy propagation, post-RA LICM) read a block's
//! `liveins:` as the registers live at its top. They are computed here by the classic
//! backward dataflow over register units (Kildall; the equations of Aho et al.,
//! *Compilers*, §9.2.5) on exactly the instructions written: live-in = uses before any
//! definition ∪ (live-out − definitions), live-out = ∪ live-in of the successors, to a
//! fixed point. Special registers (`$exec`, `$scc`, `$vcc`, `$m0`) are outside the
//! allocation and never cross a block in the input, so only SGPR, VGPR and AGPR units
//! are tracked.

use super::Emitted;
use crate::target::ClassId;
use std::collections::BTreeSet;

/// One 32-bit register: class and unit.
pub type Unit = (ClassId, u16);

/// The units live at the top of each block, given each block's instructions in order
/// and its successors.
pub fn live_in(blocks: &[(Vec<&Emitted>, Vec<usize>)]) -> Vec<BTreeSet<Unit>> {
    let summaries: Vec<(BTreeSet<Unit>, BTreeSet<Unit>)> = blocks
        .iter()
        .map(|(insts, _)| upward_and_defined(insts))
        .collect();
    let mut live: Vec<BTreeSet<Unit>> = summaries.iter().map(|(up, _)| up.clone()).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..blocks.len()).rev() {
            let (up, defined) = &summaries[b];
            let mut next = up.clone();
            for &s in &blocks[b].1 {
                next.extend(live[s].iter().filter(|u| !defined.contains(u)));
            }
            if next.len() != live[b].len() {
                live[b] = next;
                changed = true;
            }
        }
    }
    live
}

/// The units a block reads before writing them, and the units it writes.
fn upward_and_defined(insts: &[&Emitted]) -> (BTreeSet<Unit>, BTreeSet<Unit>) {
    let mut up = BTreeSet::new();
    let mut defined = BTreeSet::new();
    for inst in insts {
        up.extend(inst.uses.iter().filter(|u| !defined.contains(*u)));
        defined.extend(inst.defs.iter().copied());
    }
    (up, defined)
}
