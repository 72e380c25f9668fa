//! Register pressure per program point and class, in register units, and MaxLive.
//!
//! One backward walk per block from its live-out set ([`Liveness::walk_backward`]; the
//! walk that finds the kill points, shared through [`Builder`]). At an instruction the demand is the
//! larger of the units live before it and the units live after it together with its
//! definitions (dead ones too: a def occupies a register at its instruction); an
//! early-clobber definition adds its units to those live before, since it is written
//! while the operands are still read, and so does a tied definition whose operand lives
//! on (the operand needs a copy that the definition overwrites). At block entry the demand is the live-ins plus the
//! phi definitions. For SSA programs without tuples or fixed registers MaxLive is exactly
//! the number of registers needed (Hack & Goos 2006).

use super::liveness::{At, LiveSet, Liveness};
use crate::program::{Block, BlockData, Def, Function, Value};
use crate::target::{ClassId, Target};

#[derive(Clone, Debug, PartialEq)]
pub struct Pressure {
    classes: usize,
    /// Per block, the offset of its first point in `demand`.
    offsets: Vec<usize>,
    /// Per point (block entry, each instruction, terminator) and class: units demanded.
    demand: Vec<u32>,
    max_live: Vec<u32>,
}

impl Pressure {
    /// The pressure of `f` from a walk of its own; [`super::Analysis`] instead builds it
    /// ([`Builder`]) during the walk that finds the kill points.
    pub fn new(f: &Function, target: &Target, liveness: &Liveness) -> Pressure {
        let mut builder = Builder::new(f, target);
        let mut live = LiveSet::new(f, target);
        for b in f.block_ids() {
            liveness.walk_backward(f, b, &mut live, |at, live| builder.visit(b, at, live));
        }
        builder.finish()
    }

    /// The largest demand of `class` anywhere in the function.
    pub fn max_live(&self, class: ClassId) -> u32 {
        self.max_live.get(class.index()).copied().unwrap_or(0)
    }

    /// Demand of `class` at block entry (`point == None`) or at instruction/terminator
    /// `point` of `b`.
    pub fn at(&self, b: Block, point: Option<u32>, class: ClassId) -> u32 {
        let index = self.offsets[b.index()] + point.map_or(0, |p| p as usize + 1);
        self.demand[index * self.classes + class.index()]
    }

    /// The largest demand of `class` in block `b`.
    pub fn block_max(&self, f: &Function, b: Block, class: ClassId) -> u32 {
        let points = f.block(b).insts.len() + 2;
        let start = self.offsets[b.index()];
        (start..start + points)
            .map(|p| self.demand[p * self.classes + class.index()])
            .max()
            .unwrap_or(0)
    }
}

/// Builds [`Pressure`] from the backward walks of the blocks, in any order of blocks
/// ([`Liveness::walk_backward`]): one row of units per class for the entry, each
/// instruction and the terminator of each block, written where the block's rows go.
#[derive(Debug)]
pub struct Builder<'f> {
    f: &'f Function,
    classes: usize,
    offsets: Vec<usize>,
    demand: Vec<u32>,
    late: Vec<u32>,
    early: Vec<u32>,
    tied_to_live: Vec<Value>,
}

impl<'f> Builder<'f> {
    pub fn new(f: &'f Function, target: &Target) -> Builder<'f> {
        let classes = target.classes.len();
        let mut offsets = Vec::with_capacity(f.blocks.len());
        let mut points = 0;
        for block in &f.blocks {
            offsets.push(points);
            points += block.insts.len() + 2;
        }
        Builder {
            f,
            classes,
            offsets,
            demand: vec![0; points * classes],
            late: Vec::new(),
            early: Vec::new(),
            tied_to_live: Vec::new(),
        }
    }

    /// One position of the backward walk of `b`, with the live set there.
    pub fn visit(&mut self, b: Block, at: At, live: &LiveSet<'_>) {
        let (f, block) = (self.f, self.f.block(b));
        match at {
            At::After(point) => {
                self.late.clear();
                self.late.extend_from_slice(live.all_units());
                for d in defs_at(block, point).filter(|d| !live.contains(d.value)) {
                    add_units(f, &mut self.late, d.value);
                }
                self.tied_to_live.clear();
                let tied = tied_operand_lives_on(block, point, live);
                self.tied_to_live.extend(tied);
            }
            At::Before(point) => {
                self.early.clear();
                self.early.extend_from_slice(live.all_units());
                for d in defs_at(block, point).filter(|d| d.early_clobber) {
                    add_units(f, &mut self.early, d.value);
                }
                for &v in &self.tied_to_live {
                    add_units(f, &mut self.early, v);
                }
                let start = self.row_start(b, point as usize + 1);
                let row = &mut self.demand[start..start + self.classes];
                for ((d, l), e) in row.iter_mut().zip(&self.late).zip(&self.early) {
                    *d = *l.max(e);
                }
            }
            At::Entry => {
                self.late.clear();
                self.late.extend_from_slice(live.all_units());
                for phi in &block.phis {
                    add_units(f, &mut self.late, phi.def.value);
                }
                let start = self.row_start(b, 0);
                self.demand[start..start + self.classes].copy_from_slice(&self.late);
            }
        }
    }

    /// Where the row of point `index` of `b` starts in `demand` (point 0 is the entry, then
    /// each instruction, then the terminator).
    fn row_start(&self, b: Block, index: usize) -> usize {
        (self.offsets[b.index()] + index) * self.classes
    }

    pub fn finish(self) -> Pressure {
        let classes = self.classes;
        let mut max_live = vec![0; classes];
        for point in self.demand.chunks(classes.max(1)) {
            for (m, &d) in max_live.iter_mut().zip(point) {
                *m = (*m).max(d);
            }
        }
        Pressure {
            classes,
            offsets: self.offsets,
            demand: self.demand,
            max_live,
        }
    }
}

fn defs_at(block: &BlockData, point: u32) -> impl Iterator<Item = &Def> + '_ {
    let op = block.insts.get(point as usize).and_then(|i| i.op());
    op.into_iter().flat_map(|op| &op.defs)
}

fn add_units(f: &Function, units: &mut [u32], v: Value) {
    let data = f.value(v);
    if let Some(u) = units.get_mut(data.class.index()) {
        *u += u32::from(data.size);
    }
}

/// Defs at `point` tied to an operand whose value is still live after the instruction.
fn tied_operand_lives_on<'b>(
    block: &'b BlockData,
    point: u32,
    live: &'b LiveSet,
) -> impl Iterator<Item = Value> + 'b {
    let op = block.insts.get(point as usize).and_then(|i| i.op());
    op.into_iter().flat_map(move |op| {
        op.defs
            .iter()
            .filter_map(move |d| match op.operands.get(usize::from(d.tied?))? {
                crate::program::Operand::Value(u) if live.contains(u.value) => Some(d.value),
                _ => None,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pressure built during liveness's kill-point walk, which takes the blocks from
    /// the last, equals the one of a walk of its own, which takes them in order.
    #[test]
    fn pressure_does_not_depend_on_the_order_of_the_blocks() {
        let synthetic = crate::synth::synthetic(300);
        let sources = [
            include_str!("../../corpus/divergent_loop.chr"),
            include_str!("../../corpus/critical_edges.chr"),
            include_str!("../../corpus/nested_loops.chr"),
            synthetic.as_str(),
        ];
        for src in sources {
            let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
            for f in &p.functions {
                let a = crate::analysis::Analysis::new(f, &p.target);
                assert!(f.blocks.len() > 2, "@{}", f.name);
                let own = Pressure::new(f, &p.target, &a.liveness);
                assert_eq!(a.pressure, own, "@{}", f.name);
            }
        }
    }
}
