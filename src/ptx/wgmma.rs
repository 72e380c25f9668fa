//! Asynchronous warpgroup MMA (PTX ISA §9.7.15): `wgmma.mma_async` reads and writes its
//! accumulator registers in the background, and accessing them before a
//! `wgmma.wait_group` that covers it is undefined. The PTX text of the wait names no
//! register, so this pass finds which accumulators are in flight at each wait (a forward
//! may-analysis over blocks: an `mma_async` adds its accumulator, `wait_group 0` retires
//! all) and makes the wait read and redefine each of them, tied, like Triton's own
//! `// wait for regs:` operands. The accumulators of `mma_async` and of a `wait_group N`
//! with N > 0 (the newest N groups may still be in flight) are *pinned*: never moved,
//! spilled or reloaded while live; a `wait_group 0`'s are ordinary values.

use super::cfg::PBlock;
use super::lower::{Group, LUse};
use super::operands::Position;

/// Adds the in-flight accumulators to every `wgmma.wait_group` of `blocks`.
pub fn add_wait_operands(blocks: &mut [PBlock]) {
    if !blocks.iter().flat_map(|b| &b.insts).any(|l| l.async_mma) {
        return;
    }
    let pending_in = pending_at_entry(blocks);
    wire_waits(blocks, &pending_in);
}

/// The accumulators in flight at each block's entry.
fn pending_at_entry(blocks: &[PBlock]) -> Vec<Vec<Group>> {
    let mut preds = vec![Vec::new(); blocks.len()];
    for (b, block) in blocks.iter().enumerate() {
        for s in block.term.successors() {
            preds[s].push(b);
        }
    }
    let mut entry: Vec<Vec<Group>> = vec![Vec::new(); blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for b in 0..blocks.len() {
            let mut state: Vec<Group> = Vec::new();
            for &p in &preds[b] {
                let out = exit_state(&blocks[p], &entry[p]);
                for g in out {
                    insert(&mut state, g);
                }
            }
            sort(&mut state);
            if state != entry[b] {
                entry[b] = state;
                changed = true;
            }
        }
    }
    entry
}

fn exit_state(block: &PBlock, entry: &[Group]) -> Vec<Group> {
    let mut state = entry.to_vec();
    for l in &block.insts {
        step(&mut state, l.async_mma, l.wait, &l.defs);
    }
    state
}

/// An `mma_async` puts its accumulator and register fragments in flight.
fn step(state: &mut Vec<Group>, async_mma: bool, wait: Option<i64>, defs: &[Group]) {
    if async_mma {
        for g in defs {
            insert(state, g.clone());
        }
        sort(state);
    }
    if wait == Some(0) {
        state.clear();
    }
}

/// Adds `g` unless a group of the same registers is there.
fn insert(state: &mut Vec<Group>, g: Group) {
    let key: Vec<Option<usize>> = g.vars().collect();
    if !state.iter().any(|s| s.vars().collect::<Vec<_>>() == key) {
        state.push(g);
    }
}

fn sort(state: &mut [Group]) {
    state.sort_by_key(|g| g.vars().collect::<Vec<_>>());
}

/// Gives each wait the accumulators in flight just before it.
fn wire_waits(blocks: &mut [PBlock], pending_in: &[Vec<Group>]) {
    for (b, block) in blocks.iter_mut().enumerate() {
        let mut pending = pending_in[b].clone();
        for l in &mut block.insts {
            if let Some(n) = l.wait {
                l.defs.clear();
                l.uses.clear();
                l.tied.clear();
                for (i, g) in pending.iter().enumerate() {
                    let g = Group {
                        in_text: false,
                        ..g.clone()
                    };
                    l.uses.push(LUse::Group(g.clone(), Position::Register));
                    l.defs.push(g);
                    l.tied.push((i, i));
                }
                l.pinned = n > 0;
            }
            step(&mut pending, l.async_mma, l.wait, &l.defs);
        }
    }
}
