//! Tuples read only by their parts: which virtual registers become separate values.
//!
//! LLVM tracks the liveness of a tuple's sub-registers apart (`enableSubRegLiveness` on
//! AMDGPU): after `%t:vreg_128 = load`, reads of `%t.sub0` … `%t.sub3` at different
//! places free each part at its own last read, and a part never read is never live. The
//! program model has no partial liveness, so a tuple that is never read whole, and whose
//! sub-register reads are pairwise equal or disjoint ranges, is lowered as a `SPLIT` right
//! after its definition into one value per range read; every `%t.subK` read reads its part.
//! A tuple read whole anywhere (a PHI argument, a whole operand) stays one value.
//! Sub-register indices are `subN` or runs `subA_subB…` of consecutive units (32 bits
//! each); any other index (`lo16`, `hi16`) keeps the tuple whole.

use super::ast::{FunctionAst, OperandKind};
use std::collections::HashMap;

/// A part of a tuple: the sub-register index and its units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub sub: String,
    pub first: u16,
    pub len: u16,
}

/// The units `subA_subB…` covers, when they are consecutive.
pub fn units(sub: &str) -> Option<(u16, u16)> {
    let numbers: Vec<u16> = sub
        .split('_')
        .map(|p| p.strip_prefix("sub").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()?;
    let first = *numbers.first()?;
    let consecutive = numbers.iter().zip(first..).all(|(&n, want)| n == want);
    consecutive.then_some((first, numbers.len() as u16))
}

/// The virtual registers to split, each with its parts in unit order.
pub fn plan(f: &FunctionAst) -> HashMap<u32, Vec<Part>> {
    let mut whole: HashMap<u32, bool> = HashMap::new();
    let mut reads: HashMap<u32, Vec<Part>> = HashMap::new();
    let operands = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .flat_map(|i| &i.operands)
        .filter(|o| !o.is_def() && !o.flags.undef);
    for o in operands {
        let OperandKind::VReg { id, sub, .. } = &o.kind else {
            continue;
        };
        match sub.as_deref().and_then(|s| units(s).map(|u| (s, u))) {
            Some((sub, (first, len))) => {
                let parts = reads.entry(*id).or_default();
                if !parts.iter().any(|p| p.sub == sub) {
                    parts.push(Part {
                        sub: sub.to_string(),
                        first,
                        len,
                    });
                }
            }
            None => {
                whole.insert(*id, true);
            }
        }
    }
    reads
        .into_iter()
        .filter(|(id, _)| !whole.contains_key(id))
        .filter_map(|(id, mut parts)| {
            parts.sort_by_key(|p| (p.first, p.len));
            let disjoint = parts
                .windows(2)
                .all(|w| w[0].first + w[0].len <= w[1].first);
            disjoint.then_some((id, parts))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::units;

    #[test]
    fn sub_register_units() {
        assert_eq!(units("sub0"), Some((0, 1)));
        assert_eq!(units("sub2_sub3"), Some((2, 2)));
        assert_eq!(units("sub0_sub2"), None);
        assert_eq!(units("lo16"), None);
    }
}
