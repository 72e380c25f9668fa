//! Loop nesting and block frequencies.
//!
//! Natural loops (Aho, Sethi & Ullman): a back edge `s → h` is one whose target dominates
//! its source; the loop body is `h` plus every block that reaches `s` backwards without
//! passing `h`. Loops with the same header merge. Irreducible cycles (a retreating edge
//! `s → h` in reverse post-order whose target does not dominate its source) have no single
//! header; their blocks (those reachable from `h` that also reach `s`) are counted one
//! level deeper, so that they weigh like a loop.
//!
//! Frequencies: a block's `freq=` annotation when present, else 10^depth — the rule of
//! Mesa/Intel (`shared/NOTES.md` §1: "×10 per loop level").

use super::cfg::Graph;
use super::dom::DomTree;
use crate::program::{Block, Function};

#[derive(Clone, Debug, PartialEq)]
pub struct Loops {
    depth: Vec<u32>,
    headers: Vec<Block>,
}

impl Loops {
    pub fn new(cfg: &Graph, dom: &DomTree) -> Loops {
        let mut depth = vec![0u32; cfg.len()];
        let mut latches: Vec<Vec<Block>> = vec![Vec::new(); cfg.len()];
        for &s in cfg.rpo() {
            for &h in cfg.succs(s) {
                if dom.dominates(h, s) {
                    latches[h.index()].push(s);
                } else if cfg.rpo_index(h) <= cfg.rpo_index(s) {
                    for b in cycle_blocks(cfg, h, s) {
                        depth[b.index()] += 1;
                    }
                }
            }
        }
        let headers: Vec<Block> = (0..cfg.len())
            .filter(|&h| !latches[h].is_empty())
            .map(|h| Block(h as u32))
            .collect();
        let mut stamp = vec![u32::MAX; cfg.len()];
        for &h in &headers {
            for b in natural_loop(cfg, h, &latches[h.index()], &mut stamp) {
                depth[b.index()] += 1;
            }
        }
        Loops { depth, headers }
    }

    /// Number of loops (and irreducible cycles) containing `b`.
    pub fn depth(&self, b: Block) -> u32 {
        self.depth[b.index()]
    }

    /// Loop headers, sorted.
    pub fn headers(&self) -> &[Block] {
        &self.headers
    }

    pub fn is_header(&self, b: Block) -> bool {
        self.headers.binary_search(&b).is_ok()
    }
}

/// Body of the natural loop of `header` with back edges from `latches`. `stamp` marks
/// visited blocks with the header's index, so no per-loop clearing is needed.
fn natural_loop(cfg: &Graph, header: Block, latches: &[Block], stamp: &mut [u32]) -> Vec<Block> {
    let mark = header.0;
    stamp[header.index()] = mark;
    let mut body = vec![header];
    let mut stack: Vec<Block> = Vec::new();
    for &l in latches {
        if stamp[l.index()] != mark {
            stamp[l.index()] = mark;
            stack.push(l);
        }
    }
    while let Some(b) = stack.pop() {
        body.push(b);
        for &p in cfg.preds(b) {
            if stamp[p.index()] != mark && cfg.is_reachable(p) {
                stamp[p.index()] = mark;
                stack.push(p);
            }
        }
    }
    body
}

/// Blocks reachable from `h` that also reach `s`: the cycle closed by `s → h`.
fn cycle_blocks(cfg: &Graph, h: Block, s: Block) -> Vec<Block> {
    let forward = reach(cfg.len(), h, |b| cfg.succs(b));
    let backward = reach(cfg.len(), s, |b| cfg.preds(b));
    (0..cfg.len())
        .filter(|&i| forward[i] && backward[i])
        .map(|i| Block(i as u32))
        .collect()
}

fn reach<'g>(n: usize, from: Block, next: impl Fn(Block) -> &'g [Block]) -> Vec<bool> {
    let mut seen = vec![false; n];
    seen[from.index()] = true;
    let mut stack = vec![from];
    while let Some(b) = stack.pop() {
        for &s in next(b) {
            if !seen[s.index()] {
                seen[s.index()] = true;
                stack.push(s);
            }
        }
    }
    seen
}

/// Execution frequency of every block: the annotation, else 10^loop-depth.
pub fn frequencies(f: &Function, loops: &Loops) -> Vec<f64> {
    f.block_ids()
        .map(|b| {
            f.block(b)
                .freq
                .unwrap_or_else(|| 10f64.powi(loops.depth(b).min(300) as i32))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loops_of(src: &str) -> (Function, Loops) {
        let f = crate::parse(src).unwrap().functions.remove(0);
        let cfg = Graph::of_function(&f);
        let dom = DomTree::new(&cfg);
        let loops = Loops::new(&cfg, &dom);
        (f, loops)
    }

    #[test]
    fn nested_loops_depths_and_frequencies() {
        let src = "target gfx9\nfunc @f {\na:\n  jump h1\nh1:\n  %c:s1 = c\n  branch uniform %c, h2, x\nh2:\n  branch uniform %c, h2, l1\nl1:\n  jump h1\nx freq=3:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let depths: Vec<u32> = f.block_ids().map(|b| loops.depth(b)).collect();
        assert_eq!(depths, [0, 1, 2, 1, 0]);
        assert_eq!(loops.headers(), [Block(1), Block(2)]);
        assert_eq!(frequencies(&f, &loops), [1.0, 10.0, 100.0, 10.0, 3.0]);
    }

    #[test]
    fn irreducible_cycle_counts_as_a_loop() {
        let src = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  branch uniform %c, b, c\nb:\n  branch uniform %c, c, d\nc:\n  branch uniform %c, b, d\nd:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let depths: Vec<u32> = f.block_ids().map(|b| loops.depth(b)).collect();
        assert_eq!(depths, [0, 1, 1, 0]);
        assert!(loops.headers().is_empty());
    }
}
