//! The importer's working form of a function: program-model blocks, phis, operations and
//! terminators, each operation with where it came from (its [`Origin`]) and where each of
//! its register occurrences sits in the PTX text (its [`Binding`]s), plus per value the
//! PTX register type and, for constants, what they are. The passes of the importer edit
//! this form; [`IrFunction::finish`] turns it into a [`Function`] and the side table the
//! exporter reads.

use super::ast::{RegType, Span};
use super::operands::{Constant, Position};
use crate::program::*;
use crate::target::ClassId;
use std::collections::HashMap;

/// Which part of an operation a register occurrence of the PTX text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Element `elem` of definition `def`.
    Def { def: usize, elem: u16 },
    /// Element `elem` of operand `operand`.
    Use { operand: usize, elem: u16 },
    /// The base of an address, read as another value plus `offset` (`[w+offset]`).
    Offset {
        operand: usize,
        elem: u16,
        offset: i64,
    },
    /// A constant read without a register: printed as the dedicated register of the
    /// constant statement at item `item` (see [`FunctionMap::kept_constants`]).
    Folded { item: usize },
    /// The condition of the block's terminator.
    Cond,
}

/// A register occurrence in the PTX text and what it is in the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    pub span: Span,
    pub slot: Slot,
}

/// Where an operation of the program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The statement at item `item`, its registers bound by `bindings`.
    Stmt { item: usize, bindings: Vec<Binding> },
    /// A copy of the constant statement at `item`, next to a use that needs a register.
    Remat { item: usize, bindings: Vec<Binding> },
    /// `split`: the elements of the tuple operand 0 into the defs.
    Split,
    /// `collect`: the operands into the tuple def 0.
    Collect,
    /// `undef`: a register read on a path where nothing defined it.
    Undef,
    /// A literal element of a tuple operand, put in a register: `mov.bN d, IMM`.
    Literal { bits: i64 },
}

impl Origin {
    pub fn item(&self) -> Option<usize> {
        match self {
            Origin::Stmt { item, .. } | Origin::Remat { item, .. } => Some(*item),
            _ => None,
        }
    }
}

/// One operation of the working form.
#[derive(Clone, Debug, PartialEq)]
pub struct IrInst {
    pub op: Op,
    pub pos: Pos,
    pub origin: Origin,
    /// Per operand: where it is used (for constants, [`super::operands::read`]).
    pub positions: Vec<Position>,
}

/// Where a block of the program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockOrigin {
    /// Items `first..end` of the function body: its labels, statements and terminator.
    Items {
        first: usize,
        end: usize,
        /// The item of its first label.
        label: Option<usize>,
        /// The item of the statement that ends it (`bra`, `ret`, …), if any.
        term: Option<usize>,
    },
    /// The target of a guarded `ret`/`exit`/`trap` (item `item`): only that statement.
    Exit { item: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub struct IrBlock {
    pub name: String,
    pub pos: Pos,
    pub phis: Vec<Phi>,
    pub insts: Vec<IrInst>,
    pub term: Terminator,
    pub origin: BlockOrigin,
    /// Register occurrences of the terminator statement (its guard).
    pub term_bindings: Vec<Binding>,
}

/// Where a value is defined: a phi of a block, or definition `def` of instruction `inst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Phi {
        block: usize,
        phi: usize,
    },
    Inst {
        block: usize,
        inst: usize,
        def: usize,
    },
}

/// Per value: what the exporter and the constant rule need.
#[derive(Clone, Debug, PartialEq)]
pub struct IrValue {
    pub data: ValueData,
    /// The PTX type of each element (the value's own type when not a tuple).
    pub ty: RegType,
    /// Kept in place for its whole life (see `docs/FORMAT.md`, `pinned`).
    pub pinned: bool,
    pub constant: Option<Constant>,
    /// Used only as address bases, which now read the value it adds an offset to.
    pub address_only: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IrFunction {
    pub name: String,
    pub pos: Pos,
    pub values: Vec<IrValue>,
    pub blocks: Vec<IrBlock>,
    /// Per base name, how many values took it (`r5.1`, `r5.2`, …).
    names: HashMap<String, u32>,
}

/// What the exporter needs about one imported function.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionMap {
    /// Index of the function in the module's functions.
    pub ast: usize,
    /// Per program block: where it comes from, and the origin of each original operation.
    pub blocks: Vec<BlockMap>,
    /// Per value: the PTX type of its elements.
    pub types: Vec<RegType>,
    /// Constant statements whose value is read without a register somewhere: the exporter
    /// keeps them, writing a dedicated register, item → that register's type.
    pub kept_constants: HashMap<usize, RegType>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BlockMap {
    pub origin: BlockOrigin,
    pub ops: Vec<Origin>,
    pub term_bindings: Vec<Binding>,
}

impl IrFunction {
    pub fn new(name: String, pos: Pos) -> IrFunction {
        IrFunction {
            name,
            pos,
            values: Vec::new(),
            blocks: Vec::new(),
            names: HashMap::new(),
        }
    }

    /// A new value named after `base` (a PTX register name without `%`, or a helper kind).
    pub fn value(&mut self, base: &str, class: ClassId, size: u16, ty: RegType, pos: Pos) -> Value {
        let base: String = base
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let n = self.names.entry(base.clone()).or_insert(0);
        *n += 1;
        let name = if base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            format!("{base}.{n}")
        } else {
            format!("v{base}.{n}")
        };
        self.values.push(IrValue {
            data: ValueData {
                name: name.into(),
                class,
                size,
                pos,
            },
            ty,
            pinned: false,
            constant: None,
            address_only: false,
        });
        Value(self.values.len() as u32 - 1)
    }

    /// The definition site of every value (`None`: defined nowhere, e.g. removed).
    pub fn def_sites(&self) -> Vec<Option<Site>> {
        let mut sites = vec![None; self.values.len()];
        for (block, b) in self.blocks.iter().enumerate() {
            for (phi, p) in b.phis.iter().enumerate() {
                sites[p.def.value.index()] = Some(Site::Phi { block, phi });
            }
            for (inst, i) in b.insts.iter().enumerate() {
                for (def, d) in i.op.defs.iter().enumerate() {
                    sites[d.value.index()] = Some(Site::Inst { block, inst, def });
                }
            }
        }
        sites
    }

    /// Number of uses of every value (operands, phi arguments, terminators).
    pub fn use_counts(&self) -> Vec<u32> {
        let mut n = vec![0; self.values.len()];
        for b in &self.blocks {
            for phi in &b.phis {
                phi.args.iter().for_each(|a| n[a.value.index()] += 1);
            }
            for i in &b.insts {
                i.op.uses().for_each(|u| n[u.value.index()] += 1);
            }
            b.term.uses().iter().for_each(|u| n[u.value.index()] += 1);
        }
        n
    }

    /// Replaces every use of a value by `map` of it.
    pub fn replace_uses(&mut self, map: &dyn Fn(Value) -> Value) {
        for b in &mut self.blocks {
            for phi in &mut b.phis {
                phi.args.iter_mut().for_each(|a| a.value = map(a.value));
            }
            for i in &mut b.insts {
                for o in &mut i.op.operands {
                    if let Operand::Value(u) = o {
                        u.value = map(u.value);
                    }
                }
            }
            b.term
                .uses_mut()
                .iter_mut()
                .for_each(|u| u.value = map(u.value));
        }
    }

    /// The program function and the exporter's map: definitions marked `pinned` from their
    /// values, values no definition is left for dropped and the rest renumbered densely.
    pub fn finish(
        mut self,
        ast: usize,
        kept_constants: HashMap<usize, RegType>,
    ) -> (Function, FunctionMap) {
        let sites = self.def_sites();
        let mut renumber = vec![0u32; self.values.len()];
        let mut types = Vec::with_capacity(self.values.len());
        let mut values = Vec::with_capacity(self.values.len());
        for (i, v) in self.values.iter().enumerate() {
            if sites[i].is_some() {
                renumber[i] = values.len() as u32;
                types.push(v.ty);
                values.push(v.data.clone());
            }
        }
        let pinned: Vec<bool> = self.values.iter().map(|v| v.pinned).collect();
        let mut blocks = Vec::with_capacity(self.blocks.len());
        let mut maps = Vec::with_capacity(self.blocks.len());
        for mut b in std::mem::take(&mut self.blocks) {
            b.phis
                .iter_mut()
                .for_each(|p| p.def.pinned = pinned[p.def.value.index()]);
            let mut insts = Vec::with_capacity(b.insts.len());
            let mut ops = Vec::with_capacity(b.insts.len());
            for mut i in b.insts {
                i.op.defs
                    .iter_mut()
                    .for_each(|d| d.pinned = pinned[d.value.index()]);
                insts.push(Inst {
                    kind: InstKind::Op(i.op),
                    pos: i.pos,
                });
                ops.push(i.origin);
            }
            blocks.push(BlockData {
                name: b.name,
                pos: b.pos,
                freq: None,
                phis: b.phis,
                insts,
                term: b.term,
            });
            maps.push(BlockMap {
                origin: b.origin,
                ops,
                term_bindings: b.term_bindings,
            });
        }
        let mut function = Function {
            name: self.name,
            pos: self.pos,
            blocks,
            values,
        };
        function.map_values(|v| Value(renumber[v.index()]));
        (
            function,
            FunctionMap {
                ast,
                blocks: maps,
                types,
                kept_constants,
            },
        )
    }
}
