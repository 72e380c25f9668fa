//! A prepared chromatic function as regalloc2's input: its `Function` trait and its
//! `MachineEnv`.
//!
//! Blocks go to regalloc2 in reverse post-order (its checker's dataflow, which turns an
//! unvisited predecessor's state into "nothing known", needs a predecessor before each
//! block; code generators lay blocks out that way). regalloc2's instructions are each
//! block's operations
//! followed by one instruction for its terminator (a branch, whose only operand is a
//! branch condition, or a return reading its values). Phis are block parameters, their
//! arguments the branch's block-parameter arguments per successor. Every value is the
//! `VReg` of its index, in the regalloc2 class of its chromatic class's index. An
//! operation's operands are its uses in order (early, in a register or fixed), then its
//! defs (late, or early when early-clobber; fixed; or reusing the tied use). Each block
//! parameter carries a debug label for the program point before its block's first
//! instruction, which is how the output names where the parameter lives at entry.

use super::unsupported;
use crate::alloc::AllocError;
use crate::program::{Def, Function, Inst as ChrInst, Location, Terminator, Use};
use crate::target::{ClassId, Target};
use regalloc2::{
    Block, Inst, InstRange, MachineEnv, Operand, OperandConstraint, OperandKind, OperandPos, PReg,
    PRegSet, RegClass, VReg,
};

/// regalloc2's classes, in the order chromatic's class indices take them.
const CLASSES: [RegClass; 3] = [RegClass::Int, RegClass::Float, RegClass::Vector];

/// The most registers regalloc2 has per class (`PReg::MAX + 1`).
pub const MAX_REGS: u16 = (PReg::MAX + 1) as u16;

/// The highest operand index an operand constraint can reuse (5 bits).
const MAX_REUSED: usize = 31;

/// What one regalloc2 instruction stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Op,
    Branch,
    Ret,
}

/// A chromatic function seen through regalloc2's `Function` trait.
#[derive(Debug)]
pub struct Lowered {
    kinds: Vec<Kind>,
    operands: Vec<Operand>,
    /// Where each instruction's operands start in `operands` (one more entry at the end).
    operand_start: Vec<u32>,
    blocks: Vec<InstRange>,
    succs: Vec<Vec<Block>>,
    preds: Vec<Vec<Block>>,
    params: Vec<Vec<VReg>>,
    /// Per block, per successor index, the arguments of the successor's parameters.
    branch_args: Vec<Vec<Vec<VReg>>>,
    labels: Vec<(VReg, Inst, Inst, u32)>,
    /// regalloc2's block index of each chromatic block.
    index_of: Vec<u32>,
    num_vregs: usize,
    pub env: MachineEnv,
}

impl Lowered {
    /// `f` (prepared: edges into phis from branching blocks split) as regalloc2 input, with
    /// `budget` registers per class allocatable.
    pub fn new(f: &Function, target: &Target, budget: &[u16]) -> Result<Lowered, AllocError> {
        let cfg = crate::analysis::cfg::Graph::of_function(f);
        let mut index_of = vec![0; f.blocks.len()];
        for (i, b) in cfg.rpo().iter().enumerate() {
            index_of[b.index()] = i as u32;
        }
        let mut l = Lowered {
            kinds: Vec::new(),
            operands: Vec::new(),
            operand_start: vec![0],
            blocks: Vec::with_capacity(f.blocks.len()),
            succs: Vec::with_capacity(f.blocks.len()),
            preds: Vec::with_capacity(f.blocks.len()),
            params: Vec::with_capacity(f.blocks.len()),
            branch_args: Vec::with_capacity(f.blocks.len()),
            labels: Vec::new(),
            index_of,
            num_vregs: f.values.len(),
            env: machine_env(target, budget),
        };
        for &b in cfg.rpo() {
            let data = f.block(b);
            let first = Inst::new(l.kinds.len());
            for inst in &data.insts {
                l.push_op(f, inst)?;
            }
            l.push_terminator(f, &data.term);
            l.blocks
                .push(InstRange::new(first, Inst::new(l.kinds.len())));
            let succs = cfg.succs(b).iter().map(|&s| l.block(s)).collect();
            l.succs.push(succs);
            let preds = cfg.preds(b).iter().map(|&p| l.block(p)).collect();
            l.preds.push(preds);
            l.params
                .push(data.phis.iter().map(|p| vreg(f, p.def.value)).collect());
            for p in &data.phis {
                let v = p.def.value.0;
                l.labels
                    .push((vreg(f, p.def.value), first, first.next(), v));
            }
            let args = cfg
                .succs(b)
                .iter()
                .map(|&s| {
                    let phis = &f.block(s).phis;
                    phis.iter()
                        .map(|p| {
                            let arg = p.args.iter().find(|a| a.block == b);
                            vreg(f, arg.expect("a phi argument per predecessor").value)
                        })
                        .collect()
                })
                .collect();
            l.branch_args.push(args);
        }
        l.labels.sort_unstable();
        Ok(l)
    }

    /// regalloc2's block for chromatic block `b`.
    pub fn block(&self, b: crate::program::Block) -> Block {
        Block::new(self.index_of[b.index()] as usize)
    }

    fn push_op(&mut self, f: &Function, inst: &ChrInst) -> Result<(), AllocError> {
        let op = inst
            .op()
            .expect("an original function holds only operations");
        let uses: Vec<&Use> = op.uses().collect();
        for u in &uses {
            self.operands.push(use_operand(f, u, OperandPos::Early));
        }
        for d in &op.defs {
            let reused = d.tied.map(|t| {
                let before = &op.operands[..usize::from(t)];
                before.iter().filter(|o| o.as_use().is_some()).count()
            });
            self.operands.push(def_operand(f, d, reused)?);
        }
        self.finish(Kind::Op);
        Ok(())
    }

    fn push_terminator(&mut self, f: &Function, term: &Terminator) {
        for u in term.uses() {
            self.operands.push(use_operand(f, u, OperandPos::Early));
        }
        let kind = match term {
            Terminator::Ret { .. } => Kind::Ret,
            _ => Kind::Branch,
        };
        self.finish(kind);
    }

    fn finish(&mut self, kind: Kind) {
        self.kinds.push(kind);
        self.operand_start.push(self.operands.len() as u32);
    }

    /// The chromatic location of a regalloc2 allocation of class `class`.
    pub fn location(class: ClassId, a: regalloc2::Allocation) -> Option<Location> {
        if let Some(r) = a.as_reg() {
            return Some(Location::Reg {
                class,
                first: r.hw_enc() as u16,
                len: 1,
            });
        }
        a.as_stack().map(|s| Location::Slot {
            first: s.index() as u32,
            len: 1,
        })
    }
}

/// The value's `VReg`.
pub fn vreg(f: &Function, v: crate::program::Value) -> VReg {
    VReg::new(v.index(), CLASSES[f.value(v).class.index()])
}

fn preg(loc: Location) -> Option<PReg> {
    match loc {
        Location::Reg { class, first, .. } => {
            Some(PReg::new(usize::from(first), CLASSES[class.index()]))
        }
        _ => None,
    }
}

fn use_operand(f: &Function, u: &Use, pos: OperandPos) -> Operand {
    let constraint = match u.fixed.and_then(preg) {
        Some(r) => OperandConstraint::FixedReg(r),
        None => OperandConstraint::Reg,
    };
    Operand::new(vreg(f, u.value), constraint, OperandKind::Use, pos)
}

fn def_operand(f: &Function, d: &Def, reused: Option<usize>) -> Result<Operand, AllocError> {
    let pos = if d.early_clobber {
        OperandPos::Early
    } else {
        OperandPos::Late
    };
    let constraint = match (d.fixed.and_then(preg), reused) {
        (Some(r), _) => OperandConstraint::FixedReg(r),
        (None, Some(_)) if d.early_clobber => {
            return Err(unsupported(
                f,
                format!(
                "`%{}` is both tied and early-clobber; regalloc2 reuses inputs only for late defs",
                f.value(d.value).name
            ),
            ))
        }
        (None, Some(i)) if i > MAX_REUSED => {
            return Err(unsupported(
                f,
                format!(
                    "`%{}` is tied to value operand {i}; regalloc2 reuses only the first {}",
                    f.value(d.value).name,
                    MAX_REUSED + 1
                ),
            ))
        }
        (None, Some(i)) => OperandConstraint::Reuse(i),
        (None, None) => OperandConstraint::Reg,
    };
    Ok(Operand::new(
        vreg(f, d.value),
        constraint,
        OperandKind::Def,
        pos,
    ))
}

/// Registers `0..budget` of each class, all preferred; no scratch register (regalloc2
/// finds one or spills for it), no fixed stack slots.
fn machine_env(target: &Target, budget: &[u16]) -> MachineEnv {
    let mut preferred = [PRegSet::empty(); 3];
    for (c, set) in preferred.iter_mut().enumerate().take(target.classes.len()) {
        for r in 0..budget[c].min(MAX_REGS) {
            set.add(PReg::new(usize::from(r), CLASSES[c]));
        }
    }
    MachineEnv {
        preferred_regs_by_class: preferred,
        non_preferred_regs_by_class: [PRegSet::empty(); 3],
        scratch_by_class: [None; 3],
        fixed_stack_slots: Vec::new(),
    }
}

impl regalloc2::Function for Lowered {
    fn num_insts(&self) -> usize {
        self.kinds.len()
    }

    fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    fn entry_block(&self) -> Block {
        Block::new(0)
    }

    fn block_insns(&self, block: Block) -> InstRange {
        self.blocks[block.index()]
    }

    fn block_succs(&self, block: Block) -> &[Block] {
        &self.succs[block.index()]
    }

    fn block_preds(&self, block: Block) -> &[Block] {
        &self.preds[block.index()]
    }

    fn block_params(&self, block: Block) -> &[VReg] {
        &self.params[block.index()]
    }

    fn is_ret(&self, insn: Inst) -> bool {
        self.kinds[insn.index()] == Kind::Ret
    }

    fn is_branch(&self, insn: Inst) -> bool {
        self.kinds[insn.index()] == Kind::Branch
    }

    fn branch_blockparams(&self, block: Block, _: Inst, succ_idx: usize) -> &[VReg] {
        &self.branch_args[block.index()][succ_idx]
    }

    fn inst_operands(&self, insn: Inst) -> &[Operand] {
        let i = insn.index();
        &self.operands[self.operand_start[i] as usize..self.operand_start[i + 1] as usize]
    }

    fn inst_clobbers(&self, _: Inst) -> PRegSet {
        PRegSet::empty()
    }

    fn num_vregs(&self) -> usize {
        self.num_vregs
    }

    fn debug_value_labels(&self) -> &[(VReg, Inst, Inst, u32)] {
        &self.labels
    }

    fn spillslot_size(&self, _: RegClass) -> usize {
        1
    }
}
