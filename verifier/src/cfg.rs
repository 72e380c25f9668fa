//! The verifier's own control-flow facts: logical successors and predecessors, immediate
//! post-dominators, the arm walks of divergent branches and the linear CFG, computed
//! independently of the allocator's analyses. The checks need post-dominators only for
//! the joins of divergent branches, so [`Cfg::new`] computes them only for a function
//! that has one; [`Cfg::post_dominators`] gives every block's (the interpreter's
//! reconvergence points).
//!
//! Post-dominators: Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001),
//! run on the reverse graph rooted at a virtual exit that every `ret` block reaches.
//!
//! # The linear CFG
//!
//! The order in which the wave runs blocks (`docs/FORMAT.md`, "Divergence and the linear
//! CFG"). A divergent branch in block B with arms T, E and join J (B's immediate
//! post-dominator, or none when only the exit post-dominates it) runs the then-lanes from T
//! until they reach J or return (the *then-walk*), then the else-lanes from E likewise (the
//! *else-walk*), then J; an arm that is J only waits. A walk covers every block reachable
//! from its arm without passing J: a then-side that jumps into the else-side, or loops
//! back to B, runs those blocks inside the then-walk. The linear CFG is the logical edges
//! plus, for each reachable divergent branch whose arms are both not J:
//!
//! 1. the format's rule: an edge to E from every block of the *then-region* (reachable
//!    from T without passing J or E) that has a successor outside it or returns;
//! 2. an edge to E from every block of the then-walk that returns or jumps to J: the
//!    pending else-lanes run next. A then-side confined to its region, as in structured
//!    code, gives exactly the edges of rule 1; one that jumps into the else-side, or loops
//!    back to B, runs else-side blocks in the then-walk, and the else-lanes run E again
//!    after them.
//!
//! A walk holds no return when J exists (J post-dominates B); when it does not, the walks
//! run to the returns, and the else-walk's returns hand over to what follows the walk
//! around B, which the rules of the enclosing branches give. Branches in unreachable
//! blocks add no edges. Each linear edge remembers the logical predecessor of its target
//! whose phi arguments it carries: the source itself for a logical edge, B for an edge
//! into E.
//! `tests/linear_cfg.rs` checks on random programs that every pair of blocks the
//! interpreter runs one after the other is a linear edge.

use chromatic::{BranchKind, Function, Terminator};
use rustc_hash::FxHashSet;
use smallvec::SmallVec;

/// One block's successors or incoming edges: inline up to two (a terminator names at
/// most two blocks), so that most rows allocate nothing.
pub type Row<T> = SmallVec<[T; 2]>;

/// An incoming edge: from `from`, carrying the phi arguments of predecessor `phi_pred`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Edge {
    pub from: usize,
    pub phi_pred: usize,
}

/// A reachable divergent branch and the blocks its walks may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergent {
    pub branch: usize,
    pub then_block: usize,
    pub else_block: usize,
    /// The immediate post-dominator; `None` when only the exit post-dominates the branch.
    pub join: Option<usize>,
    /// Blocks reachable from the then-arm without passing the join (empty when the arm is
    /// the join).
    pub then_walk: Vec<usize>,
    /// Blocks reachable from the else-arm without passing the join.
    pub else_walk: Vec<usize>,
}

/// Both CFGs of one function, by block index.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub succs: Vec<Row<usize>>,
    pub preds: Vec<Row<Edge>>,
    pub linear_preds: Vec<Row<Edge>>,
    pub linear_succs: Vec<Row<usize>>,
    /// Blocks reachable from the entry, in reverse postorder of the linear CFG.
    pub rpo: Vec<usize>,
    /// The reachable divergent branches, in block order.
    pub divergent: Vec<Divergent>,
}

impl Cfg {
    pub fn new(f: &Function) -> Cfg {
        let succs: Vec<Row<usize>> = f
            .blocks
            .iter()
            .map(|b| b.term.successors().map(|s| s.index()).collect())
            .collect();
        let n = succs.len();
        let mut preds = vec![Row::new(); n];
        for (b, ss) in succs.iter().enumerate() {
            for &s in ss {
                preds[s].push(Edge {
                    from: b,
                    phi_pred: b,
                });
            }
        }
        let (divergent, linear_preds) = if f.blocks.iter().any(|b| b.term.is_divergent()) {
            divergent_edges(f, &succs, &preds)
        } else {
            (Vec::new(), preds.clone())
        };
        let mut linear_succs = vec![Row::new(); n];
        for (b, edges) in linear_preds.iter().enumerate() {
            for e in edges {
                if !linear_succs[e.from].contains(&b) {
                    linear_succs[e.from].push(b);
                }
            }
        }
        let rpo = reverse_postorder(n, 0, |b| &linear_succs[b]);
        Cfg {
            succs,
            preds,
            linear_preds,
            linear_succs,
            rpo,
            divergent,
        }
    }

    /// Per block, its immediate post-dominator; `None` for a block that never exits or
    /// whose only post-dominator is the virtual exit.
    pub fn post_dominators(&self) -> Vec<Option<usize>> {
        post_dominators(&self.succs, &self.preds)
    }
}

/// The reachable divergent branches of a function that has some, and its linear
/// predecessors: the logical ones plus the edges the branches add.
fn divergent_edges(
    f: &Function,
    succs: &[Row<usize>],
    preds: &[Row<Edge>],
) -> (Vec<Divergent>, Vec<Row<Edge>>) {
    let mut walker = Walker::new(succs.len());
    let ipdom = post_dominators(succs, preds);
    let divergent = divergent_branches(f, succs, &ipdom, &mut walker);
    let mut linear = LinearEdges::new(preds);
    for d in &divergent {
        linear.add_for(d, succs, &mut walker);
    }
    (divergent, linear.preds)
}

/// The reachable divergent branches with their walks.
fn divergent_branches(
    f: &Function,
    succs: &[Row<usize>],
    ipdom: &[Option<usize>],
    walker: &mut Walker,
) -> Vec<Divergent> {
    let reachable = reachable_from_entry(succs);
    let mut out = Vec::new();
    for (b, block) in f.blocks.iter().enumerate() {
        let Terminator::Branch {
            kind: BranchKind::Divergent,
            then_block,
            else_block,
            ..
        } = block.term
        else {
            continue;
        };
        if !reachable[b] {
            continue;
        }
        let (t, e, join) = (then_block.index(), else_block.index(), ipdom[b]);
        let walk = |arm: usize, walker: &mut Walker| {
            if Some(arm) == join {
                Vec::new()
            } else {
                walker.reach(succs, arm, [join, None])
            }
        };
        out.push(Divergent {
            branch: b,
            then_block: t,
            else_block: e,
            join,
            then_walk: walk(t, walker),
            else_walk: walk(e, walker),
        });
    }
    out
}

/// The linear predecessor lists under construction, without duplicate edges.
struct LinearEdges {
    preds: Vec<Row<Edge>>,
    present: FxHashSet<(usize, Edge)>,
}

impl LinearEdges {
    fn new(logical: &[Row<Edge>]) -> LinearEdges {
        let present = logical
            .iter()
            .enumerate()
            .flat_map(|(b, es)| es.iter().map(move |&e| (b, e)))
            .collect();
        LinearEdges {
            preds: logical.to_vec(),
            present,
        }
    }

    fn add(&mut self, to: usize, edge: Edge) {
        if self.present.insert((to, edge)) {
            self.preds[to].push(edge);
        }
    }

    /// The edges rules 1 and 2 of the module documentation add for one branch.
    fn add_for(&mut self, d: &Divergent, succs: &[Row<usize>], walker: &mut Walker) {
        let (b, e, join) = (d.branch, d.else_block, d.join);
        if Some(d.then_block) == join || Some(e) == join {
            return;
        }
        let returns = |x: usize| succs[x].is_empty();
        let region = if d.then_walk.contains(&e) {
            walker.reach(succs, d.then_block, [join, Some(e)])
        } else {
            d.then_walk.clone()
        };
        let in_region = walker.marks(&region);
        let region_exits = region
            .iter()
            .filter(|&&x| returns(x) || succs[x].iter().any(|&s| !in_region(s)));
        let walk_exits = d
            .then_walk
            .iter()
            .filter(|&&x| returns(x) || succs[x].iter().any(|&s| Some(s) == join));
        for &x in region_exits.chain(walk_exits) {
            self.add(
                e,
                Edge {
                    from: x,
                    phi_pred: b,
                },
            );
        }
    }
}

/// Depth-first reachability with generation stamps, so that many walks over one graph
/// cost their own size, not the graph's.
struct Walker {
    stamp: Vec<u32>,
    generation: u32,
}

impl Walker {
    fn new(n: usize) -> Walker {
        Walker {
            stamp: vec![0; n],
            generation: 0,
        }
    }

    /// Blocks reachable from `start` without entering a block of `stops`, `start` first.
    fn reach(
        &mut self,
        succs: &[Row<usize>],
        start: usize,
        stops: [Option<usize>; 2],
    ) -> Vec<usize> {
        self.generation += 1;
        let g = self.generation;
        let mut out = vec![start];
        self.stamp[start] = g;
        let mut i = 0;
        while let Some(&b) = out.get(i) {
            i += 1;
            for &s in &succs[b] {
                if self.stamp[s] != g && !stops.contains(&Some(s)) {
                    self.stamp[s] = g;
                    out.push(s);
                }
            }
        }
        out
    }

    /// A membership test for `blocks` (valid until the next walk).
    fn marks(&mut self, blocks: &[usize]) -> impl Fn(usize) -> bool + '_ {
        self.generation += 1;
        let g = self.generation;
        for &b in blocks {
            self.stamp[b] = g;
        }
        move |b| self.stamp[b] == g
    }
}

/// Which blocks the entry reaches on the logical CFG.
fn reachable_from_entry(succs: &[Row<usize>]) -> Vec<bool> {
    let mut seen = vec![false; succs.len()];
    let mut stack: Vec<usize> = Vec::new();
    if let Some(s) = seen.first_mut() {
        *s = true;
        stack.push(0);
    }
    while let Some(b) = stack.pop() {
        for &s in &succs[b] {
            if !seen[s] {
                seen[s] = true;
                stack.push(s);
            }
        }
    }
    seen
}

/// Reverse postorder of the nodes reachable from `root` (iterative DFS).
fn reverse_postorder<'a>(n: usize, root: usize, next: impl Fn(usize) -> &'a [usize]) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut post = Vec::new();
    let mut stack = vec![(root, 0)];
    seen[root] = true;
    while let Some(&mut (b, ref mut i)) = stack.last_mut() {
        if let Some(&s) = next(b).get(*i) {
            *i += 1;
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    post
}
/// Immediate post-dominators by CHK on the reverse graph; node `n` is the virtual exit.
fn post_dominators(succs: &[Row<usize>], preds: &[Row<Edge>]) -> Vec<Option<usize>> {
    let n = succs.len();
    let exit = n;
    let mut rsuccs: Vec<Vec<usize>> = preds
        .iter()
        .map(|es| es.iter().map(|e| e.from).collect())
        .collect();
    rsuccs.push((0..n).filter(|&b| succs[b].is_empty()).collect());
    let rpo = reverse_postorder(n + 1, exit, |b| &rsuccs[b]);
    let mut order = vec![usize::MAX; n + 1];
    for (i, &b) in rpo.iter().enumerate() {
        order[b] = i;
    }
    let mut idom = vec![usize::MAX; n + 1];
    idom[exit] = exit;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo.iter().skip(1) {
            let mut new = usize::MAX;
            let rpreds = succs[b]
                .iter()
                .copied()
                .chain(succs[b].is_empty().then_some(exit));
            for p in rpreds.filter(|&p| idom[p] != usize::MAX) {
                new = if new == usize::MAX {
                    p
                } else {
                    intersect(&idom, &order, p, new)
                };
            }
            if new != idom[b] {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom.truncate(n);
    idom.into_iter()
        .map(|d| (d != usize::MAX && d != exit).then_some(d))
        .collect()
}

fn intersect(idom: &[usize], order: &[usize], mut a: usize, mut b: usize) -> usize {
    while a != b {
        while order[a] > order[b] {
            a = idom[a];
        }
        while order[b] > order[a] {
            b = idom[b];
        }
    }
    a
}
