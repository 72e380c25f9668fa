//! Basic blocks of a PTX function body: a block starts at a label some statement names (a
//! branch target; labels nothing names, like the `$L__tmpN` marks debug information
//! points at, stay inside their block) and after a statement that ends one (`bra`, `ret`,
//! `exit`, `trap`), and falls through to the next block in
//! text order when it does not end with an unconditional transfer (PTX ISA §9.7.13).
//! Guarded branches become two-way branches — `divergent`, or `uniform` for `bra.uni` —
//! whose then-side is the taken side of `@%p` and the fall-through of `@!%p`; a guarded
//! `ret`/`exit`/`trap` branches to a block of its own that ends the thread. Labels are
//! looked up from the branch's `{ }` scope outwards.

use super::ast::{FunctionAst, Item, Operand, RegOcc};
use super::ir::BlockOrigin;
use super::lower::{lower, LFlow, LInst};
use super::PtxError;
use crate::program::Pos;
use std::collections::{HashMap, HashSet};

type Result<T> = std::result::Result<T, PtxError>;

/// How a block ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PTerm {
    Jump(usize),
    Branch {
        cond: RegOcc,
        /// The condition is `!cond` (then-side is the fall-through).
        negated: bool,
        uniform: bool,
        then_block: usize,
        else_block: usize,
    },
    Ret,
}

impl PTerm {
    pub fn successors(&self) -> Vec<usize> {
        match *self {
            PTerm::Jump(t) => vec![t],
            PTerm::Branch {
                then_block,
                else_block,
                ..
            } => vec![then_block, else_block],
            PTerm::Ret => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PBlock {
    pub name: String,
    pub pos: Pos,
    pub insts: Vec<LInst>,
    /// The statement that ends the block (a branch or exit), lowered.
    pub term_inst: Option<LInst>,
    pub term: PTerm,
    pub origin: BlockOrigin,
}

/// The blocks of `f`, entry first, in text order, then the exit blocks of guarded exits.
pub fn blocks(f: &FunctionAst) -> Result<Vec<PBlock>> {
    let mut b = Builder {
        f,
        blocks: Vec::new(),
        pending: Vec::new(),
        labels: HashMap::new(),
        names: HashSet::new(),
        current: None,
        named: named_symbols(f),
    };
    for (idx, item) in f.items.iter().enumerate() {
        b.item(idx, item)?;
    }
    b.close(f.items.len());
    b.resolve()
}

/// A block being built: its items, label, instructions and the statement that ends it.
struct Open {
    first: usize,
    label: Option<(usize, String)>,
    pos: Pos,
    insts: Vec<LInst>,
    term: Option<LInst>,
}

struct Builder<'a> {
    f: &'a FunctionAst,
    blocks: Vec<PBlock>,
    /// Per block, the statement ending it (resolved once all labels are known).
    pending: Vec<Option<LInst>>,
    /// (scope, label) → block.
    labels: HashMap<(usize, String), usize>,
    names: HashSet<String>,
    current: Option<Open>,
    /// Every symbol a statement names: the labels that may be branch targets.
    named: HashSet<String>,
}

/// The symbols the statements of `f` name (branch targets among them).
fn named_symbols(f: &FunctionAst) -> HashSet<String> {
    fn collect(o: &Operand, out: &mut HashSet<String>) {
        match o {
            Operand::Sym(name, _) => _ = out.insert(name.clone()),
            Operand::List(items, _) => items.iter().for_each(|i| collect(i, out)),
            _ => {}
        }
    }
    let mut out = HashSet::new();
    for item in &f.items {
        if let Item::Stmt(stmt) = item {
            stmt.operands.iter().for_each(|o| collect(o, &mut out));
        }
    }
    out
}

impl Builder<'_> {
    fn item(&mut self, idx: usize, item: &Item) -> Result<()> {
        match item {
            Item::Label {
                name, scope, pos, ..
            } => {
                let ends_block = self.current.as_ref().is_some_and(|o| o.term.is_some());
                let inside = !ends_block && !self.named.contains(name) && self.current.is_some();
                if !inside {
                    let busy = self
                        .current
                        .as_ref()
                        .is_some_and(|o| !o.insts.is_empty() || o.term.is_some());
                    if busy {
                        self.close(idx);
                    }
                    let open = self.open(idx, *pos);
                    if open.label.is_none() {
                        open.label = Some((idx, name.clone()));
                    }
                }
                let block = self.blocks.len();
                if self.labels.insert((*scope, name.clone()), block).is_some() {
                    return Err(PtxError {
                        pos: *pos,
                        message: format!("label `{name}` is defined twice in this scope"),
                    });
                }
            }
            Item::Stmt(stmt) => {
                if self.current.as_ref().is_some_and(|o| o.term.is_some()) {
                    self.close(idx);
                }
                let l = lower(self.f, idx, stmt)?;
                let open = self.open(idx, stmt.pos);
                if l.flow == LFlow::Next {
                    open.insts.push(l);
                } else {
                    open.term = Some(l);
                }
            }
            Item::RegDecl(_) => {}
        }
        Ok(())
    }

    fn open(&mut self, idx: usize, pos: Pos) -> &mut Open {
        self.current.get_or_insert_with(|| Open {
            first: idx,
            label: None,
            pos,
            insts: Vec::new(),
            term: None,
        })
    }

    fn close(&mut self, end: usize) {
        let Some(open) = self.current.take() else {
            return;
        };
        let name = self.unique_name(open.label.as_ref().map(|l| l.1.as_str()));
        let term_item = open.term.as_ref().map(|t| t.item);
        self.blocks.push(PBlock {
            name,
            pos: open.pos,
            insts: open.insts,
            term_inst: None,
            term: PTerm::Ret,
            origin: BlockOrigin::Items {
                first: open.first,
                end,
                label: open.label.map(|l| l.0),
                term: term_item,
            },
        });
        self.pending.push(open.term);
    }

    /// A block name: the label without characters the `.chr` format does not allow.
    fn unique_name(&mut self, label: Option<&str>) -> String {
        let base = match label {
            Some(l) => {
                let clean: String = l
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
                    .collect();
                if clean.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    clean
                } else {
                    format!("L{clean}")
                }
            }
            None => format!("bb{}", self.blocks.len()),
        };
        let mut name = base.clone();
        let mut n = 1;
        while !self.names.insert(name.clone()) {
            n += 1;
            name = format!("{base}.{n}");
        }
        name
    }

    fn label_block(&self, scope: usize, label: &str, pos: Pos) -> Result<usize> {
        let mut s = Some(scope);
        while let Some(scope) = s {
            if let Some(&b) = self.labels.get(&(scope, label.to_string())) {
                return Ok(b);
            }
            s = self.f.scope_parent[scope];
        }
        Err(PtxError {
            pos,
            message: format!("undefined label `{label}`"),
        })
    }

    fn resolve(mut self) -> Result<Vec<PBlock>> {
        if self.blocks.is_empty() {
            self.unique_name(None);
            self.blocks.push(PBlock {
                name: "bb0".into(),
                pos: self.f.pos,
                insts: Vec::new(),
                term_inst: None,
                term: PTerm::Ret,
                origin: BlockOrigin::Items {
                    first: 0,
                    end: 0,
                    label: None,
                    term: None,
                },
            });
            self.pending.push(None);
        }
        let count = self.blocks.len();
        let pending = std::mem::take(&mut self.pending);
        for (b, term) in pending.into_iter().enumerate() {
            let next = (b + 1 < count).then_some(b + 1);
            let (t, inst) = self.terminator(next, term)?;
            self.blocks[b].term = t;
            self.blocks[b].term_inst = inst;
        }
        Ok(self.blocks)
    }

    /// The terminator of a block whose text falls through to `next`.
    fn terminator(
        &mut self,
        next: Option<usize>,
        term: Option<LInst>,
    ) -> Result<(PTerm, Option<LInst>)> {
        let Some(inst) = term else {
            return Ok((next.map_or(PTerm::Ret, PTerm::Jump), None));
        };
        let fall = |s: &mut Self| match next {
            Some(n) => n,
            None => s.exit_block(inst.item, inst.pos, true),
        };
        let stmt_scope = self.scope_of(inst.item);
        let t = match (&inst.flow, inst.guard) {
            (
                LFlow::Branch {
                    label, label_pos, ..
                },
                None,
            ) => PTerm::Jump(self.label_block(stmt_scope, label, *label_pos)?),
            (
                LFlow::Branch {
                    label,
                    label_pos,
                    uniform,
                },
                Some((cond, negated)),
            ) => {
                let taken = self.label_block(stmt_scope, label, *label_pos)?;
                let fall = fall(self);
                two_way(cond, negated, *uniform, taken, fall)
            }
            (LFlow::Exit, None) => PTerm::Ret,
            (LFlow::Exit, Some((cond, negated))) => {
                let taken = self.exit_block(inst.item, inst.pos, false);
                let fall = fall(self);
                two_way(cond, negated, false, taken, fall)
            }
            (LFlow::Next, _) => return Ok((next.map_or(PTerm::Ret, PTerm::Jump), None)),
        };
        Ok((t, Some(inst)))
    }

    fn scope_of(&self, item: usize) -> usize {
        match &self.f.items[item] {
            Item::Stmt(s) => s.scope,
            _ => 0,
        }
    }

    /// A block that ends the thread: the target of a guarded exit at `item`, or where the
    /// last block's conditional branch falls through past the end of the body (`implicit`).
    fn exit_block(&mut self, item: usize, pos: Pos, implicit: bool) -> usize {
        let name = self.unique_name(Some(if implicit { "end" } else { "exit" }));
        self.blocks.push(PBlock {
            name,
            pos,
            insts: Vec::new(),
            term_inst: None,
            term: PTerm::Ret,
            origin: if implicit {
                BlockOrigin::Items {
                    first: self.f.items.len(),
                    end: self.f.items.len(),
                    label: None,
                    term: None,
                }
            } else {
                BlockOrigin::Exit { item }
            },
        });
        self.blocks.len() - 1
    }
}

/// A guarded branch; one whose both sides are the same block is a jump.
fn two_way(cond: RegOcc, negated: bool, uniform: bool, taken: usize, fall: usize) -> PTerm {
    if taken == fall {
        return PTerm::Jump(taken);
    }
    let (then_block, else_block) = if negated {
        (fall, taken)
    } else {
        (taken, fall)
    };
    PTerm::Branch {
        cond,
        negated,
        uniform,
        then_block,
        else_block,
    }
}
