//! Next-use distances (Belady's MIN across a CFG, as in Braun & Hack, "Register Spilling
//! and Live-Range Splitting for SSA-Form Programs", CC 2009).
//!
//! The distance from a point to the next use of a value is the number of instructions
//! executed before that use on the shortest path, where leaving a loop costs
//! [`LOOP_EXIT`] more: a value used only after the loop is "far" from every point inside
//! it, so it is the first one spilled there and it is never reloaded inside the loop. A
//! phi argument is a use on its edge, at the end of its predecessor plus the penalty when
//! the edge leaves a loop (a value passed out of a loop is as far as one used after it).
//! Paths stop at the value's definition (beyond it the value is a new instance).

use crate::analysis::{cfg::Graph, loops::Loops};
use crate::program::{Block, Function, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The extra distance of an edge that leaves a loop.
pub const LOOP_EXIT: u64 = 1 << 20;

/// Distance from instruction index `from` of `b` to the next use of `x` (`u64::MAX` when
/// no use is reachable). `graph` is the CFG that `x`'s liveness follows.
pub fn next_use(
    f: &Function,
    graph: &Graph,
    loops: &Loops,
    def_block: Option<Block>,
    x: Value,
    (b, from): (Block, usize),
) -> u64 {
    if let Some(i) = use_in_block(f, x, b, from) {
        return (i - from) as u64;
    }
    let mut best = vec![u64::MAX; f.blocks.len()];
    let mut heap = BinaryHeap::new();
    let exit_of_b = (f.block(b).insts.len() - from.min(f.block(b).insts.len())) as u64;
    let mut found = phi_use(f, loops, b, x, exit_of_b);
    push_succs(graph, loops, b, exit_of_b, &mut best, &mut heap);
    while let Some(Reverse((d, s))) = heap.pop() {
        let s = Block(s);
        if d >= found {
            break;
        }
        if d > best[s.index()] || Some(s) == def_block {
            continue;
        }
        if let Some(i) = use_in_block(f, x, s, 0) {
            return d + i as u64;
        }
        let through = d + f.block(s).insts.len() as u64;
        found = found.min(phi_use(f, loops, s, x, through));
        push_succs(graph, loops, s, through, &mut best, &mut heap);
    }
    found
}

/// The extra distance of the edge from `b` to `s`: [`LOOP_EXIT`] per loop it leaves.
fn exit_penalty(loops: &Loops, b: Block, s: Block) -> u64 {
    LOOP_EXIT * u64::from(loops.depth(b).saturating_sub(loops.depth(s)))
}

/// The distance to `x` as an argument `b` passes to a successor's phi, `at_end` being the
/// distance to `b`'s end: the use is on the edge, so an edge leaving a loop counts its
/// penalty (a value passed out of a loop is as far as one used after it).
fn phi_use(f: &Function, loops: &Loops, b: Block, x: Value, at_end: u64) -> u64 {
    f.block(b)
        .term
        .successors()
        .filter(|&s| {
            f.block(s)
                .phis
                .iter()
                .any(|p| p.args.iter().any(|a| a.block == b && a.value == x))
        })
        .map(|s| at_end.saturating_add(exit_penalty(loops, b, s)))
        .min()
        .unwrap_or(u64::MAX)
}

fn push_succs(
    graph: &Graph,
    loops: &Loops,
    b: Block,
    at_end: u64,
    best: &mut [u64],
    heap: &mut BinaryHeap<Reverse<(u64, u32)>>,
) {
    for &s in graph.succs(b) {
        let d = at_end.saturating_add(exit_penalty(loops, b, s) + 1);
        if d < best[s.index()] {
            best[s.index()] = d;
            heap.push(Reverse((d, s.0)));
        }
    }
}

/// The index of the first use of `x` in `b` at or after `from` by an instruction (by
/// index) or the terminator (at `insts.len()`); phi arguments are not counted.
fn use_in_block(f: &Function, x: Value, b: Block, from: usize) -> Option<usize> {
    let block = f.block(b);
    let in_ops = block
        .insts
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, inst)| inst.op().is_some_and(|op| op.uses().any(|u| u.value == x)));
    if let Some((i, _)) = in_ops {
        return Some(i);
    }
    let by_term = block.term.uses().iter().any(|u| u.value == x);
    (by_term && from <= block.insts.len()).then_some(block.insts.len())
}

/// The index of the first use of `x` in `b` at or after `from`: instructions by index,
/// the terminator and the phi arguments `b` passes to its successors at `insts.len()`.
pub fn first_use(f: &Function, x: Value, b: Block, from: usize) -> Option<usize> {
    let end = f.block(b).insts.len();
    use_in_block(f, x, b, from)
        .or_else(|| (passes_as_phi_arg(f, b, x) && from <= end).then_some(end))
}

/// Whether `b` passes `x` to a phi of one of its successors.
pub fn passes_as_phi_arg(f: &Function, b: Block, x: Value) -> bool {
    f.block(b).term.successors().any(|s| {
        f.block(s)
            .phis
            .iter()
            .any(|p| p.args.iter().any(|a| a.block == b && a.value == x))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;

    #[test]
    fn a_use_after_a_loop_is_farther_than_any_use_inside() {
        let p = crate::parse(
            "target generic s=4 v=8
func @f {
entry:
  %x:v1 = mov 1
  %y:v1 = mov 2
  %c:s1 = mov 0
  jump head
head:
  %i:v1 = phi [entry: %y], [body: %j]
  branch uniform %c, body, exit
body:
  %j:v1 = add %i, %i
  jump head
exit:
  ret %x
}
",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let a = Analysis::new(f, &p.target);
        let x = f.value_ids().find(|v| f.value(*v).name == "x").unwrap();
        let i = f.value_ids().find(|v| f.value(*v).name == "i").unwrap();
        let head = Block(1);
        let body = Block(2);
        let to_x = next_use(f, &a.cfg, &a.loops, Some(Block(0)), x, (body, 0));
        let to_i = next_use(f, &a.cfg, &a.loops, Some(head), i, (body, 0));
        assert_eq!(to_i, 0);
        assert!(to_x >= LOOP_EXIT, "{to_x}");
        assert_eq!(
            next_use(f, &a.cfg, &a.loops, Some(head), i, (Block(3), 0)),
            u64::MAX
        );
    }

    /// `%x` is passed out of the loop to a phi of `exit` only: that use is on the exit
    /// edge, as far from the loop body as a use after the loop.
    #[test]
    fn a_phi_argument_on_a_loop_exit_edge_is_beyond_the_loop() {
        let p = crate::parse(
            "target generic s=4 v=8
func @f {
entry:
  %x:v1 = mov 1
  %c:s1 = mov 0
  jump head
head:
  %t:v1 = mov 2
  branch uniform %c, head, exit
exit:
  %y:v1 = phi [head: %x]
  ret %y
}
",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let f = &p.functions[0];
        let a = Analysis::new(f, &p.target);
        let x = f.value_ids().find(|v| f.value(*v).name == "x").unwrap();
        let to_x = next_use(f, &a.cfg, &a.loops, Some(Block(0)), x, (Block(1), 0));
        assert!(to_x >= LOOP_EXIT, "{to_x}");
        assert_eq!(first_use(f, x, Block(1), 0), Some(1));
    }
}
