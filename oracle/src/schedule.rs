//! The minimum-pressure schedule of a block: the least peak demand of one class over every
//! order of the block's operations that keeps its dependences, found exactly, so that the
//! list scheduler's peak can be measured against it.
//!
//! Dynamic programming over the sets of operations placed from the bottom (the approach of
//! Kessler's optimal scheduling by enumeration of "selection DAG" subsets, 1998, applied
//! to register need): a set `S` closed under successors fixes the values live above it —
//! those live at the end of the block or read in `S`, less those defined in `S` — so the
//! best peak of a suffix depends on `S` alone: `best(S ∪ {o}) = min over o of max(best(S),
//! demand(o above S))`, for `o` whose successors are all in `S`. Only reachable sets are
//! visited, level by level; a block with more sets than the limit gets no answer. The
//! demand at an operation is the root crate's pressure rule (`chromatic::schedule::peak`),
//! restated here over bitsets of the block's own values.

use chromatic::schedule::deps::Deps;
use chromatic::{Function, Op, Value};
use std::collections::HashMap;

/// The most operations a block may have (the sets are 64-bit masks).
pub const MAX_OPS: usize = 64;

/// The least peak of class `class` over the legal orders of `ops`, with `live_end` live
/// after the last; `None` when the block is too large or the search visits more than
/// `state_limit` sets.
pub fn min_peak(
    f: &Function,
    ops: &[&Op],
    live_end: &[Value],
    class: usize,
    state_limit: usize,
) -> Option<u32> {
    if ops.len() > MAX_OPS {
        return None;
    }
    let block = Local::new(f, ops, live_end, class)?;
    let deps = Deps::of_ops(ops);
    let succ_masks: Vec<u64> = deps
        .succs
        .iter()
        .map(|s| s.iter().fold(0u64, |m, &k| m | 1 << k))
        .collect();
    let mut level: HashMap<u64, u32> = HashMap::from([(0u64, 0u32)]);
    let mut visited = 0usize;
    for _ in 0..ops.len() {
        let mut next: HashMap<u64, u32> = HashMap::new();
        for (&placed, &peak) in &level {
            let live = block.live_above(placed);
            for (o, &succs) in succ_masks.iter().enumerate() {
                if placed >> o & 1 == 1 || succs & !placed != 0 {
                    continue;
                }
                let cost = peak.max(block.demand(o, live));
                let entry = next.entry(placed | 1 << o).or_insert(u32::MAX);
                *entry = (*entry).min(cost);
            }
        }
        visited += next.len();
        if visited > state_limit {
            return None;
        }
        level = next;
    }
    level.into_values().next()
}

/// The block's values of one class as bits of a `u128`, the units always live (values
/// live at the end that the block neither defines nor reads), and per operation the masks
/// and units of its definitions and reads.
struct Local {
    size: Vec<u32>,
    always: u32,
    end: u128,
    defs: Vec<u128>,
    uses: Vec<u128>,
    early: Vec<u32>,
    tied: Vec<u128>,
}

impl Local {
    fn new(f: &Function, ops: &[&Op], live_end: &[Value], class: usize) -> Option<Local> {
        let of_class = |v: Value| f.value(v).class.index() == class;
        let mut index: HashMap<Value, u32> = HashMap::new();
        let mut size = Vec::new();
        let mut bit = |v: Value, size: &mut Vec<u32>| -> Option<u128> {
            if !of_class(v) {
                return Some(0);
            }
            let next = index.len() as u32;
            let k = *index.entry(v).or_insert(next);
            if k as usize == size.len() {
                size.push(u32::from(f.value(v).size));
            }
            (k < 128).then(|| 1u128 << k)
        };
        let mut local = Local {
            size: Vec::new(),
            always: 0,
            end: 0,
            defs: Vec::new(),
            uses: Vec::new(),
            early: Vec::new(),
            tied: Vec::new(),
        };
        for op in ops {
            let mut defs = 0;
            let mut early = 0;
            let mut tied = 0;
            for d in &op.defs {
                defs |= bit(d.value, &mut size)?;
                if d.early_clobber && of_class(d.value) {
                    early += u32::from(f.value(d.value).size);
                }
                let operand = d.tied.and_then(|k| op.operands.get(usize::from(k)));
                if let Some(u) = operand.and_then(|o| o.as_use()) {
                    tied |= bit(u.value, &mut size)?;
                }
            }
            let mut uses = 0;
            for u in op.uses() {
                uses |= bit(u.value, &mut size)?;
            }
            local.defs.push(defs);
            local.uses.push(uses);
            local.early.push(early);
            local.tied.push(tied);
        }
        for &v in live_end.iter().filter(|&&v| of_class(v)) {
            match index.get(&v) {
                Some(&k) => local.end |= 1 << k,
                None => local.always += u32::from(f.value(v).size),
            }
        }
        local.size = size;
        Some(local)
    }

    fn units(&self, set: u128) -> u32 {
        let mut total = self.always;
        let mut rest = set;
        while rest != 0 {
            let k = rest.trailing_zeros() as usize;
            total += self.size[k];
            rest &= rest - 1;
        }
        total
    }

    /// The block's values live above the operations in `placed`.
    fn live_above(&self, placed: u64) -> u128 {
        let (mut read, mut defined) = (self.end, 0u128);
        let mut rest = placed;
        while rest != 0 {
            let o = rest.trailing_zeros() as usize;
            read |= self.uses[o];
            defined |= self.defs[o];
            rest &= rest - 1;
        }
        read & !defined
    }

    /// The demand at operation `o` with `live` live after it.
    fn demand(&self, o: usize, live: u128) -> u32 {
        let late = self.units(live | self.defs[o]);
        let before = (live & !self.defs[o]) | self.uses[o];
        let early =
            self.units(before) + self.early[o] + (self.units(self.tied[o] & live) - self.always);
        late.max(early)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_order_that_closes_ranges_first() {
        let text = "target sm_80
func @f {
entry:
  %a:r1 = ld reads
  %b:r1 = ld reads
  %c:r1 = ld reads
  %x:r1 = add %a, %a
  %y:r1 = add %b, %b
  %z:r1 = add %c, %c
  st %x writes
  st %y writes
  st %z writes
  ret
}
";
        let p = chromatic::parse(text).unwrap();
        let f = &p.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        // The loads keep their order before the stores, so all three loads come first:
        // three values live at once, whatever the order of the adds.
        assert_eq!(min_peak(f, &ops, &[], 0, 1 << 20), Some(3));
        let free = text.replace(" writes", "");
        let p = chromatic::parse(&free).unwrap();
        let f = &p.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        // Without the stores' order each load, add and store run together: one at a time.
        assert_eq!(min_peak(f, &ops, &[], 0, 1 << 20), Some(1));
    }
}
