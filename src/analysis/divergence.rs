//! The linear CFG of divergent control flow (Mesa ACO's "linear" vs "logical" CFG).
//!
//! Under `branch divergent %p, T, E` the hardware runs the then-side and then the
//! else-side for the whole wave, masking lanes with EXEC. Per-lane writes respect the mask,
//! so per-lane values follow the logical CFG; uniform (scalar) writes do not, so uniform
//! values follow the linear CFG: the logical edges plus, for each divergent branch in B
//! whose immediate post-dominator is J with T ≠ J and E ≠ J, an edge to E from every block
//! of the then-region (blocks reachable from T without passing J or E) that has a
//! successor outside the region. The rule is stated in `docs/FORMAT.md`; the verifier
//! implements it independently.
//!
//! Two readings of that rule are made explicit here: a `ret` block of the then-region
//! counts as having a successor outside it (the virtual exit: lanes that return stop, the
//! wave goes on to E, so uniform values live into E must survive it; when B's only
//! post-dominator is the virtual exit the region runs to the returns), and divergent
//! branches in unreachable blocks are ignored (they never run).

use super::cfg::Graph;
use super::dom::PostDomTree;
use super::rows::Rows;
use crate::program::{Block, BranchKind, Function, Terminator};

/// The linear CFG and the joins of divergent branches.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub linear: Graph,
    /// Blocks that are the immediate post-dominator of some divergent branch, sorted.
    pub joins: Vec<Block>,
    /// Per block: the divergent branch block whose else-arm or join it is, when both of
    /// that branch's arms differ from its join (see [`Divergence::anchor`]); empty
    /// while no block has one.
    anchors: Vec<Option<Block>>,
    /// Per divergent branch block: the anchor of its join when that is another branch
    /// (see [`Divergence::conform`]); empty while no block has one.
    conform: Vec<Option<Block>>,
    /// Linear edges the wave takes only when no lane takes a side, sorted (see
    /// [`Divergence::is_skip`]).
    skips: Vec<(Block, Block)>,
}

impl Divergence {
    pub fn new(f: &Function, cfg: &Graph, pdom: &PostDomTree) -> Divergence {
        let mut added = Vec::new();
        let mut joins = Vec::new();
        let mut anchors = Vec::new();
        let mut conform = Vec::new();
        let mut stamp = vec![u32::MAX; cfg.len()];
        let mut skips = Vec::new();
        for &b in cfg.rpo() {
            let Terminator::Branch {
                kind: BranchKind::Divergent,
                then_block,
                else_block,
                ..
            } = f.block(b).term
            else {
                continue;
            };
            let join = pdom.ipdom(b);
            joins.extend(join);
            if join == Some(then_block) || join == Some(else_block) {
                continue;
            }
            let n = cfg.len();
            entry(&mut anchors, n, else_block).get_or_insert(b);
            if let Some(j) = join {
                let owner = *entry(&mut anchors, n, j).get_or_insert(b);
                if owner != b {
                    *entry(&mut conform, n, b) = Some(owner);
                }
            }
            skips.push((b, else_block));
            for exit in then_region_exits(cfg, b, (then_block, else_block, join), &mut stamp) {
                added.push((exit, else_block));
                skips.extend(
                    join.filter(|j| cfg.succs(exit).contains(j))
                        .map(|j| (exit, j)),
                );
            }
        }
        joins.sort();
        joins.dedup();
        skips.sort();
        skips.dedup();
        Divergence {
            linear: linear_cfg(cfg, added),
            joins,
            anchors,
            conform,
            skips,
        }
    }

    /// The divergence of a function without a divergent branch, which [`Divergence::new`]
    /// finds without post-dominators: the linear CFG is the logical one, and no block is
    /// a join, an anchored block or a skip (its per-block tables stay empty).
    pub fn convergent(cfg: &Graph) -> Divergence {
        Divergence {
            linear: cfg.clone(),
            joins: Vec::new(),
            anchors: Vec::new(),
            conform: Vec::new(),
            skips: Vec::new(),
        }
    }

    /// Whether the linear edge `from → to` is taken only when no lane takes a side of a
    /// divergent branch: the branch block's edge to its else-arm (no lane takes the
    /// then-side) and a then-side's edge to the join (no lane takes the else-side). The
    /// wave otherwise runs the side, so a distance measured along such an edge is that
    /// of a rare path.
    pub fn is_skip(&self, from: Block, to: Block) -> bool {
        self.skips.binary_search(&(from, to)).is_ok()
    }

    pub fn is_join(&self, b: Block) -> bool {
        self.joins.binary_search(&b).is_ok()
    }

    /// The divergent branch block `B` whose else-arm or join `b` is, when both of `B`'s
    /// arms differ from its join. On the linear CFG the wave reaches `b` from `B` without
    /// running any code when no lane takes the then-side (or the else-side): those paths
    /// have no place for copies, so uniform values enter `b` where they left `B`. ACO
    /// gives the paths empty linear blocks of their own (then-linear, else-linear) whose
    /// linear phis, here, would all be identities.
    pub fn anchor(&self, b: Block) -> Option<Block> {
        self.anchors.get(b.index()).copied().flatten()
    }

    /// For a divergent branch block `b` whose join is also the join of an enclosing
    /// divergent branch `B*` (the first in reverse post-order), `B*`: when no lane takes
    /// `b`'s else-side, the wave goes from `b`'s then-side on to where `B*`'s side ends,
    /// so uniform values must leave `b` where they left `B*`.
    pub fn conform(&self, b: Block) -> Option<Block> {
        self.conform.get(b.index()).copied().flatten()
    }
}

/// `table[b]` of a per-block table of `blocks` blocks that stays empty until its first
/// entry is written.
fn entry(table: &mut Vec<Option<Block>>, blocks: usize, b: Block) -> &mut Option<Block> {
    if table.is_empty() {
        table.resize(blocks, None);
    }
    &mut table[b.index()]
}

/// The linear CFG: `cfg` with the edges of `added` (in their order, after a block's
/// logical successors, each edge once). Without divergent regions nothing is added and
/// the linear CFG is the logical one, copied rather than built again.
fn linear_cfg(cfg: &Graph, added: Vec<(Block, Block)>) -> Graph {
    if added.is_empty() {
        return cfg.clone();
    }
    let added = Rows::grouped(cfg.len(), added);
    let mut succs = Rows::with_capacity(cfg.len(), cfg.edge_count() + added.entry_count());
    let mut row = Vec::new();
    for b in (0..cfg.len() as u32).map(Block) {
        row.clear();
        row.extend_from_slice(cfg.succs(b));
        for &s in added.row(b) {
            if !row.contains(&s) {
                row.push(s);
            }
        }
        succs.push_row(row.iter().copied());
    }
    Graph::from_rows(succs, Block(0))
}

/// Blocks reachable from `then_block` without passing `else_block` or `join` that have a
/// successor outside that region or end in `ret`. `stamp` marks region blocks with the branch block's
/// index, so no per-branch clearing is needed.
fn then_region_exits(
    cfg: &Graph,
    branch: Block,
    arms: (Block, Block, Option<Block>),
    stamp: &mut [u32],
) -> Vec<Block> {
    let mark = branch.0;
    let mut region = then_region(cfg, branch, arms, stamp);
    region.retain(|b| {
        let succs = cfg.succs(*b);
        succs.is_empty() || succs.iter().any(|s| stamp[s.index()] != mark)
    });
    region
}

/// The then-region of the divergent branch in `branch`: the blocks reachable from
/// `then_block` without passing `else_block` or `join`, sorted. `stamp` marks them with
/// the branch block's index (a slice of `u32::MAX` for a single use).
pub fn then_region(
    cfg: &Graph,
    branch: Block,
    (then_block, else_block, join): (Block, Block, Option<Block>),
    stamp: &mut [u32],
) -> Vec<Block> {
    let stop = |b: Block| b == else_block || Some(b) == join;
    let mark = branch.0;
    let mut stack = vec![then_block];
    let mut region = Vec::new();
    stamp[then_block.index()] = mark;
    while let Some(b) = stack.pop() {
        region.push(b);
        for &s in cfg.succs(b) {
            if !stop(s) && stamp[s.index()] != mark {
                stamp[s.index()] = mark;
                stack.push(s);
            }
        }
    }
    region.sort();
    region
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::dom::PostDomTree;

    fn linear_of(src: &str) -> (Graph, Divergence) {
        let f = &crate::parse(src).unwrap().functions[0];
        let cfg = Graph::of_function(f);
        let pdom = PostDomTree::new(f, &cfg);
        let d = Divergence::new(f, &cfg, &pdom);
        (cfg, d)
    }

    /// Without a divergent branch, the divergence built without post-dominators is the one
    /// `new` finds with them.
    #[test]
    fn convergent_is_new_without_divergent_branches() {
        let srcs = [
            "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch uniform %p, t, e\nt:\n  jump j\ne:\n  jump j\nj:\n  ret\n}\n",
            include_str!("../../corpus/irreducible.chr"),
            include_str!("../../corpus/nested_loops.chr"),
        ];
        for src in srcs {
            let (cfg, d) = linear_of(src);
            assert_eq!(Divergence::convergent(&cfg), d);
        }
    }

    #[test]
    fn then_side_falls_into_else_side() {
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch divergent %p, t1, e\nt1:\n  jump t2\nt2:\n  jump j\ne:\n  jump j\nj:\n  ret\n}\n";
        let (cfg, d) = linear_of(src);
        assert_eq!(cfg.succs(Block(2)), [Block(4)]);
        assert_eq!(d.linear.succs(Block(2)), [Block(4), Block(3)]);
        assert_eq!(d.linear.succs(Block(1)), [Block(2)]);
        assert_eq!(d.linear.preds(Block(3)), [Block(0), Block(2)]);
        assert_eq!(d.joins, [Block(4)]);
        assert!(d.is_skip(Block(0), Block(3)) && d.is_skip(Block(2), Block(4)));
        assert!(!d.is_skip(Block(0), Block(1)) && !d.is_skip(Block(2), Block(3)));
        assert!(!d.is_skip(Block(3), Block(4)));
    }

    #[test]
    fn early_return_in_then_side_links_every_return_to_else() {
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch divergent %p, t, e\nt:\n  branch uniform %p, r, j\nr:\n  ret\ne:\n  jump j\nj:\n  ret\n}\n";
        let (cfg, d) = linear_of(src);
        // `r` returns, so `a` has no post-dominator but the virtual exit: the then-region
        // is {t, r, j}, and both of its returns fall into `e`.
        assert_eq!(d.linear.succs(Block(1)), cfg.succs(Block(1)));
        assert_eq!(d.linear.succs(Block(2)), [Block(3)]);
        assert_eq!(d.linear.succs(Block(4)), [Block(3)]);
        assert_eq!(d.linear.preds(Block(3)), [Block(0), Block(2), Block(4)]);
        assert!(d.joins.is_empty());
    }

    #[test]
    fn both_sides_returning_have_no_join_but_still_link() {
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch divergent %p, t, e\nt:\n  ret\ne:\n  ret\n}\n";
        let (_, d) = linear_of(src);
        assert_eq!(d.linear.succs(Block(1)), [Block(2)]);
        assert!(d.joins.is_empty());
    }

    #[test]
    fn unreachable_divergent_branch_adds_nothing() {
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch uniform %p, t, e\nt:\n  jump j\ne:\n  jump j\nj:\n  ret\nz:\n  branch divergent %p, t, e\n}\n";
        let (cfg, d) = linear_of(src);
        for b in 0..5 {
            assert_eq!(cfg.succs(Block(b)), d.linear.succs(Block(b)), "block {b}");
        }
        assert!(d.joins.is_empty());
    }

    #[test]
    fn if_then_and_uniform_branches_add_no_edges() {
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch divergent %p, t, j\nt:\n  jump j\nj:\n  branch uniform %p, k, l\nk:\n  jump l\nl:\n  ret\n}\n";
        let (cfg, d) = linear_of(src);
        assert_eq!(d.linear, cfg);
        assert_eq!(d.joins, [Block(2)]);
    }

    #[test]
    fn an_exit_of_nested_then_regions_falls_into_each_else_side_in_branch_order() {
        // The outer then-region {t, t2, e2, j2} leaves through t2 and j2 into `e`; the
        // inner one {t2} leaves through t2 into `e2`: t2 gets both, the outer branch's first.
        let src = "target gfx9\nfunc @f {\na:\n  %p:s2 = cmp\n  branch divergent %p, t, e\nt:\n  branch divergent %p, t2, e2\nt2:\n  jump j\ne2:\n  jump j2\nj2:\n  jump j\ne:\n  jump j\nj:\n  ret\n}\n";
        let (_, d) = linear_of(src);
        assert_eq!(d.linear.succs(Block(2)), [Block(6), Block(5), Block(3)]);
        assert_eq!(d.linear.succs(Block(4)), [Block(6), Block(5)]);
        assert_eq!(d.linear.preds(Block(5)), [Block(0), Block(2), Block(4)]);
    }
}
