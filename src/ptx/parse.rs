//! A focused PTX parser: recursive descent over the tokens of [`super::lexer`] into the
//! tree of [`super::ast`], following the grammar of NVIDIA's PTX ISA (§4 syntax, §5 state
//! spaces and types, §10/§11 directives). Module-level directives other than functions
//! (`.version`, `.file`, `.section`, variables, declarations) are skipped — the exporter
//! copies them verbatim. A function body is a sequence of `{ }` scopes, `.reg`
//! declarations (with `%r<N>` ranges), labels and statements; registers are resolved
//! against the scope stack as they are read, labels once the body is complete. Every
//! error carries the line:col of the token at fault.

use super::ast::*;
use super::lexer::{decode_number, lex, Tok, Token};
use super::PtxError;
use crate::program::Pos;
use std::collections::HashMap;

type Result<T> = std::result::Result<T, PtxError>;

fn err<T>(pos: Pos, message: impl Into<String>) -> Result<T> {
    Err(PtxError {
        pos,
        message: message.into(),
    })
}

/// Parses a whole module.
pub fn parse_module(src: &str) -> Result<Module> {
    let toks = lex(src).map_err(|e| PtxError {
        pos: e.pos,
        message: e.message,
    })?;
    Parser { src, toks, i: 0 }.module()
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    i: usize,
}

/// Special registers (PTX ISA §10), by name without the `.x/.y/.z` component.
const SPECIAL: &[&str] = &[
    "%tid",
    "%ntid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%ctaid",
    "%nctaid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%clock",
    "%clock_hi",
    "%clock64",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%total_smem_size",
    "%aggr_smem_size",
    "%dynamic_smem_size",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%current_graph_exec",
];

/// Families of numbered special registers (`%pm3`, `%envreg12`, …).
const SPECIAL_PREFIXES: &[&str] = &["%pm", "%envreg", "%reserved_smem_offset"];

pub fn is_special_register(name: &str) -> bool {
    let base = name
        .strip_suffix(".x")
        .or_else(|| name.strip_suffix(".y"))
        .or_else(|| name.strip_suffix(".z"))
        .unwrap_or(name);
    SPECIAL.contains(&base) || SPECIAL_PREFIXES.iter().any(|p| base.starts_with(p))
}

/// The registers visible in a function body: per scope, name → variable.
struct Scopes {
    vars: Vec<Var>,
    maps: Vec<HashMap<String, VarId>>,
    parent: Vec<Option<usize>>,
    stack: Vec<usize>,
}

impl Scopes {
    fn new() -> Scopes {
        Scopes {
            vars: Vec::new(),
            maps: vec![HashMap::new()],
            parent: vec![None],
            stack: vec![0],
        }
    }

    fn current(&self) -> usize {
        self.stack.last().copied().unwrap_or(0)
    }

    fn open(&mut self) {
        let parent = self.current();
        self.maps.push(HashMap::new());
        self.parent.push(Some(parent));
        self.stack.push(self.maps.len() - 1);
    }

    fn declare(&mut self, name: String, ty: RegType, pos: Pos) -> Result<()> {
        let scope = self.current();
        if self.maps[scope].contains_key(&name) {
            return err(
                pos,
                format!("register `{name}` is declared twice in this scope"),
            );
        }
        self.maps[scope].insert(name.clone(), self.vars.len());
        self.vars.push(Var { name, ty, pos });
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<VarId> {
        self.stack
            .iter()
            .rev()
            .find_map(|&s| self.maps[s].get(name).copied())
    }
}

/// The most registers one `%r<N>` declaration may create.
const MAX_RANGE: u64 = 1 << 20;

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Token> {
        self.toks.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<Token> {
        self.toks.get(self.i + k).copied()
    }

    fn text(&self, t: Token) -> &'a str {
        t.text(self.src)
    }

    fn end_pos(&self) -> Pos {
        self.toks.last().map_or(Pos { line: 1, col: 1 }, |t| t.pos)
    }

    fn next(&mut self, what: &str) -> Result<Token> {
        match self.peek() {
            Some(t) => {
                self.i += 1;
                Ok(t)
            }
            None => err(
                self.end_pos(),
                format!("unexpected end of file: expected {what}"),
            ),
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek().is_some_and(|t| t.tok == Tok::Punct(c))
    }

    fn eat(&mut self, c: char) -> bool {
        let yes = self.is_punct(c);
        self.i += usize::from(yes);
        yes
    }

    fn expect(&mut self, c: char, what: &str) -> Result<Token> {
        let t = self.next(what)?;
        if t.tok == Tok::Punct(c) {
            Ok(t)
        } else {
            err(t.pos, format!("expected {what}, found `{}`", self.text(t)))
        }
    }

    fn word(&mut self, what: &str) -> Result<(Token, &'a str)> {
        let t = self.next(what)?;
        if t.tok == Tok::Word {
            Ok((t, self.text(t)))
        } else {
            err(t.pos, format!("expected {what}, found `{}`", self.text(t)))
        }
    }

    /// Skips the rest of the line of the token just before the cursor (directives without
    /// a `;`: `.version`, `.target`, `.file`, `.loc`).
    fn skip_line(&mut self, line: u32) {
        while self.peek().is_some_and(|t| t.pos.line == line) {
            self.i += 1;
        }
    }

    /// Skips to the `;` that ends a declaration, over balanced braces (initialisers).
    fn skip_statement(&mut self) -> Result<()> {
        let start = self.peek().map_or(self.end_pos(), |t| t.pos);
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            self.i += 1;
            match t.tok {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') if depth > 0 => depth -= 1,
                Tok::Punct('}') => return err(t.pos, "unexpected `}`"),
                Tok::Punct(';') if depth == 0 => return Ok(()),
                _ => {}
            }
        }
        err(start, "unterminated declaration: expected `;`")
    }

    /// Skips a balanced `open … close` group starting at the cursor.
    fn skip_group(&mut self, open: char, close: char) -> Result<()> {
        let start = self.expect(open, &format!("`{open}`"))?;
        let mut depth = 1usize;
        while let Some(t) = self.peek() {
            self.i += 1;
            if t.tok == Tok::Punct(open) {
                depth += 1;
            } else if t.tok == Tok::Punct(close) {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        err(
            start.pos,
            format!("unbalanced `{open}`: no matching `{close}`"),
        )
    }

    fn module(mut self) -> Result<Module> {
        let mut arch: Option<(String, Pos)> = None;
        let mut functions = Vec::new();
        while let Some(t) = self.peek() {
            let text = self.text(t);
            match text {
                ".version" | ".address_size" | ".file" | ".loc" => {
                    self.i += 1;
                    self.skip_line(t.pos.line);
                }
                ".target" => {
                    self.i += 1;
                    let (w, name) = self.word("a target architecture")?;
                    arch.get_or_insert((name.to_string(), w.pos));
                    self.skip_line(w.pos.line);
                }
                ".section" => {
                    self.i += 1;
                    self.word("a section name")?;
                    if self.is_punct('{') {
                        self.skip_group('{', '}')?;
                    }
                }
                ".pragma" => self.skip_statement()?,
                ".visible" | ".weak" | ".extern" | ".common" => self.i += 1,
                ".entry" | ".func" => {
                    self.i += 1;
                    if let Some(f) = self.function(text == ".entry", t.pos)? {
                        functions.push(f);
                    }
                }
                _ if t.tok == Tok::Word && text.starts_with('.') => self.skip_statement()?,
                _ => return err(t.pos, format!("unexpected `{text}` at module level")),
            }
        }
        let Some((arch, arch_pos)) = arch else {
            return err(Pos { line: 1, col: 1 }, "no `.target` directive");
        };
        if functions.is_empty() {
            return err(arch_pos, "the module defines no function with a body");
        }
        Ok(Module {
            arch,
            arch_pos,
            functions,
        })
    }

    /// A function after `.entry`/`.func`; `None` for a declaration without body.
    fn function(&mut self, entry: bool, pos: Pos) -> Result<Option<FunctionAst>> {
        if !entry && self.is_punct('(') {
            self.return_params()?;
        }
        let (name_tok, name) = self.word("a function name")?;
        let params = if self.is_punct('(') {
            self.params()?
        } else {
            Vec::new()
        };
        while let Some(t) = self.peek() {
            match t.tok {
                Tok::Punct('{') | Tok::Punct(';') => break,
                Tok::Word | Tok::Number | Tok::Punct(',') => self.i += 1,
                _ => {
                    return err(
                        t.pos,
                        format!("unexpected `{}` in a function header", self.text(t)),
                    )
                }
            }
        }
        if self.eat(';') {
            return Ok(None);
        }
        let open = self.expect('{', "`{` to open the function body")?;
        let mut f = FunctionAst {
            name: name.to_string(),
            pos: if pos.line > 0 { name_tok.pos } else { pos },
            entry,
            params,
            body_open: open.end,
            body_close: open.end,
            items: Vec::new(),
            vars: Vec::new(),
            scope_parent: Vec::new(),
        };
        self.body(&mut f)?;
        Ok(Some(f))
    }

    fn return_params(&mut self) -> Result<()> {
        let open = self.peek().map_or(self.end_pos(), |t| t.pos);
        let start = self.i;
        self.skip_group('(', ')')?;
        if self.toks[start..self.i]
            .iter()
            .any(|t| self.text(*t) == ".reg")
        {
            return err(
                open,
                "unsupported: register parameters (`.reg` in a `.func` signature)",
            );
        }
        Ok(())
    }

    /// `( .param .u64 name, .param .align 8 .b8 arr[16] )`: the parameter names.
    fn params(&mut self) -> Result<Vec<String>> {
        self.expect('(', "`(`")?;
        let mut names = Vec::new();
        let mut last: Option<&str> = None;
        loop {
            let t = self.next("`)` to close the parameters")?;
            match t.tok {
                Tok::Punct(')') | Tok::Punct(',') => {
                    names.extend(last.take().map(str::to_string));
                    if t.tok == Tok::Punct(')') {
                        return Ok(names);
                    }
                }
                Tok::Word if self.text(t) == ".reg" => {
                    return err(
                        t.pos,
                        "unsupported: register parameters (`.reg` in a signature)",
                    )
                }
                Tok::Word if !self.text(t).starts_with('.') => last = Some(self.text(t)),
                Tok::Punct('[') => {
                    self.i -= 1;
                    self.skip_group('[', ']')?;
                }
                Tok::Word | Tok::Number => {}
                _ => {
                    return err(
                        t.pos,
                        format!("unexpected `{}` in parameters", self.text(t)),
                    )
                }
            }
        }
    }

    fn body(&mut self, f: &mut FunctionAst) -> Result<()> {
        let mut scopes = Scopes::new();
        loop {
            let t = self.next("`}` to close the function body")?;
            let text = self.text(t);
            match t.tok {
                Tok::Punct('{') => scopes.open(),
                Tok::Punct('}') if scopes.stack.len() == 1 => {
                    f.body_close = t.start;
                    break;
                }
                Tok::Punct('}') => {
                    scopes.stack.pop();
                }
                Tok::Word if text == ".reg" => {
                    self.reg_decl(&mut scopes)?;
                    f.items.push(Item::RegDecl(Span {
                        start: t.start,
                        end: self.toks[self.i - 1].end,
                    }));
                }
                Tok::Word if matches!(text, ".loc" | ".file") => self.skip_line(t.pos.line),
                Tok::Word
                    if matches!(
                        text,
                        ".pragma" | ".local" | ".shared" | ".param" | ".const" | ".global"
                    ) =>
                {
                    self.skip_statement()?
                }
                Tok::Word if text.starts_with('.') => {
                    return err(
                        t.pos,
                        format!("unsupported directive `{text}` in a function body"),
                    )
                }
                Tok::Word if self.is_punct(':') => {
                    let colon = self.next("`:`")?;
                    f.items.push(Item::Label {
                        name: text.to_string(),
                        scope: scopes.current(),
                        span: Span {
                            start: t.start,
                            end: colon.end,
                        },
                        pos: t.pos,
                    });
                }
                Tok::Word | Tok::Punct('@') => {
                    self.i -= 1;
                    let stmt = self.statement(&scopes)?;
                    f.items.push(Item::Stmt(stmt));
                }
                _ => return err(t.pos, format!("unexpected `{text}` in a function body")),
            }
        }
        f.vars = scopes.vars;
        f.scope_parent = scopes.parent;
        Ok(())
    }

    /// `.reg .b32 %r<36>;`, `.reg .pred %p, %q;` (after `.reg`).
    fn reg_decl(&mut self, scopes: &mut Scopes) -> Result<()> {
        let mut ty = None;
        while let Some(t) = self.peek() {
            let text = self.text(t);
            if t.tok != Tok::Word || !text.starts_with('.') {
                break;
            }
            self.i += 1;
            match RegType::from_directive(text) {
                Some(found) => ty = Some(found),
                None if matches!(text, ".v2" | ".v4" | ".v8") => {
                    return err(t.pos, "unsupported: vector registers (`.reg .v2`/`.v4`)")
                }
                None => return err(t.pos, format!("unknown register type `{text}`")),
            }
        }
        let Some(ty) = ty else {
            let pos = self.peek().map_or(self.end_pos(), |t| t.pos);
            return err(pos, "expected a register type after `.reg`");
        };
        loop {
            let (t, name) = self.word("a register name")?;
            if name.starts_with('.') {
                return err(t.pos, format!("expected a register name, found `{name}`"));
            }
            if self.eat('<') {
                let n = self.next("the number of registers")?;
                let count = match n.tok {
                    Tok::Number => decode_number(self.text(n)).unwrap_or(-1),
                    _ => -1,
                };
                if !(0..=MAX_RANGE as i64).contains(&count) {
                    return err(n.pos, format!("bad register count `{}`", self.text(n)));
                }
                self.expect('>', "`>`")?;
                for k in 0..count {
                    scopes.declare(format!("{name}{k}"), ty, t.pos)?;
                }
            } else {
                scopes.declare(name.to_string(), ty, t.pos)?;
            }
            if !self.eat(',') {
                break;
            }
        }
        self.expect(';', "`;` after the register declaration")?;
        Ok(())
    }

    fn statement(&mut self, scopes: &Scopes) -> Result<Stmt> {
        let first = self.next("a statement")?;
        let mut guard = None;
        let opcode_tok = if first.tok == Tok::Punct('@') {
            let negated = self.eat('!');
            let reg = self.register(scopes)?;
            guard = Some(Guard { reg, negated });
            self.word("an opcode")?.0
        } else {
            first
        };
        let opcode = self.text(opcode_tok);
        if opcode.starts_with(['.', '%', '$']) {
            return err(
                opcode_tok.pos,
                format!("expected an opcode, found `{opcode}`"),
            );
        }
        let mut operands = Vec::new();
        if !self.is_punct(';') {
            loop {
                operands.push(self.operand(scopes)?);
                if !self.eat(',') {
                    break;
                }
            }
        }
        let end = self.expect(';', "`;` or `,` after an operand")?;
        Ok(Stmt {
            span: Span {
                start: first.start,
                end: end.end,
            },
            pos: first.pos,
            guard,
            opcode: opcode.to_string(),
            operands,
            scope: scopes.current(),
        })
    }

    fn register(&mut self, scopes: &Scopes) -> Result<RegOcc> {
        let (t, name) = self.word("a register")?;
        match scopes.lookup(name) {
            Some(var) => Ok(RegOcc {
                var,
                span: Span {
                    start: t.start,
                    end: t.end,
                },
                pos: t.pos,
            }),
            None => err(t.pos, format!("undeclared register `{name}`")),
        }
    }

    fn immediate(&mut self) -> Result<(i64, Span, Pos)> {
        let first = self.next("an immediate")?;
        let negative = first.tok == Tok::Punct('-');
        let t = if negative {
            self.next("a number")?
        } else {
            first
        };
        if t.tok != Tok::Number {
            return err(
                t.pos,
                format!("expected a number, found `{}`", self.text(t)),
            );
        }
        let bits = decode_number(self.text(t)).unwrap_or_default();
        let span = Span {
            start: first.start,
            end: t.end,
        };
        Ok((
            if negative { bits.wrapping_neg() } else { bits },
            span,
            first.pos,
        ))
    }

    fn operand(&mut self, scopes: &Scopes) -> Result<Operand> {
        let Some(t) = self.peek() else {
            return err(
                self.end_pos(),
                "unexpected end of file: expected an operand",
            );
        };
        let text = self.text(t);
        match t.tok {
            Tok::Punct('{') => self.vector(scopes),
            Tok::Punct('[') => self.address(scopes),
            Tok::Punct('(') => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.is_punct(')') {
                    loop {
                        items.push(self.operand(scopes)?);
                        if !self.eat(',') {
                            break;
                        }
                    }
                }
                self.expect(')', "`)`")?;
                Ok(Operand::List(items, t.pos))
            }
            Tok::Punct('!') => {
                self.i += 1;
                Ok(Operand::Not(self.register(scopes)?))
            }
            Tok::Punct('-') | Tok::Number => {
                let (v, span, pos) = self.immediate()?;
                Ok(Operand::Imm(v, span, pos))
            }
            Tok::Word if text.starts_with('%') || scopes.lookup(text).is_some() => {
                self.register_operand(scopes, t, text)
            }
            Tok::Word => {
                self.i += 1;
                Ok(Operand::Sym(text.to_string(), t.pos))
            }
            _ => err(t.pos, format!("expected an operand, found `{text}`")),
        }
    }

    fn register_operand(&mut self, scopes: &Scopes, t: Token, text: &str) -> Result<Operand> {
        if scopes.lookup(text).is_none() && is_special_register(text) {
            self.i += 1;
            return Ok(Operand::Special(text.to_string(), t.pos));
        }
        let reg = self.register(scopes)?;
        if !self.eat('|') {
            return Ok(Operand::Reg(reg));
        }
        let second = match self.peek() {
            Some(s) if self.text(s) == "_" => {
                self.i += 1;
                None
            }
            _ => Some(self.register(scopes)?),
        };
        Ok(Operand::Pair(Some(reg), second, t.pos))
    }

    fn vector(&mut self, scopes: &Scopes) -> Result<Operand> {
        let open = self.expect('{', "`{`")?;
        let mut elems = Vec::new();
        loop {
            let Some(t) = self.peek() else {
                return err(open.pos, "unterminated vector: expected `}`");
            };
            let text = self.text(t);
            let elem = if text == "_" {
                self.i += 1;
                Elem::Sink(Span {
                    start: t.start,
                    end: t.end,
                })
            } else if t.tok == Tok::Number || t.tok == Tok::Punct('-') {
                let (v, span, _) = self.immediate()?;
                Elem::Imm(v, span)
            } else {
                Elem::Reg(self.register(scopes)?)
            };
            elems.push(elem);
            if !self.eat(',') {
                break;
            }
        }
        self.expect('}', "`}` or `,` in a vector")?;
        Ok(Operand::Vector(elems, open.pos))
    }

    /// `[%rd1+8]`, `[sym]`, `[sym+4]`, `[%r1+-3072]`, `[12]`.
    fn address(&mut self, scopes: &Scopes) -> Result<Operand> {
        let open = self.expect('[', "`[`")?;
        let (mut base, mut sym) = (None, None);
        let t = self.peek();
        match t {
            Some(t)
                if t.tok == Tok::Word
                    && (self.text(t).starts_with('%') || scopes.lookup(self.text(t)).is_some()) =>
            {
                base = Some(self.register(scopes)?)
            }
            Some(t) if t.tok == Tok::Word => {
                self.i += 1;
                sym = Some(self.text(t).to_string());
            }
            _ => {
                self.immediate()?;
            }
        }
        while self.eat('+') || self.is_punct('-') {
            self.immediate()?;
        }
        if self.peek_at(0).is_some_and(|t| t.tok == Tok::Punct(']')) {
            self.i += 1;
        } else {
            let pos = self.peek().map_or(self.end_pos(), |t| t.pos);
            return err(pos, "expected `]` to close the address");
        }
        Ok(Operand::Addr {
            base,
            sym,
            pos: open.pos,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
.version 9.0
.target sm_90a
.address_size 64
.extern .func __assertfail (.param .b64 p0) .noreturn;
.global .align 1 .b8 msg[3] = {1, 2, 3};
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1
)
.reqntid 128
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<2>;
	.loc	1 18 0
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	setp.lt.s32 	%p1|%p0, %r1, 0f3F800000;
	{
	.reg .b32 %r1;
	@!%p1 ld.global.v2.b32 { %r1, _ }, [ %rd1 + -8 ];
	}
$L__BB0_1:
	@%p1 bra 	$L__BB0_1;
	ret;
}
	.section	.debug_abbrev
	{
.b8 1
	}
"#;

    #[test]
    fn parses_scopes_guards_vectors_and_addresses() {
        let m = parse_module(SMALL).unwrap();
        assert_eq!(m.arch, "sm_90a");
        assert_eq!(m.functions.len(), 1);
        let f = &m.functions[0];
        assert!(f.entry);
        assert_eq!(f.params, ["k_param_0", "k_param_1"]);
        assert_eq!(f.vars.len(), 2 + 4 + 2 + 1);
        let stmts: Vec<&Stmt> = f
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Stmt(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(stmts.len(), 6);
        assert!(matches!(stmts[1].operands[1], Operand::Special(ref s, _) if s == "%tid.x"));
        assert!(matches!(
            stmts[2].operands[0],
            Operand::Pair(Some(_), Some(_), _)
        ));
        assert!(matches!(
            stmts[2].operands[2],
            Operand::Imm(0x3F80_0000, _, _)
        ));
        let load = stmts[3];
        assert!(load.guard.unwrap().negated);
        assert_eq!(load.scope, 1);
        let Operand::Vector(elems, _) = &load.operands[0] else {
            panic!("vector")
        };
        let Elem::Reg(inner) = elems[0] else {
            panic!("reg")
        };
        assert_eq!(f.vars[inner.var].name, "%r1");
        assert_eq!(inner.var, 8, "the inner scope's %r1 shadows the outer one");
        assert!(matches!(elems[1], Elem::Sink(_)));
        assert!(matches!(
            load.operands[1],
            Operand::Addr { base: Some(_), .. }
        ));
        assert_eq!(&SMALL[f.body_close..f.body_close + 1], "}");
    }

    fn error_of(src: &str) -> String {
        parse_module(src).unwrap_err().to_string()
    }

    #[test]
    fn positioned_errors() {
        let head = ".target sm_80\n.entry k()\n{\n";
        assert_eq!(
            error_of(&format!("{head}\tadd.s32 %r1, %r2, 1;\n}}")),
            "4:10: undeclared register `%r1`"
        );
        assert_eq!(
            error_of(&format!(
                "{head}\t.reg .b32 %r<2>;\n\tadd.s32 %r1, %r0 1;\n}}"
            )),
            "5:19: expected `;` or `,` after an operand, found `1`"
        );
        assert_eq!(
            error_of(&format!("{head}\t.reg .v4 .b32 %v;\n}}")),
            "4:7: unsupported: vector registers (`.reg .v2`/`.v4`)"
        );
        assert_eq!(
            error_of(&format!("{head}\tret;\n")),
            "4:5: unexpected end of file: expected `}` to close the function body"
        );
        assert_eq!(
            error_of(".entry k() { ret; }"),
            "1:1: no `.target` directive"
        );
        assert_eq!(
            error_of(".target sm_80\n.func (.reg .b32 %r) f() { ret; }"),
            "2:7: unsupported: register parameters (`.reg` in a `.func` signature)"
        );
    }
}
