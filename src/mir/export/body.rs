//! One machine function written back: its header adjusted and its body rewritten from the
//! allocated program.
//!
//! The allocated function keeps the importer's block order (blocks the allocator added on
//! split edges come after the originals) and every original operation at the source
//! position of its MIR instruction, so each operation finds its line by position and
//! opcode; the operand positions of its uses and definitions find their registers. What
//! the importer or the allocator added is written from the program alone: tuple splits
//! and `REG_SEQUENCE` as part copies (sequentialised as a parallel copy), tie and PHI
//! copies, `IMPLICIT_DEF`s, copies, swaps, spills, reloads and rematerialisations.

use super::control::{self, Lowered};
use super::line::{blocks_named, rename_blocks, rewrite, RegOperand};
use super::liveins::{live_in, Unit};
use super::Emitted;
use crate::alloc::parallel_copy::sequentialise;
use crate::mir::ast::{FunctionAst, InstAst};
use crate::mir::classes::class_of;
use crate::mir::parts::units;
use crate::mir::MirError;
use crate::program::*;
use crate::target::{ClassId, Target};
use std::collections::{BTreeSet, HashMap};

/// Where a machine function's text lies: line indices of its `name:`, its `body:` and
/// the line after its body.
pub struct FunctionSpan {
    pub header_start: usize,
    body: usize,
    pub end: usize,
}

impl FunctionSpan {
    pub fn find(lines: &[&str], name_line: usize) -> Option<FunctionSpan> {
        let body = (name_line..lines.len()).find(|&i| lines[i].starts_with("body:"))?;
        let end = (body + 1..lines.len())
            .find(|&i| !lines[i].is_empty() && !lines[i].starts_with(' '))
            .unwrap_or(lines.len());
        Some(FunctionSpan {
            header_start: name_line,
            body,
            end,
        })
    }
}

/// The function's text from its `name:` line to the end of its body.
pub fn write_function(
    lines: &[&str],
    span: &FunctionSpan,
    ast: &FunctionAst,
    f: &Function,
    target: &Target,
    wave: u16,
) -> Result<String, String> {
    let original_blocks = ast.blocks.len();
    if f.blocks.len() < original_blocks
        || f.blocks[..original_blocks]
            .iter()
            .zip(&ast.blocks)
            .any(|(b, a)| b.pos != a.pos)
    {
        return Err("the allocated blocks do not follow the source's".into());
    }
    let header = &lines[span.header_start..span.body];
    let stack_ptr = header
        .iter()
        .find_map(|l| l.trim().strip_prefix("stackPtrOffsetReg:"))
        .map_or("$sgpr32".to_string(), |r| {
            r.trim().trim_matches('\'').to_string()
        });
    let mut w = Writer::new(lines, ast, f, target, wave, stack_ptr);
    let blocks = (0..f.blocks.len())
        .map(|b| w.block(b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut out = w.header(header)?;
    out.push_str(lines[span.body]);
    out.push('\n');
    out.push_str(&w.body_text(blocks));
    Ok(out)
}

/// A block as written, before its live-ins are known.
struct OutBlock {
    header: String,
    successors: Option<String>,
    succs: Vec<usize>,
    insts: Vec<Emitted>,
}

struct Writer<'a> {
    lines: &'a [&'a str],
    ast: &'a FunctionAst,
    f: &'a Function,
    target: &'a Target,
    wave: u16,
    stack_ptr: String,
    /// Source instructions by position.
    insts_at: HashMap<Pos, &'a InstAst>,
    /// Each value's defining operation (for rematerialisation).
    def_of: HashMap<Value, &'a Op>,
    def_pos: HashMap<Value, Pos>,
    /// Spill-slot units used (one 4-byte stack object each).
    slots: BTreeSet<u32>,
    /// A slot unit no allocated spill uses, for a cycle of SGPR or AGPR part copies.
    temp_slot: u32,
    sgpr_spills: bool,
    vgpr_spills: bool,
}

fn err(pos: Pos, message: impl Into<String>) -> MirError {
    MirError {
        pos,
        message: message.into(),
    }
}

impl<'a> Writer<'a> {
    fn new(
        lines: &'a [&'a str],
        ast: &'a FunctionAst,
        f: &'a Function,
        target: &'a Target,
        wave: u16,
        stack_ptr: String,
    ) -> Writer<'a> {
        let insts_at = ast
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .map(|i| (i.pos, i))
            .collect();
        let mut def_of = HashMap::new();
        let mut def_pos = HashMap::new();
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            if let InstKind::Op(op) = &inst.kind {
                for d in &op.defs {
                    def_of.insert(d.value, op);
                    def_pos.insert(d.value, inst.pos);
                }
            }
        }
        Writer {
            lines,
            ast,
            f,
            target,
            wave,
            stack_ptr,
            insts_at,
            def_of,
            def_pos,
            slots: BTreeSet::new(),
            temp_slot: first_free_slot(f),
            sgpr_spills: false,
            vgpr_spills: false,
        }
    }

    /// The MIR number of block `b` of the allocated function.
    fn number(&self, b: Block) -> u32 {
        let n = self.ast.blocks.len();
        match self.ast.blocks.get(b.index()) {
            Some(a) => a.number,
            None => {
                let last = self.ast.blocks.iter().map(|a| a.number).max().unwrap_or(0);
                last + 1 + (b.index() - n) as u32
            }
        }
    }

    fn line(&self, pos: Pos) -> &'a str {
        self.lines[pos.line as usize - 1]
    }

    fn block(&mut self, index: usize) -> Result<OutBlock, MirError> {
        let data = &self.f.blocks[index];
        let succs = successors(&data.term);
        let mut insts = Vec::new();
        let mut branches: Vec<String> = Vec::new();
        for inst in &data.insts {
            self.inst(inst, &mut insts, &mut branches)?;
        }
        let Some(ast) = self.ast.blocks.get(index) else {
            let target = succs
                .first()
                .ok_or_else(|| err(data.pos, "an added block without a successor"))?;
            let number = self.number(Block(*target as u32));
            insts.push(text(format!("S_BRANCH %bb.{number}")));
            return Ok(OutBlock {
                header: format!("bb.{}:", self.number(Block(index as u32))),
                successors: Some(format!("successors: %bb.{number}")),
                succs,
                insts,
            });
        };
        let renames = self.renames(index);
        let rename = |b: u32| renames.get(&b).copied().unwrap_or(b);
        let mut terms: Vec<String> = Vec::new();
        for l in branches {
            terms.push(rename_blocks(&l, 0, &rename)?);
        }
        let first_term = ast.insts.len()
            - ast
                .insts
                .iter()
                .rev()
                .take_while(|i| super::super::lower::is_terminator(&i.opcode))
                .count();
        for t in &ast.insts[first_term..] {
            if !control::is_lowered(&t.opcode) {
                let l = self.line(t.pos).trim();
                terms.push(rename_blocks(l, t.pos.line, &rename)?);
            }
        }
        let named: BTreeSet<u32> = terms
            .iter()
            .map(|t| blocks_named(t, 0))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        let ends = matches!(data.term, Terminator::Ret { .. });
        let falls_to = (index + 1 < self.ast.blocks.len()).then_some(index + 1);
        for &s in &succs {
            let number = self.number(Block(s as u32));
            if !ends && !named.contains(&number) && Some(s) != falls_to {
                terms.push(format!("S_BRANCH %bb.{number}"));
            }
        }
        insts.extend(terms.into_iter().map(text));
        let successors = self.successors_line(ast.pos, &rename)?;
        Ok(OutBlock {
            header: self.line(ast.pos).trim().to_string(),
            successors,
            succs,
            insts,
        })
    }

    /// The original `successors:` line of a block, renamed.
    fn successors_line(
        &self,
        block_pos: Pos,
        rename: &dyn Fn(u32) -> u32,
    ) -> Result<Option<String>, MirError> {
        let start = block_pos.line as usize;
        let line = self.lines[start..]
            .iter()
            .take_while(|l| !l.trim().is_empty() && !l.trim().starts_with("bb."))
            .zip(start + 1..)
            .find(|(l, _)| l.trim().starts_with("successors:"));
        match line {
            Some((l, n)) => Ok(Some(rename_blocks(l.trim(), n as u32, rename)?)),
            None => Ok(None),
        }
    }

    /// MIR block numbers of the source's branch targets that the allocation redirected
    /// to added blocks.
    fn renames(&self, index: usize) -> HashMap<u32, u32> {
        let original = self.original_targets(index);
        let now = successors(&self.f.blocks[index].term);
        original
            .into_iter()
            .zip(now)
            .filter(|(o, n)| o != n)
            .map(|(o, n)| (self.number(Block(o as u32)), self.number(Block(n as u32))))
            .collect()
    }

    /// The successors the block had before allocation: an added block stands for its
    /// single successor.
    fn original_targets(&self, index: usize) -> Vec<usize> {
        let n = self.ast.blocks.len();
        successors(&self.f.blocks[index].term)
            .into_iter()
            .map(|s| match successors(&self.f.blocks[s].term).as_slice() {
                [next] if s >= n => *next,
                _ => s,
            })
            .collect()
    }

    fn inst(
        &mut self,
        inst: &Inst,
        out: &mut Vec<Emitted>,
        branches: &mut Vec<String>,
    ) -> Result<(), MirError> {
        match &inst.kind {
            InstKind::Op(op) => self.op(inst.pos, op, out, branches),
            InstKind::ParallelCopy(moves) => self.parallel(moves, inst.pos, out),
            InstKind::Swap(a, b) => self.swap(*a, *b, inst.pos, out),
            InstKind::Spill(m) | InstKind::Reload(m) => self.moved(m.dst, m.src, inst.pos, out),
            InstKind::Remat { dst, value, uses } => self.remat(*dst, *value, uses, inst.pos, out),
        }
    }

    fn op(
        &mut self,
        pos: Pos,
        op: &Op,
        out: &mut Vec<Emitted>,
        branches: &mut Vec<String>,
    ) -> Result<(), MirError> {
        let source = self
            .insts_at
            .get(&pos)
            .copied()
            .filter(|i| i.opcode == op.opcode);
        match (source, op.opcode.as_str()) {
            (Some(ast), opcode) if control::is_control(opcode) => {
                let Lowered { body, branch } = control::lower(ast, op, self.target, self.wave)?;
                out.extend(body);
                branches.extend(branch);
                Ok(())
            }
            (Some(ast), "REG_SEQUENCE") => self.reg_sequence(ast, op, out),
            (Some(ast), _) => {
                let e = self.rewritten(ast, &locations(op, None))?;
                if !is_identity_copy(&e) {
                    out.push(e);
                }
                Ok(())
            }
            (None, "SPLIT") => self.split(op, pos, out),
            (None, "IMPLICIT_DEF") => {
                for d in &op.defs {
                    self.implicit_def(loc_of(d.loc, pos)?, out)?;
                }
                Ok(())
            }
            (None, "COPY") => self.added_copy(op, pos, out),
            (_, opcode) => Err(err(pos, format!("no source instruction for `{opcode}`"))),
        }
    }

    /// A source instruction with its registers replaced: `locs` maps operand positions
    /// to the allocated locations.
    fn rewritten(&self, ast: &InstAst, locs: &HashMap<Pos, Location>) -> Result<Emitted, MirError> {
        let mut e = Emitted::default();
        let tied = tied_use(ast);
        let written = rewrite(self.line(ast.pos), ast.pos.line, &mut |r| {
            if let (true, Some((at, def))) = (r.undef, tied) {
                if at == r.pos {
                    let loc = locs
                        .get(&def)
                        .copied()
                        .ok_or_else(|| err(def, "a tied definition without a register"))?;
                    return Ok(format!("undef {}", self.name(loc, r.pos)?));
                }
            }
            if r.undef && !r.is_def {
                let loc = self.undef_register(r)?;
                return Ok(format!("undef {}", self.name(loc, r.pos)?));
            }
            let loc = locs
                .get(&r.pos)
                .copied()
                .ok_or_else(|| err(r.pos, format!("no register for `%{}`", r.id)))?;
            let loc = narrow(loc, r.sub.as_deref());
            if r.is_def {
                e.defs.extend(reg_units(loc));
            } else {
                e.uses.extend(reg_units(loc));
            }
            self.name(loc, r.pos)
        })?;
        e.text = rename_blocks(written.trim(), ast.pos.line, &|b| b)?;
        Ok(e)
    }

    /// A register of the operand's class and size for a read marked `undef`.
    fn undef_register(&self, r: &RegOperand) -> Result<Location, MirError> {
        let class = self
            .ast
            .classes
            .get(&r.id)
            .map(|(c, _)| c.clone())
            .or_else(|| r.class.clone())
            .ok_or_else(|| err(r.pos, format!("`%{}` has no register class", r.id)))?;
        let (class, size) = class_of(self.target, self.wave, &class).ok_or_else(|| {
            err(
                r.pos,
                format!("register class `{class}` has no counterpart"),
            )
        })?;
        let len = r
            .sub
            .as_deref()
            .and_then(units)
            .map_or(size, |(_, len)| len);
        Ok(Location::Reg {
            class,
            first: 0,
            len,
        })
    }

    /// The physical register name of a register location: `$vgpr4`, `$sgpr4_sgpr5`.
    fn name(&self, loc: Location, pos: Pos) -> Result<String, MirError> {
        register_name(self.target, loc)
            .ok_or_else(|| err(pos, format!("{loc:?} is not a register")))
    }

    fn reg_sequence(
        &mut self,
        ast: &InstAst,
        op: &Op,
        out: &mut Vec<Emitted>,
    ) -> Result<(), MirError> {
        let dst = loc_of(op.defs.first().and_then(|d| d.loc), ast.pos)?;
        let mut moves = Vec::new();
        for pair in ast.operands.chunks(2) {
            let [src, index] = pair else {
                return Err(err(ast.pos, "REG_SEQUENCE operands come in pairs"));
            };
            if src.flags.undef {
                continue;
            }
            let sub = self.subreg_index(index.pos)?;
            let (first, len) =
                units(&sub).ok_or_else(|| err(index.pos, format!("unsupported index `{sub}`")))?;
            let use_ = op
                .uses()
                .find(|u| u.pos == src.pos)
                .ok_or_else(|| err(src.pos, "no allocated operand"))?;
            let from = narrow(loc_of(use_.loc, src.pos)?, operand_sub(src));
            let to = slice(dst, first, len);
            if from != to {
                moves.push(Move {
                    dst: to,
                    src: from,
                    value: use_.value,
                });
            }
        }
        self.parallel(&moves, ast.pos, out)
    }

    /// The index named by a `%subreg.NAME` operand at `pos`.
    fn subreg_index(&self, pos: Pos) -> Result<String, MirError> {
        let rest = &self.line(pos)[pos.col as usize - 1..];
        rest.strip_prefix("%subreg.")
            .map(|r| {
                r.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
            .ok_or_else(|| err(pos, "expected `%subreg.NAME`"))
    }

    /// The importer's split of a tuple into its parts: one copy per part not in place.
    fn split(&mut self, op: &Op, pos: Pos, out: &mut Vec<Emitted>) -> Result<(), MirError> {
        let tuple = op
            .uses()
            .next()
            .ok_or_else(|| err(pos, "SPLIT without its tuple"))?;
        let whole = loc_of(tuple.loc, pos)?;
        let mut moves = Vec::new();
        for d in &op.defs {
            let name = &self.f.value(d.value).name;
            let (first, len) = name
                .split_once('.')
                .and_then(|(_, sub)| units(sub))
                .ok_or_else(|| err(pos, format!("part `%{name}` names no units")))?;
            let from = slice(whole, first, len);
            let to = loc_of(d.loc, pos)?;
            if from != to {
                moves.push(Move {
                    dst: to,
                    src: from,
                    value: d.value,
                });
            }
        }
        self.parallel(&moves, pos, out)
    }

    /// A copy the importer added (a tied operand's, a sub-register PHI argument's): it
    /// copies the units of its source operand.
    fn added_copy(&mut self, op: &Op, pos: Pos, out: &mut Vec<Emitted>) -> Result<(), MirError> {
        let (Some(d), Some(u)) = (op.defs.first(), op.uses().next()) else {
            return Err(err(pos, "a copy without source or destination"));
        };
        let sub = self.operand_sub_at(u.pos);
        let from = narrow(loc_of(u.loc, u.pos)?, sub.as_deref());
        let to = loc_of(d.loc, pos)?;
        if from.len() != to.len() {
            return Err(err(u.pos, "a copy between registers of different sizes"));
        }
        self.parallel(
            &[Move {
                dst: to,
                src: from,
                value: d.value,
            }],
            pos,
            out,
        )
    }

    /// The sub-register index written at an operand position, if any.
    fn operand_sub_at(&self, pos: Pos) -> Option<String> {
        let rest = self.line(pos).get(pos.col as usize - 1..)?;
        let word: String = rest
            .chars()
            .skip(1)
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        word.split_once('.').map(|(_, sub)| sub.to_string())
    }

    fn implicit_def(&self, loc: Location, out: &mut Vec<Emitted>) -> Result<(), MirError> {
        for u in reg_units(loc) {
            let one = unit_loc(u);
            out.push(Emitted {
                text: format!("{} = IMPLICIT_DEF", self.name(one, Pos::default())?),
                defs: vec![u],
                uses: Vec::new(),
            });
        }
        Ok(())
    }

    /// Register-to-register moves with parallel semantics, sequentialised (swaps for
    /// cycles of VGPRs, a scratch slot for others); moves to or from spill locations in
    /// their order.
    fn parallel(
        &mut self,
        moves: &[Move],
        pos: Pos,
        out: &mut Vec<Emitted>,
    ) -> Result<(), MirError> {
        if moves.iter().all(|m| m.dst.is_reg() && m.src.is_reg()) && moves.len() > 1 {
            for inst in sequentialise(moves, self.target, &|_, _| true, &|_| false, self.temp_slot)
            {
                let kind = Inst { kind: inst, pos };
                self.inst(&kind, out, &mut Vec::new())?;
            }
            return Ok(());
        }
        for m in moves {
            self.moved(m.dst, m.src, pos, out)?;
        }
        Ok(())
    }

    /// One move between any two locations, unit by unit.
    fn moved(
        &mut self,
        dst: Location,
        src: Location,
        pos: Pos,
        out: &mut Vec<Emitted>,
    ) -> Result<(), MirError> {
        if dst.len() != src.len() {
            return Err(err(pos, "a move between locations of different sizes"));
        }
        let n = dst.len();
        let backwards = matches!((dst, src), (Location::Reg { first: d, .. }, Location::Reg { first: s, .. }) if d > s);
        let order: Vec<u16> = if backwards {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for i in order {
            let e = self.unit_move(part(dst, i), part(src, i), pos)?;
            out.push(e);
        }
        Ok(())
    }

    /// A one-unit move.
    fn unit_move(&mut self, dst: Location, src: Location, pos: Pos) -> Result<Emitted, MirError> {
        match (dst, src) {
            (Location::Reg { .. }, Location::Reg { .. }) => Ok(Emitted {
                text: format!("{} = COPY {}", self.name(dst, pos)?, self.name(src, pos)?),
                defs: reg_units(dst),
                uses: reg_units(src),
            }),
            (Location::Slot { first, .. }, Location::Reg { class, .. }) => {
                self.note_spill(class);
                self.slots.insert(first);
                let reg = self.name(src, pos)?;
                let kind = self.spill_kind(class);
                let text = if kind == 'S' {
                    format!("SI_SPILL_S32_SAVE {reg}, %stack.{first}, implicit $exec, implicit {sp} :: (store (s32) into %stack.{first}, addrspace 5)", sp = self.stack_ptr)
                } else {
                    format!("SI_SPILL_{kind}32_SAVE {reg}, %stack.{first}, {sp}, 0, implicit $exec :: (store (s32) into %stack.{first}, addrspace 5)", sp = self.stack_ptr)
                };
                Ok(Emitted {
                    text,
                    defs: Vec::new(),
                    uses: reg_units(src),
                })
            }
            (Location::Reg { class, .. }, Location::Slot { first, .. }) => {
                self.slots.insert(first);
                let reg = self.name(dst, pos)?;
                let kind = self.spill_kind(class);
                let text = if kind == 'S' {
                    format!("{reg} = SI_SPILL_S32_RESTORE %stack.{first}, implicit $exec, implicit {sp} :: (load (s32) from %stack.{first}, addrspace 5)", sp = self.stack_ptr)
                } else {
                    format!("{reg} = SI_SPILL_{kind}32_RESTORE %stack.{first}, {sp}, 0, implicit $exec :: (load (s32) from %stack.{first}, addrspace 5)", sp = self.stack_ptr)
                };
                Ok(Emitted {
                    text,
                    defs: reg_units(dst),
                    uses: Vec::new(),
                })
            }
            (
                Location::Lane {
                    class, reg, first, ..
                },
                Location::Reg { class: from, .. },
            ) => {
                self.note_spill(from);
                let lane = Location::Reg {
                    class,
                    first: reg,
                    len: 1,
                };
                let name = self.name(lane, pos)?;
                Ok(Emitted {
                    text: format!(
                        "{name} = V_WRITELANE_B32 {}, {first}, {name}",
                        self.name(src, pos)?
                    ),
                    defs: reg_units(lane),
                    uses: [reg_units(src), reg_units(lane)].concat(),
                })
            }
            (
                Location::Reg { .. },
                Location::Lane {
                    class, reg, first, ..
                },
            ) => {
                let lane = Location::Reg {
                    class,
                    first: reg,
                    len: 1,
                };
                Ok(Emitted {
                    text: format!(
                        "{} = V_READLANE_B32 {}, {first}",
                        self.name(dst, pos)?,
                        self.name(lane, pos)?
                    ),
                    defs: reg_units(dst),
                    uses: reg_units(lane),
                })
            }
            _ => Err(err(pos, format!("unsupported move {src:?} -> {dst:?}"))),
        }
    }

    fn note_spill(&mut self, class: ClassId) {
        if self.target.class(class).uniform {
            self.sgpr_spills = true;
        } else {
            self.vgpr_spills = true;
        }
    }

    /// The letter of the spill pseudo for a class: `S`, `V` or `A`.
    fn spill_kind(&self, class: ClassId) -> char {
        match self.target.class(class).name.as_str() {
            "s" => 'S',
            "a" => 'A',
            _ => 'V',
        }
    }

    fn swap(
        &mut self,
        a: Location,
        b: Location,
        pos: Pos,
        out: &mut Vec<Emitted>,
    ) -> Result<(), MirError> {
        let (Location::Reg { class, .. }, Location::Reg { .. }) = (a, b) else {
            return Err(err(pos, "a swap of non-registers"));
        };
        if self.target.class(class).name != "v" || a.len() != b.len() {
            return Err(err(pos, "only VGPRs are swapped (V_SWAP_B32)"));
        }
        for i in 0..a.len() {
            let (x, y) = (part(a, i), part(b, i));
            let (nx, ny) = (self.name(x, pos)?, self.name(y, pos)?);
            out.push(Emitted {
                text: format!("{nx}, {ny} = V_SWAP_B32 {ny}, {nx}, implicit $exec"),
                defs: [reg_units(x), reg_units(y)].concat(),
                uses: [reg_units(x), reg_units(y)].concat(),
            });
        }
        Ok(())
    }

    /// The defining instruction of `value` again, writing `dst`.
    /// The definition of `value` again, writing `dst`; a recomputation with operands
    /// (`uses`, the definition's value operands in order) reads them where they are.
    fn remat(
        &mut self,
        dst: Location,
        value: Value,
        uses: &[Use],
        pos: Pos,
        out: &mut Vec<Emitted>,
    ) -> Result<(), MirError> {
        let (Some(op), Some(&at)) = (self.def_of.get(&value), self.def_pos.get(&value)) else {
            return Err(err(pos, "a rematerialised value without definition"));
        };
        match self.insts_at.get(&at).filter(|i| i.opcode == op.opcode) {
            Some(ast) => {
                let def = op.defs.iter().find(|d| d.value == value).map(|d| d.pos);
                let mut locs = locations(op, def.map(|p| (p, dst)));
                for (original, given) in op.uses().zip(uses) {
                    locs.insert(original.pos, loc_of(given.loc, pos)?);
                }
                out.push(self.rewritten(ast, &locs)?);
                Ok(())
            }
            None if op.opcode == "IMPLICIT_DEF" => self.implicit_def(dst, out),
            None => Err(err(pos, format!("cannot rematerialise `{}`", op.opcode))),
        }
    }

    /// The header lines with `registers:` emptied, the spill slots declared and the
    /// spill flags set.
    fn header(&self, header: &[&str]) -> Result<String, String> {
        let mut out = String::new();
        let mut i = 0;
        while i < header.len() {
            let l = header[i];
            i += 1;
            if l.starts_with("registers:") {
                out.push_str("registers:       []\n");
                while i < header.len() && header[i].starts_with("  - ") {
                    i += 1;
                }
                continue;
            }
            if l.starts_with("stack:") {
                if !l.trim_end().ends_with("[]") && !self.slots.is_empty() {
                    return Err("the source already has stack objects".into());
                }
                out.push_str(&self.stack());
                continue;
            }
            if let Some(at) = l.find("virtual-reg: '%") {
                let end = l[at + 14..].find('\'').map_or(l.len(), |e| at + 15 + e);
                out.push_str(&format!("{}virtual-reg: ''{}\n", &l[..at], &l[end..]));
                continue;
            }
            match l.trim().split(':').next() {
                Some("hasSpilledSGPRs") if self.sgpr_spills => {
                    out.push_str("  hasSpilledSGPRs: true\n")
                }
                Some("hasSpilledVGPRs") if self.vgpr_spills => {
                    out.push_str("  hasSpilledVGPRs: true\n")
                }
                _ => {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        Ok(out)
    }

    /// `stack:` with one 4-byte spill slot per slot unit used.
    fn stack(&self) -> String {
        if self.slots.is_empty() {
            return "stack:           []\n".into();
        }
        let mut out = String::from("stack:\n");
        for s in &self.slots {
            out.push_str(&format!(
                "  - {{ id: {s}, name: '', type: spill-slot, offset: 0, size: 4, alignment: 4, stack-id: default }}\n"
            ));
        }
        out
    }

    /// The blocks with their live-ins; registers read at the entry before any write are
    /// defined there by `IMPLICIT_DEF`.
    fn body_text(&self, mut blocks: Vec<OutBlock>) -> String {
        let entry_args: BTreeSet<Unit> = self.entry_live_ins();
        let graph: Vec<(Vec<&Emitted>, Vec<usize>)> = blocks
            .iter()
            .map(|b| (b.insts.iter().collect(), b.succs.clone()))
            .collect();
        let live = live_in(&graph);
        let undefined: Vec<Unit> = live
            .first()
            .map(|l| {
                l.iter()
                    .filter(|u| !entry_args.contains(u))
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let mut live = live;
        if let (Some(entry), Some(l)) = (blocks.first_mut(), live.first_mut()) {
            let defs: Vec<Emitted> = undefined
                .iter()
                .filter_map(|&u| {
                    Some(Emitted {
                        text: format!(
                            "{} = IMPLICIT_DEF",
                            register_name(self.target, unit_loc(u))?
                        ),
                        defs: vec![u],
                        uses: Vec::new(),
                    })
                })
                .collect();
            entry.insts.splice(0..0, defs);
            undefined.iter().for_each(|u| {
                l.remove(u);
            });
        }
        let mut out = String::new();
        for (b, l) in blocks.iter().zip(&live) {
            out.push_str(&format!("  {}\n", b.header));
            if let Some(s) = &b.successors {
                out.push_str(&format!("    {s}\n"));
            }
            if !l.is_empty() {
                let names: Vec<String> = l
                    .iter()
                    .filter_map(|&u| register_name(self.target, unit_loc(u)))
                    .collect();
                out.push_str(&format!("    liveins: {}\n", names.join(", ")));
            }
            out.push_str("  \n");
            for i in &b.insts {
                out.push_str(&format!("    {}\n", i.text));
            }
            out.push_str("  \n");
        }
        out
    }

    /// The units of the entry block's `liveins:` (the kernel's argument registers).
    fn entry_live_ins(&self) -> BTreeSet<Unit> {
        let Some(entry) = self.ast.blocks.first() else {
            return BTreeSet::new();
        };
        let start = entry.pos.line as usize;
        self.lines[start..]
            .iter()
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.trim().strip_prefix("liveins:"))
            .flat_map(|l| l.split(','))
            .filter_map(|r| {
                crate::mir::classes::phys_location(self.target, r.trim().trim_start_matches('$'))
            })
            .flat_map(reg_units)
            .collect()
    }
}

/// The first slot unit past every slot the function uses.
fn first_free_slot(f: &Function) -> u32 {
    let slot_end = |l: &Location| match *l {
        Location::Slot { first, len } => first + u32::from(len),
        _ => 0,
    };
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .flat_map(|i| match &i.kind {
            InstKind::ParallelCopy(moves) => moves
                .iter()
                .map(|m| slot_end(&m.dst).max(slot_end(&m.src)))
                .collect(),
            InstKind::Spill(m) | InstKind::Reload(m) => {
                vec![slot_end(&m.dst).max(slot_end(&m.src))]
            }
            _ => Vec::new(),
        })
        .max()
        .unwrap_or(0)
}

fn text(text: String) -> Emitted {
    Emitted {
        text,
        ..Emitted::default()
    }
}

/// The position of an instruction's tied use and of the definition it is tied to.
fn tied_use(ast: &InstAst) -> Option<(Pos, Pos)> {
    let explicit: Vec<_> = ast
        .operands
        .iter()
        .filter(|o| !o.flags.implicit && !o.flags.implicit_def && !o.flags.def)
        .collect();
    let t = crate::mir::ties::tied_operand(&ast.opcode, explicit.len())?;
    let used = explicit.get(usize::from(t))?;
    Some((used.pos, ast.defs.first()?.pos))
}

/// Block indices a terminator goes to, in then/else order.
fn successors(term: &Terminator) -> Vec<usize> {
    match term {
        Terminator::Jump { target, .. } => vec![target.index()],
        Terminator::Branch {
            then_block,
            else_block,
            ..
        } => vec![then_block.index(), else_block.index()],
        Terminator::Ret { .. } => Vec::new(),
    }
}

/// Operand positions of an operation's uses and definitions → their locations, with one
/// definition optionally placed elsewhere.
fn locations(op: &Op, redirect: Option<(Pos, Location)>) -> HashMap<Pos, Location> {
    let mut locs: HashMap<Pos, Location> =
        op.uses().filter_map(|u| Some((u.pos, u.loc?))).collect();
    for d in &op.defs {
        if let Some(l) = d.loc {
            locs.insert(d.pos, l);
        }
    }
    if let Some((pos, loc)) = redirect {
        locs.insert(pos, loc);
    }
    locs
}

fn loc_of(loc: Option<Location>, pos: Pos) -> Result<Location, MirError> {
    loc.ok_or_else(|| err(pos, "an operand without an allocated location"))
}

/// The sub-register index of a source operand.
fn operand_sub(o: &crate::mir::ast::OperandAst) -> Option<&str> {
    match &o.kind {
        crate::mir::ast::OperandKind::VReg { sub, .. } => sub.as_deref(),
        _ => None,
    }
}

/// The units of `loc` a sub-register index names, when `loc` is the whole tuple.
fn narrow(loc: Location, sub: Option<&str>) -> Location {
    match sub.and_then(units) {
        Some((first, len)) if loc.len() > len => slice(loc, first, len),
        _ => loc,
    }
}

/// Units `first..first + len` of a location.
fn slice(loc: Location, first: u16, len: u16) -> Location {
    match loc {
        Location::Reg {
            class, first: f, ..
        } => Location::Reg {
            class,
            first: f + first,
            len,
        },
        Location::Slot { first: f, .. } => Location::Slot {
            first: f + u32::from(first),
            len,
        },
        Location::Lane {
            class,
            reg,
            first: f,
            ..
        } => Location::Lane {
            class,
            reg,
            first: f + first,
            len,
        },
    }
}

fn part(loc: Location, i: u16) -> Location {
    slice(loc, i, 1)
}

fn reg_units(loc: Location) -> Vec<Unit> {
    match loc {
        Location::Reg { class, first, len } => (first..first + len).map(|u| (class, u)).collect(),
        _ => Vec::new(),
    }
}

fn unit_loc((class, first): Unit) -> Location {
    Location::Reg {
        class,
        first,
        len: 1,
    }
}

/// `$sgpr4`, `$vgpr0_vgpr1`, `$agpr2`: LLVM's name of a register range.
pub(super) fn register_name(target: &Target, loc: Location) -> Option<String> {
    let Location::Reg { class, first, len } = loc else {
        return None;
    };
    let family = match target.class(class).name.as_str() {
        "s" => "sgpr",
        "v" => "vgpr",
        "a" => "agpr",
        _ => return None,
    };
    let parts: Vec<String> = (first..first + len)
        .map(|u| format!("{family}{u}"))
        .collect();
    Some(format!("${}", parts.join("_")))
}

/// `$x = COPY $x`.
fn is_identity_copy(e: &Emitted) -> bool {
    e.text
        .split_once(" = COPY ")
        .is_some_and(|(d, s)| d.trim() == s.split(',').next().unwrap_or_default().trim())
}
