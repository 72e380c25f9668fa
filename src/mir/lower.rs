//! A parsed machine function as a chromatic [`Function`].
//!
//! The SSA machine IR before `phi-node-elimination` is already what chromatic allocates:
//! every virtual register has one definition, PHIs sit at block tops. The rules:
//! - a virtual register is a value of its class ([`super::classes`]); a tuple read only by
//!   parts is split into them after its definition ([`super::parts`]); any other
//!   sub-register use (`%7.sub1`) reads the whole tuple `%7`, so it stays live until its
//!   last part is read; `REG_SEQUENCE` is an operation defining the tuple from its parts;
//!   a `COPY` between virtual registers of one class and size is forwarded (its result
//!   stands for its source), as LLVM's coalescer joins them;
//! - every explicit operand keeps its place (an immediate, a placeholder for anything
//!   else), so tied operands ([`super::ties`]) name the operand LLVM ties;
//! - `%x = COPY $sgprN` (live-in physical registers of the entry block) defines `%x`
//!   fixed in that register; other physical registers (`$exec`, `$mode`, `$vcc`, `$scc`,
//!   `$m0`, `$sgpr_null`) are outside the allocatable files: their reads and writes are
//!   no operands but the operation's fixed-register accesses ([`super::implicit`]), which
//!   order it; a branch on `$scc`/`$vcc` reads a 1-unit (lane-mask-sized for
//!   VCC) uniform value defined by the instruction that last wrote the flag in its block;
//! - every branch is a wave-level (`uniform`) branch. LLVM's structurizer has already
//!   turned divergence into the CFG the wave runs: `SI_IF`/`SI_ELSE` enter the block that
//!   follows when a lane is left and otherwise skip to the named block, `SI_LOOP` goes back
//!   to the header while a lane loops, and the PHIs of lane masks at their joins pick the
//!   value of the path the *wave* took (`%m = PHI %a, %bb.4, %b, %bb.5` after an `SI_IF`
//!   in `bb.4` is `%a` when the wave skipped `bb.5`). So this CFG is the linear CFG: SGPR
//!   values follow it exactly, and VGPR liveness on it is safe (a write under a partial
//!   EXEC keeps the other lanes). `S_CBRANCH_SCC*`/`_VCC*` are uniform branches,
//!   `S_BRANCH` a jump, and a block without one falls through to the next;
//! - an `undef` operand reads nothing (an immediate placeholder); an `undef` PHI argument
//!   is an `IMPLICIT_DEF` at the end of its predecessor, and a PHI that differs from
//!   another of its block only in such arguments is that PHI ([`super::undef_phis`]).

use super::ast::{BlockAst, FunctionAst, InstAst, OperandAst, OperandKind};
use super::classes::{class_of, phys_location};
use super::implicit;
use super::parts::{plan, units, Part};
use super::ties::tied_operand;
use super::tuple_phis::{form_tuple_phis, TupleParts};
use super::MirError;
use crate::program::{
    Block, BlockData, BranchKind, Def, Effect, Function, Inst, InstKind, Location, Op, Operand,
    Operands, Phi, PhiArg, Pos, RegAccesses, Terminator, Use, Value, ValueData,
};
use crate::target::{ClassId, Target};
use smallvec::smallvec;
use std::collections::HashMap;

/// Lowers one machine function.
pub fn lower_function(f: &FunctionAst, target: &Target, wave: u16) -> Result<Function, MirError> {
    let mut l = Lowering {
        f,
        target,
        wave,
        values: Vec::new(),
        vregs: HashMap::new(),
        blocks: HashMap::new(),
        tail: vec![Vec::new(); f.blocks.len()],
        parts: HashMap::new(),
        alias: HashMap::new(),
        tuple_parts: TupleParts::default(),
    };
    for (i, b) in f.blocks.iter().enumerate() {
        if l.blocks.insert(b.number, Block(i as u32)).is_some() {
            return Err(err(b.pos, format!("block `bb.{}` appears twice", b.number)));
        }
    }
    l.define_values()?;
    let mut blocks = Vec::with_capacity(f.blocks.len());
    for (i, b) in f.blocks.iter().enumerate() {
        blocks.push(l.block(i, b)?);
    }
    for (block, tail) in blocks.iter_mut().zip(std::mem::take(&mut l.tail)) {
        block.insts.extend(tail);
    }
    let mut function = Function {
        name: f.name.clone(),
        pos: f.pos,
        blocks,
        values: l.values,
    };
    super::undef_phis::merge_undef_congruent_phis(&mut function);
    form_tuple_phis(&mut function, &l.tuple_parts);
    drop_undefined_values(&mut function);
    Ok(function)
}

/// Removes the values no instruction defines (those of the copies forwarded away) and
/// renumbers the rest in order.
fn drop_undefined_values(f: &mut Function) {
    let mut defined = vec![false; f.values.len()];
    for b in &f.blocks {
        for p in &b.phis {
            defined[p.def.value.index()] = true;
        }
        for op in b.insts.iter().filter_map(Inst::op) {
            op.defs.iter().for_each(|d| defined[d.value.index()] = true);
        }
    }
    let mut map = vec![Value(0); f.values.len()];
    let mut next = 0;
    for (i, keep) in defined.iter().enumerate() {
        map[i] = Value(next);
        next += u32::from(*keep);
    }
    f.map_values(|v| map[v.index()]);
    let mut keep = defined.into_iter();
    f.values.retain(|_| keep.next().unwrap_or(false));
}

fn err(pos: Pos, message: String) -> MirError {
    MirError { pos, message }
}

struct Lowering<'a> {
    f: &'a FunctionAst,
    target: &'a Target,
    wave: u16,
    values: Vec<ValueData>,
    vregs: HashMap<u32, Value>,
    blocks: HashMap<u32, Block>,
    /// Instructions to append to each block (`IMPLICIT_DEF`s of undef PHI arguments).
    tail: Vec<Vec<Inst>>,
    /// Tuples read only by parts ([`super::parts`]): each part and its value.
    parts: HashMap<u32, Vec<(Part, Value)>>,
    /// Virtual registers defined by a `COPY` of a value of their class and size: the value
    /// they stand for.
    alias: HashMap<u32, Value>,
    /// Part copies, split elements and `REG_SEQUENCE` layouts ([`super::tuple_phis`]).
    tuple_parts: TupleParts,
}

/// Opcodes that end a block.
pub(super) fn is_terminator(opcode: &str) -> bool {
    matches!(
        opcode,
        "S_BRANCH"
            | "SI_IF"
            | "SI_ELSE"
            | "SI_LOOP"
            | "S_ENDPGM"
            | "SI_RETURN"
            | "SI_RETURN_TO_EPILOG"
    ) || opcode.starts_with("S_CBRANCH_")
}

/// The flag register a conditional branch reads (`scc` or `vcc`).
fn branch_flag(opcode: &str) -> Option<&'static str> {
    match opcode {
        "S_CBRANCH_SCC0" | "S_CBRANCH_SCC1" => Some("scc"),
        "S_CBRANCH_VCCZ" | "S_CBRANCH_VCCNZ" => Some("vcc"),
        _ => None,
    }
}

/// Whether `op` writes flag `flag` (`vcc` covers `vcc_lo`) for a later reader.
fn writes_flag(inst: &InstAst, flag: &str) -> bool {
    let names = |o: &OperandAst| match &o.kind {
        OperandKind::Phys(p) => p == flag || p.strip_suffix("_lo") == Some(flag),
        _ => false,
    };
    inst.defs.iter().any(|d| names(d) && !d.flags.dead)
        || inst
            .operands
            .iter()
            .any(|o| o.is_def() && !o.flags.dead && names(o))
}

impl Lowering<'_> {
    fn new_value(&mut self, name: String, class: ClassId, size: u16, pos: Pos) -> Value {
        self.values.push(ValueData {
            name: name.into(),
            class,
            size,
            pos,
        });
        Value(self.values.len() as u32 - 1)
    }

    /// Every virtual register defined in the body, with its class.
    fn define_values(&mut self) -> Result<(), MirError> {
        let f = self.f;
        let defs = f.blocks.iter().flat_map(|b| &b.insts).flat_map(|i| {
            i.defs
                .iter()
                .chain(i.operands.iter().filter(|o| o.flags.def))
        });
        for d in defs {
            let OperandKind::VReg { id, class, .. } = &d.kind else {
                continue;
            };
            let (c, size) = self.class_of_vreg(*id, class.as_deref(), d.pos)?;
            if self.vregs.contains_key(id) {
                return Err(err(
                    d.pos,
                    format!("`%{id}` is defined twice (MIR must be SSA)"),
                ));
            }
            let v = self.new_value(id.to_string(), c, size, d.pos);
            self.vregs.insert(*id, v);
        }
        let mut planned: Vec<(u32, Vec<Part>)> = plan(f).into_iter().collect();
        planned.sort_by_key(|(id, _)| *id);
        for (id, parts) in planned {
            let Some(&tuple) = self.vregs.get(&id) else {
                continue;
            };
            let data = &self.values[tuple.index()];
            let (class, size, pos) = (data.class, data.size, data.pos);
            let fits = parts
                .iter()
                .all(|p| p.first + p.len <= size && self.target.class(class).allows_size(p.len));
            if !fits || size == 1 {
                continue;
            }
            let values = parts
                .into_iter()
                .map(|p| {
                    let v = self.new_value(format!("{id}.{}", p.sub), class, p.len, pos);
                    self.tuple_parts.part_of.insert(v, p.first);
                    (p, v)
                })
                .collect();
            self.parts.insert(id, values);
        }
        self.forward_copies();
        Ok(())
    }

    /// `%b = COPY %a` (or `%a.subK`) where `%b` has the class and size of what it copies
    /// and is never read by parts: `%b` stands for that value, and the copy is dropped —
    /// what LLVM's register coalescer does with such copies. The allocator places copies
    /// itself where a constraint needs them.
    fn forward_copies(&mut self) {
        let f = self.f;
        let read_by_parts: std::collections::HashSet<u32> = f
            .blocks
            .iter()
            .flat_map(|b| &b.insts)
            .flat_map(|i| &i.operands)
            .filter_map(|o| match &o.kind {
                OperandKind::VReg {
                    id, sub: Some(_), ..
                } => Some(*id),
                _ => None,
            })
            .collect();
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            let Some((to, source)) = forwardable(inst) else {
                continue;
            };
            if read_by_parts.contains(&to) {
                continue;
            }
            let OperandKind::VReg { id, sub, .. } = &source.kind else {
                continue;
            };
            let (Ok(from), Some(&def)) = (
                self.read(*id, sub.as_deref(), source.pos),
                self.vregs.get(&to),
            ) else {
                continue;
            };
            let (a, b) = (&self.values[from.index()], &self.values[def.index()]);
            if (a.class, a.size) == (b.class, b.size) {
                self.alias.insert(to, from);
            }
        }
    }

    /// The value a read of `%id` or `%id.sub` reads: the tuple, or its part.
    fn read(&self, id: u32, sub: Option<&str>, pos: Pos) -> Result<Value, MirError> {
        match (sub, self.parts.get(&id)) {
            (Some(sub), Some(parts)) => parts
                .iter()
                .find(|(p, _)| p.sub == sub)
                .map(|&(_, v)| v)
                .ok_or_else(|| err(pos, format!("`%{id}.{sub}` is not a part of `%{id}`"))),
            _ => self.value_of(id, pos),
        }
    }

    /// `SPLIT` of a tuple read only by parts into its parts, right after its definition.
    fn split_after_def(&self, id: u32, pos: Pos, out: &mut Vec<Inst>) {
        let Some(parts) = self.parts.get(&id) else {
            return;
        };
        let tuple = self.vregs[&id];
        out.push(Inst {
            kind: InstKind::Op(Op {
                opcode: "SPLIT".into(),
                defs: parts.iter().map(|&(_, v)| Def::new(v, pos)).collect(),
                operands: smallvec![Operand::Value(Use {
                    value: tuple,
                    fixed: None,
                    loc: None,
                    pos,
                })],
                effect: Effect::None,
                regs: RegAccesses::default(),
                remat: false,
            }),
            pos,
        });
    }

    fn class_of_vreg(
        &self,
        id: u32,
        inline: Option<&str>,
        pos: Pos,
    ) -> Result<(ClassId, u16), MirError> {
        let (name, pos) = match (self.f.classes.get(&id), inline) {
            (Some((name, at)), _) => (name.as_str(), *at),
            (None, Some(name)) => (name, pos),
            (None, None) => return Err(err(pos, format!("`%{id}` has no register class"))),
        };
        class_of(self.target, self.wave, name).ok_or_else(|| {
            err(
                pos,
                format!(
                    "register class `{name}` has no counterpart on {}",
                    self.target.name
                ),
            )
        })
    }

    fn value_of(&self, id: u32, pos: Pos) -> Result<Value, MirError> {
        if let Some(&v) = self.alias.get(&id) {
            return Ok(v);
        }
        self.vregs
            .get(&id)
            .copied()
            .ok_or_else(|| err(pos, format!("`%{id}` is read but never defined")))
    }

    fn block_of(&self, number: u32, pos: Pos) -> Result<Block, MirError> {
        self.blocks
            .get(&number)
            .copied()
            .ok_or_else(|| err(pos, format!("no block `bb.{number}`")))
    }

    fn block(&mut self, index: usize, b: &BlockAst) -> Result<BlockData, MirError> {
        let phi_count = b.insts.iter().take_while(|i| i.opcode == "PHI").count();
        let mut phis = Vec::with_capacity(phi_count);
        for inst in &b.insts[..phi_count] {
            phis.push(self.phi(inst)?);
        }
        let body_end = b.insts.len()
            - b.insts[phi_count..]
                .iter()
                .rev()
                .take_while(|i| is_terminator(&i.opcode))
                .count();
        let terms = &b.insts[body_end..];
        let flag = self.flag_value(&b.insts[phi_count..body_end], terms, b.pos)?;
        let mut insts = Vec::with_capacity(body_end - phi_count + 1);
        for inst in &b.insts[..phi_count] {
            if let Some(OperandKind::VReg { id, .. }) = inst.defs.first().map(|d| &d.kind) {
                self.split_after_def(*id, inst.pos, &mut insts);
            }
        }
        for (i, inst) in b.insts[phi_count..body_end].iter().enumerate() {
            if inst.opcode == "PHI" {
                return Err(err(inst.pos, "PHI after the top of its block".into()));
            }
            if forwardable(inst).is_some_and(|(to, _)| self.alias.contains_key(&to)) {
                continue;
            }
            let extra = flag.filter(|&(at, _)| at == i).map(|(_, v)| v);
            self.op(inst, index, extra, &mut insts)?;
        }
        let (term, kept) = self.terminator(index, terms, flag.map(|f| f.1), b.pos)?;
        if let Some(inst) = kept {
            self.op(inst, index, None, &mut insts)?;
        }
        Ok(BlockData {
            name: format!("bb.{}", b.number),
            pos: b.pos,
            freq: None,
            phis,
            insts,
            term,
        })
    }

    fn phi(&mut self, inst: &InstAst) -> Result<Phi, MirError> {
        let [def] = inst.defs.as_slice() else {
            return Err(err(inst.pos, "a PHI defines one register".into()));
        };
        let OperandKind::VReg { id, .. } = def.kind else {
            return Err(err(def.pos, "a PHI defines a virtual register".into()));
        };
        let value = self.value_of(id, def.pos)?;
        let mut args = Vec::with_capacity(inst.operands.len() / 2);
        for pair in inst.operands.chunks(2) {
            let [arg, pred] = pair else {
                return Err(err(
                    inst.pos,
                    "PHI operands come in register, block pairs".into(),
                ));
            };
            let OperandKind::Block(number) = pred.kind else {
                return Err(err(pred.pos, "expected a `%bb.N` PHI predecessor".into()));
            };
            let block = self.block_of(number, pred.pos)?;
            let value = self.phi_arg(arg, value, block)?;
            args.push(PhiArg {
                block,
                value,
                pos: arg.pos,
            });
        }
        Ok(Phi {
            def: Def::new(value, def.pos),
            args,
            pos: inst.pos,
        })
    }

    /// The value a PHI argument reads: its register, or a new value at the end of the
    /// predecessor — an `IMPLICIT_DEF` for an `undef` argument, a `COPY` of the tuple for
    /// a sub-register (what LLVM's PHI elimination writes there).
    fn phi_arg(&mut self, arg: &OperandAst, phi: Value, pred: Block) -> Result<Value, MirError> {
        let OperandKind::VReg { id, sub, .. } = &arg.kind else {
            return Err(err(arg.pos, "a PHI argument is a virtual register".into()));
        };
        let split = sub.is_some() && self.parts.contains_key(id);
        if !arg.flags.undef && (sub.is_none() || split) {
            return self.read(*id, sub.as_deref(), arg.pos);
        }
        let (class, size) = (
            self.values[phi.index()].class,
            self.values[phi.index()].size,
        );
        let (name, opcode, operands) = if arg.flags.undef {
            (
                format!("undef.{}", self.values.len()),
                "IMPLICIT_DEF",
                Operands::new(),
            )
        } else {
            let whole = Use {
                value: self.value_of(*id, arg.pos)?,
                fixed: None,
                loc: None,
                pos: arg.pos,
            };
            (
                format!("sub.{}", self.values.len()),
                "COPY",
                smallvec![Operand::Value(whole)],
            )
        };
        let v = self.new_value(name, class, size, arg.pos);
        if let Some((first, len)) = sub.as_deref().and_then(units) {
            if len == size && !arg.flags.undef {
                self.tuple_parts.part_of.insert(v, first);
            }
        }
        let op = Op {
            opcode: opcode.into(),
            defs: smallvec![Def::new(v, arg.pos)],
            remat: operands.is_empty(),
            operands,
            effect: Effect::None,
            regs: RegAccesses::default(),
        };
        self.tail[pred.index()].push(Inst {
            kind: InstKind::Op(op),
            pos: arg.pos,
        });
        Ok(v)
    }

    /// Where a branch on `$scc`/`$vcc` gets its condition: the index (among `body`) of the
    /// last writer of the flag, and the value it defines for the branch.
    fn flag_value(
        &mut self,
        body: &[InstAst],
        terms: &[InstAst],
        pos: Pos,
    ) -> Result<Option<(usize, Value)>, MirError> {
        let Some((branch, flag)) = terms
            .iter()
            .find_map(|t| branch_flag(&t.opcode).map(|f| (t, f)))
        else {
            return Ok(None);
        };
        let writer = body
            .iter()
            .rposition(|i| writes_flag(i, flag))
            .ok_or_else(|| {
                err(
                    branch.pos,
                    format!(
                        "`${flag}` read by `{}` is not written in its block",
                        branch.opcode
                    ),
                )
            })?;
        let s = self
            .target
            .class_by_name("s")
            .ok_or_else(|| err(pos, "no SGPR class".into()))?;
        let size = if flag == "vcc" { self.wave / 32 } else { 1 };
        let name = format!("{flag}.{}", self.values.len());
        let v = self.new_value(name, s, size, body[writer].pos);
        Ok(Some((writer, v)))
    }

    /// The terminator of block `index`, and the `SI_*` operation that stays in the block
    /// before it.
    fn terminator<'t>(
        &self,
        index: usize,
        terms: &'t [InstAst],
        flag: Option<Value>,
        pos: Pos,
    ) -> Result<(Terminator, Option<&'t InstAst>), MirError> {
        let fallthrough = |at: Pos| {
            if index + 1 < self.f.blocks.len() {
                Ok(Block(index as u32 + 1))
            } else {
                Err(err(at, "the last block falls through past the end".into()))
            }
        };
        let Some(first) = terms.first() else {
            return Ok((
                Terminator::Jump {
                    target: fallthrough(pos)?,
                    pos,
                },
                None,
            ));
        };
        if matches!(
            first.opcode.as_str(),
            "S_ENDPGM" | "SI_RETURN" | "SI_RETURN_TO_EPILOG"
        ) {
            return Ok((
                Terminator::Ret {
                    uses: Vec::new(),
                    pos: first.pos,
                },
                None,
            ));
        }
        let jump = terms.iter().find(|t| t.opcode == "S_BRANCH");
        let other = match jump {
            Some(j) => self.block_target(j)?,
            None => fallthrough(first.pos)?,
        };
        if first.opcode == "S_BRANCH" {
            return Ok((
                Terminator::Jump {
                    target: other,
                    pos: first.pos,
                },
                None,
            ));
        }
        let named = self.block_target(first)?;
        let (kind, cond, then_block, else_block, kept) = match first.opcode.as_str() {
            "SI_IF" | "SI_ELSE" => {
                let d = first.defs.first().ok_or_else(|| {
                    err(
                        first.pos,
                        format!("`{}` defines the saved mask", first.opcode),
                    )
                })?;
                let OperandKind::VReg { id, .. } = d.kind else {
                    return Err(err(d.pos, "expected a virtual register".into()));
                };
                let cond = self.value_of(id, d.pos)?;
                (BranchKind::Uniform, cond, other, named, Some(first))
            }
            "SI_LOOP" => {
                let cond = self.first_value(first)?;
                (BranchKind::Uniform, cond, named, other, Some(first))
            }
            op => {
                let cond =
                    flag.ok_or_else(|| err(first.pos, format!("unsupported branch `{op}`")))?;
                match op {
                    "S_CBRANCH_SCC1" | "S_CBRANCH_VCCNZ" => {
                        (BranchKind::Uniform, cond, named, other, None)
                    }
                    _ => (BranchKind::Uniform, cond, other, named, None),
                }
            }
        };
        if then_block == else_block {
            return Ok((
                Terminator::Jump {
                    target: other,
                    pos: first.pos,
                },
                kept,
            ));
        }
        let cond = Use {
            value: cond,
            fixed: None,
            loc: None,
            pos: first.pos,
        };
        Ok((
            Terminator::Branch {
                kind,
                cond,
                then_block,
                else_block,
                pos: first.pos,
            },
            kept,
        ))
    }

    fn block_target(&self, inst: &InstAst) -> Result<Block, MirError> {
        inst.operands
            .iter()
            .find_map(|o| match o.kind {
                OperandKind::Block(b) => Some(self.block_of(b, o.pos)),
                _ => None,
            })
            .unwrap_or_else(|| Err(err(inst.pos, format!("`{}` names no block", inst.opcode))))
    }

    fn first_value(&self, inst: &InstAst) -> Result<Value, MirError> {
        match inst.operands.first().map(|o| (&o.kind, o.pos)) {
            Some((OperandKind::VReg { id, .. }, pos)) => self.value_of(*id, pos),
            _ => Err(err(
                inst.pos,
                format!("`{}` reads a mask register", inst.opcode),
            )),
        }
    }

    /// An ordinary instruction, appended to `out`; `extra` is the flag value it defines
    /// for a branch.
    fn op(
        &mut self,
        inst: &InstAst,
        block: usize,
        extra: Option<Value>,
        out: &mut Vec<Inst>,
    ) -> Result<(), MirError> {
        let explicit = |o: &&OperandAst| !o.flags.implicit && !o.flags.implicit_def;
        let mut defs = Vec::new();
        for d in inst
            .defs
            .iter()
            .chain(inst.operands.iter().filter(|o| o.flags.def))
        {
            if let OperandKind::VReg { id, .. } = d.kind {
                let mut def = Def::new(self.value_of(id, d.pos)?, d.pos);
                def.early_clobber = d.flags.early_clobber || inst.opcode == "SI_IF_BREAK";
                defs.push(def);
            }
        }
        let mut operands = Vec::new();
        let mut reads_special = false;
        let sources: Vec<&OperandAst> = inst
            .operands
            .iter()
            .filter(explicit)
            .filter(|o| !o.flags.def)
            .collect();
        for o in &sources {
            operands.push(match &o.kind {
                OperandKind::VReg { id, sub, .. } if !o.flags.undef => Operand::Value(Use {
                    value: self.read(*id, sub.as_deref(), o.pos)?,
                    fixed: None,
                    loc: None,
                    pos: o.pos,
                }),
                OperandKind::Imm(v) => Operand::imm(*v),
                OperandKind::Phys(_) => {
                    reads_special = true;
                    Operand::imm(0)
                }
                _ => Operand::imm(0),
            });
        }
        if inst.opcode == "COPY" {
            self.fix_live_in(inst, block, &mut defs, &mut operands)?;
        }
        self.note_parts(inst, &sources, &defs);
        self.tie(inst, &sources, &mut defs, &mut operands, out)?;
        let writes_special = inst
            .defs
            .iter()
            .any(|d| matches!(d.kind, OperandKind::Phys(_)));
        let remat = defs.len() == 1
            && extra.is_none()
            && !reads_special
            && !writes_special
            && operands.iter().all(|o| o.as_use().is_none())
            && ["S_MOV_", "V_MOV_", "IMPLICIT_DEF"]
                .iter()
                .any(|p| inst.opcode.starts_with(p));
        defs.extend(extra.map(|v| Def::new(v, inst.pos)));
        let regs = implicit::accesses(inst);
        out.push(Inst {
            kind: InstKind::Op(Op {
                opcode: inst.opcode.as_str().into(),
                defs: defs.into(),
                operands: operands.into(),
                effect: effect(inst),
                regs: regs.into(),
                remat,
            }),
            pos: inst.pos,
        });
        let defined = inst
            .defs
            .iter()
            .chain(inst.operands.iter().filter(|o| o.flags.def));
        for d in defined {
            if let OperandKind::VReg { id, .. } = d.kind {
                self.split_after_def(id, inst.pos, out);
            }
        }
        Ok(())
    }

    /// Records a copy of one part of a tuple kept whole (`%b = COPY %t.sub1`) and the
    /// layout of a `REG_SEQUENCE` of whole registers, for [`super::tuple_phis`].
    fn note_parts(&mut self, inst: &InstAst, sources: &[&OperandAst], defs: &[Def]) {
        let [def] = defs else {
            return;
        };
        match (inst.opcode.as_str(), sources) {
            ("COPY", [source]) => {
                let OperandKind::VReg {
                    id, sub: Some(sub), ..
                } = &source.kind
                else {
                    return;
                };
                let Some((first, len)) = units(sub) else {
                    return;
                };
                let kept_whole = !self.parts.contains_key(id);
                if kept_whole && !source.flags.undef && len == self.values[def.value.index()].size {
                    self.tuple_parts.part_of.insert(def.value, first);
                }
            }
            ("REG_SEQUENCE", _) => {
                if let Some(layout) = sequence_layout(sources) {
                    self.tuple_parts.sequences.insert(def.value, layout);
                }
            }
            _ => {}
        }
    }

    /// `%x = COPY $sgprN` in the entry block: `%x` is defined in `$sgprN`.
    fn fix_live_in(
        &self,
        inst: &InstAst,
        block: usize,
        defs: &mut [Def],
        operands: &mut Vec<Operand>,
    ) -> Result<(), MirError> {
        let Some(OperandKind::Phys(name)) = inst.operands.first().map(|o| &o.kind) else {
            return Ok(());
        };
        let Some(loc) = phys_location(self.target, name) else {
            return Ok(());
        };
        let [def] = defs else {
            return Err(err(
                inst.pos,
                format!("a copy of `${name}` defines one register"),
            ));
        };
        if block != 0 {
            return Err(err(
                inst.pos,
                format!("unsupported: `${name}` read outside the entry block"),
            ));
        }
        let data = &self.values[def.value.index()];
        let Location::Reg { class, len, .. } = loc else {
            return Ok(());
        };
        if class != data.class || len != data.size {
            return Err(err(
                inst.pos,
                format!("`${name}` is copied into a register of another class or size"),
            ));
        }
        def.fixed = Some(loc);
        operands.clear();
        Ok(())
    }

    /// Ties def 0 to the operand the table names. When that operand is a sub-register
    /// (or of another class), it is first copied into a register of the def's class, as
    /// LLVM's two-address pass does.
    fn tie(
        &mut self,
        inst: &InstAst,
        sources: &[&OperandAst],
        defs: &mut [Def],
        operands: &mut [Operand],
        out: &mut Vec<Inst>,
    ) -> Result<(), MirError> {
        let Some(t) = tied_operand(&inst.opcode, sources.len()) else {
            return Ok(());
        };
        let (Some(def), Some(Operand::Value(u))) = (defs.first_mut(), operands.get_mut(t as usize))
        else {
            return Ok(());
        };
        let (class, size) = {
            let d = &self.values[def.value.index()];
            (d.class, d.size)
        };
        let o = &self.values[u.value.index()];
        let sub = matches!(
            sources[t as usize].kind,
            OperandKind::VReg { sub: Some(_), .. }
        );
        if sub || (o.class, o.size) != (class, size) {
            let name = format!("tie.{}", self.values.len());
            let copy = self.new_value(name, class, size, u.pos);
            out.push(Inst {
                kind: InstKind::Op(Op {
                    opcode: "COPY".into(),
                    defs: smallvec![Def::new(copy, u.pos)],
                    operands: smallvec![Operand::Value(*u)],
                    effect: Effect::None,
                    regs: RegAccesses::default(),
                    remat: false,
                }),
                pos: inst.pos,
            });
            u.value = copy;
        }
        def.tied = Some(t);
        def.early_clobber = false;
        Ok(())
    }
}

/// A `COPY` of a virtual register into a virtual register: the register defined and the
/// operand read.
fn forwardable(inst: &InstAst) -> Option<(u32, &OperandAst)> {
    if inst.opcode != "COPY" {
        return None;
    }
    let [def] = inst.defs.as_slice() else {
        return None;
    };
    let OperandKind::VReg { id, sub: None, .. } = def.kind else {
        return None;
    };
    let source = inst.operands.first()?;
    let reads_vreg = matches!(source.kind, OperandKind::VReg { .. }) && !source.flags.undef;
    reads_vreg.then_some((id, source))
}

/// The units of each source of a `REG_SEQUENCE` whose sources are all whole registers
/// placed by a sub-register index of consecutive units.
fn sequence_layout(sources: &[&OperandAst]) -> Option<Vec<(u16, u16)>> {
    sources
        .chunks(2)
        .map(|pair| match pair {
            [source, index] => match (&source.kind, &index.kind) {
                (OperandKind::VReg { sub: None, .. }, OperandKind::SubRegIndex(name))
                    if !source.flags.undef =>
                {
                    units(name)
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// What an instruction may not be reordered across, besides the fixed registers it
/// accesses ([`implicit`]).
fn effect(inst: &InstAst) -> Effect {
    let op = inst.opcode.as_str();
    if inst.stores {
        Effect::WritesMemory
    } else if inst.loads {
        Effect::ReadsMemory
    } else if matches!(
        op,
        "ATOMIC_FENCE" | "S_BARRIER" | "SCHED_BARRIER" | "S_WAITCNT"
    ) {
        Effect::Barrier
    } else if op.starts_with("SI_") || op == "INLINEASM" {
        Effect::Control
    } else {
        Effect::None
    }
}
