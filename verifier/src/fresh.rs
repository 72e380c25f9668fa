//! Whether a recomputation outside its definition's block recomputes the value its
//! definition computed.
//!
//! A `remat` of a pure definition `D` (`y = op x…`) in another block computes `y` again from
//! what its operands hold there, which the dataflow checks are `x…`. SSA names one static
//! value per operand, but an operand defined in a loop has a new value on every trip, so the
//! recomputation equals the `y` it stands for only if no operand was defined again between
//! the last run of `D` and the recomputation. That holds wherever `D`'s block dominates the
//! recomputation's: each operand's definition `X` dominates `D` (SSA), so some path from the
//! entry reaches `X` without `D` (were every path to pass `D`, `D` would dominate `X` as
//! well, and the two would be one block, `X` before `D`); a path running `X` after `D` and
//! then reaching the recomputation without `D` would then make one from the entry that
//! avoids `D`. Where `D`'s block does not dominate the recomputation, an operand may change
//! before `D` runs again and a later reading of `y` take the recomputed value, so the
//! recomputation is refused. Dominance is decided by a search of the allocated function's
//! CFG from the entry that does not enter `D`'s block (Briggs, Cooper & Torczon,
//! "Rematerialization", PLDI 1992: a value is recomputed only where its operands are
//! available with the values they had).

use chromatic::{Function, InstKind};
use rustc_hash::FxHashMap;
use std::cell::{OnceCell, RefCell};

/// Where each original value is defined in the allocated function, and the dominance
/// searches made so far; both found on the first question (only a `remat` asks).
pub(crate) struct Fresh<'a> {
    a: &'a Function,
    succs: &'a [crate::cfg::Row<usize>],
    value_map: &'a [Option<u32>],
    originals: usize,
    def_block: OnceCell<Vec<Option<usize>>>,
    /// Per block `d`: the blocks the entry reaches without entering `d`.
    avoiding: RefCell<FxHashMap<usize, Vec<bool>>>,
}

impl<'a> Fresh<'a> {
    /// `value_map` maps allocated values to original ones (`originals` of them).
    pub fn new(
        a: &'a Function,
        succs: &'a [crate::cfg::Row<usize>],
        value_map: &'a [Option<u32>],
        originals: usize,
    ) -> Fresh<'a> {
        Fresh {
            a,
            succs,
            value_map,
            originals,
            def_block: OnceCell::new(),
            avoiding: RefCell::new(FxHashMap::default()),
        }
    }

    /// Per original value, the first block of the allocated function defining it.
    fn def_blocks(&self) -> Vec<Option<usize>> {
        let mut def_block = vec![None; self.originals];
        let mut note = |v: chromatic::Value, b: usize| {
            if let Some(Some(o)) = self.value_map.get(v.index()) {
                def_block[*o as usize].get_or_insert(b);
            }
        };
        for (b, block) in self.a.blocks.iter().enumerate() {
            block.phis.iter().for_each(|phi| note(phi.def.value, b));
            for inst in &block.insts {
                if let InstKind::Op(op) = &inst.kind {
                    op.defs.iter().for_each(|d| note(d.value, b));
                }
            }
        }
        def_block
    }

    /// Whether the block defining original value `value` dominates block `at`.
    pub fn dominated(&self, value: u32, at: usize) -> bool {
        let def_block = self.def_block.get_or_init(|| self.def_blocks());
        def_block[value as usize].is_some_and(|d| self.dominates(d, at))
    }

    /// Whether block `d` dominates block `at` (blocks of the allocated function).
    pub fn dominates(&self, d: usize, at: usize) -> bool {
        if d == at {
            return true;
        }
        let mut avoiding = self.avoiding.borrow_mut();
        let reached = avoiding.entry(d).or_insert_with(|| self.reach_avoiding(d));
        !reached[at]
    }

    /// Blocks the entry reaches without entering `d`.
    fn reach_avoiding(&self, d: usize) -> Vec<bool> {
        let mut seen = vec![false; self.succs.len()];
        if d == 0 || self.succs.is_empty() {
            return seen;
        }
        seen[0] = true;
        let mut stack = vec![0];
        while let Some(b) = stack.pop() {
            for &s in &self.succs[b] {
                if s != d && !seen[s] {
                    seen[s] = true;
                    stack.push(s);
                }
            }
        }
        seen
    }
}
