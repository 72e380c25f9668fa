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
        if !all_live_in.iter().any(of_class) && !all_phis.iter().any(|p| of_class(&p.def.value)) {
            return Ok(());
        }
        let mut live_in = std::mem::take(&mut self.entry_live_in);
        live_in.clear();
        live_in.extend(all_live_in.iter().copied().filter(of_class));
        let placed = self.place_live_ins_and_phis(b, class, &live_in);
        self.entry_live_in = live_in;
        placed
    }

    /// Places `live_in`, the live-ins of `b` in `class`, and the phis of `b` in `class`.
    fn place_live_ins_and_phis(
        &mut self,
        b: Block,
        class: ClassId,
        live_in: &[Value],
    ) -> Result<(), super::AllocError> {
        let f = self.f;
        let of_class = |v: &Value| f.value(*v).class == class;
        let phis: Vec<(usize, Value)> = f
            .block(b)
            .phis
            .iter()
            .enumerate()
            .map(|(k, phi)| (k, phi.def.value))
            .filter(|(_, v)| of_class(v))
            .collect();
        if phis.is_empty() && self.keep_inherited(b, class, live_in) {
            return Ok(());
        }
        let anchored = self.target.class(class).uniform && self.a.divergence.anchor(b).is_some();
        let mut items = Vec::with_capacity(live_in.len() + phis.len());
        for &v in live_in {
            let mut item = self.entry_item(v);
            item.current = self.inherited(b, v).and_then(first_unit);
            if anchored || self.pinned[v.index()] {
                item.pinned = item.current;
            }
            items.push(item);
        }
        for &(k, v) in &phis {
            let mut item = self.entry_item(v);
            item.prefer = self.phi_wish(b, k).and_then(first_unit);
            if self.pinned[v.index()] {
                item.pinned = item.prefer;
            }
            items.push(item);
        }
        let problem = Problem {
            units: self.regs.limit(class),
            items,
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
        for &(k, v) in &phis {
            self.phi_locs[b.index()][k] = self.loc[v.index()];
        }
        Ok(())
    }

    /// Places every live-in of `class` (a class without phis in `b`) where it is inherited,
    /// when each has a register there, aligned, inside the budget and apart from the
    /// others: the answer [`packing::near`] gives such a problem (every item kept where it
    /// is), without building it. False, with nothing placed, otherwise.
    fn keep_inherited(&mut self, b: Block, class: ClassId, live_in: &[Value]) -> bool {
        let units = usize::from(self.regs.limit(class));
        let mut taken: SmallVec<[u64; 4]> = smallvec![0; units.div_ceil(64)];
        let mut firsts: SmallVec<[u16; 16]> = SmallVec::with_capacity(live_in.len());
        for &v in live_in {
            let Some(first) = self.inherited(b, v).and_then(first_unit) else {
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
        for (&v, first) in live_in.iter().zip(firsts) {
            let l = self.reg_of(v, first);
            self.set_loc(v, l);
        }
        true
    }

    fn entry_item(&self, v: Value) -> Item {
        Item::new(self.f.value(v).size, self.align_of(v), Span::Both)
    }

    /// Where `v` is at the end of the anchor or of the first visited predecessor.
    fn inherited(&self, b: Block, v: Value) -> Option<Location> {
        let uniform = self.target.class(self.f.value(v).class).uniform;
        if let Some(anchor) = self.a.divergence.anchor(b).filter(|_| uniform) {
            return lookup(self.exit.of(anchor), v);
        }
        let graph = if uniform {
            &self.a.divergence.linear
        } else {
            &self.a.cfg
        };
        graph
            .preds(b)
            .iter()
            .filter(|p| self.visited[p.index()])
            .find_map(|p| lookup(self.exit.of(*p), v))
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
