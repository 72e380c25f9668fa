//! Memory-to-memory copies that slot colouring made empty. A memory phi's argument that is
//! itself spilled reaches the phi's location through a register: a reload from its own
//! location right before the store that the phi's edge makes. When colouring gave both
//! owners one location, the pair copies a location onto itself, so both go; the argument
//! stays where its own store put it, which is where the phi reads it (the location is
//! live from the argument's store to that reload, so nothing else was written there).
//! The spill oracle's model (Appel & George, "Optimal spilling for CISC machines with few
//! registers", PLDI 2001) lets a memory phi take an argument already in memory at no cost;
//! this pass gives the allocator the same where colouring shared the location. Such a
//! pair can only be where the rewrite recorded a reload right before a store
//! ([`Sites::reloads_before_stores`]), so the function is walked only when one is there.

use super::home_of;
use super::pseudo::{self, Pseudo};
use super::slots::Sites;
use crate::program::{Function, Inst, Location};

/// Removes every reload whose only use is the store right after it into the same
/// location; returns whether anything was removed. `sites` are the stores and reloads of
/// spill locations in `f`.
pub fn drop_self_copies(f: &mut Function, homes: &[Option<Location>], sites: &Sites) -> bool {
    let any_pair = sites.reloads_before_stores().any(|(b, k)| {
        let insts = &f.block(b).insts;
        copies_onto_itself(&insts[k], &insts[k + 1], homes)
    });
    if !any_pair {
        return false;
    }
    let uses = use_counts(f);
    let mut removed = false;
    for block in &mut f.blocks {
        let mut i = 0;
        while i + 1 < block.insts.len() {
            if is_self_copy(&block.insts[i], &block.insts[i + 1], homes, &uses) {
                block.insts.drain(i..i + 2);
                removed = true;
            } else {
                i += 1;
            }
        }
    }
    removed
}

/// Whether `reload` loads a location that `store`, its value's only use, writes back.
fn is_self_copy(reload: &Inst, store: &Inst, homes: &[Option<Location>], uses: &[usize]) -> bool {
    let loaded = reload
        .op()
        .and_then(|load| load.defs.first())
        .map(|d| d.value);
    copies_onto_itself(reload, store, homes) && loaded.is_some_and(|v| uses[v.index()] == 1)
}

/// Whether `reload` loads a location that `store` writes the loaded value back to. Only
/// such a pair can be a self-copy; a function without one needs no use counts.
fn copies_onto_itself(reload: &Inst, store: &Inst, homes: &[Option<Location>]) -> bool {
    let (Some(load), Some(save)) = (reload.op(), store.op()) else {
        return false;
    };
    if pseudo::classify(load) != Some(Pseudo::Reload)
        || pseudo::classify(save) != Some(Pseudo::Store)
    {
        return false;
    }
    let Some(loaded) = load.defs.first().map(|d| d.value) else {
        return false;
    };
    let stores_loaded = save.uses().any(|u| u.value == loaded);
    let home = |op| pseudo::owner(op).and_then(|o| home_of(homes, o));
    stores_loaded && home(load).is_some_and(|h| home(save) == Some(h))
}

/// Per value: how many operands, terminator operands and phi arguments read it.
fn use_counts(f: &Function) -> Vec<usize> {
    let mut n = vec![0; f.values.len()];
    for block in &f.blocks {
        let ops = block.insts.iter().filter_map(|i| i.op());
        for u in ops.flat_map(|op| op.uses()) {
            n[u.value.index()] += 1;
        }
        for u in block.term.uses() {
            n[u.value.index()] += 1;
        }
        for arg in block.phis.iter().flat_map(|p| &p.args) {
            n[arg.value.index()] += 1;
        }
    }
    n
}
