//! The instructions the spiller adds, as pseudo-operations that the rest of the pipeline
//! (liveness, pressure, assignment, out-of-SSA) treats like any operation: a store reads
//! its value's register, a reload or remat defines a fresh SSA value. Their opcodes start
//! with `%`, which no parsed opcode can, so they never collide with user operations.
//! [`super::materialise`] turns them into `spill`, `reload` and `remat` once registers
//! are known. The slot a store or reload touches is named by an *owner*: the value whose
//! spill location it is, carried as an immediate operand.

use crate::program::{
    smallvec, Def, Defs, Effect, Inst, InstKind, Op, Operand, Operands, Pos, RegAccesses, SmallVec,
    Use, Value,
};

/// What a pseudo-operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pseudo {
    /// `%spill %x, owner`: store `%x` into `owner`'s spill location.
    Store,
    /// `%x' = %reload owner`: load `owner`'s spill location.
    Reload,
    /// `%x' = %remat`: recompute a rematerialisable value.
    Remat,
    /// `%h = %spill.class %x`: move `%x` into a register of another class.
    ClassStore,
    /// `%x' = %reload.class %h`: move it back.
    ClassReload,
}

const REMAT: &str = "%remat";

const OPCODES: [(&str, Pseudo); 5] = [
    ("%spill", Pseudo::Store),
    ("%reload", Pseudo::Reload),
    (REMAT, Pseudo::Remat),
    ("%spill.class", Pseudo::ClassStore),
    ("%reload.class", Pseudo::ClassReload),
];

/// The pseudo-operation `op` is, if it is one.
pub fn classify(op: &Op) -> Option<Pseudo> {
    let text = op.opcode.as_str();
    OPCODES
        .iter()
        .find(|(name, _)| *name == text)
        .map(|&(_, kind)| kind)
}

/// Whether `op` is a `%remat`: one comparison, for walks over every operation.
pub fn is_remat(op: &Op) -> bool {
    op.opcode == REMAT
}

/// The owner named by a store's or reload's immediate operand.
pub fn owner(op: &Op) -> Option<Value> {
    op.operands.iter().find_map(|o| match o {
        Operand::Imm(n) => u32::try_from(n.get()).ok().map(Value),
        Operand::Value(_) => None,
    })
}

fn opcode(kind: Pseudo) -> &'static str {
    OPCODES
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("%spill", |(name, _)| name)
}

fn inst(kind: Pseudo, defs: Defs, operands: Operands, pos: Pos) -> Inst {
    Inst {
        kind: InstKind::Op(Op {
            opcode: opcode(kind).into(),
            defs,
            operands,
            effect: Effect::None,
            regs: RegAccesses::default(),
            remat: false,
        }),
        pos,
    }
}

fn use_of(value: Value, pos: Pos) -> Operand {
    Operand::Value(Use {
        value,
        fixed: None,
        loc: None,
        pos,
    })
}

fn owner_imm(owner: Value) -> Operand {
    Operand::imm(i64::from(owner.0))
}

pub fn store(value: Value, owner: Value, pos: Pos) -> Inst {
    inst(
        Pseudo::Store,
        SmallVec::new(),
        smallvec![use_of(value, pos), owner_imm(owner)],
        pos,
    )
}

pub fn reload(fresh: Value, owner: Value, pos: Pos) -> Inst {
    inst(
        Pseudo::Reload,
        smallvec![Def::new(fresh, pos)],
        smallvec![owner_imm(owner)],
        pos,
    )
}

pub fn remat(fresh: Value, pos: Pos) -> Inst {
    inst(
        Pseudo::Remat,
        smallvec![Def::new(fresh, pos)],
        SmallVec::new(),
        pos,
    )
}

pub fn class_store(holder: Value, value: Value, pos: Pos) -> Inst {
    inst(
        Pseudo::ClassStore,
        smallvec![Def::new(holder, pos)],
        smallvec![use_of(value, pos)],
        pos,
    )
}

pub fn class_reload(fresh: Value, holder: Value, pos: Pos) -> Inst {
    inst(
        Pseudo::ClassReload,
        smallvec![Def::new(fresh, pos)],
        smallvec![use_of(holder, pos)],
        pos,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constructor_classifies_as_its_kind() {
        let (x, y, pos) = (Value(3), Value(4), Pos::default());
        let made = [
            (store(x, y, pos), Pseudo::Store),
            (reload(x, y, pos), Pseudo::Reload),
            (remat(x, pos), Pseudo::Remat),
            (class_store(x, y, pos), Pseudo::ClassStore),
            (class_reload(x, y, pos), Pseudo::ClassReload),
        ];
        for (i, kind) in made {
            let op = i.op().expect("an op");
            assert_eq!(classify(op), Some(kind));
            assert_eq!(is_remat(op), kind == Pseudo::Remat);
        }
        assert_eq!(owner(store(x, y, pos).op().unwrap()), Some(y));
        assert_eq!(owner(reload(x, y, pos).op().unwrap()), Some(y));
    }

    #[test]
    fn parsed_opcodes_are_never_pseudo() {
        let p =
            crate::parse("target generic s=4 v=4\nfunc @f {\nb:\n  %x:v1 = spill\n  ret %x\n}\n")
                .unwrap_or_else(|e| panic!("{e}"));
        let op = p.functions[0].blocks[0].insts[0].op().unwrap();
        assert_eq!(classify(op), None);
    }
}
