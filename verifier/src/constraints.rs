//! Local rules on locations, one instruction at a time: class, size, range, budget and
//! alignment of every operand location; fixed, tied and early-clobber constraints; the
//! shape of moves, swaps, lane and remat locations; no storage written twice by one
//! parallel copy, no swap of overlapping locations. These checks always run (regalloc2's
//! checker effectively skipped reuse and early-def checks).

use crate::error::{ErrorKind, Point};
use crate::sink::{Operand, Sink};
use crate::unit::{units, Unit};
use chromatic::{
    BlockData, ClassId, Function, InstKind, Location, Move, Op, Pos, SpillTarget, Target, Use,
    Value,
};
use rustc_hash::FxHashSet;

/// The storage one parallel copy has written so far. A lane of a register is part of that
/// register's storage, so writing both overlaps. One is kept for a whole function and
/// cleared before each copy, so its tables are allocated once.
#[derive(Default)]
struct Written {
    units: FxHashSet<Unit>,
    registers_by_lane: FxHashSet<(u8, u16)>,
}

impl Written {
    /// Forgets what the previous copy wrote.
    fn clear(&mut self) {
        self.units.clear();
        self.registers_by_lane.clear();
    }

    /// Records `loc`; whether it overlaps what was written before.
    fn overlaps(&mut self, loc: Location) -> bool {
        let mut overlap = false;
        for u in units(loc) {
            overlap |= match u {
                Unit::Reg(c, r) => self.registers_by_lane.contains(&(c, r)),
                Unit::Lane(c, r, _) => {
                    self.registers_by_lane.insert((c, r));
                    self.units.contains(&Unit::Reg(c, r))
                }
                Unit::Slot(_) => false,
            };
            overlap |= !self.units.insert(u);
        }
        overlap
    }
}

/// A broken rule and a note on it.
type Violation = (ErrorKind, String);

/// Where a location sits, for messages.
#[derive(Clone, Copy)]
struct Here<'b> {
    block: &'b str,
    point: Point,
    pos: Pos,
}

pub(crate) struct Constraints<'a> {
    target: &'a Target,
    budget: &'a [u16],
    /// Lane slots per register of each class (`None`: the class holds no lane spills).
    lanes: Vec<Option<u16>>,
}

impl<'a> Constraints<'a> {
    pub fn new(target: &'a Target, budget: &'a [u16]) -> Constraints<'a> {
        let mut lanes = vec![None; target.classes.len()];
        for c in &target.classes {
            for s in &c.spill {
                if let SpillTarget::Lanes { class, lanes: n } = *s {
                    lanes[class.index()] = Some(n);
                }
            }
        }
        Constraints {
            target,
            budget,
            lanes,
        }
    }

    pub fn check_function(&self, f: &Function, sink: &mut Sink) {
        let mut written = Written::default();
        for b in &f.blocks {
            self.check_block(f, b, &mut written, sink);
        }
    }

    fn check_block(&self, f: &Function, b: &BlockData, written: &mut Written, sink: &mut Sink) {
        for (i, phi) in b.phis.iter().enumerate() {
            let here = Here {
                block: &b.name,
                point: Point::Phi(i),
                pos: phi.pos,
            };
            match phi.def.loc {
                Some(loc @ (Location::Slot { .. } | Location::Lane { .. })) => {
                    self.memory_phi_loc(f, &here, phi.def.value, loc, sink)
                }
                loc => {
                    self.value_loc(
                        f,
                        &here,
                        Operand::Named("phi def"),
                        phi.def.value,
                        loc,
                        sink,
                    );
                }
            }
        }
        for (i, inst) in b.insts.iter().enumerate() {
            let here = Here {
                block: &b.name,
                point: Point::Inst(i),
                pos: inst.pos,
            };
            match &inst.kind {
                InstKind::Op(op) => self.check_op(f, &here, op, sink),
                kind => self.check_artefact(f, &here, kind, written, sink),
            }
        }
        let here = Here {
            block: &b.name,
            point: Point::Term,
            pos: b.term.pos(),
        };
        for (k, u) in b.term.uses().iter().enumerate() {
            self.check_use(f, &here, Operand::Use(k), u, sink);
        }
    }

    fn check_op(&self, f: &Function, here: &Here, op: &Op, sink: &mut Sink) {
        for (k, operand) in op.operands.iter().enumerate() {
            if let Some(u) = operand.as_use() {
                self.check_use(f, here, Operand::Use(k), u, sink);
            }
        }
        for (k, d) in op.defs.iter().enumerate() {
            let name = Operand::Def(k);
            let at_def = Here {
                pos: d.pos,
                ..*here
            };
            let Some(loc) = self.value_loc(f, &at_def, name, d.value, d.loc, sink) else {
                continue;
            };
            let mut fail = |kind, expected: Option<Location>, note: Option<String>| {
                let e = sink.report(kind, here.block, here.point, d.pos);
                e.operand(name.to_string())
                    .location(sink_loc(self.target, loc));
                if let Some(x) = expected {
                    e.expected(sink_loc(self.target, x));
                }
                if let Some(n) = note {
                    e.note(n);
                }
            };
            if d.fixed.is_some_and(|x| x != loc) {
                fail(ErrorKind::FixedViolated, d.fixed, None);
            }
            if let Some(t) = d.tied {
                let tied = op.operands.get(usize::from(t)).and_then(|o| o.as_use());
                if tied.and_then(|u| u.loc) != Some(loc) {
                    let note = format!("operand {t}");
                    fail(
                        ErrorKind::TiedViolated,
                        tied.and_then(|u| u.loc),
                        Some(note),
                    );
                }
            }
            if d.early_clobber && op.uses().filter_map(|u| u.loc).any(|u| overlaps(u, loc)) {
                fail(ErrorKind::EarlyClobberOverlap, None, None);
            }
            let earlier = op.defs[..k].iter().filter_map(|x| x.loc);
            if earlier.clone().any(|x| overlaps(x, loc)) {
                fail(ErrorKind::DefsOverlap, None, None);
            }
        }
    }

    fn check_use(&self, f: &Function, here: &Here, name: Operand, u: &Use, sink: &mut Sink) {
        let at_use = Here {
            pos: u.pos,
            ..*here
        };
        let Some(loc) = self.value_loc(f, &at_use, name, u.value, u.loc, sink) else {
            return;
        };
        if let Some(fixed) = u.fixed.filter(|&x| x != loc) {
            sink.report(ErrorKind::FixedViolated, here.block, here.point, u.pos)
                .operand(name.to_string())
                .location(sink_loc(self.target, loc))
                .expected(sink_loc(self.target, fixed));
        }
    }

    /// Class, size, range, budget and alignment of a value's location; returns it when
    /// present and a register.
    fn value_loc(
        &self,
        f: &Function,
        here: &Here,
        name: Operand,
        value: Value,
        loc: Option<Location>,
        sink: &mut Sink,
    ) -> Option<Location> {
        let v = f.value(value);
        let mut fail = |kind, loc: Option<Location>, note: Option<String>| {
            let e = sink.report(kind, here.block, here.point, here.pos);
            e.operand(name.to_string()).expected(format!("%{}", v.name));
            if let Some(l) = loc {
                e.location(sink_loc(self.target, l));
            }
            if let Some(n) = note {
                e.note(n);
            }
        };
        let Some(loc) = loc else {
            fail(ErrorKind::MissingLocation, None, None);
            return None;
        };
        let Location::Reg { class, first, len } = loc else {
            fail(ErrorKind::NotARegister, Some(loc), None);
            return None;
        };
        let c = self.target.class(class);
        if class != v.class {
            let note = format!("its class is `{}`", self.target.class(v.class).name);
            fail(ErrorKind::WrongClass, Some(loc), Some(note));
            return Some(loc);
        }
        if len != v.size {
            let note = format!("it takes {} units", v.size);
            fail(ErrorKind::WrongSize, Some(loc), Some(note));
        }
        let align = c.align.alignment(v.size);
        if first % align != 0 {
            let note = format!(
                "a {}-unit `{}` tuple starts at a multiple of {align}",
                v.size, c.name
            );
            fail(ErrorKind::Misaligned, Some(loc), Some(note));
        }
        if let Some((kind, note)) = self.reg_range(loc) {
            fail(kind, Some(loc), Some(note));
        }
        Some(loc)
    }

    /// A memory phi lives in a spill location of its value's size; lanes hold only
    /// uniform values.
    fn memory_phi_loc(
        &self,
        f: &Function,
        here: &Here,
        value: Value,
        loc: Location,
        sink: &mut Sink,
    ) {
        let v = f.value(value);
        let lane_of_per_lane =
            matches!(loc, Location::Lane { .. }) && !self.target.class(v.class).uniform;
        let kind = if loc.len() != v.size {
            Some((ErrorKind::WrongSize, format!("it takes {} units", v.size)))
        } else if lane_of_per_lane {
            let note = "lanes hold only values of a uniform class".to_string();
            Some((ErrorKind::WrongClass, note))
        } else {
            self.artefact_loc(loc)
        };
        if let Some((kind, note)) = kind {
            sink.report(kind, here.block, here.point, here.pos)
                .operand("phi def")
                .expected(format!("%{}", v.name))
                .location(sink_loc(self.target, loc))
                .note(note);
        }
    }

    /// Range and budget of a register range.
    fn reg_range(&self, loc: Location) -> Option<Violation> {
        let Location::Reg { class, first, len } = loc else {
            return None;
        };
        let end = u32::from(first) + u32::from(len);
        let c = self.target.class(class);
        let budget = self.budget_of(class);
        if end > u32::from(c.units) {
            let note = format!("class `{}` has {} registers", c.name, c.units);
            Some((ErrorKind::OutOfRange, note))
        } else if end > u32::from(budget) {
            Some((ErrorKind::OverBudget, self.budget_note(class)))
        } else {
            None
        }
    }

    fn budget_of(&self, class: ClassId) -> u16 {
        self.budget.get(class.index()).copied().unwrap_or(u16::MAX)
    }

    fn budget_note(&self, class: ClassId) -> String {
        let name = &self.target.class(class).name;
        format!(
            "the budget of class `{name}` is {} registers, {name}0 to {name}{}",
            self.budget_of(class),
            self.budget_of(class).saturating_sub(1)
        )
    }

    fn check_artefact(
        &self,
        f: &Function,
        here: &Here,
        kind: &InstKind,
        written: &mut Written,
        sink: &mut Sink,
    ) {
        for (k, loc) in artefact_locations(kind).enumerate() {
            if let Some((e, note)) = self.artefact_loc(loc) {
                sink.report(e, here.block, here.point, here.pos)
                    .operand(format!("location {k}"))
                    .location(sink_loc(self.target, loc))
                    .note(note);
            }
        }
        let mut fail = |kind, name: &str, loc: Location| {
            sink.report(kind, here.block, here.point, here.pos)
                .operand(name)
                .location(sink_loc(self.target, loc));
        };
        match kind {
            InstKind::ParallelCopy(moves) => {
                written.clear();
                for (k, m) in moves.iter().enumerate() {
                    if m.dst.len() != m.src.len() {
                        fail(ErrorKind::LengthMismatch, &format!("move {k}"), m.dst);
                    } else if crosses_classes(m.src, m.dst)
                        && !copy_temp_pair(self.target, m.src, m.dst)
                    {
                        fail(ErrorKind::CrossClassMove, &format!("move {k}"), m.dst);
                    }
                    if written.overlaps(m.dst) {
                        fail(
                            ErrorKind::OverlappingDestinations,
                            &format!("move {k}"),
                            m.dst,
                        );
                    }
                }
            }
            InstKind::Spill(m) | InstKind::Reload(m) => {
                if m.dst.len() != m.src.len() {
                    fail(ErrorKind::LengthMismatch, "move 0", m.dst);
                } else if crosses_classes(m.src, m.dst)
                    && class_spilled(self.target, kind).is_none()
                {
                    fail(ErrorKind::CrossClassMove, "move 0", m.dst);
                }
            }
            InstKind::Swap(x, y) => match (x.reg_class(), y.reg_class()) {
                (Some(cx), Some(cy)) if cx == cy && x.len() == y.len() => {
                    if !self.target.class(cx).has_swap {
                        fail(ErrorKind::SwapUnsupported, "swap", *x);
                    } else if overlaps(*x, *y) {
                        fail(ErrorKind::OverlappingSwap, "swap", *y);
                    }
                }
                (Some(_), Some(_)) if x.len() == y.len() => {
                    fail(ErrorKind::CrossClassMove, "swap", *y)
                }
                _ => fail(ErrorKind::LengthMismatch, "swap", *y),
            },
            InstKind::Remat { dst, value, uses } => {
                self.value_loc(f, here, Operand::Named("remat"), *value, Some(*dst), sink);
                for (k, u) in uses.iter().enumerate() {
                    self.check_use(f, here, Operand::Use(k), u, sink);
                }
            }
            InstKind::Op(_) => {}
        }
    }

    /// Range and budget of a move's location; lane locations only in per-lane classes
    /// that hold lane spills, within the lane count.
    fn artefact_loc(&self, loc: Location) -> Option<Violation> {
        match loc {
            Location::Reg { .. } => self.reg_range(loc),
            Location::Slot { .. } => None,
            Location::Lane {
                class,
                reg,
                first,
                len,
            } => {
                let c = self.target.class(class);
                let Some(lanes) = self.lanes.get(class.index()).copied().flatten() else {
                    let note = format!("class `{}` holds no lane spills", c.name);
                    return Some((ErrorKind::WrongClass, note));
                };
                if u32::from(first) + u32::from(len) > u32::from(lanes) || reg >= c.units {
                    let note = format!(
                        "class `{}` has {} registers of {lanes} lanes",
                        c.name, c.units
                    );
                    Some((ErrorKind::OutOfRange, note))
                } else if reg >= self.budget_of(class) {
                    Some((ErrorKind::OverBudget, self.budget_note(class)))
                } else {
                    None
                }
            }
        }
    }
}

fn sink_loc(t: &Target, loc: Location) -> String {
    chromatic::print::location(t, loc)
}

/// Every location an artefact names: each move's destination then source, a swap's two
/// locations, a remat's destination then its operands' locations.
pub(crate) fn artefact_locations(kind: &InstKind) -> impl Iterator<Item = Location> + '_ {
    let (moves, named, uses): (&[Move], [Option<Location>; 2], &[Use]) = match kind {
        InstKind::Op(_) => (&[], [None, None], &[]),
        InstKind::ParallelCopy(moves) => (moves, [None, None], &[]),
        InstKind::Swap(x, y) => (&[], [Some(*x), Some(*y)], &[]),
        InstKind::Spill(m) | InstKind::Reload(m) => (std::slice::from_ref(m), [None, None], &[]),
        InstKind::Remat { dst, uses, .. } => (&[], [Some(*dst), None], uses),
    };
    let moved = moves.iter().flat_map(|m| [m.dst, m.src]);
    moved
        .chain(named.into_iter().flatten())
        .chain(uses.iter().filter_map(|u| u.loc))
}

/// The spilled class, when `kind` is a class spill: a `spill` from a register of one class
/// into a register of a class it spills to (`SpillTarget::Class`), or a `reload` from such
/// a holder back into the spilled class. What it carries is checked by the dataflow.
pub(crate) fn class_spilled(target: &Target, kind: &InstKind) -> Option<ClassId> {
    let (spilled, holder) = match kind {
        InstKind::Spill(m) => (m.src, m.dst),
        InstKind::Reload(m) => (m.dst, m.src),
        _ => return None,
    };
    let (class, holder_class) = (spilled.reg_class()?, holder.reg_class()?);
    let into_holder = SpillTarget::Class {
        class: holder_class,
    };
    (class != holder_class && target.class(class).spill.contains(&into_holder)).then_some(class)
}

/// Whether a copy between registers of two classes is a bitwise copy the target has: one
/// class is the other's copy temporary (`RegClass::copy_temp`, AMD AGPR ↔ VGPR).
fn copy_temp_pair(target: &Target, src: Location, dst: Location) -> bool {
    let (Some(s), Some(d)) = (src.reg_class(), dst.reg_class()) else {
        return false;
    };
    target.class(s).copy_temp == Some(d) || target.class(d).copy_temp == Some(s)
}

/// Whether a move goes from a register of one class into a register of another.
fn crosses_classes(src: Location, dst: Location) -> bool {
    matches!((src.reg_class(), dst.reg_class()), (Some(s), Some(d)) if s != d)
}

/// Whether two register ranges share a unit.
pub(crate) fn overlaps(a: Location, b: Location) -> bool {
    match (a, b) {
        (
            Location::Reg {
                class: ca,
                first: fa,
                len: la,
            },
            Location::Reg {
                class: cb,
                first: fb,
                len: lb,
            },
        ) => ca == cb && fa < fb + lb && fb < fa + la,
        _ => false,
    }
}
