//! The `.chr` parser (grammar in `docs/FORMAT.md`).
//!
//! Line-oriented recursive descent: the lexer turns each line into tokens with columns,
//! a function's lines are pre-scanned for block labels and value definitions (so forward
//! references get precise messages), then each line is parsed into the program model.
//! Structural rules that need the whole function — phi arity against predecessors,
//! locations on all operands or none, phi arguments naming later values — are checked at
//! the closing brace. The parser never panics: every malformed input is a [`ParseError`]
//! with the line:col of the offending token.

use crate::lexer::{lex_line, Tok, Token};
use crate::program::*;
use crate::target::{parse_generic_class, ClassId, Target, TargetError};
use std::collections::{HashMap, HashSet};

/// A malformed input: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct ParseError {
    pub pos: Pos,
    pub message: String,
}

type Result<T> = std::result::Result<T, ParseError>;

fn err<T>(pos: Pos, message: impl Into<String>) -> Result<T> {
    Err(ParseError {
        pos,
        message: message.into(),
    })
}

/// Parses a whole `.chr` file.
pub fn parse(src: &str) -> Result<Program> {
    parse_with(src, None)
}

/// Parses a `.chr` file for `target` instead of the one its `target` line names (which
/// must still be well-formed): errors point into `src`, where the program does not fit.
pub fn parse_for_target(src: &str, target: &Target) -> Result<Program> {
    parse_with(src, Some(target))
}

fn parse_with(src: &str, target: Option<&Target>) -> Result<Program> {
    let lines = lex_all(src);
    let Some((first, rest)) = lines.split_first() else {
        return err(Pos { line: 1, col: 1 }, "empty file: expected `target`");
    };
    let written = parse_target(first)?;
    let target = target.cloned().unwrap_or(written);
    let mut functions = Vec::new();
    let mut names = HashSet::new();
    let mut i = 0;
    while i < rest.len() {
        let end = function_end(&rest[i..])?;
        let function = FunctionParser::new(&target, &rest[i..i + end]).parse()?;
        if !names.insert(function.name.clone()) {
            return err(
                function.pos,
                format!("duplicate function `@{}`", function.name),
            );
        }
        functions.push(function);
        i += end + 1;
    }
    if functions.is_empty() {
        return err(first.end(), "expected at least one `func` after the target");
    }
    Ok(Program { target, functions })
}

/// One line with a statement (not blank, not only a comment), lexed on demand so that a
/// large file never holds all its tokens at once.
#[derive(Debug)]
struct Line<'a> {
    text: &'a str,
    no: u32,
}

impl<'a> Line<'a> {
    fn tokens(&self) -> Result<Vec<Token<'a>>> {
        lex_line(self.text, self.no).map_err(|(pos, message)| ParseError { pos, message })
    }

    /// The position just past the line's last character.
    fn end(&self) -> Pos {
        Pos {
            line: self.no,
            col: self.text.chars().count() as u32 + 1,
        }
    }

    /// The position of the line's first token.
    fn start(&self) -> Pos {
        let indent = self.text.len() - self.text.trim_start().len();
        Pos {
            line: self.no,
            col: indent as u32 + 1,
        }
    }

    /// The first word as the lexer would split it (a single character if it is no word).
    fn first_word(&self) -> &'a str {
        let t = self.text.trim_start();
        let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        match t.find(|c: char| !word(c)) {
            Some(0) => &t[..t.chars().next().map_or(0, char::len_utf8)],
            Some(n) => &t[..n],
            None => t,
        }
    }
}

fn lex_all(src: &str) -> Vec<Line<'_>> {
    src.lines()
        .enumerate()
        .map(|(n, text)| Line {
            text,
            no: n as u32 + 1,
        })
        .filter(|l| {
            let t = l.text.trim_start();
            !t.is_empty() && !t.starts_with(';')
        })
        .collect()
}

fn parse_target(line: &Line) -> Result<Target> {
    let tokens = line.tokens()?;
    if tokens[0].tok != Tok::Ident("target") {
        return err(tokens[0].pos, "expected `target` as the first statement");
    }
    let Some(name) = tokens.get(1) else {
        return err(line.end(), "expected a target name after `target`");
    };
    let after: String = line.text.chars().skip(name.pos.col as usize - 1).collect();
    let spec = after.split(';').next().unwrap_or_default().trim();
    let result = match spec.strip_prefix("generic") {
        Some(classes) if classes.is_empty() || classes.starts_with(char::is_whitespace) => {
            let classes_col = name.pos.col + "generic".len() as u32;
            return generic_target(
                classes,
                Pos {
                    line: line.no,
                    col: classes_col,
                },
            );
        }
        _ => Target::builtin(spec),
    };
    result.map_err(|e| ParseError {
        pos: name.pos,
        message: e.to_string(),
    })
}

/// `generic NAME=UNITS[:flag]*...`, with an error at the class description at fault.
fn generic_target(classes: &str, start: Pos) -> Result<Target> {
    let mut names: HashMap<String, Pos> = HashMap::new();
    for (index, word) in words_with_offsets(classes) {
        let pos = Pos {
            line: start.line,
            col: start.col + classes.get(..index).map_or(0, |t| t.chars().count()) as u32,
        };
        let (class, _) = parse_generic_class(word).map_err(|e| ParseError {
            pos,
            message: e.to_string(),
        })?;
        if names.insert(class.name.clone(), pos).is_some() {
            return err(pos, format!("duplicate class `{}`", class.name));
        }
        if names.len() > usize::from(u8::MAX) + 1 {
            return err(pos, "a generic target has at most 256 classes");
        }
    }
    Target::generic(classes).map_err(|e| ParseError {
        pos: match &e {
            TargetError::BadCopyTemp(name, ..) => names.get(name).copied().unwrap_or(start),
            _ => start,
        },
        message: e.to_string(),
    })
}

/// The whitespace-separated words of `text` with their byte offsets.
fn words_with_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    let ends = text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')));
    for (i, c) in ends {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                words.push((s, &text[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    words
}

/// The number of lines of the function starting at `lines[0]`, up to its closing `}`.
fn function_end(lines: &[Line]) -> Result<usize> {
    if lines[0].first_word() != "func" {
        return err(lines[0].start(), "expected `func`");
    }
    for (i, line) in lines.iter().enumerate().skip(1) {
        match line.first_word() {
            "}" => return Ok(i),
            "func" => return err(line.start(), "expected `}` before the next `func`"),
            _ => {}
        }
    }
    err(
        lines[lines.len() - 1].end(),
        "expected `}` at the end of the function",
    )
}

/// A cursor over the tokens of one line.
#[derive(Debug)]
struct Cursor<'l, 'a> {
    tokens: &'l [Token<'a>],
    next: usize,
    end: Pos,
}

impl<'l, 'a> Cursor<'l, 'a> {
    fn new(tokens: &'l [Token<'a>], end: Pos) -> Self {
        Cursor {
            tokens,
            next: 0,
            end,
        }
    }

    fn peek(&self) -> Option<Tok<'a>> {
        self.tokens.get(self.next).map(|t| t.tok)
    }

    fn pos(&self) -> Pos {
        self.tokens.get(self.next).map_or(self.end, |t| t.pos)
    }

    fn bump(&mut self) -> Option<Token<'a>> {
        let t = self.tokens.get(self.next).copied();
        self.next += 1;
        t
    }

    fn at_end(&self) -> bool {
        self.next >= self.tokens.len()
    }

    fn eat(&mut self, tok: Tok) -> bool {
        if self.peek() == Some(tok) {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<Pos> {
        let pos = self.pos();
        if self.eat(tok) {
            Ok(pos)
        } else {
            err(pos, format!("expected {what}"))
        }
    }

    fn ident(&mut self, what: &str) -> Result<(&'a str, Pos)> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.next += 1;
                Ok((s, pos))
            }
            _ => err(pos, format!("expected {what}")),
        }
    }

    fn int(&mut self, what: &str) -> Result<(i64, Pos)> {
        let pos = self.pos();
        match self.peek() {
            Some(Tok::Int(n)) => {
                self.next += 1;
                Ok((n, pos))
            }
            _ => err(pos, format!("expected {what}")),
        }
    }

    fn small(&mut self, what: &str, limit: i64) -> Result<(u32, Pos)> {
        let (n, pos) = self.int(what)?;
        if !(0..=limit).contains(&n) {
            return err(pos, format!("{what} {n} is out of range (0 to {limit})"));
        }
        Ok((n as u32, pos))
    }

    fn finish(&self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            err(self.pos(), "unexpected token at the end of the line")
        }
    }
}

/// Splits `v4` into `("v", "4")`: the class letters and the rest.
fn split_letters(text: &str) -> (&str, &str) {
    let n = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    text.split_at(n)
}

fn parse_u16(text: &str, pos: Pos, what: &str) -> Result<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return err(pos, format!("expected {what}"));
    }
    text.parse()
        .or_else(|_| err(pos, format!("{what} `{text}` is out of range")))
}

/// A phi argument or move value whose definition may come later in the text.
#[derive(Debug)]
struct Pending<'a> {
    name: &'a str,
    pos: Pos,
    slot: ValueSlot,
}

#[derive(Debug, Clone, Copy)]
enum ValueSlot {
    PhiArg {
        block: usize,
        phi: usize,
        arg: usize,
    },
    Move {
        block: usize,
        inst: usize,
        index: usize,
    },
}

/// Parses one function from its lines (`func` line through the line before `}`).
#[derive(Debug)]
struct FunctionParser<'l, 'a> {
    target: &'l Target,
    lines: &'l [Line<'a>],
    labels: HashMap<&'a str, Block>,
    defined_later: HashSet<&'a str>,
    values: Vec<ValueData>,
    names: HashMap<&'a str, Value>,
    blocks: Vec<BlockData>,
    open: bool,
    pending: Vec<Pending<'a>>,
}

const PLACEHOLDER: Value = Value(u32::MAX);

impl<'l, 'a> FunctionParser<'l, 'a> {
    fn new(target: &'l Target, lines: &'l [Line<'a>]) -> Self {
        FunctionParser {
            target,
            lines,
            labels: HashMap::new(),
            defined_later: HashSet::new(),
            values: Vec::new(),
            names: HashMap::new(),
            blocks: Vec::new(),
            open: false,
            pending: Vec::new(),
        }
    }

    fn parse(mut self) -> Result<Function> {
        let (name, pos) = self.header()?;
        self.prescan()?;
        for line in &self.lines[1..] {
            self.statement(line)?;
        }
        let end = self.lines[self.lines.len() - 1].end();
        self.close_block(end)?;
        if self.blocks.is_empty() {
            return err(end, "a function needs at least one block");
        }
        self.resolve_pending()?;
        let mut function = Function {
            name,
            pos,
            blocks: self.blocks,
            values: self.values,
        };
        check_phi_arity(&function)?;
        check_locations_all_or_none(&function)?;
        function.values.shrink_to_fit();
        Ok(function)
    }

    fn header(&self) -> Result<(String, Pos)> {
        let tokens = self.lines[0].tokens()?;
        let mut c = Cursor::new(&tokens, self.lines[0].end());
        c.bump();
        let pos = c.expect(Tok::Punct('@'), "`@` and the function name")?;
        let (name, _) = c.ident("a function name")?;
        c.expect(Tok::Punct('{'), "`{`")?;
        c.finish()?;
        Ok((name.to_string(), pos))
    }

    /// Collects block labels and the names every line defines.
    fn prescan(&mut self) -> Result<()> {
        for line in &self.lines[1..] {
            let tokens = line.tokens()?;
            if let Some((label, pos)) = label_of(&tokens) {
                let block = Block(self.labels.len() as u32);
                if self.labels.insert(label, block).is_some() {
                    return err(pos, format!("duplicate block label `{label}`"));
                }
            } else if tokens.iter().any(|t| t.tok == Tok::Punct('=')) {
                for pair in tokens.windows(2) {
                    if let (Tok::Value(name), Tok::Punct(':')) = (pair[0].tok, pair[1].tok) {
                        self.defined_later.insert(name);
                    }
                }
            }
        }
        Ok(())
    }

    fn statement(&mut self, line: &Line<'a>) -> Result<()> {
        let tokens = line.tokens()?;
        if let Some((label, pos)) = label_of(&tokens) {
            self.close_block(pos)?;
            let freq = block_freq(&tokens)?;
            self.blocks.push(BlockData {
                name: label.to_string(),
                pos,
                freq,
                phis: Vec::new(),
                insts: Vec::new(),
                term: Terminator::Ret {
                    uses: Vec::new(),
                    pos,
                },
            });
            self.open = true;
            return Ok(());
        }
        let first = tokens[0];
        if self.blocks.is_empty() {
            return err(
                first.pos,
                "expected a block label before the first instruction",
            );
        }
        if !self.open {
            let name = &self.blocks[self.blocks.len() - 1].name;
            return err(
                first.pos,
                format!("instruction after the terminator of block `{name}`"),
            );
        }
        let mut c = Cursor::new(&tokens, line.end());
        match first.tok {
            Tok::Ident("jump" | "branch" | "ret") => self.terminator(&mut c),
            Tok::Ident(kw @ ("parallel_copy" | "swap" | "spill" | "reload" | "remat")) => {
                self.artefact(&mut c, kw)
            }
            _ => self.operation(&mut c),
        }?;
        c.finish()
    }

    fn close_block(&mut self, pos: Pos) -> Result<()> {
        if self.open {
            let name = &self.blocks[self.blocks.len() - 1].name;
            return err(pos, format!("block `{name}` has no terminator"));
        }
        Ok(())
    }

    fn current(&mut self) -> &mut BlockData {
        let n = self.blocks.len() - 1;
        &mut self.blocks[n]
    }

    fn block_ref(&self, c: &mut Cursor<'_, 'a>) -> Result<Block> {
        let (label, pos) = c.ident("a block label")?;
        self.labels.get(label).copied().ok_or_else(|| ParseError {
            pos,
            message: format!("unknown block label `{label}`"),
        })
    }

    fn class(&self, name: &str, pos: Pos) -> Result<ClassId> {
        self.target.class_by_name(name).ok_or_else(|| ParseError {
            pos,
            message: format!("unknown class `{name}` for target {}", self.target),
        })
    }

    /// `v4`, `v[4:7]`, `m3`, `m[3:4]`, `v7.l5`, `v7.l[4:5]`.
    fn location(&self, c: &mut Cursor<'_, 'a>) -> Result<Location> {
        let (text, pos) = c.ident("a location")?;
        let (letters, rest) = split_letters(text);
        if letters == "m" {
            let (first, len) = self.index_or_range(c, rest, pos)?;
            return Ok(Location::Slot {
                first: u32::from(first),
                len,
            });
        }
        let class = self.class(letters, pos)?;
        if let Some((reg, lanes)) = rest.split_once(".l") {
            let reg = parse_u16(reg, pos, "a register number")?;
            let (first, len) = self.index_or_range(c, lanes, pos)?;
            return Ok(Location::Lane {
                class,
                reg,
                first,
                len,
            });
        }
        let (first, len) = self.index_or_range(c, rest, pos)?;
        Ok(Location::Reg { class, first, len })
    }

    /// A single index written in the identifier (`v4`) or a `[first:last]` range after it.
    fn index_or_range(&self, c: &mut Cursor<'_, 'a>, digits: &str, pos: Pos) -> Result<(u16, u16)> {
        if !digits.is_empty() {
            return Ok((parse_u16(digits, pos, "a register number")?, 1));
        }
        c.expect(Tok::Punct('['), "a register number or `[first:last]`")?;
        let (first, _) = c.small("a first unit", i64::from(u16::MAX))?;
        c.expect(Tok::Punct(':'), "`:`")?;
        let (last, last_pos) = c.small("a last unit", i64::from(u16::MAX))?;
        c.expect(Tok::Punct(']'), "`]`")?;
        if last < first {
            return err(last_pos, format!("empty range: {last} is below {first}"));
        }
        Ok((first as u16, (last - first + 1) as u16))
    }

    fn define(&mut self, name: &'a str, class: ClassId, size: u16, pos: Pos) -> Result<Value> {
        if self.names.contains_key(name) {
            return err(pos, format!("`%{name}` is defined twice"));
        }
        let value = Value(self.values.len() as u32);
        self.values.push(ValueData {
            name: name.into(),
            class,
            size,
            pos,
        });
        self.names.insert(name, value);
        Ok(value)
    }

    fn lookup(&self, name: &str, pos: Pos) -> Result<Value> {
        match self.names.get(name) {
            Some(&v) => Ok(v),
            None if self.defined_later.contains(name) => err(
                pos,
                format!("`%{name}` is used before its definition (only phi arguments may refer forward)"),
            ),
            None => err(pos, format!("undefined value `%{name}`")),
        }
    }

    /// `%x:v4 [fixed(LOC)] [@LOC]`
    fn def(&mut self, c: &mut Cursor<'_, 'a>) -> Result<Def> {
        let pos = c.pos();
        let Some(Tok::Value(name)) = c.peek() else {
            return err(pos, "expected a definition `%name:CLASS SIZE`");
        };
        c.bump();
        c.expect(Tok::Punct(':'), "`:` and a class with a size, like `%x:v1`")?;
        let (class, size) = self.class_size(c)?;
        let fixed = self.fixed(c)?;
        let loc = self.at_location(c)?;
        let value = self.define(name, class, size, pos)?;
        if let Some((loc, loc_pos)) = fixed {
            self.check_fixed(loc, value, loc_pos)?;
        }
        let mut def = Def::new(value, pos);
        def.fixed = fixed.map(|(loc, _)| loc);
        def.loc = loc;
        Ok(def)
    }

    /// `CLASS SIZE` after a value's `:`, like `v1`.
    fn class_size(&self, c: &mut Cursor<'_, 'a>) -> Result<(ClassId, u16)> {
        let (class_size, cs_pos) = c.ident("a class with a size, like `v1`")?;
        let (letters, digits) = split_letters(class_size);
        let class = self.class(letters, cs_pos)?;
        let size = parse_u16(digits, cs_pos, "a size after the class name")?;
        let rc = self.target.class(class);
        if !rc.allows_size(size) {
            let sizes: Vec<String> = rc.sizes.iter().map(u16::to_string).collect();
            return err(
                cs_pos,
                format!(
                    "class `{letters}` does not allow tuples of {size} (allowed: {})",
                    sizes.join(", ")
                ),
            );
        }
        Ok((class, size))
    }

    /// The value a `remat` recomputes: `%x`, or `%x:CLASS SIZE` for a phi the allocation
    /// left out (a select recomputes it, `docs/FORMAT.md`), declared by its first `remat`.
    fn remat_value(&mut self, c: &mut Cursor<'_, 'a>) -> Result<Value> {
        let pos = c.pos();
        let Some(Tok::Value(name)) = c.bump().map(|t| t.tok) else {
            return err(pos, "expected a value `%name`");
        };
        if !c.eat(Tok::Punct(':')) {
            return self.lookup(name, pos);
        }
        let (class, size) = self.class_size(c)?;
        match self.names.get(name) {
            Some(&v)
                if (self.values[v.index()].class, self.values[v.index()].size) == (class, size) =>
            {
                Ok(v)
            }
            Some(_) => err(
                pos,
                format!("`%{name}` was declared with another class or size"),
            ),
            None => self.define(name, class, size, pos),
        }
    }

    /// `fixed(LOC)`: the location and where it starts.
    fn fixed(&self, c: &mut Cursor<'_, 'a>) -> Result<Option<(Location, Pos)>> {
        if !c.eat(Tok::Ident("fixed")) {
            return Ok(None);
        }
        c.expect(Tok::Punct('('), "`(` after `fixed`")?;
        let pos = c.pos();
        let loc = self.location(c)?;
        c.expect(Tok::Punct(')'), "`)`")?;
        Ok(Some((loc, pos)))
    }

    fn at_location(&self, c: &mut Cursor<'_, 'a>) -> Result<Option<Location>> {
        if c.eat(Tok::Punct('@')) {
            Ok(Some(self.location(c)?))
        } else {
            Ok(None)
        }
    }

    /// `%x [fixed(LOC)] [@LOC]`
    fn use_(&self, c: &mut Cursor<'_, 'a>) -> Result<Use> {
        let pos = c.pos();
        let Some(Tok::Value(name)) = c.peek() else {
            return err(pos, "expected a value `%name`");
        };
        c.bump();
        let value = self.lookup(name, pos)?;
        let fixed = self.fixed(c)?;
        if let Some((loc, loc_pos)) = fixed {
            self.check_fixed(loc, value, loc_pos)?;
        }
        let fixed = fixed.map(|(loc, _)| loc);
        let loc = self.at_location(c)?;
        Ok(Use {
            value,
            fixed,
            loc,
            pos,
        })
    }

    /// A fixed location must be a register range of the value's class and size, aligned and
    /// inside the class.
    fn check_fixed(&self, loc: Location, value: Value, pos: Pos) -> Result<()> {
        let v = &self.values[value.index()];
        let rc = self.target.class(v.class);
        let Location::Reg { class, first, len } = loc else {
            return err(pos, "a fixed location must be a register range");
        };
        if class != v.class || len != v.size {
            return err(
                pos,
                format!(
                    "fixed location does not fit `%{}`, a value of class `{}` and size {}",
                    v.name, rc.name, v.size
                ),
            );
        }
        let align = rc.align.alignment(len);
        if first % align != 0 {
            return err(pos, format!("fixed location is not {align}-aligned"));
        }
        if u32::from(first) + u32::from(len) > u32::from(rc.units) {
            return err(
                pos,
                format!(
                    "fixed location is outside class `{}` ({} units)",
                    rc.name, rc.units
                ),
            );
        }
        Ok(())
    }

    fn operation(&mut self, c: &mut Cursor<'_, 'a>) -> Result<()> {
        let mut defs = Defs::new();
        if matches!(c.peek(), Some(Tok::Value(_))) {
            loop {
                defs.push(self.def(c)?);
                if !c.eat(Tok::Punct(',')) {
                    break;
                }
            }
            c.expect(Tok::Punct('='), "`=` after the definitions")?;
        }
        let (opcode, op_pos) = c.ident("an opcode")?;
        if opcode == "phi" {
            return self.phi(c, defs, op_pos);
        }
        let operands = self.operands(c)?;
        let mut op = Op {
            opcode: opcode.into(),
            defs,
            operands,
            effect: Effect::None,
            regs: RegAccesses::default(),
            remat: false,
        };
        self.attributes(c, &mut op)?;
        if op.remat {
            if let Some(u) = op.uses().next() {
                return err(u.pos, "a `remat` operation may not have value operands");
            }
        }
        self.current().insts.push(Inst {
            kind: InstKind::Op(op),
            pos: op_pos,
        });
        Ok(())
    }

    fn operands(&self, c: &mut Cursor<'_, 'a>) -> Result<Operands> {
        let mut operands = Operands::new();
        let starts_operand = |t: Option<Tok>| matches!(t, Some(Tok::Value(_) | Tok::Int(_)));
        if !starts_operand(c.peek()) {
            return Ok(operands);
        }
        loop {
            match c.peek() {
                Some(Tok::Int(n)) => {
                    c.bump();
                    operands.push(Operand::imm(n));
                }
                _ => operands.push(Operand::Value(self.use_(c)?)),
            }
            if !c.eat(Tok::Punct(',')) {
                return Ok(operands);
            }
        }
    }

    fn attributes(&self, c: &mut Cursor<'_, 'a>, op: &mut Op) -> Result<()> {
        while !c.at_end() {
            let (word, pos) = c.ident("an attribute")?;
            match word {
                "remat" => op.remat = true,
                "reads" | "writes" | "barrier" | "control" | "carry" => set_effect(op, word, pos)?,
                "implicit" | "implicit_def" | "clobber" => reg_accesses(c, op, word)?,
                "pinned" => {
                    let def = self.early_index(c, op, word)?;
                    op.defs[def].pinned = true;
                }
                "early" => {
                    let def = self.early_index(c, op, word)?;
                    if op.defs[def].tied.is_some() {
                        return err(pos, tied_and_early(def));
                    }
                    op.defs[def].early_clobber = true;
                }
                "tied" | "prefer" => {
                    let (def, operand) = self.def_operand_pair(c, op, word)?;
                    if word == "tied" {
                        if op.defs[def].early_clobber {
                            return err(pos, tied_and_early(def));
                        }
                        op.defs[def].tied = Some(operand);
                    } else {
                        op.defs[def].prefer = Some(operand);
                    }
                }
                _ => return err(pos, format!("unknown attribute `{word}`")),
            }
        }
        Ok(())
    }

    /// `(D)` after `early` or `pinned` (definition 0 when absent), checked against the op.
    fn early_index(&self, c: &mut Cursor<'_, 'a>, op: &Op, word: &str) -> Result<usize> {
        let mut pos = c.pos();
        let def = if c.eat(Tok::Punct('(')) {
            let (d, d_pos) = c.small("a definition index", 255)?;
            pos = d_pos;
            c.expect(Tok::Punct(')'), "`)`")?;
            d as usize
        } else {
            0
        };
        if def >= op.defs.len() {
            return err(
                pos,
                format!(
                    "`{word}` names definition {def}, but the operation has {}",
                    op.defs.len()
                ),
            );
        }
        Ok(def)
    }

    /// `(U)` or `(D=U)` after `tied`/`prefer`, checked against the operation.
    fn def_operand_pair(
        &self,
        c: &mut Cursor<'_, 'a>,
        op: &Op,
        word: &str,
    ) -> Result<(usize, u16)> {
        c.expect(Tok::Punct('('), &format!("`(` after `{word}`"))?;
        let (first, pos) = c.small("an operand index", 255)?;
        let (def, operand) = if c.eat(Tok::Punct('=')) {
            (first as usize, c.small("an operand index", 255)?.0)
        } else {
            (0, first)
        };
        c.expect(Tok::Punct(')'), "`)`")?;
        if def >= op.defs.len() {
            return err(
                pos,
                format!(
                    "`{word}` names definition {def}, but the operation has {}",
                    op.defs.len()
                ),
            );
        }
        let Some(Operand::Value(u)) = op.operands.get(operand as usize) else {
            return err(
                pos,
                format!("`{word}` must name a value operand; operand {operand} is not one"),
            );
        };
        if word == "tied" {
            let (d, o) = (
                &self.values[op.defs[def].value.index()],
                &self.values[u.value.index()],
            );
            if d.class != o.class || d.size != o.size {
                return err(
                    pos,
                    format!(
                        "`tied` joins `%{}` and `%{}`, which differ in class or size",
                        d.name, o.name
                    ),
                );
            }
        }
        Ok((def, operand as u16))
    }

    /// `%y:v1 = phi [bb1: %a], [bb2: %b] [pinned]`
    fn phi(&mut self, c: &mut Cursor<'_, 'a>, defs: Defs, pos: Pos) -> Result<()> {
        let [mut def] = defs[..] else {
            return err(pos, "a phi defines exactly one value");
        };
        let block = self.blocks.len() - 1;
        if !self.blocks[block].insts.is_empty() {
            return err(
                pos,
                "phis must come before the other instructions of a block",
            );
        }
        let phi = self.blocks[block].phis.len();
        let mut args = Vec::new();
        loop {
            let arg_pos = c.expect(Tok::Punct('['), "`[label: %value]`")?;
            let from = self.block_ref(c)?;
            c.expect(Tok::Punct(':'), "`:`")?;
            let value_pos = c.pos();
            let Some(Tok::Value(name)) = c.bump().map(|t| t.tok) else {
                return err(value_pos, "expected a value `%name`");
            };
            c.expect(Tok::Punct(']'), "`]`")?;
            self.pending.push(Pending {
                name,
                pos: value_pos,
                slot: ValueSlot::PhiArg {
                    block,
                    phi,
                    arg: args.len(),
                },
            });
            args.push(PhiArg {
                block: from,
                value: PLACEHOLDER,
                pos: arg_pos,
            });
            if !c.eat(Tok::Punct(',')) {
                break;
            }
        }
        if !c.at_end() {
            let (word, word_pos) = c.ident("`pinned` or the end of the phi")?;
            if word != "pinned" {
                return err(
                    word_pos,
                    format!("a phi takes only the attribute `pinned`, not `{word}`"),
                );
            }
            def.pinned = true;
        }
        let pos = def.pos;
        self.blocks[block].phis.push(Phi { def, args, pos });
        Ok(())
    }

    fn terminator(&mut self, c: &mut Cursor<'_, 'a>) -> Result<()> {
        let (word, pos) = c.ident("a terminator")?;
        let term = match word {
            "jump" => Terminator::Jump {
                target: self.block_ref(c)?,
                pos,
            },
            "branch" => {
                let (kind, kind_pos) = c.ident("`uniform` or `divergent`")?;
                let kind = match kind {
                    "uniform" => BranchKind::Uniform,
                    "divergent" => BranchKind::Divergent,
                    _ => return err(kind_pos, "expected `uniform` or `divergent`"),
                };
                let cond = self.use_(c)?;
                c.expect(Tok::Punct(','), "`,` and the then-label")?;
                let then_block = self.block_ref(c)?;
                c.expect(Tok::Punct(','), "`,` and the else-label")?;
                let else_block = self.block_ref(c)?;
                Terminator::Branch {
                    kind,
                    cond,
                    then_block,
                    else_block,
                    pos,
                }
            }
            _ => {
                let mut uses = Vec::new();
                while !c.at_end() {
                    uses.push(self.use_(c)?);
                    if !c.eat(Tok::Punct(',')) {
                        break;
                    }
                }
                Terminator::Ret { uses, pos }
            }
        };
        self.current().term = term;
        self.open = false;
        Ok(())
    }

    fn artefact(&mut self, c: &mut Cursor<'_, 'a>, keyword: &str) -> Result<()> {
        let pos = c.pos();
        c.bump();
        let block = self.blocks.len() - 1;
        let inst = self.blocks[block].insts.len();
        let kind = match keyword {
            "swap" => {
                let a = self.location(c)?;
                c.expect(Tok::Punct(','), "`,` and a second location")?;
                InstKind::Swap(a, self.location(c)?)
            }
            "remat" => {
                let dst = self.location(c)?;
                c.expect(Tok::Arrow, "`<-` and the rematerialised value")?;
                let value = self.remat_value(c)?;
                let mut uses = Vec::new();
                if c.eat(Tok::Punct('(')) {
                    loop {
                        uses.push(self.use_(c)?);
                        if !c.eat(Tok::Punct(',')) {
                            break;
                        }
                    }
                    c.expect(Tok::Punct(')'), "`)` after the remat's operands")?;
                }
                InstKind::Remat { dst, value, uses }
            }
            _ => {
                let mut moves = Vec::new();
                loop {
                    moves.push(self.move_(c, block, inst, moves.len())?);
                    if keyword != "parallel_copy" || !c.eat(Tok::Punct(',')) {
                        break;
                    }
                }
                match keyword {
                    "spill" => InstKind::Spill(moves[0]),
                    "reload" => InstKind::Reload(moves[0]),
                    _ => InstKind::ParallelCopy(moves),
                }
            }
        };
        self.blocks[block].insts.push(Inst { kind, pos });
        Ok(())
    }

    /// `DST <- SRC %value`; the value may be named before its definition in the text.
    fn move_(
        &mut self,
        c: &mut Cursor<'_, 'a>,
        block: usize,
        inst: usize,
        index: usize,
    ) -> Result<Move> {
        let dst = self.location(c)?;
        c.expect(Tok::Arrow, "`<-`")?;
        let src = self.location(c)?;
        let value_pos = c.pos();
        let Some(Tok::Value(name)) = c.bump().map(|t| t.tok) else {
            return err(
                value_pos,
                "expected the moved value `%name` after the source",
            );
        };
        self.pending.push(Pending {
            name,
            pos: value_pos,
            slot: ValueSlot::Move { block, inst, index },
        });
        Ok(Move {
            dst,
            src,
            value: PLACEHOLDER,
        })
    }

    fn resolve_pending(&mut self) -> Result<()> {
        for p in std::mem::take(&mut self.pending) {
            let Some(&value) = self.names.get(p.name) else {
                return err(p.pos, format!("undefined value `%{}`", p.name));
            };
            match p.slot {
                ValueSlot::PhiArg { block, phi, arg } => {
                    self.blocks[block].phis[phi].args[arg].value = value;
                }
                ValueSlot::Move { block, inst, index } => {
                    match &mut self.blocks[block].insts[inst].kind {
                        InstKind::ParallelCopy(moves) => moves[index].value = value,
                        InstKind::Spill(m) | InstKind::Reload(m) => m.value = value,
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}

/// `name:` or `name freq=F:` — a block label line.
fn label_of<'a>(t: &[Token<'a>]) -> Option<(&'a str, Pos)> {
    let Tok::Ident(name) = t[0].tok else {
        return None;
    };
    let is_label = match t.len() {
        2 => t[1].tok == Tok::Punct(':'),
        5 => {
            t[1].tok == Tok::Ident("freq")
                && t[2].tok == Tok::Punct('=')
                && matches!(t[3].tok, Tok::Int(_) | Tok::Float(_))
                && t[4].tok == Tok::Punct(':')
        }
        _ => false,
    };
    is_label.then_some((name, t[0].pos))
}

fn block_freq(tokens: &[Token]) -> Result<Option<f64>> {
    let Some(token) = tokens.get(3) else {
        return Ok(None);
    };
    let freq = match token.tok {
        Tok::Int(n) => n as f64,
        Tok::Float(f) => f,
        _ => return Ok(None),
    };
    if !(freq.is_finite() && freq >= 0.0) {
        return err(token.pos, "a block frequency must be a non-negative number");
    }
    Ok(Some(freq))
}

/// `(reg, ...)` after `implicit`, `implicit_def` or `clobber`: fixed registers the
/// operation reads, writes or clobbers.
fn reg_accesses(c: &mut Cursor<'_, '_>, op: &mut Op, word: &str) -> Result<()> {
    let kind = match word {
        "implicit" => RegAccessKind::Read,
        "implicit_def" => RegAccessKind::Write,
        _ => RegAccessKind::Clobber,
    };
    c.expect(Tok::Punct('('), &format!("`(` after `{word}`"))?;
    let mut regs = op.regs.to_vec();
    loop {
        let (reg, _) = c.ident("a register name")?;
        regs.push(RegAccess {
            reg: reg.to_string(),
            kind,
        });
        if !c.eat(Tok::Punct(',')) {
            break;
        }
    }
    c.expect(Tok::Punct(')'), "`)`")?;
    regs.sort_unstable();
    regs.dedup();
    op.regs = regs.into();
    Ok(())
}

/// Records the effect `word` of an operation, which has at most one.
fn set_effect(op: &mut Op, word: &str, pos: Pos) -> Result<()> {
    if op.effect != Effect::None {
        return err(
            pos,
            format!(
                "second effect `{word}`: an operation has one of reads, writes, barrier, control, carry"
            ),
        );
    }
    op.effect = match word {
        "reads" => Effect::ReadsMemory,
        "writes" => Effect::WritesMemory,
        "barrier" => Effect::Barrier,
        "control" => Effect::Control,
        _ => Effect::Carry,
    };
    Ok(())
}

fn tied_and_early(def: usize) -> String {
    format!("definition {def} cannot be both `tied` (shares a use's register) and `early` (shares none)")
}

/// One phi argument per predecessor, naming only predecessors.
fn check_phi_arity(f: &Function) -> Result<()> {
    let mut preds: Vec<Vec<Block>> = vec![Vec::new(); f.blocks.len()];
    for b in f.block_ids() {
        for s in f.block(b).term.successors() {
            if !preds[s.index()].contains(&b) {
                preds[s.index()].push(b);
            }
        }
    }
    for (data, preds) in f.blocks.iter().zip(&preds) {
        for phi in &data.phis {
            let mut seen = Vec::new();
            for arg in &phi.args {
                let from = &f.block(arg.block).name;
                if !preds.contains(&arg.block) {
                    return err(
                        arg.pos,
                        format!(
                            "phi argument from `{from}`, which is not a predecessor of `{}`",
                            data.name
                        ),
                    );
                }
                if seen.contains(&arg.block) {
                    return err(
                        arg.pos,
                        format!("second phi argument for predecessor `{from}`"),
                    );
                }
                seen.push(arg.block);
            }
            if let Some(missing) = preds.iter().find(|p| !seen.contains(p)) {
                return err(
                    phi.pos,
                    format!(
                        "phi has {} arguments but `{}` has {} predecessors (none for `{}`)",
                        phi.args.len(),
                        data.name,
                        preds.len(),
                        f.block(*missing).name
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Locations appear on every definition and use of a function, or on none.
fn check_locations_all_or_none(f: &Function) -> Result<()> {
    let mut with = None;
    let mut without = None;
    let mut note = |has: bool, pos: Pos| {
        let slot = if has { &mut with } else { &mut without };
        slot.get_or_insert(pos);
    };
    for block in &f.blocks {
        for phi in &block.phis {
            note(phi.def.loc.is_some(), phi.def.pos);
        }
        for op in block.insts.iter().filter_map(Inst::op) {
            for d in &op.defs {
                note(d.loc.is_some(), d.pos);
            }
            for u in op.uses() {
                note(u.loc.is_some(), u.pos);
            }
        }
        for u in block.term.uses() {
            note(u.loc.is_some(), u.pos);
        }
    }
    let has_artefacts = f
        .blocks
        .iter()
        .any(|b| b.insts.iter().any(Inst::is_artefact));
    match (with, without) {
        (Some(_), Some(missing)) => err(missing, "this operand has no location, but others in the function do: locations go on every operand or none"),
        (None, Some(_)) if has_artefacts => {
            let pos = f.blocks.iter().flat_map(|b| &b.insts).find(|i| i.is_artefact()).map_or(f.pos, |i| i.pos);
            err(pos, "allocation instructions need an allocated function: every operand must have a location")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `body` inside a gfx9 function and returns the error as `line:col: message`.
    fn error_in(body: &str) -> String {
        let src = format!("target gfx9\nfunc @f {{\n{body}\n}}\n");
        match parse(&src) {
            Ok(_) => panic!("expected an error for:\n{body}"),
            Err(e) => e.to_string(),
        }
    }

    fn error_of(src: &str) -> String {
        parse(src).expect_err("expected an error").to_string()
    }

    #[test]
    fn unknown_target() {
        assert!(error_of("target gfx8\nfunc @f {\nb:\n  ret\n}\n")
            .starts_with("1:8: unknown target `gfx8`"));
    }

    #[test]
    fn bad_generic_class() {
        assert_eq!(
            error_of("target generic v=0\nfunc @f {\nb:\n  ret\n}\n"),
            "1:16: class `v` has 0 units; a class has 1 to 1024"
        );
        assert_eq!(
            error_of("target generic s=8  v=4:weird\nfunc @f {\nb:\n  ret\n}\n"),
            "1:21: bad class description `v=4:weird`: expected NAME=UNITS[:uniform][:aligned][:noswap][:via=CLASS]"
        );
        assert_eq!(
            error_of("target generic v=8 a=4:noswap:via=s\nfunc @f {\nb:\n  ret\n}\n"),
            "1:20: class `a` copies through `s`, which is not a class of the target"
        );
        assert_eq!(
            error_of("target generic v=8 s=4 v=4 ; twice\nfunc @f {\nb:\n  ret\n}\n"),
            "1:24: duplicate class `v`"
        );
        assert_eq!(
            error_of("target generic ; none\nfunc @f {\nb:\n  ret\n}\n"),
            "1:15: a generic target needs at least one class"
        );
    }

    #[test]
    fn bad_effects_and_contradictory_constraints() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x reads writes\n  ret"),
            "5:24: second effect `writes`: an operation has one of reads, writes, barrier, control, carry"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x tied(0) early\n  ret"),
            "5:26: definition 0 cannot be both `tied` (shares a use's register) and `early` (shares none)"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1, %z:v1 = bar %x early(1) tied(1=0)\n  ret"),
            "5:34: definition 1 cannot be both `tied` (shares a use's register) and `early` (shares none)"
        );
    }

    #[test]
    fn pinned_definitions_and_phis_round_trip() {
        let src = "target gfx9\n\nfunc @f {\na:\n  %x:v1 = foo\n  jump b\nb:\n  %p:v1 = phi [a: %x], [b: %z] pinned\n  %y:v1, %z:v1 = bar %p tied(1=0) pinned(1)\n  jump b\n}\n";
        let p = parse(src).unwrap();
        let f = &p.functions[0];
        assert!(f.blocks[1].phis[0].def.pinned);
        let op = f.blocks[1].insts[0].op().unwrap();
        assert_eq!((op.defs[0].pinned, op.defs[1].pinned), (false, true));
        assert_eq!(crate::print(&p), src);
        assert_eq!(
            error_in("a:\n  %x:v1 = foo pinned(1)\n  ret"),
            "4:22: `pinned` names definition 1, but the operation has 1"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  jump b\nb:\n  %p:v1 = phi [a: %x] early\n  ret"),
            "7:23: a phi takes only the attribute `pinned`, not `early`"
        );
    }

    #[test]
    fn bad_prefer_and_duplicate_phi_argument() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar 3, %x prefer(0)\n  ret"),
            "5:28: `prefer` must name a value operand; operand 0 is not one"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x prefer(4)\n  ret"),
            "5:25: `prefer` must name a value operand; operand 4 is not one"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  jump c\nc:\n  %p:v1 = phi [a: %x], [a: %x]\n  ret"),
            "7:24: second phi argument for predecessor `a`"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  ret %x fixed(s0)"),
            "5:16: fixed location does not fit `%x`, a value of class `v` and size 1"
        );
    }

    #[test]
    fn unknown_class() {
        assert_eq!(
            error_in("b:\n  %x:q1 = foo\n  ret"),
            "4:6: unknown class `q` for target gfx9"
        );
    }

    #[test]
    fn tuple_size_not_allowed() {
        assert_eq!(
            error_in("b:\n  %x:v9 = foo\n  ret"),
            "4:6: class `v` does not allow tuples of 9 (allowed: 1, 2, 3, 4, 5, 6, 7, 8, 16)"
        );
    }

    #[test]
    fn use_before_definition() {
        assert_eq!(
            error_in("b:\n  %y:v1 = foo %x\n  %x:v1 = bar\n  ret"),
            "4:15: `%x` is used before its definition (only phi arguments may refer forward)"
        );
    }

    #[test]
    fn undefined_value() {
        assert_eq!(error_in("b:\n  ret %nope"), "4:7: undefined value `%nope`");
    }

    #[test]
    fn undefined_phi_argument() {
        assert_eq!(
            error_in("a:\n  jump b\nb:\n  %p:v1 = phi [a: %ghost]\n  ret"),
            "6:19: undefined value `%ghost`"
        );
    }

    #[test]
    fn duplicate_definition() {
        assert_eq!(
            error_in("b:\n  %x:v1 = foo\n  %x:v1 = bar\n  ret"),
            "5:3: `%x` is defined twice"
        );
    }

    #[test]
    fn unknown_and_duplicate_labels() {
        assert_eq!(error_in("b:\n  jump c"), "4:8: unknown block label `c`");
        assert_eq!(
            error_in("b:\n  jump b\nb:\n  ret"),
            "5:1: duplicate block label `b`"
        );
    }

    #[test]
    fn phi_arity_mismatch() {
        let body = "a:\n  %x:v1 = foo\n  branch uniform %x, b, c\nb:\n  jump c\nc:\n  %p:v1 = phi [b: %x]\n  ret";
        assert_eq!(
            error_in(body),
            "9:3: phi has 1 arguments but `c` has 2 predecessors (none for `a`)"
        );
    }

    #[test]
    fn phi_argument_from_non_predecessor() {
        let body = "a:\n  %x:v1 = foo\n  jump c\nb:\n  jump c\nc:\n  %p:v1 = phi [a: %x], [b: %x], [c: %x]\n  ret";
        assert_eq!(
            error_in(body),
            "9:33: phi argument from `c`, which is not a predecessor of `c`"
        );
    }

    #[test]
    fn phi_after_instruction() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %p:v1 = phi [a: %x]\n  jump a"),
            "5:11: phis must come before the other instructions of a block"
        );
    }

    #[test]
    fn missing_terminator() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\nb:\n  ret"),
            "5:1: block `a` has no terminator"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo"),
            "4:14: block `a` has no terminator"
        );
    }

    #[test]
    fn instruction_after_terminator() {
        assert_eq!(
            error_in("a:\n  ret\n  %x:v1 = foo"),
            "5:3: instruction after the terminator of block `a`"
        );
    }

    #[test]
    fn bad_tied_constraints() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x tied(3)\n  ret"),
            "5:23: `tied` must name a value operand; operand 3 is not one"
        );
        assert_eq!(
            error_in("a:\n  %x:v2 = foo\n  %y:v1 = bar %x tied(0)\n  ret"),
            "5:23: `tied` joins `%y` and `%x`, which differ in class or size"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar 7, %x tied(0)\n  ret"),
            "5:26: `tied` must name a value operand; operand 0 is not one"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x early(1)\n  ret"),
            "5:24: `early` names definition 1, but the operation has 1"
        );
    }

    #[test]
    fn bad_fixed_locations() {
        assert_eq!(
            error_in("a:\n  %x:s2 fixed(s[1:2]) = foo\n  ret"),
            "4:15: fixed location is not 2-aligned"
        );
        assert_eq!(
            error_in("a:\n  %x:v2 fixed(v3) = foo\n  ret"),
            "4:15: fixed location does not fit `%x`, a value of class `v` and size 2"
        );
        assert_eq!(
            error_in("a:\n  %x:s1 fixed(s102) = foo\n  ret"),
            "4:15: fixed location is outside class `s` (102 units)"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 fixed(m3) = foo\n  ret"),
            "4:15: a fixed location must be a register range"
        );
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  jump b\nb:\n  %p:v1 fixed(s0) = phi [a: %x]\n  ret"),
            "7:15: fixed location does not fit `%p`, a value of class `v` and size 1"
        );
    }

    #[test]
    fn remat_with_value_operands() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo\n  %y:v1 = bar %x remat\n  ret"),
            "5:15: a `remat` operation may not have value operands"
        );
    }

    #[test]
    fn location_syntax() {
        assert_eq!(
            error_in("a:\n  %x:v1@v[3:1] = foo\n  ret %x@v1"),
            "4:13: empty range: 1 is below 3"
        );
        assert_eq!(
            error_in("a:\n  %x:v1@q3 = foo\n  ret %x@v1"),
            "4:9: unknown class `q` for target gfx9"
        );
        assert_eq!(
            error_in("a:\n  %x:v1@v = foo\n  ret %x@v1"),
            "4:11: expected a register number or `[first:last]`"
        );
    }

    #[test]
    fn locations_on_some_operands_only() {
        assert_eq!(
            error_in("a:\n  %x:v1@v0 = foo\n  ret %x"),
            "5:7: this operand has no location, but others in the function do: locations go on every operand or none"
        );
    }

    #[test]
    fn unexpected_tokens_and_characters() {
        assert_eq!(
            error_in("a:\n  %x:v1 = foo %y %z\n  ret"),
            "4:15: undefined value `%y`"
        );
        assert_eq!(error_in("a:\n  ret $"), "4:7: unexpected character `$`");
        assert_eq!(
            error_in("a:\n  %x:v1 = foo bogus\n  ret"),
            "4:15: unknown attribute `bogus`"
        );
        assert_eq!(
            error_of("target gfx9\nfunc @f {\nb:\n  ret\n"),
            "4:6: expected `}` at the end of the function"
        );
        assert_eq!(error_of(""), "1:1: empty file: expected `target`");
    }

    #[test]
    fn allocated_syntax_round_trips() {
        let src = "target gfx9\n\nfunc @f {\nb:\n  %x:v2@v[0:1] = foo\n  %c:s1@s0 = const 1 remat\n  parallel_copy v[2:3] <- v[0:1] %x, s1 <- s0 %c\n  swap v0, v2\n  spill m[0:1] <- v[0:1] %x\n  spill v9.l[2:3] <- v[2:3] %x\n  reload v[4:5] <- m[0:1] %x\n  remat s2 <- %c\n  ret %x@v[4:5]\n}\n";
        let p = parse(src).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(crate::print(&p), src);
    }
}
