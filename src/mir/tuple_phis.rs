//! PHIs of a tuple's parts that a `REG_SEQUENCE` puts back together become one tuple PHI.
//!
//! Triton's loops carry packed values as 32-bit PHIs: in `t05_layernorm_bwd_dwdb` a loop
//! block starts `%37 = PHI %871, %bb.2, %86, %bb.4`, `%38 = PHI %871, %bb.2, %87, %bb.4`,
//! `%838 = REG_SEQUENCE %37, %subreg.sub0, %38, %subreg.sub1`, computes
//! `%69 = V_PK_ADD_F32 … %838 …` and ends `%86 = COPY %69.sub0`, `%87 = COPY %69.sub1`,
//! with `%69` read whole after the loop. LLVM's register coalescer joins each
//! sub-register copy into the tuple (`RegisterCoalescer`, `joinCopy` of a copy from a
//! sub-register, "subreg join"), and then the PHI copies and the `REG_SEQUENCE` into the
//! same registers, so the loop carries one register pair. In the program model a copy is a
//! value of its own: `%69` and its two copies are live together at the back edge, four
//! VGPRs for two, once per pair (16 pairs there: 71 VGPRs live where LLVM needs 57).
//!
//! The rule, the PHI-group rule of the PTX importer (`ptx::tuples`) on machine IR, and what
//! Mesa ACO does for `p_create_vector` of loop-carried parts: PHIs of one block, read only
//! by one `REG_SEQUENCE` that places each at its units, whose arguments on some edge are
//! the parts of one tuple of the sequence's class and size at those units — part copies
//! (`COPY %t.subK`, or the copy the importer writes for a sub-register PHI argument) or
//! the elements of the importer's split of `%t` ([`super::parts`]), each read by nothing
//! else — become one PHI of the tuple. On such an edge its argument is `%t`; on any other
//! edge, a `REG_SEQUENCE` of that edge's arguments at the end of the predecessor (a copy
//! of the original, at its source position, so the export writes it as part copies). The
//! sequence's definition is the new PHI's. Part copies and splits left unread are removed.
//! Every instant keeps the units it had (the parts were live where the tuple PHI is), and
//! the back edge loses the copies.

use crate::program::{Block, Function, Inst, InstKind, Op, Operand, Phi, PhiArg, Value, ValueData};
use std::collections::{HashMap, HashSet};

/// What the importer knows of tuples' parts, by value.
#[derive(Default)]
pub struct TupleParts {
    /// A value that is a part of the tuple its defining `COPY` or `SPLIT` reads: the
    /// first unit of the tuple it holds.
    pub part_of: HashMap<Value, u16>,
    /// A `REG_SEQUENCE`'s definition: the first unit and units of each value operand, in
    /// operand order.
    pub sequences: HashMap<Value, Vec<(u16, u16)>>,
}

/// Every PHI group the rule applies to, as one tuple PHI each.
pub fn form_tuple_phis(f: &mut Function, parts: &TupleParts) {
    let reads = read_counts(f);
    let defined_by = defining_ops(f);
    let phi_at = phi_sites(f);
    let ctx = Context {
        f,
        parts,
        reads: &reads,
        defined_by: &defined_by,
        phi_at: &phi_at,
    };
    let mut next_value = f.values.len();
    let mut groups = Vec::new();
    for inst in f.blocks.iter().flat_map(|b| &b.insts) {
        if let Some(g) = inst.op().and_then(|op| ctx.group(op, inst, next_value)) {
            next_value += g.collects.len();
            groups.push(g);
        }
    }
    if groups.is_empty() {
        return;
    }
    apply(f, groups);
    drop_unread_parts(f);
}

/// One group found: the tuple PHI that replaces the PHIs, and the collects it needs.
struct Group {
    block: Block,
    /// The PHIs it replaces, and the `REG_SEQUENCE` (by its definition).
    members: Vec<Value>,
    sequence: Value,
    phi: Phi,
    /// Per edge without a whole tuple: the predecessor and the `REG_SEQUENCE` of its
    /// arguments, and the data of the value it defines.
    collects: Vec<(Block, Inst, ValueData)>,
}

struct Context<'a> {
    f: &'a Function,
    parts: &'a TupleParts,
    reads: &'a [u32],
    defined_by: &'a HashMap<Value, &'a Op>,
    phi_at: &'a HashMap<Value, (Block, usize)>,
}

impl Context<'_> {
    /// The group a `REG_SEQUENCE` closes, if the rule applies; the collects it needs
    /// define values numbered from `next_value`.
    fn group(&self, op: &Op, inst: &Inst, next_value: usize) -> Option<Group> {
        let [def] = op.defs.as_slice() else {
            return None;
        };
        let units = self.parts.sequences.get(&def.value)?;
        let members: Vec<Value> = op.uses().map(|u| u.value).collect();
        let block = self.member_block(def.value, &members, units)?;
        let phis: Vec<&Phi> = members
            .iter()
            .map(|m| &self.f.blocks[block.index()].phis[self.phi_at[m].1])
            .collect();
        let mut args = Vec::new();
        let mut collects = Vec::new();
        let mut whole_edges = 0;
        for edge in &phis[0].args {
            let values: Vec<Value> = phis
                .iter()
                .map(|p| {
                    p.args
                        .iter()
                        .find(|a| a.block == edge.block)
                        .map(|a| a.value)
                })
                .collect::<Option<_>>()?;
            let value = match self.whole_tuple(def.value, &values, units) {
                Some(tuple) => {
                    whole_edges += 1;
                    tuple
                }
                None => {
                    let value = Value((next_value + collects.len()) as u32);
                    collects.push(self.collect(op, inst, &values, value, edge.block));
                    value
                }
            };
            args.push(PhiArg {
                block: edge.block,
                value,
                pos: edge.pos,
            });
        }
        (whole_edges > 0).then(|| Group {
            block,
            members,
            sequence: def.value,
            phi: Phi {
                def: *def,
                args,
                pos: phis[0].pos,
            },
            collects,
        })
    }

    /// The block whose PHIs are the sequence's operands, each read only there, of the
    /// sequence's class, filling its units exactly once.
    fn member_block(&self, tuple: Value, members: &[Value], units: &[(u16, u16)]) -> Option<Block> {
        if members.len() != units.len() {
            return None;
        }
        let class = self.f.value(tuple).class;
        let block = self.phi_at.get(members.first()?)?.0;
        let mut covered = vec![false; usize::from(self.f.value(tuple).size)];
        for (m, &(first, len)) in members.iter().zip(units) {
            let data = self.f.value(*m);
            let in_block = self.phi_at.get(m).is_some_and(|&(b, _)| b == block);
            if !in_block || self.reads[m.index()] != 1 || data.class != class || data.size != len {
                return None;
            }
            for unit in usize::from(first)..usize::from(first + len) {
                if std::mem::replace(covered.get_mut(unit)?, true) {
                    return None;
                }
            }
        }
        covered.iter().all(|&c| c).then_some(block)
    }

    /// The tuple whose parts `values` are at `units`, each read only by its PHI, when it
    /// has the class and size of `like`.
    fn whole_tuple(&self, like: Value, values: &[Value], units: &[(u16, u16)]) -> Option<Value> {
        let mut tuple = None;
        for (v, &(first, _)) in values.iter().zip(units) {
            let at = *self.parts.part_of.get(v)?;
            let source = self.defined_by.get(v)?.uses().next()?.value;
            if at != first || self.reads[v.index()] != 1 || *tuple.get_or_insert(source) != source {
                return None;
            }
        }
        let (t, l) = (self.f.value(tuple?), self.f.value(like));
        ((t.class, t.size) == (l.class, l.size)).then_some(tuple?)
    }

    /// A copy of the sequence reading `values`, defining `value`, for the end of `pred`.
    fn collect(
        &self,
        op: &Op,
        inst: &Inst,
        values: &[Value],
        value: Value,
        pred: Block,
    ) -> (Block, Inst, ValueData) {
        let mut copy = op.clone();
        let mut next = values.iter();
        for operand in &mut copy.operands {
            if let Operand::Value(u) = operand {
                u.value = *next.next().unwrap_or(&u.value);
            }
        }
        copy.defs[0].value = value;
        let tuple = self.f.value(op.defs[0].value);
        let data = ValueData {
            name: compact_str::format_compact!(
                "{}.{}",
                tuple.name,
                self.f.blocks[pred.index()].name
            ),
            ..tuple.clone()
        };
        let inst = Inst {
            kind: InstKind::Op(copy),
            pos: inst.pos,
        };
        (pred, inst, data)
    }
}

/// The groups written into the function: collects appended to their predecessors, each
/// group's PHIs replaced by its tuple PHI (in the first member's place), the sequences
/// removed.
fn apply(f: &mut Function, groups: Vec<Group>) {
    let mut replaced: HashMap<Value, Option<Phi>> = HashMap::new();
    let mut sequences = HashSet::new();
    let mut added = Vec::new();
    for g in groups {
        let first = g
            .members
            .iter()
            .copied()
            .min_by_key(|m| phi_index(f, g.block, *m))
            .unwrap_or(g.sequence);
        for m in &g.members {
            replaced.insert(*m, (*m == first).then(|| g.phi.clone()));
        }
        sequences.insert(g.sequence);
        added.extend(g.collects);
    }
    for (pred, inst, data) in added {
        f.values.push(data);
        f.blocks[pred.index()].insts.push(inst);
    }
    for block in &mut f.blocks {
        block.phis = std::mem::take(&mut block.phis)
            .into_iter()
            .filter_map(|p| match replaced.get(&p.def.value) {
                Some(tuple) => tuple.clone(),
                None => Some(p),
            })
            .collect();
        block.insts.retain(|i| {
            !i.op().is_some_and(|op| {
                op.defs
                    .first()
                    .is_some_and(|d| sequences.contains(&d.value))
            })
        });
    }
}

fn phi_index(f: &Function, block: Block, v: Value) -> usize {
    f.blocks[block.index()]
        .phis
        .iter()
        .position(|p| p.def.value == v)
        .unwrap_or(usize::MAX)
}

/// Removes `COPY`s and `SPLIT`s of a value into values (not fixed registers such as
/// `$vcc`) that nothing reads, until none is left.
fn drop_unread_parts(f: &mut Function) {
    loop {
        let reads = read_counts(f);
        let unread = |op: &Op| {
            matches!(op.opcode.as_str(), "COPY" | "SPLIT")
                && op.uses().next().is_some()
                && op.regs.is_empty()
                && !op.defs.is_empty()
                && op.defs.iter().all(|d| reads[d.value.index()] == 0)
        };
        let before: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
        for block in &mut f.blocks {
            block.insts.retain(|i| !i.op().is_some_and(unread));
        }
        let after: usize = f.blocks.iter().map(|b| b.insts.len()).sum();
        if after == before {
            return;
        }
    }
}

/// How many times each value is read (operands, PHI arguments, terminators).
fn read_counts(f: &Function) -> Vec<u32> {
    let mut reads = vec![0; f.values.len()];
    for block in &f.blocks {
        for p in &block.phis {
            p.args.iter().for_each(|a| reads[a.value.index()] += 1);
        }
        for op in block.insts.iter().filter_map(Inst::op) {
            op.uses().for_each(|u| reads[u.value.index()] += 1);
        }
        block
            .term
            .uses()
            .iter()
            .for_each(|u| reads[u.value.index()] += 1);
    }
    reads
}

fn defining_ops(f: &Function) -> HashMap<Value, &Op> {
    f.blocks
        .iter()
        .flat_map(|b| b.insts.iter().filter_map(Inst::op))
        .flat_map(|op| op.defs.iter().map(move |d| (d.value, op)))
        .collect()
}

fn phi_sites(f: &Function) -> HashMap<Value, (Block, usize)> {
    f.blocks
        .iter()
        .enumerate()
        .flat_map(|(b, block)| {
            block
                .phis
                .iter()
                .enumerate()
                .map(move |(i, p)| (p.def.value, (Block(b as u32), i)))
        })
        .collect()
}
