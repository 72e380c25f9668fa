//! The verifier's own control-flow facts: logical successors and predecessors, immediate
//! post-dominators, and the linear CFG, computed independently of the allocator's analyses.
//!
//! Post-dominators: Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001),
//! run on the reverse graph rooted at a virtual exit that every `ret` block reaches.
//!
//! Linear CFG (`docs/FORMAT.md`, "Divergence and the linear CFG"): the logical edges plus,
//! for each divergent branch in block B with immediate post-dominator J and arms T, E where
//! neither arm is J, an edge to E from every block of the then-region (blocks reachable from
//! T without passing through J or E) that has a successor outside the region — a block that
//! ends in `ret` counts as having one — and with the region running to the returns when J is
//! the virtual exit. Branches in unreachable blocks add no edges. Each linear
//! edge remembers the logical predecessor of its target whose phi arguments it carries: the
//! source itself for a logical edge, B for an added edge.

use chromatic::{BranchKind, Function, Terminator};

/// An incoming edge: from `from`, carrying the phi arguments of predecessor `phi_pred`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub phi_pred: usize,
}

/// Both CFGs of one function, by block index.
#[derive(Clone, Debug)]
pub struct Cfg {
    pub succs: Vec<Vec<usize>>,
    pub preds: Vec<Vec<Edge>>,
    pub linear_preds: Vec<Vec<Edge>>,
    pub linear_succs: Vec<Vec<usize>>,
    /// Immediate post-dominator; `None` for the virtual exit or a block that never exits.
    pub ipdom: Vec<Option<usize>>,
    /// Blocks reachable from the entry, in reverse postorder of the linear CFG.
    pub rpo: Vec<usize>,
}

impl Cfg {
    pub fn new(f: &Function) -> Cfg {
        let succs: Vec<Vec<usize>> = f
            .blocks
            .iter()
            .map(|b| b.term.successors().map(|s| s.index()).collect())
            .collect();
        let n = succs.len();
        let mut preds = vec![Vec::new(); n];
        for (b, ss) in succs.iter().enumerate() {
            for &s in ss {
                preds[s].push(Edge {
                    from: b,
                    phi_pred: b,
                });
            }
        }
        let ipdom = post_dominators(&succs, &preds);
        let mut linear_preds = preds.clone();
        let reachable = reachable_from_entry(&succs);
        for (b, block) in f.blocks.iter().enumerate() {
            if !reachable[b] {
                continue;
            }
            if let Terminator::Branch {
                kind: BranchKind::Divergent,
                then_block,
                else_block,
                ..
            } = block.term
            {
                let (t, e, j) = (then_block.index(), else_block.index(), ipdom[b]);
                if Some(t) != j && Some(e) != j {
                    add_linear_edges(&succs, &mut linear_preds, b, t, e, j);
                }
            }
        }
        let mut linear_succs = vec![Vec::new(); n];
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
            ipdom,
            rpo,
        }
    }
}

fn add_linear_edges(
    succs: &[Vec<usize>],
    linear_preds: &mut [Vec<Edge>],
    branch: usize,
    then_block: usize,
    else_block: usize,
    join: Option<usize>,
) {
    let mut in_region = vec![false; succs.len()];
    let mut stack = vec![then_block];
    in_region[then_block] = true;
    while let Some(b) = stack.pop() {
        for &s in &succs[b] {
            if !in_region[s] && s != else_block && Some(s) != join {
                in_region[s] = true;
                stack.push(s);
            }
        }
    }
    for (x, _) in in_region.iter().enumerate().filter(|(_, &r)| r) {
        let exits = succs[x].is_empty() || succs[x].iter().any(|&s| !in_region[s]);
        let present = linear_preds[else_block].iter().any(|e| e.from == x);
        if exits && !present {
            linear_preds[else_block].push(Edge {
                from: x,
                phi_pred: branch,
            });
        }
    }
}

/// Which blocks the entry reaches on the logical CFG.
fn reachable_from_entry(succs: &[Vec<usize>]) -> Vec<bool> {
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
fn post_dominators(succs: &[Vec<usize>], preds: &[Vec<Edge>]) -> Vec<Option<usize>> {
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
