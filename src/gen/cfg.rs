//! Control-flow shapes, built recursively so that dominance is known by construction.
//!
//! A *region* is a sequence of *pieces*; each piece starts in an open block (no terminator
//! yet) and returns the open block where it ends, which the start block dominates:
//!
//! - straight: operations in the open block;
//! - if/else and if/then: a uniform or divergent branch, arms built as nested regions, and
//!   a join block (the immediate post-dominator) with phis; the if/then's skip edge is a
//!   critical edge;
//! - loop: a header with phis, a body region, and a latch that branches back or to the
//!   exit; `break` pieces inside the body add more exits (multi-exit loops, critical edges),
//!   `continue` pieces at the body's top level more back edges. A divergent latch of a
//!   loop with breaks has the exit as its then-target: its edge to the exit is split (the
//!   exit has phis from several predecessors), and a then-side looping back past a
//!   non-empty else-side is not structured;
//! - pressure: many values defined, a nested piece, then all of them used.
//!
//! The values available at a point form a stack scoped like the dominator tree: arms pop
//! what they pushed. The exit block of a loop with a divergent latch is that branch's
//! join; it, like the join of a divergent if, gets no uniform phis (nor does an exit an
//! unstructured break or continue may make a join). Unreachable blocks form a separate region whose
//! start has no predecessor.

use arbitrary::Result;

use super::renumber::canonical_values;
use super::{FnBuilder, LoopCtx};
use crate::program::{Block, BranchKind, Function, Pos, Terminator, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Straight,
    IfElse,
    IfThen,
    Loop,
    Break,
    Continue,
    Pressure,
}

/// Frequencies that print exactly, so that annotated programs round-trip.
const FREQS: &[f64] = &[0.25, 0.5, 1.0, 2.0, 10.0, 100.0];

impl FnBuilder<'_, '_> {
    /// The whole function: entry values, a region, `ret`, maybe unreachable blocks.
    pub(super) fn build(mut self) -> Result<Function> {
        let entry = self.new_block();
        self.entry_values(entry)?;
        let last = self.region(entry, 0)?;
        self.fill(last)?;
        self.ret(last)?;
        if self.percent(self.cfg.unreachable)? {
            self.unreachable_region()?;
        }
        self.annotate_freqs()?;
        Ok(canonical_values(self.f))
    }

    /// A region that nothing branches to; its values are its own.
    fn unreachable_region(&mut self) -> Result<()> {
        if self.blocks_left() == 0 {
            return Ok(());
        }
        let outer = std::mem::take(&mut self.avail);
        let start = self.new_block();
        self.entry_values(start)?;
        let last = self.region(start, self.cfg.max_depth.saturating_sub(1))?;
        self.ret(last)?;
        self.avail = outer;
        Ok(())
    }

    fn region(&mut self, start: Block, depth: usize) -> Result<Block> {
        let pieces = self.u.int_in_range(1..=3)?;
        let mut open = start;
        for _ in 0..pieces {
            open = self.piece(open, depth)?;
        }
        Ok(open)
    }

    fn piece(&mut self, open: Block, depth: usize) -> Result<Block> {
        match self.shape(depth)? {
            Shape::Straight => {
                self.fill(open)?;
                Ok(open)
            }
            Shape::IfElse => self.if_else(open, depth),
            Shape::IfThen => self.if_then(open, depth),
            Shape::Loop => self.natural_loop(open, depth),
            Shape::Break => self.loop_break(open),
            Shape::Continue => self.loop_continue(open),
            Shape::Pressure => self.pressure(open, depth),
        }
    }

    /// A shape that fits the depth and the blocks left.
    fn shape(&mut self, depth: usize) -> Result<Shape> {
        let nested = depth < self.cfg.max_depth;
        if nested && self.percent(self.cfg.pressure)? {
            return Ok(Shape::Pressure);
        }
        let left = self.blocks_left();
        let mut options = vec![Shape::Straight, Shape::Straight];
        if nested && left >= 3 {
            options.push(Shape::IfElse);
        }
        if nested && left >= 2 {
            options.extend([Shape::IfThen, Shape::Loop]);
        }
        let no_divergent_arm = |l: &LoopCtx| !self.arms[l.arms_at_entry..].contains(&true);
        let free = self.cfg.unstructured > 0;
        if left >= 1
            && self
                .loops
                .last()
                .is_some_and(|l| free || no_divergent_arm(l))
        {
            options.push(Shape::Break);
        }
        if left >= 1
            && self
                .loops
                .last()
                .is_some_and(|l| l.arms_at_entry == self.arms.len())
        {
            options.push(Shape::Continue);
        }
        Ok(*self.u.choose(&options)?)
    }

    fn if_else(&mut self, open: Block, depth: usize) -> Result<Block> {
        self.fill(open)?;
        let divergent = self.percent(self.cfg.divergence)?;
        let (then_block, else_block, join) = (self.new_block(), self.new_block(), self.new_block());
        self.branch(open, divergent, then_block, else_block)?;
        let base = self.avail.len();
        self.arms.push(divergent);
        let arms = [
            self.arm(then_block, join, depth, base)?,
            self.arm(else_block, join, depth, base)?,
        ];
        self.arms.pop();
        self.join_phis(join, &arms, !divergent)?;
        Ok(join)
    }

    /// A branch to an arm or straight to the join (the join is the then-target half the time).
    fn if_then(&mut self, open: Block, depth: usize) -> Result<Block> {
        self.fill(open)?;
        let divergent = self.percent(self.cfg.divergence)?;
        let (arm_start, join) = (self.new_block(), self.new_block());
        if self.u.ratio(1, 2)? {
            self.branch(open, divergent, arm_start, join)?;
        } else {
            self.branch(open, divergent, join, arm_start)?;
        }
        let base = self.avail.len();
        let skip = (open, self.avail.clone());
        self.arms.push(divergent);
        let arm = self.arm(arm_start, join, depth, base)?;
        self.arms.pop();
        self.join_phis(join, &[skip, arm], !divergent)?;
        Ok(join)
    }

    /// Builds an arm, jumps to `join`, and returns the arm's end with the values available
    /// there; the available stack goes back to `base`.
    fn arm(
        &mut self,
        start: Block,
        join: Block,
        depth: usize,
        base: usize,
    ) -> Result<(Block, Vec<Value>)> {
        let end = self.region(start, depth + 1)?;
        self.jump(end, join);
        let available = self.avail.clone();
        self.avail.truncate(base);
        Ok((end, available))
    }

    fn natural_loop(&mut self, open: Block, depth: usize) -> Result<Block> {
        self.fill(open)?;
        let (header, exit) = (self.new_block(), self.new_block());
        self.jump(open, header);
        let swaps = self.header_phis(header, open)?;
        let base = self.avail.len();
        self.loops.push(LoopCtx {
            header,
            exit,
            exits: Vec::new(),
            continues: Vec::new(),
            arms_at_entry: self.arms.len(),
            divergent_exit: false,
        });
        let latch = self.region(header, depth + 1)?;
        let divergent = self.percent(self.cfg.divergence)?;
        let has_breaks = self.loops.last().is_some_and(|l| !l.exits.is_empty());
        let structured = self.cfg.unstructured == 0;
        if !(structured && divergent && has_breaks) && self.u.ratio(1, 2)? {
            self.branch(latch, divergent, header, exit)?;
        } else {
            self.branch(latch, divergent, exit, header)?;
        }
        let mut ctx = self.loops.pop().expect("pushed above");
        ctx.continues.push((latch, self.avail.clone()));
        self.back_edge_args(header, &ctx.continues, &swaps)?;
        ctx.exits.push((latch, self.avail.clone()));
        self.avail.truncate(base);
        self.join_phis(exit, &ctx.exits, !(divergent || ctx.divergent_exit))?;
        Ok(exit)
    }

    /// A branch to the innermost loop's exit or on to a new block: uniform and outside
    /// the loop's divergent arms, unless the `unstructured` knob allows otherwise (a
    /// divergent break is what front ends structurize into a flag and the loop's own
    /// exit; lanes leaving a divergent arm early would skip its join). Structured
    /// divergent loop exits come from divergent latches.
    fn loop_break(&mut self, open: Block) -> Result<Block> {
        self.fill(open)?;
        let divergent = self.unstructured()?;
        let next = self.new_block();
        let available = self.avail.clone();
        let ctx = self
            .loops
            .last_mut()
            .expect("breaks are chosen inside loops");
        let in_divergent_arm = self.arms[ctx.arms_at_entry..].contains(&true);
        ctx.divergent_exit |= divergent || in_divergent_arm;
        ctx.exits.push((open, available));
        let exit = ctx.exit;
        if self.u.ratio(1, 2)? {
            self.branch(open, divergent, exit, next)?;
        } else {
            self.branch(open, divergent, next, exit)?;
        }
        Ok(next)
    }

    /// A branch back to the innermost loop's header or on to a new block; only outside
    /// if-arms, so no join between the header and here can become the immediate
    /// post-dominator of a divergent branch. Uniform unless the `unstructured` knob makes
    /// it divergent (what a structurizer removes), which may make the loop's exit a join.
    fn loop_continue(&mut self, open: Block) -> Result<Block> {
        self.fill(open)?;
        let divergent = self.unstructured()?;
        let next = self.new_block();
        let available = self.avail.clone();
        let ctx = self
            .loops
            .last_mut()
            .expect("continues are chosen inside loops");
        ctx.divergent_exit |= divergent;
        ctx.continues.push((open, available));
        let header = ctx.header;
        if self.u.ratio(1, 2)? {
            self.branch(open, divergent, header, next)?;
        } else {
            self.branch(open, divergent, next, header)?;
        }
        Ok(next)
    }

    /// Whether a break or continue is divergent: only with the `unstructured` knob (no
    /// input consumed without it, so structured programs stay what their seeds gave).
    fn unstructured(&mut self) -> Result<bool> {
        if self.cfg.unstructured == 0 {
            return Ok(false);
        }
        self.percent(self.cfg.unstructured)
    }

    /// Many values defined, a nested piece, then all of them used where it ends.
    fn pressure(&mut self, open: Block, depth: usize) -> Result<Block> {
        let group = self.pressure_defs(open)?;
        let end = self.piece(open, depth + 1)?;
        self.pressure_uses(end, &group)?;
        Ok(end)
    }

    fn branch(
        &mut self,
        b: Block,
        divergent: bool,
        then_block: Block,
        else_block: Block,
    ) -> Result<()> {
        let cond = self.cond_use()?;
        let kind = if divergent {
            BranchKind::Divergent
        } else {
            BranchKind::Uniform
        };
        self.f.blocks[b.index()].term = Terminator::Branch {
            kind,
            cond,
            then_block,
            else_block,
            pos: Pos::default(),
        };
        Ok(())
    }

    fn jump(&mut self, from: Block, target: Block) {
        self.f.blocks[from.index()].term = Terminator::Jump {
            target,
            pos: Pos::default(),
        };
    }

    fn annotate_freqs(&mut self) -> Result<()> {
        for b in 0..self.f.blocks.len() {
            if self.percent(self.cfg.freq)? {
                self.f.blocks[b].freq = Some(*self.u.choose(FREQS)?);
            }
        }
        Ok(())
    }
}
