//! Tuples that SSA construction took apart and put back together.
//!
//! SSA construction splits every tuple definition into its elements and collects elements
//! into a tuple before every tuple use, so that PTX registers keep their per-element
//! identity. Where the elements go back unchanged this costs copies the hardware would
//! never make, and for `wgmma` accumulators it would move registers that are in flight:
//!
//! - a `collect` of the elements of one `split`, in order, is that split's tuple;
//! - phis of one block whose values a `collect` reads in order, and whose arguments on
//!   some edge are the elements of one `split` in order (a loop-carried accumulator),
//!   become one tuple phi: on each edge its argument is that split's tuple, or a `collect`
//!   of the arguments at the end of the predecessor; a `split` at the top of the block gives
//!   the elements to their other readers.

use super::ir::{IrFunction, IrInst, Origin, Site};
use super::ssa::{helper, use_of};
use crate::program::*;

/// Applies both rules until neither fires; whether any did.
pub fn simplify(ir: &mut IrFunction) -> bool {
    let mut any = false;
    loop {
        let changed = collect_of_split(ir) | phi_groups(ir);
        if !changed {
            return any;
        }
        any = true;
    }
}

/// The tuple whose `split` defines `parts` in order, if any.
fn split_source(ir: &IrFunction, sites: &[Option<Site>], parts: &[Value]) -> Option<Value> {
    let Some(Site::Inst {
        block,
        inst,
        def: 0,
    }) = sites[parts.first()?.index()]
    else {
        return None;
    };
    let i = &ir.blocks[block].insts[inst];
    if i.origin != Origin::Split || i.op.defs.len() != parts.len() {
        return None;
    }
    let in_order = i.op.defs.iter().zip(parts).all(|(d, &p)| d.value == p);
    let source = i.op.uses().next()?.value;
    in_order.then_some(source)
}

fn operand_values(op: &Op) -> Option<Vec<Value>> {
    op.operands
        .iter()
        .map(|o| o.as_use().map(|u| u.value))
        .collect()
}

/// Rule 1: `collect(split(t))` is `t`.
fn collect_of_split(ir: &mut IrFunction) -> bool {
    let sites = ir.def_sites();
    let uses = ir.use_counts();
    let mut map: Vec<Option<Value>> = vec![None; ir.values.len()];
    let mut found = false;
    for b in &ir.blocks {
        for i in b.insts.iter().filter(|i| i.origin == Origin::Collect) {
            let Some(parts) = operand_values(&i.op) else {
                continue;
            };
            let Some(t) = split_source(ir, &sites, &parts) else {
                continue;
            };
            let c = i.op.defs[0].value;
            if uses[c.index()] > 0
                && ir.values[t.index()].data.size == ir.values[c.index()].data.size
            {
                map[c.index()] = Some(t);
                found = true;
            }
        }
    }
    if found {
        ir.replace_uses(&|v| map[v.index()].unwrap_or(v));
    }
    found
}

/// Rule 2: a group of phis read in order by a `collect` becomes one tuple phi.
fn phi_groups(ir: &mut IrFunction) -> bool {
    let sites = ir.def_sites();
    for b in &ir.blocks {
        for i in b.insts.iter().filter(|i| i.origin == Origin::Collect) {
            let Some(parts) = operand_values(&i.op) else {
                continue;
            };
            let Some((block, phis)) = phi_group(&sites, &parts) else {
                continue;
            };
            let tuple = i.op.defs[0].value;
            if edge_tuples(ir, &sites, block, &phis)
                .iter()
                .any(Option::is_some)
            {
                merge_phis(ir, &sites, block, &phis, tuple);
                return true;
            }
        }
    }
    false
}

/// The block and phi indices when `parts` are distinct phis of one block.
fn phi_group(sites: &[Option<Site>], parts: &[Value]) -> Option<(usize, Vec<usize>)> {
    let mut block = None;
    let mut phis = Vec::with_capacity(parts.len());
    for &p in parts {
        let Some(Site::Phi { block: b, phi }) = sites[p.index()] else {
            return None;
        };
        if block.is_some_and(|x| x != b) || phis.contains(&phi) {
            return None;
        }
        block = Some(b);
        phis.push(phi);
    }
    block.map(|b| (b, phis))
}

/// Per predecessor edge of the phis, the tuple whose split gives their arguments in order.
fn edge_tuples(
    ir: &IrFunction,
    sites: &[Option<Site>],
    block: usize,
    phis: &[usize],
) -> Vec<Option<Value>> {
    let b = &ir.blocks[block];
    let first = &b.phis[phis[0]];
    first
        .args
        .iter()
        .map(|a| {
            let parts: Option<Vec<Value>> = phis
                .iter()
                .map(|&p| {
                    b.phis[p]
                        .args
                        .iter()
                        .find(|x| x.block == a.block)
                        .map(|x| x.value)
                })
                .collect();
            split_source(ir, sites, &parts?)
        })
        .collect()
}

fn merge_phis(
    ir: &mut IrFunction,
    sites: &[Option<Site>],
    block: usize,
    phis: &[usize],
    like: Value,
) {
    let tuples = edge_tuples(ir, sites, block, phis);
    let data = ir.values[like.index()].clone();
    let pos = ir.blocks[block].pos;
    let t = ir.value("tuple", data.data.class, data.data.size, data.ty, pos);
    let preds: Vec<Block> = ir.blocks[block].phis[phis[0]]
        .args
        .iter()
        .map(|a| a.block)
        .collect();
    let mut args = Vec::with_capacity(preds.len());
    for (pred, tuple) in preds.iter().zip(tuples) {
        let value = match tuple {
            Some(v) => v,
            None => collect_at_end(ir, block, phis, *pred, like),
        };
        args.push(PhiArg {
            block: *pred,
            value,
            pos,
        });
    }
    let elements: Vec<Value> = phis
        .iter()
        .map(|&p| ir.blocks[block].phis[p].def.value)
        .collect();
    let mut defs = Vec::with_capacity(elements.len());
    let mut map = vec![None; ir.values.len()];
    for &e in &elements {
        let d = ir.values[e.index()].clone();
        let v = ir.value("elem", d.data.class, d.data.size, d.ty, pos);
        map[e.index()] = Some(v);
        defs.push(Def::new(v, pos));
    }
    let split = helper(
        "split",
        defs,
        vec![Operand::Value(use_of(t, pos))],
        pos,
        Origin::Split,
    );
    ir.replace_uses(&|v| map.get(v.index()).copied().flatten().unwrap_or(v));
    let b = &mut ir.blocks[block];
    b.phis.retain(|p| !elements.contains(&p.def.value));
    b.phis.push(Phi {
        def: Def::new(t, pos),
        args,
        pos,
    });
    b.insts.insert(0, split);
}

/// A `collect` of the phis' arguments from `pred`, at the end of `pred`.
fn collect_at_end(
    ir: &mut IrFunction,
    block: usize,
    phis: &[usize],
    pred: Block,
    like: Value,
) -> Value {
    let b = &ir.blocks[block];
    let parts: Vec<Value> = phis
        .iter()
        .filter_map(|&p| {
            b.phis[p]
                .args
                .iter()
                .find(|a| a.block == pred)
                .map(|a| a.value)
        })
        .collect();
    let data = ir.values[like.index()].clone();
    let pos = ir.blocks[pred.index()].pos;
    let t = ir.value("tuple", data.data.class, data.data.size, data.ty, pos);
    let operands = parts
        .iter()
        .map(|&v| Operand::Value(use_of(v, pos)))
        .collect();
    let inst: IrInst = helper(
        "collect",
        vec![Def::new(t, pos)],
        operands,
        pos,
        Origin::Collect,
    );
    ir.blocks[pred.index()].insts.push(inst);
    t
}
