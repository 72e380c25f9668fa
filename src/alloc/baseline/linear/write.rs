//! The allocated function from the placed intervals: every operand reads its value where
//! the interval covering that point put it; a value that is ever in memory is stored
//! once, right after its definition (Wimmer & Mössenböck's spill at the definition), so
//! going to memory later needs no store; where a part of a value starts in a register
//! inside a block, one parallel copy (register to register) and the reloads (slot to
//! register) before the instruction or terminator move it there; fixed and tied operands
//! are copied into place around their instruction as in the other baseline
//! ([`crate::alloc::baseline::rewrite`]). Data flow across edges is resolved as in
//! Wimmer & Franz (CGO 2010, §5): per edge, each phi receives its argument and each value
//! live into the target whose location differs on the two sides is moved, by one
//! parallel copy and the reloads after it, at the end of the source when it has one
//! successor, else at the top of the target (every edge has one of the two places after
//! [`crate::alloc::prepare`]).

use super::intervals::{Intervals, Loc, Numbering};
use crate::alloc::baseline::rewrite::{push_copy, with_locations};
use crate::analysis::Analysis;
use crate::program::{Block, BlockData, Function, Inst, InstKind, Location, Move, Op, Pos, Value};
use crate::target::Target;
use std::collections::BTreeMap;

/// Writes `f` with the locations of `iv`; an error names what the scan left inconsistent.
pub fn write(
    f: &Function,
    target: &Target,
    a: &Analysis,
    numbering: &Numbering,
    iv: &Intervals,
) -> Result<Function, String> {
    let mut parts: Vec<Vec<u32>> = vec![Vec::new(); f.values.len()];
    for (i, it) in iv.list.iter().enumerate() {
        if !it.ranges.is_empty() {
            parts[it.value.index()].push(i as u32);
        }
    }
    for list in &mut parts {
        list.sort_by_key(|&i| iv.list[i as usize].start());
    }
    let mut next = 0u32;
    let mut slots = BTreeMap::new();
    for v in f.value_ids() {
        if parts[v.index()]
            .iter()
            .any(|&i| iv.list[i as usize].loc == Some(Loc::Stack))
        {
            slots.insert(v, next);
            next += u32::from(f.value(v).size);
        }
    }
    let mut starting: BTreeMap<u32, Vec<(Value, u32)>> = BTreeMap::new();
    for (v, list) in f.value_ids().zip(&parts) {
        for &i in list.iter().skip(1) {
            let it = &iv.list[i as usize];
            if it.loc != Some(Loc::Stack) {
                starting.entry(it.start()).or_default().push((v, i));
            }
        }
    }
    let w = Writer {
        f,
        target,
        a,
        n: numbering,
        iv,
        parts,
        starting,
        slots,
    };
    let mut g = f.clone();
    for b in f.block_ids() {
        g.blocks[b.index()] = w.block(b)?;
    }
    Ok(g)
}

struct Writer<'a> {
    f: &'a Function,
    target: &'a Target,
    a: &'a Analysis,
    n: &'a Numbering,
    iv: &'a Intervals,
    /// Per value, its intervals by start.
    parts: Vec<Vec<u32>>,
    /// Per point, the later parts of values that start there in a register.
    starting: BTreeMap<u32, Vec<(Value, u32)>>,
    slots: BTreeMap<Value, u32>,
}

/// Moves into registers at one place: a parallel copy, then reloads.
#[derive(Default)]
struct Moves {
    copies: Vec<Move>,
    reloads: Vec<Move>,
}

impl Moves {
    fn add(&mut self, m: Move) {
        if m.src == m.dst {
            return;
        }
        match m.src {
            Location::Slot { .. } => self.reloads.push(m),
            _ => self.copies.push(m),
        }
    }

    fn emit(self, out: &mut Vec<Inst>, pos: Pos) {
        push_copy(self.copies, out, pos);
        for m in self.reloads {
            out.push(Inst {
                kind: InstKind::Reload(m),
                pos,
            });
        }
    }
}

impl Writer<'_> {
    fn location(&self, v: Value, loc: Loc) -> Location {
        let data = self.f.value(v);
        match loc {
            Loc::Reg(first) => Location::Reg {
                class: data.class,
                first,
                len: data.size,
            },
            Loc::Stack => Location::Slot {
                first: self.slots.get(&v).copied().unwrap_or(0),
                len: data.size,
            },
        }
    }

    /// The interval of `v` covering point `p`.
    fn part_at(&self, v: Value, p: u32) -> Result<u32, String> {
        let parts = &self.parts[v.index()];
        let k = parts.partition_point(|&i| self.iv.list[i as usize].start() <= p);
        k.checked_sub(1)
            .map(|k| parts[k])
            .filter(|&i| self.iv.list[i as usize].covers(p))
            .ok_or_else(|| format!("`%{}` has no interval at point {p}", self.f.value(v).name))
    }

    /// Where `v` is at point `p`.
    fn at(&self, v: Value, p: u32) -> Result<Location, String> {
        let i = self.part_at(v, p)?;
        let loc = self.iv.list[i as usize]
            .loc
            .ok_or_else(|| format!("`%{}` was not placed", self.f.value(v).name))?;
        Ok(self.location(v, loc))
    }

    fn reg_at(&self, v: Value, p: u32) -> Result<Location, String> {
        let loc = self.at(v, p)?;
        match loc {
            Location::Reg { .. } => Ok(loc),
            _ => Err(format!(
                "`%{}` is not in a register at point {p}",
                self.f.value(v).name
            )),
        }
    }

    /// The moves into the parts of values that start in a register at `p` inside a block.
    fn moves_at(&self, p: u32) -> Result<Moves, String> {
        let mut moves = Moves::default();
        for &(v, _) in self.starting.get(&p).into_iter().flatten() {
            moves.add(Move {
                dst: self.reg_at(v, p)?,
                src: self.at(v, p - 1)?,
                value: v,
            });
        }
        Ok(moves)
    }

    /// The moves of edge `p → s`: phi arguments, and values whose location changes.
    fn edge(&self, p: Block, s: Block) -> Result<Moves, String> {
        let (exit, entry) = (self.n.exit(p), self.n.entry(s));
        let mut moves = Moves::default();
        for phi in &self.f.block(s).phis {
            for arg in phi.args.iter().filter(|arg| arg.block == p) {
                moves.add(Move {
                    dst: self.reg_at(phi.def.value, entry)?,
                    src: self.at(arg.value, exit)?,
                    value: arg.value,
                });
            }
        }
        for &v in self.a.liveness.live_in(s) {
            if self.target.class(self.f.value(v).class).uniform {
                continue;
            }
            let dst = self.at(v, entry)?;
            if matches!(dst, Location::Reg { .. }) {
                moves.add(Move {
                    dst,
                    src: self.at(v, exit)?,
                    value: v,
                });
            }
        }
        Ok(moves)
    }

    fn block(&self, b: Block) -> Result<BlockData, String> {
        let src = self.f.block(b);
        let mut out = src.clone();
        out.insts.clear();
        let top = src.insts.first().map_or(src.term.pos(), |i| i.pos);
        let preds = self.a.cfg.preds(b);
        for &p in preds.iter().filter(|&&p| self.a.cfg.succs(p).len() > 1) {
            if preds.len() > 1 {
                return Err(format!(
                    "the edge into `{}` has no place for moves",
                    src.name
                ));
            }
            self.edge(p, b)?.emit(&mut out.insts, top);
        }
        let entry = self.n.entry(b);
        for phi in &mut out.phis {
            let v = phi.def.value;
            phi.def.loc = Some(self.reg_at(v, entry)?);
            self.store(v, entry, &mut out.insts, phi.pos)?;
        }
        for (i, inst) in src.insts.iter().enumerate() {
            let before = self.n.before(b, i);
            self.moves_at(before)?.emit(&mut out.insts, inst.pos);
            match inst.op() {
                Some(op) => self.instruction(op, before, inst.pos, &mut out.insts)?,
                None => out.insts.push(inst.clone()),
            }
        }
        self.end(b, &mut out)?;
        Ok(out)
    }

    /// A value with a slot is stored once, where it is defined.
    fn store(&self, v: Value, p: u32, out: &mut Vec<Inst>, pos: Pos) -> Result<(), String> {
        if let Some(&first) = self.slots.get(&v) {
            let m = Move {
                dst: Location::Slot {
                    first,
                    len: self.f.value(v).size,
                },
                src: self.reg_at(v, p)?,
                value: v,
            };
            out.push(Inst {
                kind: InstKind::Spill(m),
                pos,
            });
        }
        Ok(())
    }

    /// Copies into fixed and tied operands before `op`, `op` with its locations, copies
    /// of fixed definitions to their registers and stores after it.
    fn instruction(
        &self,
        op: &Op,
        before: u32,
        pos: Pos,
        out: &mut Vec<Inst>,
    ) -> Result<(), String> {
        let after = before + 1;
        let written = op
            .defs
            .iter()
            .map(|d| d.fixed.map_or_else(|| self.reg_at(d.value, after), Ok))
            .collect::<Result<Vec<Location>, String>>()?;
        let (new, copies) = with_locations(op, &written, |v| self.reg_at(v, before))?;
        push_copy(copies, out, pos);
        out.push(Inst {
            kind: InstKind::Op(new),
            pos,
        });
        let mut after_copies = Vec::new();
        for (d, &w) in op.defs.iter().zip(&written) {
            let own = self.reg_at(d.value, after)?;
            if !self.a.liveness.is_dead(d.value) && w != own {
                after_copies.push(Move {
                    dst: own,
                    src: w,
                    value: d.value,
                });
            }
        }
        push_copy(after_copies, out, pos);
        for d in &op.defs {
            self.store(d.value, after, out, pos)?;
        }
        Ok(())
    }

    /// Moves before the terminator, copies into its fixed operands, its locations, and
    /// the moves of the outgoing edge when it is the only one.
    fn end(&self, b: Block, out: &mut BlockData) -> Result<(), String> {
        let exit = self.n.exit(b);
        let pos = out.term.pos();
        let mut insts = Vec::new();
        self.moves_at(exit)?.emit(&mut insts, pos);
        let mut copies = Vec::new();
        for u in out.term.uses_mut() {
            let here = self.reg_at(u.value, exit)?;
            let need = u.fixed.unwrap_or(here);
            if need != here {
                copies.push(Move {
                    dst: need,
                    src: here,
                    value: u.value,
                });
            }
            u.loc = Some(need);
        }
        push_copy(copies, &mut insts, pos);
        if let [s] = self.a.cfg.succs(b)[..] {
            self.edge(b, s)?.emit(&mut insts, pos);
        }
        out.insts.extend(insts);
        Ok(())
    }
}
