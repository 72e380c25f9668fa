//! The dependence graph of a block's operations: which must stay before which when the
//! block is reordered.
//!
//! Edges `i → j` (`i` before `j`, text order `i < j`), from the program model alone:
//!
//! - *data*: `j` reads a value `i` defines (SSA: one definition, so no anti or output
//!   dependences between values; a guarded PTX definition is tied to the value it
//!   replaces, which makes it a reader of that value);
//! - *memory and order* ([`Effect`]): a write, barrier or control op is ordered with every
//!   earlier and later op that has an effect other than `carry`; a read is ordered with
//!   the writes, barriers and control ops around it but moves freely among reads;
//! - *carry*: ops that read or write the carry flag keep their order among themselves;
//! - *fixed registers*: reads, writes and clobbers of the registers an op accesses
//!   implicitly ([`super::regs`]);
//! - a `remat` op (no value operands, the same value wherever it runs) has no order
//!   edges from its effect (fixed registers still order it).
//!
//! The edges are built in one forward pass: each ordered op depends on the previous ordered
//! op and on the reads since it, each read on the previous ordered op, which orders every
//! pair above through transitivity. This is the classic list-scheduling DAG (Gibbons &
//! Muchnick, "Efficient instruction scheduling for a pipelined architecture", 1986), with
//! SSA making register anti-dependences disappear.

use super::regs::RegOrder;
use crate::program::{BlockData, Effect, Op, Value};
use rustc_hash::FxHashMap;

/// The dependence graph of one block: node `k` is the block's `k`-th instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deps {
    /// Per node, the nodes that must come before it (sorted, distinct).
    pub preds: Vec<Vec<u32>>,
    /// Per node, the nodes that must come after it (sorted, distinct).
    pub succs: Vec<Vec<u32>>,
}

impl Deps {
    /// The graph of `block`, whose instructions must all be operations (an original,
    /// unallocated block); `None` when one is not.
    pub fn of_block(block: &BlockData) -> Option<Deps> {
        let ops: Option<Vec<&Op>> = block.insts.iter().map(|i| i.op()).collect();
        Some(Deps::of_ops(&ops?))
    }

    /// The graph of `ops` in this order.
    pub fn of_ops(ops: &[&Op]) -> Deps {
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); ops.len()];
        let mut defined_at: FxHashMap<Value, u32> = FxHashMap::default();
        let mut order = OrderState::default();
        let mut regs = RegOrder::default();
        for (j, op) in ops.iter().enumerate() {
            let j = j as u32;
            let p = &mut preds[j as usize];
            p.extend(op.uses().filter_map(|u| defined_at.get(&u.value).copied()));
            order.add(ordering_effect(op), j, p);
            regs.add(op, j, p);
            p.sort_unstable();
            p.dedup();
            for d in &op.defs {
                defined_at.insert(d.value, j);
            }
        }
        let mut succs: Vec<Vec<u32>> = vec![Vec::new(); ops.len()];
        for (j, p) in preds.iter().enumerate() {
            for &i in p {
                succs[i as usize].push(j as u32);
            }
        }
        Deps { preds, succs }
    }

    pub fn len(&self) -> usize {
        self.preds.len()
    }

    /// Adds the edge `i → j` (`i` before `j`).
    pub fn add_edge(&mut self, i: u32, j: u32) {
        let (p, s) = (&mut self.preds[j as usize], &mut self.succs[i as usize]);
        if let Err(k) = p.binary_search(&i) {
            p.insert(k, i);
        }
        if let Err(k) = s.binary_search(&j) {
            s.insert(k, j);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.preds.is_empty()
    }

    /// Whether `order` (a permutation of the nodes) puts every node after its predecessors.
    pub fn respects(&self, order: &[u32]) -> bool {
        let mut position = vec![usize::MAX; self.len()];
        for (k, &n) in order.iter().enumerate() {
            position[n as usize] = k;
        }
        order.len() == self.len()
            && position.iter().all(|&p| p != usize::MAX)
            && (0..self.len()).all(|j| {
                self.preds[j]
                    .iter()
                    .all(|&i| position[i as usize] < position[j])
            })
    }
}

/// The effect that orders `op`: none for a `remat` op, which has no value operands and
/// computes the same value wherever it runs (a kernel parameter's `ld.param`).
fn ordering_effect(op: &Op) -> Effect {
    if op.remat {
        Effect::None
    } else {
        op.effect
    }
}

/// The effects seen so far in a forward pass.
#[derive(Default)]
struct OrderState {
    /// The last write, barrier or control op.
    last_ordered: Option<u32>,
    /// Reads since it.
    reads: Vec<u32>,
    last_carry: Option<u32>,
}

impl OrderState {
    /// Adds to `preds` what op `j` with `effect` must follow, and records it.
    fn add(&mut self, effect: Effect, j: u32, preds: &mut Vec<u32>) {
        match effect {
            Effect::None => {}
            Effect::ReadsMemory => {
                preds.extend(self.last_ordered);
                self.reads.push(j);
            }
            Effect::WritesMemory | Effect::Barrier | Effect::Control => {
                preds.extend(self.last_ordered);
                preds.append(&mut self.reads);
                self.last_ordered = Some(j);
            }
            Effect::Carry => {
                preds.extend(self.last_carry);
                self.last_carry = Some(j);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(body: &str) -> Deps {
        let text = format!("target sm_80\nfunc @f {{\nentry:\n{body}  ret\n}}\n");
        let p = crate::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        Deps::of_block(&p.functions[0].blocks[0]).expect("operations only")
    }

    #[test]
    fn data_dependences_follow_values() {
        let d = deps("  %a:r1 = mov 1\n  %b:r1 = mov 2\n  %c:r1 = add %a, %b\n");
        assert_eq!(d.preds, vec![vec![], vec![], vec![0, 1]]);
        assert_eq!(d.succs, vec![vec![2], vec![2], vec![]]);
    }

    #[test]
    fn reads_move_among_reads_but_not_across_writes() {
        let d =
            deps("  %a:r1 = ld reads\n  %b:r1 = ld reads\n  st %a writes\n  %c:r1 = ld reads\n");
        assert_eq!(d.preds, vec![vec![], vec![], vec![0, 1], vec![2]]);
    }

    #[test]
    fn barriers_order_everything_with_an_effect_but_carry() {
        let d = deps("  %a:r1 = ld reads\n  bar barrier\n  %c:r1 = add.cc %a carry\n  st %c writes\n  %d:r1 = addc %c carry\n");
        assert_eq!(d.preds, vec![vec![], vec![0], vec![0], vec![1, 2], vec![2]]);
    }

    #[test]
    fn a_remat_op_has_no_order_edges_whatever_its_effect() {
        let d = deps(
            "  st writes\n  %k:r1 = ld.param remat reads\n  bar barrier\n  %b:r1 = add %k, 1\n",
        );
        assert_eq!(d.preds, vec![vec![], vec![], vec![0], vec![1]]);
    }

    #[test]
    fn respects_checks_every_edge() {
        let d = deps("  %a:r1 = mov 1\n  %b:r1 = add %a, %a\n  %c:r1 = mov 3\n");
        assert!(d.respects(&[2, 0, 1]));
        assert!(d.respects(&[0, 2, 1]));
        assert!(!d.respects(&[1, 0, 2]));
        assert!(!d.respects(&[0, 1]));
    }
}
