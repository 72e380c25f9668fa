//! The SSA validator: the rules every analysis and allocator relies on.
//!
//! - every value is defined exactly once;
//! - definitions dominate uses (a phi argument is a use at the end of its predecessor);
//! - each phi has exactly one argument per predecessor, of the phi's class and size;
//! - tied operands match their def's class and size; fixed locations are register ranges
//!   of the value's class and size, aligned and inside the class;
//! - no phi of a uniform class sits at the join of a divergent branch (which side's write
//!   wins would be undefined, `docs/FORMAT.md`).
//!
//! Uses in unreachable blocks are not checked. All errors are reported, sorted by position.
//! An allocator's input must also be operations only ([`validate_input`]): the same walk
//! finds the first instruction that allocation adds.

use super::cfg::Graph;
use super::divergence::Divergence;
use super::dom::DomTree;
use super::ControlFlow;
use crate::program::*;
use crate::target::Target;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct SsaError {
    pub pos: Pos,
    pub message: String,
}

/// Where a value is defined: block and instruction index ([`PHI`] for a phi); 12 bytes a
/// value, since the table spans every value of the function.
#[derive(Clone, Copy, Debug)]
struct Site {
    block: Block,
    at: u32,
}

/// [`Site::at`] of a phi.
const PHI: u32 = u32::MAX;

/// A use whose definition had not been seen when the walk reached it: checked once every
/// definition is known.
type Deferred = (Value, Pos, Block, Option<usize>);

/// Checks `f`; `Ok` or every problem found.
pub fn validate(f: &Function, target: &Target) -> Result<(), Vec<SsaError>> {
    validate_with(f, target, &ControlFlow::new(f))
}

/// [`validate`] with the control-flow analyses of `f` already computed.
pub fn validate_with(
    f: &Function,
    target: &Target,
    flow: &ControlFlow,
) -> Result<(), Vec<SsaError>> {
    let v = Validator::run(f, target, flow, |_| {});
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

/// Why [`validate_input`] refuses an allocator's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// The input holds an instruction that allocation adds (a parallel copy, swap, spill,
    /// reload or remat): the first one, in block order.
    Allocated { block: Block, pos: Pos },
    /// The input breaks the rules: every problem, as [`validate`] reports them.
    Invalid(Vec<SsaError>),
}

/// [`validate_with`] for an allocator's input, which must be operations only: the first
/// instruction allocation adds is reported before any rule break. The same walk finds
/// both, and calls `observe` with each block once it has read it, in block order, so that
/// a stage that copies the function (edge splitting) reads each block while it is still
/// in cache: the function is read once.
pub fn validate_input(
    f: &Function,
    target: &Target,
    flow: &ControlFlow,
    observe: impl FnMut(&BlockData),
) -> Result<(), InputError> {
    let v = Validator::run(f, target, flow, observe);
    if let Some((block, pos)) = v.first_added {
        Err(InputError::Allocated { block, pos })
    } else if v.errors.is_empty() {
        Ok(())
    } else {
        Err(InputError::Invalid(v.errors))
    }
}

struct Validator<'a> {
    f: &'a Function,
    target: &'a Target,
    cfg: &'a Graph,
    dom: &'a DomTree,
    errors: Vec<SsaError>,
    defs: Vec<Option<Site>>,
    /// The first instruction allocation adds: its block and position.
    first_added: Option<(Block, Pos)>,
}

impl<'a> Validator<'a> {
    /// Checks every rule (the errors sorted, without repeats), calling `observe` with each
    /// block once the first walk has read it.
    fn run(
        f: &'a Function,
        target: &'a Target,
        flow: &'a ControlFlow,
        observe: impl FnMut(&BlockData),
    ) -> Validator<'a> {
        let mut v = Validator {
            f,
            target,
            cfg: &flow.cfg,
            dom: &flow.dom,
            errors: Vec::new(),
            defs: vec![None; f.values.len()],
            first_added: None,
        };
        let deferred = v.collect_defs_and_check_constraints_and_uses(observe);
        for (value, pos, b, at) in deferred {
            v.check_use(value, pos, b, at);
        }
        v.check_phis(&flow.divergence);
        v.errors.sort();
        v.errors.dedup();
        v
    }

    fn error(&mut self, pos: Pos, message: String) {
        self.errors.push(SsaError { pos, message });
    }

    fn name(&self, v: Value) -> &str {
        &self.f.value(v).name
    }

    /// Records the first definition of a value; later ones are errors.
    fn define(&mut self, d: &Def, site: Site) {
        let first = &mut self.defs[d.value.index()];
        if first.is_none() {
            *first = Some(site);
        } else {
            self.error(
                d.pos,
                format!("`%{}` is defined more than once", self.name(d.value)),
            );
        }
    }

    /// One walk of the function: records every definition and the first instruction
    /// allocation added, checks every constraint, and checks that each use in a reachable block is dominated by its definition where that
    /// definition was already seen (the first definition of a value is final once seen);
    /// the other uses are returned, to be checked once every definition is known. The
    /// errors are sorted at the end, so their order here does not matter.
    fn collect_defs_and_check_constraints_and_uses(
        &mut self,
        mut observe: impl FnMut(&BlockData),
    ) -> Vec<Deferred> {
        let mut deferred = Vec::new();
        for b in self.f.block_ids() {
            let block = self.f.block(b);
            let reachable = self.cfg.is_reachable(b);
            for phi in &block.phis {
                self.define(&phi.def, Site { block: b, at: PHI });
            }
            for (i, inst) in block.insts.iter().enumerate() {
                let Some(op) = inst.op() else {
                    self.first_added.get_or_insert((b, inst.pos));
                    continue;
                };
                for d in &op.defs {
                    self.define(
                        d,
                        Site {
                            block: b,
                            at: i as u32,
                        },
                    );
                }
                self.check_op_constraints(op);
                if reachable {
                    self.check_or_defer(op.uses(), (b, Some(i)), &mut deferred);
                }
            }
            for u in block.term.uses() {
                self.check_fixed(u.fixed, u.value, u.pos);
            }
            self.check_fixed_uses(block.term.uses().iter());
            if reachable {
                self.check_or_defer(block.term.uses().iter(), (b, None), &mut deferred);
            }
            observe(block);
        }
        for v in self.f.value_ids() {
            if self.defs[v.index()].is_none() {
                self.error(
                    self.f.value(v).pos,
                    format!("`%{}` is never defined", self.name(v)),
                );
            }
        }
        deferred
    }

    /// Whether the definition of `v` dominates a use at `(b, at)` (`at == None`: end of `b`).
    fn def_dominates(&self, v: Value, b: Block, at: Option<usize>) -> bool {
        let Some(Site { block: db, at: di }) = self.defs[v.index()] else {
            return true;
        };
        if db != b {
            return self.dom.dominates(db, b);
        }
        match at {
            None => true,
            Some(_) if di == PHI => true,
            Some(u) => (di as usize) < u,
        }
    }

    fn check_use(&mut self, v: Value, pos: Pos, b: Block, at: Option<usize>) {
        if !self.def_dominates(v, b, at) {
            let message = format!(
                "the definition of `%{}` does not dominate this use",
                self.name(v)
            );
            self.error(pos, message);
        }
    }

    /// Checks the uses at `(b, at)` whose definition was seen; defers the others.
    fn check_or_defer<'u>(
        &mut self,
        uses: impl Iterator<Item = &'u Use>,
        (b, at): (Block, Option<usize>),
        deferred: &mut Vec<Deferred>,
    ) {
        for u in uses {
            if self.defs[u.value.index()].is_some() {
                self.check_use(u.value, u.pos, b, at);
            } else {
                deferred.push((u.value, u.pos, b, at));
            }
        }
    }

    fn check_phis(&mut self, divergence: &Divergence) {
        for &b in self.cfg.rpo() {
            for phi in &self.f.block(b).phis {
                self.check_phi_args(b, phi);
                let class = self.f.value(phi.def.value).class;
                if self.target.class(class).uniform && divergence.is_join(b) {
                    let message = format!(
                        "`%{}` is a uniform phi at `{}`, the join of a divergent branch",
                        self.name(phi.def.value),
                        self.f.block(b).name
                    );
                    self.error(phi.pos, message);
                }
            }
        }
    }

    fn same_shape(&self, a: Value, b: Value) -> bool {
        let (a, b) = (self.f.value(a), self.f.value(b));
        a.class == b.class && a.size == b.size
    }

    /// A value's class and size as the text format writes them (`s2`).
    fn shape(&self, v: Value) -> String {
        let data = self.f.value(v);
        format!("{}{}", self.target.class(data.class).name, data.size)
    }

    fn check_phi_args(&mut self, b: Block, phi: &Phi) {
        let preds = self.cfg.preds(b);
        for arg in &phi.args {
            if !preds.contains(&arg.block) {
                let message = format!(
                    "phi argument from `{}`, which is not a predecessor",
                    self.f.block(arg.block).name
                );
                self.error(arg.pos, message);
            } else if !self.same_shape(arg.value, phi.def.value) {
                let message = format!(
                    "phi argument `%{}` is {}; the phi `%{}` is {}",
                    self.name(arg.value),
                    self.shape(arg.value),
                    self.name(phi.def.value),
                    self.shape(phi.def.value)
                );
                self.error(arg.pos, message);
            } else if self.cfg.is_reachable(arg.block)
                && !self.def_dominates(arg.value, arg.block, None)
            {
                let message = format!(
                    "the definition of `%{}` does not dominate the end of `{}`",
                    self.name(arg.value),
                    self.f.block(arg.block).name
                );
                self.error(arg.pos, message);
            }
        }
        for &p in preds {
            let count = phi.args.iter().filter(|a| a.block == p).count();
            if count != 1 {
                let message = format!(
                    "phi has {count} arguments for predecessor `{}`; it needs one",
                    self.f.block(p).name
                );
                self.error(phi.pos, message);
            }
        }
    }

    fn check_op_constraints(&mut self, op: &Op) {
        for d in &op.defs {
            self.check_fixed(d.fixed, d.value, d.pos);
            if let Some(t) = d.tied {
                self.check_tied(op, d, t);
            }
        }
        for u in op.uses() {
            self.check_fixed(u.fixed, u.value, u.pos);
        }
        self.check_operand_conflicts(op);
    }

    /// Constraints of one instruction that no register assignment can meet.
    fn check_operand_conflicts(&mut self, op: &Op) {
        self.check_fixed_uses(op.operands.iter().filter_map(Operand::as_use));
        let name = |v: Value| self.f.value(v).name.clone();
        for (i, d) in op
            .defs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.fixed.is_some())
        {
            if let Some(e) = op.defs[..i].iter().find(|e| overlap(e.fixed, d.fixed)) {
                let message = format!(
                    "`%{}` and `%{}` are defined in overlapping fixed registers",
                    name(e.value),
                    name(d.value)
                );
                self.error(d.pos, message);
            }
            let early_clash = d
                .early_clobber
                .then(|| op.uses().find(|u| overlap(u.fixed, d.fixed)));
            if let Some(u) = early_clash.flatten() {
                let message = format!(
                    "early-clobber `%{}` is fixed to registers the instruction reads `%{}` from",
                    name(d.value),
                    name(u.value)
                );
                self.error(d.pos, message);
            }
        }
        for (i, d) in op.defs.iter().enumerate() {
            let Some(t) = d.tied else { continue };
            if d.early_clobber {
                let message = format!("`%{}` is both tied and early-clobber", name(d.value));
                self.error(d.pos, message);
            }
            if op.defs[..i].iter().any(|e| e.tied == Some(t)) {
                self.error(d.pos, format!("two definitions are tied to operand {t}"));
            }
            let read = op.operands.get(usize::from(t)).and_then(Operand::as_use);
            if let (Some(u), Some(_)) = (read.and_then(|u| u.fixed), d.fixed) {
                if Some(u) != d.fixed {
                    let message = format!(
                        "`%{}` is tied to an operand fixed to another register",
                        name(d.value)
                    );
                    self.error(d.pos, message);
                }
            }
        }
    }

    /// Two values fixed to overlapping registers, or one value to two overlapping ones.
    /// Only fixed uses overlap, so each is compared with the uses before it, unfiltered.
    fn check_fixed_uses<'u>(&mut self, uses: impl Iterator<Item = &'u Use> + Clone) {
        for (i, u) in uses.clone().enumerate().filter(|(_, u)| u.fixed.is_some()) {
            let same = |w: &Use| w.value == u.value && w.fixed == u.fixed;
            let clash = uses
                .clone()
                .take(i)
                .find(|w| overlap(w.fixed, u.fixed) && !same(w));
            if let Some(w) = clash {
                let (a, b) = (&self.f.value(w.value).name, &self.f.value(u.value).name);
                let message = if w.value == u.value {
                    format!("`%{b}` is fixed to overlapping registers")
                } else {
                    format!("`%{a}` and `%{b}` are fixed to overlapping registers")
                };
                self.error(u.pos, message);
            }
        }
    }

    fn check_tied(&mut self, op: &Op, d: &Def, t: u16) {
        let Some(Operand::Value(u)) = op.operands.get(usize::from(t)) else {
            self.error(d.pos, format!("`tied({t})` names no value operand"));
            return;
        };
        let (a, b) = (self.f.value(d.value), self.f.value(u.value));
        if a.class != b.class || a.size != b.size {
            let message = format!(
                "`%{}` is tied to `%{}`, which differs in class or size",
                a.name, b.name
            );
            self.error(d.pos, message);
        }
    }

    fn check_fixed(&mut self, fixed: Option<Location>, v: Value, pos: Pos) {
        let Some(loc) = fixed else { return };
        let data = self.f.value(v);
        let class = self.target.class(data.class);
        let fits = match loc {
            Location::Reg {
                class: c,
                first,
                len,
            } => {
                c == data.class
                    && len == data.size
                    && first % class.align.alignment(len) == 0
                    && u32::from(first) + u32::from(len) <= u32::from(class.units)
            }
            _ => false,
        };
        if !fits {
            let message = format!(
                "the fixed location of `%{}` is not an aligned range of {} `{}` unit(s) inside the class",
                data.name, data.size, class.name
            );
            self.error(pos, message);
        }
    }
}

/// Whether two fixed register ranges share a unit.
fn overlap(a: Option<Location>, b: Option<Location>) -> bool {
    match (a, b) {
        (
            Some(Location::Reg {
                class: c1,
                first: f1,
                len: l1,
            }),
            Some(Location::Reg {
                class: c2,
                first: f2,
                len: l2,
            }),
        ) => c1 == c2 && f1 < f2 + l2 && f2 < f1 + l1,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line 8 defines `%y` (col 3) from `%x` (col 15); line 11 is the phi.
    const BASE: &str = "target gfx9
func @f {
a:
  %x:v1 = foo
  %c:s1 = bar
  branch uniform %c, b, d
b:
  %y:v1 = baz %x
  jump d
d:
  %p:v1 = phi [a: %x], [b: %y]
  ret %p
}
";

    /// The validator's messages after `edit` changes the parsed base program.
    fn errors_after(edit: impl FnOnce(&mut Function)) -> Vec<String> {
        let mut p = crate::parse(BASE).unwrap();
        edit(&mut p.functions[0]);
        match validate(&p.functions[0], &p.target) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    fn baz(f: &mut Function) -> &mut Op {
        match &mut f.blocks[1].insts[0].kind {
            InstKind::Op(op) => op,
            other => panic!("expected an op, got {other:?}"),
        }
    }

    fn reg(class: u8, first: u16, len: u16) -> Option<Location> {
        Some(Location::Reg {
            class: crate::ClassId(class),
            first,
            len,
        })
    }

    /// The messages of validating `src`.
    fn errors_of(src: &str) -> Vec<String> {
        let p = crate::parse(src).unwrap();
        match validate(&p.functions[0], &p.target) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn overlapping_fixed_operands_are_found_past_unfixed_ones() {
        let src = "target generic q=12\nfunc @f {\nentry:\n  %a:q1 = arg 0\n  %b:q1 = arg 1\n  %d:q2 fixed(q[4:5]), %e:q1, %g:q1 fixed(q5) = mma %a fixed(q5), %b, %a fixed(q3), %b fixed(q5)\n  ret %a\n}\n";
        let errors = errors_of(src);
        let with = |text: &str| errors.iter().filter(|e| e.contains(text)).count();
        assert_eq!(
            with("`%d` and `%g` are defined in overlapping fixed registers"),
            1,
            "{errors:?}"
        );
        assert_eq!(
            with("`%a` is fixed to overlapping registers"),
            0,
            "{errors:?}"
        );
        assert_eq!(
            with("`%a` and `%b` are fixed to overlapping registers"),
            1,
            "{errors:?}"
        );
    }

    #[test]
    fn base_program_is_valid() {
        assert_eq!(errors_after(|_| {}), Vec::<String>::new());
    }

    /// An allocator's input that holds an allocation's instruction is refused for its first
    /// such instruction, before any rule it breaks; without one, the rule breaks are
    /// reported as `validate` reports them.
    #[test]
    fn an_input_is_refused_for_its_first_added_instruction_first() {
        let mut p = crate::parse(BASE).unwrap();
        let f = &mut p.functions[0];
        let added = |line| Inst {
            kind: InstKind::ParallelCopy(Vec::new()),
            pos: Pos { line, col: 3 },
        };
        f.blocks[2].insts.push(added(40));
        f.blocks[1].insts.push(added(30));
        f.blocks[1].insts.push(added(31));
        baz(f).operands.push(Operand::imm(3));
        baz(f).defs[0].tied = Some(1);
        let flow = ControlFlow::new(f);
        let refused = validate_input(f, &p.target, &flow, |_| {});
        let first = Pos { line: 30, col: 3 };
        assert_eq!(
            refused,
            Err(InputError::Allocated {
                block: Block(1),
                pos: first
            })
        );
        for block in &mut f.blocks {
            block.insts.retain(|i| !i.is_artefact());
        }
        let errors = validate_with(f, &p.target, &flow).unwrap_err();
        assert_eq!(
            validate_input(f, &p.target, &flow, |_| {}),
            Err(InputError::Invalid(errors))
        );
    }

    #[test]
    fn double_definition_and_undefined_value() {
        let errors = errors_after(|f| baz(f).defs[0].value = Value(0));
        assert_eq!(
            errors,
            [
                "8:3: `%x` is defined more than once",
                "8:3: `%y` is never defined",
            ]
        );
    }

    #[test]
    fn phi_argument_from_a_block_that_is_not_a_predecessor() {
        let errors = errors_after(|f| f.blocks[2].phis[0].args[1].block = Block(2));
        assert_eq!(
            errors,
            [
                "11:3: phi has 0 arguments for predecessor `b`; it needs one",
                "11:24: phi argument from `d`, which is not a predecessor",
            ]
        );
    }

    #[test]
    fn phi_argument_of_another_size() {
        let errors = errors_after(|f| {
            let x = f.blocks[2].phis[0].args[0].value;
            f.values[x.index()].size = 2;
        });
        assert_eq!(
            errors,
            ["11:15: phi argument `%x` is v2; the phi `%p` is v1"]
        );
    }

    #[test]
    fn phi_with_two_arguments_for_one_predecessor() {
        let errors = errors_after(|f| {
            let phi = &mut f.blocks[2].phis[0];
            phi.args.push(phi.args[0]);
        });
        assert_eq!(
            errors,
            ["11:3: phi has 2 arguments for predecessor `a`; it needs one"]
        );
    }

    #[test]
    fn phi_argument_must_be_defined_at_the_end_of_its_predecessor() {
        let errors = errors_after(|f| f.blocks[2].phis[0].args[0].value = Value(2));
        assert_eq!(
            errors,
            ["11:15: the definition of `%y` does not dominate the end of `a`"]
        );
    }

    #[test]
    fn use_before_definition_in_the_same_block() {
        let errors = errors_after(|f| {
            let insts = &mut f.blocks[0].insts;
            insts.swap(0, 1);
            if let InstKind::Op(op) = &mut insts[0].kind {
                op.operands.push(Operand::Value(Use {
                    value: Value(0),
                    fixed: None,
                    loc: None,
                    pos: Pos { line: 5, col: 15 },
                }));
            }
        });
        assert_eq!(
            errors,
            ["5:15: the definition of `%x` does not dominate this use"]
        );
    }

    #[test]
    fn tied_to_an_immediate_or_a_value_of_another_class() {
        let to_imm = errors_after(|f| {
            baz(f).operands.push(Operand::imm(3));
            baz(f).defs[0].tied = Some(1);
        });
        assert_eq!(to_imm, ["8:3: `tied(1)` names no value operand"]);
        let to_scalar = errors_after(|f| {
            if let Operand::Value(u) = &mut baz(f).operands[0] {
                u.value = Value(1);
            }
            baz(f).defs[0].tied = Some(0);
        });
        assert_eq!(
            to_scalar,
            ["8:3: `%y` is tied to `%c`, which differs in class or size"]
        );
    }

    #[test]
    fn fixed_locations_of_the_wrong_class_size_alignment_or_range() {
        let message = |v: &str, size: u16, class: &str| {
            format!("8:3: the fixed location of `%{v}` is not an aligned range of {size} `{class}` unit(s) inside the class")
        };
        for bad in [reg(0, 0, 1), reg(1, 0, 2), reg(1, 256, 1)] {
            assert_eq!(
                errors_after(|f| baz(f).defs[0].fixed = bad),
                [message("y", 1, "v")],
                "{bad:?}"
            );
        }
        assert_eq!(
            errors_after(|f| baz(f).defs[0].fixed = reg(1, 255, 1)),
            Vec::<String>::new()
        );
        let misaligned = errors_after(|f| {
            f.values[1].size = 2;
            if let InstKind::Op(op) = &mut f.blocks[0].insts[1].kind {
                op.defs[0].fixed = reg(0, 1, 2);
            }
        });
        assert_eq!(
            misaligned,
            ["5:3: the fixed location of `%c` is not an aligned range of 2 `s` unit(s) inside the class"]
        );
        let on_use = errors_after(|f| {
            if let Operand::Value(u) = &mut baz(f).operands[0] {
                u.fixed = Some(Location::Slot { first: 0, len: 1 });
            }
        });
        assert_eq!(
            on_use,
            ["8:15: the fixed location of `%x` is not an aligned range of 1 `v` unit(s) inside the class"]
        );
    }
}
