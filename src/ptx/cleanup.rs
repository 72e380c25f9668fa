//! Cleanups after SSA construction: trivial phis (all arguments the same value, or the phi
//! itself) are replaced by that value (Braun et al., "Simple and Efficient Construction of
//! Static Single Assignment Form", CC 2013, §3.2), which copy forwarding leaves many of;
//! dead helper operations (`split`, `collect`, `undef`, rematerialised constants) and
//! constant definitions and address offsets nobody reads any more are removed, as are
//! dead phis. Original
//! operations with effects or results stay, read or not.

use super::ir::{IrFunction, Origin};
use crate::program::Value;

/// Replaces trivial phis until none is left; whether any was.
pub fn remove_trivial_phis(ir: &mut IrFunction) -> bool {
    let mut any = false;
    loop {
        let mut map: Vec<Option<Value>> = vec![None; ir.values.len()];
        let mut found = false;
        for b in &ir.blocks {
            for phi in &b.phis {
                let me = phi.def.value;
                let mut others = phi.args.iter().map(|a| a.value).filter(|&v| v != me);
                let Some(first) = others.next() else { continue };
                if others.all(|v| v == first) && map[me.index()].is_none() {
                    map[me.index()] = Some(first);
                    found = true;
                }
            }
        }
        if !found {
            return any;
        }
        any = true;
        let resolve = |mut v: Value| {
            let mut steps = 0;
            while let Some(next) = map[v.index()] {
                v = next;
                steps += 1;
                if steps > map.len() {
                    break;
                }
            }
            v
        };
        let replaced: Vec<Value> = (0..ir.values.len() as u32)
            .map(|v| resolve(Value(v)))
            .collect();
        ir.replace_uses(&|v| replaced[v.index()]);
        for b in &mut ir.blocks {
            b.phis.retain(|p| map[p.def.value.index()].is_none());
        }
    }
}

/// Whether an operation may go when none of its definitions is read.
fn removable(ir: &IrFunction, origin: &Origin, defs: &[crate::program::Def]) -> bool {
    match origin {
        Origin::Split
        | Origin::Collect
        | Origin::Undef
        | Origin::Literal { .. }
        | Origin::Remat { .. } => true,
        Origin::Stmt { .. } => {
            let v = defs.first().map(|d| &ir.values[d.value.index()]);
            defs.len() == 1 && v.is_some_and(|v| v.constant.is_some() || v.address_only)
        }
    }
}

/// Removes dead phis and dead removable operations until none is left; whether any was.
pub fn remove_dead(ir: &mut IrFunction) -> bool {
    let mut any = false;
    loop {
        let uses = ir.use_counts();
        let dead = |v: Value| uses[v.index()] == 0;
        let mut removed = false;
        for bi in 0..ir.blocks.len() {
            let before = ir.blocks[bi].phis.len() + ir.blocks[bi].insts.len();
            let keep: Vec<bool> = ir.blocks[bi]
                .insts
                .iter()
                .map(|i| {
                    !(removable(ir, &i.origin, &i.op.defs)
                        && i.op.defs.iter().all(|d| dead(d.value)))
                })
                .collect();
            let b = &mut ir.blocks[bi];
            b.phis.retain(|p| !dead(p.def.value));
            let mut k = keep.iter();
            b.insts.retain(|_| *k.next().unwrap_or(&true));
            removed |= b.phis.len() + b.insts.len() != before;
        }
        if !removed {
            return any;
        }
        any = true;
    }
}
