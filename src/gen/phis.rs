//! Phis: one argument per predecessor, each a value available at that predecessor's end.
//!
//! At a join, a phi takes the type of a value available at the first predecessor (recent
//! values, defined in the arm, are favoured) and, from every other predecessor, a value of
//! the same class and size; if one has none, the phi is dropped. Loop-header phis are made
//! before the body with their preheader argument; their back-edge argument is picked at the
//! latch, where the header's phis are themselves available. A pair of twin header phis whose
//! back-edge arguments are each other is a swap cycle for the parallel copy on the back edge.
//! Joins that may be the immediate post-dominator of a divergent branch get no phi of a
//! uniform class (`docs/FORMAT.md`).

use arbitrary::Result;

use super::FnBuilder;
use crate::program::{Block, Def, Phi, PhiArg, Pos, Value};

fn arg(block: Block, value: Value) -> PhiArg {
    PhiArg {
        block,
        value,
        pos: Pos::default(),
    }
}

impl FnBuilder<'_, '_> {
    /// Up to three phis at `join`, whose predecessors and their available values are `preds`.
    pub(super) fn join_phis(
        &mut self,
        join: Block,
        preds: &[(Block, Vec<Value>)],
        allow_uniform: bool,
    ) -> Result<()> {
        let Some(((first_block, first_values), rest)) = preds.split_first() else {
            return Ok(());
        };
        if first_values.is_empty() {
            return Ok(());
        }
        for _ in 0..self.u.int_in_range(0..=3)? {
            let first = self.pick_recent(first_values)?;
            let ty = self.type_of(first);
            if !allow_uniform && self.target.class(ty.0).uniform {
                continue;
            }
            let mut args = vec![arg(*first_block, first)];
            for (block, values) in rest {
                let same: Vec<Value> = values
                    .iter()
                    .copied()
                    .filter(|&v| self.type_of(v) == ty)
                    .collect();
                if same.is_empty() {
                    break;
                }
                args.push(arg(*block, self.pick_recent(&same)?));
            }
            if args.len() == preds.len() {
                self.push_phi(join, ty, args);
            }
        }
        Ok(())
    }

    fn push_phi(&mut self, b: Block, (class, size): (crate::ClassId, u16), args: Vec<PhiArg>) {
        let def = Def::new(self.new_value(class, size), Pos::default());
        self.avail.push(def.value);
        self.f.blocks[b.index()].phis.push(Phi {
            def,
            args,
            pos: Pos::default(),
        });
    }

    /// Up to three header phis with their preheader argument; returns the pairs of phi
    /// indices that swap on the back edge.
    pub(super) fn header_phis(
        &mut self,
        header: Block,
        preheader: Block,
    ) -> Result<Vec<(usize, usize)>> {
        let mut swaps = Vec::new();
        let available = self.avail.clone();
        for _ in 0..self.u.int_in_range(0..=3)? {
            let v = self.pick_recent(&available)?;
            let ty = self.type_of(v);
            self.push_phi(header, ty, vec![arg(preheader, v)]);
            if self.u.ratio(1, 3)? {
                let same: Vec<Value> = available
                    .iter()
                    .copied()
                    .filter(|&w| self.type_of(w) == ty)
                    .collect();
                let twin = *self.u.choose(&same)?;
                self.push_phi(header, ty, vec![arg(preheader, twin)]);
                let n = self.f.block(header).phis.len();
                swaps.push((n - 2, n - 1));
            }
        }
        Ok(swaps)
    }

    /// The back-edge arguments of every header phi, one per back edge `(source, values
    /// available at its end)`; twin phis take each other's def.
    pub(super) fn back_edge_args(
        &mut self,
        header: Block,
        back_edges: &[(Block, Vec<Value>)],
        swaps: &[(usize, usize)],
    ) -> Result<()> {
        for i in 0..self.f.block(header).phis.len() {
            let partner = swaps.iter().find_map(|&(a, b)| match i {
                _ if i == a => Some(b),
                _ if i == b => Some(a),
                _ => None,
            });
            let phi_value = self.f.block(header).phis[i].def.value;
            let ty = self.type_of(phi_value);
            for (source, available) in back_edges {
                let value = match partner {
                    Some(j) => self.f.block(header).phis[j].def.value,
                    None => {
                        let same: Vec<Value> = available
                            .iter()
                            .copied()
                            .filter(|&w| self.type_of(w) == ty)
                            .collect();
                        self.pick_recent(&same)?
                    }
                };
                self.f.blocks[header.index()].phis[i]
                    .args
                    .push(arg(*source, value));
            }
        }
        Ok(())
    }
}
