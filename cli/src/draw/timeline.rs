//! What a drawing shows, read from an allocated function: one column per instruction
//! (added ones included) and terminator, one row per register unit used; in each cell the
//! value the unit holds while that value is live; the moves allocation added, marked
//! where they write (a spill where it reads); the units live per class at each column.
//!
//! The pressure per class is drawn twice: the units the live values need (spilled ones
//! included) and the units that hold them in registers, which the budget bounds.
//!
//! What a unit holds comes from running the moves forward through each block, starting
//! from where the first predecessor already seen left its values (the allocation is
//! verified, so every path agrees on what is read) and the block's phi locations.

use chromatic::analysis::liveness::{At, LiveSet};
use chromatic::analysis::Analysis;
use chromatic::{ClassId, Function, InstKind, Location, Target, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What allocation added at a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Copy,
    Spill,
    Reload,
    Remat,
}

#[derive(Debug)]
pub struct Timeline {
    /// Per block: its name and first column.
    pub blocks: Vec<(String, usize)>,
    pub columns: usize,
    /// Register units shown, by class and unit.
    pub rows: Vec<(ClassId, u16)>,
    /// Per row, the runs of one value: (first column, last column, value).
    pub bars: Vec<Vec<(usize, usize, Value)>>,
    pub marks: Vec<(usize, usize, Mark)>,
    /// Per class with live values, at each column: the units its live values take
    /// (the demand, spilled values included) and the units that hold them in registers.
    pub pressure: BTreeMap<ClassId, (Vec<u32>, Vec<u32>)>,
}

type Unit = (ClassId, u16);

fn units(l: Location) -> Vec<Unit> {
    match l {
        Location::Reg { class, first, len } => (first..first + len).map(|u| (class, u)).collect(),
        _ => Vec::new(),
    }
}

pub fn build(f: &Function, target: &Target) -> Timeline {
    let a = Analysis::new(f, target);
    let mut held: Vec<HashMap<Unit, Value>> = vec![HashMap::new(); f.blocks.len()];
    let mut seen = vec![false; f.blocks.len()];
    let mut cells: Vec<HashMap<Unit, Value>> = Vec::new();
    let mut t = Timeline {
        blocks: Vec::new(),
        columns: 0,
        rows: Vec::new(),
        bars: Vec::new(),
        marks: Vec::new(),
        pressure: BTreeMap::new(),
    };
    let mut marks: Vec<(usize, Unit, Mark)> = Vec::new();
    let mut live = LiveSet::new(f, target);
    for b in f.block_ids() {
        let block = f.block(b);
        let mut state: HashMap<Unit, Value> = a
            .cfg
            .preds(b)
            .iter()
            .find(|p| seen[p.index()])
            .map(|p| held[p.index()].clone())
            .unwrap_or_default();
        for phi in &block.phis {
            for u in phi.def.loc.map(units).unwrap_or_default() {
                state.insert(u, phi.def.value);
            }
        }
        let (before, after) = live_sets(f, &a, b, &mut live);
        t.blocks.push((block.name.clone(), cells.len()));
        for i in 0..=block.insts.len() {
            let column = cells.len();
            let mut shown = HashMap::new();
            keep_live(&state, &before[i], &mut shown);
            if let Some(inst) = block.insts.get(i) {
                apply(
                    &inst.kind,
                    &mut state,
                    Marks {
                        column,
                        list: &mut marks,
                    },
                );
            }
            keep_live(&state, &after[i], &mut shown);
            for (class, n) in before[i].1.iter().enumerate() {
                let class = ClassId(class as u8);
                let in_regs = shown.keys().filter(|(c, _)| *c == class).count() as u32;
                let p = t.pressure.entry(class).or_default();
                p.0.push(*n);
                p.1.push(in_regs);
            }
            cells.push(shown);
        }
        seen[b.index()] = true;
        held[b.index()] = state;
    }
    t.pressure
        .retain(|_, (demand, _)| demand.iter().any(|&n| n > 0));
    t.columns = cells.len();
    t.rows = rows(&cells, &marks);
    t.bars = t.rows.iter().map(|u| runs(&cells, *u)).collect();
    let row_of: HashMap<Unit, usize> = t.rows.iter().enumerate().map(|(i, u)| (*u, i)).collect();
    t.marks = marks
        .into_iter()
        .filter_map(|(c, u, m)| Some((c, *row_of.get(&u)?, m)))
        .collect();
    t
}

/// Per point of `b` (instructions, then the terminator): the values live before and
/// after it, with the units live per class before it.
type Live = (BTreeSet<Value>, Vec<u32>);

fn live_sets(
    f: &Function,
    a: &Analysis,
    b: chromatic::Block,
    live: &mut LiveSet<'_>,
) -> (Vec<Live>, Vec<Live>) {
    let n = f.block(b).insts.len() + 1;
    let empty = || (BTreeSet::new(), Vec::new());
    let (mut before, mut after): (Vec<Live>, Vec<Live>) = (
        (0..n).map(|_| empty()).collect(),
        (0..n).map(|_| empty()).collect(),
    );
    a.liveness.walk_backward(f, b, live, |at, set| {
        let snapshot = (
            set.values().iter().copied().collect(),
            set.all_units().to_vec(),
        );
        match at {
            At::Before(p) => before[p as usize] = snapshot,
            At::After(p) => after[p as usize] = snapshot,
            At::Entry => {}
        }
    });
    (before, after)
}

fn keep_live(state: &HashMap<Unit, Value>, live: &Live, shown: &mut HashMap<Unit, Value>) {
    for (u, v) in state {
        if live.0.contains(v) {
            shown.insert(*u, *v);
        }
    }
}

/// Where one instruction's marks go: its column and the list.
struct Marks<'m> {
    column: usize,
    list: &'m mut Vec<(usize, Unit, Mark)>,
}

impl Marks<'_> {
    fn add(&mut self, l: Location, mark: Mark) {
        for u in units(l) {
            self.list.push((self.column, u, mark));
        }
    }
}

fn write(state: &mut HashMap<Unit, Value>, l: Location, v: Value) {
    for u in units(l) {
        state.insert(u, v);
    }
}

/// Runs one instruction on what the units hold, recording the moves it adds.
fn apply(kind: &InstKind, state: &mut HashMap<Unit, Value>, mut marks: Marks<'_>) {
    match kind {
        InstKind::Op(op) => {
            for d in &op.defs {
                if let Some(l) = d.loc {
                    write(state, l, d.value);
                }
            }
        }
        InstKind::ParallelCopy(moves) => {
            for m in moves {
                write(state, m.dst, m.value);
                marks.add(m.dst, Mark::Copy);
            }
        }
        InstKind::Swap(x, y) => {
            let (ux, uy) = (units(*x), units(*y));
            let held = |us: &[Unit]| -> Vec<Option<Value>> {
                us.iter().map(|u| state.get(u).copied()).collect()
            };
            let (vx, vy) = (held(&ux), held(&uy));
            for (u, v) in ux.iter().zip(vy).chain(uy.iter().zip(vx)) {
                if let Some(v) = v {
                    state.insert(*u, v);
                }
            }
            marks.add(*x, Mark::Copy);
            marks.add(*y, Mark::Copy);
        }
        InstKind::Spill(m) => {
            marks.add(m.src, Mark::Spill);
            write(state, m.dst, m.value);
        }
        InstKind::Reload(m) => {
            write(state, m.dst, m.value);
            marks.add(m.dst, Mark::Reload);
        }
        InstKind::Remat { dst, value, .. } => {
            write(state, *dst, *value);
            marks.add(*dst, Mark::Remat);
        }
    }
}

/// Every unit that holds a live value somewhere or is marked, by class and unit.
fn rows(cells: &[HashMap<Unit, Value>], marks: &[(usize, Unit, Mark)]) -> Vec<Unit> {
    let set: BTreeSet<Unit> = cells
        .iter()
        .flat_map(|c| c.keys().copied())
        .chain(marks.iter().map(|m| m.1))
        .collect();
    set.into_iter().collect()
}

/// The runs of one value in one row.
fn runs(cells: &[HashMap<Unit, Value>], unit: Unit) -> Vec<(usize, usize, Value)> {
    let mut out: Vec<(usize, usize, Value)> = Vec::new();
    for (c, cell) in cells.iter().enumerate() {
        let Some(&v) = cell.get(&unit) else { continue };
        match out.last_mut() {
            Some(last) if last.2 == v && last.1 + 1 == c => last.1 = c,
            _ => out.push((c, c, v)),
        }
    }
    out
}
