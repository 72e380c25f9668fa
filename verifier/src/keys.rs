//! The dataflow's keys: which storage the analysis tracks, and how each piece is written.
//!
//! A key is one tracked piece of storage: a register unit, a lane of a register, or a view
//! of a slot unit. Keys of uniform registers and lanes follow the linear CFG (written
//! whatever the exec mask, so in the order the wave runs blocks); keys of per-lane
//! registers follow the logical CFG (the paths a lane takes).
//!
//! # Slots
//!
//! A slot unit holds one value per lane. Its *lane view* (logical) is what every lane that
//! reaches a point holds: any store sets it. In a function with a divergent branch, a slot
//! unit that some whole-wave store writes (a move from a uniform register,
//! `docs/FORMAT.md`) also has a *wave view* (linear): the value every lane of the wave
//! holds, set by a whole-wave store and lost (`PerLane`) by a per-lane one. A uniform
//! register or lane loads a slot through its wave view; a per-lane register or a slot
//! through its lane view. Without divergent branches the exec mask is always full, every
//! store writes every lane, and the lane view is all there is. Where the wave view holds a
//! value, every lane holds it, so the lane view takes it at every block entry.
//!
//! # Writes behind a lane's back
//!
//! Two kinds of write change what per-lane storage holds in lanes that are not active: a
//! whole-wave store changes a slot's lane view in every lane, and a write to a lane of a
//! register (`v7.l2`) changes that register's value in one lane. Along the logical CFG a
//! lane waits while such writes run elsewhere: at a divergent branch the else-lanes wait
//! for the then-walk, and at the join the lanes that arrived wait for both walks
//! (`cfg.rs`). [`Keys::skipped`] lists, per logical edge, the per-lane keys such writes in
//! the walks the edge waits for may change; the dataflow holds nothing known in them
//! after the edge (unless a slot's wave view says what every lane holds). Writes to a register and to its lanes also clobber each other directly
//! ([`Keys::aliases`]).

use crate::cfg::Cfg;
use crate::unit::{units, Unit};
use chromatic::{Function, InstKind, Location, Target};
use rustc_hash::{FxHashMap, FxHashSet};

/// The keys of one unit: its own key and, for a slot unit written whole-wave in a function
/// with divergent branches, its wave view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnitKeys {
    pub own: usize,
    pub wave: Option<usize>,
}

/// Units to their keys: registers in a dense table per class (every operand looks one
/// up), slots and lanes hashed.
#[derive(Debug)]
struct UnitTable {
    /// Per class, per register: its key + 1 (0: not named).
    registers: Vec<Vec<u32>>,
    others: FxHashMap<Unit, UnitKeys>,
}

impl UnitTable {
    /// A table with room for every register of every class of `target`, sized once.
    fn for_target(target: &Target) -> UnitTable {
        UnitTable {
            registers: target
                .classes
                .iter()
                .map(|c| vec![0; usize::from(c.units)])
                .collect(),
            others: FxHashMap::default(),
        }
    }

    /// Every read and write of the dataflow looks its units up here: inlined, so that a
    /// caller's register unit goes straight to its class's table.
    #[inline]
    fn get(&self, u: Unit) -> Option<UnitKeys> {
        match u {
            Unit::Reg(c, r) => {
                let k = *self.registers.get(usize::from(c))?.get(usize::from(r))?;
                (k > 0).then(|| UnitKeys {
                    own: k as usize - 1,
                    wave: None,
                })
            }
            u => self.others.get(&u).copied(),
        }
    }

    /// Whether registers `first..first + len` of class `c` all have keys.
    fn has_registers(&self, c: u8, first: u16, len: u16) -> bool {
        let (first, len) = (usize::from(first), usize::from(len));
        let table = self.registers.get(usize::from(c));
        let range = table.and_then(|t| t.get(first..first + len));
        range.is_some_and(|keys| keys.iter().all(|&k| k > 0))
    }

    fn insert(&mut self, u: Unit, keys: UnitKeys) {
        match u {
            Unit::Reg(c, r) => {
                let (c, r) = (usize::from(c), usize::from(r));
                if self.registers.len() <= c {
                    self.registers.resize(c + 1, Vec::new());
                }
                let class = &mut self.registers[c];
                if class.len() <= r {
                    class.resize(r + 1, 0);
                }
                class[r] = keys.own as u32 + 1;
            }
            u => {
                self.others.insert(u, keys);
            }
        }
    }

    /// The lanes in the table, with their own keys.
    fn lanes(&self) -> impl Iterator<Item = (u8, u16, usize)> + '_ {
        self.others.iter().filter_map(|(u, k)| match *u {
            Unit::Lane(c, r, _) => Some((c, r, k.own)),
            _ => None,
        })
    }
}

/// The keys of one function.
#[derive(Debug)]
pub(crate) struct Keys {
    of_unit: UnitTable,
    /// Per key: whether it follows the linear CFG.
    pub linear: Vec<bool>,
    /// Per key: the keys a write to it clobbers (a register's lanes, a lane's register).
    aliases: Vec<Vec<usize>>,
    /// (own, wave) keys of every slot unit with a wave view, both increasing.
    views: Vec<(usize, usize)>,
    /// Per logical edge (from, to): the per-lane keys written behind the waiting lanes'
    /// back, increasing.
    skipped: FxHashMap<(usize, usize), Vec<usize>>,
}

impl Keys {
    pub fn new(f: &Function, target: &Target, cfg: &Cfg, divergent: bool) -> Keys {
        let wave_slots = if divergent {
            whole_wave_slots(f, target)
        } else {
            FxHashSet::default()
        };
        let mut keys = Keys {
            of_unit: UnitTable::for_target(target),
            linear: Vec::new(),
            aliases: Vec::new(),
            views: Vec::new(),
            skipped: FxHashMap::default(),
        };
        for_each_location(f, |loc| keys.name_units(loc, target, &wave_slots));
        keys.link_lanes_to_registers();
        if divergent {
            keys.skipped = keys.skipped_edges(f, target, cfg);
        }
        keys
    }

    /// Gives each unit of `loc` without a key one (and a slot unit of `wave_slots`, which
    /// whole-wave stores write, its wave view). A register range whose registers all have
    /// keys, the common case, is settled by one look at its class's table.
    fn name_units(&mut self, loc: Location, target: &Target, wave_slots: &FxHashSet<Unit>) {
        if let Location::Reg { class, first, len } = loc {
            if self.of_unit.has_registers(class.0, first, len) {
                return;
            }
        }
        for u in units(loc) {
            if self.of_unit.get(u).is_none() {
                let own = self.push(u.is_uniform(target));
                let wave = wave_slots.contains(&u).then(|| self.push(true));
                self.views.extend(wave.map(|w| (own, w)));
                self.of_unit.insert(u, UnitKeys { own, wave });
            }
        }
    }

    fn push(&mut self, linear: bool) -> usize {
        self.linear.push(linear);
        self.aliases.push(Vec::new());
        self.linear.len() - 1
    }

    pub fn len(&self) -> usize {
        self.linear.len()
    }

    #[inline]
    pub fn of(&self, u: Unit) -> UnitKeys {
        self.of_unit
            .get(u)
            .expect("every unit the function names has a key")
    }

    /// The key a reader sees: a uniform register or lane reads a slot's wave view when it
    /// has one.
    #[inline]
    pub fn read_key(&self, u: Unit, uniform_reader: bool) -> usize {
        let k = self.of(u);
        match k.wave {
            Some(w) if uniform_reader => w,
            _ => k.own,
        }
    }

    pub fn aliases(&self, key: usize) -> &[usize] {
        &self.aliases[key]
    }

    /// Whether some logical edge waits for writes behind its lanes' back.
    pub fn skips_any(&self) -> bool {
        !self.skipped.is_empty()
    }

    /// The per-lane keys written behind the back of lanes taking the logical edge.
    pub fn skipped(&self, from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
        let keys = self.skipped.get(&(from, to)).map_or(&[][..], Vec::as_slice);
        keys.iter().copied()
    }

    /// The (own, wave) keys of every slot unit with a wave view.
    pub fn views(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.views.iter().copied()
    }

    /// Whether `key` is written behind the back of lanes taking the logical edge.
    pub fn is_skipped(&self, from: usize, to: usize, key: usize) -> bool {
        self.skipped
            .get(&(from, to))
            .is_some_and(|keys| keys.binary_search(&key).is_ok())
    }

    /// The wave view of the slot unit whose lane view is `own`, if it has one.
    pub fn wave_of(&self, own: usize) -> Option<usize> {
        let i = self.views.binary_search_by_key(&own, |&(o, _)| o).ok()?;
        Some(self.views[i].1)
    }

    /// The lane view of the slot unit whose wave view is `wave`, if `wave` is one.
    pub fn own_of(&self, wave: usize) -> Option<usize> {
        let i = self.views.binary_search_by_key(&wave, |&(_, w)| w).ok()?;
        Some(self.views[i].0)
    }

    /// A write to register `r` changes its lanes; a write to a lane changes its register.
    fn link_lanes_to_registers(&mut self) {
        let mut lanes_of: FxHashMap<(u8, u16), Vec<usize>> = FxHashMap::default();
        for (c, r, own) in self.of_unit.lanes() {
            lanes_of.entry((c, r)).or_default().push(own);
        }
        for (&(c, r), lanes) in &lanes_of {
            let Some(reg) = self.of_unit.get(Unit::Reg(c, r)).map(|k| k.own) else {
                continue;
            };
            for &lane in lanes {
                self.aliases[lane].push(reg);
            }
            self.aliases[reg].extend(lanes);
        }
    }

    /// Per logical edge that waits for a walk, the per-lane keys whole-wave stores and lane
    /// writes in that walk change.
    fn skipped_edges(
        &self,
        f: &Function,
        target: &Target,
        cfg: &Cfg,
    ) -> FxHashMap<(usize, usize), Vec<usize>> {
        let written: Vec<Vec<usize>> = f
            .blocks
            .iter()
            .map(|b| self.written_behind_backs(b, target))
            .collect();
        let mut out: FxHashMap<(usize, usize), Vec<usize>> = FxHashMap::default();
        if written.iter().all(Vec::is_empty) {
            return out;
        }
        let in_walk = |walk: &[usize]| -> Vec<usize> {
            let mut keys: Vec<usize> = walk.iter().flat_map(|&b| written[b].clone()).collect();
            keys.sort_unstable();
            keys.dedup();
            keys
        };
        for d in &cfg.divergent {
            let (then_keys, else_keys) = (in_walk(&d.then_walk), in_walk(&d.else_walk));
            let mut add = |edge: (usize, usize), keys: &[usize]| {
                if !keys.is_empty() {
                    out.entry(edge).or_default().extend(keys);
                }
            };
            let b = d.branch;
            // The else-lanes wait for the then-walk, at E or, when E is the join, at J.
            add((b, d.else_block), &then_keys);
            let Some(j) = d.join else { continue };
            // Then-lanes that reach the join wait for the else-walk.
            if d.then_block == j {
                add((b, j), &else_keys);
            }
            for &x in d.then_walk.iter().filter(|&&x| cfg.succs[x].contains(&j)) {
                add((x, j), &else_keys);
            }
        }
        for keys in out.values_mut() {
            keys.sort_unstable();
            keys.dedup();
        }
        out
    }

    /// The per-lane keys a block writes in lanes that may be inactive.
    fn written_behind_backs(&self, b: &chromatic::BlockData, target: &Target) -> Vec<usize> {
        let mut keys = Vec::new();
        for inst in &b.insts {
            for (src, dst) in moves_of(&inst.kind) {
                let whole_wave = is_uniform_register(target, src) && !dst.is_reg();
                for u in units(dst) {
                    match u {
                        Unit::Slot(_) if whole_wave => keys.push(self.of(u).own),
                        Unit::Lane(c, r, _) => {
                            keys.extend(self.of_unit.get(Unit::Reg(c, r)).map(|k| k.own))
                        }
                        _ => {}
                    }
                }
            }
        }
        keys
    }
}

/// Whether `loc` is a register of a uniform class.
pub(crate) fn is_uniform_register(target: &Target, loc: Location) -> bool {
    loc.reg_class().is_some_and(|c| target.class(c).uniform)
}

/// The slot units some move writes from a uniform register (whole-wave stores).
fn whole_wave_slots(f: &Function, target: &Target) -> FxHashSet<Unit> {
    let mut out = FxHashSet::default();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        for (src, dst) in moves_of(&inst.kind) {
            if matches!(dst, Location::Slot { .. }) && is_uniform_register(target, src) {
                out.extend(units(dst));
            }
        }
    }
    out
}

/// A move's (source, destination).
type Pair = (Location, Location);

/// The (source, destination) pairs of an artefact's moves.
pub(crate) fn moves_of(kind: &InstKind) -> impl Iterator<Item = Pair> + '_ {
    let (copies, others): (&[chromatic::Move], [Option<Pair>; 2]) = match kind {
        InstKind::ParallelCopy(moves) => (moves, [None, None]),
        InstKind::Swap(x, y) => (&[], [Some((*x, *y)), Some((*y, *x))]),
        InstKind::Spill(m) | InstKind::Reload(m) => (&[], [Some((m.src, m.dst)), None]),
        InstKind::Op(_) | InstKind::Remat { .. } => (&[], [None, None]),
    };
    let copies = copies.iter().map(|m| (m.src, m.dst));
    copies.chain(others.into_iter().flatten())
}

/// Calls `visit` on every location the function names, in block order.
fn for_each_location(f: &Function, mut visit: impl FnMut(Location)) {
    for b in &f.blocks {
        b.phis.iter().filter_map(|p| p.def.loc).for_each(&mut visit);
        for inst in &b.insts {
            match &inst.kind {
                InstKind::Op(op) => {
                    op.defs.iter().filter_map(|d| d.loc).for_each(&mut visit);
                    op.uses().filter_map(|u| u.loc).for_each(&mut visit);
                }
                kind => crate::constraints::artefact_locations(kind).for_each(&mut visit),
            }
        }
        b.term
            .uses()
            .iter()
            .filter_map(|u| u.loc)
            .for_each(&mut visit);
    }
}
