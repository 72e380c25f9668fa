//! Before allocation every edge gets a place for its copies; after it, the places that
//! stayed empty go away.
//!
//! Out of SSA puts an edge's copies at the end of its source when the source has one
//! successor, else at the top of its target when the target has one predecessor. An
//! edge that is neither (a critical edge), and an edge from a block with several
//! successors into a block with phis (phi copies must run before the phis' block is
//! entered), is split here, once, by a block of its own (Briggs et al.; Mesa ACO splits
//! critical edges before allocation too). On the linear CFG of divergent code the edges
//! this leaves without a place (a side skipped because no lane takes it) carry no copies
//! by construction (`Divergence::anchor`). A split block that ends up holding nothing is
//! removed from the allocated function, so the output only has the blocks it needs.
//!
//! Splitting works on a copy of the function (the input stays as it was), and the copy is
//! the allocated function's storage. It is taken block by block ([`SplitCopy`]) during
//! the validator's walk, so the input is read once for both.

use crate::analysis::cfg::{split_edges, Graph};
use crate::analysis::{dom::DomTree, loops};
use crate::program::{Block, BlockData, Function, Terminator};

/// `f` with its copy-less edges split, and the blocks added.
pub fn split(f: &Function) -> (Function, Vec<Block>) {
    let cfg = Graph::of_function(f);
    let mut copy = SplitCopy::new(f, &cfg);
    f.blocks.iter().for_each(|block| copy.push(block));
    copy.split(f, &cfg)
}

/// The copy of a function that edge splitting makes, taken block by block, so that a walk
/// that reads every block anyway (validation, `ssa::validate_input`) can copy each one
/// while it is still in cache instead of the function being read once more.
#[derive(Debug)]
pub struct SplitCopy {
    blocks: Vec<BlockData>,
    /// The edges to split.
    edges: Vec<(Block, Block)>,
}

impl SplitCopy {
    /// An empty copy of `f`, whose CFG is `cfg`, with room for every block of `f` and the
    /// blocks splitting adds, so that splitting does not move the copied blocks again.
    pub fn new(f: &Function, cfg: &Graph) -> SplitCopy {
        let edges: Vec<(Block, Block)> = f
            .block_ids()
            .flat_map(|p| cfg.succs(p).iter().map(move |&s| (p, s)))
            .filter(|&(p, s)| {
                let fans_out = cfg.succs(p).len() > 1;
                fans_out && (cfg.preds(s).len() > 1 || !f.block(s).phis.is_empty())
            })
            .collect();
        SplitCopy {
            blocks: Vec::with_capacity(f.blocks.len() + edges.len()),
            edges,
        }
    }

    /// The edges that will be split, in the order of the blocks that split them.
    pub fn edges(&self) -> &[(Block, Block)] {
        &self.edges
    }

    /// Copies the next block of the function, in block order.
    pub fn push(&mut self, block: &BlockData) {
        self.blocks.push(block.clone());
    }

    /// The copy of `f`, every block pushed, with its copy-less edges split, and the blocks
    /// added.
    pub fn split(self, f: &Function, cfg: &Graph) -> (Function, Vec<Block>) {
        assert_eq!(self.blocks.len(), f.blocks.len(), "every block is copied");
        let mut g = Function {
            name: f.name.clone(),
            pos: f.pos,
            blocks: self.blocks,
            values: f.values.clone(),
        };
        let added = split_edges(&mut g, &self.edges);
        if f.blocks.iter().any(|b| b.freq.is_some()) {
            let freq = frequencies(f, cfg);
            for (&(p, s), &n) in self.edges.iter().zip(&added) {
                g.blocks[n.index()].freq = Some(freq[p.index()].min(freq[s.index()]));
            }
        }
        (g, added)
    }
}

fn frequencies(f: &Function, cfg: &Graph) -> Vec<f64> {
    let dom = DomTree::new(cfg);
    loops::frequencies(f, &loops::Loops::new(cfg, &dom))
}

/// The blocks of `added` that hold no instruction: those [`drop_empty`] removes.
fn empty_of(g: &Function, added: &[Block]) -> Vec<Block> {
    added
        .iter()
        .copied()
        .filter(|b| g.block(*b).insts.is_empty())
        .collect()
}

/// Of `freq`, the frequencies of `g`'s blocks, those of the blocks [`drop_empty`] keeps,
/// in their order: the frequencies of the function it leaves. Dropping a block that
/// only passes one edge on changes no other block's loop depth (a back or retreating
/// edge through it is one without it), so they need not be computed again.
pub fn kept_frequencies(g: &Function, added: &[Block], freq: &[f64]) -> Vec<f64> {
    let mut dropped = vec![false; freq.len()];
    empty_of(g, added)
        .iter()
        .for_each(|b| dropped[b.index()] = true);
    freq.iter()
        .zip(&dropped)
        .filter(|&(_, &d)| !d)
        .map(|(&q, _)| q)
        .collect()
}

/// Removes the blocks of `added` that hold no instruction, sending their predecessor
/// straight to their successor.
pub fn drop_empty(g: &mut Function, added: &[Block]) {
    let empty = empty_of(g, added);
    if empty.is_empty() {
        return;
    }
    let mut is_empty = vec![false; g.blocks.len()];
    empty.iter().for_each(|b| is_empty[b.index()] = true);
    let preds = first_preds(g, &is_empty);
    for &n in &empty {
        let Terminator::Jump { target, .. } = g.block(n).term else {
            continue;
        };
        let pred = preds[n.index()].expect("a split block has a predecessor");
        retarget(&mut g.blocks[pred.index()].term, n, target);
        for phi in &mut g.blocks[target.index()].phis {
            for arg in phi.args.iter_mut().filter(|a| a.block == n) {
                arg.block = pred;
            }
        }
    }
    let mut renumber: Vec<Option<Block>> = Vec::with_capacity(g.blocks.len());
    let mut next = 0;
    for b in g.block_ids() {
        if is_empty[b.index()] {
            renumber.push(None);
        } else {
            renumber.push(Some(Block(next)));
            next += 1;
        }
    }
    let mut k = 0;
    g.blocks.retain(|_| {
        k += 1;
        renumber[k - 1].is_some()
    });
    let new = |b: Block| renumber[b.index()].expect("edges lead to kept blocks");
    for block in &mut g.blocks {
        for phi in &mut block.phis {
            phi.args.iter_mut().for_each(|a| a.block = new(a.block));
        }
        match &mut block.term {
            Terminator::Jump { target, .. } => *target = new(*target),
            Terminator::Branch {
                then_block,
                else_block,
                ..
            } => {
                *then_block = new(*then_block);
                *else_block = new(*else_block);
            }
            Terminator::Ret { .. } => {}
        }
    }
}

/// For each block marked in `of`, its first predecessor in block order (a split block has
/// one; split blocks never lead to one another).
fn first_preds(g: &Function, of: &[bool]) -> Vec<Option<Block>> {
    let mut preds = vec![None; g.blocks.len()];
    for p in g.block_ids() {
        for s in g.block(p).term.successors() {
            if of[s.index()] && preds[s.index()].is_none() {
                preds[s.index()] = Some(p);
            }
        }
    }
    preds
}

fn retarget(term: &mut Terminator, old: Block, new: Block) {
    match term {
        Terminator::Jump { target, .. } if *target == old => *target = new,
        Terminator::Branch {
            then_block,
            else_block,
            ..
        } => {
            if *then_block == old {
                *then_block = new;
            }
            if *else_block == old {
                *else_block = new;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_edges_and_edges_into_phis_are_split_and_empty_ones_dropped() {
        let src = "target gfx9
func @f {
a:
  %c:s1 = c
  branch uniform %c, b, j
b:
  branch uniform %c, j, k
k:
  %x:s1 = phi [b: %c]
  ret
j:
  ret
}
";
        let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let (mut g, added) = split(f);
        let names: Vec<&str> = added.iter().map(|b| g.block(*b).name.as_str()).collect();
        assert_eq!(names, ["a.j", "b.j", "b.k"]);
        drop_empty(&mut g, &added);
        assert_eq!(
            crate::print(&crate::Program {
                target: p.target.clone(),
                functions: vec![g],
            }),
            crate::print(&p)
        );
    }
}
