//! Value numbering in text order, the order in which the parser numbers values, so that a
//! generated or shrunk program equals its printed-and-parsed form.

use crate::program::*;

/// `f` with values numbered (and named `%vN`) in order of definition in the text, blocks
/// in order and phis before operations; values nothing defines are dropped.
pub(super) fn canonical_values(mut f: Function) -> Function {
    let mut new_index = vec![u32::MAX; f.values.len()];
    let mut values = Vec::with_capacity(f.values.len());
    let mut define = |v: Value| {
        if new_index[v.index()] == u32::MAX {
            new_index[v.index()] = values.len() as u32;
            let mut data: ValueData = f.values[v.index()].clone();
            data.name = compact_str::format_compact!("v{}", values.len());
            values.push(data);
        }
    };
    for block in &f.blocks {
        block.phis.iter().for_each(|p| define(p.def.value));
        for op in block.insts.iter().filter_map(Inst::op) {
            op.defs.iter().for_each(|d| define(d.value));
        }
    }
    f.values = values;
    renumber_values(&mut f, &new_index);
    f
}

/// Replaces every value `v` mentioned in `g` by `Value(new_index[v])`.
pub(super) fn renumber_values(g: &mut Function, new_index: &[u32]) {
    g.map_values(|v| Value(new_index[v.index()]));
}
