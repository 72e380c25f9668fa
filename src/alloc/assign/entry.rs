//! A block's entry: where its live-ins and phis are.
//!
//! A live-in keeps the location it had at the end of the first visited predecessor
//! (logical predecessors for per-lane values, linear ones for uniform values); a uniform
//! live-in of a divergent branch's else-arm or join takes its location at the end of the
//! branch block (the anchor, see the module above), and may not move. A phi prefers the
//! location its argument has in the first visited predecessor. When the live-ins leave no
//! aligned window for a phi, the entry is packed anew ([`packing::near`]); the copies that
//! brings go on the incoming edges. A class whose live-ins all inherit registers that do
//! not collide, and which has no phi in the block, keeps them without a packing problem.

use super::super::packing::{self, Item, Problem, Span};
use super::{Assigner, BoundaryState};
use crate::program::{Block, Location, Value};
use crate::target::ClassId;
use smallvec::{smallvec, SmallVec};

/// The live-ins and phis of the class placed last, kept for the next.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    live_in: Vec<Value>,
    /// Phis of the class: (index in the block, value).
    phis: Vec<(usize, Value)>,
}

impl Assigner<'_> {
    pub(super) fn place_entry(&mut self, b: Block) -> Result<(), super::AllocError> {
        for class in self.target.class_ids() {
            self.place_entry_class(b, class)?;
        }
        let loc = &self.loc;
        self.entry.record(
            b,
            self.placed
                .iter()
                .filter_map(|&v| Some((v, loc[v.index()]?))),
        );
        self.free_dead_phis(b);
        Ok(())
    }

    fn place_entry_class(&mut self, b: Block, class: ClassId) -> Result<(), super::AllocError> {
        let f = self.f;
        let of_class = |v: &Value| f.value(*v).class == class;
        let all_live_in = self.a.liveness.live_in(b);
        let all_phis = &f.block(b).phis;
        let Buffers {
            mut live_in,
            mut phis,
        } = std::mem::take(&mut self.entry_buffers);
        live_in.clear();
        live_in.extend(all_live_in.iter().copied().filter(of_class));
        phis.clear();
        let indexed = all_phis
            .iter()
            .enumerate()
            .map(|(k, phi)| (k, phi.def.value));
        phis.extend(indexed.filter(|(_, v)| of_class(v)));
        let placed = self.place_entry_values(b, class, &live_in, &phis);
        self.entry_buffers = Buffers { live_in, phis };
        placed
    }

    /// Places the live-ins and phis of `class` at the entry of `b` (none: nothing to do).
    fn place_entry_values(
        &mut self,
        b: Block,
        class: ClassId,
        live_in: &[Value],
        phis: &[(usize, Value)],
    ) -> Result<(), super::AllocError> {
        let f = self.f;
        if phis.is_empty() && self.keep_inherited(b, class, live_in) {
            return Ok(());
        }
        let problem = Problem {
            units: self.regs.limit(class),
            items: self.entry_items(b, class, live_in, phis),
        };
        let at = packing::near(&problem, self.regs.order(class)).ok_or_else(|| {
            let pos = f.block(b).pos;
            self.error(
                pos,
                format!(
                    "the live-ins and phis of `{}` do not fit in {} `{}` registers",
                    f.block(b).name,
                    problem.units,
                    self.target.class(class).name
                ),
            )
        })?;
        let values = live_in.iter().copied().chain(phis.iter().map(|&(_, v)| v));
        for (v, first) in values.zip(at) {
            let l = self.reg_of(v, first);
            self.set_loc(v, l);
        }
        for &(k, v) in phis {
            self.phi_locs[b.index()][k] = self.loc[v.index()];
        }
        Ok(())
    }

    /// The entry's packing problem of `class`: the live-ins where they are inherited
    /// (pinned there when anchored or pinned), then the phis wishing their arguments'
    /// places.
    fn entry_items(
        &self,
        b: Block,
        class: ClassId,
        live_in: &[Value],
        phis: &[(usize, Value)],
    ) -> Vec<Item> {
        let anchored = self.target.class(class).uniform && self.a.divergence.anchor(b).is_some();
        let mut items = Vec::with_capacity(live_in.len() + phis.len());
        let mut inherited = self.inheritance(b, class);
        for &v in live_in {
            let mut item = self.entry_item(v);
            item.current = inherited.at(v).and_then(first_unit);
            if anchored || self.pinned[v.index()] {
                item.pinned = item.current;
            }
            items.push(item);
        }
        for &(k, v) in phis {
            let mut item = self.entry_item(v);
            item.prefer = self.phi_wish(b, k).and_then(first_unit);
            if self.pinned[v.index()] {
                item.pinned = item.prefer;
            }
            items.push(item);
        }
        items
    }

    /// Places every live-in of `class` (a class without phis in `b`) where it is inherited,
    /// when each has a register there, aligned, inside the budget and apart from the
    /// others: the answer [`packing::near`] gives such a problem (every item kept where it
    /// is), without building it. False, with nothing placed, otherwise.
    fn keep_inherited(&mut self, b: Block, class: ClassId, live_in: &[Value]) -> bool {
        let mut firsts: SmallVec<[u16; 16]> = SmallVec::with_capacity(live_in.len());
        if !self.inherited_apart(b, class, live_in, &mut firsts) {
            return false;
        }
        for (&v, first) in live_in.iter().zip(firsts) {
            let l = self.reg_of(v, first);
            self.set_loc(v, l);
        }
        true
    }

    /// The first unit each of `live_in` (of `class`) is inherited at, into `firsts`; false
    /// when one has no register there, or it is unaligned, outside the budget or overlaps
    /// another.
    fn inherited_apart(
        &self,
        b: Block,
        class: ClassId,
        live_in: &[Value],
        firsts: &mut SmallVec<[u16; 16]>,
    ) -> bool {
        let units = usize::from(self.regs.limit(class));
        let mut taken: SmallVec<[u64; 4]> = smallvec![0; units.div_ceil(64)];
        let mut inherited = self.inheritance(b, class);
        for &v in live_in {
            let Some(first) = inherited.at(v).and_then(first_unit) else {
                return false;
            };
            let (start, size) = (usize::from(first), usize::from(self.f.value(v).size));
            if !first.is_multiple_of(self.align_of(v)) || start + size > units {
                return false;
            }
            for u in start..start + size {
                let (word, bit) = (u / 64, 1u64 << (u % 64));
                if taken[word] & bit != 0 {
                    return false;
                }
                taken[word] |= bit;
            }
            firsts.push(first);
        }
        true
    }

    fn entry_item(&self, v: Value) -> Item {
        Item::new(self.f.value(v).size, self.align_of(v), Span::Both)
    }

    /// Where the live-ins of `class` at the entry of `b` are inherited from: the exit of
    /// the anchor, else of the visited predecessors in order.
    fn inheritance(&self, b: Block, class: ClassId) -> Inheritance<'_> {
        let uniform = self.target.class(class).uniform;
        let mut sources = SmallVec::new();
        if let Some(anchor) = self.a.divergence.anchor(b).filter(|_| uniform) {
            sources.push((self.exit.of(anchor), 0));
            return Inheritance {
                sources,
                last: None,
            };
        }
        let graph = if uniform {
            &self.a.divergence.linear
        } else {
            &self.a.cfg
        };
        let visited = graph.preds(b).iter().filter(|p| self.visited[p.index()]);
        sources.extend(visited.map(|p| (self.exit.of(*p), 0)));
        Inheritance {
            sources,
            last: None,
        }
    }

    /// The location of phi `k`'s argument at the end of its first visited predecessor.
    fn phi_wish(&self, b: Block, k: usize) -> Option<Location> {
        let phi = &self.f.block(b).phis[k];
        phi.args
            .iter()
            .filter(|arg| self.visited[arg.block.index()])
            .find_map(|arg| lookup(self.exit.of(arg.block), arg.value))
    }

    fn free_dead_phis(&mut self, b: Block) {
        for phi in &self.f.block(b).phis {
            let v = phi.def.value;
            if self.a.liveness.is_dead(v) {
                if let Some(l) = self.loc[v.index()] {
                    self.regs.release(l, v);
                }
            }
        }
    }
}

/// The boundary states a block's live-ins of one class are inherited from, each with how
/// far it has been read: live-ins are asked for in increasing order (as liveness lists
/// them), so each state is searched from where the last answer left it.
struct Inheritance<'s> {
    sources: SmallVec<[(&'s BoundaryState, usize); 4]>,
    last: Option<Value>,
}

impl Inheritance<'_> {
    /// Where `v` is at the end of the first source that holds it.
    fn at(&mut self, v: Value) -> Option<Location> {
        if self.last.is_some_and(|last| v <= last) {
            self.sources.iter_mut().for_each(|(_, read)| *read = 0);
        }
        self.last = Some(v);
        self.sources.iter_mut().find_map(|(state, read)| {
            *read += state[*read..].partition_point(|&(w, _)| w < v);
            state.get(*read).filter(|&&(w, _)| w == v).map(|&(_, l)| l)
        })
    }
}

/// The location of `v` in a boundary state.
pub(crate) fn lookup(state: &BoundaryState, v: Value) -> Option<Location> {
    state
        .binary_search_by_key(&v, |&(w, _)| w)
        .ok()
        .map(|i| state[i].1)
}

fn first_unit(l: Location) -> Option<u16> {
    match l {
        Location::Reg { first, .. } => Some(first),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(first: u16) -> Location {
        Location::Reg {
            class: ClassId(0),
            first,
            len: 1,
        }
    }

    /// Each value is found in the first source that holds it, as a lookup in every source
    /// would find it, in increasing order and after a step back alike.
    #[test]
    fn inheritance_answers_as_lookups_do() {
        let first: Vec<(Value, Location)> =
            [1, 4, 6, 9].map(|v| (Value(v), reg(v as u16))).to_vec();
        let second: Vec<(Value, Location)> = [2, 4, 7, 9]
            .map(|v| (Value(v), reg(10 + v as u16)))
            .to_vec();
        let mut inheritance = Inheritance {
            sources: smallvec![(&first[..], 0), (&second[..], 0)],
            last: None,
        };
        let asked = [0, 1, 2, 3, 4, 7, 9, 10, 2, 6, 4];
        for v in asked.map(Value) {
            let expected = lookup(&first, v).or_else(|| lookup(&second, v));
            assert_eq!(inheritance.at(v), expected, "{v:?}");
        }
    }
}
