//! The coloured ranges written back as an allocated function: every operand gets its
//! range's register; reloads before the instructions that read spilled values, stores
//! right after their definitions; one parallel copy before an instruction moves operands
//! into their fixed registers and tied operands into their definition's register, one
//! after it moves fixed definitions to their own registers; at the end of a block that
//! jumps to phis, spilled arguments are reloaded, memory phis stored, and the other phis
//! receive their arguments by one parallel copy. Each spilled value has slots of its own.

use super::ranges::{fixed_read, free_tie, Model};
use crate::analysis::Analysis;
use crate::program::{
    Block, BlockData, Function, Inst, InstKind, Location, Move, Op, Operand, Pos, Terminator, Value,
};
use std::collections::{BTreeMap, BTreeSet};

pub fn rewrite(
    f: &Function,
    a: &Analysis,
    model: &Model,
    loc: &[Option<u16>],
    spilled: &BTreeSet<Value>,
) -> Function {
    let mut next = 0u32;
    let slots: BTreeMap<Value, u32> = spilled
        .iter()
        .map(|&v| {
            let first = next;
            next += u32::from(f.value(v).size);
            (v, first)
        })
        .collect();
    let w = Writer {
        f,
        a,
        model,
        loc,
        slots,
    };
    let mut g = f.clone();
    for b in f.block_ids() {
        g.blocks[b.index()] = w.block(b);
    }
    g
}

struct Writer<'a> {
    f: &'a Function,
    a: &'a Analysis,
    model: &'a Model,
    loc: &'a [Option<u16>],
    slots: BTreeMap<Value, u32>,
}

impl Writer<'_> {
    fn reg(&self, r: u32) -> Location {
        let range = &self.model.ranges[r as usize];
        Location::Reg {
            class: range.class,
            first: self.loc[r as usize].unwrap_or(0),
            len: range.size,
        }
    }

    fn slot(&self, v: Value) -> Location {
        Location::Slot {
            first: self.slots.get(&v).copied().unwrap_or(0),
            len: self.f.value(v).size,
        }
    }

    /// Where `v` is at `point` of `b`.
    fn at(&self, b: Block, point: u32, v: Value) -> Location {
        self.reg(self.model.range_at(b, point, v))
    }

    fn block(&self, b: Block) -> BlockData {
        let src = self.f.block(b);
        let mut out = src.clone();
        out.insts.clear();
        for phi in &mut out.phis {
            let v = phi.def.value;
            phi.def.loc = Some(if self.model.ranges[v.index()].in_memory {
                self.slot(v)
            } else {
                self.reg(v.0)
            });
        }
        for (i, inst) in src.insts.iter().enumerate() {
            match inst.op() {
                Some(op) => self.instruction(b, i as u32, op, inst, &mut out.insts),
                None => out.insts.push(inst.clone()),
            }
        }
        self.end(b, &mut out);
        out
    }

    /// One reload per spilled value read at `point`, in operand order.
    fn reloads(
        &self,
        b: Block,
        point: u32,
        values: impl Iterator<Item = Value>,
        out: &mut Vec<Inst>,
        pos: Pos,
    ) {
        let mut seen = BTreeSet::new();
        for v in values {
            if self.slots.contains_key(&v) && seen.insert(v) {
                let m = Move {
                    dst: self.at(b, point, v),
                    src: self.slot(v),
                    value: v,
                };
                out.push(Inst {
                    kind: InstKind::Reload(m),
                    pos,
                });
            }
        }
    }

    fn instruction(&self, b: Block, i: u32, op: &Op, inst: &Inst, out: &mut Vec<Inst>) {
        let pos = inst.pos;
        self.reloads(b, i, op.uses().map(|u| u.value), out, pos);
        let written: Vec<Location> = op
            .defs
            .iter()
            .map(|d| d.fixed.unwrap_or_else(|| self.reg(d.value.0)))
            .collect();
        let here = |v: Value| Ok::<_, std::convert::Infallible>(self.at(b, i, v));
        let Ok((new, before)) = with_locations(op, &written, here);
        push_copy(before, out, pos);
        out.push(Inst {
            kind: InstKind::Op(new),
            pos,
        });
        let after: Vec<Move> = op
            .defs
            .iter()
            .zip(&written)
            .filter(|(d, w)| !self.a.liveness.is_dead(d.value) && **w != self.reg(d.value.0))
            .map(|(d, w)| Move {
                dst: self.reg(d.value.0),
                src: *w,
                value: d.value,
            })
            .collect();
        push_copy(after, out, pos);
        for d in op.defs.iter().filter(|d| self.slots.contains_key(&d.value)) {
            let m = Move {
                dst: self.slot(d.value),
                src: self.reg(d.value.0),
                value: d.value,
            };
            out.push(Inst {
                kind: InstKind::Spill(m),
                pos,
            });
        }
    }

    /// Reloads, memory-phi stores and phi copies of the outgoing edge, fixed terminator
    /// operands, and the terminator's locations.
    fn end(&self, b: Block, out: &mut BlockData) {
        let n = self.f.block(b).insts.len() as u32;
        let pos = out.term.pos();
        let args: Vec<(Value, Value)> = match out.term {
            Terminator::Jump { target, .. } => self
                .f
                .block(target)
                .phis
                .iter()
                .flat_map(|p| {
                    p.args
                        .iter()
                        .filter(|a| a.block == b)
                        .map(|a| (p.def.value, a.value))
                })
                .collect(),
            _ => Vec::new(),
        };
        let read = out
            .term
            .uses()
            .iter()
            .map(|u| u.value)
            .chain(args.iter().map(|(_, a)| *a));
        let mut insts = Vec::new();
        self.reloads(b, n, read.collect::<Vec<_>>().into_iter(), &mut insts, pos);
        let mut copies = Vec::new();
        for &(phi, arg) in &args {
            let src = self.at(b, n, arg);
            if self.model.ranges[phi.index()].in_memory {
                let m = Move {
                    dst: self.slot(phi),
                    src,
                    value: arg,
                };
                insts.push(Inst {
                    kind: InstKind::Spill(m),
                    pos,
                });
            } else if src != self.reg(phi.0) {
                copies.push(Move {
                    dst: self.reg(phi.0),
                    src,
                    value: arg,
                });
            }
        }
        for u in out.term.uses_mut() {
            let here = self.at(b, n, u.value);
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
        out.insts.extend(insts);
    }
}

/// One parallel copy of `moves`, unless there are none; a destination written twice
/// (one value copied to the same place for two operands) is written once.
/// `op` with its locations: each operand where `here` says its value is, or, when the
/// operand is fixed or tied to a definition, in that register, with the copy that puts
/// it there (returned, to run before `op`); each definition in `written`.
pub fn with_locations<E>(
    op: &Op,
    written: &[Location],
    mut here: impl FnMut(Value) -> Result<Location, E>,
) -> Result<(Op, Vec<Move>), E> {
    let mut new = op.clone();
    let mut before = Vec::new();
    for (k, operand) in new.operands.iter_mut().enumerate() {
        let Operand::Value(u) = operand else { continue };
        let current = here(u.value)?;
        let need = fixed_read(op, k)
            .or_else(|| free_tie(op, k).map(|d| written[d]))
            .unwrap_or(current);
        if need != current {
            before.push(Move {
                dst: need,
                src: current,
                value: u.value,
            });
        }
        u.loc = Some(need);
    }
    for (d, loc) in new.defs.iter_mut().zip(written) {
        d.loc = Some(*loc);
    }
    Ok((new, before))
}

pub fn push_copy(mut moves: Vec<Move>, out: &mut Vec<Inst>, pos: Pos) {
    let mut seen = BTreeSet::new();
    moves.retain(|m| seen.insert(m.dst));
    if !moves.is_empty() {
        out.push(Inst {
            kind: InstKind::ParallelCopy(moves),
            pos,
        });
    }
}
