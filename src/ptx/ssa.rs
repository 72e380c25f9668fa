//! SSA construction over the multiply-defined PTX registers: pruned SSA in the manner of
//! Cytron et al. (TOPLAS 1991), with phis only where the register is live-in (Choi,
//! Cytron & Ferrante, POPL 1991). Dominators by Cooper, Harvey & Kennedy ("A Simple, Fast
//! Dominance Algorithm", 2001); liveness of PTX registers by the usual backward dataflow;
//! renaming by a walk of the dominator tree.
//!
//! PTX specifics:
//! - a register read on a path with no definition gets an explicit `undef` definition
//!   placed as late as possible (just before the use, or at the end of the predecessor for
//!   a phi argument), never a value live from the entry;
//! - a guarded definition keeps the old value when its guard is false: where a definition
//!   reaches it, the old value is an extra operand the definition is tied to;
//! - `mov d, s` between registers forwards `s` (no operation);
//! - a truncation `cvt.u32.u64 d, w` of a value `w` that `cvt.{u,s}64.{u,s}32 w, s`
//!   widened forwards `s`, the value it was widened from (its low 32 bits, unchanged by
//!   either conversion), so that a 32-bit index kept as a 64-bit register only to be cut
//!   back holds one register, not two (NVIDIA's CUB kernels do this in every
//!   partial-tile load: ptxas holds the 32-bit value);
//! - a tuple definition is followed by a `split` into its elements and a tuple use is
//!   preceded by a `collect` of them; [`super::tuples`] removes the pairs that cancel;
//! - blocks come in reverse post-order (definitions before uses in the printed text);
//!   unreachable blocks are dropped.

use super::ast::{FunctionAst, RegType};
use super::cfg::{PBlock, PTerm};
use super::ir::{Binding, IrBlock, IrFunction, IrInst, Origin, Slot};
use super::lower::{Group, LElem, LInst, LUse, Width};
use super::operands::Position;
use super::PtxError;
use crate::program::*;
use crate::target::{ClassId, Target};
use std::collections::HashMap;

type Result<T> = std::result::Result<T, PtxError>;

/// Builds the SSA form of the blocks of `f` (unreachable blocks are dropped).
pub fn build(f: &FunctionAst, blocks: &[PBlock], target: &Target) -> Result<IrFunction> {
    let graph = Graph::new(blocks);
    let live_in = liveness(f, blocks, &graph);
    let phi_vars = place_phis(f, blocks, &graph, &live_in);
    let mut r = Renamer::new(f, blocks, &graph, target)?;
    r.create_blocks(&phi_vars);
    r.rename()?;
    Ok(r.ir)
}

/// Successors, predecessors, reverse post-order and dominators of the reachable blocks.
struct Graph {
    succs: Vec<Vec<usize>>,
    preds: Vec<Vec<usize>>,
    rpo: Vec<usize>,
    idom: Vec<usize>,
}

impl Graph {
    fn new(blocks: &[PBlock]) -> Graph {
        let succs: Vec<Vec<usize>> = blocks.iter().map(|b| b.term.successors()).collect();
        let rpo = reverse_post_order(&succs);
        let mut preds = vec![Vec::new(); blocks.len()];
        for &b in &rpo {
            for &s in &succs[b] {
                if !preds[s].contains(&b) {
                    preds[s].push(b);
                }
            }
        }
        let idom = dominators(&rpo, &preds, blocks.len());
        Graph {
            succs,
            preds,
            rpo,
            idom,
        }
    }

    /// Dominance frontiers (Cooper, Harvey & Kennedy, fig. 5).
    fn frontiers(&self) -> Vec<Vec<usize>> {
        let mut df = vec![Vec::new(); self.succs.len()];
        for &b in &self.rpo {
            if self.preds[b].len() < 2 {
                continue;
            }
            for &p in &self.preds[b] {
                let mut runner = p;
                while runner != self.idom[b] {
                    if !df[runner].contains(&b) {
                        df[runner].push(b);
                    }
                    runner = self.idom[runner];
                }
            }
        }
        df
    }
}

fn reverse_post_order(succs: &[Vec<usize>]) -> Vec<usize> {
    let mut seen = vec![false; succs.len()];
    let mut post = Vec::with_capacity(succs.len());
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some(&mut (b, ref mut next)) = stack.last_mut() {
        if let Some(&s) = succs[b].get(*next) {
            *next += 1;
            if !seen[s] {
                seen[s] = true;
                stack.push((s, 0));
            }
        } else {
            post.push(b);
            stack.pop();
        }
    }
    post.reverse();
    post
}

fn dominators(rpo: &[usize], preds: &[Vec<usize>], n: usize) -> Vec<usize> {
    let mut order = vec![usize::MAX; n];
    rpo.iter().enumerate().for_each(|(i, &b)| order[b] = i);
    let mut idom = vec![usize::MAX; n];
    idom[rpo[0]] = rpo[0];
    let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while order[a] > order[b] {
                a = idom[a];
            }
            while order[b] > order[a] {
                b = idom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &rpo[1..] {
            let mut new = usize::MAX;
            for &p in &preds[b] {
                if idom[p] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    p
                } else {
                    intersect(&idom, p, new)
                };
            }
            if idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// A set of PTX registers.
#[derive(Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
}

/// Registers an instruction reads (a guarded definition reads its old value) and writes.
fn reads_writes(l: &LInst) -> (Vec<usize>, Vec<usize>) {
    let mut reads: Vec<usize> = l
        .uses
        .iter()
        .filter_map(|u| match u {
            LUse::Group(g, _) => Some(g),
            LUse::Imm(_) => None,
        })
        .flat_map(|g| g.vars().flatten())
        .collect();
    let writes: Vec<usize> = l.defs.iter().flat_map(|g| g.vars().flatten()).collect();
    if l.guard.is_some() {
        reads.extend(&writes);
    }
    (reads, writes)
}

fn term_reads(b: &PBlock) -> Option<usize> {
    match b.term {
        PTerm::Branch { cond, .. } => Some(cond.var),
        _ => None,
    }
}

/// Live-in registers per block.
fn liveness(f: &FunctionAst, blocks: &[PBlock], g: &Graph) -> Vec<Bits> {
    let n = f.vars.len();
    let mut upward = vec![Bits::new(n); blocks.len()];
    let mut defined = vec![Bits::new(n); blocks.len()];
    for &b in &g.rpo {
        let (up, def) = (&mut upward[b], &mut defined[b]);
        for l in &blocks[b].insts {
            let (reads, writes) = reads_writes(l);
            reads
                .iter()
                .filter(|&&v| !def.contains(v))
                .for_each(|&v| up.insert(v));
            writes.iter().for_each(|&v| def.insert(v));
        }
        if let Some(v) = term_reads(&blocks[b]).filter(|&v| !def.contains(v)) {
            up.insert(v);
        }
    }
    let mut live_in = upward.clone();
    let mut changed = true;
    while changed {
        changed = false;
        for &b in g.rpo.iter().rev() {
            let mut out = Bits::new(n);
            for &s in &g.succs[b] {
                for (w, x) in out.0.iter_mut().zip(&live_in[s].0) {
                    *w |= x;
                }
            }
            let mut new = upward[b].clone();
            for ((w, o), d) in new.0.iter_mut().zip(&out.0).zip(&defined[b].0) {
                *w |= o & !d;
            }
            if new != live_in[b] {
                live_in[b] = new;
                changed = true;
            }
        }
    }
    live_in
}

/// Per block, the registers that get a phi: the iterated dominance frontier of their
/// definitions, where they are live-in.
fn place_phis(f: &FunctionAst, blocks: &[PBlock], g: &Graph, live_in: &[Bits]) -> Vec<Vec<usize>> {
    let df = g.frontiers();
    let mut def_blocks: Vec<Vec<usize>> = vec![Vec::new(); f.vars.len()];
    for &b in &g.rpo {
        for l in &blocks[b].insts {
            for v in reads_writes(l).1 {
                if def_blocks[v].last() != Some(&b) {
                    def_blocks[v].push(b);
                }
            }
        }
    }
    let mut phis = vec![Vec::new(); blocks.len()];
    let mut has_phi = vec![usize::MAX; blocks.len()];
    let mut queued = vec![usize::MAX; blocks.len()];
    for (v, defs) in def_blocks.iter().enumerate() {
        let mut work = defs.clone();
        work.iter().for_each(|&b| queued[b] = v);
        while let Some(b) = work.pop() {
            for &y in &df[b] {
                if has_phi[y] == v || !live_in[y].contains(v) {
                    continue;
                }
                has_phi[y] = v;
                phis[y].push(v);
                if queued[y] != v {
                    queued[y] = v;
                    work.push(y);
                }
            }
        }
    }
    phis
}

struct Renamer<'a> {
    f: &'a FunctionAst,
    blocks: &'a [PBlock],
    g: &'a Graph,
    target: &'a Target,
    ir: IrFunction,
    /// Program block of each PTX block (reachable ones).
    ir_of: Vec<Option<usize>>,
    /// Per block: (register, phi index) of its phis.
    phi_vars: Vec<Vec<(usize, usize)>>,
    /// Per register: the stack of its current values (`None`: undefined).
    stacks: Vec<Vec<Option<Value>>>,
    r: ClassId,
    p: ClassId,
    /// A value a widening integer `cvt` defined → the 32-bit value it widened.
    widened: HashMap<Value, Value>,
}

impl<'a> Renamer<'a> {
    fn new(
        f: &'a FunctionAst,
        blocks: &'a [PBlock],
        g: &'a Graph,
        target: &'a Target,
    ) -> Result<Renamer<'a>> {
        let class = |name: &str| {
            target.class_by_name(name).ok_or_else(|| PtxError {
                pos: f.pos,
                message: format!("target `{}` has no class `{name}`", target.name),
            })
        };
        Ok(Renamer {
            f,
            blocks,
            g,
            target,
            ir: IrFunction::new(f.name.clone(), f.pos),
            ir_of: vec![None; blocks.len()],
            phi_vars: vec![Vec::new(); blocks.len()],
            stacks: vec![Vec::new(); f.vars.len()],
            r: class("r")?,
            p: class("p")?,
            widened: HashMap::new(),
        })
    }

    fn class_of(&self, ty: RegType) -> ClassId {
        if ty.pred {
            self.p
        } else {
            self.r
        }
    }

    fn var_value(&mut self, var: usize, pos: Pos) -> Value {
        let v = &self.f.vars[var];
        let (ty, name) = (v.ty, v.name.trim_start_matches('%').to_string());
        self.ir.value(&name, self.class_of(ty), ty.units(), ty, pos)
    }

    /// The program's blocks, in reverse post-order: a block's dominators come before it,
    /// so every definition precedes its uses in the text (phi arguments aside).
    fn create_blocks(&mut self, phi_vars: &[Vec<usize>]) {
        for &b in &self.g.rpo {
            let block = &self.blocks[b];
            self.ir_of[b] = Some(self.ir.blocks.len());
            let mut phis = Vec::new();
            for &var in &phi_vars[b] {
                let value = self.var_value(var, block.pos);
                self.phi_vars[b].push((var, phis.len()));
                phis.push(Phi {
                    def: Def::new(value, block.pos),
                    args: Vec::new(),
                    pos: block.pos,
                });
            }
            self.ir.blocks.push(IrBlock {
                name: block.name.clone(),
                pos: block.pos,
                phis,
                insts: Vec::new(),
                term: Terminator::Ret {
                    uses: Vec::new(),
                    pos: block.pos,
                },
                origin: block.origin.clone(),
                term_bindings: Vec::new(),
            });
        }
    }

    fn rename(&mut self) -> Result<()> {
        let n = self.blocks.len();
        let mut children = vec![Vec::new(); n];
        for &b in &self.g.rpo[1..] {
            children[self.g.idom[b]].push(b);
        }
        let mut pushed: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut work = vec![(self.g.rpo[0], false)];
        while let Some((b, done)) = work.pop() {
            if done {
                for &var in &pushed[b] {
                    self.stacks[var].pop();
                }
                continue;
            }
            pushed[b] = self.block(b)?;
            work.push((b, true));
            for &c in children[b].iter().rev() {
                work.push((c, false));
            }
        }
        Ok(())
    }

    fn current(&self, var: usize) -> Option<Value> {
        self.stacks[var].last().copied().flatten()
    }

    fn set(&mut self, var: usize, v: Option<Value>, pushed: &mut Vec<usize>) {
        self.stacks[var].push(v);
        pushed.push(var);
    }

    /// Renames block `b`; returns the registers it pushed.
    fn block(&mut self, b: usize) -> Result<Vec<usize>> {
        let irb = self.ir_of[b].unwrap_or_default();
        let mut pushed = Vec::new();
        for &(var, phi) in &self.phi_vars[b].clone() {
            let v = self.ir.blocks[irb].phis[phi].def.value;
            self.set(var, Some(v), &mut pushed);
        }
        for l in &self.blocks[b].insts {
            self.inst(irb, l, &mut pushed)?;
        }
        self.terminator(b, irb);
        for s in self.g.succs[b].clone() {
            let Some(irs) = self.ir_of[s] else { continue };
            for &(var, phi) in &self.phi_vars[s].clone() {
                let pos = self.ir.blocks[irs].pos;
                let value = match self.current(var) {
                    Some(v) => v,
                    None => {
                        let (v, inst) = self.undef(var, pos);
                        self.ir.blocks[irb].insts.push(inst);
                        v
                    }
                };
                self.ir.blocks[irs].phis[phi].args.push(PhiArg {
                    block: Block(irb as u32),
                    value,
                    pos,
                });
            }
        }
        Ok(pushed)
    }

    fn undef(&mut self, var: usize, pos: Pos) -> (Value, IrInst) {
        let ty = self.f.vars[var].ty;
        let v = self
            .ir
            .value("undef", self.class_of(ty), ty.units(), ty, pos);
        (
            v,
            helper(
                "undef",
                vec![Def::new(v, pos)],
                Vec::new(),
                pos,
                Origin::Undef,
            ),
        )
    }

    /// The value of a register here, with an `undef` before the instruction when none.
    fn read(&mut self, var: usize, pos: Pos, pre: &mut Vec<IrInst>) -> Value {
        match self.current(var) {
            Some(v) => v,
            None => {
                let (v, inst) = self.undef(var, pos);
                pre.push(inst);
                v
            }
        }
    }

    /// The value a use group reads: a register's value, or a `collect` of the elements.
    fn group_value(&mut self, g: &Group, pre: &mut Vec<IrInst>) -> Result<Value> {
        if !g.tuple {
            let LElem::Var(r) = g.elems[0] else {
                return Err(PtxError {
                    pos: g.pos,
                    message: "expected a register".into(),
                });
            };
            return Ok(self.read(r.var, r.pos, pre));
        }
        let mut parts = Vec::with_capacity(g.elems.len());
        for e in &g.elems {
            let v = match *e {
                LElem::Var(r) => self.read(r.var, r.pos, pre),
                LElem::Imm(bits, _) => self.literal(bits, g.ty, g.pos, pre),
                LElem::Sink(_) => {
                    return Err(PtxError {
                        pos: g.pos,
                        message: "`_` in a source vector".into(),
                    })
                }
            };
            parts.push(v);
        }
        self.collect(&parts, g, pre)
    }

    fn literal(&mut self, bits: i64, ty: RegType, pos: Pos, pre: &mut Vec<IrInst>) -> Value {
        let v = self.ir.value("imm", self.class_of(ty), ty.units(), ty, pos);
        self.ir.values[v.index()].constant = Some(super::operands::Constant::Imm {
            bits,
            pred: ty.pred,
        });
        let mut inst = helper(
            &format!("mov.b{}", ty.bits),
            vec![Def::new(v, pos)],
            vec![Operand::imm(bits)],
            pos,
            Origin::Literal { bits },
        );
        inst.op.remat = true;
        pre.push(inst);
        v
    }

    fn tuple_size(&self, g: &Group) -> Result<u16> {
        let size = g.ty.units() * g.elems.len() as u16;
        if self.target.class(self.class_of(g.ty)).allows_size(size) {
            Ok(size)
        } else {
            Err(PtxError {
                pos: g.pos,
                message: format!(
                    "unsupported: a tuple of {} registers on target `{}`",
                    size, self.target.name
                ),
            })
        }
    }

    fn collect(&mut self, parts: &[Value], g: &Group, pre: &mut Vec<IrInst>) -> Result<Value> {
        let size = self.tuple_size(g)?;
        let t = self
            .ir
            .value("tuple", self.class_of(g.ty), size, g.ty, g.pos);
        let operands = parts
            .iter()
            .map(|&value| Operand::Value(use_of(value, g.pos)))
            .collect();
        pre.push(helper(
            "collect",
            vec![Def::new(t, g.pos)],
            operands,
            g.pos,
            Origin::Collect,
        ));
        Ok(t)
    }

    /// The old value of a guarded definition's group, when a definition reaches it.
    fn old_value(&mut self, g: &Group, pre: &mut Vec<IrInst>) -> Result<Option<Value>> {
        let vars: Vec<Option<usize>> = g.vars().collect();
        if vars
            .iter()
            .all(|v| v.and_then(|v| self.current(v)).is_none())
        {
            return Ok(None);
        }
        if !g.tuple {
            return Ok(vars[0].and_then(|v| self.current(v)));
        }
        let mut parts = Vec::with_capacity(vars.len());
        for v in vars {
            parts.push(match v {
                Some(var) => self.read(var, g.pos, pre),
                None => {
                    let ty = g.ty;
                    let u = self
                        .ir
                        .value("undef", self.class_of(ty), ty.units(), ty, g.pos);
                    pre.push(helper(
                        "undef",
                        vec![Def::new(u, g.pos)],
                        Vec::new(),
                        g.pos,
                        Origin::Undef,
                    ));
                    u
                }
            });
        }
        self.collect(&parts, g, pre).map(Some)
    }

    fn inst(&mut self, irb: usize, l: &LInst, pushed: &mut Vec<usize>) -> Result<()> {
        if let Some((d, s)) = l.copy {
            let v = self.current(s.var);
            self.set(d.var, v, pushed);
            return Ok(());
        }
        if let Some((Width::Truncate, d, s)) = l.width {
            if let Some(&low) = self.current(s.var).and_then(|w| self.widened.get(&w)) {
                self.set(d.var, Some(low), pushed);
                return Ok(());
            }
        }
        let mut pre = Vec::new();
        let mut operands = Vec::new();
        let mut positions = Vec::new();
        let mut bindings = Vec::new();
        let mut operand_of_stmt: Vec<(usize, usize)> = Vec::new();
        for u in &l.uses {
            match u {
                LUse::Imm(bits) => {
                    operands.push(Operand::imm(*bits));
                    positions.push(Position::Register);
                }
                LUse::Group(g, pos) => {
                    let idx = operands.len();
                    let value = self.group_value(g, &mut pre)?;
                    operands.push(Operand::Value(use_of(value, g.pos)));
                    positions.push(*pos);
                    if let Some(k) = g.operand {
                        operand_of_stmt.push((k, idx));
                    }
                    if g.in_text {
                        bind(&mut bindings, g, |elem| Slot::Use { operand: idx, elem });
                    }
                }
            }
        }
        let mut tied = l.tied.clone();
        if l.guard.is_some() {
            for (d, g) in l.defs.iter().enumerate() {
                if tied.iter().any(|t| t.0 == d) {
                    continue;
                }
                if let Some(old) = self.old_value(g, &mut pre)? {
                    tied.push((d, operands.len()));
                    operands.push(Operand::Value(use_of(old, g.pos)));
                    positions.push(Position::Register);
                }
            }
        }
        let mut defs = Vec::new();
        let mut post = Vec::new();
        let mut new_values: Vec<(usize, Value)> = Vec::new();
        for (d, g) in l.defs.iter().enumerate() {
            let v = self.def_group(g, l.pinned, &mut post, &mut new_values)?;
            let mut def = Def::new(v, g.pos);
            def.tied = tied.iter().find(|t| t.0 == d).map(|t| t.1 as u16);
            defs.push(def);
            if g.in_text {
                bind(&mut bindings, g, |elem| Slot::Def { def: d, elem });
            }
        }
        if let Some((d, k)) = l.prefer {
            let to = operand_of_stmt.iter().find(|(s, _)| *s == k).map(|x| x.1);
            if let (Some(def), Some(u)) = (defs.get_mut(d), to) {
                let same = match operands[u] {
                    Operand::Value(use_) => {
                        self.ir.values[use_.value.index()].data.size
                            == self.ir.values[def.value.index()].data.size
                    }
                    Operand::Imm(_) => false,
                };
                if same && def.tied.is_none() {
                    def.prefer = Some(u as u16);
                }
            }
        }
        if let ([def], Some(c)) = (defs.as_slice(), l.constant) {
            self.ir.values[def.value.index()].constant = Some(c);
        }
        if let (Some((Width::Widen, ..)), [def], [Operand::Value(source)]) =
            (l.width, defs.as_slice(), operands.as_slice())
        {
            self.widened.insert(def.value, source.value);
        }
        let op = Op {
            opcode: chr_opcode(&l.opcode).into(),
            defs: defs.into(),
            operands: operands.into(),
            effect: l.effect,
            regs: RegAccesses::default(),
            remat: l.remat,
        };
        let insts = &mut self.ir.blocks[irb].insts;
        insts.append(&mut pre);
        insts.push(IrInst {
            op,
            pos: l.pos,
            origin: Origin::Stmt {
                item: l.item,
                bindings,
            },
            positions,
        });
        insts.append(&mut post);
        for (var, v) in new_values {
            self.set(var, Some(v), pushed);
        }
        Ok(())
    }

    /// A definition group: a register's new value, or a tuple and its `split` (in `post`).
    fn def_group(
        &mut self,
        g: &Group,
        pinned: bool,
        post: &mut Vec<IrInst>,
        new_values: &mut Vec<(usize, Value)>,
    ) -> Result<Value> {
        if !g.tuple {
            let Some(var) = g.vars().next().flatten() else {
                return Err(PtxError {
                    pos: g.pos,
                    message: "expected a destination register".into(),
                });
            };
            let v = self.var_value(var, g.pos);
            self.ir.values[v.index()].pinned = pinned;
            new_values.push((var, v));
            return Ok(v);
        }
        let size = self.tuple_size(g)?;
        let t = self
            .ir
            .value("tuple", self.class_of(g.ty), size, g.ty, g.pos);
        self.ir.values[t.index()].pinned = pinned;
        let mut defs = Vec::with_capacity(g.elems.len());
        for var in g.vars() {
            let v = match var {
                Some(var) => {
                    let v = self.var_value(var, g.pos);
                    new_values.push((var, v));
                    v
                }
                None => self
                    .ir
                    .value("sink", self.class_of(g.ty), g.ty.units(), g.ty, g.pos),
            };
            defs.push(Def::new(v, g.pos));
        }
        post.push(helper(
            "split",
            defs,
            vec![Operand::Value(use_of(t, g.pos))],
            g.pos,
            Origin::Split,
        ));
        Ok(t)
    }

    fn terminator(&mut self, b: usize, irb: usize) {
        let block = &self.blocks[b];
        let pos = block.term_inst.as_ref().map_or(block.pos, |l| l.pos);
        let term = match block.term {
            PTerm::Jump(t) => Terminator::Jump {
                target: Block(self.ir_of[t].unwrap_or_default() as u32),
                pos,
            },
            PTerm::Ret => Terminator::Ret {
                uses: Vec::new(),
                pos,
            },
            PTerm::Branch {
                cond,
                uniform,
                then_block,
                else_block,
                ..
            } => {
                let mut pre = Vec::new();
                let value = self.read(cond.var, cond.pos, &mut pre);
                self.ir.blocks[irb].insts.append(&mut pre);
                self.ir.blocks[irb].term_bindings.push(Binding {
                    span: cond.span,
                    slot: Slot::Cond,
                });
                Terminator::Branch {
                    kind: if uniform {
                        BranchKind::Uniform
                    } else {
                        BranchKind::Divergent
                    },
                    cond: use_of(value, cond.pos),
                    then_block: Block(self.ir_of[then_block].unwrap_or_default() as u32),
                    else_block: Block(self.ir_of[else_block].unwrap_or_default() as u32),
                    pos,
                }
            }
        };
        self.ir.blocks[irb].term = term;
    }
}

fn bind(bindings: &mut Vec<Binding>, g: &Group, slot: impl Fn(u16) -> Slot) {
    for (elem, e) in g.elems.iter().enumerate() {
        if let LElem::Var(r) = e {
            bindings.push(Binding {
                span: r.span,
                slot: slot(elem as u16),
            });
        }
    }
}

pub fn use_of(value: Value, pos: Pos) -> Use {
    Use {
        value,
        fixed: None,
        loc: None,
        pos,
    }
}

pub fn helper(
    opcode: &str,
    defs: Vec<Def>,
    operands: Vec<Operand>,
    pos: Pos,
    origin: Origin,
) -> IrInst {
    let positions = vec![Position::Register; operands.len()];
    IrInst {
        op: Op {
            opcode: opcode.into(),
            defs: defs.into(),
            operands: operands.into(),
            effect: Effect::None,
            regs: RegAccesses::default(),
            remat: matches!(origin, Origin::Undef),
        },
        pos,
        origin,
        positions,
    }
}

/// The opcode as the `.chr` format spells it: characters other than letters, digits, `_`,
/// `.` and `-` (the `::` of cache hints) become `_`.
pub fn chr_opcode(opcode: &str) -> String {
    opcode
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
