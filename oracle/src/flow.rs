//! The control flow a register class follows, computed from the program alone: the
//! logical CFG for per-lane classes, the *linear* CFG for uniform ones (`docs/FORMAT.md`,
//! "Divergence and the linear CFG"; the model of Mesa ACO's linear CFG).
//!
//! A divergent branch in block B with arms T, E and join J (B's immediate post-dominator,
//! or none when only the exit post-dominates it) runs the then-lanes from T until they
//! reach J or return (the *then-walk*), then the else-lanes from E. For each reachable
//! divergent branch whose arms are both not J, the linear CFG adds to E an edge from every
//! block of the *then-region* (reachable from T without passing J or E) that leaves it or
//! returns, and from every block of the then-walk that returns or jumps to J. An added
//! edge carries B's phi arguments into E. A uniform value live into E is therefore live
//! through the whole then-side, which is what makes it interfere with everything written
//! there. Post-dominators come from the root crate's graph utilities
//! (`chromatic::analysis::dom`, Cooper, Harvey & Kennedy's algorithm on the reverse graph).

use chromatic::analysis::cfg::Graph;
use chromatic::analysis::dom::PostDomTree;
use chromatic::program::{Block, BranchKind, Function, Terminator};

/// An incoming edge of a block: from `from`, carrying the phi arguments of the block's
/// logical predecessor `phi_pred`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: Block,
    pub phi_pred: Block,
}

/// The edges one class's values flow along.
#[derive(Clone, Debug)]
pub struct Flow {
    pub preds: Vec<Vec<Edge>>,
    pub succs: Vec<Vec<Block>>,
    /// (branch block B, block X): X is the else-arm or the join of the divergent branch
    /// in B, both of whose arms differ from its join (linear CFG only). The wave reaches
    /// X from B without running any code when no lane takes a side, so a value of the
    /// class in a register at X's entry, and at the end of every flow predecessor of X,
    /// is there with the definition it had at B's end: such paths hold no phi.
    pub anchors: Vec<(Block, Block)>,
}

impl Flow {
    /// The logical CFG (`uniform` false) or the linear CFG of `f`.
    pub fn new(f: &Function, uniform: bool) -> Flow {
        let logical: Vec<Vec<Block>> = f
            .blocks
            .iter()
            .map(|b| distinct(b.term.successors()))
            .collect();
        let mut flow = Flow {
            preds: vec![Vec::new(); logical.len()],
            succs: vec![Vec::new(); logical.len()],
            anchors: Vec::new(),
        };
        for b in f.block_ids() {
            for &s in &logical[b.index()] {
                flow.add(b, s, b);
            }
        }
        if uniform {
            flow.add_linear_edges(f, &logical);
        }
        flow
    }

    fn add(&mut self, from: Block, to: Block, phi_pred: Block) {
        let edge = Edge { from, phi_pred };
        if !self.preds[to.index()].contains(&edge) {
            self.preds[to.index()].push(edge);
        }
        if !self.succs[from.index()].contains(&to) {
            self.succs[from.index()].push(to);
        }
    }

    fn add_linear_edges(&mut self, f: &Function, logical: &[Vec<Block>]) {
        let graph = Graph::of_function(f);
        let post = PostDomTree::new(f, &graph);
        for b in f.block_ids().filter(|&b| graph.is_reachable(b)) {
            let Terminator::Branch {
                kind: BranchKind::Divergent,
                then_block,
                else_block,
                ..
            } = f.block(b).term
            else {
                continue;
            };
            let join = post.ipdom(b);
            if join == Some(then_block) || join == Some(else_block) {
                continue;
            }
            let walk = reach(logical, then_block, [join, None]);
            let region = if walk.contains(&else_block) {
                reach(logical, then_block, [join, Some(else_block)])
            } else {
                walk.clone()
            };
            let returns = |x: Block| logical[x.index()].is_empty();
            let region_exits = region
                .iter()
                .filter(|&&x| returns(x) || logical[x.index()].iter().any(|s| !region.contains(s)));
            let walk_exits = walk
                .iter()
                .filter(|&&x| returns(x) || logical[x.index()].iter().any(|&s| Some(s) == join));
            let exits: Vec<Block> = region_exits.chain(walk_exits).copied().collect();
            for x in exits {
                self.add(x, else_block, b);
            }
            self.anchors.push((b, else_block));
            self.anchors.extend(join.map(|j| (b, j)));
        }
    }

    /// The blocks on paths of the flow from `from` to `to`, neither included, sorted.
    pub fn between(&self, from: Block, to: Block) -> Vec<Block> {
        let stops = [Some(from), Some(to)];
        let forward = reach(&self.succs, from, stops);
        let preds: Vec<Vec<Block>> = self
            .preds
            .iter()
            .map(|edges| edges.iter().map(|e| e.from).collect())
            .collect();
        let mut reaches_to = vec![false; self.succs.len()];
        reach(&preds, to, stops)
            .into_iter()
            .for_each(|b| reaches_to[b.index()] = true);
        let mut between: Vec<Block> = forward
            .into_iter()
            .skip(1)
            .filter(|b| reaches_to[b.index()])
            .collect();
        between.sort();
        between
    }
}

fn distinct(blocks: impl Iterator<Item = Block>) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for b in blocks {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// Blocks reachable from `start` without entering one of `stops`, `start` first.
fn reach(succs: &[Vec<Block>], start: Block, stops: [Option<Block>; 2]) -> Vec<Block> {
    let mut seen = vec![false; succs.len()];
    seen[start.index()] = true;
    let mut out = vec![start];
    let mut i = 0;
    while let Some(&b) = out.get(i) {
        i += 1;
        for &s in &succs[b.index()] {
            if !seen[s.index()] && !stops.contains(&Some(s)) {
                seen[s.index()] = true;
                out.push(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_then_side_gains_an_edge_to_the_else_side_for_uniform_classes_only() {
        let p = chromatic::parse(
            "target gfx9
func @f {
b:
  %p:s2 = cmp 0
  branch divergent %p, t, e
t:
  jump j
e:
  jump j
j:
  ret
}",
        )
        .expect("parses");
        let f = &p.functions[0];
        let (t, e) = (Block(1), Block(2));
        assert!(Flow::new(f, false).succs[t.index()] == [Block(3)]);
        let linear = Flow::new(f, true);
        assert_eq!(linear.succs[t.index()], [Block(3), e]);
        assert!(linear.preds[e.index()].contains(&Edge {
            from: t,
            phi_pred: Block(0)
        }));
    }

    #[test]
    fn the_else_arm_and_the_join_are_anchored_to_the_branch_block() {
        let p = chromatic::parse(
            "target gfx9
func @f {
b:
  %p:s2 = cmp 0
  branch divergent %p, t, e
t:
  jump t2
t2:
  jump j
e:
  jump j
j:
  ret
}",
        )
        .expect("parses");
        let f = &p.functions[0];
        let [b, t, t2, e, j] = [0, 1, 2, 3, 4].map(Block);
        assert!(Flow::new(f, false).anchors.is_empty());
        let linear = Flow::new(f, true);
        assert_eq!(linear.anchors, [(b, e), (b, j)]);
        assert_eq!(linear.between(b, e), [t, t2]);
        assert_eq!(linear.between(b, j), [t, t2, e]);
    }
}
