//! Sequentialising a parallel copy into moves, swaps and (rarely) a temporary spill.
//!
//! The classic algorithm (Boissinot et al., "Revisiting Out-of-SSA Translation for
//! Correctness, Code Quality, and Efficiency", CGO 2009; Mesa ACO's `handle_operands`),
//! done per register unit so that tuples whose ranges overlap partially are handled
//! exactly: repeatedly emit every move whose destination no pending move still reads;
//! what remains are cycles. A cycle whose destination's old content was already copied to
//! a destination written earlier (a value moved to several places) reads it from there;
//! others are broken by a `swap` where the class has one, else by saving one destination
//! in a free unit of the class, else in a free unit of the class's copy-temporary class
//! (an AMD AGPR in a VGPR, as LLVM's `SIInstrInfo::copyPhysReg` goes through one), else
//! by recomputing a rematerialisable value of the copy at its destinations once every
//! other move has run (its moves leave the copy, so no one reads the units it held;
//! Briggs, Cooper & Torczon, "Rematerialization", PLDI 1992), else in a temporary memory
//! slot. Consecutive unit moves of one value are merged back into tuple moves, and no
//! move has its source equal to its destination.

use crate::program::{InstKind, Location, Move, Value};
use crate::target::{ClassId, Target};

/// Where a unit's old content can be read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Unit(u16),
    Slot(u32),
    /// A unit of another class (the class's `copy_temp`).
    Other(ClassId, u16),
}

#[derive(Clone, Copy, Debug)]
struct UnitMove {
    class: ClassId,
    dst: u16,
    src: Src,
    value: Value,
}

/// Lowers `moves` (distinct destinations, register locations) into a sequence of
/// instructions with the same effect on the destinations and on the `busy` units.
/// `busy(class, unit)` says whether a unit holds a value that must survive the copy (it
/// may not be used as a temporary); a unit a move only reads is not busy unless the
/// caller says so: once every move reading it has run, it may serve as a temporary.
/// `recomputable(value)` says whether a `remat` operation defines the value, so that a
/// cycle may recompute it instead of saving it. `temp_slot` is the first of the memory
/// slots free at this point.
pub fn sequentialise(
    moves: &[Move],
    target: &Target,
    busy: &dyn Fn(ClassId, u16) -> bool,
    recomputable: &dyn Fn(Value) -> bool,
    temp_slot: u32,
) -> Vec<InstKind> {
    let mut pending = expand(moves);
    if !pending.iter().any(|m| is_read(&pending, m)) {
        return merged_in_order(&pending);
    }
    let means = Means {
        target,
        held: Held { busy, moves },
        recomputable,
        temp_slot,
    };
    let mut out: Vec<InstKind> = Vec::with_capacity(pending.len());
    let mut recomputed: Vec<InstKind> = Vec::new();
    let mut written: Vec<UnitMove> = Vec::with_capacity(pending.len());
    let mut read: Vec<bool> = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        read.clear();
        read.extend(pending.iter().map(|m| is_read(&pending, m)));
        if read.contains(&false) {
            for (m, _) in pending.iter().zip(&read).filter(|(_, &r)| !r) {
                push_merged(&mut out, emit(m));
                written.push(*m);
            }
            let mut still_read = read.iter();
            pending.retain(|_| still_read.next() == Some(&true));
            continue;
        }
        if !read_from_copy(&mut pending, &written) {
            break_cycle(&mut pending, (&mut out, &mut recomputed), &means);
        }
    }
    out.extend(recomputed);
    out
}

/// Whether a pending move still reads the unit `m` writes.
fn is_read(pending: &[UnitMove], m: &UnitMove) -> bool {
    pending
        .iter()
        .any(|o| o.class == m.class && o.src == Src::Unit(m.dst))
}

/// Moves none of which reads another's destination, in their order: what the general
/// loop makes of them in one round, merged as it merges them.
fn merged_in_order(units: &[UnitMove]) -> Vec<InstKind> {
    let mut out: Vec<InstKind> = Vec::with_capacity(units.len());
    for m in units {
        push_merged(&mut out, emit(m));
    }
    out
}

fn expand(moves: &[Move]) -> Vec<UnitMove> {
    let mut units = Vec::with_capacity(moves.len());
    for m in moves {
        if let (
            Location::Reg {
                class,
                first: d,
                len,
            },
            Location::Reg { first: s, .. },
        ) = (m.dst, m.src)
        {
            for k in 0..len {
                if d + k != s + k {
                    units.push(UnitMove {
                        class,
                        dst: d + k,
                        src: Src::Unit(s + k),
                        value: m.value,
                    });
                }
            }
        }
    }
    units
}

fn reg(class: ClassId, unit: u16) -> Location {
    Location::Reg {
        class,
        first: unit,
        len: 1,
    }
}

fn emit(m: &UnitMove) -> InstKind {
    match m.src {
        Src::Unit(s) => InstKind::ParallelCopy(vec![Move {
            dst: reg(m.class, m.dst),
            src: reg(m.class, s),
            value: m.value,
        }]),
        Src::Other(class, s) => InstKind::ParallelCopy(vec![Move {
            dst: reg(m.class, m.dst),
            src: reg(class, s),
            value: m.value,
        }]),
        Src::Slot(slot) => InstKind::Reload(Move {
            dst: reg(m.class, m.dst),
            src: Location::Slot {
                first: slot,
                len: 1,
            },
            value: m.value,
        }),
    }
}

/// Every pending destination is still read: when the old content of one of them was
/// copied already to a destination written earlier (a value moved to several places),
/// the cycle reads it from there, with no swap and no temporary. Returns whether it did.
fn read_from_copy(pending: &mut [UnitMove], written: &[UnitMove]) -> bool {
    let copy = pending.iter().find_map(|m| {
        written
            .iter()
            .find(|w| w.class == m.class && w.src == Src::Unit(m.dst))
            .map(|w| (m.class, m.dst, w.dst))
    });
    let Some((class, dst, copy)) = copy else {
        return false;
    };
    for o in pending
        .iter_mut()
        .filter(|o| o.class == class && o.src == Src::Unit(dst))
    {
        o.src = Src::Unit(copy);
    }
    true
}

/// What a cycle may be broken with.
struct Means<'a> {
    target: &'a Target,
    held: Held<'a>,
    recomputable: &'a dyn Fn(Value) -> bool,
    temp_slot: u32,
}

/// Every pending destination is still read: break a cycle at a move that reads a unit,
/// or take a recomputable value's moves out of the copy and recompute it after the rest
/// (into `recomputed`).
fn break_cycle(
    pending: &mut Vec<UnitMove>,
    (out, recomputed): (&mut Vec<InstKind>, &mut Vec<InstKind>),
    means: &Means,
) {
    let Some(at) = pending.iter().position(|m| matches!(m.src, Src::Unit(_))) else {
        return;
    };
    let m = pending[at];
    let Src::Unit(src) = m.src else {
        return;
    };
    let same_class = move |o: &UnitMove| o.class == m.class;
    if means.target.class(m.class).has_swap {
        push_merged(out, InstKind::Swap(reg(m.class, m.dst), reg(m.class, src)));
        pending.remove(at);
        for o in pending.iter_mut().filter(|o| same_class(o)) {
            if o.src == Src::Unit(src) {
                o.src = Src::Unit(m.dst);
            } else if o.src == Src::Unit(m.dst) {
                o.src = Src::Unit(src);
            }
        }
        pending.retain(|o| o.src != Src::Unit(o.dst));
        return;
    }
    let old = occupant_value(pending, m.class, m.dst);
    let to = match free_temporary(pending, m.class, means) {
        Some((class, t)) => {
            push_merged(
                out,
                InstKind::ParallelCopy(vec![Move {
                    dst: reg(class, t),
                    src: reg(m.class, m.dst),
                    value: old,
                }]),
            );
            if class == m.class {
                Src::Unit(t)
            } else {
                Src::Other(class, t)
            }
        }
        None if recompute_later(pending, recomputed, means) => return,
        None => {
            let slot = next_temp_slot(out, means.target, m.class, means.temp_slot);
            push_merged(
                out,
                InstKind::Spill(Move {
                    dst: Location::Slot {
                        first: slot,
                        len: 1,
                    },
                    src: reg(m.class, m.dst),
                    value: old,
                }),
            );
            Src::Slot(slot)
        }
    };
    for o in pending
        .iter_mut()
        .filter(|o| same_class(o) && o.src == Src::Unit(m.dst))
    {
        o.src = to;
    }
}

/// A free unit of `class`, else of its copy-temporary class.
fn free_temporary(pending: &[UnitMove], class: ClassId, means: &Means) -> Option<(ClassId, u16)> {
    let other = || {
        let temp = means.target.class(class).copy_temp?;
        means
            .held
            .free_unit(temp, means.target, pending)
            .map(|t| (temp, t))
    };
    means
        .held
        .free_unit(class, means.target, pending)
        .map(|t| (class, t))
        .or_else(other)
}

/// Takes the moves of the recomputable value with the most pending unit moves (the first
/// of them on a tie: one recomputation breaks every cycle through its units) out of the
/// copy and recomputes the value at each destination they wrote, after every other move
/// (into `recomputed`); no pending move reads the units they read any more. Returns
/// whether a value was found.
fn recompute_later(
    pending: &mut Vec<UnitMove>,
    recomputed: &mut Vec<InstKind>,
    means: &Means,
) -> bool {
    let units_of = |v: Value| pending.iter().filter(|o| o.value == v).count();
    let mut best: Option<(Value, usize)> = None;
    for v in pending.iter().map(|o| o.value) {
        let units = units_of(v);
        if (means.recomputable)(v) && best.is_none_or(|(_, most)| units > most) {
            best = Some((v, units));
        }
    }
    let Some((value, _)) = best else {
        return false;
    };
    let writes = |dst: Location, o: &UnitMove| match dst {
        Location::Reg { class, first, len } => {
            o.class == class && (first..first + len).contains(&o.dst)
        }
        _ => false,
    };
    for m in means.held.moves.iter().filter(|m| m.value == value) {
        if pending.iter().any(|o| o.value == value && writes(m.dst, o)) {
            recomputed.push(InstKind::Remat {
                dst: m.dst,
                value,
                uses: Vec::new(),
            });
        }
    }
    pending.retain(|o| o.value != value);
    true
}

/// The memory slot for a new copy temporary of `class`: one no earlier temporary of the
/// sequence uses, even for per-lane classes and odd for uniform ones, so that no slot takes
/// both whole-wave and per-lane stores (`docs/FORMAT.md`).
fn next_temp_slot(out: &[InstKind], target: &Target, class: ClassId, first: u32) -> u32 {
    let uniform = |c: ClassId| target.class(c).uniform;
    let same_kind = |i: &&InstKind| match i {
        InstKind::Spill(m) => m.src.reg_class().map(uniform) == Some(uniform(class)),
        _ => false,
    };
    let earlier = out.iter().filter(same_kind).count() as u32;
    first + 2 * earlier + u32::from(uniform(class))
}

/// The value a pending move reads from `unit` (the content about to be overwritten).
fn occupant_value(pending: &[UnitMove], class: ClassId, unit: u16) -> Value {
    pending
        .iter()
        .find(|o| o.class == class && o.src == Src::Unit(unit))
        .map_or(Value(0), |o| o.value)
}

/// What a cycle's temporary must avoid, midway through a sequence.
struct Held<'a> {
    /// Units holding values that survive the copy.
    busy: &'a dyn Fn(ClassId, u16) -> bool,
    /// The parallel copy: its destinations hold, or will hold, their final content (an
    /// identity move's too, which leaves no unit move).
    moves: &'a [Move],
}

impl Held<'_> {
    /// The lowest unit of `class` that is not busy, that no `pending` move reads (as a
    /// unit of its own class or as a temporary of another) and no move writes. A unit
    /// that moves only read is free once they ran.
    fn free_unit(&self, class: ClassId, target: &Target, pending: &[UnitMove]) -> Option<u16> {
        let touched = |u: u16| {
            pending.iter().any(|o| {
                (o.class == class && o.src == Src::Unit(u)) || o.src == Src::Other(class, u)
            }) || self.moves.iter().any(|m| match m.dst {
                Location::Reg {
                    class: c,
                    first,
                    len,
                } => c == class && (first..first + len).contains(&u),
                _ => false,
            })
        };
        (0..target.class(class).units).find(|&u| !(self.busy)(class, u) && !touched(u))
    }
}

/// Appends `inst` to `out`, merged into the last instruction when both are single-unit
/// copies [`extend`] joins: runs of single-unit copies of one value whose destinations and
/// sources are both consecutive, when the later move does not read what the earlier one
/// wrote, become one tuple move.
fn push_merged(out: &mut Vec<InstKind>, inst: InstKind) {
    if let (Some(InstKind::ParallelCopy(prev)), InstKind::ParallelCopy(next)) =
        (out.last_mut(), &inst)
    {
        if let ([p], [n]) = (&mut prev[..], &next[..]) {
            if let Some(merged) = extend(p, n) {
                *p = merged;
                return;
            }
        }
    }
    out.push(inst);
}

fn extend(p: &Move, n: &Move) -> Option<Move> {
    let (
        Location::Reg {
            class,
            first: pd,
            len,
        },
        Location::Reg {
            class: src_class,
            first: ps,
            ..
        },
        Location::Reg {
            class: nc,
            first: nd,
            len: 1,
        },
        Location::Reg {
            class: nsc,
            first: ns,
            ..
        },
    ) = (p.dst, p.src, n.dst, n.src)
    else {
        return None;
    };
    let reads_written = src_class == class && (pd..pd + len).contains(&ns);
    let consecutive =
        nc == class && nsc == src_class && nd == pd + len && ns == ps + len && n.value == p.value;
    (consecutive && !reads_written).then(|| Move {
        dst: Location::Reg {
            class,
            first: pd,
            len: len + 1,
        },
        src: Location::Reg {
            class: src_class,
            first: ps,
            len: len + 1,
        },
        value: p.value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{QuickCheck, TestResult};
    use std::collections::BTreeMap;

    fn target(swap: bool) -> Target {
        let spec = if swap { "v=12" } else { "v=12:noswap" };
        Target::generic(spec).unwrap()
    }

    fn mv(d: u16, s: u16, len: u16, v: u32) -> Move {
        let c = ClassId(0);
        Move {
            dst: Location::Reg {
                class: c,
                first: d,
                len,
            },
            src: Location::Reg {
                class: c,
                first: s,
                len,
            },
            value: Value(v),
        }
    }

    /// Runs `insts` on a register file of tokens (plus memory slots) and returns it.
    fn simulate(insts: &[InstKind], mut regs: Vec<u32>) -> Vec<u32> {
        let mut slots = std::collections::BTreeMap::new();
        let unit = |l: Location| match l {
            Location::Reg { first, .. } => usize::from(first),
            _ => unreachable!("register expected"),
        };
        for inst in insts {
            match inst {
                InstKind::ParallelCopy(ms) => {
                    let reads: Vec<Vec<u32>> = ms
                        .iter()
                        .map(|m| {
                            (0..m.src.len())
                                .map(|k| regs[unit(m.src) + usize::from(k)])
                                .collect()
                        })
                        .collect();
                    for (m, r) in ms.iter().zip(reads) {
                        for (k, t) in r.into_iter().enumerate() {
                            regs[unit(m.dst) + k] = t;
                        }
                    }
                }
                InstKind::Swap(a, b) => regs.swap(unit(*a), unit(*b)),
                InstKind::Spill(m) => {
                    slots.insert(m.dst, regs[unit(m.src)]);
                }
                InstKind::Reload(m) => regs[unit(m.dst)] = slots[&m.src],
                InstKind::Op(_) | InstKind::Remat { .. } => unreachable!("not emitted"),
            }
        }
        regs
    }

    fn parallel(moves: &[Move], regs: &[u32]) -> Vec<u32> {
        simulate(&[InstKind::ParallelCopy(moves.to_vec())], regs.to_vec())
    }

    /// Sequentialises `moves` and compares with the parallel semantics on every unit a
    /// move writes (a unit moves only read is not busy: it may serve as a temporary),
    /// and on every unit when all units are busy (no temporaries allowed).
    fn check(moves: &[Move], swap: bool, busy_all: bool) -> Vec<InstKind> {
        let regs: Vec<u32> = (100..112).collect();
        let t = target(swap);
        let busy = |_: ClassId, _: u16| busy_all;
        let seq = sequentialise(moves, &t, &busy, &|_| false, 0);
        let (got, want) = (simulate(&seq, regs.clone()), parallel(moves, &regs));
        let written = |u: usize| {
            moves.iter().any(|m| match m.dst {
                Location::Reg { first, len, .. } => {
                    (usize::from(first)..usize::from(first + len)).contains(&u)
                }
                _ => false,
            })
        };
        for u in 0..regs.len() {
            if busy_all || written(u) {
                assert_eq!(got[u], want[u], "unit {u}: {seq:?}");
            }
        }
        seq
    }

    #[test]
    fn three_cycle_with_swaps_takes_two_swaps() {
        let seq = check(
            &[mv(0, 1, 1, 0), mv(1, 2, 1, 1), mv(2, 0, 1, 2)],
            true,
            false,
        );
        assert_eq!(
            seq.iter()
                .filter(|i| matches!(i, InstKind::Swap(..)))
                .count(),
            2
        );
        assert_eq!(seq.len(), 2);
    }

    #[test]
    fn four_cycle_takes_three_swaps_or_five_copies() {
        let cycle = [
            mv(0, 1, 1, 0),
            mv(1, 2, 1, 1),
            mv(2, 3, 1, 2),
            mv(3, 0, 1, 3),
        ];
        let swaps = check(&cycle, true, false);
        assert_eq!(swaps.len(), 3);
        assert!(swaps.iter().all(|i| matches!(i, InstKind::Swap(..))));
        let copies = check(&cycle, false, false);
        assert_eq!(copies.len(), 5, "4 moves + 1 save: {copies:?}");
        assert!(copies
            .iter()
            .all(|i| matches!(i, InstKind::ParallelCopy(m) if m.len() == 1)));
    }

    #[test]
    fn cycle_without_swap_uses_a_free_register() {
        let seq = check(&[mv(0, 1, 1, 0), mv(1, 0, 1, 1)], false, false);
        assert_eq!(seq.len(), 3);
        assert!(seq.iter().all(|i| matches!(i, InstKind::ParallelCopy(_))));
    }

    #[test]
    fn cycle_without_swap_or_free_register_uses_a_slot() {
        let seq = check(
            &[mv(0, 1, 1, 0), mv(1, 2, 1, 1), mv(2, 0, 1, 2)],
            false,
            true,
        );
        assert!(matches!(seq[0], InstKind::Spill(_)));
        assert!(seq.iter().any(|i| matches!(i, InstKind::Reload(_))));
    }

    /// gfx942: two AGPRs exchanged with every AGPR busy go through a free VGPR (the AGPRs'
    /// copy temporary), not memory; with every VGPR busy too, through a slot.
    #[test]
    fn agpr_cycle_with_no_agpr_free_goes_through_a_vgpr() {
        let t = Target::builtin("gfx942").unwrap();
        let (v, a) = (ClassId(1), ClassId(2));
        let areg = |u: u16| reg(a, u);
        let moves = [
            Move {
                dst: areg(0),
                src: areg(1),
                value: Value(0),
            },
            Move {
                dst: areg(1),
                src: areg(0),
                value: Value(1),
            },
        ];
        let agprs_busy = |c: ClassId, _: u16| c == a;
        let seq = sequentialise(&moves, &t, &agprs_busy, &|_| false, 0);
        let held = Move {
            dst: reg(v, 0),
            src: areg(0),
            value: Value(1),
        };
        assert_eq!(seq.len(), 3, "{seq:?}");
        assert_eq!(seq[0], InstKind::ParallelCopy(vec![held]));
        let back = |i: &InstKind| matches!(i, InstKind::ParallelCopy(m) if m[0].src == reg(v, 0) && m[0].dst == areg(1));
        assert!(back(&seq[2]), "{seq:?}");
        let all_busy = |_: ClassId, _: u16| true;
        let seq = sequentialise(&moves, &t, &all_busy, &|_| false, 0);
        assert!(matches!(seq[0], InstKind::Spill(_)), "{seq:?}");
    }

    /// A full file but for a unit a chain move reads: once that move ran, the unit breaks
    /// the cycle, with no slot.
    #[test]
    fn cycle_uses_a_unit_an_earlier_move_only_read() {
        let moves = [mv(0, 1, 1, 0), mv(1, 0, 1, 1), mv(3, 2, 1, 2)];
        let regs: Vec<u32> = (100..112).collect();
        let busy = |_: ClassId, u: u16| u != 2;
        let seq = sequentialise(&moves, &target(false), &busy, &|_| false, 0);
        assert_eq!(seq.len(), 4, "{seq:?}");
        assert!(seq.iter().all(|i| matches!(i, InstKind::ParallelCopy(_))));
        let (got, want) = (simulate(&seq, regs.clone()), parallel(&moves, &regs));
        assert_eq!((got[0], got[1], got[3]), (want[0], want[1], want[3]));
        assert_eq!(got[4..], want[4..]);
    }

    /// Two values exchanged, each also copied elsewhere (a loop's back edge, predicates
    /// with no swap and no free register): the exchange reads the copies.
    #[test]
    fn cycle_whose_values_were_copied_elsewhere_reads_the_copies() {
        let moves = [
            mv(1, 4, 1, 0),
            mv(2, 6, 1, 1),
            mv(6, 4, 1, 0),
            mv(4, 6, 1, 1),
        ];
        for swap in [false, true] {
            let seq = check(&moves, swap, true);
            assert_eq!(seq.len(), 4, "{seq:?}");
            assert!(seq.iter().all(|i| matches!(i, InstKind::ParallelCopy(_))));
        }
    }

    /// A full file without a swap (the copy before an instruction that reads a constant
    /// in a fixed register that holds another value): the constant is recomputed at its
    /// destination after the other moves, with no slot.
    #[test]
    fn cycle_through_a_full_file_recomputes_a_remat_value_instead_of_a_slot() {
        let moves = [mv(0, 2, 2, 0), mv(2, 0, 1, 1), mv(3, 1, 1, 2)];
        let recomputable = |v: Value| v == Value(0);
        let seq = sequentialise(&moves, &target(false), &|_, _| true, &recomputable, 0);
        let copies = |i: &InstKind| matches!(i, InstKind::ParallelCopy(_));
        assert_eq!(seq.len(), 3, "{seq:?}");
        assert!(seq[..2].iter().all(copies), "{seq:?}");
        let remat = InstKind::Remat {
            dst: moves[0].dst,
            value: Value(0),
            uses: Vec::new(),
        };
        assert_eq!(seq[2], remat);
        let (regs, after) = (
            (100..112).collect::<Vec<u32>>(),
            simulate(&seq[..2], (100..112).collect()),
        );
        assert_eq!(after[2..4], parallel(&moves, &regs)[2..4]);
    }

    #[test]
    fn tuples_move_whole_and_chains_order_correctly() {
        let seq = check(&[mv(4, 0, 4, 0), mv(0, 8, 2, 1)], true, false);
        assert_eq!(seq.len(), 2);
        assert!(matches!(&seq[0], InstKind::ParallelCopy(m) if m[0].dst.len() == 4));
    }

    #[test]
    fn overlapping_tuple_shift_is_exact() {
        check(&[mv(1, 0, 4, 0)], true, false);
        check(&[mv(0, 1, 4, 0)], false, false);
        check(&[mv(2, 0, 4, 0), mv(0, 4, 2, 1)], false, true);
    }

    #[test]
    fn fan_out_and_identity_moves() {
        let seq = check(
            &[mv(3, 3, 1, 0), mv(4, 1, 1, 1), mv(5, 1, 1, 1)],
            true,
            false,
        );
        assert_eq!(seq.len(), 2, "no move from a register to itself");
    }

    /// A whole-wave store of a uniform temporary must not share a slot with a per-lane one
    /// (`docs/FORMAT.md`): per-lane temporaries take even slots, uniform ones odd.
    #[test]
    fn uniform_and_per_lane_temporaries_take_different_slots() {
        let t = Target::generic("s=4:uniform:noswap v=4:noswap").unwrap();
        let (s, v) = (ClassId(0), ClassId(1));
        assert!(t.class(s).uniform && !t.class(v).uniform);
        let reg = |class, first| Location::Reg {
            class,
            first,
            len: 1,
        };
        let exchange = |class, a: u16, value| {
            [(a, a + 1), (a + 1, a)].map(|(d, from)| Move {
                dst: reg(class, d),
                src: reg(class, from),
                value: Value(value + u32::from(d)),
            })
        };
        let moves = [exchange(s, 0, 0), exchange(v, 0, 4), exchange(v, 2, 8)].concat();
        let seq = sequentialise(&moves, &t, &|_, _| true, &|_| false, 10);
        let mut slots: Vec<(ClassId, u32)> = seq
            .iter()
            .filter_map(|i| match i {
                InstKind::Spill(m) => match (m.src, m.dst) {
                    (Location::Reg { class, .. }, Location::Slot { first, .. }) => {
                        Some((class, first))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        slots.sort_by_key(|&(_, slot)| slot);
        assert_eq!(slots, [(v, 10), (s, 11), (v, 12)], "{seq:?}");
    }

    fn random_parallel_copy(spec: Vec<(u8, u8, u8)>, swap: bool, busy: bool) -> TestResult {
        let mut moves: Vec<Move> = Vec::new();
        let mut written = [false; 12];
        for (i, (d, s, len)) in spec.into_iter().enumerate() {
            let len = u16::from(len % 3) + 1;
            let (d, s) = (u16::from(d) % (13 - len), u16::from(s) % (13 - len));
            let range = usize::from(d)..usize::from(d + len);
            if written[range.clone()].iter().any(|&w| w) {
                continue;
            }
            written[range].iter_mut().for_each(|w| *w = true);
            moves.push(mv(d, s, len, i as u32));
        }
        check(&moves, swap, busy);
        TestResult::passed()
    }

    /// Runs `insts` on registers of every class (keyed by class and unit) and slots.
    fn simulate_classes(insts: &[InstKind], regs: &mut BTreeMap<(ClassId, u16), u32>) {
        let mut slots = BTreeMap::new();
        let units = |l: Location| match l {
            Location::Reg { class, first, len } => {
                (first..first + len).map(|u| (class, u)).collect()
            }
            _ => Vec::new(),
        };
        for inst in insts {
            match inst {
                InstKind::ParallelCopy(ms) => {
                    let reads: Vec<Vec<u32>> = ms
                        .iter()
                        .map(|m| units(m.src).iter().map(|k| regs[k]).collect())
                        .collect();
                    for (m, r) in ms.iter().zip(reads) {
                        for (k, t) in units(m.dst).into_iter().zip(r) {
                            regs.insert(k, t);
                        }
                    }
                }
                InstKind::Spill(m) => {
                    slots.insert(m.dst, regs[&units(m.src)[0]]);
                }
                InstKind::Reload(m) => {
                    regs.insert(units(m.dst)[0], slots[&m.src]);
                }
                InstKind::Swap(..) | InstKind::Op(_) | InstKind::Remat { .. } => {
                    unreachable!("not emitted for AGPRs: {inst:?}")
                }
            }
        }
    }

    /// Random AGPR permutations on gfx942 with every AGPR busy and the first `taken`
    /// VGPRs busy: the sequence has the parallel effect, breaks cycles through the first
    /// free VGPR, and never through memory while one is free.
    fn random_agpr_cycles(perm: Vec<u8>, taken: u8) -> TestResult {
        let t = Target::builtin("gfx942").unwrap();
        let (v, a) = (ClassId(1), ClassId(2));
        let mut order: Vec<u16> = (0..8).collect();
        for (i, p) in perm.iter().enumerate().take(8) {
            order.swap(i, usize::from(*p % 8));
        }
        let moves: Vec<Move> = order
            .iter()
            .enumerate()
            .filter(|&(d, &src)| d as u16 != src)
            .map(|(d, &src)| Move {
                dst: reg(a, d as u16),
                src: reg(a, src),
                value: Value(u32::from(src)),
            })
            .collect();
        let taken = u16::from(taken % 4);
        let busy = |c: ClassId, u: u16| c == a || u < taken;
        let seq = sequentialise(&moves, &t, &busy, &|_| false, 0);
        let mut regs: BTreeMap<(ClassId, u16), u32> = (0..8)
            .map(|u| ((a, u), 100 + u32::from(u)))
            .chain((0..4).map(|u| ((v, u), 200 + u32::from(u))))
            .collect();
        let mut want = regs.clone();
        simulate_classes(&seq, &mut regs);
        simulate_classes(&[InstKind::ParallelCopy(moves)], &mut want);
        for u in 0..8 {
            assert_eq!(regs[&(a, u)], want[&(a, u)], "a{u}: {seq:?}");
        }
        for u in 0..taken {
            assert_eq!(regs[&(v, u)], want[&(v, u)], "busy v{u} written: {seq:?}");
        }
        assert!(
            !seq.iter().any(|i| matches!(i, InstKind::Spill(_))),
            "{seq:?}"
        );
        TestResult::passed()
    }

    #[test]
    fn random_agpr_cycles_go_through_a_free_vgpr() {
        QuickCheck::new()
            .tests(1000)
            .quickcheck(random_agpr_cycles as fn(Vec<u8>, u8) -> TestResult);
    }

    #[test]
    fn random_parallel_copies_sequentialise_exactly() {
        QuickCheck::new()
            .tests(3000)
            .quickcheck(random_parallel_copy as fn(Vec<(u8, u8, u8)>, bool, bool) -> TestResult);
    }
}
