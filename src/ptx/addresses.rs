//! Address offsets SASS adds for free: a memory instruction addresses `[R + imm]` with a
//! signed 24-bit immediate, so a value `v = w + c` (an `add` or `sub` of a literal) that
//! is only ever used as the base of an address needs no register: each address reads `w`
//! with `c` added to its offset, and `v`'s definition goes. Chains (`v2 = v + c2`) add up.
//! The exporter writes such an address as `[w+c + …]`.

use super::ast::{FunctionAst, Item, Operand as AstOperand};
use super::ir::{IrFunction, Origin, Site, Slot};
use super::operands::Position;
use crate::program::*;

/// The largest offset magnitude an address immediate holds (signed 24 bits).
pub const MAX_OFFSET: i64 = (1 << 23) - 1;

/// `w` and `c` when `v`, defined at `site`, is `w + c`.
fn offset_of(ir: &IrFunction, f: &FunctionAst, site: Option<Site>) -> Option<(Value, i64)> {
    let Some(Site::Inst {
        block,
        inst,
        def: 0,
    }) = site
    else {
        return None;
    };
    let i = &ir.blocks[block].insts[inst];
    let Origin::Stmt { item, .. } = i.origin else {
        return None;
    };
    let Item::Stmt(stmt) = &f.items[item] else {
        return None;
    };
    if stmt.guard.is_some() || i.op.defs.len() != 1 {
        return None;
    }
    let sign = match stmt.base() {
        "add" => 1,
        "sub" => -1,
        _ => return None,
    };
    let value = |o: &Operand| o.as_use().map(|u| u.value);
    match (stmt.operands.as_slice(), i.op.operands.as_slice()) {
        ([_, AstOperand::Reg(_), AstOperand::Imm(c, ..)], [w, _]) => Some((value(w)?, sign * c)),
        ([_, AstOperand::Imm(c, ..), AstOperand::Reg(_)], [_, w]) if sign == 1 => {
            Some((value(w)?, *c))
        }
        _ => None,
    }
}

/// Folds every value used only as address bases into its addresses; whether any was.
pub fn fold(ir: &mut IrFunction, f: &FunctionAst) -> bool {
    let sites = ir.def_sites();
    let only = only_addresses(ir);
    let base: Vec<Option<(Value, i64)>> = (0..ir.values.len())
        .map(|v| offset_of(ir, f, sites[v]).filter(|_| only[v]))
        .collect();
    let resolve = |mut v: Value| {
        let mut offset = 0i64;
        while let Some((w, c)) = base[v.index()] {
            if (offset + c).abs() > MAX_OFFSET {
                break;
            }
            offset += c;
            v = w;
        }
        (v, offset)
    };
    let mut any = false;
    for b in &mut ir.blocks {
        for inst in &mut b.insts {
            for k in 0..inst.op.operands.len() {
                let Operand::Value(u) = &mut inst.op.operands[k] else {
                    continue;
                };
                if inst.positions[k] != Position::Address || base[u.value.index()].is_none() {
                    continue;
                }
                let (w, offset) = resolve(u.value);
                if offset == 0 && w == u.value {
                    continue;
                }
                u.value = w;
                any = true;
                if let Origin::Stmt { bindings, .. } = &mut inst.origin {
                    for binding in bindings.iter_mut() {
                        binding.slot = match binding.slot {
                            Slot::Use { operand, elem } if operand == k => Slot::Offset {
                                operand,
                                elem,
                                offset,
                            },
                            Slot::Offset {
                                operand,
                                elem,
                                offset: before,
                            } if operand == k => Slot::Offset {
                                operand,
                                elem,
                                offset: before + offset,
                            },
                            other => other,
                        };
                    }
                }
            }
        }
    }
    for (v, b) in base.iter().enumerate() {
        if b.is_some() {
            ir.values[v].address_only = true;
        }
    }
    any
}

/// Per value: whether it is used, and only as the base of addresses.
fn only_addresses(ir: &IrFunction) -> Vec<bool> {
    let mut used = vec![false; ir.values.len()];
    let mut other = vec![false; ir.values.len()];
    for b in &ir.blocks {
        for a in b.phis.iter().flat_map(|p| &p.args) {
            other[a.value.index()] = true;
        }
        for u in b.term.uses() {
            other[u.value.index()] = true;
        }
        for i in &b.insts {
            for (k, o) in i.op.operands.iter().enumerate() {
                let Some(u) = o.as_use() else { continue };
                used[u.value.index()] = true;
                if i.positions[k] != Position::Address || !matches!(i.origin, Origin::Stmt { .. }) {
                    other[u.value.index()] = true;
                }
            }
        }
    }
    used.iter().zip(other).map(|(u, o)| *u && !o).collect()
}
