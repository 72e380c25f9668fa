//! Minimum-registers mode's budget: per class, the least budget at which the spiller's
//! packing model keeps every live value in a register at every instruction
//! ([`demand::fits_everywhere_by_class`]), found by bisection between MaxLive and the
//! whole file.
//!
//! The function is then allocated once, at that budget. With the whole file as budget,
//! assignment's local choices (a live-in kept where its first predecessor left it, phi
//! affinity, an aligned tuple taking the lowest free window above values of other
//! alignments) leave gaps it never fills, and reach registers above what the function
//! needs: on AMD kernels with WMMA and MFMA tuples, 12 to 19 VGPRs above MaxLive. At the
//! least budget the same choices must stay within it, and the packing model guarantees
//! that they can (assignment places whatever the model lets through, with copies where a
//! value must move). The search asks the model only; it never allocates or retries an
//! allocation. Fitting only grows with the budget (a packing that fits `k` units fits
//! `k + 1`), so bisection finds the least fitting budget.
//!
//! A class without a swap gets one unit above that budget for copy temporaries only
//! ([`copy_room`]): a parallel copy cycle there goes through a free unit, and the units
//! free during a copy are those no value live after it holds (`parallel_copy`,
//! `out_of_ssa`). Values fit the least budget `k` everywhere, so with unit `k` kept for
//! temporaries, every cycle breaks in a register and none goes through memory (a full file
//! once broke the cycles of 64 MFMA accumulators on gfx942, rotated on an edge, through a
//! scratch slot one AGPR at a time); the unit counts among the registers used only where a
//! cycle needed it. Classes with a swap (AMD VGPRs) break cycles in place.

use crate::alloc::spill::demand;
use crate::analysis::Analysis;
use crate::program::Function;
use crate::target::Target;

/// The least budget per class, at most `budget`, at which `f` needs no spill; `budget`
/// itself when some class of `f` does not fit it (then the spiller runs, and other
/// classes' room, such as VGPR lanes for SGPR spills, is left as it is). A class without
/// live values keeps its budget (its fixed registers, if any, stay where they are), and so
/// does a uniform class: its anchored live-ins take the locations their branch block left
/// them in, which no instruction's packing problem sees, so a block's entry may not fit
/// the least budget (a generated gfx11 function's SGPRs did not).
pub fn least_budget(f: &Function, target: &Target, a: &Analysis, budget: &[u16]) -> Vec<u16> {
    if !demand::fits_everywhere_by_class(f, target, a, budget)
        .iter()
        .all(|&fits| fits)
    {
        return budget.to_vec();
    }
    let mut low: Vec<u16> = target
        .class_ids()
        .map(|c| match a.pressure.max_live(c) {
            live if live > 0 && !target.class(c).uniform => {
                u16::try_from(live).map_or(budget[c.index()], |l| l.min(budget[c.index()]))
            }
            _ => budget[c.index()],
        })
        .collect();
    let mut high = budget.to_vec();
    while low != high {
        let probe: Vec<u16> = low
            .iter()
            .zip(&high)
            .map(|(&l, &h)| l + (h - l) / 2)
            .collect();
        let fits = demand::fits_everywhere_by_class(f, target, a, &probe);
        for (c, &fits) in fits.iter().enumerate() {
            if fits {
                high[c] = probe[c];
            } else {
                low[c] = probe[c] + 1;
            }
        }
    }
    high
}

/// Per class, the units above the `least` budget that copy temporaries may take: one for
/// a class without a swap whose least budget is below the one `given`, else none.
pub fn copy_room(target: &Target, least: &[u16], given: &[u16]) -> Vec<u16> {
    target
        .class_ids()
        .map(|c| u16::from(!target.class(c).has_swap && least[c.index()] < given[c.index()]))
        .collect()
}
