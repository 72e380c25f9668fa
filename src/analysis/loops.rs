//! Loop nesting and block frequencies.
//!
//! Natural loops (Aho, Sethi & Ullman): a back edge `s → h` is one whose target dominates
//! its source; the loop body is `h` plus every block that reaches `s` backwards without
//! passing `h`. Loops with the same header merge. Irreducible cycles (a retreating edge
//! `s → h` in reverse post-order whose target does not dominate its source) have no single
//! header; their blocks (those reachable from `h` that also reach `s`, without leaving
//! the region dominated by `idom(h)`) are counted one level deeper, so that they weigh like
//! a loop. Retreating edges into the same `h` make one cycle. A graph whose entry reaches
//! every block and whose edges all go forward in reverse post-order has no back edge and
//! no retreating one: one pass over its edges finds that, and nothing else is searched.
//!
//! Frequencies: a block's `freq=` annotation when present, else 10^depth — the rule of
//! Mesa's Intel backend (`brw_fs_reg_allocate.cpp`: spill costs ×10 per loop level;
//! `docs/TARGETS.md`).

use super::cfg::Graph;
use super::dom::DomTree;
use crate::program::{Block, Function};

#[derive(Clone, Debug, PartialEq)]
pub struct Loops {
    depth: Vec<u32>,
    headers: Vec<Block>,
    /// Per block, its index in `headers` when it heads a loop: O(1) for
    /// [`Loops::is_header`] and [`Loops::body`], which the spiller asks at every block
    /// (empty for an acyclic graph).
    header_index: Vec<Option<u32>>,
    /// Per header (in `headers` order), the blocks of its natural loop, sorted.
    bodies: Vec<Vec<Block>>,
    /// Per block, the header of the innermost natural loop holding it (empty for an
    /// acyclic graph).
    innermost: Vec<Option<Block>>,
    /// Per block, when it heads a loop, the header of the innermost loop around that
    /// loop.
    enclosing: Vec<Option<Block>>,
}

impl Loops {
    /// The loops of `cfg` (dominators `dom`), and those of every region nothing enters
    /// (unreachable code, rooted at a block without predecessors), each with dominators
    /// of its own: unreachable code is allocated too, and weighed like the rest.
    pub fn new(cfg: &Graph, dom: &DomTree) -> Loops {
        if is_acyclic(cfg) {
            return Loops::none(cfg.len());
        }
        let mut found = Found::new(cfg.len());
        found.region(cfg, dom);
        for root in (0..cfg.len() as u32).map(Block) {
            if !cfg.is_reachable(root) && cfg.preds(root).is_empty() {
                let region = cfg.rooted_at(root);
                found.region(&region, &DomTree::new(&region));
            }
        }
        let mut headers: Vec<(Block, Vec<Block>)> = found.loops;
        headers.sort_by_key(|(h, _)| *h);
        let mut header_index = vec![None; cfg.len()];
        for (i, (h, _)) in headers.iter().enumerate() {
            header_index[h.index()] = Some(i as u32);
        }
        let (innermost, enclosing) = nesting(&headers, &found.depth);
        Loops {
            depth: found.depth,
            header_index,
            headers: headers.iter().map(|(h, _)| *h).collect(),
            bodies: headers.into_iter().map(|(_, body)| body).collect(),
            innermost,
            enclosing,
        }
    }

    /// The loops of an acyclic graph of `n` nodes: none, every depth 0.
    fn none(n: usize) -> Loops {
        Loops {
            depth: vec![0; n],
            headers: Vec::new(),
            header_index: Vec::new(),
            bodies: Vec::new(),
            innermost: Vec::new(),
            enclosing: Vec::new(),
        }
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
        self.index_of(b).is_some()
    }

    /// The blocks of the natural loop headed by `h` (empty when `h` heads none), sorted.
    pub fn body(&self, h: Block) -> &[Block] {
        self.index_of(h).map_or(&[], |i| self.bodies[i].as_slice())
    }

    /// The header of the innermost natural loop holding `b`, if any.
    pub fn innermost(&self, b: Block) -> Option<Block> {
        self.innermost.get(b.index()).copied().flatten()
    }

    /// The header of the innermost loop around the loop `h` heads, if any.
    pub fn enclosing(&self, h: Block) -> Option<Block> {
        self.enclosing.get(h.index()).copied().flatten()
    }

    /// `b`'s index in `headers`, when it heads a loop (a block made after the loops were
    /// found heads none).
    fn index_of(&self, b: Block) -> Option<usize> {
        let i = self.header_index.get(b.index()).copied().flatten()?;
        Some(i as usize)
    }
}

/// Per block, the header of the innermost loop of `loops` (header, body) holding it, and
/// per header, that of the loop around its own: the loops taken outermost first (by the
/// `depth` of their headers), each body marked with its header over the marks of the
/// loops around it.
fn nesting(
    loops: &[(Block, Vec<Block>)],
    depth: &[u32],
) -> (Vec<Option<Block>>, Vec<Option<Block>>) {
    let mut outermost_first: Vec<&(Block, Vec<Block>)> = loops.iter().collect();
    outermost_first.sort_by_key(|(h, _)| depth[h.index()]);
    let mut innermost = vec![None; depth.len()];
    let mut enclosing = vec![None; depth.len()];
    for (h, body) in outermost_first {
        enclosing[h.index()] = innermost[h.index()];
        for b in body {
            innermost[b.index()] = Some(*h);
        }
    }
    (innermost, enclosing)
}

/// Whether the entry reaches every node of `cfg` and no edge goes back in reverse
/// post-order: then no edge is a back edge or a retreating one, and there is no loop
/// nor cycle to look for.
fn is_acyclic(cfg: &Graph) -> bool {
    cfg.rpo().len() == cfg.len()
        && cfg.rpo().iter().all(|&b| {
            let forward = |s: &Block| cfg.rpo_index(*s) > cfg.rpo_index(b);
            cfg.succs(b).iter().all(forward)
        })
}

/// Loops and depths found so far, region by region.
struct Found {
    depth: Vec<u32>,
    /// (header, sorted body) of every natural loop.
    loops: Vec<(Block, Vec<Block>)>,
    /// Blocks of a region already searched.
    done: Vec<bool>,
    stamps: Stamps,
}

impl Found {
    fn new(n: usize) -> Found {
        Found {
            depth: vec![0; n],
            loops: Vec::new(),
            done: vec![false; n],
            stamps: Stamps::new(n),
        }
    }

    /// The natural loops and irreducible cycles among the blocks `cfg` reaches from its
    /// entry that no earlier region had.
    fn region(&mut self, cfg: &Graph, dom: &DomTree) {
        let fresh: Vec<Block> = cfg
            .rpo()
            .iter()
            .copied()
            .filter(|b| !self.done[b.index()])
            .collect();
        let mut latches: Vec<Vec<Block>> = vec![Vec::new(); cfg.len()];
        let mut retreating: Vec<Vec<Block>> = vec![Vec::new(); cfg.len()];
        for &s in &fresh {
            for &h in cfg.succs(s).iter().filter(|h| !self.done[h.index()]) {
                if dom.dominates(h, s) {
                    latches[h.index()].push(s);
                } else if cfg.rpo_index(h) <= cfg.rpo_index(s) {
                    retreating[h.index()].push(s);
                }
            }
        }
        for &h in fresh.iter().filter(|h| !retreating[h.index()].is_empty()) {
            for b in cycle_blocks(cfg, dom, h, &retreating[h.index()], &mut self.stamps) {
                self.depth[b.index()] += 1;
            }
        }
        for &h in fresh.iter().filter(|h| !latches[h.index()].is_empty()) {
            let mut body = natural_loop(cfg, h, &latches[h.index()], &mut self.stamps.natural);
            for b in &body {
                self.depth[b.index()] += 1;
            }
            body.sort();
            self.loops.push((h, body));
        }
        for b in fresh {
            self.done[b.index()] = true;
        }
    }
}

/// Body of the natural loop of `header` with back edges from `latches`: the header and
/// every block that reaches a latch backwards without passing the header.
fn natural_loop(cfg: &Graph, header: Block, latches: &[Block], stamp: &mut [u32]) -> Vec<Block> {
    stamp[header.index()] = header.0;
    let mut body = walk(
        header,
        latches,
        |b| cfg.preds(b),
        |b| cfg.is_reachable(b),
        stamp,
    );
    body.push(header);
    body
}

/// Per-block marks for the walks, set to the walk's header index so that no clearing is
/// needed between walks: forward and backward for irreducible cycles, and natural loops.
struct Stamps {
    forward: Vec<u32>,
    back: Vec<u32>,
    natural: Vec<u32>,
}

impl Stamps {
    fn new(n: usize) -> Stamps {
        Stamps {
            forward: vec![u32::MAX; n],
            back: vec![u32::MAX; n],
            natural: vec![u32::MAX; n],
        }
    }
}

/// The irreducible cycle entered at `h` and closed by retreating edges from `sources`:
/// blocks reachable from `h` that also reach a source, both walks staying strictly inside
/// the dominator subtree of `idom(h)` (so an enclosing loop is not swept in).
fn cycle_blocks(
    cfg: &Graph,
    dom: &DomTree,
    h: Block,
    sources: &[Block],
    stamps: &mut Stamps,
) -> Vec<Block> {
    let Some(top) = dom.idom(h) else {
        return Vec::new();
    };
    let inside = |b: Block| b != top && dom.dominates(top, b);
    walk(h, &[h], |b| cfg.succs(b), inside, &mut stamps.forward);
    let mut cycle = walk(h, sources, |b| cfg.preds(b), inside, &mut stamps.back);
    cycle.retain(|b| stamps.forward[b.index()] == h.0);
    cycle.sort();
    cycle
}

/// Blocks reached from `starts` through `next` while `inside` holds, marked with `mark`'s
/// index in `stamp`.
fn walk<'g>(
    mark: Block,
    starts: &[Block],
    next: impl Fn(Block) -> &'g [Block],
    inside: impl Fn(Block) -> bool,
    stamp: &mut [u32],
) -> Vec<Block> {
    let mut seen = Vec::new();
    let mut stack = Vec::new();
    for &b in starts {
        if stamp[b.index()] != mark.0 {
            stamp[b.index()] = mark.0;
            stack.push(b);
        }
    }
    while let Some(b) = stack.pop() {
        seen.push(b);
        for &s in next(b) {
            if stamp[s.index()] != mark.0 && inside(s) {
                stamp[s.index()] = mark.0;
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

    /// An acyclic function has no loop, whatever path finds it; a block that jumps to
    /// itself is a loop.
    #[test]
    fn acyclic_functions_have_no_loops_and_a_self_loop_is_one() {
        let diamond = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  branch uniform %c, b, d\nb:\n  jump d\nd:\n  ret\n}\n";
        let (f, loops) = loops_of(diamond);
        assert!(loops.headers().is_empty());
        assert!(f
            .block_ids()
            .all(|b| loops.depth(b) == 0 && !loops.is_header(b)));
        let self_loop = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  jump b\nb:\n  branch uniform %c, b, d\nd:\n  ret\n}\n";
        let (_, loops) = loops_of(self_loop);
        assert_eq!(loops.headers(), [Block(1)]);
        assert_eq!(loops.body(Block(1)), [Block(1)]);
    }

    #[test]
    fn loops_in_unreachable_code_are_found_too() {
        let src = "target gfx9\nfunc @f {\na:\n  ret\nu:\n  jump h\nh:\n  %c:s1 = c\n  branch uniform %c, h, x\nx:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let h = f.block_ids().find(|&b| f.block(b).name == "h").expect("h");
        assert!(loops.is_header(h));
        assert_eq!(loops.depth(h), 1);
        assert_eq!(frequencies(&f, &loops)[h.index()], 10.0);
    }

    #[test]
    fn nested_loops_depths_and_frequencies() {
        let src = "target gfx9\nfunc @f {\na:\n  jump h1\nh1:\n  %c:s1 = c\n  branch uniform %c, h2, x\nh2:\n  branch uniform %c, h2, l1\nl1:\n  jump h1\nx freq=3:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let depths: Vec<u32> = f.block_ids().map(|b| loops.depth(b)).collect();
        assert_eq!(depths, [0, 1, 2, 1, 0]);
        assert_eq!(loops.headers(), [Block(1), Block(2)]);
        assert_eq!(frequencies(&f, &loops), [1.0, 10.0, 100.0, 10.0, 3.0]);
        let bodies: Vec<&[Block]> = f.block_ids().map(|b| loops.body(b)).collect();
        let (h1, h2) = (&[Block(1), Block(2), Block(3)][..], &[Block(2)][..]);
        assert_eq!(bodies, [&[][..], h1, h2, &[], &[]]);
        let made_later = Block(f.blocks.len() as u32);
        assert!(!loops.is_header(made_later) && loops.body(made_later).is_empty());
        let innermost: Vec<Option<Block>> = f.block_ids().map(|b| loops.innermost(b)).collect();
        let (a, h1, h2) = (None, Some(Block(1)), Some(Block(2)));
        assert_eq!(innermost, [a, h1, h2, h1, a]);
        assert_eq!(
            (loops.enclosing(Block(1)), loops.enclosing(Block(2))),
            (a, h1)
        );
        assert_eq!(loops.innermost(made_later), a);
    }

    #[test]
    fn irreducible_cycle_counts_as_a_loop() {
        let src = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  branch uniform %c, b, c\nb:\n  branch uniform %c, c, d\nc:\n  branch uniform %c, b, d\nd:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let depths: Vec<u32> = f.block_ids().map(|b| loops.depth(b)).collect();
        assert_eq!(depths, [0, 1, 1, 0]);
        assert!(loops.headers().is_empty());
    }

    #[test]
    fn irreducible_cycle_inside_a_loop_is_one_level_deeper() {
        let src = "target gfx9\nfunc @f {\na:\n  jump h\nh:\n  %c:s1 = c\n  branch uniform %c, d, x\nd:\n  branch uniform %c, b1, b2\nb1:\n  branch uniform %c, b2, l\nb2:\n  branch uniform %c, b1, l\nl:\n  jump h\nx:\n  ret\n}\n";
        let (f, loops) = loops_of(src);
        let depths: Vec<u32> = f.block_ids().map(|b| loops.depth(b)).collect();
        assert_eq!(depths, [0, 1, 1, 2, 2, 1, 0]);
        assert_eq!(loops.headers(), [Block(1)]);
        assert_eq!(
            frequencies(&f, &loops),
            [1.0, 10.0, 10.0, 100.0, 100.0, 10.0, 1.0]
        );
    }
}
