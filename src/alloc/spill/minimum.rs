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
//! instruction cannot be placed. A terminator needs its operands; a phi needs nothing (a
//! phi can live in memory).

use crate::alloc::operands::{self, Context, Operands};
use crate::alloc::packing;
use crate::program::{Function, Operand, Pos, Value};
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
    for block in &f.blocks {
        for inst in &block.insts {
            if let Some(op) = inst.op() {
                let ops = Operands {
                    defs: &op.defs,
                    operands: &op.operands,
                };
                raise(&mut need, f, target, ops, inst.pos);
            }
        }
        let uses: Vec<Operand> = block
            .term
            .uses()
            .iter()
            .map(|u| Operand::Value(*u))
            .collect();
        raise(
            &mut need,
            f,
            target,
            Operands::uses_only(&uses),
            block.term.pos(),
        );
    }
    need
}

fn raise(need: &mut [Need], f: &Function, target: &Target, ops: Operands, pos: Pos) {
    for c in target.class_ids() {
        let units = instruction_need(f, target, c, ops);
        if units > need[c.index()].units {
            need[c.index()] = Need { units, pos };
        }
    }
}

/// The smallest budget of `class` at which the instruction fits alone (the class's
/// units plus one when none does).
pub fn instruction_need(f: &Function, target: &Target, class: ClassId, ops: Operands) -> u32 {
    let of_class = |v: &Value| f.value(*v).class == class;
    let mut reads: Vec<Value> = ops
        .operands
        .iter()
        .filter_map(Operand::as_use)
        .map(|u| u.value)
        .filter(of_class)
        .collect();
    reads.sort();
    reads.dedup();
    let writes = ops.defs.iter().any(|d| of_class(&d.value));
    if reads.is_empty() && !writes {
        return 0;
    }
    let residents: Vec<(Value, Option<u16>)> = reads.iter().map(|&v| (v, None)).collect();
    let shape = |v: Value| (f.value(v).class, f.value(v).size);
    let never = |_: Value| false;
    let units = target.class(class).units;
    let fits_in = |k: u16| {
        let ctx = Context {
            target,
            class,
            units: k,
            shape: &shape,
            lives_on: &never,
        };
        packing::fits(&operands::build(&ctx, &residents, ops).problem)
    };
    (1..=units)
        .find(|&k| fits_in(k))
        .map_or(u32::from(units) + 1, u32::from)
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
    fn a_fixed_use_overwritten_by_a_fixed_def_needs_no_extra_unit_when_spilled_around() {
        // %a lives on, but at the lowest budget it is stored before and reloaded after.
        let need = need_of(
            "target generic v=8\nfunc @f {\nb:\n  %a:v1 = x\n  %c:v1 fixed(v0) = mul %a fixed(v0)\n  %d:v1 = add %a, %c\n  ret %d\n}\n",
            "v",
        );
        assert_eq!(need.units, 2, "the add reads two");
    }
}
