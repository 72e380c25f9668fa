//! Structural correspondence between the original and the allocated function.
//!
//! Blocks match by name. A block the original lacks must be a split edge: only artefacts
//! and a `jump`, one predecessor, sitting on an original edge `a→b` (which becomes
//! `a→n→b`; phis of `b` then name `n`). Terminators and phis must equal the original's
//! modulo split edges, in order, except that a phi of constants (every argument a `remat`
//! operation's value) may be left out: a select recomputes it (`select.rs`). In each block, every original operation must appear exactly once,
//! unchanged (opcode, defs, operands, constraints, effects); anything else added must be an
//! artefact. The order of operations is a rule of its own (`order.rs`: any order that keeps
//! the original's dependences).

use crate::cfg::Row;
use crate::error::{ErrorKind, Point};
use crate::order::{check_order, Block};
use crate::sink::Sink;
use chromatic::{Def, Function, Op, Operand, Terminator, Use, Value};
use rustc_hash::FxHashMap;

/// Checks blocks, split edges, terminators, phis and operations.
/// `by_name` gives per allocated value the original value of the same name
/// (`check::originals_by_name`).
pub(crate) fn check_structure(
    o: &Function,
    a: &Function,
    by_name: &[Option<u32>],
    sink: &mut Sink,
) {
    let o_names: FxHashMap<&str, usize> = name_index(o);
    let original: Vec<Option<usize>> = a
        .blocks
        .iter()
        .map(|b| o_names.get(b.name.as_str()).copied())
        .collect();
    // Block names are unique (the parser refuses a label defined twice), so an original
    // block is present exactly when an allocated block maps to it.
    let mut present = vec![false; o.blocks.len()];
    for &oi in original.iter().flatten() {
        present[oi] = true;
    }
    for (ob, _) in o.blocks.iter().zip(&present).filter(|&(_, &p)| !p) {
        sink.report(ErrorKind::MissingBlock, &ob.name, Point::Block, ob.pos)
            .in_original();
    }
    let m = Matcher {
        o,
        a,
        by_name,
        original,
        preds: predecessors(a),
        constant: crate::select::constant_values(o),
    };
    for (ai, ab) in a.blocks.iter().enumerate() {
        match m.original[ai] {
            Some(oi) => m.check_block(oi, ai, sink),
            None if m.is_split_edge(ai) => {}
            None => {
                sink.report(ErrorKind::ExtraBlock, &ab.name, Point::Block, ab.pos);
            }
        }
    }
}

/// Per block of `f`, the blocks whose terminator names it, each once.
fn predecessors(f: &Function) -> Vec<Row<usize>> {
    let mut preds: Vec<Row<usize>> = vec![Row::new(); f.blocks.len()];
    for (p, b) in f.blocks.iter().enumerate() {
        for s in b.term.successors() {
            if preds[s.index()].last() != Some(&p) {
                preds[s.index()].push(p);
            }
        }
    }
    preds
}

fn name_index(f: &Function) -> FxHashMap<&str, usize> {
    f.blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.as_str(), i))
        .collect()
}

struct Matcher<'a> {
    o: &'a Function,
    a: &'a Function,
    /// Per allocated value, the original value of the same name.
    by_name: &'a [Option<u32>],
    original: Vec<Option<usize>>,
    /// Per allocated block, its predecessors.
    preds: Vec<Row<usize>>,
    /// Per original value, whether a `remat` operation defines it.
    constant: Vec<bool>,
}

impl Matcher<'_> {
    fn is_split_edge(&self, ai: usize) -> bool {
        let block = &self.a.blocks[ai];
        let Terminator::Jump { target, .. } = block.term else {
            return false;
        };
        let (Some(to), [from]) = (self.original[target.index()], self.preds[ai].as_slice()) else {
            return false;
        };
        let Some(from) = self.original[*from] else {
            return false;
        };
        block.phis.is_empty()
            && block.insts.iter().all(|i| i.is_artefact())
            && self.o.blocks[from]
                .term
                .successors()
                .any(|s| s.index() == to)
    }

    /// The original block an allocated successor stands for (through a split edge).
    fn successor(&self, s: usize) -> Option<usize> {
        match (self.original[s], &self.a.blocks[s].term) {
            (Some(o), _) => Some(o),
            (None, Terminator::Jump { target, .. }) => self.original[target.index()],
            (None, _) => None,
        }
    }

    /// The original block an allocated phi predecessor stands for (through a split edge).
    fn phi_pred(&self, p: usize) -> Option<usize> {
        match self.original[p] {
            Some(o) => Some(o),
            None => match self.preds[p].as_slice() {
                [q] => self.original[*q],
                _ => None,
            },
        }
    }

    fn check_block(&self, oi: usize, ai: usize, sink: &mut Sink) {
        let (ob, ab) = (&self.o.blocks[oi], &self.a.blocks[ai]);
        if !self.same_term(&ob.term, &ab.term) {
            sink.report(
                ErrorKind::TerminatorMismatch,
                &ab.name,
                Point::Term,
                ab.term.pos(),
            );
        }
        let kept: Block<&chromatic::Phi> = ob
            .phis
            .iter()
            .filter(|op| !self.may_drop(op) || ab.phis.iter().any(|ap| self.same_name(op, ap)))
            .collect();
        for (i, ap) in ab.phis.iter().enumerate() {
            if !kept.get(i).is_some_and(|op| self.same_phi(op, ap)) {
                sink.report(ErrorKind::PhiMismatch, &ab.name, Point::Phi(i), ap.pos);
            }
        }
        if kept.len() > ab.phis.len() {
            sink.report(
                ErrorKind::PhiMismatch,
                &ab.name,
                Point::Phi(ab.phis.len()),
                ab.pos,
            );
        }
        self.check_ops(oi, ai, sink);
    }

    /// Whether an allocation may leave out original phi `phi`: its arguments are all
    /// values of `remat` operations, so it has no effect and a `remat` may recompute it as
    /// a select (`select.rs`); a reading of it where nothing wrote it fails the dataflow.
    fn may_drop(&self, phi: &chromatic::Phi) -> bool {
        phi.args.iter().all(|a| self.constant[a.value.index()])
    }

    fn same_name(&self, o: &chromatic::Phi, a: &chromatic::Phi) -> bool {
        self.same_value(o.def.value, a.def.value)
    }

    /// Whether allocated value `a` has the name of original value `o`.
    fn same_value(&self, o: Value, a: Value) -> bool {
        self.by_name[a.index()] == Some(o.0)
    }

    fn same_phi(&self, op: &chromatic::Phi, ap: &chromatic::Phi) -> bool {
        self.same_def(&op.def, &ap.def)
            && op.args.len() == ap.args.len()
            && op.args.iter().all(|oa| {
                ap.args.iter().any(|aa| {
                    self.phi_pred(aa.block.index()) == Some(oa.block.index())
                        && self.same_value(oa.value, aa.value)
                })
            })
    }

    fn check_ops(&self, oi: usize, ai: usize, sink: &mut Sink) {
        let (ob, ab) = (&self.o.blocks[oi], &self.a.blocks[ai]);
        let matched = self.match_ops(oi, ai);
        let mut used: Block<bool> = smallvec::smallvec![false; ab.insts.len()];
        for (k, m) in matched.iter().enumerate() {
            match m {
                Some(i) => used[*i] = true,
                None => {
                    let op = ob.insts.iter().filter(|i| !i.is_artefact()).nth(k);
                    let opcode = op.and_then(|i| i.op()).map(|op| op.opcode.as_str());
                    let pos = op.map_or(ob.pos, |i| i.pos);
                    sink.report(ErrorKind::MissingOp, &ab.name, Point::Block, pos)
                        .in_original()
                        .expected(format!("`{}`", opcode.unwrap_or_default()));
                }
            }
        }
        for (i, inst) in ab.insts.iter().enumerate() {
            if !used[i] && !inst.is_artefact() {
                sink.report(ErrorKind::UnexpectedOp, &ab.name, Point::Inst(i), inst.pos);
            }
        }
        check_order(ob, &matched, ab, sink);
    }

    /// For each original op of the block, the first allocated instruction equal to it not
    /// already matched: the allocated ops in their original order when that is how they
    /// stand, else through [`Self::match_ops_moved`].
    fn match_ops(&self, oi: usize, ai: usize) -> Block<Option<usize>> {
        self.match_ops_in_order(oi, ai)
            .unwrap_or_else(|| self.match_ops_moved(oi, ai))
    }

    /// The allocated block's operations, artefacts aside, when they are the original's
    /// one for one in the same order; `None` as soon as one differs.
    fn match_ops_in_order(&self, oi: usize, ai: usize) -> Option<Block<Option<usize>>> {
        let (ob, ab) = (&self.o.blocks[oi], &self.a.blocks[ai]);
        let mut allocated = ab
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| inst.op().map(|op| (i, op)));
        let mut matched = Block::new();
        for oop in ob.insts.iter().filter_map(|i| i.op()) {
            match allocated.next() {
                Some((i, aop)) if self.same_op(oop, aop) => matched.push(Some(i)),
                _ => return None,
            }
        }
        allocated.next().is_none().then_some(matched)
    }

    /// The general matching: candidates are indexed by what equal ops share (opcode and
    /// first definition's name), so a block is matched in time linear in its length.
    fn match_ops_moved(&self, oi: usize, ai: usize) -> Block<Option<usize>> {
        let (ob, ab) = (&self.o.blocks[oi], &self.a.blocks[ai]);
        let mut candidates: FxHashMap<OpKey<'_>, Vec<usize>> = FxHashMap::default();
        for (i, inst) in ab.insts.iter().enumerate() {
            if let Some(aop) = inst.op() {
                candidates.entry(op_key(self.a, aop)).or_default().push(i);
            }
        }
        let mut taken = vec![false; ab.insts.len()];
        ob.insts
            .iter()
            .filter_map(|i| i.op())
            .map(|oop| {
                let found = candidates.get(&op_key(self.o, oop)).and_then(|c| {
                    c.iter().copied().find(|&i| {
                        !taken[i] && ab.insts[i].op().is_some_and(|aop| self.same_op(oop, aop))
                    })
                });
                if let Some(i) = found {
                    taken[i] = true;
                }
                found
            })
            .collect()
    }

    fn same_op(&self, o: &Op, a: &Op) -> bool {
        o.opcode == a.opcode
            && o.effect == a.effect
            && o.remat == a.remat
            && o.defs.len() == a.defs.len()
            && o.defs.iter().zip(&a.defs).all(|(x, y)| self.same_def(x, y))
            && o.operands.len() == a.operands.len()
            && o.operands
                .iter()
                .zip(&a.operands)
                .all(|(x, y)| match (x, y) {
                    (Operand::Imm(x), Operand::Imm(y)) => x == y,
                    (Operand::Value(x), Operand::Value(y)) => self.same_use(x, y),
                    _ => false,
                })
    }

    fn same_def(&self, o: &Def, a: &Def) -> bool {
        let (ov, av) = (self.o.value(o.value), self.a.value(a.value));
        self.same_value(o.value, a.value)
            && ov.class == av.class
            && ov.size == av.size
            && o.fixed == a.fixed
            && o.tied == a.tied
            && o.prefer == a.prefer
            && o.early_clobber == a.early_clobber
            && o.pinned == a.pinned
    }

    fn same_use(&self, o: &Use, a: &Use) -> bool {
        self.same_value(o.value, a.value) && o.fixed == a.fixed
    }

    fn same_term(&self, o: &Terminator, a: &Terminator) -> bool {
        let same_uses = o.uses().len() == a.uses().len()
            && o.uses()
                .iter()
                .zip(a.uses())
                .all(|(x, y)| self.same_use(x, y));
        let same_succs = o
            .successors()
            .map(|s| Some(s.index()))
            .eq(a.successors().map(|s| self.successor(s.index())));
        let same_kind = match (o, a) {
            (Terminator::Jump { .. }, Terminator::Jump { .. }) => true,
            (Terminator::Ret { .. }, Terminator::Ret { .. }) => true,
            (Terminator::Branch { kind: x, .. }, Terminator::Branch { kind: y, .. }) => x == y,
            _ => false,
        };
        same_kind && same_uses && same_succs
    }
}

/// What two equal ops have in common: the opcode and the name of the first definition.
type OpKey<'f> = (&'f str, Option<&'f str>);

fn op_key<'f>(f: &'f Function, op: &'f Op) -> OpKey<'f> {
    let first_def = op.defs.first().map(|d| f.value(d.value).name.as_str());
    (op.opcode.as_str(), first_def)
}
