//! Control-flow graphs: successors, predecessors, reverse post-order, critical edges and
//! edge splitting.
//!
//! [`Graph`] is a plain directed graph over dense node indices, so the same code serves the
//! logical CFG, the linear CFG (`divergence`) and the reverse graph used for
//! post-dominators. Successor lists keep terminator order (then before else) without
//! duplicates; predecessor lists are in increasing block order. Both are compressed rows
//! ([`Rows`]), not a vector per node.

use super::rows::Rows;
use crate::program::{Block, BlockData, Function, Terminator};
use rustc_hash::FxHashSet;
use std::fmt::Write;

/// A directed graph over nodes `0..n` with a distinguished entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    succs: Rows<Block>,
    preds: Rows<Block>,
    rpo: Vec<Block>,
    rpo_index: Vec<u32>,
}

/// `rpo_index` of a node not reachable from the entry.
const UNREACHED: u32 = u32::MAX;

impl Graph {
    /// Builds the graph from successor lists; `entry` starts the reverse post-order.
    pub fn from_succs(succs: Vec<Vec<Block>>, entry: Block) -> Graph {
        Graph::from_rows(succs.into_iter().collect(), entry)
    }

    /// Builds the graph from successor rows; `entry` starts the reverse post-order.
    pub fn from_rows(succs: Rows<Block>, entry: Block) -> Graph {
        let edges = (succs.iter().enumerate())
            .flat_map(|(b, ss)| ss.iter().map(move |&s| (s, Block(b as u32))));
        let preds = Rows::grouped_from(succs.len(), edges);
        let (rpo, rpo_index) = reverse_post_order(&succs, entry);
        Graph {
            succs,
            preds,
            rpo,
            rpo_index,
        }
    }

    /// The logical CFG of a function, entry block 0.
    pub fn of_function(f: &Function) -> Graph {
        let mut succs = Rows::with_capacity(f.blocks.len(), 2 * f.blocks.len());
        for block in &f.blocks {
            succs.push_row(block_succs(block));
        }
        Graph::from_rows(succs, Block(0))
    }

    pub fn len(&self) -> usize {
        self.succs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.succs.is_empty()
    }

    /// The number of edges.
    pub fn edge_count(&self) -> usize {
        self.succs.entry_count()
    }

    pub fn succs(&self, b: Block) -> &[Block] {
        self.succs.row(b)
    }

    pub fn preds(&self, b: Block) -> &[Block] {
        self.preds.row(b)
    }

    /// Nodes reachable from the entry, in reverse post-order.
    pub fn rpo(&self) -> &[Block] {
        &self.rpo
    }

    /// The same graph entered at `root` instead: its reverse post-order covers what
    /// `root` reaches (a region of code unreachable from the entry, say).
    pub fn rooted_at(&self, root: Block) -> Graph {
        Graph::from_rows(self.succs.clone(), root)
    }

    /// Every node: the entry's region in reverse post-order, then each region that starts
    /// at a node without predecessors (unreachable code) in reverse post-order, then any
    /// node left (cycles nothing enters), by index. A dominance order within each region.
    /// When the entry reaches every node, that is the reverse post-order itself.
    pub fn rpo_all(&self) -> Vec<Block> {
        let mut order = self.rpo.clone();
        if order.len() == self.len() {
            return order;
        }
        let mut seen = vec![false; self.len()];
        order.iter().for_each(|b| seen[b.index()] = true);
        for root in (0..self.len() as u32).map(Block) {
            if seen[root.index()] || !self.preds(root).is_empty() {
                continue;
            }
            let mut stack = vec![(root, 0usize)];
            let mut post = Vec::new();
            seen[root.index()] = true;
            while let Some((b, k)) = stack.last_mut() {
                match self.succs(*b).get(*k).copied() {
                    Some(s) => {
                        *k += 1;
                        if !seen[s.index()] {
                            seen[s.index()] = true;
                            stack.push((s, 0));
                        }
                    }
                    None => {
                        post.push(*b);
                        stack.pop();
                    }
                }
            }
            order.extend(post.into_iter().rev());
        }
        order.extend(
            (0..self.len() as u32)
                .map(Block)
                .filter(|b| !seen[b.index()]),
        );
        order
    }

    /// Position in reverse post-order, `None` when unreachable.
    pub fn rpo_index(&self, b: Block) -> Option<u32> {
        Some(self.rpo_index[b.index()]).filter(|&i| i != UNREACHED)
    }

    pub fn is_reachable(&self, b: Block) -> bool {
        self.rpo_index(b).is_some()
    }

    /// Edges from a node with several successors to a node with several predecessors.
    pub fn critical_edges(&self) -> Vec<(Block, Block)> {
        let mut edges = Vec::new();
        for (b, ss) in self.succs.iter().enumerate() {
            if ss.len() > 1 {
                for &s in ss {
                    if self.preds(s).len() > 1 {
                        edges.push((Block(b as u32), s));
                    }
                }
            }
        }
        edges
    }
}

/// A block's successors in terminator order, without duplicates (a branch has two,
/// which may be one block).
fn block_succs(block: &BlockData) -> impl Iterator<Item = Block> + '_ {
    let mut first = None;
    block.term.successors().filter(move |&s| {
        let new = first != Some(s);
        first.get_or_insert(s);
        new
    })
}

/// Iterative depth-first search; successors visited in order. Returns the order and each
/// node's place in it ([`UNREACHED`] for a node the entry does not reach), which marks
/// the nodes visited during the search.
fn reverse_post_order(succs: &Rows<Block>, entry: Block) -> (Vec<Block>, Vec<u32>) {
    let mut order = Vec::with_capacity(succs.len());
    let mut index = vec![UNREACHED; succs.len()];
    if succs.is_empty() {
        return (order, index);
    }
    let mut stack = Vec::with_capacity(succs.len());
    stack.push((entry, 0usize));
    index[entry.index()] = 0;
    while let Some((b, next)) = stack.last_mut() {
        if let Some(&s) = succs.row(*b).get(*next) {
            *next += 1;
            if index[s.index()] == UNREACHED {
                index[s.index()] = 0;
                stack.push((s, 0));
            }
        } else {
            order.push(*b);
            stack.pop();
        }
    }
    order.reverse();
    for (i, b) in order.iter().enumerate() {
        index[b.index()] = i as u32;
    }
    (order, index)
}

/// Splits the edge `from → to` with a new block holding only `jump to`; phi arguments in
/// `to` that came from `from` now come from the new block. Returns the new block, which is
/// appended and named `from.to` (with a numeric suffix if that name is taken).
pub fn split_edge(f: &mut Function, from: Block, to: Block) -> Block {
    let mut names = dotted_names(f, 1);
    split_named(f, from, to, &mut names)
}

/// Splits each of `edges` as [`split_edge`] does, returning the new blocks in order.
pub fn split_edges(f: &mut Function, edges: &[(Block, Block)]) -> Vec<Block> {
    if edges.is_empty() {
        return Vec::new();
    }
    let mut names = dotted_names(f, edges.len());
    f.blocks.reserve(edges.len());
    edges
        .iter()
        .map(|&(from, to)| split_named(f, from, to, &mut names))
        .collect()
}

/// Splits every critical edge of `f`, returning the new blocks in edge order.
pub fn split_critical_edges(f: &mut Function) -> Vec<Block> {
    let edges = Graph::of_function(f).critical_edges();
    split_edges(f, &edges)
}

/// The names of `f`'s blocks that hold a `.`: a new block's name always does
/// (`from.to`, then `from.to.1` and so on), so only these can be taken already, and a
/// function whose names hold none (most) keeps no copy of its names. The set has room
/// for the names of `new` blocks more, and hashes with Fx: the names are the program's
/// own, not an adversary's.
fn dotted_names(f: &Function, new: usize) -> FxHashSet<String> {
    let dotted = f.blocks.iter().filter(|b| b.name.contains('.'));
    let mut names = FxHashSet::default();
    names.reserve(new + dotted.clone().count());
    names.extend(dotted.map(|b| b.name.clone()));
    names
}

/// The name of a block splitting `from → to`: `from.to`, or the first `from.to.N` (N
/// from 1) not in `names`.
fn split_name(f: &Function, from: Block, to: Block, names: &FxHashSet<String>) -> String {
    let (from, to) = (&f.block(from).name, &f.block(to).name);
    let mut name = String::with_capacity(from.len() + to.len() + 1);
    name.push_str(from);
    name.push('.');
    name.push_str(to);
    let base = name.len();
    let mut n = 1;
    while names.contains(&name) {
        name.truncate(base);
        write!(name, ".{n}").expect("writing to a string");
        n += 1;
    }
    name
}

fn split_named(f: &mut Function, from: Block, to: Block, names: &mut FxHashSet<String>) -> Block {
    let new = Block(f.blocks.len() as u32);
    let name = split_name(f, from, to, names);
    names.insert(name.clone());
    let pos = f.block(from).term.pos();
    redirect(&mut f.blocks[from.index()].term, to, new);
    for phi in &mut f.blocks[to.index()].phis {
        for arg in &mut phi.args {
            if arg.block == from {
                arg.block = new;
            }
        }
    }
    f.blocks.push(BlockData {
        name,
        pos,
        freq: None,
        phis: Vec::new(),
        insts: Vec::new(),
        term: Terminator::Jump { target: to, pos },
    });
    new
}

fn redirect(term: &mut Terminator, old: Block, new: Block) {
    match term {
        Terminator::Jump { target, .. } => {
            if *target == old {
                *target = new;
            }
        }
        Terminator::Branch {
            then_block,
            else_block,
            ..
        } => {
            for b in [then_block, else_block] {
                if *b == old {
                    *b = new;
                }
            }
        }
        Terminator::Ret { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    const DIAMOND_WITH_CRITICAL_EDGE: &str = "target gfx9
func @f {
a:
  %x:v1 = foo
  branch uniform %x, b, c
b:
  %y:v1 = bar
  branch uniform %y, c, d
c:
  %p:v1 = phi [a: %x], [b: %y]
  jump d
d:
  %q:v1 = phi [b: %y], [c: %p]
  ret %q
}
";

    #[test]
    fn succs_preds_rpo() {
        let p = parse(DIAMOND_WITH_CRITICAL_EDGE).unwrap();
        let g = Graph::of_function(&p.functions[0]);
        assert_eq!(g.succs(Block(1)), [Block(2), Block(3)]);
        assert_eq!(g.preds(Block(3)), [Block(1), Block(2)]);
        assert_eq!(g.rpo(), [Block(0), Block(1), Block(2), Block(3)]);
        assert_eq!(
            g.critical_edges(),
            [
                (Block(0), Block(2)),
                (Block(1), Block(2)),
                (Block(1), Block(3))
            ]
        );
    }

    #[test]
    fn splitting_an_edge_rewrites_terminator_and_phis() {
        let mut p = parse(DIAMOND_WITH_CRITICAL_EDGE).unwrap();
        let f = &mut p.functions[0];
        let new = split_edge(f, Block(1), Block(3));
        assert_eq!(f.block(new).name, "b.d");
        let text = crate::print(&p);
        assert!(text.contains("  branch uniform %y, c, b.d\n"), "{text}");
        assert!(text.contains("%q:v1 = phi [b.d: %y], [c: %p]"), "{text}");
        assert!(text.ends_with("b.d:\n  jump d\n}\n"), "{text}");
        let g = Graph::of_function(&p.functions[0]);
        assert!(!g.critical_edges().contains(&(Block(1), Block(3))));
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn splitting_all_critical_edges_keeps_phis_valid() {
        let mut p = parse(DIAMOND_WITH_CRITICAL_EDGE).unwrap();
        let f = &mut p.functions[0];
        let new = split_critical_edges(f);
        assert_eq!(new, [Block(4), Block(5), Block(6)]);
        let names: Vec<&str> = new.iter().map(|&b| &*f.block(b).name).collect();
        assert_eq!(names, ["a.c", "b.c", "b.d"]);
        let text = crate::print(&p);
        assert!(text.contains("%p:v1 = phi [a.c: %x], [b.c: %y]"), "{text}");
        assert!(text.contains("%q:v1 = phi [b.d: %y], [c: %p]"), "{text}");
        let f = &p.functions[0];
        assert!(Graph::of_function(f).critical_edges().is_empty());
        assert_eq!(crate::analysis::ssa::validate(f, &p.target), Ok(()));
    }

    #[test]
    fn split_names_stay_unique() {
        let src = "target gfx9\nfunc @f {\na:\n  %x:v1 = foo\n  branch uniform %x, b, a.b\nb:\n  ret\na.b:\n  jump b\n}\n";
        let mut p = parse(src).unwrap();
        let f = &mut p.functions[0];
        let new = split_edges(f, &[(Block(0), Block(1)), (Block(0), Block(2))]);
        let names: Vec<&str> = new.iter().map(|&b| &*f.block(b).name).collect();
        assert_eq!(names, ["a.b.1", "a.a.b"]);
    }

    #[test]
    fn unreachable_blocks_have_no_rpo_index() {
        let src = "target gfx9\nfunc @f {\na:\n  ret\nz:\n  jump a\n}\n";
        let g = Graph::of_function(&parse(src).unwrap().functions[0]);
        assert_eq!(g.rpo(), [Block(0)]);
        assert!(!g.is_reachable(Block(1)));
        assert_eq!(g.preds(Block(0)), [Block(1)]);
    }
}
