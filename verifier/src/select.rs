//! Which phis a `remat` may recompute as a select on a branch's condition, and from what.
//!
//! A phi `x` of block `J` whose two arguments are constants (values of `remat` operations,
//! which compute the same value wherever they run) is a function of the edge the last
//! arrival at `J` took. A `remat LOC <- %x (%p@L)` stands for `select(p, c_then, c_else)`;
//! it is accepted where the rule of `docs/FORMAT.md` ("Selects of phis") holds, computed
//! here from the original program alone:
//!
//! 1. `x` is per-lane, `J` has exactly two predecessors, one argument each, and both
//!    arguments are defined by `remat` operations;
//! 2. some block `B ≠ J` ends with `branch _ %p, T, E`, `T ≠ E`, and dominates `J` (the
//!    entry does not reach `J` without entering `B`);
//! 3. each argument's edge `P → J` has one side: if `P` is `B`, the target of `B` that is
//!    `J`; otherwise the targets of `B` from which `P` is reached without entering `B`
//!    again — exactly one — and the two edges' sides differ;
//! 4. the `remat` reads `%p` and stands in a block `J` dominates (`dataflow.rs` with
//!    `fresh.rs`), and the dataflow checks that its operand holds `%p` there.
//!
//! Why it is sound: `p`'s definition dominates `B` (SSA), so it cannot run again between
//! the last run of `B` and a point `J` dominates without `B` running again (the argument of
//! `fresh.rs`); the last arrival at `J` before that point came after the last run of `B`
//! (`B` dominates `J`, `J` the point), along a path that left `B` by the side of its edge
//! (3), which is the side `p` chose. So `p` there selects the argument of the edge taken.
//! For a divergent branch this holds per lane. The interpreter (`interp.rs`) runs the
//! select by the outcome the lane's last branch on `p`'s value took.

use chromatic::{Function, Target, Terminator, Value};

/// The constant arguments of a phi by side of the branch that decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Select {
    /// The branch's condition.
    pub cond: Value,
    /// The argument on the edge from the branch's then-side, and from its else-side.
    pub then_value: Value,
    pub else_value: Value,
}

/// Per original value: the selects that may recompute it (one per deciding branch).
pub(crate) fn selects(o: &Function, target: &Target) -> Vec<Vec<Select>> {
    let mut out = vec![Vec::new(); o.values.len()];
    if o.blocks.iter().all(|b| b.phis.is_empty()) {
        return out;
    }
    let succs: Vec<Vec<usize>> = o
        .blocks
        .iter()
        .map(|b| b.term.successors().map(|s| s.index()).collect())
        .collect();
    let preds = predecessors(&succs);
    let constants = constant_values(o);
    let mut searches = Searches::new(&succs);
    for (j, block) in o.blocks.iter().enumerate() {
        if preds[j].len() != 2 {
            continue;
        }
        for phi in &block.phis {
            let per_lane = !target.class(o.value(phi.def.value).class).uniform;
            let shaped = phi.args.len() == 2 && phi.args.iter().all(|a| constants[a.value.index()]);
            if per_lane && shaped {
                out[phi.def.value.index()] = deciding_branches(o, &mut searches, j, phi);
            }
        }
    }
    out
}

/// Whether `v` is defined by a `remat` operation, per value.
pub(crate) fn constant_values(o: &Function) -> Vec<bool> {
    let mut constant = vec![false; o.values.len()];
    for op in o
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.op())
    {
        if op.remat {
            op.defs
                .iter()
                .for_each(|d| constant[d.value.index()] = true);
        }
    }
    constant
}

fn predecessors(succs: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); succs.len()];
    for (b, ss) in succs.iter().enumerate() {
        for &s in ss {
            if !preds[s].contains(&b) {
                preds[s].push(b);
            }
        }
    }
    preds
}

/// The selects of `phi` (of block `j`): one per block whose branch decides it (rules 2, 3).
fn deciding_branches(
    o: &Function,
    searches: &mut Searches<'_>,
    j: usize,
    phi: &chromatic::Phi,
) -> Vec<Select> {
    let mut found = Vec::new();
    for (b, block) in o.blocks.iter().enumerate() {
        let Terminator::Branch {
            cond,
            then_block,
            else_block,
            ..
        } = block.term
        else {
            continue;
        };
        let (t, e) = (then_block.index(), else_block.index());
        if b == j || t == e || searches.from(0, b)[j] {
            continue;
        }
        let side = |searches: &mut Searches<'_>, pred: usize| -> Option<bool> {
            let (then_side, else_side) = if pred == b {
                (t == j, e == j)
            } else {
                (searches.from(t, b)[pred], searches.from(e, b)[pred])
            };
            (then_side != else_side).then_some(then_side)
        };
        let (a0, a1) = (&phi.args[0], &phi.args[1]);
        let sides = (
            side(searches, a0.block.index()),
            side(searches, a1.block.index()),
        );
        let (then_value, else_value) = match sides {
            (Some(true), Some(false)) => (a0.value, a1.value),
            (Some(false), Some(true)) => (a1.value, a0.value),
            _ => continue,
        };
        found.push(Select {
            cond: cond.value,
            then_value,
            else_value,
        });
    }
    found
}

/// Reachability searches that avoid one block, kept once made.
struct Searches<'a> {
    succs: &'a [Vec<usize>],
    made: rustc_hash::FxHashMap<(usize, usize), Vec<bool>>,
}

impl<'a> Searches<'a> {
    fn new(succs: &'a [Vec<usize>]) -> Searches<'a> {
        Searches {
            succs,
            made: rustc_hash::FxHashMap::default(),
        }
    }

    /// The blocks reached from `start` without entering `avoid` (none if `start` is it).
    fn from(&mut self, start: usize, avoid: usize) -> &[bool] {
        let succs = self.succs;
        self.made.entry((start, avoid)).or_insert_with(|| {
            let mut seen = vec![false; succs.len()];
            if start == avoid {
                return seen;
            }
            seen[start] = true;
            let mut stack = vec![start];
            while let Some(b) = stack.pop() {
                for &s in &succs[b] {
                    if s != avoid && !seen[s] {
                        seen[s] = true;
                        stack.push(s);
                    }
                }
            }
            seen
        })
    }
}
