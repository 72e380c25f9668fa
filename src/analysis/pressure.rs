//! Register pressure per program point and class, in register units, and MaxLive.
//!
//! One backward walk per block from its live-out set. At an instruction the demand is the
//! larger of the units live before it and the units live after it together with its
//! definitions (dead ones too: a def occupies a register at its instruction); an
//! early-clobber definition adds its units to those live before, since it is written
//! while the operands are still read. At block entry the demand is the live-ins plus the
//! phi definitions. For SSA programs without tuples or fixed registers MaxLive is exactly
//! the number of registers needed (Hack & Goos 2006).

use super::liveness::Liveness;
use crate::program::{Block, Function, Value};
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
    pub fn new(f: &Function, target: &Target, live: &Liveness) -> Pressure {
        let classes = target.classes.len();
        let mut offsets = Vec::with_capacity(f.blocks.len());
        let mut demand = Vec::new();
        let mut walker = Walker::new(f, classes);
        for b in f.block_ids() {
            offsets.push(demand.len() / classes.max(1));
            walker.block(b, live, &mut demand);
        }
        let mut max_live = vec![0; classes];
        for point in demand.chunks(classes.max(1)) {
            for (m, &d) in max_live.iter_mut().zip(point) {
                *m = (*m).max(d);
            }
        }
        Pressure {
            classes,
            offsets,
            demand,
            max_live,
        }
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

/// Backward walk state: which values are live and how many units per class.
struct Walker<'f> {
    f: &'f Function,
    live: Vec<bool>,
    touched: Vec<Value>,
    units: Vec<u32>,
}

impl<'f> Walker<'f> {
    fn new(f: &'f Function, classes: usize) -> Self {
        Walker {
            f,
            live: vec![false; f.values.len()],
            touched: Vec::new(),
            units: vec![0; classes],
        }
    }

    fn size(&self, v: Value) -> (usize, u32) {
        let data = self.f.value(v);
        (data.class.index(), u32::from(data.size))
    }

    fn add(&mut self, v: Value) {
        if !self.live[v.index()] {
            self.live[v.index()] = true;
            self.touched.push(v);
            let (c, n) = self.size(v);
            self.units[c] += n;
        }
    }

    fn remove(&mut self, v: Value) -> bool {
        let was = self.live[v.index()];
        if was {
            self.live[v.index()] = false;
            let (c, n) = self.size(v);
            self.units[c] -= n;
        }
        was
    }

    /// Demands of block `b`, entry first, in forward order, appended to `out`.
    fn block(&mut self, b: Block, live: &Liveness, out: &mut Vec<u32>) {
        let block = self.f.block(b);
        let classes = self.units.len();
        let first = out.len();
        for &v in live.live_out(b) {
            self.add(v);
        }
        for u in block.term.uses() {
            self.add(u.value);
        }
        out.extend_from_slice(&self.units);
        let mut late = vec![0; classes];
        let mut early = vec![0; classes];
        for inst in block.insts.iter().rev() {
            let Some(op) = inst.op() else {
                out.extend_from_slice(&self.units);
                continue;
            };
            late.copy_from_slice(&self.units);
            early.iter_mut().for_each(|e| *e = 0);
            for d in &op.defs {
                let (c, n) = self.size(d.value);
                if !self.remove(d.value) {
                    late[c] += n;
                }
                if d.early_clobber {
                    early[c] += n;
                }
            }
            for u in op.uses() {
                self.add(u.value);
            }
            out.extend((0..classes).map(|c| late[c].max(self.units[c] + early[c])));
        }
        late.copy_from_slice(&self.units);
        for phi in &block.phis {
            let (c, n) = self.size(phi.def.value);
            if !self.remove(phi.def.value) {
                late[c] += n;
            }
        }
        out.extend_from_slice(&late);
        for v in std::mem::take(&mut self.touched) {
            self.live[v.index()] = false;
        }
        self.units.iter_mut().for_each(|u| *u = 0);
        reverse_rows(&mut out[first..], classes);
    }
}

/// Reverses the order of the `width`-wide rows of `rows` in place.
fn reverse_rows(rows: &mut [u32], width: usize) {
    let n = rows.len() / width.max(1);
    for i in 0..n / 2 {
        for c in 0..width {
            rows.swap(i * width + c, (n - 1 - i) * width + c);
        }
    }
}
