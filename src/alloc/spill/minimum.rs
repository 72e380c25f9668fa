//! The lowest legal budget: what the single most demanding instruction needs when every
//! value not read or written by it has been spilled around it.
//!
//! At an operation the operands are read while early-clobber definitions are already
//! written, and every definition (dead or not) is written after: the demand is
//! `max(uses + early, defs)` units per class. A terminator needs its uses. A fixed
//! register must lie inside the budget. Phis need nothing: a phi can live in memory.

use crate::program::{Function, Location, Op};
use crate::target::{ClassId, Target};

/// The most demanding place of a class: units needed and the instruction's position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub units: u32,
    pub pos: crate::program::Pos,
}

/// Per class, the largest demand of any instruction of `f` (zero units when none).
pub fn lowest_legal(f: &Function, target: &Target) -> Vec<Need> {
    let mut need = vec![
        Need {
            units: 0,
            pos: f.pos
        };
        target.classes.len()
    ];
    let mut raise = |c: ClassId, units: u32, pos| {
        if units > need[c.index()].units {
            need[c.index()] = Need { units, pos };
        }
    };
    for block in &f.blocks {
        for op in block.insts.iter().filter_map(|i| i.op()) {
            for c in target.class_ids() {
                raise(c, op_demand(f, op, c), block_pos(op).unwrap_or(block.pos));
            }
        }
        for c in target.class_ids() {
            let uses = distinct_units(f, block.term.uses().iter().map(|u| u.value), c);
            raise(c, uses, block.term.pos());
        }
        let term_fixed = block
            .term
            .uses()
            .iter()
            .filter_map(|u| Some((u.fixed?, u.pos)));
        let fixed = block
            .insts
            .iter()
            .filter_map(|i| i.op())
            .flat_map(fixed_locations);
        for (loc, pos) in fixed.chain(term_fixed) {
            if let Location::Reg { class, first, len } = loc {
                raise(class, u32::from(first) + u32::from(len), pos);
            }
        }
    }
    need
}

fn block_pos(op: &Op) -> Option<crate::program::Pos> {
    op.defs
        .first()
        .map(|d| d.pos)
        .or_else(|| op.uses().next().map(|u| u.pos))
}

fn op_demand(f: &Function, op: &Op, c: ClassId) -> u32 {
    let uses = distinct_units(f, op.uses().map(|u| u.value), c);
    let of_class = |d: &&crate::program::Def| f.value(d.value).class == c;
    let size = |d: &crate::program::Def| u32::from(f.value(d.value).size);
    let early: u32 = op
        .defs
        .iter()
        .filter(of_class)
        .filter(|d| d.early_clobber)
        .map(size)
        .sum();
    let defs: u32 = op.defs.iter().filter(of_class).map(size).sum();
    (uses + early).max(defs)
}

fn distinct_units(
    f: &Function,
    values: impl Iterator<Item = crate::program::Value>,
    c: ClassId,
) -> u32 {
    let mut seen: Vec<crate::program::Value> = values.filter(|v| f.value(*v).class == c).collect();
    seen.sort();
    seen.dedup();
    seen.iter().map(|v| u32::from(f.value(*v).size)).sum()
}

fn fixed_locations(op: &Op) -> impl Iterator<Item = (Location, crate::program::Pos)> + '_ {
    let uses = op.uses().filter_map(|u| Some((u.fixed?, u.pos)));
    let defs = op.defs.iter().filter_map(|d| Some((d.fixed?, d.pos)));
    uses.chain(defs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demand_is_uses_plus_early_or_defs() {
        let p = crate::parse(
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
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let v = p.target.class_by_name("v").unwrap();
        let need = lowest_legal(&p.functions[0], &p.target);
        // `split4` defines 4 units; `add` reads 2 and writes 1 early: 3; `mad` reads 3.
        assert_eq!(need[v.index()].units, 4);
        assert_eq!(need[v.index()].pos.line, 7);
    }

    #[test]
    fn a_fixed_register_raises_the_need_to_its_end() {
        let p = crate::parse(
            "target generic s=8 v=8
func @f {
b:
  %a:v1 fixed(v5) = mov 1
  ret %a
}
",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let v = p.target.class_by_name("v").unwrap();
        assert_eq!(lowest_legal(&p.functions[0], &p.target)[v.index()].units, 6);
    }
}
