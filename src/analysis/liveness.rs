//! Liveness of SSA values: live-in and live-out sets per block, and kill points.
//!
//! Brandner, Boissinot, Darte, Dupont de Dinechin & Rastello, "Computing Liveness Sets for
//! SSA-Form Programs" (2011), path exploration: for each value and each use, walk
//! predecessors backwards from the use's block until the defining block, marking live-in
//! and live-out on the way; a phi argument is a use at the end of its predecessor. The
//! work is proportional to the size of the result, with no values × blocks bitsets, and
//! each block's sets come out sorted because values are processed in index order.
//!
//! Per-lane values walk the logical CFG; uniform values walk the linear CFG
//! ([`super::divergence`]), so a uniform value used on the else-side of a divergent branch
//! is live through the whole then-side.
//!
//! Kill points come from one backward walk per block: a use whose value is not live below
//! it is its last use there. A value used twice by one instruction is killed once.

use super::cfg::Graph;
use crate::program::{Block, Function, Value};
use crate::target::Target;

/// Where in a block: `0..insts.len()` are instructions, `insts.len()` is the terminator.
pub type Point = u32;

#[derive(Clone, Debug, PartialEq)]
pub struct Liveness {
    live_in: Vec<Vec<Value>>,
    live_out: Vec<Vec<Value>>,
    /// Per block, `(point, value)` pairs sorted by point: the value's last use is there.
    kills: Vec<Vec<(Point, Value)>>,
    /// Values defined but never used.
    dead: Vec<bool>,
    def_block: Vec<Block>,
}

impl Liveness {
    /// `logical` is the function's CFG, `linear` its linear CFG (equal without divergence).
    pub fn new(f: &Function, target: &Target, logical: &Graph, linear: &Graph) -> Liveness {
        let n = f.blocks.len();
        let def_block = def_blocks(f);
        let uses = UseSites::new(f);
        let mut live_in = vec![Vec::new(); n];
        let mut live_out = vec![Vec::new(); n];
        let mut stamp_in = vec![u32::MAX; n];
        let mut stamp_out = vec![u32::MAX; n];
        let mut stack = Vec::new();
        for v in f.value_ids() {
            let graph = if target.class(f.value(v).class).uniform {
                linear
            } else {
                logical
            };
            let def = def_block[v.index()];
            for &(block, via_phi) in uses.of(v) {
                if via_phi && stamp_out[block.index()] != v.0 {
                    stamp_out[block.index()] = v.0;
                    live_out[block.index()].push(v);
                }
                stack.push(block);
                while let Some(b) = stack.pop() {
                    if b == def || stamp_in[b.index()] == v.0 {
                        continue;
                    }
                    stamp_in[b.index()] = v.0;
                    live_in[b.index()].push(v);
                    for &p in graph.preds(b) {
                        if stamp_out[p.index()] != v.0 {
                            stamp_out[p.index()] = v.0;
                            live_out[p.index()].push(v);
                        }
                        stack.push(p);
                    }
                }
            }
        }
        let (kills, dead) = kill_points(f, &live_out);
        Liveness {
            live_in,
            live_out,
            kills,
            dead,
            def_block,
        }
    }

    /// Values live on entry to `b` (phi definitions of `b` excluded), sorted.
    pub fn live_in(&self, b: Block) -> &[Value] {
        &self.live_in[b.index()]
    }

    /// Values live on exit from `b` (including phi arguments of its successors), sorted.
    pub fn live_out(&self, b: Block) -> &[Value] {
        &self.live_out[b.index()]
    }

    /// Values whose last use in `b` is at `point`.
    pub fn kills_at(&self, b: Block, point: Point) -> impl Iterator<Item = Value> + '_ {
        let kills = &self.kills[b.index()];
        let start = kills.partition_point(|&(p, _)| p < point);
        kills[start..]
            .iter()
            .take_while(move |&&(p, _)| p == point)
            .map(|&(_, v)| v)
    }

    pub fn is_killed_at(&self, b: Block, point: Point, v: Value) -> bool {
        self.kills_at(b, point).any(|k| k == v)
    }

    /// Whether `v` is never used.
    pub fn is_dead(&self, v: Value) -> bool {
        self.dead[v.index()]
    }

    /// The block defining `v`.
    pub fn def_block(&self, v: Value) -> Block {
        self.def_block[v.index()]
    }
}

fn def_blocks(f: &Function) -> Vec<Block> {
    let mut def_block = vec![Block(0); f.values.len()];
    for b in f.block_ids() {
        let block = f.block(b);
        for phi in &block.phis {
            def_block[phi.def.value.index()] = b;
        }
        for op in block.insts.iter().filter_map(|i| i.op()) {
            for d in &op.defs {
                def_block[d.value.index()] = b;
            }
        }
    }
    def_block
}

/// Per value, the blocks where it is used, as a compressed table: the sites of value `v`
/// are `sites[offsets[v]..offsets[v + 1]]`; `(block, false)` for an operand in `block`,
/// `(pred, true)` for a phi argument coming from `pred`.
struct UseSites {
    offsets: Vec<u32>,
    sites: Vec<(Block, bool)>,
}

impl UseSites {
    fn new(f: &Function) -> UseSites {
        let mut counts = vec![0u32; f.values.len() + 1];
        visit_uses(f, |v, _| counts[v.index() + 1] += 1);
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let mut fill = counts.clone();
        let mut sites = vec![(Block(0), false); counts[f.values.len()] as usize];
        visit_uses(f, |v, site| {
            sites[fill[v.index()] as usize] = site;
            fill[v.index()] += 1;
        });
        UseSites {
            offsets: counts,
            sites,
        }
    }

    fn of(&self, v: Value) -> &[(Block, bool)] {
        &self.sites[self.offsets[v.index()] as usize..self.offsets[v.index() + 1] as usize]
    }
}

fn visit_uses(f: &Function, mut visit: impl FnMut(Value, (Block, bool))) {
    for b in f.block_ids() {
        let block = f.block(b);
        for phi in &block.phis {
            for arg in &phi.args {
                visit(arg.value, (arg.block, true));
            }
        }
        let ops = block.insts.iter().filter_map(|i| i.op());
        for u in ops.flat_map(|op| op.uses()).chain(block.term.uses()) {
            visit(u.value, (b, false));
        }
    }
}

/// One backward walk per block: last uses, and values never used.
fn kill_points(f: &Function, live_out: &[Vec<Value>]) -> (Vec<Vec<(Point, Value)>>, Vec<bool>) {
    let mut live = vec![false; f.values.len()];
    let mut dead = vec![true; f.values.len()];
    let mut kills = Vec::with_capacity(f.blocks.len());
    for b in f.block_ids() {
        let block = f.block(b);
        let mut touched: Vec<Value> = live_out[b.index()].clone();
        for v in &touched {
            live[v.index()] = true;
            dead[v.index()] = false;
        }
        let mut block_kills = Vec::new();
        let mut use_at =
            |point: Point, v: Value, live: &mut Vec<bool>, touched: &mut Vec<Value>| {
                dead[v.index()] = false;
                if !live[v.index()] {
                    live[v.index()] = true;
                    touched.push(v);
                    block_kills.push((point, v));
                }
            };
        let term_point = block.insts.len() as Point;
        for u in block.term.uses() {
            use_at(term_point, u.value, &mut live, &mut touched);
        }
        for (i, inst) in block.insts.iter().enumerate().rev() {
            let Some(op) = inst.op() else { continue };
            for d in &op.defs {
                live[d.value.index()] = false;
            }
            for u in op.uses() {
                use_at(i as Point, u.value, &mut live, &mut touched);
            }
        }
        for v in touched {
            live[v.index()] = false;
        }
        block_kills.reverse();
        kills.push(block_kills);
    }
    (kills, dead)
}
