//! Minimum-registers mode's budget: per class, the least budget at which the spiller's
//! packing model keeps every live value in a register at every instruction
//! ([`demand::least_fitting_by_class`]): between MaxLive and the whole file, from one walk
//! of the function.
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
//! `k + 1`), so the least budget of the function is the largest of the least budgets of
//! its instructions, which the one walk collects. When every class fits, the spiller has
//! nothing to do and is not asked again.
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

/// The least budget per class, at most `budget`, at which `f` needs no spill; `None` when
/// some class of `f` does not fit `budget` (then the spiller runs at `budget`, and other
/// classes' room, such as VGPR lanes for SGPR spills, is left as it is). A class without
/// live values keeps its budget (its fixed registers, if any, stay where they are), and so
/// does a uniform class: its anchored live-ins take the locations their branch block left
/// them in, which no instruction's packing problem sees, so a block's entry may not fit
/// the least budget (a generated gfx11 function's SGPRs did not).
pub fn least_budget(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Option<Vec<u16>> {
    least_by_class(f, target, a, budget).into_iter().collect()
}

/// Per class, its least budget as in [`least_budget`], or `None` when it does not fit
/// `budget`: which classes fit `budget` everywhere ([`demand::fits_everywhere`]), so the
/// spiller need not ask again.
pub fn least_by_class(
    f: &Function,
    target: &Target,
    a: &Analysis,
    budget: &[u16],
) -> Vec<Option<u16>> {
    let low: Vec<u16> = target
        .class_ids()
        .map(|c| {
            let searched = a.pressure.max_live(c) > 0 && !target.class(c).uniform;
            if searched {
                0
            } else {
                budget[c.index()]
            }
        })
        .collect();
    demand::least_fitting_by_class(f, target, a, &low, budget)
}

/// Per class, the units above the `least` budget that copy temporaries may take: one for
/// a class without a swap whose least budget is below the one `given`, else none.
pub fn copy_room(target: &Target, least: &[u16], given: &[u16]) -> Vec<u16> {
    target
        .class_ids()
        .map(|c| u16::from(!target.class(c).has_swap && least[c.index()] < given[c.index()]))
        .collect()
}

/// The budget a scheduler aims at for a function allocated at `budget`: one unit less in
/// a class without a swap (and with a unit to spare), the unit [`copy_room`] keeps for copy
/// temporaries. An order whose values take every unit of such a class leaves a parallel
/// copy cycle nothing to break through but memory; one unit lower, it breaks in a
/// register.
pub fn scheduling_budget(target: &Target, budget: &[u16]) -> Vec<u16> {
    target
        .class_ids()
        .map(|c| {
            let k = budget[c.index()];
            k - u16::from(!target.class(c).has_swap && k > 1)
        })
        .collect()
}

#[cfg(all(test, feature = "arbitrary"))]
mod tests {
    use super::*;
    use crate::alloc::prepare_function;
    use crate::gen::{generate_from_seed, GenConfig};
    use crate::program::Program;

    /// The definition by brute force: per searched class the first budget from MaxLive up
    /// at which the class fits everywhere; the others keep theirs; `None` when a class
    /// does not fit its budget.
    fn least_by_trying_each(
        f: &Function,
        target: &Target,
        a: &Analysis,
        budget: &[u16],
    ) -> Option<Vec<u16>> {
        target
            .class_ids()
            .map(|c| {
                let k = budget[c.index()];
                if !demand::fits_everywhere(f, target, a, c, k) {
                    return None;
                }
                if a.pressure.max_live(c) == 0 || target.class(c).uniform {
                    return Some(k);
                }
                (0..=k).find(|&low| demand::fits_everywhere(f, target, a, c, low))
            })
            .collect()
    }

    /// Compares the two at the whole file and at budgets around MaxLive; returns how many
    /// functions fitted a searched class below the file and how many did not fit.
    fn compare(p: &Program, counts: &mut (u32, u32)) {
        for f in &p.functions {
            let prepared = prepare_function(f, &p.target).expect("the programs allocate");
            let (g, a) = (&prepared.func, &prepared.analysis);
            let file: Vec<u16> = p.target.classes.iter().map(|c| c.units).collect();
            let near = |extra: u16| -> Vec<u16> {
                p.target
                    .class_ids()
                    .map(|c| (a.pressure.max_live(c) as u16 + extra).min(file[c.index()]))
                    .collect()
            };
            for budget in [file.clone(), near(0), near(1), near(3)] {
                let least = least_budget(g, &p.target, a, &budget);
                assert_eq!(
                    least,
                    least_by_trying_each(g, &p.target, a, &budget),
                    "{} at {budget:?}",
                    f.name
                );
                match least {
                    Some(least) if least != budget => counts.0 += 1,
                    Some(_) => {}
                    None => counts.1 += 1,
                }
            }
        }
    }

    #[test]
    fn least_budget_is_the_first_fitting_one_from_max_live_up() {
        let mut counts = (0, 0);
        for seed in 0..150 {
            compare(
                &generate_from_seed(seed, &GenConfig::default()),
                &mut counts,
            );
        }
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
        for entry in std::fs::read_dir(corpus).expect("the corpus is there") {
            let path = entry.expect("corpus entries are readable").path();
            if path.extension().is_some_and(|e| e == "chr") {
                let text = std::fs::read_to_string(&path).expect("corpus files are readable");
                let p = crate::parse(&text).expect("corpus programs parse");
                compare(&p, &mut counts);
            }
        }
        assert!(
            counts.0 > 100 && counts.1 > 100,
            "lowered budgets and budgets that do not fit are both exercised: {counts:?}"
        );
    }

    /// regalloc2's generator functions fix registers of classes of single units at most
    /// instructions, where the walk's running budget is mostly settled by a bound on the
    /// counts ([`demand::Demand`]'s `singles_surely_fit`) rather than the built problem.
    #[cfg(feature = "regalloc2-fuzzing")]
    #[test]
    fn least_budget_of_regalloc2_generator_functions_is_the_first_fitting_one() {
        use crate::alloc::regalloc2_adapter::fuzz_func::{generate, to_chr, Size};
        let mut counts = (0, 0);
        for seed in 0..40 {
            let Some(func) = generate(seed, Size::Default) else {
                continue;
            };
            let text = to_chr(&func, "f", "regalloc2's generator").expect("converts");
            compare(&crate::parse(&text).expect("parses"), &mut counts);
        }
        assert!(
            counts.0 > 10 && counts.1 > 10,
            "lowered budgets and budgets that do not fit are both exercised: {counts:?}"
        );
    }
}
