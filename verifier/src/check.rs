//! The checker's entry points: structure, constraints and dataflow of one allocated
//! function against its original, or of a whole program (functions matched by name).

use crate::cfg::Cfg;
use crate::constraints::Constraints;
use crate::dataflow::Flow;
use crate::error::{ErrorKind, Point, VerifyError};
use crate::sink::Sink;
use crate::structure::check_structure;
use chromatic::{ClassId, Function, Program, Target};
use rustc_hash::FxHashMap;

/// Checks `allocated` against `original` on `target`. `budget` gives the allowed units per
/// class (in class order); `None` allows every unit of each class. Returns every error
/// found, in block order; empty when the allocation is correct.
pub fn verify(
    original: &Function,
    allocated: &Function,
    target: &Target,
    budget: Option<&[u16]>,
) -> Vec<VerifyError> {
    let units: Vec<u16> = target.classes.iter().map(|c| c.units).collect();
    let budget = budget.unwrap_or(&units);
    let mut sink = Sink::new(&allocated.name, target);
    if lacks_locations(allocated) {
        sink.report(ErrorKind::NotAllocated, "", Point::Block, allocated.pos);
        return sink.errors;
    }
    let by_name = originals_by_name(original, allocated);
    check_structure(original, allocated, &by_name, &mut sink);
    Constraints::new(target, budget).check_function(allocated, &mut sink);
    with_flow(
        original,
        allocated,
        target,
        &by_name,
        &mut sink,
        |flow, sink| flow.run(sink),
    );
    sink.errors
}

/// Builds the dataflow problem of `allocated` (reporting unknown values and unpinned phis
/// of pinned values into `sink` on the way) and hands it to `f`. `by_name` is
/// [`originals_by_name`] of the two functions.
pub(crate) fn with_flow<R>(
    original: &Function,
    allocated: &Function,
    target: &Target,
    by_name: &[Option<u32>],
    sink: &mut Sink,
    f: impl FnOnce(&Flow<'_>, &mut Sink) -> R,
) -> R {
    let canonical = congruent_phis(original);
    let value_map = map_values(allocated, by_name, &canonical, sink);
    let recompute = if has_remat(allocated) {
        recomputable(original, target, &canonical)
    } else {
        Vec::new()
    };
    let pinned = pinned_values(original);
    check_pinned_phis(original, &pinned, sink);
    let cfg = Cfg::new(allocated);
    let flow =
        Flow::new(allocated, original, target, &cfg, &value_map, &recompute).with_pinned(&pinned);
    f(&flow, sink)
}

/// Whether `a` recomputes some value (a `remat` instruction), which alone consults how
/// values may be recomputed.
fn has_remat(a: &Function) -> bool {
    a.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| matches!(i.kind, chromatic::InstKind::Remat { .. }))
}

/// Per original value: whether its definition is `pinned`.
fn pinned_values(o: &Function) -> Vec<bool> {
    let mut pinned = vec![false; o.values.len()];
    for b in &o.blocks {
        let defs = b.phis.iter().map(|p| &p.def).chain(
            b.insts
                .iter()
                .filter_map(|i| i.op())
                .flat_map(|op| &op.defs),
        );
        for d in defs.filter(|d| d.pinned) {
            pinned[d.value.index()] = true;
        }
    }
    pinned
}

/// A phi with a pinned argument holds a value still in flight: it must be pinned too.
fn check_pinned_phis(o: &Function, pinned: &[bool], sink: &mut Sink) {
    for b in &o.blocks {
        for (i, phi) in b.phis.iter().enumerate() {
            if let Some(a) = phi
                .args
                .iter()
                .find(|a| pinned[a.value.index()] && !phi.def.pinned)
            {
                sink.report(ErrorKind::PinnedPhi, &b.name, Point::Phi(i), phi.pos)
                    .found(format!("%{}", o.value(a.value).name));
            }
        }
    }
}

/// Checks every function of `original` against the allocated function of the same name.
/// An allocated program without a single location gets one error: not allocated.
pub fn verify_program(
    original: &Program,
    allocated: &Program,
    budget: Option<&[u16]>,
) -> Vec<VerifyError> {
    if let Some(first) = allocated
        .functions
        .first()
        .filter(|_| allocated.functions.iter().all(lacks_locations))
    {
        let mut sink = Sink::new(&first.name, &allocated.target);
        sink.report(ErrorKind::NotAllocated, "", Point::Block, first.pos);
        return sink.errors;
    }
    let by_name: FxHashMap<&str, &Function> = allocated
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f))
        .collect();
    let mut errors = Vec::new();
    for f in &original.functions {
        match by_name.get(f.name.as_str()) {
            Some(a) => errors.extend(verify(f, a, &original.target, budget)),
            None => {
                let mut sink = Sink::new(&f.name, &original.target);
                sink.report(ErrorKind::MissingFunction, "", Point::Block, f.pos)
                    .in_original();
                errors.extend(sink.errors);
            }
        }
    }
    errors
}

/// Whether `f` has definitions or uses, none of them with a location.
fn lacks_locations(f: &Function) -> bool {
    let mut operands = false;
    for b in &f.blocks {
        let phis = b.phis.iter().map(|p| p.def.loc);
        let ops = b.insts.iter().filter_map(|i| i.op()).flat_map(|op| {
            let defs = op.defs.iter().map(|d| d.loc);
            defs.chain(op.uses().map(|u| u.loc))
        });
        let term = b.term.uses().iter().map(|u| u.loc);
        for loc in phis.chain(ops).chain(term) {
            if loc.is_some() {
                return false;
            }
            operands = true;
        }
    }
    operands
}

/// Per allocated value, the original value of the same name, if there is one. A name
/// names one value of a function (the parser refuses a name defined twice), so comparing
/// these indices compares names.
pub(crate) fn originals_by_name(o: &Function, a: &Function) -> Vec<Option<u32>> {
    let names: FxHashMap<&str, u32> = o
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| (v.name.as_str(), i as u32))
        .collect();
    a.values
        .iter()
        .map(|v| names.get(v.name.as_str()).copied())
        .collect()
}

/// Allocated values to original values by name (`by_name`; a phi congruent to an earlier
/// one, to that one); unknown names are errors.
fn map_values(
    a: &Function,
    by_name: &[Option<u32>],
    canonical: &[u32],
    sink: &mut Sink,
) -> Vec<Option<u32>> {
    a.values
        .iter()
        .zip(by_name)
        .map(|(v, &original)| {
            let found = original.map(|o| canonical[o as usize]);
            if found.is_none() {
                sink.report(ErrorKind::UnknownValue, "", Point::Block, v.pos)
                    .found(format!("%{}", v.name));
            }
            found
        })
        .collect()
}

/// What makes two phis of one block equal: class, size, and per predecessor the
/// representative of the argument.
type PhiShape = (ClassId, u16, Vec<(usize, u32)>);

/// Per original value, a representative of the values provably equal to it: phis of one
/// block with the same class, size and (representatives of) arguments on every edge hold
/// the same value in every lane, so they may share a location. Found by refining to a
/// fixpoint from "every value its own"; other values represent themselves.
fn congruent_phis(o: &Function) -> Vec<u32> {
    let mut canonical: Vec<u32> = (0..o.values.len() as u32).collect();
    let blocks: Vec<_> = o.blocks.iter().filter(|b| b.phis.len() > 1).collect();
    let mut changed = !blocks.is_empty();
    while changed {
        changed = false;
        for block in &blocks {
            let mut first: FxHashMap<PhiShape, u32> = FxHashMap::default();
            for phi in &block.phis {
                let v = o.value(phi.def.value);
                let mut args: Vec<(usize, u32)> = phi
                    .args
                    .iter()
                    .map(|a| (a.block.index(), canonical[a.value.index()]))
                    .collect();
                args.sort_unstable();
                let me = phi.def.value.index();
                let rep = *first
                    .entry((v.class, v.size, args))
                    .or_insert(canonical[me]);
                if canonical[me] != rep {
                    canonical[me] = rep;
                    changed = true;
                }
            }
        }
    }
    canonical
}

/// How an original value may be recomputed by a `remat` instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Recompute<'f> {
    /// Not at all: an effect, a constraint, a phi, or a uniform value.
    No,
    /// Anywhere: a `remat` operation (no value operands).
    Anywhere,
    /// From the values `operands` (its value operands, in order): a pure operation of
    /// block `block` (by name), in that block, or — when it reads no fixed register
    /// (`reads_fixed`), which another block may hold another value of — wherever the
    /// operands still hold the values it read (`fresh.rs`).
    Pure {
        block: &'f str,
        reads_fixed: bool,
        operands: Vec<chromatic::Value>,
    },
    /// As a select on a branch's condition: a phi of constants of block `join`, each of
    /// `selects` naming a condition that decides it (`select.rs`).
    Select {
        join: &'f str,
        selects: Vec<crate::select::Select>,
    },
}

/// Per original value, how a `remat` may recompute it. A pure operation is one without an
/// effect whose fixed-register accesses are reads of registers its block never writes
/// (`docs/FORMAT.md`, "Order": it may run anywhere in its block after its operands, and
/// such a register holds one value throughout the block),
/// whose definitions take no fixed, tied, early-clobber or pinned constraint and are
/// per-lane, and whose operands are not fixed: running it again in its block on the same
/// operand values gives the same values, as the scheduler's freedom to move it does.
/// Operands are named by their representatives among congruent phis (`canonical`), as
/// the value map names what the allocation reads.
fn recomputable<'f>(o: &'f Function, target: &Target, canonical: &[u32]) -> Vec<Recompute<'f>> {
    let mut how = vec![Recompute::No; o.values.len()];
    for b in &o.blocks {
        let writes = written_registers(b);
        for op in b.insts.iter().filter_map(|i| i.op()) {
            let rule = if op.remat {
                Recompute::Anywhere
            } else if is_pure(o, target, op, &writes) {
                Recompute::Pure {
                    block: &b.name,
                    reads_fixed: !op.regs.is_empty(),
                    operands: op
                        .uses()
                        .map(|u| chromatic::Value(canonical[u.value.index()]))
                        .collect(),
                }
            } else {
                continue;
            };
            for d in &op.defs {
                how[d.value.index()] = rule.clone();
            }
        }
    }
    let selects = crate::select::selects(o, target);
    for b in &o.blocks {
        for phi in &b.phis {
            let mut found = selects[phi.def.value.index()].clone();
            found
                .iter_mut()
                .for_each(|s| s.cond = chromatic::Value(canonical[s.cond.index()]));
            if !found.is_empty() {
                how[phi.def.value.index()] = Recompute::Select {
                    join: &b.name,
                    selects: found,
                };
            }
        }
    }
    how
}

/// The fixed registers some operation of `block` writes or clobbers.
fn written_registers(block: &chromatic::BlockData) -> Vec<&str> {
    block
        .insts
        .iter()
        .filter_map(|i| i.op())
        .flat_map(|op| &op.regs)
        .filter(|r| r.kind != chromatic::RegAccessKind::Read)
        .map(|r| r.reg.as_str())
        .collect()
}

fn is_pure(o: &Function, target: &Target, op: &chromatic::Op, block_writes: &[&str]) -> bool {
    op.effect == chromatic::Effect::None
        && op.regs.iter().all(|r| {
            r.kind == chromatic::RegAccessKind::Read && !block_writes.contains(&r.reg.as_str())
        })
        && op.uses().all(|u| u.fixed.is_none())
        && op.defs.iter().all(|d| {
            d.fixed.is_none()
                && d.tied.is_none()
                && !d.early_clobber
                && !d.pinned
                && !target.class(o.value(d.value).class).uniform
        })
}
