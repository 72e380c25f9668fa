//! PTX export: an allocated program written back over the PTX text it was imported from.
//!
//! Everything between statements (comments, `.loc`, labels, scope braces, debug sections,
//! memory declarations) is copied verbatim; `.reg` declarations are replaced by one set
//! naming the allocated registers; each statement is the original text with its registers
//! renamed to the allocated locations; the allocation's copies, spills, reloads and
//! rematerialisations and the importer's helpers (`split`, `collect`) are written as PTX
//! where they fall; a branch whose edge the allocation split, or a fall-through that no
//! longer reaches its block, jumps to the new block, which is written after the body's
//! last statement.
//!
//! Register names: a value of element width W in register unit U is `%rU` (32 bits),
//! `%rdU` (64), `%rsU` (16), `%rbU` (8), `%rqU` (128), `%pU` (predicate); a tuple is a
//! vector of its elements. PTX registers do not alias, so a move of half of a 64-bit value
//! (a copy cycle broken through one unit) goes through the 32-bit names of its units: the
//! exporter keeps, per unit, whether its content sits in the wide register or the unit's
//! 32-bit register, unpacking (`mov.b64 {lo, hi}, wide`) and packing back before a whole
//! read. Spill slots are 32-bit words of one `.local` array; a predicate spilled to a
//! 32-bit register is `selp.u32 r, 1, 0, p` and reloaded by `setp.ne.u32 p, r, 0`.
//! Constants an instruction reads without a register keep their statement, writing a
//! register of their own (`%chr_cN`): ptxas folds it back into the instruction.

mod partial;

use super::ast::{FunctionAst, Item, RegType, Span};
use super::ir::{Binding, BlockOrigin, FunctionMap, Origin, Slot};
use super::ModuleMap;
use crate::program::*;
use crate::target::Target;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

/// Why an allocated program could not be written as PTX.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("@{function}: cannot export: {message}")]
pub struct ExportError {
    pub function: String,
    pub message: String,
}

/// The PTX text of `allocated`, an allocation of `imported` (imported from `source`, whose
/// map is `module`).
pub fn export(
    source: &str,
    module: &ModuleMap,
    imported: &Program,
    allocated: &Program,
) -> Result<String, ExportError> {
    let mut bodies = Vec::with_capacity(module.functions.len());
    for ((map, orig), alloc) in module
        .functions
        .iter()
        .zip(&imported.functions)
        .zip(&allocated.functions)
    {
        let ast = &module.ast.functions[map.ast];
        let body =
            FunctionExporter::new(source, ast, map, orig, alloc, &allocated.target)?.run()?;
        bodies.push((ast.body_open, ast.body_close, body));
    }
    bodies.sort_by_key(|b| b.0);
    let mut out = String::with_capacity(source.len() * 2);
    let mut at = 0;
    for (open, close, body) in bodies {
        out.push_str(&source[at..open]);
        out.push_str(&body);
        at = close;
    }
    out.push_str(&source[at..]);
    Ok(out)
}

/// PTX register families, by the type of what a unit holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Family {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
}

impl Family {
    fn of(ty: RegType) -> Family {
        match (ty.pred, ty.bits) {
            (true, _) => Family::Pred,
            (_, 8) => Family::B8,
            (_, 16) => Family::B16,
            (_, 64) => Family::B64,
            (_, 128) => Family::B128,
            _ => Family::B32,
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Family::Pred => "%p",
            Family::B8 => "%rb",
            Family::B16 => "%rs",
            Family::B32 => "%r",
            Family::B64 => "%rd",
            Family::B128 => "%rq",
        }
    }

    fn decl(self) -> &'static str {
        match self {
            Family::Pred => ".pred",
            Family::B8 => ".b8",
            Family::B16 => ".b16",
            Family::B32 => ".b32",
            Family::B64 => ".b64",
            Family::B128 => ".b128",
        }
    }

    /// Register units one element takes.
    fn units(self) -> u16 {
        match self {
            Family::B64 => 2,
            Family::B128 => 4,
            _ => 1,
        }
    }

    fn bits(self) -> u16 {
        match self {
            Family::Pred => 1,
            Family::B8 => 8,
            Family::B16 => 16,
            Family::B32 => 32,
            Family::B64 => 64,
            Family::B128 => 128,
        }
    }
}

/// The name of the spill array.
const SPILL: &str = "__chromatic_spill";

struct FunctionExporter<'a> {
    src: &'a str,
    ast: &'a FunctionAst,
    map: &'a FunctionMap,
    orig: &'a Function,
    alloc: &'a Function,
    target: &'a Target,
    /// Per allocated block, the original block of the same name.
    orig_of: Vec<Option<usize>>,
    /// Per original block, the allocated block.
    alloc_of: Vec<usize>,
    /// Per item, the original block it belongs to.
    item_block: Vec<Option<usize>>,
    /// Per allocated block: the label it is written with.
    labels: Vec<String>,
    /// Original blocks whose text has no label but which a new jump targets.
    needs_label: BTreeSet<usize>,
    /// Per original value, its defining operation (for `remat`).
    def_op: HashMap<Value, (usize, usize)>,
    /// Highest index + 1 per family.
    used: BTreeMap<Family, u16>,
    /// Families of the `%chr_tN` temporaries.
    temps: Vec<Family>,
    /// Exit blocks a written branch targets.
    written_exits: BTreeSet<usize>,
    /// Units of `r` holding, in their 32-bit register, part (value, part) of a wide value
    /// a run of moves has not put back together yet ([`partial`]).
    narrow: BTreeMap<u16, (Value, u16)>,
    spill_words: u32,
    out: String,
}

fn err<T>(f: &Function, message: impl Into<String>) -> Result<T, ExportError> {
    Err(ExportError {
        function: f.name.clone(),
        message: message.into(),
    })
}

impl<'a> FunctionExporter<'a> {
    fn new(
        src: &'a str,
        ast: &'a FunctionAst,
        map: &'a FunctionMap,
        orig: &'a Function,
        alloc: &'a Function,
        target: &'a Target,
    ) -> Result<FunctionExporter<'a>, ExportError> {
        let by_name: HashMap<&str, usize> = orig
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.as_str(), i))
            .collect();
        let orig_of: Vec<Option<usize>> = alloc
            .blocks
            .iter()
            .map(|b| by_name.get(b.name.as_str()).copied())
            .collect();
        let mut alloc_of = vec![usize::MAX; orig.blocks.len()];
        for (a, o) in orig_of.iter().enumerate() {
            if let Some(o) = o {
                alloc_of[*o] = a;
            }
        }
        if alloc_of.contains(&usize::MAX) {
            return err(orig, "the allocated program lacks a block of the original");
        }
        if let Some(o) = (0..orig.blocks.len())
            .find(|&o| !same_op_order(orig, &orig.blocks[o], alloc, &alloc.blocks[alloc_of[o]]))
        {
            let name = &orig.blocks[o].name;
            return err(orig, format!("block `{name}` was reordered (scheduled); PTX export writes statements in their text order, so export an allocation made with `--schedule none`"));
        }
        let mut item_block = vec![None; ast.items.len()];
        for (b, bm) in map.blocks.iter().enumerate() {
            if let BlockOrigin::Items { first, end, .. } = bm.origin {
                for slot in item_block.iter_mut().take(end).skip(first) {
                    *slot = Some(b);
                }
            }
        }
        let mut def_op = HashMap::new();
        for (b, block) in orig.blocks.iter().enumerate() {
            for (i, inst) in block.insts.iter().enumerate() {
                if let Some(op) = inst.op() {
                    for d in &op.defs {
                        def_op.insert(d.value, (b, i));
                    }
                }
            }
        }
        let mut e = FunctionExporter {
            src,
            ast,
            map,
            orig,
            alloc,
            target,
            orig_of,
            alloc_of,
            item_block,
            labels: Vec::new(),
            needs_label: BTreeSet::new(),
            def_op,
            used: BTreeMap::new(),
            temps: Vec::new(),
            written_exits: BTreeSet::new(),
            narrow: BTreeMap::new(),
            spill_words: 0,
            out: String::new(),
        };
        e.labels = (0..alloc.blocks.len()).map(|a| e.label_of(a)).collect();
        Ok(e)
    }

    /// The label an allocated block is written with: its own, else a new one.
    fn label_of(&self, a: usize) -> String {
        if let Some(o) = self.orig_of[a] {
            if let BlockOrigin::Items {
                label: Some(item), ..
            } = self.map.blocks[o].origin
            {
                if let Item::Label { name, .. } = &self.ast.items[item] {
                    return name.clone();
                }
            }
        }
        let clean: String = self.alloc.blocks[a]
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("$L__chr_{clean}")
    }

    fn has_own_label(&self, o: usize) -> bool {
        matches!(
            self.map.blocks[o].origin,
            BlockOrigin::Items { label: Some(_), .. }
        )
    }

    /// The original block that starts where block `o`'s text ends.
    fn textual_next(&self, o: usize) -> Option<usize> {
        let BlockOrigin::Items { end, .. } = self.map.blocks[o].origin else {
            return None;
        };
        self.map.blocks.iter().position(
            |b| matches!(b.origin, BlockOrigin::Items { first, end: e, .. } if first == end && e > first),
        )
    }

    fn run(mut self) -> Result<String, ExportError> {
        self.mark_labels();
        let mut text = String::new();
        let mut at = self.ast.body_open;
        let mut current: Option<usize> = None;
        let mut cursor = 0usize;
        for (idx, item) in self.ast.items.iter().enumerate() {
            let span = item_span(item);
            let block = self.item_block[idx];
            if block != current {
                if let Some(o) = current {
                    self.finish_block(o, &mut cursor)?;
                }
                append(&mut text, &std::mem::take(&mut self.out));
                text.push_str(&self.src[at..span.start]);
                cursor = 0;
                current = block;
                if let Some(o) = block.filter(|o| self.needs_label.contains(o)) {
                    let _ = writeln!(text, "{}:", self.labels[self.alloc_of[o]]);
                }
            } else {
                append(&mut text, &std::mem::take(&mut self.out));
                text.push_str(&self.src[at..span.start]);
            }
            at = span.end;
            match item {
                Item::RegDecl(_) => {}
                Item::Label { .. } => self.out.push_str(&self.src[span.start..span.end]),
                Item::Stmt(_) => {
                    if let Some(o) = block {
                        self.statement(o, idx, &mut cursor)?;
                    }
                }
            }
            if self.out.is_empty() {
                drop_blank_line(&mut text);
            }
        }
        if let Some(o) = current {
            self.finish_block(o, &mut cursor)?;
        }
        append(&mut text, &std::mem::take(&mut self.out));
        self.extra_blocks()?;
        let tail = std::mem::take(&mut self.out);
        text.push_str(&tail);
        text.push_str(&self.src[at..self.ast.body_close]);
        Ok(format!("\n{}{}", self.declarations(), text))
    }

    /// Original blocks without a label of their own that a written jump targets.
    fn mark_labels(&mut self) {
        for (a, block) in self.alloc.blocks.iter().enumerate() {
            for s in block.term.successors() {
                let Some(o) = self.orig_of[s.index()] else {
                    continue;
                };
                if self.has_own_label(o) {
                    continue;
                }
                let natural =
                    self.orig_of[a].is_some_and(|from| self.textual_next(from) == Some(o));
                if !natural || self.orig_of[a].is_none() {
                    self.needs_label.insert(o);
                }
            }
        }
    }

    /// Writes the statement at `idx` of block `o` and the instructions before it.
    fn statement(&mut self, o: usize, idx: usize, cursor: &mut usize) -> Result<(), ExportError> {
        if let BlockOrigin::Items { term: Some(t), .. } = self.map.blocks[o].origin {
            if t == idx {
                return self.terminator(o, cursor);
            }
        }
        let op_index = self.map.blocks[o]
            .ops
            .iter()
            .position(|origin| matches!(origin, Origin::Stmt { item, .. } if *item == idx));
        match op_index {
            Some(k) => self.flush_through(o, Some(k), cursor),
            None => {
                if let Some(ty) = self.map.kept_constants.get(&idx) {
                    self.kept_constant(idx, *ty);
                }
                Ok(())
            }
        }
    }

    /// Writes the allocated instructions of block `o` from `cursor` through original
    /// operation `k` (all of them when `None`).
    fn flush_through(
        &mut self,
        o: usize,
        k: Option<usize>,
        cursor: &mut usize,
    ) -> Result<(), ExportError> {
        let a = self.alloc_of[o];
        let insts = &self.alloc.blocks[a].insts;
        let mut seen = self.ops_before(a, *cursor);
        let start = self.out.len();
        let mut pending: Vec<Inst> = Vec::new();
        while *cursor < insts.len() {
            let inst = &insts[*cursor];
            *cursor += 1;
            match &inst.kind {
                InstKind::Op(op) => {
                    self.artefacts(&std::mem::take(&mut pending))?;
                    let origin = &self.map.blocks[o].ops[seen];
                    if matches!(origin, Origin::Stmt { .. }) && self.out.len() > start {
                        self.out.push_str("\n\t");
                    }
                    self.op(op, origin)?;
                    seen += 1;
                    if Some(seen - 1) == k {
                        return Ok(());
                    }
                }
                _ => pending.push(inst.clone()),
            }
        }
        self.artefacts(&pending)
    }

    /// Consecutive artefacts: runs of moves with a move of part of a wide register go
    /// through [`partial`], the rest one by one.
    fn artefacts(&mut self, insts: &[Inst]) -> Result<(), ExportError> {
        let mut rest = insts;
        while let Some(first) = rest.first() {
            if !self.is_plain_move(first) {
                self.artefact(first)?;
                rest = &rest[1..];
                continue;
            }
            let n = rest.iter().take_while(|i| self.is_plain_move(i)).count();
            let (run, after) = rest.split_at(n);
            if run.iter().any(|i| self.is_partial(i)) {
                self.unit_run(run)?;
            } else {
                for i in run {
                    self.artefact(i)?;
                }
            }
            rest = after;
        }
        Ok(())
    }

    /// A wide value an operation reads must have been put back together.
    fn check_whole(&self, u: &Use) -> Result<(), ExportError> {
        let Some(Location::Reg { first, len, .. }) = u.loc else {
            return Ok(());
        };
        match (first..first + len).find(|x| self.narrow.contains_key(x)) {
            Some(x) => err(
                self.alloc,
                format!(
                    "r{x} holds part of a wide value where `%{}` is read",
                    self.alloc.value(u.value).name
                ),
            ),
            None => Ok(()),
        }
    }

    fn ops_before(&self, a: usize, cursor: usize) -> usize {
        self.alloc.blocks[a].insts[..cursor]
            .iter()
            .filter(|i| !i.is_artefact())
            .count()
    }

    fn finish_block(&mut self, o: usize, cursor: &mut usize) -> Result<(), ExportError> {
        let result = self.finish_block_code(o, cursor);
        self.narrow.clear();
        result
    }

    fn finish_block_code(&mut self, o: usize, cursor: &mut usize) -> Result<(), ExportError> {
        if let BlockOrigin::Items { term: Some(_), .. } = self.map.blocks[o].origin {
            return Ok(());
        }
        self.flush_through(o, None, cursor)?;
        let a = self.alloc_of[o];
        match self.alloc.blocks[a].term.clone() {
            Terminator::Jump { target, .. } => self.jump_unless_next(o, target.index()),
            Terminator::Ret { .. } => {
                self.line("ret;");
                Ok(())
            }
            Terminator::Branch { .. } => err(
                self.alloc,
                "a block without a branch statement ends with a branch",
            ),
        }
    }

    fn jump_unless_next(&mut self, o: usize, target: usize) -> Result<(), ExportError> {
        if self.orig_of[target].is_some() && self.orig_of[target] == self.textual_next(o) {
            return Ok(());
        }
        let label = self.labels[target].clone();
        self.line(&format!("bra.uni {label};"));
        Ok(())
    }

    fn line(&mut self, s: &str) {
        let _ = write!(self.out, "\n\t{s}");
    }

    /// The block's branch or exit statement, after the rest of its instructions.
    fn terminator(&mut self, o: usize, cursor: &mut usize) -> Result<(), ExportError> {
        let start = self.out.len();
        self.flush_through(o, None, cursor)?;
        let indent = if self.out.len() > start { "\n\t" } else { "" };
        let a = self.alloc_of[o];
        let BlockOrigin::Items {
            term: Some(item), ..
        } = self.map.blocks[o].origin
        else {
            return Ok(());
        };
        let Item::Stmt(stmt) = &self.ast.items[item] else {
            return Ok(());
        };
        match self.alloc.blocks[a].term.clone() {
            Terminator::Ret { .. } => {
                let text = self.src[stmt.span.start..stmt.span.end].to_string();
                self.out.push_str(indent);
                self.out.push_str(&text);
                Ok(())
            }
            Terminator::Jump { target, .. } => self.jump_unless_next(o, target.index()),
            Terminator::Branch {
                cond,
                then_block,
                else_block,
                ..
            } => {
                let negated = stmt.guard.is_some_and(|g| g.negated);
                let (taken, fall) = if negated {
                    (else_block.index(), then_block.index())
                } else {
                    (then_block.index(), else_block.index())
                };
                let cond_name = self.use_name(&cond, 0)?;
                let Terminator::Branch {
                    then_block: ot,
                    else_block: oe,
                    ..
                } = self.orig.blocks[o].term
                else {
                    return err(self.alloc, "a branch where the original has none");
                };
                let orig_taken = if negated { oe } else { ot }.index();
                let exit = matches!(self.map.blocks[orig_taken].origin, BlockOrigin::Exit { .. });
                let as_written = self.orig_of[taken] == Some(orig_taken)
                    && (!exit || self.alloc.blocks[taken].insts.is_empty());
                if as_written {
                    let bindings = self.map.blocks[o].term_bindings.clone();
                    let text = self.render(stmt.span, &bindings, &mut |_, slot| {
                        (slot == Slot::Cond).then(|| cond_name.clone())
                    });
                    self.out.push_str(indent);
                    self.out.push_str(&text);
                } else {
                    if exit {
                        self.written_exits.insert(taken);
                    }
                    let label = self.labels[taken].clone();
                    let bang = if negated { "!" } else { "" };
                    self.line(&format!("@{bang}{cond_name} bra {label};"));
                }
                self.jump_unless_next(o, fall)
            }
        }
    }

    /// Blocks with no text of their own: new blocks of the allocation, exits of guarded
    /// `ret`/`exit`/`trap` that now hold code, the end of a body that falls off its end.
    fn extra_blocks(&mut self) -> Result<(), ExportError> {
        for a in 0..self.alloc.blocks.len() {
            let origin = self.orig_of[a].map(|o| self.map.blocks[o].origin.clone());
            let exit_stmt = match origin {
                None => None,
                Some(BlockOrigin::Exit { item }) => {
                    if !self.written_exits.contains(&a) {
                        continue;
                    }
                    Some(item)
                }
                Some(BlockOrigin::Items { first, end, .. }) if first == end => None,
                Some(BlockOrigin::Items { .. }) => continue,
            };
            let label = self.labels[a].clone();
            let _ = write!(self.out, "\n{label}:");
            let insts = self.alloc.blocks[a].insts.clone();
            if insts.iter().any(|i| !i.is_artefact()) {
                return err(self.alloc, "an operation in a block the allocation added");
            }
            self.artefacts(&insts)?;
            match self.alloc.blocks[a].term.clone() {
                Terminator::Jump { target, .. } => {
                    let label = self.labels[target.index()].clone();
                    self.line(&format!("bra.uni {label};"));
                }
                Terminator::Ret { .. } => {
                    let opcode = exit_stmt
                        .and_then(|i| match &self.ast.items[i] {
                            Item::Stmt(s) => Some(s.opcode.clone()),
                            _ => None,
                        })
                        .unwrap_or_else(|| "ret".into());
                    self.line(&format!("{opcode};"));
                }
                Terminator::Branch { .. } => {
                    return err(self.alloc, "a new block ends with a branch")
                }
            }
        }
        Ok(())
    }

    fn kept_constant(&mut self, item: usize, ty: RegType) {
        let Item::Stmt(stmt) = &self.ast.items[item] else {
            return;
        };
        let name = kept_name(item);
        let text = self.render(stmt.span, &[], &mut |_, _| None);
        let def = stmt.operands.first().map(|o| o.regs());
        let text = match def.as_deref() {
            Some([r]) => {
                let mut s = self.src[stmt.span.start..r.span.start].to_string();
                s.push_str(&name);
                s.push_str(&self.src[r.span.end..stmt.span.end]);
                s
            }
            _ => text,
        };
        let _ = ty;
        self.out.push_str(&text);
    }

    /// `src[span]` with each binding's text replaced by what `name` says.
    fn render(
        &self,
        span: Span,
        bindings: &[Binding],
        name: &mut dyn FnMut(usize, Slot) -> Option<String>,
    ) -> String {
        let mut sorted: Vec<(usize, &Binding)> = bindings.iter().enumerate().collect();
        sorted.sort_by_key(|(_, b)| b.span.start);
        let mut s = String::new();
        let mut at = span.start;
        for (i, b) in sorted {
            if b.span.start < at || b.span.end > span.end {
                continue;
            }
            if let Some(n) = name(i, b.slot) {
                s.push_str(&self.src[at..b.span.start]);
                s.push_str(&n);
                at = b.span.end;
            }
        }
        s.push_str(&self.src[at..span.end]);
        s
    }

    fn value_ty(&self, v: Value) -> RegType {
        self.map.types.get(v.index()).copied().unwrap_or(RegType {
            pred: false,
            bits: 32,
        })
    }

    /// The family of what `v` leaves in a location of `class`: a predicate in a 32-bit
    /// register is 0 or 1.
    fn family(&self, v: Value, loc: Location) -> Family {
        let ty = self.value_ty(v);
        let pred_class = loc
            .reg_class()
            .is_some_and(|c| self.target.class(c).name == "p");
        match (ty.pred, pred_class) {
            (true, false) => Family::B32,
            _ => Family::of(ty),
        }
    }

    fn name(&mut self, family: Family, unit: u16) -> String {
        let n = self.used.entry(family).or_insert(0);
        *n = (*n).max(unit + 1);
        format!("{}{unit}", family.prefix())
    }

    /// The name of element `elem` of `v` at `loc`.
    fn elem_name(
        &mut self,
        v: Value,
        loc: Option<Location>,
        elem: u16,
    ) -> Result<String, ExportError> {
        let Some(loc @ Location::Reg { first, .. }) = loc else {
            return err(
                self.alloc,
                format!("`%{}` is not in a register", self.alloc.value(v).name),
            );
        };
        let family = self.family(v, loc);
        Ok(self.name(family, first + elem * family.units()))
    }

    fn use_name(&mut self, u: &Use, elem: u16) -> Result<String, ExportError> {
        self.elem_name(u.value, u.loc, elem)
    }

    fn op(&mut self, op: &Op, origin: &Origin) -> Result<(), ExportError> {
        for u in op.uses() {
            self.check_whole(u)?;
        }
        for d in &op.defs {
            if let Some(Location::Reg { first, len, .. }) = d.loc {
                (first..first + len).for_each(|x| {
                    self.narrow.remove(&x);
                });
            }
        }
        match origin {
            Origin::Stmt { item, bindings } | Origin::Remat { item, bindings } => {
                let Item::Stmt(stmt) = &self.ast.items[*item] else {
                    return err(self.alloc, "an operation without its statement");
                };
                let mut names: HashMap<usize, String> = HashMap::new();
                for (i, b) in bindings.iter().enumerate() {
                    let name = match b.slot {
                        Slot::Def { def, elem } => {
                            let d = &op.defs[def];
                            match (d.loc, origin) {
                                (None, Origin::Remat { .. }) => "_".to_string(),
                                _ => self.elem_name(d.value, d.loc, elem)?,
                            }
                        }
                        Slot::Use { operand, elem } => match op.operands.get(operand) {
                            Some(Operand::Value(u)) => self.use_name(u, elem)?,
                            _ => return err(self.alloc, "a register operand became an immediate"),
                        },
                        Slot::Offset {
                            operand,
                            elem,
                            offset,
                        } => match op.operands.get(operand) {
                            Some(Operand::Value(u)) => {
                                format!("{}+{offset}", self.use_name(u, elem)?)
                            }
                            _ => return err(self.alloc, "an address base became an immediate"),
                        },
                        Slot::Folded { item } => kept_name(item),
                        Slot::Cond => continue,
                    };
                    names.insert(i, name);
                }
                let text = self.render(stmt.span, bindings, &mut |i, _| names.get(&i).cloned());
                if matches!(origin, Origin::Remat { .. }) {
                    self.line(text.trim());
                } else {
                    self.out.push_str(&text);
                }
            }
            Origin::Split => {
                let Some(t) = op.uses().next().copied() else {
                    return err(self.alloc, "a split without operand");
                };
                let moves = self.element_moves(&t, &op.defs, true)?;
                self.parallel(moves)?;
            }
            Origin::Collect => {
                let d = op.defs[0];
                let uses: Vec<Use> = op.uses().copied().collect();
                let defs_as: Vec<Def> = uses
                    .iter()
                    .map(|u| Def {
                        loc: u.loc,
                        ..Def::new(u.value, u.pos)
                    })
                    .collect();
                let tuple = Use {
                    value: d.value,
                    fixed: None,
                    loc: d.loc,
                    pos: d.pos,
                };
                let moves = self.element_moves(&tuple, &defs_as, false)?;
                self.parallel(moves)?;
            }
            Origin::Undef => {}
            Origin::Literal { bits } => {
                let d = op.defs[0];
                let name = self.elem_name(d.value, d.loc, 0)?;
                let family = self.family(
                    d.value,
                    d.loc.unwrap_or(Location::Slot { first: 0, len: 1 }),
                );
                self.line(&format!(
                    "mov.b{} {name}, {};",
                    family.bits(),
                    literal(*bits, family)
                ));
            }
        }
        Ok(())
    }

    /// Register moves between a tuple and its elements (`split` when `out`, else
    /// `collect`): (destination, source, family), the ones that move anything.
    fn element_moves(
        &mut self,
        tuple: &Use,
        elems: &[Def],
        out: bool,
    ) -> Result<Vec<(String, String, Family)>, ExportError> {
        let mut moves = Vec::new();
        let Some(Location::Reg { first, .. }) = tuple.loc else {
            return err(self.alloc, "a tuple not in registers");
        };
        let family = self.family(
            tuple.value,
            tuple.loc.unwrap_or(Location::Slot { first: 0, len: 1 }),
        );
        for (i, d) in elems.iter().enumerate() {
            let Some(Location::Reg { first: at, .. }) = d.loc else {
                return err(self.alloc, "a tuple element not in a register");
            };
            let unit = first + i as u16 * family.units();
            if unit == at {
                continue;
            }
            let (tuple_name, elem_name) = (self.name(family, unit), self.name(family, at));
            moves.push(if out {
                (elem_name, tuple_name, family)
            } else {
                (tuple_name, elem_name, family)
            });
        }
        Ok(moves)
    }

    /// Register moves with parallel semantics: through new registers when a destination is
    /// also a source.
    fn parallel(&mut self, moves: Vec<(String, String, Family)>) -> Result<(), ExportError> {
        let conflict = moves
            .iter()
            .any(|(d, _, _)| moves.iter().any(|(_, s, _)| s == d));
        if !conflict {
            for (d, s, f) in moves {
                self.line(&format!("{} {d}, {s};", mov(f)));
            }
            return Ok(());
        }
        let mut staged = Vec::new();
        for (d, s, f) in moves {
            let t = self.temp(f);
            self.line(&format!("{} {t}, {s};", mov(f)));
            staged.push((d, t, f));
        }
        for (d, t, f) in staged {
            self.line(&format!("{} {d}, {t};", mov(f)));
        }
        Ok(())
    }

    fn temp(&mut self, family: Family) -> String {
        self.temps.push(family);
        format!("%chr_t{}", self.temps.len() - 1)
    }

    /// Spill code and the allocation's copies and rematerialisations.
    fn artefact(&mut self, inst: &Inst) -> Result<(), ExportError> {
        for loc in written_registers(&inst.kind) {
            if let Location::Reg { first, len, .. } = loc {
                (first..first + len).for_each(|u| {
                    self.narrow.remove(&u);
                });
            }
        }
        match &inst.kind {
            InstKind::ParallelCopy(moves) => {
                let mut list = Vec::new();
                for m in moves {
                    list.extend(self.register_moves(m)?);
                }
                self.parallel(list)
            }
            InstKind::Spill(m) | InstKind::Reload(m) => self.transfer(m),
            InstKind::Remat { dst, value, uses } if !self.def_op.contains_key(value) => {
                self.select(*dst, *value, uses)
            }
            InstKind::Remat { dst, value, uses } => {
                let Some(&(b, i)) = self.def_op.get(value) else {
                    return err(self.alloc, "a remat of a value no operation defines");
                };
                let Some(op) = self.orig.blocks[b].insts[i].op() else {
                    return err(self.alloc, "a remat of a value no operation defines");
                };
                let mut op = op.clone();
                let origin = self.map.blocks[b].ops[self.orig.blocks[b].insts[..i]
                    .iter()
                    .filter(|x| !x.is_artefact())
                    .count()]
                .clone();
                for d in &mut op.defs {
                    d.loc = (d.value == *value).then_some(*dst);
                }
                let operands = op.operands.iter_mut().filter_map(|o| match o {
                    Operand::Value(u) => Some(u),
                    Operand::Imm(_) => None,
                });
                for (u, given) in operands.zip(uses) {
                    *u = *given;
                }
                match origin {
                    Origin::Stmt { item, bindings } => {
                        self.op(&op, &Origin::Remat { item, bindings })
                    }
                    other => self.op(&op, &other),
                }
            }
            InstKind::Swap(..) => err(
                self.alloc,
                "a swap (the target has no exchange instruction)",
            ),
            InstKind::Op(_) => err(self.alloc, "an operation where an artefact was expected"),
        }
    }

    /// A recomputed phi of constants (`schedule::select`): `selp` of its then-side and
    /// else-side immediates under the branch's predicate.
    fn select(&mut self, dst: Location, value: Value, uses: &[Use]) -> Result<(), ExportError> {
        let Some(arms) = self.select_arms(value) else {
            return err(
                self.alloc,
                "a remat of a value no operation or select defines",
            );
        };
        let constant = |v| crate::schedule::select::constant(self.orig, v);
        let (Some(t), Some(e)) = (constant(arms.then_value), constant(arms.else_value)) else {
            return err(
                self.alloc,
                "a select of a phi whose arguments are not immediates",
            );
        };
        let (
            Location::Reg { first: d, .. },
            [Use {
                loc: Some(Location::Reg { first: p, .. }),
                ..
            }],
        ) = (dst, uses)
        else {
            return err(self.alloc, "a select outside registers");
        };
        let family = self.family(value, dst);
        let bits = family.bits();
        let mask = u64::MAX >> (64 - u32::from(bits.min(64)));
        let r = self.name(family, d);
        let p = self.name(Family::Pred, *p);
        let (t, e) = (t as u64 & mask, e as u64 & mask);
        self.line(&format!("selp.b{bits} {r}, 0x{t:X}, 0x{e:X}, {p};"));
        Ok(())
    }

    /// The arms of the original phi `value`, if a select recomputes it.
    fn select_arms(&self, value: Value) -> Option<crate::schedule::select::Arms> {
        let cfg = crate::analysis::cfg::Graph::of_function(self.orig);
        let dom = crate::analysis::dom::DomTree::new(&cfg);
        self.orig.blocks.iter().enumerate().find_map(|(j, b)| {
            let phi = b.phis.iter().find(|p| p.def.value == value)?;
            crate::schedule::select::arms(self.orig, &cfg, &dom, Block(j as u32), phi)
        })
    }

    /// A register-to-register move as PTX moves of whole elements.
    fn register_moves(&mut self, m: &Move) -> Result<Vec<(String, String, Family)>, ExportError> {
        let (
            Location::Reg {
                first: d,
                len,
                class,
            },
            Location::Reg {
                first: s,
                class: sc,
                ..
            },
        ) = (m.dst, m.src)
        else {
            return err(self.alloc, "a parallel copy between non-registers");
        };
        if class != sc {
            return err(self.alloc, "a parallel copy between classes");
        }
        let family = self.family(m.value, m.src);
        let k = family.units();
        if len % k != 0 || d % k != 0 || s % k != 0 {
            return err(
                self.alloc,
                format!(
                    "a move of part of the {}-bit value `%{}`",
                    family.bits(),
                    self.alloc.value(m.value).name
                ),
            );
        }
        Ok((0..len / k)
            .map(|i| {
                (
                    self.name(family, d + i * k),
                    self.name(family, s + i * k),
                    family,
                )
            })
            .collect())
    }

    /// A spill or reload: memory slots, or a predicate kept in a 32-bit register.
    fn transfer(&mut self, m: &Move) -> Result<(), ExportError> {
        match (m.dst, m.src) {
            (Location::Slot { first, len }, Location::Reg { .. }) => {
                self.memory(m.src, first, len, m.value, true)
            }
            (Location::Reg { .. }, Location::Slot { first, len }) => {
                self.memory(m.dst, first, len, m.value, false)
            }
            (Location::Reg { first: d, .. }, Location::Reg { first: s, .. }) => {
                let into_pred = self.family(m.value, m.dst) == Family::Pred;
                let (r, p) = if into_pred { (s, d) } else { (d, s) };
                let r = self.name(Family::B32, r);
                let p = self.name(Family::Pred, p);
                self.line(&if into_pred {
                    format!("setp.ne.u32 {p}, {r}, 0;")
                } else {
                    format!("selp.u32 {r}, 1, 0, {p};")
                });
                Ok(())
            }
            _ => err(self.alloc, "a spill between unsupported locations"),
        }
    }

    /// Stores (`store`) or loads the register range `reg` to or from slots `first..+len`.
    fn memory(
        &mut self,
        reg: Location,
        first: u32,
        len: u16,
        v: Value,
        store: bool,
    ) -> Result<(), ExportError> {
        let Location::Reg { first: unit, .. } = reg else {
            return err(self.alloc, "a spill of a non-register");
        };
        self.spill_words = self.spill_words.max(first + u32::from(len));
        let family = self.family(v, reg);
        if family == Family::Pred {
            let t = self.temp(Family::B32);
            let p = self.name(Family::Pred, unit);
            let at = format!("[{SPILL}+{}]", 4 * first);
            if store {
                self.line(&format!("selp.u32 {t}, 1, 0, {p};"));
                self.line(&format!("st.local.u32 {at}, {t};"));
            } else {
                self.line(&format!("ld.local.u32 {t}, {at};"));
                self.line(&format!("setp.ne.u32 {p}, {t}, 0;"));
            }
            return Ok(());
        }
        let k = family.units();
        for i in (0..len).step_by(usize::from(k)) {
            let name = self.name(family, unit + i);
            let at = format!("[{SPILL}+{}]", 4 * (first + u32::from(i)));
            let bits = family.bits().max(32);
            let aligned = (4 * (first + u32::from(i))).is_multiple_of(u32::from(bits / 8));
            if !aligned {
                let halves: Vec<String> = (0..k).map(|_| self.temp(Family::B32)).collect();
                let list = halves.join(", ");
                if store {
                    self.line(&format!("mov.b{bits} {{{list}}}, {name};"));
                }
                for (j, h) in halves.iter().enumerate() {
                    let at = format!("[{SPILL}+{}]", 4 * (first + u32::from(i) + j as u32));
                    self.line(&if store {
                        format!("st.local.b32 {at}, {h};")
                    } else {
                        format!("ld.local.b32 {h}, {at};")
                    });
                }
                if !store {
                    self.line(&format!("mov.b{bits} {name}, {{{list}}};"));
                }
                continue;
            }
            let ty = format!("b{bits}");
            self.line(&if store {
                format!("st.local.{ty} {at}, {name};")
            } else {
                format!("ld.local.{ty} {name}, {at};")
            });
        }
        Ok(())
    }

    /// The register declarations of the body.
    fn declarations(&self) -> String {
        let mut s = String::new();
        for (family, n) in &self.used {
            let _ = writeln!(s, "	.reg {} {}<{n}>;", family.decl(), family.prefix());
        }
        let mut kept: Vec<(&usize, &RegType)> = self.map.kept_constants.iter().collect();
        kept.sort_by_key(|(item, _)| **item);
        for (item, ty) in kept {
            let _ = writeln!(s, "	.reg {} {};", Family::of(*ty).decl(), kept_name(*item));
        }
        for (i, family) in self.temps.iter().enumerate() {
            let _ = writeln!(s, "	.reg {} %chr_t{i};", family.decl());
        }
        if self.spill_words > 0 {
            let _ = writeln!(
                s,
                "	.local .align 16 .b8 {SPILL}[{}];",
                4 * self.spill_words
            );
        }
        s
    }
}

/// The registers an artefact writes.
fn written_registers(kind: &InstKind) -> Vec<Location> {
    match kind {
        InstKind::ParallelCopy(ms) => ms.iter().map(|m| m.dst).collect(),
        InstKind::Spill(m) | InstKind::Reload(m) => vec![m.dst],
        InstKind::Remat { dst, .. } => vec![*dst],
        InstKind::Swap(a, b) => vec![*a, *b],
        InstKind::Op(_) => Vec::new(),
    }
}

/// Appends written instructions; lines the exporter starts itself replace the indentation
/// the text left before them.
/// Whether the operations of `a` (in `af`) are those of `o` (in `of`) in the same order,
/// by opcode and defined value names.
fn same_op_order(of: &Function, o: &BlockData, af: &Function, a: &BlockData) -> bool {
    op_keys(of, o) == op_keys(af, a)
}

/// Each operation of `b` (in `f`) as its opcode and the names of the values it defines.
fn op_keys<'a>(f: &'a Function, b: &'a BlockData) -> Vec<(&'a str, Vec<&'a str>)> {
    b.insts
        .iter()
        .filter_map(|i| i.op())
        .map(|op| {
            let defs = op.defs.iter().map(|d| &*f.value(d.value).name).collect();
            (&*op.opcode, defs)
        })
        .collect()
}

fn append(text: &mut String, out: &str) {
    if out.starts_with('\n') {
        drop_blank_line(text);
    }
    text.push_str(out);
}

/// Removes the indentation and line break left before an item that wrote nothing.
fn drop_blank_line(text: &mut String) {
    let trimmed = text.trim_end_matches([' ', '\t']).len();
    if text[..trimmed].ends_with('\n') {
        text.truncate(trimmed - 1);
    }
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Stmt(s) => s.span,
        Item::Label { span, .. } => *span,
        Item::RegDecl(span) => *span,
    }
}

fn kept_name(item: usize) -> String {
    format!("%chr_c{item}")
}

fn mov(f: Family) -> String {
    match f {
        Family::Pred => "mov.pred".into(),
        f => format!("mov.b{}", f.bits()),
    }
}

fn literal(bits: i64, family: Family) -> String {
    match family {
        Family::Pred => (bits != 0).to_string(),
        Family::B64 | Family::B128 => format!("0x{:016x}", bits as u64),
        Family::B16 => format!("0x{:04x}", bits as u16),
        Family::B8 => format!("0x{:02x}", bits as u8),
        _ => format!("0x{:08x}", bits as u32),
    }
}
