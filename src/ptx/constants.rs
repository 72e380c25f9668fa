//! Constants at their uses ([`super::operands`] decides each): a use SASS reads without a
//! register becomes an immediate operand of the program (no register, no live range to
//! it); any other use reads a copy of the constant's definition made just before it (at
//! the end of the predecessor for a phi argument). The original definitions are then
//! unread, and [`super::cleanup`] removes them.

use super::ast::{FunctionAst, Item};
use super::ir::{Binding, IrFunction, IrInst, Origin, Slot};
use super::operands::{literal_takes_slot, read, Constant, Position, Read};
use super::ssa::use_of;
use crate::program::*;
use std::collections::HashMap;

/// Rewrites every use of a constant; returns the constant statements some use reads
/// without a register (the exporter keeps them, writing a register of their own).
pub fn place(ir: &mut IrFunction, f: &FunctionAst) -> HashMap<usize, super::ast::RegType> {
    let defs = constant_defs(ir);
    let tuples = collects(ir);
    let mut kept = HashMap::new();
    for b in 0..ir.blocks.len() {
        rewrite_block(ir, f, &defs, &tuples, b, &mut kept);
    }
    rewrite_edges(ir, &defs);
    kept
}

/// Per constant value: the operation that defines it.
fn constant_defs(ir: &IrFunction) -> HashMap<Value, IrInst> {
    let mut defs = HashMap::new();
    for b in &ir.blocks {
        for i in &b.insts {
            if let [d] = i.op.defs.as_slice() {
                if ir.values[d.value.index()].constant.is_some() && i.op.remat {
                    defs.insert(d.value, i.clone());
                }
            }
        }
    }
    defs
}

/// An immediate standing for a constant in the program: its bits, or for a constant-bank
/// operand the item of its statement.
fn token(c: Constant, def: &IrInst) -> i64 {
    match (c, &def.origin) {
        (Constant::Imm { bits, .. }, _) => bits,
        (Constant::Bank, origin) => origin.item().map_or(0, |i| i as i64),
    }
}

fn rewrite_block(
    ir: &mut IrFunction,
    f: &FunctionAst,
    defs: &HashMap<Value, IrInst>,
    tuples: &HashMap<Value, Vec<Value>>,
    b: usize,
    kept: &mut HashMap<usize, super::ast::RegType>,
) {
    let insts = std::mem::take(&mut ir.blocks[b].insts);
    let mut out = Vec::with_capacity(insts.len());
    for mut inst in insts {
        let stmt = match inst.origin {
            Origin::Stmt { item, .. } => match &f.items[item] {
                Item::Stmt(s) => Some(s),
                _ => None,
            },
            _ => None,
        };
        let mut slot_taken = stmt.is_some_and(literal_takes_slot);
        zero_tuples(ir, defs, tuples, &mut inst, kept);
        for k in 0..inst.op.operands.len() {
            let Operand::Value(u) = inst.op.operands[k] else {
                continue;
            };
            let Some(def) = defs.get(&u.value) else {
                continue;
            };
            let Some(c) = ir.values[u.value.index()].constant else {
                continue;
            };
            let pos = match stmt {
                Some(_) => inst.positions[k],
                None => Position::Register,
            };
            let how = stmt.map_or(Read::Register, |s| read(s, pos, c, slot_taken));
            match how {
                Read::ZeroRegister | Read::Slot => {
                    slot_taken |= how == Read::Slot;
                    read_as_immediate(&mut inst, k, token(c, def));
                    if let Some(item) = def.origin.item() {
                        fold_bindings(&mut inst.origin, k, item);
                        kept.insert(item, ir.values[u.value.index()].ty);
                    }
                }
                Read::Register => {
                    let (copy, v) = rematerialise(ir, def, u.pos);
                    out.push(copy);
                    inst.op.operands[k] = Operand::Value(use_of(v, u.pos));
                }
            }
        }
        out.push(inst);
    }
    ir.blocks[b].insts = out;
}

/// Operand `k` of `inst` becomes the immediate `imm`; a definition that preferred its
/// register (an `mma` accumulator reading its input) has none left to prefer.
fn read_as_immediate(inst: &mut IrInst, k: usize, imm: i64) {
    inst.op.operands[k] = Operand::imm(imm);
    for def in &mut inst.op.defs {
        if def.prefer == Some(k as u16) {
            def.prefer = None;
        }
    }
}

/// Tuple sources collected from zeros only become `RZ`: the operand an immediate zero,
/// each element's occurrence the kept constant of the element's statement.
fn zero_tuples(
    ir: &IrFunction,
    defs: &HashMap<Value, IrInst>,
    sites: &HashMap<Value, Vec<Value>>,
    inst: &mut IrInst,
    kept: &mut HashMap<usize, super::ast::RegType>,
) {
    for k in 0..inst.op.operands.len() {
        let Operand::Value(u) = inst.op.operands[k] else {
            continue;
        };
        if inst.positions[k] != Position::Tuple {
            continue;
        }
        let Some(parts) = sites.get(&u.value) else {
            continue;
        };
        let zero = |v: &Value| {
            ir.values[v.index()].constant
                == Some(Constant::Imm {
                    bits: 0,
                    pred: false,
                })
                && defs.contains_key(v)
        };
        if !parts.iter().all(zero) {
            continue;
        }
        read_as_immediate(inst, k, 0);
        if let Origin::Stmt { bindings, .. } = &mut inst.origin {
            for b in bindings.iter_mut() {
                let Slot::Use { operand, elem } = b.slot else {
                    continue;
                };
                let item = parts
                    .get(usize::from(elem))
                    .and_then(|v| defs[v].origin.item());
                if let (true, Some(item)) = (operand == k, item) {
                    b.slot = Slot::Folded { item };
                    kept.insert(item, ir.values[parts[usize::from(elem)].index()].ty);
                }
            }
        }
    }
}

/// Per tuple a `collect` defines: the collected values.
fn collects(ir: &IrFunction) -> HashMap<Value, Vec<Value>> {
    let mut out = HashMap::new();
    for i in ir.blocks.iter().flat_map(|b| &b.insts) {
        if i.origin == Origin::Collect {
            let parts: Option<Vec<Value>> =
                i.op.operands
                    .iter()
                    .map(|o| o.as_use().map(|u| u.value))
                    .collect();
            if let Some(parts) = parts {
                out.insert(i.op.defs[0].value, parts);
            }
        }
    }
    out
}

/// The occurrences of operand `k` now print the kept constant of statement `item`.
fn fold_bindings(origin: &mut Origin, k: usize, item: usize) {
    if let Origin::Stmt { bindings, .. } = origin {
        for b in bindings.iter_mut() {
            if matches!(b.slot, Slot::Use { operand, .. } if operand == k) {
                b.slot = Slot::Folded { item };
            }
        }
    }
}

/// A copy of a constant's definition, defining a new value.
fn rematerialise(ir: &mut IrFunction, def: &IrInst, pos: Pos) -> (IrInst, Value) {
    let old = def.op.defs[0].value;
    let data = ir.values[old.index()].clone();
    let name = data.data.name.split('.').next().unwrap_or("c").to_string();
    let v = ir.value(&name, data.data.class, data.data.size, data.ty, pos);
    ir.values[v.index()].constant = data.constant;
    let mut copy = def.clone();
    copy.pos = pos;
    copy.op.defs = smallvec![Def::new(v, pos)];
    copy.origin = match &def.origin {
        Origin::Stmt { item, bindings } | Origin::Remat { item, bindings } => Origin::Remat {
            item: *item,
            bindings: bindings
                .iter()
                .filter(|b| matches!(b.slot, Slot::Def { .. }))
                .copied()
                .collect::<Vec<Binding>>(),
        },
        other => other.clone(),
    };
    (copy, v)
}

/// Phi arguments and branch conditions that are constants: a copy at the end of the block.
fn rewrite_edges(ir: &mut IrFunction, defs: &HashMap<Value, IrInst>) {
    let mut at_end: Vec<Vec<(usize, usize, usize, Value)>> = vec![Vec::new(); ir.blocks.len()];
    for (b, block) in ir.blocks.iter().enumerate() {
        for (p, phi) in block.phis.iter().enumerate() {
            for (a, arg) in phi.args.iter().enumerate() {
                if defs.contains_key(&arg.value) {
                    at_end[arg.block.index()].push((b, p, a, arg.value));
                }
            }
        }
    }
    for (pred, list) in at_end.into_iter().enumerate() {
        for (b, p, a, value) in list {
            let pos = ir.blocks[pred].term.pos();
            let (copy, v) = rematerialise(ir, &defs[&value], pos);
            ir.blocks[pred].insts.push(copy);
            ir.blocks[b].phis[p].args[a].value = v;
        }
    }
    for b in 0..ir.blocks.len() {
        let cond = ir.blocks[b].term.uses().first().map(|u| (u.value, u.pos));
        if let Some((value, pos)) = cond.filter(|(v, _)| defs.contains_key(v)) {
            let (copy, v) = rematerialise(ir, &defs[&value], pos);
            ir.blocks[b].insts.push(copy);
            ir.blocks[b].term.uses_mut()[0].value = v;
        }
    }
}
