//! Liveness of one register class, recomputed from the program alone: the classic backward
//! dataflow (live-out = the union of the successors' live-ins and the phi arguments read
//! on the outgoing edges; live-in = upward-exposed uses and live-out minus definitions),
//! iterated to a fixpoint over the class's [`Flow`]. Phi definitions are not live-in;
//! a phi argument is read at the end of every block whose edge carries it, so on the
//! linear CFG a uniform argument of an else-arm's phi lives through the then-side.
//! Nothing here is shared with the allocator's liveness, so a hole in one cannot hide in
//! the other.

use crate::flow::Flow;
use chromatic::program::{Block, Function, Value};

/// A set of values as a bit vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    words: Vec<u64>,
}

impl Set {
    pub fn new(values: usize) -> Set {
        Set {
            words: vec![0; values.div_ceil(64)],
        }
    }

    pub fn insert(&mut self, v: Value) {
        self.words[v.index() / 64] |= 1 << (v.index() % 64);
    }

    pub fn remove(&mut self, v: Value) {
        self.words[v.index() / 64] &= !(1 << (v.index() % 64));
    }

    pub fn contains(&self, v: Value) -> bool {
        self.words[v.index() / 64] & (1 << (v.index() % 64)) != 0
    }

    /// Adds every member of `other`; whether anything was new.
    pub fn union(&mut self, other: &Set) -> bool {
        let mut changed = false;
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            changed |= *o & !*w != 0;
            *w |= o;
        }
        changed
    }

    pub fn iter(&self) -> impl Iterator<Item = Value> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| Value((i * 64 + b) as u32))
        })
    }
}

/// Live-in and live-out sets per block, of the values `of_class` selects.
#[derive(Clone, Debug)]
pub struct Liveness {
    pub live_in: Vec<Set>,
    pub live_out: Vec<Set>,
}

impl Liveness {
    pub fn new(f: &Function, flow: &Flow, of_class: &dyn Fn(Value) -> bool) -> Liveness {
        let n = f.values.len();
        let phi_uses = phi_uses(f, flow, of_class);
        let mut live = Liveness {
            live_in: vec![Set::new(n); f.blocks.len()],
            live_out: phi_uses,
        };
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..f.blocks.len() as u32).rev().map(Block) {
                let mut out = live.live_out[b.index()].clone();
                for &s in &flow.succs[b.index()] {
                    out.union(&live.live_in[s.index()]);
                }
                let input = transfer(f, b, &out, of_class);
                changed |= live.live_out[b.index()].union(&out);
                changed |= live.live_in[b.index()].union(&input);
            }
        }
        live
    }
}

/// Per block, the phi arguments read at its end.
fn phi_uses(f: &Function, flow: &Flow, of_class: &dyn Fn(Value) -> bool) -> Vec<Set> {
    let mut uses = vec![Set::new(f.values.len()); f.blocks.len()];
    for s in f.block_ids() {
        for edge in &flow.preds[s.index()] {
            for phi in &f.block(s).phis {
                let args = phi.args.iter().filter(|a| a.block == edge.phi_pred);
                for a in args.filter(|a| of_class(a.value)) {
                    uses[edge.from.index()].insert(a.value);
                }
            }
        }
    }
    uses
}

/// The live-in of `b` given its live-out.
fn transfer(f: &Function, b: Block, out: &Set, of_class: &dyn Fn(Value) -> bool) -> Set {
    let block = f.block(b);
    let mut live = out.clone();
    for u in block.term.uses().iter().filter(|u| of_class(u.value)) {
        live.insert(u.value);
    }
    for op in block.insts.iter().rev().filter_map(|i| i.op()) {
        op.defs.iter().for_each(|d| live.remove(d.value));
        op.uses()
            .filter(|u| of_class(u.value))
            .for_each(|u| live.insert(u.value));
    }
    block.phis.iter().for_each(|p| live.remove(p.def.value));
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uniform_value_read_in_the_else_arm_is_live_through_the_then_arm() {
        let p = chromatic::parse(
            "target gfx9
func @f {
b:
  %u:s1 = s_mov 1
  %p:s2 = cmp 0
  branch divergent %p, t, e
t:
  %w:s1 = s_mov 2
  store %w writes
  jump j
e:
  store %u writes
  jump j
j:
  ret
}",
        )
        .expect("parses");
        let f = &p.functions[0];
        let all = |_: Value| true;
        let u = Value(0);
        let logical = Liveness::new(f, &Flow::new(f, false), &all);
        assert!(!logical.live_in[1].contains(u));
        let linear = Liveness::new(f, &Flow::new(f, true), &all);
        assert!(linear.live_in[1].contains(u));
        assert!(linear.live_out[1].contains(u));
    }
}
