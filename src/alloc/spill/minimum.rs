//! The lowest legal budget: what the single most demanding instruction needs when every
//! value it does not read or write has been spilled around it.
//!
//! The need of an instruction is the smallest budget at which its own
//! [`packing`](super::super::packing) problem fits — its operands (each read for the last
//! time: a value that lives on can be stored before and reloaded after), its copies for
//! fixed and tied operands, its early-clobber and late definitions, all at their aligned
//! and fixed places. It is the same problem the spiller and assignment solve, so the
//! budget it gives is exact: at that budget and above the spiller can always make every
//! instruction fit, and assignment can always place what the spiller left; below it this
//! instruction cannot be placed. A terminator needs its operands.
//!
//! A phi needs nothing by itself (a phi can live in memory), but phis that take each
//! other's values on one edge — a rotation, like the swap of two loop-carried values —
//! do: every old value must be read before any location is overwritten, and memory is
//! reached only through registers, so with every phi of a cycle in memory the two
//! largest members are in registers at once (the first old value saved, the next one
//! moving into its place). Each such cycle needs its two largest members packed.

use super::pinned;
use crate::alloc::operands::{self, Built, Context, Operands};
use crate::alloc::packing;
use crate::program::{Block, Function, Operand, Pos, Value};
use crate::target::{ClassId, Target};

/// The most demanding place of a class: units needed and the instruction's position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub units: u32,
    pub pos: Pos,
}

/// Per class, the largest need of any instruction of `f` (zero units when none). A need
/// above the class's file means no budget allocates the instruction.
pub fn lowest_legal(f: &Function, target: &Target) -> Vec<Need> {
    let mut need = vec![
        Need {
            units: 0,
            pos: f.pos
        };
        target.classes.len()
    ];
    let pinned = pinned::live_across(f);
    let mut scratch = Scratch::default();
    for (b, block) in f.blocks.iter().enumerate() {
        for (i, inst) in block.insts.iter().enumerate() {
            if let Some(op) = inst.op() {
                let ops = Operands {
                    defs: &op.defs,
                    operands: &op.operands,
                };
                let pos = op
                    .defs
                    .first()
                    .map(|d| d.pos)
                    .or_else(|| op.uses().next().map(|u| u.pos));
                let through = &pinned[b][i];
                let at = pos.unwrap_or(inst.pos);
                raise(&mut need, (f, target), (ops, through), at, &mut scratch);
            }
        }
        let uses: Vec<Operand> = block
            .term
            .uses()
            .iter()
            .map(|u| Operand::Value(*u))
            .collect();
        let (ops, at) = (Operands::uses_only(&uses), block.term.pos());
        raise(&mut need, (f, target), (ops, &[]), at, &mut scratch);
    }
    for (members, pos) in rotations(f) {
        raise_for_rotation(&mut need, f, target, &members, pos);
    }
    need
}

/// The cycles among the phis of each block on each incoming edge (a phi taking the old
/// value of another phi of its block, which takes ..., back to the first), with the
/// first member's position.
fn rotations(f: &Function) -> Vec<(Vec<Value>, Pos)> {
    let mut out = Vec::new();
    for block in &f.blocks {
        let phis = &block.phis;
        let mut preds: Vec<Block> = phis
            .iter()
            .flat_map(|p| p.args.iter().map(|a| a.block))
            .collect();
        preds.sort();
        preds.dedup();
        for pred in preds {
            let arg_of = |i: usize| -> Option<usize> {
                let arg = phis[i].args.iter().find(|a| a.block == pred)?;
                phis.iter()
                    .position(|p| p.def.value == arg.value)
                    .filter(|&j| j != i)
            };
            let mut done = vec![false; phis.len()];
            for start in 0..phis.len() {
                if let Some(cycle) = cycle_from(start, &arg_of, &mut done) {
                    let members = cycle.iter().map(|&i| phis[i].def.value).collect();
                    out.push((members, phis[cycle[0]].def.pos));
                }
            }
        }
    }
    out
}

/// The cycle reached by following `next` from `start`, when `start` lies on it and no
/// member was reported before.
fn cycle_from(
    start: usize,
    next: &dyn Fn(usize) -> Option<usize>,
    done: &mut [bool],
) -> Option<Vec<usize>> {
    let mut path = vec![start];
    let mut at = start;
    while let Some(n) = next(at) {
        if n == start {
            if path.iter().any(|&i| done[i]) {
                return None;
            }
            for &i in &path {
                done[i] = true;
            }
            return Some(path);
        }
        if path.contains(&n) || path.len() > done.len() {
            return None;
        }
        path.push(n);
        at = n;
    }
    None
}

/// Raises each class's need to what the two largest members of a rotation take packed.
fn raise_for_rotation(
    need: &mut [Need],
    f: &Function,
    target: &Target,
    members: &[Value],
    pos: Pos,
) {
    for c in target.class_ids() {
        let mut sizes: Vec<u16> = members
            .iter()
            .filter(|&&v| f.value(v).class == c)
            .map(|&v| f.value(v).size)
            .collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        if sizes.len() < 2 {
            continue;
        }
        let class = target.class(c);
        let items: Vec<packing::Item> = sizes[..2]
            .iter()
            .map(|&s| packing::Item::new(s, class.align.alignment(s), packing::Span::Both))
            .collect();
        let fits = |k: u16| {
            packing::fits(&packing::Problem {
                units: k,
                items: items.clone(),
            })
        };
        let units = (1..=class.units)
            .find(|&k| fits(k))
            .map_or(u32::from(class.units) + 1, u32::from);
        if units > need[c.index()].units {
            need[c.index()] = Need { units, pos };
        }
    }
}

fn raise(
    need: &mut [Need],
    (f, target): (&Function, &Target),
    (ops, through): (Operands, &[Value]),
    pos: Pos,
    scratch: &mut Scratch,
) {
    for c in target.class_ids() {
        let floor = need[c.index()].units;
        let cannot_raise =
            unconstrained_bound(f, target, c, (ops, through)).is_some_and(|bound| bound <= floor);
        if cannot_raise {
            continue;
        }
        if let Some(units) = need_above((f, target, c), (ops, through), floor, scratch) {
            need[c.index()] = Need { units, pos };
        }
    }
}

/// The buffers [`need_above`] fills for each instruction, kept for the next one.
#[derive(Default)]
struct Scratch {
    /// The values the instruction reads of the class and the pinned ones living across.
    residents: Vec<Value>,
    /// The same, none of them in a register yet, as the problem's builder takes them.
    placed: Vec<(Value, Option<u16>)>,
    built: Built,
}

/// An upper bound on [`instruction_need`] when the instruction fixes and ties nothing
/// of `class`. The values that hold both instants (pinned values living across,
/// early-clobber definitions) go at the bottom, the operands read for the last time and
/// the other definitions above them at their own instant; each group one after another by
/// decreasing (power-of-two) alignment, each rounded up to its alignment, and the upper
/// groups from the bottom group's end rounded up to the largest alignment.
fn unconstrained_bound(
    f: &Function,
    target: &Target,
    class: ClassId,
    (ops, through): (Operands, &[Value]),
) -> Option<u32> {
    let rule = target.class(class).align;
    let mut widest = 1;
    let mut rounded = |v: Value| {
        let size = f.value(v).size;
        let align = rule.alignment(size);
        widest = widest.max(align);
        align
            .is_power_of_two()
            .then(|| u32::from(size.next_multiple_of(align)))
    };
    let of_class = |v: Value| f.value(v).class == class;
    let (mut both, mut early, mut late) = (0, 0, 0);
    for d in ops.defs.iter().filter(|d| of_class(d.value)) {
        if d.fixed.is_some() || d.tied.is_some() {
            return None;
        }
        let units = rounded(d.value)?;
        if d.early_clobber {
            both += units;
        } else {
            late += units;
        }
    }
    for u in ops.operands.iter().filter_map(Operand::as_use) {
        if of_class(u.value) {
            if u.fixed.is_some() {
                return None;
            }
            early += rounded(u.value)?;
        }
    }
    for &v in through.iter().filter(|&&v| of_class(v)) {
        both += rounded(v)?;
    }
    Some(both.next_multiple_of(u32::from(widest)) + early.max(late))
}

/// The smallest budget of `class` at which the instruction fits alone, beside the pinned
/// values `through` that live across it (the class's units plus one when none does).
pub fn instruction_need(
    f: &Function,
    target: &Target,
    class: ClassId,
    ops: Operands,
    through: &[Value],
) -> u32 {
    let mut scratch = Scratch::default();
    need_above((f, target, class), (ops, through), 0, &mut scratch).unwrap_or(0)
}

/// [`instruction_need`] when it is above `floor`, else `None`. The need is the first
/// budget at which the instruction's problem fits, and fitting only grows with the budget,
/// so one test at `floor` settles most instructions (those that need no more than the
/// most demanding one found before them); the others are searched from above `floor`.
fn need_above(
    (f, target, class): (&Function, &Target, ClassId),
    (ops, through): (Operands, &[Value]),
    floor: u32,
    scratch: &mut Scratch,
) -> Option<u32> {
    let of_class = |v: &Value| f.value(*v).class == class;
    let residents = &mut scratch.residents;
    residents.clear();
    let reads = ops.operands.iter().filter_map(Operand::as_use);
    let values = reads.map(|u| u.value).chain(through.iter().copied());
    residents.extend(values.filter(of_class));
    residents.sort();
    residents.dedup();
    let writes = ops.defs.iter().any(|d| of_class(&d.value));
    if residents.is_empty() && !writes {
        return None;
    }
    // Every resident takes units of its own at the early instant: no smaller budget fits.
    let held: u32 = residents.iter().map(|&v| u32::from(f.value(v).size)).sum();
    scratch.placed.clear();
    scratch.placed.extend(residents.iter().map(|&v| (v, None)));
    let never = |v: Value| through.contains(&v);
    let units = target.class(class).units;
    let ctx = Context {
        target,
        class,
        units,
        values: &f.values,
        lives_on: &never,
    };
    // The problem is the same at every budget but for its units: built once.
    operands::build_into(&ctx, &scratch.placed, ops, &mut scratch.built);
    let problem = &mut scratch.built.problem;
    let mut fits = |k: u16| {
        problem.units = k;
        packing::fits(problem)
    };
    let lowest = u16::try_from(held).unwrap_or(u16::MAX).max(1);
    if floor >= u32::from(lowest) {
        let no_higher = match u16::try_from(floor) {
            Ok(k) if k <= units => fits(k),
            _ => true,
        };
        if no_higher {
            return None;
        }
    }
    // Here the need is above `floor`: `floor` is below `lowest`, or the problem does not
    // fit at `floor`; the search starts at the larger of `lowest` and `floor + 1`.
    let from = u16::try_from(floor + 1).map_or(lowest, |k| k.max(lowest));
    let need = (from..=units)
        .find(|&k| fits(k))
        .map_or(u32::from(units) + 1, u32::from);
    Some(need)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need_of(src: &str, class: &str) -> Need {
        let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let c = p.target.class_by_name(class).unwrap();
        lowest_legal(&p.functions[0], &p.target)[c.index()]
    }

    #[test]
    fn demand_is_uses_plus_early_or_defs() {
        let need = need_of(
            "target generic s=8 v=8
func @f {
b:
  %a:v1 = mov 1
  %b:v2 = mov 2
  %c:v1 = mad %a, %b, %a
  %d:v1, %e:v2, %g:v1 = split4 %c
  %h:v1 = add %d, %g early
  ret %h, %e
}
",
            "v",
        );
        // `split4` defines 4 units; `add` reads 2 and writes 1 early: 3; `mad` reads 3.
        assert_eq!(need.units, 4);
        assert_eq!(need.pos.line, 7);
    }

    #[test]
    fn a_fixed_register_raises_the_need_to_its_end() {
        let need = need_of(
            "target generic s=8 v=8\nfunc @f {\nb:\n  %a:v1 fixed(v5) = mov 1\n  ret %a\n}\n",
            "v",
        );
        assert_eq!(need.units, 6);
    }

    #[test]
    fn alignment_counts() {
        // Two SGPR pairs read and a single defined early: the pairs take s[0:1] and
        // s[2:3], the early single s4.
        let need = need_of(
            "target gfx9\nfunc @f {\nb:\n  %a:s2 = x\n  %b:s2 = y\n  %c:s1 = z %a, %b early\n  ret %c\n}\n",
            "s",
        );
        assert_eq!(need.units, 5);
        // A single read and a pair defined: the pair fits where the single was read.
        let need = need_of(
            "target gfx9\nfunc @f {\nb:\n  %a:s1 = x\n  %c:s2 = z %a\n  ret %c\n}\n",
            "s",
        );
        assert_eq!(need.units, 2);
    }

    #[test]
    fn a_rotation_of_phis_needs_its_two_largest_members_at_once() {
        // The loop swaps two 4-wide tuples: both are in registers at once on the back
        // edge (8 units), whatever the instructions read; phis that take their own
        // value need nothing.
        let src = "target generic v=16
func @f {
e:
  %a:v4 = x
  %b:v2 = y
  %c:v1 = z
  jump h
h:
  %p:v4 = phi [e: %a], [h: %q]
  %q:v4 = phi [e: %a], [h: %p]
  %r:v2 = phi [e: %b], [h: %r]
  %s:v1 = phi [e: %c], [h: %s]
  branch uniform %s, h, x
x:
  ret %s
}
";
        let need = need_of(src, "v");
        assert_eq!(need.units, 8);
        assert_eq!(need.pos.line, 9);
    }

    #[test]
    fn a_pinned_value_counts_at_every_instruction_it_lives_across() {
        // %acc cannot be spilled around the add: 2 operands + 4 pinned units; the mma
        // itself needs only 4 + 1.
        let src = "target generic v=16
func @f {
b:
  %acc:v4 = mov.b128 0 pinned
  %x:v1 = load 0 reads
  %y:v1 = load 1 reads
  %z:v1 = add %x, %y
  %r:v4 = mma %acc, %z tied(0) pinned
  ret %r
}
";
        let need = need_of(src, "v");
        assert_eq!((need.units, need.pos.line), (6, 7));
        let unpinned = need_of(&src.replace(" pinned", ""), "v");
        assert_eq!(unpinned.units, 5);
    }

    #[test]
    fn a_fixed_use_overwritten_by_a_fixed_def_needs_no_extra_unit_when_spilled_around() {
        // %a lives on, but at the lowest budget it is stored before and reloaded after.
        let need = need_of(
            "target generic v=8\nfunc @f {\nb:\n  %a:v1 = x\n  %c:v1 fixed(v0) = mul %a fixed(v0)\n  %d:v1 = add %a, %c\n  ret %d\n}\n",
            "v",
        );
        assert_eq!(need.units, 2, "the add reads two");
    }

    /// The lowest legal budget by its definition: every instruction's and terminator's
    /// need computed in full, the first of the largest kept; phi rotations left out.
    #[cfg(feature = "arbitrary")]
    fn lowest_by_each_need(f: &Function, target: &Target) -> Vec<Need> {
        let mut need = vec![
            Need {
                units: 0,
                pos: f.pos
            };
            target.classes.len()
        ];
        let pinned = pinned::live_across(f);
        let mut keep_largest = |c: ClassId, units: u32, pos: Pos| {
            if units > need[c.index()].units {
                need[c.index()] = Need { units, pos };
            }
        };
        for (b, block) in f.blocks.iter().enumerate() {
            for (i, inst) in block.insts.iter().enumerate() {
                let Some(op) = inst.op() else { continue };
                let ops = Operands {
                    defs: &op.defs,
                    operands: &op.operands,
                };
                let pos = op.defs.first().map(|d| d.pos);
                let pos = pos.or_else(|| op.uses().next().map(|u| u.pos));
                for c in target.class_ids() {
                    let units = instruction_need(f, target, c, ops, &pinned[b][i]);
                    keep_largest(c, units, pos.unwrap_or(inst.pos));
                }
            }
            let uses: Vec<Operand> = block
                .term
                .uses()
                .iter()
                .map(|u| Operand::Value(*u))
                .collect();
            for c in target.class_ids() {
                let units = instruction_need(f, target, c, Operands::uses_only(&uses), &[]);
                keep_largest(c, units, block.term.pos());
            }
        }
        need
    }

    #[cfg(feature = "arbitrary")]
    #[test]
    fn the_need_tested_at_the_largest_so_far_is_the_need_computed_in_full() {
        let mut raised = 0;
        for seed in 0..300 {
            let p = crate::gen::generate_from_seed(seed, &crate::gen::GenConfig::default());
            for f in p.functions.iter().filter(|f| rotations(f).is_empty()) {
                let lowest = lowest_legal(f, &p.target);
                assert_eq!(lowest, lowest_by_each_need(f, &p.target), "{}", f.name);
                raised += lowest.iter().filter(|n| n.units > 0).count();
            }
        }
        assert!(raised > 400, "needs above zero are compared: {raised}");
    }

    #[cfg(feature = "arbitrary")]
    #[test]
    fn the_unconstrained_bound_is_never_below_the_need() {
        let mut bounded = 0;
        for seed in 0..300 {
            let p = crate::gen::generate_from_seed(seed, &crate::gen::GenConfig::default());
            for f in &p.functions {
                let pinned = pinned::live_across(f);
                for (b, block) in f.blocks.iter().enumerate() {
                    for (i, op) in block.insts.iter().enumerate() {
                        let Some(op) = op.op() else { continue };
                        let ops = Operands {
                            defs: &op.defs,
                            operands: &op.operands,
                        };
                        for c in p.target.class_ids() {
                            let through = &pinned[b][i];
                            let need = instruction_need(f, &p.target, c, ops, through);
                            if let Some(bound) =
                                unconstrained_bound(f, &p.target, c, (ops, through))
                            {
                                assert!(need <= bound, "{}: {need} > {bound}", f.name);
                                bounded += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(bounded > 10_000, "the bound applies often: {bounded}");
    }
}
