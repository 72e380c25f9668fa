//! The code coupling a block to its successors (Braun & Hack §4.4), in an order that
//! stays within the budget.
//!
//! At the end of a block P, the values in registers are P's W at its end. Afterwards they
//! must be what the successors need: the values each keeps in registers at its entry and
//! the arguments of its register phis; the arguments of its memory phis go into the
//! phis' locations. So, in order:
//!
//! 1. values some successor takes in memory are stored (where that is the first store
//!    on the path; they are placed with the other stores), and those no successor keeps
//!    in registers leave;
//! 2. memory-phi arguments already in registers are stored into their phi's location —
//!    except into a location that this edge still reads (a phi's old value that another
//!    phi takes as its argument: parallel-copy semantics, every read before any write);
//! 3. the missing values are reloaded, a phi location's old value first (the members of
//!    one rotation together), and a stored argument leaves as soon as nothing else needs
//!    it; a memory-phi argument found in memory is reloaded and stored right away;
//! 4. when a reload finds no room (a rotation through a memory phi can need one more
//!    register than the successor keeps), a value needed at the end is stored to its own
//!    location and reloaded last ("spilled around" the edge) — never one protected for a
//!    divergent side, whose register the side reads after the edge.

use super::sorted::SortedSet;
use crate::alloc::packing;
use crate::program::{Function, Phi, Value};
use crate::target::Target;
use std::collections::VecDeque;

/// One successor as the coupling code sees it.
#[derive(Debug)]
pub struct Successor<'a> {
    /// The successor's W at its entry, sorted.
    pub entry: &'a [Value],
    /// Its live-ins of the class.
    pub live_in: Vec<Value>,
    /// Its phis of the class, and whether each is a memory phi.
    pub phis: Vec<(&'a Phi, bool)>,
}

impl Need {
    /// What the end of `p` (its W at the end `held`, `protected` among them) must
    /// produce for `succs`.
    pub fn of_edges(
        p: crate::program::Block,
        held: &[Value],
        protected: &[Value],
        succs: &[Successor],
    ) -> Need {
        let mut need = Need {
            held: held.to_vec(),
            protected: protected.iter().copied().collect(),
            ..Need::default()
        };
        for s in succs {
            for &v in &s.live_in {
                if s.entry.binary_search(&v).is_ok() {
                    need.wanted.insert(v);
                } else {
                    need.in_memory.insert(v);
                }
            }
            for &(phi, memory) in &s.phis {
                let Some(arg) = phi.args.iter().find(|a| a.block == p) else {
                    continue;
                };
                if !memory {
                    need.wanted.insert(arg.value);
                } else if arg.value != phi.def.value {
                    need.stores.push((arg.value, phi.def.value));
                }
            }
        }
        need
    }
}

/// Whether `set` fits in `units` registers of its class, alignment included.
pub fn fits_in(f: &Function, target: &Target, units: u16, set: &SortedSet) -> bool {
    let items = set.iter().map(|&v| {
        let data = f.value(v);
        let align = target.class(data.class).align.alignment(data.size);
        packing::Item::new(data.size, align, packing::Span::Both)
    });
    packing::fits(&packing::Problem {
        units,
        items: items.collect(),
    })
}

/// What one predecessor's end must produce.
#[derive(Clone, Debug, Default)]
pub struct Need {
    /// Values in registers at the end of the block.
    pub held: Vec<Value>,
    /// Values the successors need in registers.
    pub wanted: SortedSet,
    /// Held values some successor takes in memory (another may want them in registers).
    pub in_memory: SortedSet,
    /// Memory-phi arguments to store: (argument, phi).
    pub stores: Vec<(Value, Value)>,
    /// Held values a divergent side still to run reads in their registers: never
    /// spilled around.
    pub protected: SortedSet,
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
    /// Held values some successor takes in memory: candidates for a store at the end.
    pub leaving: Vec<Value>,
    pub ops: Vec<EdgeOp>,
    /// A value that found no room even with every unprotected value spilled around:
    /// the block's W at the end leaves too little for the edge (the spiller evicts a
    /// protected value there instead).
    pub stuck: Option<Value>,
}

impl EdgeCode {
    /// The values spilled around the edge: stored to their own location and reloaded.
    pub fn spilled_around(&self) -> impl Iterator<Item = Value> + '_ {
        self.ops.iter().filter_map(|op| match *op {
            EdgeOp::Store { value, owner } if value == owner => Some(value),
            _ => None,
        })
    }
}

/// Whether a set of values fits in the class's registers at once.
pub type Room<'r> = &'r dyn Fn(&SortedSet) -> bool;

/// Orders the coupling code so that the values in registers always fit (`room`);
/// `size` ranks values to spill around.
pub fn edge_code(need: &Need, room: Room, size: &dyn Fn(Value) -> u32) -> EdgeCode {
    let mut s = Sequencer {
        need,
        room,
        size,
        held: need.held.iter().copied().collect(),
        pending: need.stores.clone(),
        code: EdgeCode::default(),
        spilled_around: SortedSet::default(),
    };
    s.leave();
    s.flush();
    let mut queue = s.reload_order();
    while let Some(x) = queue.pop_front() {
        if s.held.contains(&x) {
            continue;
        }
        while !s.fits_with(x) {
            let Some(y) = s.around(x) else {
                s.code.stuck.get_or_insert(x);
                break;
            };
            s.code.ops.push(EdgeOp::Store { value: y, owner: y });
            s.held.remove(&y);
            s.spilled_around.insert(y);
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
    room: Room<'n>,
    size: &'n dyn Fn(Value) -> u32,
    held: SortedSet,
    pending: Vec<(Value, Value)>,
    code: EdgeCode,
    /// Values already spilled around the edge (each goes at most once).
    spilled_around: SortedSet,
}

impl Sequencer<'_> {
    fn fits_with(&self, x: Value) -> bool {
        let mut with = self.held.clone();
        with.insert(x);
        (self.room)(&with)
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
        }
        let held = self.need.held.iter();
        let some_in_memory = held.filter(|v| self.need.in_memory.contains(v));
        self.code.leaving.extend(some_in_memory);
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

    /// The values to reload: old values of phi locations first, those of each rotation
    /// together ([`by_rotation`]), then the rest.
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
        by_rotation(first, &self.pending)
            .into_iter()
            .chain(rest)
            .collect()
    }

    /// A held value to spill around the edge to make room for `x`: wanted at the end,
    /// not waiting to be stored, not a memory phi (the edge writes its location), not protected for a
    /// divergent side (its register must survive the side); the largest.
    fn around(&self, x: Value) -> Option<Value> {
        self.held
            .iter()
            .copied()
            .filter(|&y| y != x && self.need.wanted.contains(&y))
            .filter(|y| !self.spilled_around.contains(y) && !self.need.protected.contains(y))
            .filter(|&y| !self.stored_later(y) && !self.need.stores.iter().any(|&(_, p)| p == y))
            .max_by_key(|&y| ((self.size)(y), std::cmp::Reverse(y)))
    }
}

/// `values` with the members of each rotation of the pending stores together: the parts
/// of the graph whose edges join an argument and the phi it is stored into, in the order
/// of each part's first member in `values`. A rotation through memory holds a location's
/// old value until the value stored over it is in a register too; two rotations reloaded
/// in turn each hold one old value waiting for the other's, where one rotation at a time
/// needs only its two largest members at once, the bound the lowest legal budget counts
/// (`minimum::rotations`). Found by fuzzing: a loop header's five 16-unit memory phis,
/// two swaps and a copy, stuck at 32 units on the back edge, which needs 32.
fn by_rotation(values: Vec<Value>, pending: &[(Value, Value)]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    let mut placed = SortedSet::default();
    for &v in &values {
        if placed.contains(&v) {
            continue;
        }
        let part = rotation_of(v, pending);
        for &w in values.iter().filter(|w| part.contains(w)) {
            placed.insert(w);
            out.push(w);
        }
    }
    out
}

/// The values joined to `v` through the pending stores, `v` included.
fn rotation_of(v: Value, pending: &[(Value, Value)]) -> SortedSet {
    let mut part = SortedSet::default();
    part.insert(v);
    let mut todo = vec![v];
    while let Some(x) = todo.pop() {
        for &(arg, phi) in pending {
            let other = match (arg == x, phi == x) {
                (true, _) => phi,
                (_, true) => arg,
                _ => continue,
            };
            if part.insert(other) {
                todo.push(other);
            }
        }
    }
    part
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
            ..Need::default()
        };
        let code = edge_code(&need, &|set| set.len() <= 2, &|_| 1);
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

    /// Two swaps through memory on one edge, nothing in registers around it: one swap at
    /// a time holds two values, never three.
    #[test]
    fn rotations_through_memory_are_reloaded_one_at_a_time() {
        let (a, b, c, d) = (Value(0), Value(1), Value(2), Value(3));
        let need = Need {
            stores: vec![(a, c), (b, d), (c, a), (d, b)],
            ..Need::default()
        };
        let code = edge_code(&need, &|set| set.len() <= 2, &|_| 1);
        assert_eq!(code.stuck, None);
        let mut held = 0usize;
        for op in &code.ops {
            match op {
                EdgeOp::Reload(_) => held += 1,
                EdgeOp::Store { .. } => held = held.saturating_sub(1),
            }
            assert!(held <= 2, "{:?}", code.ops);
        }
        assert_eq!(
            code.ops,
            [
                EdgeOp::Reload(a),
                EdgeOp::Reload(c),
                EdgeOp::Store { value: a, owner: c },
                EdgeOp::Store { value: c, owner: a },
                EdgeOp::Reload(b),
                EdgeOp::Reload(d),
                EdgeOp::Store { value: b, owner: d },
                EdgeOp::Store { value: d, owner: b },
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
            ..Need::default()
        };
        let units = |v: Value| {
            if v == pa {
                2
            } else if v == k {
                1
            } else {
                4
            }
        };
        let room = |set: &SortedSet| set.iter().map(|&v| units(v)).sum::<u32>() <= 7;
        let code = edge_code(&need, &room, &units);
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
