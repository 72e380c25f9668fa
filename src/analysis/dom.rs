//! Dominator and post-dominator trees.
//!
//! Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001): iterate
//! `idom(b) = intersect(processed preds)` in reverse post-order until nothing changes;
//! `intersect` walks the two candidates up by RPO number. Near-linear on reducible CFGs
//! and correct on irreducible ones. Dominance queries are O(1) through the entry/exit
//! numbers of a depth-first walk of the tree.
//!
//! Post-dominators run the same algorithm on the reverse graph rooted at a virtual exit
//! that every `ret` block jumps to; a block that cannot reach a `ret` has none.

use super::cfg::Graph;
use super::rows::Rows;
use crate::program::{Block, Function, Terminator};

const NONE: u32 = u32::MAX;

/// A dominator tree over a [`Graph`]'s nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct DomTree {
    idom: Vec<u32>,
    children: Rows<Block>,
    preorder: Vec<Block>,
    enter: Vec<u32>,
    exit: Vec<u32>,
    root: Block,
}

impl DomTree {
    /// Dominators of `g` rooted at its entry (the first node of its RPO).
    pub fn new(g: &Graph) -> DomTree {
        let n = g.len();
        let mut idom = vec![NONE; n];
        let Some(&root) = g.rpo().first() else {
            return DomTree::from_idoms(idom, Block(0), &[]);
        };
        idom[root.index()] = root.0;
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &g.rpo()[1..] {
                let mut new = NONE;
                for &p in g.preds(b) {
                    if idom[p.index()] == NONE {
                        continue;
                    }
                    new = if new == NONE {
                        p.0
                    } else {
                        intersect(g, &idom, new, p.0)
                    };
                }
                if idom[b.index()] != new {
                    idom[b.index()] = new;
                    changed = true;
                }
            }
        }
        DomTree::from_idoms(idom, root, g.rpo())
    }

    /// The tree from immediate dominators; children listed in the order of `rpo`.
    fn from_idoms(mut idom: Vec<u32>, root: Block, rpo: &[Block]) -> DomTree {
        let n = idom.len();
        if n > 0 {
            idom[root.index()] = NONE;
        }
        let edges = (rpo.iter())
            .filter(|b| idom[b.index()] != NONE)
            .map(|&b| (Block(idom[b.index()]), b));
        let children = Rows::grouped_from(n, edges);
        let mut tree = DomTree {
            idom,
            children,
            preorder: Vec::with_capacity(n),
            enter: vec![NONE; n],
            exit: vec![NONE; n],
            root,
        };
        if n > 0 {
            tree.number();
        }
        tree
    }

    /// Depth-first numbering for O(1) `dominates`, and the preorder.
    fn number(&mut self) {
        let mut clock = 0;
        let mut stack = Vec::with_capacity(self.idom.len());
        stack.push((self.root, 0usize));
        self.enter[self.root.index()] = clock;
        self.preorder.push(self.root);
        while let Some((b, next)) = stack.last_mut() {
            let b = *b;
            if let Some(&c) = self.children.row(b).get(*next) {
                *next += 1;
                clock += 1;
                self.enter[c.index()] = clock;
                self.preorder.push(c);
                stack.push((c, 0));
            } else {
                clock += 1;
                self.exit[b.index()] = clock;
                stack.pop();
            }
        }
    }

    /// The immediate dominator; `None` for the root and for unreachable nodes.
    pub fn idom(&self, b: Block) -> Option<Block> {
        Some(self.idom[b.index()]).filter(|&d| d != NONE).map(Block)
    }

    pub fn children(&self, b: Block) -> &[Block] {
        self.children.row(b)
    }

    /// Whether `a` dominates `b` (reflexive). False when either is unreachable.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        let (ea, eb) = (self.enter[a.index()], self.enter[b.index()]);
        ea != NONE && eb != NONE && ea <= eb && self.exit[b.index()] <= self.exit[a.index()]
    }

    /// Reachable nodes, dominators before the nodes they dominate; siblings in reverse
    /// post-order of the graph.
    pub fn preorder(&self) -> &[Block] {
        &self.preorder
    }

    pub fn is_reachable(&self, b: Block) -> bool {
        self.enter[b.index()] != NONE
    }
}

fn intersect(g: &Graph, idom: &[u32], mut a: u32, mut b: u32) -> u32 {
    let order = |x: u32| g.rpo_index(Block(x)).unwrap_or(u32::MAX);
    while a != b {
        while order(a) > order(b) {
            a = idom[a as usize];
        }
        while order(b) > order(a) {
            b = idom[b as usize];
        }
    }
    a
}

/// Post-dominators of a function's logical CFG.
#[derive(Clone, Debug, PartialEq)]
pub struct PostDomTree {
    tree: DomTree,
    exit: Block,
}

impl PostDomTree {
    pub fn new(f: &Function, cfg: &Graph) -> PostDomTree {
        let n = cfg.len();
        let exit = Block(n as u32);
        let mut succs = Rows::with_capacity(n + 1, cfg.edge_count() + n);
        for b in 0..n {
            succs.push_row(cfg.preds(Block(b as u32)).iter().copied());
        }
        succs.push_row(
            f.block_ids()
                .filter(|&b| matches!(f.block(b).term, Terminator::Ret { .. })),
        );
        let reverse = Graph::from_rows(succs, exit);
        PostDomTree {
            tree: DomTree::new(&reverse),
            exit,
        }
    }

    /// The immediate post-dominator; `None` when it is the virtual exit or the block cannot
    /// reach a `ret`.
    pub fn ipdom(&self, b: Block) -> Option<Block> {
        self.tree.idom(b).filter(|&d| d != self.exit)
    }

    /// Whether `a` post-dominates `b` (reflexive).
    pub fn post_dominates(&self, a: Block, b: Block) -> bool {
        self.tree.dominates(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(u32, u32)], n: usize) -> Graph {
        let mut succs = vec![Vec::new(); n];
        for &(a, b) in edges {
            succs[a as usize].push(Block(b));
        }
        Graph::from_succs(succs, Block(0))
    }

    fn idoms(t: &DomTree, n: u32) -> Vec<Option<u32>> {
        (0..n).map(|b| t.idom(Block(b)).map(|d| d.0)).collect()
    }

    #[test]
    fn diamond_and_loop() {
        // 0 → 1 → {2, 3} → 4 → 1 (loop), 4 → 5
        let g = graph(&[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 1), (4, 5)], 6);
        let t = DomTree::new(&g);
        assert_eq!(
            idoms(&t, 6),
            [None, Some(0), Some(1), Some(1), Some(1), Some(4)]
        );
        assert!(t.dominates(Block(1), Block(5)));
        assert!(!t.dominates(Block(2), Block(4)));
        assert!(t.dominates(Block(3), Block(3)));
        // RPO is 0 1 3 2 4 5 (the DFS reaches 4 through 2 first), so siblings follow it.
        assert_eq!(g.rpo(), [0, 1, 3, 2, 4, 5].map(Block));
        assert_eq!(t.children(Block(1)), [3, 2, 4].map(Block));
        assert_eq!(t.preorder(), [0, 1, 3, 2, 4, 5].map(Block));
    }

    #[test]
    fn irreducible_two_entries_into_a_cycle() {
        // 0 → {1, 2}, 1 ⇄ 2, both → 3: neither cycle block dominates the other.
        let g = graph(&[(0, 1), (0, 2), (1, 2), (2, 1), (1, 3), (2, 3)], 4);
        let t = DomTree::new(&g);
        assert_eq!(idoms(&t, 4), [None, Some(0), Some(0), Some(0)]);
        assert!(!t.dominates(Block(1), Block(2)));
        assert!(!t.dominates(Block(2), Block(1)));
    }

    #[test]
    fn irreducible_cycle_entered_deep() {
        // 0 → 1 → 2 → 3 → 2, 0 → 3: the cycle {2,3} is entered from 1 and from 0.
        let g = graph(&[(0, 1), (1, 2), (2, 3), (3, 2), (0, 3), (3, 4)], 5);
        let t = DomTree::new(&g);
        assert_eq!(idoms(&t, 5), [None, Some(0), Some(0), Some(0), Some(3)]);
    }

    #[test]
    fn unreachable_and_self_loop() {
        let g = graph(&[(0, 0), (0, 1), (2, 1)], 3);
        let t = DomTree::new(&g);
        assert_eq!(idoms(&t, 3), [None, Some(0), None]);
        assert!(!t.is_reachable(Block(2)));
        assert!(!t.dominates(Block(2), Block(1)));
        assert!(!t.dominates(Block(0), Block(2)));
    }

    #[test]
    fn post_dominators_of_a_diamond() {
        let src = "target gfx9\nfunc @f {\na:\n  %x:v1 = foo\n  branch divergent %x, b, c\nb:\n  jump d\nc:\n  jump d\nd:\n  ret\nspin:\n  jump spin\n}\n";
        let f = &crate::parse(src).unwrap().functions[0];
        let cfg = Graph::of_function(f);
        let pd = PostDomTree::new(f, &cfg);
        assert_eq!(pd.ipdom(Block(0)), Some(Block(3)));
        assert_eq!(pd.ipdom(Block(1)), Some(Block(3)));
        assert_eq!(pd.ipdom(Block(3)), None);
        assert_eq!(pd.ipdom(Block(4)), None);
        assert!(pd.post_dominates(Block(3), Block(0)));
    }
}
