//! An instruction's operand constraints as a [`packing`] problem of one class.
//!
//! The values in registers when the instruction runs (*residents*) become items: one per
//! value, both instants when it is live after the instruction, early only when this is
//! its last use. Then the operands, as regalloc2 lists operand constraints and ACO meets
//! them with one parallel copy:
//!
//! - a use fixed to a register pins its value's item there; when one value is fixed to
//!   several registers, or lives on where a late definition fixed to the same units
//!   overwrites it, the instruction reads a *copy* (an early item pinned to the register)
//!   and the value keeps an item of its own;
//! - a definition tied to a use takes that use's item, which then spans both instants,
//!   when the use's value dies here, no other tied definition took it and no other
//!   definition is fixed over the item's pinned register (the item would hold the tied
//!   definition there after the instruction); otherwise the instruction reads and
//!   overwrites a copy (an item of both instants);
//! - an early-clobber definition is an item of both instants, any other definition (dead
//!   ones included) a late item; fixed definitions are pinned;
//! - a `prefer` wish becomes the definition's preferred position.
//!
//! The spiller builds the problem from the values it keeps in registers (no positions)
//! and asks whether it fits; assignment builds it from the register file and asks where
//! everything goes. One builder serves both, so the two cannot disagree.

use super::packing::{Item, Problem, Span};
use crate::program::{Def, Location, Operand, Use, Value, ValueData};
use crate::target::{ClassId, Target};

/// What an item stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A value in a register; where the item goes, the value moves before the instruction.
    Value(Value),
    /// A copy of a value made before the instruction, read by some of its uses.
    Copy(Value),
    /// A definition not sharing an item with a use (its index among the defs).
    Def(usize),
}

/// The instruction as the builder sees it: its definitions and operands.
#[derive(Clone, Copy, Debug)]
pub struct Operands<'a> {
    pub defs: &'a [Def],
    pub operands: &'a [Operand],
}

impl<'a> Operands<'a> {
    /// A terminator: uses only.
    pub fn uses_only(operands: &'a [Operand]) -> Operands<'a> {
        Operands {
            defs: &[],
            operands,
        }
    }
}

/// The problem of one class, and how its items map back to the instruction.
#[derive(Clone, Debug, Default)]
pub struct Built {
    pub problem: Problem,
    pub roles: Vec<Role>,
    /// Per operand (immediates and other classes: `None`): the item it reads.
    pub reads: Vec<Option<usize>>,
    /// Per definition (other classes: `None`): its item.
    pub defs: Vec<Option<usize>>,
    /// The builder's working lists for fixed uses, kept for the next instruction.
    fixed: FixedUses,
    /// [`build_into`]'s operands of the class, kept for the next instruction.
    of_class: OfClass,
}

/// An instruction's value operands and definitions of one class, in operand order: what
/// the builder reads, so that it walks the operands of other classes not at all. Assignment
/// sorts an instruction's operands by class once for all its classes ([`OfClass::sort`]).
#[derive(Clone, Debug, Default)]
pub struct OfClass {
    /// Value operands of the class: (operand index, use).
    uses: Vec<(usize, Use)>,
    /// Definitions of the class, by index.
    defs: Vec<usize>,
}

impl OfClass {
    /// No operands.
    pub const EMPTY: OfClass = OfClass {
        uses: Vec::new(),
        defs: Vec::new(),
    };

    /// The operands of `class` in `ops`.
    fn collect(&mut self, values: &[ValueData], class: ClassId, ops: Operands) {
        self.uses.clear();
        self.defs.clear();
        let of_class = |v: Value| values[v.index()].class == class;
        self.uses
            .extend(value_uses(ops).filter(|(_, u)| of_class(u.value)));
        let defs = ops.defs.iter().enumerate();
        self.defs
            .extend(defs.filter(|(_, d)| of_class(d.value)).map(|(k, _)| k));
    }

    /// Sorts the operands of `ops` into `by_class` (indexed by class; grown as needed) in
    /// one pass; the lists of classes `ops` does not touch are left empty.
    pub fn sort(values: &[ValueData], ops: Operands, by_class: &mut Vec<OfClass>) {
        for of in by_class.iter_mut() {
            of.uses.clear();
            of.defs.clear();
        }
        let class = |v: Value| values[v.index()].class.index();
        for (k, u) in value_uses(ops) {
            list_of(by_class, class(u.value)).uses.push((k, u));
        }
        for (k, d) in ops.defs.iter().enumerate() {
            list_of(by_class, class(d.value)).defs.push(k);
        }
    }

    /// Whether the instruction has no value operand and no definition of the class.
    pub fn is_empty(&self) -> bool {
        self.uses.is_empty() && self.defs.is_empty()
    }

    /// The class's value operands: (operand index, use).
    pub fn uses(&self) -> &[(usize, Use)] {
        &self.uses
    }

    /// The operand indices of the class's uses.
    pub fn operands(&self) -> impl Iterator<Item = usize> + '_ {
        self.uses.iter().map(|&(k, _)| k)
    }

    /// The values the class's uses read.
    pub fn used_values(&self) -> impl Iterator<Item = Value> + '_ {
        self.uses.iter().map(|(_, u)| u.value)
    }

    /// The indices of the class's definitions.
    pub fn defs(&self) -> &[usize] {
        &self.defs
    }
}

/// The list of class `c` in `by_class`, grown to hold it.
fn list_of(by_class: &mut Vec<OfClass>, c: usize) -> &mut OfClass {
    if by_class.len() <= c {
        by_class.resize_with(c + 1, OfClass::default);
    }
    &mut by_class[c]
}

/// What the builder collects about an instruction's fixed uses of one class.
#[derive(Clone, Debug, Default)]
struct FixedUses {
    /// Registers late definitions are fixed to.
    late_fixed: Vec<Location>,
    /// The values read from a fixed register, sorted, each once.
    values: Vec<Value>,
    /// The distinct fixed registers one value is read from, in operand order.
    regs: Vec<Location>,
}

impl FixedUses {
    fn collect(&mut self, of: &OfClass, ops: Operands) {
        self.late_fixed.clear();
        let late = ops.defs.iter().filter(|d| !d.early_clobber);
        self.late_fixed.extend(late.filter_map(|d| d.fixed));
        self.values.clear();
        let fixed = of.uses.iter().filter(|(_, u)| u.fixed.is_some());
        self.values.extend(fixed.map(|(_, u)| u.value));
        self.values.sort();
        self.values.dedup();
    }
}

/// The distinct fixed registers `v` is read from in `uses`, into `regs`.
fn registers_of(uses: &[(usize, Use)], v: Value, regs: &mut Vec<Location>) {
    regs.clear();
    let of_v = uses.iter().filter(|(_, u)| u.value == v);
    for loc in of_v.filter_map(|(_, u)| u.fixed) {
        if !regs.contains(&loc) {
            regs.push(loc);
        }
    }
}

/// What the builder needs to know about values.
pub struct Context<'a> {
    pub target: &'a Target,
    pub class: ClassId,
    pub units: u16,
    /// The function's values (class and size of each).
    pub values: &'a [ValueData],
    /// Whether a value stays in a register after the instruction.
    pub lives_on: &'a dyn Fn(Value) -> bool,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("class", &self.class)
            .field("units", &self.units)
            .finish_non_exhaustive()
    }
}

impl Context<'_> {
    /// Class and size of a value.
    fn shape(&self, v: Value) -> (ClassId, u16) {
        let data = &self.values[v.index()];
        (data.class, data.size)
    }

    fn of_class(&self, v: Value) -> bool {
        self.shape(v).0 == self.class
    }

    fn item(&self, v: Value, span: Span) -> Item {
        let size = self.shape(v).1;
        Item::new(size, self.align(size), span)
    }

    fn align(&self, size: u16) -> u16 {
        self.target.class(self.class).align.alignment(size)
    }

    fn first_of(&self, loc: Location) -> Option<u16> {
        match loc {
            Location::Reg { class, first, .. } if class == self.class => Some(first),
            _ => None,
        }
    }
}

/// Builds the problem of `ctx.class` at an instruction whose operands are `ops`, with
/// `residents` in registers (with their first unit, when known), into `built`, whose
/// buffers are reused.
pub fn build_into(
    ctx: &Context,
    residents: &[(Value, Option<u16>)],
    ops: Operands,
    built: &mut Built,
) {
    let mut of = std::mem::take(&mut built.of_class);
    of.collect(ctx.values, ctx.class, ops);
    build_of_class(ctx, residents, (ops, &of), built);
    built.of_class = of;
}

/// [`build_into`] with the operands of `ctx.class` sorted out already (`of`, from
/// [`OfClass::sort`]).
pub fn build_of_class(
    ctx: &Context,
    residents: &[(Value, Option<u16>)],
    (ops, of): (Operands, &OfClass),
    built: &mut Built,
) {
    built.problem.units = ctx.units;
    built.problem.items.clear();
    built.roles.clear();
    let most = residents.len() + ops.operands.len() + ops.defs.len();
    built.problem.items.reserve(most);
    built.roles.reserve(most);
    built.reads.clear();
    built.reads.resize(ops.operands.len(), None);
    built.defs.clear();
    built.defs.resize(ops.defs.len(), None);
    let mut b = Builder {
        ctx,
        ops,
        of,
        built,
        residents: 0,
    };
    b.residents(residents);
    b.fixed_uses();
    b.plain_uses();
    b.tied_defs();
    b.other_defs();
}

struct Builder<'c, 'a, 'b> {
    ctx: &'c Context<'c>,
    ops: Operands<'a>,
    /// The operands of `ctx.class`.
    of: &'a OfClass,
    built: &'b mut Built,
    /// The items of resident values come first: this many.
    residents: usize,
}

impl Builder<'_, '_, '_> {
    fn push(&mut self, item: Item, role: Role) -> usize {
        self.built.problem.items.push(item);
        self.built.roles.push(role);
        self.built.problem.items.len() - 1
    }

    fn item_of(&self, v: Value) -> Option<usize> {
        self.built.roles[..self.residents]
            .iter()
            .position(|&r| r == Role::Value(v))
    }

    /// One item per resident of the class; the alignment of the last size seen is reused
    /// (residents mostly share one size).
    fn residents(&mut self, residents: &[(Value, Option<u16>)]) {
        let mut aligned: Option<(u16, u16)> = None;
        for &(v, at) in residents {
            let (class, size) = self.ctx.shape(v);
            if class != self.ctx.class {
                continue;
            }
            let span = if (self.ctx.lives_on)(v) {
                Span::Both
            } else {
                Span::Early
            };
            let align = match aligned {
                Some((s, a)) if s == size => a,
                _ => self.ctx.align(size),
            };
            aligned = Some((size, align));
            let mut item = Item::new(size, align, span);
            item.current = at;
            self.push(item, Role::Value(v));
            self.residents += 1;
        }
    }

    /// Fixed uses: each value's item is pinned to one of its fixed registers (the one it
    /// sits in, if any) unless it lives on where a late fixed definition overwrites it;
    /// every other fixed register is read through a copy pinned there.
    fn fixed_uses(&mut self) {
        if !self.of.uses.iter().any(|(_, u)| u.fixed.is_some()) {
            return;
        }
        let mut fixed = std::mem::take(&mut self.built.fixed);
        fixed.collect(self.of, self.ops);
        for &v in &fixed.values {
            let Some(vi) = self.item_of(v) else { continue };
            registers_of(&self.of.uses, v, &mut fixed.regs);
            let lives = (self.ctx.lives_on)(v);
            let late_fixed = &fixed.late_fixed;
            let overwritten = |loc: Location| lives && late_fixed.iter().any(|&d| overlaps(d, loc));
            let current = self.built.problem.items[vi].current;
            let mut candidates = fixed.regs.iter().copied().filter(|&l| !overwritten(l));
            let home = candidates
                .clone()
                .find(|&l| self.ctx.first_of(l) == current)
                .or_else(|| candidates.next());
            if let Some(home) = home {
                self.built.problem.items[vi].pinned = self.ctx.first_of(home);
            }
            for &loc in &fixed.regs {
                let reader = if Some(loc) == home {
                    vi
                } else {
                    let mut copy = self.ctx.item(v, Span::Early);
                    copy.pinned = self.ctx.first_of(loc);
                    self.push(copy, Role::Copy(v))
                };
                for (k, u) in &self.of.uses {
                    if u.value == v && u.fixed == Some(loc) {
                        self.built.reads[*k] = Some(reader);
                    }
                }
            }
        }
        self.built.fixed = fixed;
    }

    /// Uses without a fixed register read their value's item.
    fn plain_uses(&mut self) {
        for &(k, u) in &self.of.uses {
            if u.fixed.is_none() {
                self.built.reads[k] = self.item_of(u.value);
            }
        }
    }

    /// A tied definition takes its use's item when that item belongs to a value dying
    /// here (or is a fixed copy), no other definition took it, and no other definition
    /// is fixed over the register the item is pinned to; else it overwrites a copy of both
    /// instants.
    fn tied_defs(&mut self) {
        let mut taken: Vec<usize> = Vec::new();
        for &d in &self.of.defs {
            let def = &self.ops.defs[d];
            let Some(t) = def.tied.map(usize::from) else {
                continue;
            };
            let Some(u) = self.ops.operands.get(t).and_then(Operand::as_use).copied() else {
                continue;
            };
            if !self.ctx.of_class(u.value) {
                continue;
            }
            let Some(read) = self.built.reads[t] else {
                continue;
            };
            let claimable = match self.built.roles[read] {
                Role::Value(v) => !(self.ctx.lives_on)(v),
                Role::Copy(_) => true,
                Role::Def(_) => false,
            };
            let claimable = claimable && !self.fixed_def_over(d, read);
            let item = if claimable && !taken.contains(&read) {
                self.built.problem.items[read].span = Span::Both;
                read
            } else {
                let mut copy = self.ctx.item(u.value, Span::Both);
                copy.pinned = u.fixed.and_then(|l| self.ctx.first_of(l));
                let i = self.push(copy, Role::Copy(u.value));
                self.built.reads[t] = Some(i);
                i
            };
            if let Some(at) = def.fixed.and_then(|l| self.ctx.first_of(l)) {
                self.built.problem.items[item].pinned = Some(at);
            }
            taken.push(item);
            self.built.defs[d] = Some(item);
        }
    }

    /// Whether a definition other than `d` is fixed over units of the register `item` is
    /// pinned to: a tied definition taking that item would hold them after the
    /// instruction too (generated by fuzzing: a value read unfixed by a tied definition's
    /// operand and fixed to `q0`, which another definition writes; the tie took the item
    /// pinned to `q0` and no budget fitted).
    fn fixed_def_over(&self, d: usize, item: usize) -> bool {
        let Item { pinned, size, .. } = self.built.problem.items[item];
        let Some(at) = pinned else {
            return false;
        };
        self.of.defs.iter().filter(|&&e| e != d).any(|&e| {
            let def = &self.ops.defs[e];
            let first = def.fixed.and_then(|l| self.ctx.first_of(l));
            let units = self.ctx.shape(def.value).1;
            first.is_some_and(|s| s < at + size && at < s + units)
        })
    }

    /// Early-clobber definitions span both instants, the others are late; fixed ones are
    /// pinned, a `prefer`red operand's position is wished for.
    fn other_defs(&mut self) {
        for &d in &self.of.defs {
            let def = &self.ops.defs[d];
            if self.built.defs[d].is_some() {
                continue;
            }
            let span = if def.early_clobber {
                Span::Both
            } else {
                Span::Late
            };
            let mut item = self.ctx.item(def.value, span);
            item.pinned = def.fixed.and_then(|l| self.ctx.first_of(l));
            item.prefer = def
                .prefer
                .and_then(|p| self.built.reads.get(usize::from(p)).copied().flatten())
                .and_then(|i| {
                    let read = &self.built.problem.items[i];
                    let same = read.size == item.size;
                    read.pinned.or(read.current).filter(|_| same)
                });
            self.built.defs[d] = Some(self.push(item, Role::Def(d)));
        }
    }
}

/// Value operands in `ops`: (operand index, use).
fn value_uses(ops: Operands<'_>) -> impl Iterator<Item = (usize, Use)> + '_ {
    ops.operands
        .iter()
        .enumerate()
        .filter_map(|(k, o)| Some((k, *o.as_use()?)))
}

/// Whether two register ranges share a unit.
pub fn overlaps(a: Location, b: Location) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::packing::canonical;

    /// Builds the problem of class `v` for the only instruction of the function in `body`,
    /// with `residents` (by name) in registers, each living on unless named in `dying`.
    fn built(body: &str, units: u16, residents: &[&str], dying: &[&str]) -> Built {
        let src = format!("target generic v=16\nfunc @f {{\nb:\n{body}\n  ret\n}}\n");
        let p = crate::parse(&src).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let named = |n: &str| f.value_ids().find(|&v| f.value(v).name == n).unwrap();
        let residents: Vec<(Value, Option<u16>)> =
            residents.iter().map(|n| (named(n), None)).collect();
        let dying: Vec<Value> = dying.iter().map(|n| named(n)).collect();
        let op = f.blocks[0].insts.last().unwrap().op().unwrap().clone();
        let lives_on = |v: Value| !dying.contains(&v);
        let ctx = Context {
            target: &p.target,
            class: ClassId(0),
            units,
            values: &f.values,
            lives_on: &lives_on,
        };
        let ops = Operands {
            defs: &op.defs,
            operands: &op.operands,
        };
        let mut built = Built::default();
        build_into(&ctx, &residents, ops, &mut built);
        built
    }

    #[test]
    fn dying_operand_and_definition_share_the_file() {
        let b = built(
            "  %a:v1 = x\n  %b:v1 = y\n  %c:v2 = z %a, %b",
            2,
            &["a", "b"],
            &["a", "b"],
        );
        assert!(canonical(&b.problem).is_some());
        let b = built(
            "  %a:v1 = x\n  %b:v1 = y\n  %c:v2 = z %a, %b early",
            3,
            &["a", "b"],
            &["a", "b"],
        );
        assert!(canonical(&b.problem).is_none(), "early-clobber needs 4");
    }

    #[test]
    fn tied_use_that_lives_on_is_copied() {
        let b = built("  %a:v1 = x\n  %c:v1 = mac %a, %a tied(1)", 2, &["a"], &[]);
        assert_eq!(b.roles.len(), 2);
        assert_eq!(b.roles[1], Role::Copy(Value(0)));
        assert_eq!(b.defs, [Some(1)]);
        assert_eq!(b.reads, [Some(0), Some(1)]);
        assert!(canonical(&b.problem).is_some());
        let b = built("  %a:v1 = x\n  %c:v1 = mac %a, %a tied(1)", 1, &["a"], &[]);
        assert!(canonical(&b.problem).is_none());
    }

    #[test]
    fn dying_tied_use_gives_its_register_to_the_definition() {
        let b = built("  %a:v1 = x\n  %c:v1 = mac %a tied(0)", 1, &["a"], &["a"]);
        assert_eq!(b.defs, [Some(0)]);
        assert_eq!(b.problem.items[0].span, Span::Both);
        assert!(canonical(&b.problem).is_some());
    }

    #[test]
    fn fixed_use_overwritten_by_a_fixed_definition_reads_a_copy() {
        let b = built(
            "  %a:v1 = x\n  %c:v1 fixed(v2) = mul %a fixed(v2)",
            3,
            &["a"],
            &[],
        );
        assert_eq!(
            b.roles,
            [Role::Value(Value(0)), Role::Copy(Value(0)), Role::Def(0)]
        );
        assert_eq!(b.problem.items[0].pinned, None);
        assert_eq!(b.problem.items[1].pinned, Some(2));
        let at = canonical(&b.problem).expect("fits");
        assert_ne!(at[0], 2);
    }

    #[test]
    fn tie_does_not_take_an_item_pinned_where_another_definition_is_fixed() {
        let b = built(
            "  %a:v1 = x\n  %c:v1, %d:v1 fixed(v0) = split %a, %a fixed(v0) tied(0)",
            2,
            &["a"],
            &["a"],
        );
        let tied = b.defs[0].expect("the tied definition has an item");
        assert_ne!(b.problem.items[tied].pinned, Some(0));
        assert!(matches!(b.roles[tied], Role::Copy(_)), "{:?}", b.roles);
        let at = canonical(&b.problem).expect("fits in 2: a copy of %a, then %d in v0");
        assert_ne!(at[tied], 0);
    }

    #[test]
    fn a_value_fixed_to_two_registers_is_read_from_one_and_a_copy() {
        let b = built(
            "  %a:v1 = x\n  %c:v1 = mul %a fixed(v3), %a fixed(v5)",
            6,
            &["a"],
            &["a"],
        );
        assert_eq!(b.reads, [Some(0), Some(1)]);
        assert_eq!(b.problem.items[0].pinned, Some(3));
        assert_eq!(b.problem.items[1].pinned, Some(5));
    }
}
