//! Where the parts of a tuple wish to be: `split` and `collect` kept copy-free.
//!
//! A `split` takes a tuple apart into its elements and a `collect` puts elements together
//! into a tuple (PTX import writes them around every vector operand, `docs/PTX.md`). When
//! each element sits in the unit it has inside the tuple, both are free, and a tuple read
//! by parts (an `ldmatrix.x4` whose halves feed two `mma` operands) keeps its four units
//! aligned instead of leaving elements scattered across units that later tuples need
//! whole. Mesa ACO gives `p_split_vector` and `p_create_vector` the same affinities
//! (`aco_register_allocation.cpp`, `get_reg_create_vector` and the split-vector hint):
//! an element of a split that a collect regroups with its neighbours (consecutive
//! elements of the same split, in order) wishes the tuple's units at its offset; a
//! collect whose elements already lie contiguously, in order, wishes the units they span.
//! Elements read one by one keep the first free unit instead: held in place with their
//! own lifetimes they would pin down quads that later tuples need whole (a transpose of
//! four loaded vectors). Wishes are hints only: the assigner takes one where the window
//! is free and aligned, so correctness never depends on them.

use crate::program::{Function, Location, Op, Operand, Value};
use crate::target::ClassId;
use rustc_hash::{FxHashMap, FxHashSet};

/// The elements of a split that a collect regroups in place. Only splits' elements are
/// recorded, in hash tables rather than tables over every value, so that a function
/// without splits (most) touches no memory per value.
pub(super) struct Parts {
    regrouped: FxHashSet<Value>,
}

/// The splits' elements and the collects of a function, gathered operation by operation
/// (by a walk that reads every operation anyway), from which [`Parts`] are found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct PartsGathering {
    /// Per element of a split: which split (counted in walk order) and where in it.
    element: FxHashMap<Value, (usize, usize)>,
    /// The elements of each collect whose operands are all values.
    collects: Vec<Vec<Value>>,
    splits: usize,
}

impl PartsGathering {
    /// Records `op` when it is a split or a collect.
    pub(super) fn push(&mut self, op: &Op) {
        match op.opcode.as_str() {
            "split" => {
                for (k, d) in op.defs.iter().enumerate() {
                    self.element.insert(d.value, (self.splits, k));
                }
                self.splits += 1;
            }
            "collect" => {
                let elements: Vec<Value> = op.uses().map(|u| u.value).collect();
                if elements.len() == op.operands.len() {
                    self.collects.push(elements);
                }
            }
            _ => {}
        }
    }

    /// The elements each collect regroups in place: consecutive elements of one split, in
    /// order.
    pub(super) fn finish(self) -> Parts {
        let mut regrouped = FxHashSet::default();
        for elements in &self.collects {
            let places: Option<Vec<(usize, usize)>> = elements
                .iter()
                .map(|v| self.element.get(v).copied())
                .collect();
            let Some(places) = places else {
                continue;
            };
            let consecutive = places
                .windows(2)
                .all(|w| w[1].0 == w[0].0 && w[1].1 == w[0].1 + 1);
            if consecutive {
                regrouped.extend(elements.iter().copied());
            }
        }
        Parts { regrouped }
    }
}

impl Parts {
    /// The window definition `def` of `op` wishes, given where values are (`loc`).
    pub(super) fn wish(
        &self,
        f: &Function,
        op: &Op,
        def: Value,
        loc: &[Option<Location>],
    ) -> Option<Location> {
        match op.opcode.as_str() {
            "split" if self.regrouped.contains(&def) => element_of_split(f, op, def, loc),
            "collect" => span_of_collect(op, loc),
            _ => None,
        }
    }
}

/// Element `def` of a split: the tuple's units at the element's offset.
fn element_of_split(
    f: &Function,
    op: &Op,
    def: Value,
    loc: &[Option<Location>],
) -> Option<Location> {
    let [Operand::Value(tuple)] = op.operands.as_slice() else {
        return None;
    };
    let Location::Reg { class, first, len } = loc[tuple.value.index()]? else {
        return None;
    };
    let mut offset = 0;
    for d in &op.defs {
        let size = f.value(d.value).size;
        if d.value == def {
            return (offset + size <= len).then_some(Location::Reg {
                class,
                first: first + offset,
                len: size,
            });
        }
        offset += size;
    }
    None
}

/// A collect whose elements lie contiguously, in order: the units they span.
fn span_of_collect(op: &Op, loc: &[Option<Location>]) -> Option<Location> {
    let mut span: Option<(ClassId, u16, u16)> = None;
    for operand in &op.operands {
        let Operand::Value(u) = operand else {
            return None;
        };
        let Location::Reg { class, first, len } = loc[u.value.index()]? else {
            return None;
        };
        span = match span {
            None => Some((class, first, len)),
            Some((c, start, total)) if c == class && start + total == first => {
                Some((c, start, total + len))
            }
            Some(_) => return None,
        };
    }
    let (class, first, len) = span?;
    Some(Location::Reg { class, first, len })
}

#[cfg(test)]
mod tests {
    use crate::alloc::{allocate, AllocOptions};
    use crate::program::Location;

    /// A quad read by halves next to a live scalar: the elements stay in the quad's units
    /// and each half is the quad's aligned pair (first free would scatter the elements
    /// into the units below the quad).
    #[test]
    fn a_quad_read_by_halves_keeps_its_units() {
        let text = "target sm_80\nfunc @f {\nentry:\n  %a:r1 = tid\n  %t:r4 = ldm %a reads\n  %x0:r1, %x1:r1, %x2:r1, %x3:r1 = split %t\n  %lo:r2 = collect %x0, %x1\n  %hi:r2 = collect %x2, %x3\n  %s:r2 = mma %lo, %hi\n  st %a, %s writes\n  ret\n}\n";
        let p = crate::parse(text).expect("parses");
        let (allocated, _) = allocate(&p, &AllocOptions::default()).expect("allocates");
        let firsts: Vec<u16> = allocated.functions[0].blocks[0]
            .insts
            .iter()
            .filter_map(|i| i.op())
            .flat_map(|op| &op.defs)
            .map(|d| match d.loc {
                Some(Location::Reg { first, .. }) => first,
                other => panic!("a definition in {other:?}"),
            })
            .collect();
        let quad = firsts[1];
        assert_eq!(
            firsts[2..8],
            [quad, quad + 1, quad + 2, quad + 3, quad, quad + 2]
        );
    }
}
