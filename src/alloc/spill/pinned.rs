//! Where pinned values live: per instruction, the pinned values live across it.
//!
//! A `pinned` value (an asynchronous result in flight, `docs/FORMAT.md`) is never spilled
//! or moved, so every instruction it lives across must leave room for it; the lowest
//! legal budget counts it there ([`super::minimum`]). Classic backward liveness
//! (a fixpoint over the CFG, then one backward walk per block), restricted to the pinned
//! values, which are few; a phi's argument is live at the end of its predecessor, a
//! phi's result from the top of its block.

use crate::analysis::cfg::Graph;
use crate::program::{Block, Function, Inst, Value};
use std::collections::BTreeSet;

/// Per block, per instruction index: the pinned values live after the instruction that
/// it does not define (empty vectors when the function has no pinned value).
pub fn live_across(f: &Function) -> Vec<Vec<Vec<Value>>> {
    let pinned: BTreeSet<Value> = f.pinned_values().into_iter().collect();
    let empty = || {
        f.blocks
            .iter()
            .map(|b| vec![Vec::new(); b.insts.len()])
            .collect()
    };
    if pinned.is_empty() {
        return empty();
    }
    let cfg = Graph::of_function(f);
    let live_out = live_out(f, &cfg, &pinned);
    let mut out: Vec<Vec<Vec<Value>>> = empty();
    for b in f.block_ids() {
        let mut live = live_out[b.index()].clone();
        live.extend(term_uses(f, b, &pinned));
        for (i, inst) in f.block(b).insts.iter().enumerate().rev() {
            let defs = defs_of(inst);
            out[b.index()][i] = live.iter().copied().filter(|v| !defs.contains(v)).collect();
            step_back(inst, &pinned, &mut live);
        }
    }
    out
}

fn live_out(f: &Function, cfg: &Graph, pinned: &BTreeSet<Value>) -> Vec<BTreeSet<Value>> {
    let n = f.blocks.len();
    let mut live_in = vec![BTreeSet::new(); n];
    let mut live_out = vec![BTreeSet::new(); n];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..n as u32).rev().map(Block) {
            let mut out: BTreeSet<Value> = BTreeSet::new();
            for &s in cfg.succs(b) {
                out.extend(live_in[s.index()].iter().copied());
                let args = f.block(s).phis.iter().flat_map(|p| &p.args);
                out.extend(
                    args.filter(|a| a.block == b && pinned.contains(&a.value))
                        .map(|a| a.value),
                );
            }
            let mut live = out.clone();
            live.extend(term_uses(f, b, pinned));
            for inst in f.block(b).insts.iter().rev() {
                step_back(inst, pinned, &mut live);
            }
            for phi in &f.block(b).phis {
                live.remove(&phi.def.value);
            }
            live_out[b.index()] = out;
            if live != live_in[b.index()] {
                live_in[b.index()] = live;
                changed = true;
            }
        }
    }
    live_out
}

fn term_uses(f: &Function, b: Block, pinned: &BTreeSet<Value>) -> Vec<Value> {
    let uses = f.block(b).term.uses().iter().map(|u| u.value);
    uses.filter(|v| pinned.contains(v)).collect()
}

fn defs_of(inst: &Inst) -> Vec<Value> {
    inst.op()
        .map(|op| op.defs.iter().map(|d| d.value).collect())
        .unwrap_or_default()
}

fn step_back(inst: &Inst, pinned: &BTreeSet<Value>, live: &mut BTreeSet<Value>) {
    let Some(op) = inst.op() else { return };
    for d in &op.defs {
        live.remove(&d.value);
    }
    live.extend(op.uses().map(|u| u.value).filter(|v| pinned.contains(v)));
}
