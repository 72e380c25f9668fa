//! A residency ([`crate::residency`]) written into the program, and back.
//!
//! [`rewrite`] turns the function into one the assignment model of [`crate::problem`]
//! takes as it is: each reload (or recomputation) becomes an operation defining a new SSA
//! value, each store an operation reading the value's current version, and where versions
//! meet at a block entry with the value in a register a phi joins them (SSA reconstruction
//! with trivial phis removed, as in Braun et al., "Simple and efficient construction of
//! static single assignment form", CC 2013). A memory phi leaves the program: its
//! incoming edges store their arguments. Every version lives exactly while the residency
//! keeps the value in a register, so the pressure the assignment sees is the residency's.
//!
//! [`restore`] maps the assigned program back onto the original: the reload operations
//! become `reload`s (or `remat`s), the store operations `spill`s into the value's spill
//! location, the join phis disappear behind the parallel copies the assignment's decoding
//! put on their edges, memory phis return with their spill location, and every version
//! is named by its original value again.

use crate::residency::Residency;
use crate::OracleError;
use chromatic::program::{
    smallvec, Block, Def, Defs, Function, Inst, InstKind, Location, Move, Op, Operand, Operands,
    Phi, PhiArg, Pos, RegAccesses, Use, Value, ValueData,
};
use chromatic::target::ClassId;
use std::collections::BTreeMap;

const RELOAD: &str = "oracle.reload";
const STORE: &str = "oracle.store";

/// The function with the residency written in, and the original value of each of its values.
#[derive(Debug)]
pub struct Rewritten {
    pub function: Function,
    pub original: Vec<Value>,
}

/// Per block, the version of each value of the class in a register at its end.
type Versions = BTreeMap<Value, Value>;

/// `f` (every edge into a phi from a block with several successors split, every
/// instruction an operation) with the residency of `class` written in.
pub fn rewrite(f: &Function, class: ClassId, r: &Residency) -> Result<Rewritten, OracleError> {
    let mut w = Writer {
        source: f,
        g: f.clone(),
        original: f.value_ids().collect(),
        joins: Vec::new(),
        class,
        r,
    };
    let mut ends: Vec<Versions> = Vec::new();
    for b in f.block_ids() {
        ends.push(w.block(b)?);
    }
    w.memory_phi_edges(&ends)?;
    w.phi_arguments(&ends)?;
    w.join_arguments(&ends)?;
    w.remove_trivial_joins();
    Ok(Rewritten {
        function: w.g,
        original: w.original,
    })
}

struct Writer<'a> {
    source: &'a Function,
    g: Function,
    original: Vec<Value>,
    /// Join phis added: (block, original value, version).
    joins: Vec<(Block, Value, Value)>,
    class: ClassId,
    r: &'a Residency,
}

impl Writer<'_> {
    fn version(&mut self, v: Value, tag: &str) -> Value {
        let data = self.g.value(v).clone();
        let mut name = format!("{}.{tag}", data.name);
        while self.g.values.iter().any(|d| d.name == name) {
            name.push('_');
        }
        self.g.values.push(ValueData {
            name: name.into(),
            ..data
        });
        self.original.push(v);
        Value(self.g.values.len() as u32 - 1)
    }

    fn at(&self, list: &[(Block, usize, Value)], b: Block, j: usize) -> Vec<Value> {
        list.iter()
            .filter(|&&(lb, lj, _)| lb == b && lj == j)
            .map(|&(_, _, v)| v)
            .collect()
    }

    fn reload_op(&mut self, v: Value, current: &mut Versions) -> Inst {
        let version = self.version(v, "r");
        current.insert(v, version);
        let def = Def::new(version, Pos::default());
        op_inst(
            RELOAD,
            smallvec![def],
            smallvec![Operand::imm(i64::from(v.0))],
        )
    }

    fn store_op(&self, v: Value, owner: Value, current: &Versions) -> Result<Inst, OracleError> {
        let version = *current.get(&v).ok_or_else(|| self.not_in_register(v))?;
        let read = Operand::Value(Use {
            value: version,
            fixed: None,
            loc: None,
            pos: Pos::default(),
        });
        Ok(op_inst(
            STORE,
            Defs::new(),
            smallvec![read, Operand::imm(i64::from(owner.0))],
        ))
    }

    fn not_in_register(&self, v: Value) -> OracleError {
        OracleError::OutsideModel(format!(
            "`%{}` is read where the residency has it in no register",
            self.g.value(v).name
        ))
    }

    /// Rewrites block `b`; the versions in registers at its end.
    fn block(&mut self, b: Block) -> Result<Versions, OracleError> {
        let mut current = Versions::new();
        let resident = &self.r.resident[b.index()];
        let phis: Vec<Value> = self.g.block(b).phis.iter().map(|p| p.def.value).collect();
        let reloads = self.at(&self.r.reloads, b, 0);
        let mut insts: Vec<Inst> = Vec::new();
        for &v in resident.first().map_or(&[][..], |e| &e[..]) {
            if reloads.contains(&v) {
                insts.push(self.reload_op(v, &mut current));
            } else if phis.contains(&v) {
                current.insert(v, v);
            } else {
                let join = self.version(v, &format!("j.{}", self.g.block(b).name));
                self.joins.push((b, v, join));
                current.insert(v, join);
            }
        }
        self.g.blocks[b.index()]
            .phis
            .retain(|p| !self.r.memory_phis.contains(&p.def.value));
        for v in self.at(&self.r.stores, b, 0) {
            insts.push(self.store_op(v, v, &current)?);
        }
        let original = std::mem::take(&mut self.g.blocks[b.index()].insts);
        for (i, mut inst) in original.into_iter().enumerate() {
            let (before, after) = (2 * i + 1, 2 * i + 2);
            self.point(b, before, &mut current, &mut insts)?;
            let InstKind::Op(op) = &mut inst.kind else {
                return Err(OracleError::OutsideModel(String::from(
                    "the program already has allocation instructions",
                )));
            };
            for u in op.operands.iter_mut().filter_map(operand_use) {
                self.rename(u, &current)?;
            }
            for d in op
                .defs
                .iter()
                .filter(|d| self.g.value(d.value).class == self.class)
            {
                current.insert(d.value, d.value);
            }
            insts.push(inst);
            for v in self.at(&self.r.stores, b, after) {
                insts.push(self.store_op(v, v, &current)?);
            }
            keep_resident(&mut current, &resident[after]);
        }
        let last = resident.len() - 1;
        self.point(b, last, &mut current, &mut insts)?;
        let mut term = self.g.blocks[b.index()].term.clone();
        for u in term.uses_mut() {
            self.rename(u, &current)?;
        }
        let block = &mut self.g.blocks[b.index()];
        block.term = term;
        block.insts = insts;
        keep_resident(&mut current, &resident[last]);
        Ok(current)
    }

    /// Before an instruction (or the terminator): evictions, reloads, stores.
    fn point(
        &mut self,
        b: Block,
        j: usize,
        current: &mut Versions,
        insts: &mut Vec<Inst>,
    ) -> Result<(), OracleError> {
        keep_resident(current, &self.r.resident[b.index()][j]);
        for v in self.at(&self.r.reloads, b, j) {
            insts.push(self.reload_op(v, current));
        }
        for v in self.at(&self.r.stores, b, j) {
            insts.push(self.store_op(v, v, current)?);
        }
        Ok(())
    }

    fn rename(&self, u: &mut Use, current: &Versions) -> Result<(), OracleError> {
        if self.g.value(u.value).class != self.class {
            return Ok(());
        }
        u.value = *current
            .get(&u.value)
            .ok_or_else(|| self.not_in_register(u.value))?;
        Ok(())
    }

    /// Each incoming edge of a memory phi stores its argument into the phi's location, at
    /// the end of the edge's source (which ends in a jump: such edges are split), except
    /// an edge whose argument shares the location (stored there already).
    fn memory_phi_edges(&mut self, ends: &[Versions]) -> Result<(), OracleError> {
        let f_phis: Vec<(Value, Vec<PhiArg>)> = self
            .r
            .memory_phis
            .iter()
            .filter_map(|&phi| {
                let p = self.phi_in_original(phi)?;
                Some((phi, p.args.clone()))
            })
            .collect();
        for (phi, args) in f_phis {
            for a in args {
                let shared = self
                    .r
                    .shared
                    .iter()
                    .any(|x| x.phi == phi && x.from == a.block);
                if shared {
                    continue;
                }
                let store = self.store_op(a.value, phi, &ends[a.block.index()])?;
                self.g.blocks[a.block.index()].insts.push(store);
            }
        }
        Ok(())
    }

    /// The phi defining `v` before the rewrite (memory phis are gone from `g`).
    fn phi_in_original(&self, v: Value) -> Option<Phi> {
        self.source
            .blocks
            .iter()
            .flat_map(|b| &b.phis)
            .find(|p| p.def.value == v)
            .cloned()
    }

    fn phi_arguments(&mut self, ends: &[Versions]) -> Result<(), OracleError> {
        for b in 0..self.g.blocks.len() {
            let class = self.class;
            let mut phis = std::mem::take(&mut self.g.blocks[b].phis);
            for phi in phis.iter_mut() {
                if self.g.value(phi.def.value).class != class {
                    continue;
                }
                for a in phi.args.iter_mut() {
                    a.value = *ends[a.block.index()]
                        .get(&a.value)
                        .ok_or_else(|| self.not_in_register(a.value))?;
                }
            }
            self.g.blocks[b].phis = phis;
        }
        Ok(())
    }

    /// The join phis, one argument per predecessor: the version at its end.
    fn join_arguments(&mut self, ends: &[Versions]) -> Result<(), OracleError> {
        let preds = predecessors(&self.g);
        for &(b, v, join) in &self.joins {
            let mut args = Vec::new();
            for &p in &preds[b.index()] {
                let value = *ends[p.index()]
                    .get(&v)
                    .ok_or_else(|| self.not_in_register(v))?;
                args.push(PhiArg {
                    block: p,
                    value,
                    pos: Pos::default(),
                });
            }
            self.g.blocks[b.index()].phis.push(Phi {
                def: Def::new(join, Pos::default()),
                args,
                pos: Pos::default(),
            });
        }
        Ok(())
    }

    /// Replaces each join phi whose arguments are one version (or itself) by that version,
    /// until none is left, and numbers the values left densely (original values keep
    /// their numbers: only join versions go).
    fn remove_trivial_joins(&mut self) {
        let mut alias: BTreeMap<Value, Value> = BTreeMap::new();
        let resolve = |alias: &BTreeMap<Value, Value>, mut v: Value| {
            while let Some(&a) = alias.get(&v) {
                v = a;
            }
            v
        };
        let mut changed = true;
        while changed {
            changed = false;
            for &(b, _, join) in &self.joins {
                if alias.contains_key(&join) {
                    continue;
                }
                let phi = self.g.block(b).phis.iter().find(|p| p.def.value == join);
                let Some(phi) = phi else { continue };
                let mut distinct: Vec<Value> = phi
                    .args
                    .iter()
                    .map(|a| resolve(&alias, a.value))
                    .filter(|&v| v != join)
                    .collect();
                distinct.sort();
                distinct.dedup();
                if let [only] = distinct[..] {
                    alias.insert(join, only);
                    changed = true;
                }
            }
        }
        for &(b, _, join) in &self.joins {
            if alias.contains_key(&join) {
                self.g.blocks[b.index()]
                    .phis
                    .retain(|p| p.def.value != join);
            }
        }
        let mut number: Vec<Option<Value>> = vec![None; self.g.values.len()];
        let mut values = Vec::new();
        let mut original = Vec::new();
        for (i, data) in self.g.values.iter().enumerate() {
            if !alias.contains_key(&Value(i as u32)) {
                number[i] = Some(Value(values.len() as u32));
                values.push(data.clone());
                original.push(self.original[i]);
            }
        }
        self.g.map_values(|v| {
            let v = resolve(&alias, v);
            number[v.index()].unwrap_or(v)
        });
        self.g.values = values;
        self.original = original;
    }
}

fn operand_use(o: &mut Operand) -> Option<&mut Use> {
    match o {
        Operand::Value(u) => Some(u),
        Operand::Imm(_) => None,
    }
}

fn keep_resident(current: &mut Versions, resident: &[Value]) {
    current.retain(|v, _| resident.contains(v));
}

fn op_inst(opcode: &str, defs: Defs, operands: Operands) -> Inst {
    Inst {
        kind: InstKind::Op(Op {
            opcode: opcode.into(),
            defs,
            operands,
            effect: Default::default(),
            regs: RegAccesses::default(),
            remat: false,
        }),
        pos: Pos::default(),
    }
}

/// Per block, its predecessors in the order of the blocks' terminators.
fn predecessors(f: &Function) -> Vec<Vec<Block>> {
    let mut preds = vec![Vec::new(); f.blocks.len()];
    for b in f.block_ids() {
        for s in f.block(b).term.successors() {
            if !preds[s.index()].contains(&b) {
                preds[s.index()].push(b);
            }
        }
    }
    preds
}

/// `assigned` (the rewritten function with registers) as an allocation of `f`: the
/// function `rewrite` started from.
pub fn restore(
    f: &Function,
    assigned: &Function,
    original: &[Value],
    r: &Residency,
    remat: &[bool],
    slot: &dyn Fn(Value) -> Location,
) -> Function {
    let mut out = assigned.clone();
    let first_new = f.values.len();
    for (b, block) in out.blocks.iter_mut().enumerate() {
        block.phis.retain(|p| p.def.value.index() < first_new);
        if let Some(of_f) = f.blocks.get(b) {
            let mut phis = Vec::new();
            for phi in &of_f.phis {
                if r.memory_phis.contains(&phi.def.value) {
                    let mut p = phi.clone();
                    p.def.loc = Some(slot(phi.def.value));
                    phis.push(p);
                } else if let Some(p) = block.phis.iter().find(|p| p.def.value == phi.def.value) {
                    phis.push(p.clone());
                }
            }
            block.phis = phis;
        }
        for inst in &mut block.insts {
            if let Some(kind) = spill_code(inst, original, remat, slot) {
                inst.kind = kind;
            }
        }
    }
    out.map_values(|v| original[v.index()]);
    out.values = f.values.clone();
    out
}

/// The `spill`, `reload` or `remat` an oracle operation stands for.
fn spill_code(
    inst: &Inst,
    original: &[Value],
    remat: &[bool],
    slot: &dyn Fn(Value) -> Location,
) -> Option<InstKind> {
    let op = inst.op()?;
    let owner = |k: usize| match op.operands.get(k) {
        Some(&Operand::Imm(i)) => Value(i.get() as u32),
        _ => Value(0),
    };
    match op.opcode.as_str() {
        RELOAD => {
            let d = op.defs.first()?;
            let v = original[d.value.index()];
            let dst = d.loc?;
            Some(if remat[v.index()] {
                InstKind::Remat {
                    dst,
                    value: v,
                    uses: Vec::new(),
                }
            } else {
                InstKind::Reload(Move {
                    dst,
                    src: slot(v),
                    value: v,
                })
            })
        }
        STORE => {
            let u = op.operands.first()?.as_use()?;
            Some(InstKind::Spill(Move {
                dst: slot(owner(1)),
                src: u.loc?,
                value: original[u.value.index()],
            }))
        }
        _ => None,
    }
}
