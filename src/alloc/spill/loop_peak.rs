//! The most units of a class a loop holds at once, counted as a loop header's W counts
//! them: each value at its size rounded up to its alignment ([`Demand::rounded`], the
//! units it takes when values are packed by decreasing alignment).
//!
//! A loop header's room for the values live through the loop (Braun & Hack, "Register
//! Spilling and Live-Range Splitting for SSA-Form Programs", CC 2009, §4.2:
//! [`super::belady`]) is the budget less the loop's peak less those values. The header
//! counts the values it takes in rounded units, so the peak is counted in the same
//! units: with the peak in sizes, the room was larger by the rounding of every value
//! live through the loop, and the header took values the loop's peak then evicted.
//!
//! Per block in a loop, one backward walk from its live-out set, as
//! [`crate::analysis::pressure`] walks, with a running sum of rounded units in place of
//! the sizes: at an instruction the demand is the larger of the units live after it
//! with its dead definitions and the units live before it with its early-clobber
//! definitions and its tied ones whose operand lives on; at the entry, the live-ins and
//! the phis.

use super::demand::Demand;
use crate::analysis::liveness::Liveness;
use crate::analysis::loops::Loops;
use crate::program::{Block, Function, Op, Operand, Value};

/// Per block: its peak in rounded units (0 for a block in no loop).
#[derive(Debug)]
pub struct LoopPeaks {
    per_block: Vec<u32>,
}

impl LoopPeaks {
    pub fn new(f: &Function, liveness: &Liveness, loops: &Loops, demand: &Demand) -> LoopPeaks {
        let mut live = RoundedLive::new(f, demand);
        let per_block = f
            .block_ids()
            .map(|b| {
                if loops.depth(b) == 0 {
                    0
                } else {
                    live.block_peak(f, liveness, b)
                }
            })
            .collect();
        LoopPeaks { per_block }
    }

    /// The most rounded units live at once anywhere in the loop `body`.
    pub fn of(&self, body: &[Block]) -> u32 {
        body.iter()
            .map(|b| self.per_block[b.index()])
            .max()
            .unwrap_or(0)
    }
}

/// The live values of a backward walk and the sum of their rounded units.
struct RoundedLive<'d, 'a> {
    demand: &'d Demand<'a>,
    live: Vec<bool>,
    members: Vec<Value>,
    units: u32,
}

impl<'d, 'a> RoundedLive<'d, 'a> {
    fn new(f: &Function, demand: &'d Demand<'a>) -> RoundedLive<'d, 'a> {
        RoundedLive {
            demand,
            live: vec![false; f.values.len()],
            members: Vec::new(),
            units: 0,
        }
    }

    fn units_of(&self, v: Value) -> u32 {
        if self.demand.of_class(v) {
            self.demand.rounded(v)
        } else {
            0
        }
    }

    fn insert(&mut self, v: Value) {
        if !std::mem::replace(&mut self.live[v.index()], true) {
            self.members.push(v);
            self.units += self.units_of(v);
        }
    }

    fn remove(&mut self, v: Value) {
        if std::mem::replace(&mut self.live[v.index()], false) {
            self.units -= self.units_of(v);
        }
    }

    fn clear(&mut self) {
        for v in self.members.drain(..) {
            self.live[v.index()] = false;
        }
        self.units = 0;
    }

    fn block_peak(&mut self, f: &Function, liveness: &Liveness, b: Block) -> u32 {
        let block = f.block(b);
        self.clear();
        liveness.live_out(b).iter().for_each(|&v| self.insert(v));
        let mut peak = self.units;
        block.term.uses().iter().for_each(|u| self.insert(u.value));
        peak = peak.max(self.units);
        for op in block.insts.iter().rev().filter_map(|inst| inst.op()) {
            peak = peak.max(self.instruction_peak(op));
        }
        let phis: u32 = block.phis.iter().map(|p| self.units_of(p.def.value)).sum();
        block.phis.iter().for_each(|p| self.remove(p.def.value));
        peak.max(self.units + phis)
    }

    /// The demand at `op`, the walk just after it; leaves the walk just before it.
    fn instruction_peak(&mut self, op: &Op) -> u32 {
        let dead_defs: u32 = op
            .defs
            .iter()
            .filter(|d| !self.live[d.value.index()])
            .map(|d| self.units_of(d.value))
            .sum();
        let late = self.units + dead_defs;
        let tied_to_live: u32 = op
            .defs
            .iter()
            .filter(
                |d| match d.tied.and_then(|t| op.operands.get(usize::from(t))) {
                    Some(Operand::Value(u)) => self.live[u.value.index()],
                    _ => false,
                },
            )
            .map(|d| self.units_of(d.value))
            .sum();
        op.defs.iter().for_each(|d| self.remove(d.value));
        op.uses().for_each(|u| self.insert(u.value));
        let clobbers: u32 = op
            .defs
            .iter()
            .filter(|d| d.early_clobber)
            .map(|d| self.units_of(d.value))
            .sum();
        late.max(self.units + clobbers + tied_to_live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;

    /// The rounded peak is the pressure analysis's peak where every value of the class
    /// takes its own size, and no lower where alignment rounds a value up.
    #[test]
    fn the_rounded_peak_is_the_pressure_when_nothing_is_rounded() {
        let sources = [
            include_str!("../../../corpus/nested_loops.chr"),
            include_str!("../../../corpus/mma_accumulate_loop.chr"),
        ];
        for src in sources {
            let p = crate::parse(src).unwrap();
            for f in &p.functions {
                check_function(f, &p.target);
            }
        }
    }

    fn check_function(f: &Function, target: &crate::target::Target) {
        let a = Analysis::new(f, target);
        for c in target.class_ids() {
            let demand = Demand::new(f, target, c, target.class(c).units);
            let peaks = LoopPeaks::new(f, &a.liveness, &a.loops, &demand);
            let exact = f
                .value_ids()
                .filter(|&v| demand.of_class(v))
                .all(|v| demand.rounded(v) == u32::from(demand.size(v)));
            for b in f.block_ids().filter(|&b| a.loops.depth(b) > 0) {
                let pressure = a.pressure.block_max(f, b, c);
                let peak = peaks.of(&[b]);
                assert!(peak >= pressure, "@{} {b:?}", f.name);
                assert!(!exact || peak == pressure, "@{} {b:?}", f.name);
            }
        }
    }
}
