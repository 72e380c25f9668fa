//! The code coupling a block to its successors (Braun & Hack §4.4), in an order that
//! stays within the budget.
//!
//! At the end of a block P, the values in registers are P's W at its end. Afterwards they
//! must be what the successors need: the values each keeps in registers at its entry and
//! the arguments of its register phis; the arguments of its memory phis go into the
//! phis' locations. So, in order:
//!
//! 1. values no successor keeps in registers leave (their stores, where they are the
//!    first on a path, are placed with the other stores);
//! 2. memory-phi arguments already in registers are stored into their phi's location —
//!    except into a location that this edge still reads (a phi's old value that another
//!    phi takes as its argument: parallel-copy semantics, every read before any write);
//! 3. the missing values are reloaded, a phi location's old value first, and a stored
//!    argument leaves as soon as nothing else needs it; a memory-phi argument found in
//!    memory is reloaded and stored right away;
//! 4. when a reload finds no room (a rotation through a memory phi can need one more
//!    register than the successor keeps), a value needed at the end is stored to its own
//!    location and reloaded last ("spilled around" the edge).

use crate::program::Value;
use std::collections::{BTreeSet, VecDeque};

/// What one predecessor's end must produce.
#[derive(Clone, Debug, Default)]
pub struct Need {
    /// Values in registers at the end of the block.
    pub held: Vec<Value>,
    /// Values the successors need in registers.
    pub wanted: BTreeSet<Value>,
    /// Memory-phi arguments to store: (argument, phi).
    pub stores: Vec<(Value, Value)>,
}

/// One operation of the coupling code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeOp {
    Reload(Value),
    /// Store `value` into the location `owner` owns (a phi's, or its own).
    Store {
        value: Value,
        owner: Value,
    },
}

/// The coupling code of one block.
#[derive(Clone, Debug, Default)]
pub struct EdgeCode {
    /// Values that leave the registers: candidates for a store.
    pub leaving: Vec<Value>,
    pub ops: Vec<EdgeOp>,
}

/// Orders the coupling code within `budget` units, `units` giving each value's.
pub fn edge_code(need: &Need, budget: u32, units: &dyn Fn(Value) -> u32) -> EdgeCode {
    let mut s = Sequencer {
        need,
        budget,
        units,
        held: need.held.iter().copied().collect(),
        pending: need.stores.clone(),
        code: EdgeCode::default(),
    };
    s.leave();
    s.flush();
    let mut queue = s.reload_order();
    while let Some(x) = queue.pop_front() {
        if s.held.contains(&x) {
            continue;
        }
        while s.used() + units(x) > budget {
            let Some(y) = s.around(x) else { break };
            s.code.ops.push(EdgeOp::Store { value: y, owner: y });
            s.held.remove(&y);
            queue.push_back(y);
        }
        s.code.ops.push(EdgeOp::Reload(x));
        s.held.insert(x);
        s.flush();
    }
    s.flush();
    s.code
}

struct Sequencer<'n> {
    need: &'n Need,
    budget: u32,
    units: &'n dyn Fn(Value) -> u32,
    held: BTreeSet<Value>,
    pending: Vec<(Value, Value)>,
    code: EdgeCode,
}

impl Sequencer<'_> {
    fn used(&self) -> u32 {
        self.held.iter().map(|&v| (self.units)(v)).sum()
    }

    fn stored_later(&self, v: Value) -> bool {
        self.pending.iter().any(|&(a, _)| a == v)
    }

    /// Held values nobody needs any more leave.
    fn leave(&mut self) {
        let gone: Vec<Value> = self
            .held
            .iter()
            .copied()
            .filter(|&v| !self.need.wanted.contains(&v) && !self.stored_later(v))
            .collect();
        for v in gone {
            self.held.remove(&v);
            self.code.leaving.push(v);
        }
    }

    /// Whether a phi's location still has to be read on this edge (its old value is
    /// wanted or stored elsewhere, and not in a register yet).
    fn read_later(&self, phi: Value) -> bool {
        let wanted = self.need.wanted.contains(&phi) || self.stored_later(phi);
        wanted && !self.held.contains(&phi)
    }

    /// Stores every pending argument that is in a register into a location no longer
    /// read; arguments then needed by nobody leave.
    fn flush(&mut self) {
        loop {
            let ready = self
                .pending
                .iter()
                .position(|&(a, phi)| self.held.contains(&a) && !self.read_later(phi));
            let Some(i) = ready else { return };
            let (a, phi) = self.pending.remove(i);
            self.code.ops.push(EdgeOp::Store {
                value: a,
                owner: phi,
            });
            if !self.need.wanted.contains(&a) && !self.stored_later(a) {
                self.held.remove(&a);
            }
        }
    }

    /// The values to reload: old values of phi locations first, then the rest.
    fn reload_order(&self) -> VecDeque<Value> {
        let missing = |v: &Value| !self.held.contains(v);
        let mut first: Vec<Value> = Vec::new();
        let mut rest: Vec<Value> = Vec::new();
        let stored_args = self.pending.iter().map(|&(a, _)| a);
        for v in self.need.wanted.iter().copied().chain(stored_args) {
            if !missing(&v) || first.contains(&v) || rest.contains(&v) {
                continue;
            }
            if self.pending.iter().any(|&(_, phi)| phi == v) {
                first.push(v);
            } else {
                rest.push(v);
            }
        }
        first.into_iter().chain(rest).collect()
    }

    /// A held value to spill around the edge to make room for `x`: wanted at the end,
    /// not waiting to be stored, not a location still read; the largest.
    fn around(&self, x: Value) -> Option<Value> {
        self.held
            .iter()
            .copied()
            .filter(|&y| y != x && self.need.wanted.contains(&y))
            .filter(|&y| !self.stored_later(y) && !self.pending.iter().any(|&(_, p)| p == y))
            .max_by_key(|&y| ((self.units)(y), std::cmp::Reverse(y)))
            .filter(|_| self.budget > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// swap_cycle3 at two registers: x, y register phis, z a memory phi; on the back edge
    /// x takes y, y takes z (its old value, in memory), z takes x.
    #[test]
    fn a_rotation_through_a_memory_phi_spills_around() {
        let (x, y, z) = (Value(0), Value(1), Value(2));
        let need = Need {
            held: vec![x, y],
            wanted: [y, z].into_iter().collect(),
            stores: vec![(x, z)],
        };
        let code = edge_code(&need, 2, &|_| 1);
        assert_eq!(
            code.ops,
            [
                EdgeOp::Store { value: y, owner: y },
                EdgeOp::Reload(z),
                EdgeOp::Store { value: x, owner: z },
                EdgeOp::Reload(y),
            ]
        );
    }

    #[test]
    fn an_argument_stored_early_frees_its_register() {
        let (k, d0, d1, pa) = (Value(0), Value(1), Value(2), Value(3));
        let need = Need {
            held: vec![k, d1],
            wanted: [k, d0, pa].into_iter().collect(),
            stores: vec![(d1, Value(9))],
        };
        let code = edge_code(&need, 7, &|v| {
            if v == pa {
                2
            } else if v == k {
                1
            } else {
                4
            }
        });
        assert_eq!(
            code.ops[0],
            EdgeOp::Store {
                value: d1,
                owner: Value(9)
            }
        );
        assert!(code.ops.contains(&EdgeOp::Reload(d0)));
    }
}
