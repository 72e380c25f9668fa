//! PHIs that differ only where one of them is undefined are one value.
//!
//! LLVM's structurizer (`StructurizeCFG`, `SIAnnotateControlFlow`) builds its `Flow`
//! blocks with PHIs whose argument on the skipping edge is `undef`, often beside a PHI of
//! the same block that takes the same value on every other edge: a peeled MFMA loop's
//! `Flow` block in `t08_grouped_gemm_128x128x32_w4-gfx942` has 64 PHIs `[undef, %acc.k]`
//! and 64 PHIs `[%peel.k, %acc.k]`, so 128 AGPR values enter it where 64 values are
//! distinct. LLVM's register coalescer joins such pairs: an `IMPLICIT_DEF` value may take
//! any value, so it never conflicts with the value it is joined to (`JoinVals` in
//! `RegisterCoalescer.cpp`, an undefined value "can be erased"). Here the same holds
//! in SSA: a PHI `p` *is covered by* a PHI `q` of the same block, class and size when on
//! every edge `p`'s argument is `q`'s or undefined (defined by `IMPLICIT_DEF`); then `p`
//! may hold `q`'s value on every path — where `p` was undefined any value is a
//! refinement — and every read of `p` reads `q` instead. Merging can make PHIs of later
//! blocks congruent, so it repeats until nothing changes (one pass per merge wave: at
//! most the number of blocks). This is the redundant-PHI removal of Braun et al.,
//! "Simple and Efficient Construction of Static Single Assignment Form" (CC 2013, §3.2),
//! with `undef` matching anything. The `IMPLICIT_DEF`s left unread are removed.

use crate::program::{Function, InstKind, Phi, Value};
use std::collections::HashSet;

/// Merges every PHI covered by another PHI of its block into that PHI.
pub fn merge_undef_congruent_phis(f: &mut Function) {
    loop {
        let undefined = implicit_defs(f);
        let replace = covered_phis(f, &undefined);
        if replace.iter().all(Option::is_none) {
            break;
        }
        let to = |mut v: Value| {
            while let Some(next) = replace[v.index()] {
                v = next;
            }
            v
        };
        for block in &mut f.blocks {
            block
                .phis
                .retain(|p| replace[p.def.value.index()].is_none());
        }
        f.map_values(to);
    }
    drop_unread_implicit_defs(f);
}

/// Values defined by an `IMPLICIT_DEF` (no operands): undefined, any value will do.
fn implicit_defs(f: &Function) -> HashSet<Value> {
    f.blocks
        .iter()
        .flat_map(|b| b.insts.iter().filter_map(|i| i.op()))
        .filter(|op| op.opcode == "IMPLICIT_DEF" && op.operands.is_empty())
        .flat_map(|op| op.defs.iter().map(|d| d.value))
        .collect()
}

/// Per value, the PHI that covers it (when it is a covered PHI). A PHI already replaced is
/// never chosen to cover, so replacements form chains (a PHI chosen to cover may be
/// replaced later in the pass) but no cycle.
fn covered_phis(f: &Function, undefined: &HashSet<Value>) -> Vec<Option<Value>> {
    let mut replace = vec![None; f.values.len()];
    for block in &f.blocks {
        for (i, p) in block.phis.iter().enumerate() {
            if p.args.iter().all(|a| undefined.contains(&a.value)) {
                continue;
            }
            let cover = block.phis.iter().enumerate().find(|&(j, q)| {
                j != i
                    && replace[q.def.value.index()].is_none()
                    && same_kind(f, p.def.value, q.def.value)
                    && covers(q, p, undefined)
                    && (!covers(p, q, undefined) || j < i)
            });
            if let Some((_, q)) = cover {
                replace[p.def.value.index()] = Some(q.def.value);
            }
        }
    }
    replace
}

fn same_kind(f: &Function, a: Value, b: Value) -> bool {
    let (a, b) = (&f.values[a.index()], &f.values[b.index()]);
    a.class == b.class && a.size == b.size
}

/// Whether `q` takes `p`'s argument, or `p`'s argument is undefined, on every edge.
fn covers(q: &Phi, p: &Phi, undefined: &HashSet<Value>) -> bool {
    p.args.iter().all(|a| {
        undefined.contains(&a.value)
            || q.args
                .iter()
                .any(|b| b.block == a.block && b.value == a.value)
    })
}

/// Removes the `IMPLICIT_DEF`s whose value nothing reads any more.
fn drop_unread_implicit_defs(f: &mut Function) {
    let undefined = implicit_defs(f);
    let mut read = HashSet::new();
    for block in &f.blocks {
        for p in &block.phis {
            read.extend(p.args.iter().map(|a| a.value));
        }
        for op in block.insts.iter().filter_map(|i| i.op()) {
            read.extend(op.uses().map(|u| u.value));
        }
        read.extend(block.term.uses().iter().map(|u| u.value));
    }
    for block in &mut f.blocks {
        block.insts.retain(|inst| match &inst.kind {
            InstKind::Op(op) => !op
                .defs
                .first()
                .is_some_and(|d| undefined.contains(&d.value) && !read.contains(&d.value)),
            _ => true,
        });
    }
}
