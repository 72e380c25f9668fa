//! Moves of part of a wide register. Sequentialising a parallel copy breaks a cycle
//! through one free unit, so it may move one half of a 64-bit value at a time; PTX
//! registers do not alias, so a half has no name of its own. A run of such moves is
//! written at the level of 32-bit pieces instead: the run is simulated on symbolic
//! contents (which pre-run unit or slot word each unit and slot ends up holding), every
//! piece the final state needs is read into a temporary first (a wide register unpacked
//! with `mov.b64 {lo, hi}, wide`, a slot word loaded), then every register and slot the
//! run writes gets its final content (pieces of one wide element packed back with
//! `mov.b64 wide, {lo, hi}`). Reading everything before writing anything gives the run's
//! parallel meaning; the temporaries are PTX registers outside the allocation, which
//! ptxas coalesces.

use super::{err, ExportError, Family, FunctionExporter, SPILL};
use crate::program::*;
use std::collections::BTreeMap;

/// Where a piece was before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Token {
    Reg(u16),
    Slot(u32),
}

/// One register unit's or slot word's content: a pre-run place, the value it is part of,
/// and which part (32-bit half of a wide element, or 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    token: Token,
    value: Value,
    family: Family,
    part: u16,
}

impl FunctionExporter<'_> {
    /// Whether an artefact is a copy, spill or reload within one class (not a
    /// rematerialisation, not a predicate kept in a 32-bit register).
    pub(super) fn is_plain_move(&self, inst: &Inst) -> bool {
        let moves: Vec<&Move> = match &inst.kind {
            InstKind::ParallelCopy(ms) => ms.iter().collect(),
            InstKind::Spill(m) | InstKind::Reload(m) => vec![m],
            _ => return false,
        };
        moves.iter().all(|m| {
            let reg = if m.src.is_reg() { m.src } else { m.dst };
            let same_class =
                !(m.src.is_reg() && m.dst.is_reg()) || m.src.reg_class() == m.dst.reg_class();
            same_class && self.family(m.value, reg) != Family::Pred
        })
    }

    /// Whether an artefact moves part of a wide element.
    pub(super) fn is_partial(&self, inst: &Inst) -> bool {
        let moves: Vec<&Move> = match &inst.kind {
            InstKind::ParallelCopy(ms) => ms.iter().collect(),
            InstKind::Spill(m) | InstKind::Reload(m) => vec![m],
            _ => Vec::new(),
        };
        moves.iter().any(|m| {
            let reg = if m.src.is_reg() { m.src } else { m.dst };
            let k = self.family(m.value, reg).units();
            let misaligned = |l: Location| match l {
                Location::Reg { first, len, .. } => first % k != 0 || len % k != 0,
                Location::Slot { len, .. } => len % k != 0,
                Location::Lane { .. } => false,
            };
            k > 1 && (misaligned(m.src) || misaligned(m.dst))
        })
    }

    /// Writes a run of copies, spills and reloads at the level of 32-bit pieces.
    pub(super) fn unit_run(&mut self, run: &[Inst]) -> Result<(), ExportError> {
        let mut regs: BTreeMap<u16, Piece> = BTreeMap::new();
        let mut slots: BTreeMap<u32, Piece> = BTreeMap::new();
        for inst in run {
            let moves: Vec<Move> = match &inst.kind {
                InstKind::ParallelCopy(ms) => ms.clone(),
                InstKind::Spill(m) | InstKind::Reload(m) => vec![*m],
                _ => return err(self.alloc, "an unexpected instruction among moves"),
            };
            let mut writes = Vec::new();
            for m in &moves {
                let len = m.dst.len();
                for i in 0..len {
                    let piece = self.piece_at(&regs, &slots, m, i)?;
                    writes.push((m.dst, i, piece));
                }
            }
            for (dst, i, piece) in writes {
                match dst {
                    Location::Reg { first, .. } => {
                        regs.insert(first + i, piece);
                    }
                    Location::Slot { first, .. } => {
                        slots.insert(first + u32::from(i), piece);
                    }
                    Location::Lane { .. } => return err(self.alloc, "a move to lanes"),
                }
            }
        }
        let temps = self.read_pieces(regs.values().chain(slots.values()))?;
        for (&word, piece) in &slots {
            self.spill_words = self.spill_words.max(word + 1);
            let t = &temps[&piece.token];
            let bits = piece_bits(piece.family);
            self.line(&format!("st.local.b{bits} [{SPILL}+{}], {t};", 4 * word));
        }
        self.write_registers(&regs, &temps);
        Ok(())
    }

    /// What unit `i` of the destination of `m` receives.
    fn piece_at(
        &self,
        regs: &BTreeMap<u16, Piece>,
        slots: &BTreeMap<u32, Piece>,
        m: &Move,
        i: u16,
    ) -> Result<Piece, ExportError> {
        let reg = if m.src.is_reg() { m.src } else { m.dst };
        let family = self.family(m.value, reg);
        if family == Family::Pred
            || m.src.reg_class() != m.dst.reg_class() && m.src.is_reg() && m.dst.is_reg()
        {
            return err(
                self.alloc,
                "a predicate among moves of part of a wide register",
            );
        }
        let k = family.units();
        Ok(match m.src {
            Location::Reg { first, .. } => {
                let u = first + i;
                regs.get(&u).copied().unwrap_or(Piece {
                    token: Token::Reg(u),
                    value: m.value,
                    family,
                    part: u % k,
                })
            }
            Location::Slot { first, .. } => {
                let w = first + u32::from(i);
                let part = match m.dst {
                    Location::Reg { first, .. } => (first + i) % k,
                    _ => i % k,
                };
                slots.get(&w).copied().unwrap_or(Piece {
                    token: Token::Slot(w),
                    value: m.value,
                    family,
                    part,
                })
            }
            Location::Lane { .. } => return err(self.alloc, "a move from lanes"),
        })
    }

    /// Reads every pre-run piece the final state needs into a temporary.
    fn read_pieces<'p>(
        &mut self,
        pieces: impl Iterator<Item = &'p Piece>,
    ) -> Result<BTreeMap<Token, String>, ExportError> {
        let mut temps = BTreeMap::new();
        for p in pieces {
            if temps.contains_key(&p.token) {
                continue;
            }
            match p.token {
                Token::Reg(u) if self.narrow.contains_key(&u) => {
                    let t = self.temp(Family::B32);
                    let name = self.name(Family::B32, u);
                    self.line(&format!("mov.b32 {t}, {name};"));
                    temps.insert(p.token, t);
                }
                Token::Reg(u) if p.family.units() > 1 => {
                    let k = p.family.units();
                    let base = u - u % k;
                    let halves: Vec<String> = (0..k).map(|_| self.temp(Family::B32)).collect();
                    let wide = self.name(p.family, base);
                    self.line(&format!(
                        "mov.b{} {{{}}}, {wide};",
                        p.family.bits(),
                        halves.join(", ")
                    ));
                    for (j, h) in halves.into_iter().enumerate() {
                        temps.insert(Token::Reg(base + j as u16), h);
                    }
                }
                Token::Reg(u) => {
                    let t = self.temp(p.family);
                    let name = self.name(p.family, u);
                    self.line(&format!("mov.b{} {t}, {name};", p.family.bits()));
                    temps.insert(p.token, t);
                }
                Token::Slot(w) => {
                    let piece_family = if p.family.units() > 1 {
                        Family::B32
                    } else {
                        p.family
                    };
                    let t = self.temp(piece_family);
                    let bits = piece_bits(p.family);
                    self.line(&format!("ld.local.b{bits} {t}, [{SPILL}+{}];", 4 * w));
                    temps.insert(p.token, t);
                }
            }
        }
        Ok(temps)
    }

    /// Gives every register the run writes its final content: wide elements whose pieces
    /// are all here (or left in 32-bit registers by an earlier run) are packed, pieces of
    /// elements still incomplete wait in their unit's 32-bit register.
    fn write_registers(&mut self, regs: &BTreeMap<u16, Piece>, temps: &BTreeMap<Token, String>) {
        let mut done = Vec::new();
        for (&u, p) in regs {
            if done.contains(&u) {
                continue;
            }
            let k = p.family.units();
            if k == 1 {
                self.narrow.remove(&u);
                if p.token != Token::Reg(u) {
                    let name = self.name(p.family, u);
                    self.line(&format!(
                        "mov.b{} {name}, {};",
                        p.family.bits(),
                        temps[&p.token]
                    ));
                }
                continue;
            }
            let base = u - u % k;
            let sources: Option<Vec<String>> = (base..base + k)
                .map(|x| self.piece_source(x, x - base, p.value, regs, temps))
                .collect();
            match sources {
                Some(names) => {
                    let wide = self.name(p.family, base);
                    self.line(&format!(
                        "mov.b{} {wide}, {{{}}};",
                        p.family.bits(),
                        names.join(", ")
                    ));
                    for x in base..base + k {
                        self.narrow.remove(&x);
                    }
                    done.extend(base..base + k);
                }
                None => {
                    let name = self.name(Family::B32, u);
                    self.line(&format!("mov.b32 {name}, {};", temps[&p.token]));
                    self.narrow.insert(u, (p.value, p.part));
                }
            }
        }
    }

    /// Where part `part` of `value` for unit `x` comes from: this run's piece, or what an
    /// earlier run left in `x`'s 32-bit register.
    fn piece_source(
        &mut self,
        x: u16,
        part: u16,
        value: Value,
        regs: &BTreeMap<u16, Piece>,
        temps: &BTreeMap<Token, String>,
    ) -> Option<String> {
        match regs.get(&x) {
            Some(q) => (q.value == value && q.part == part).then(|| temps[&q.token].clone()),
            None => {
                (self.narrow.get(&x) == Some(&(value, part))).then(|| self.name(Family::B32, x))
            }
        }
    }
}

/// Bits of one piece of a family: a 32-bit half of a wide element, else the element.
fn piece_bits(f: Family) -> u16 {
    if f.units() > 1 {
        32
    } else {
        f.bits().max(8)
    }
}
