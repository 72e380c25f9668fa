//! The canonical printer of the `.chr` format: `print(parse(print(p))) == print(p)`.
//!
//! Canonical form: `target` line, a blank line, functions separated by blank lines, block
//! labels at column 0, instructions indented by two spaces, `, ` between operands,
//! attributes in the order tied, prefer, early, pinned, remat, effect. [`print`] drops comments;
//! [`print_with_comments`] keeps those of the source text a program was parsed from: a
//! comment on a line of its own before the statement it preceded, indented like it, and a
//! comment after a statement after it, one space before the `;`.

use crate::program::*;
use crate::target::Target;
use std::fmt::Write;

/// The whole program in canonical form.
pub fn print(p: &Program) -> String {
    let mut out = String::new();
    for line in lines(p) {
        out.push_str(&line.text);
        out.push('\n');
    }
    out
}

/// The canonical form of `p`, parsed from `source`, with the comments of `source`.
pub fn print_with_comments(p: &Program, source: &str) -> String {
    let mut comments = Comments::of(source);
    let mut out = String::new();
    for line in lines(p) {
        let at = match line.at {
            At::Target => comments.first_statement(),
            At::Line(l) => Some(l),
            At::Close(opened) => comments.closing_brace_after(opened),
            At::Blank => None,
        };
        let indent = &line.text[..line.text.len() - line.text.trim_start().len()];
        if let Some(l) = at {
            for c in comments.take_before(l) {
                out.push_str(&format!("{indent}{c}\n"));
            }
        }
        out.push_str(&line.text);
        if let Some(c) = at.and_then(|l| comments.take_on(l)) {
            out.push_str(&format!(" {c}"));
        }
        out.push('\n');
    }
    for c in comments.take_before(u32::MAX) {
        out.push_str(&format!("{c}\n"));
    }
    out
}

/// Which source line a printed line stands for.
#[derive(Clone, Copy, Debug)]
enum At {
    /// The `target` line: the first statement of the source.
    Target,
    Line(u32),
    /// A function's closing brace; the function opened on this line.
    Close(u32),
    Blank,
}

/// One printed line.
struct Line {
    text: String,
    at: At,
}

/// The printed lines of a program, in order.
fn lines(p: &Program) -> Vec<Line> {
    let mut out = vec![Line {
        text: format!("target {}", p.target.header()),
        at: At::Target,
    }];
    for f in &p.functions {
        out.push(Line {
            text: String::new(),
            at: At::Blank,
        });
        function_lines(&mut out, &p.target, f);
    }
    out
}

/// The comments of a source text, by line, taken out as they are printed.
struct Comments<'s> {
    /// (line, comment from `;` on, whether the line has nothing else), in line order.
    all: Vec<(u32, &'s str, bool)>,
    next: usize,
    /// (line, first word) of every statement.
    statements: Vec<(u32, &'s str)>,
}

impl<'s> Comments<'s> {
    fn of(source: &'s str) -> Comments<'s> {
        let mut all = Vec::new();
        let mut statements = Vec::new();
        for (i, text) in source.lines().enumerate() {
            let no = i as u32 + 1;
            let (code, comment) = match text.find(';') {
                Some(k) => (&text[..k], Some(text[k..].trim_end())),
                None => (text, None),
            };
            let code = code.trim();
            if let Some(c) = comment {
                all.push((no, c, code.is_empty()));
            }
            if !code.is_empty() {
                statements.push((no, code.split_whitespace().next().unwrap_or_default()));
            }
        }
        Comments {
            all,
            next: 0,
            statements,
        }
    }

    fn first_statement(&self) -> Option<u32> {
        self.statements.first().map(|s| s.0)
    }

    /// The line of the first `}` after line `opened`.
    fn closing_brace_after(&self, opened: u32) -> Option<u32> {
        self.statements
            .iter()
            .find(|&&(l, word)| l > opened && word == "}")
            .map(|s| s.0)
    }

    /// The comments on lines of their own before line `line`, not yet printed.
    fn take_before(&mut self, line: u32) -> Vec<&'s str> {
        let mut out = Vec::new();
        while let Some(&(l, c, own)) = self.all.get(self.next) {
            if l >= line {
                break;
            }
            if own {
                out.push(c);
            }
            self.next += 1;
        }
        out
    }

    /// The comment after the statement on line `line`.
    fn take_on(&mut self, line: u32) -> Option<&'s str> {
        let &(l, c, own) = self.all.get(self.next)?;
        (l == line && !own).then(|| {
            self.next += 1;
            c
        })
    }
}

/// A location as written in the text: `v4`, `v[4:7]`, `m3`, `m[3:4]`, `v7.l5`, `v7.l[4:5]`.
pub fn location(t: &Target, loc: Location) -> String {
    let range = |prefix: &str, first: u32, len: u16| {
        if len == 1 {
            format!("{prefix}{first}")
        } else {
            format!("{prefix}[{first}:{}]", first + u32::from(len) - 1)
        }
    };
    match loc {
        Location::Reg { class, first, len } => range(&t.class(class).name, first.into(), len),
        Location::Slot { first, len } => range("m", first, len),
        Location::Lane {
            class,
            reg,
            first,
            len,
        } => {
            let reg = format!("{}{reg}.l", t.class(class).name);
            range(&reg, first.into(), len)
        }
    }
}

fn function_lines(out: &mut Vec<Line>, t: &Target, f: &Function) {
    let mut push = |text: String, pos: Pos| {
        let at = if pos.line == 0 {
            At::Blank
        } else {
            At::Line(pos.line)
        };
        out.push(Line { text, at });
    };
    push(format!("func @{} {{", f.name), f.pos);
    let p = Printer {
        t,
        f,
        defined: defined_values(f),
    };
    for block in &f.blocks {
        let label = match block.freq {
            Some(freq) => format!("{} freq={freq}:", block.name),
            None => format!("{}:", block.name),
        };
        push(label, block.pos);
        for phi in &block.phis {
            push(format!("  {}", p.phi(phi)), phi.pos);
        }
        for inst in &block.insts {
            push(format!("  {}", p.inst(inst)), inst.pos);
        }
        push(format!("  {}", p.terminator(&block.term)), block.term.pos());
    }
    out.push(Line {
        text: "}".into(),
        at: At::Close(f.pos.line),
    });
}

struct Printer<'a> {
    t: &'a Target,
    f: &'a Function,
    /// Per value, whether a phi or an operation defines it (a `remat` of any other value
    /// declares it: a phi the allocation left out).
    defined: Vec<bool>,
}

fn defined_values(f: &Function) -> Vec<bool> {
    let mut defined = vec![false; f.values.len()];
    for b in &f.blocks {
        b.phis
            .iter()
            .for_each(|p| defined[p.def.value.index()] = true);
        for op in b.insts.iter().filter_map(Inst::op) {
            op.defs.iter().for_each(|d| defined[d.value.index()] = true);
        }
    }
    defined
}

impl Printer<'_> {
    fn name(&self, v: Value) -> String {
        format!("%{}", self.f.value(v).name)
    }

    fn loc(&self, loc: Location) -> String {
        location(self.t, loc)
    }

    fn constraints(&self, fixed: Option<Location>, loc: Option<Location>) -> String {
        let mut s = String::new();
        if let Some(fixed) = fixed {
            let _ = write!(s, " fixed({})", self.loc(fixed));
        }
        if let Some(loc) = loc {
            let _ = write!(s, "@{}", self.loc(loc));
        }
        s
    }

    fn def(&self, d: &Def) -> String {
        let v = self.f.value(d.value);
        let class = &self.t.class(v.class).name;
        format!(
            "%{}:{class}{}{}",
            v.name,
            v.size,
            self.constraints(d.fixed, d.loc)
        )
    }

    fn use_(&self, u: &Use) -> String {
        format!("{}{}", self.name(u.value), self.constraints(u.fixed, u.loc))
    }

    fn phi(&self, phi: &Phi) -> String {
        let args: Vec<String> = phi
            .args
            .iter()
            .map(|a| format!("[{}: {}]", self.f.block(a.block).name, self.name(a.value)))
            .collect();
        let pinned = if phi.def.pinned { " pinned" } else { "" };
        format!("{} = phi {}{pinned}", self.def(&phi.def), args.join(", "))
    }

    fn moves(&self, moves: &[Move]) -> String {
        let parts: Vec<String> = moves
            .iter()
            .map(|m| {
                format!(
                    "{} <- {} {}",
                    self.loc(m.dst),
                    self.loc(m.src),
                    self.name(m.value)
                )
            })
            .collect();
        parts.join(", ")
    }

    fn inst(&self, inst: &Inst) -> String {
        match &inst.kind {
            InstKind::Op(op) => self.op(op),
            InstKind::ParallelCopy(moves) => format!("parallel_copy {}", self.moves(moves)),
            InstKind::Swap(a, b) => format!("swap {}, {}", self.loc(*a), self.loc(*b)),
            InstKind::Spill(m) => format!("spill {}", self.moves(std::slice::from_ref(m))),
            InstKind::Reload(m) => format!("reload {}", self.moves(std::slice::from_ref(m))),
            InstKind::Remat { dst, value, uses } => {
                let mut s = format!("remat {} <- {}", self.loc(*dst), self.name(*value));
                if !self.defined[value.index()] {
                    let v = self.f.value(*value);
                    let _ = write!(s, ":{}{}", self.t.class(v.class).name, v.size);
                }
                if !uses.is_empty() {
                    let uses: Vec<String> = uses.iter().map(|u| self.use_(u)).collect();
                    let _ = write!(s, " ({})", uses.join(", "));
                }
                s
            }
        }
    }

    fn op(&self, op: &Op) -> String {
        let mut s = String::new();
        if !op.defs.is_empty() {
            let defs: Vec<String> = op.defs.iter().map(|d| self.def(d)).collect();
            let _ = write!(s, "{} = ", defs.join(", "));
        }
        s.push_str(&op.opcode);
        let operands: Vec<String> = op
            .operands
            .iter()
            .map(|o| match o {
                Operand::Value(u) => self.use_(u),
                Operand::Imm(n) => n.get().to_string(),
            })
            .collect();
        if !operands.is_empty() {
            let _ = write!(s, " {}", operands.join(", "));
        }
        s.push_str(&attributes(op));
        s
    }

    fn terminator(&self, term: &Terminator) -> String {
        let label = |b: Block| self.f.block(b).name.clone();
        match term {
            Terminator::Jump { target, .. } => format!("jump {}", label(*target)),
            Terminator::Branch {
                kind,
                cond,
                then_block,
                else_block,
                ..
            } => {
                let kind = match kind {
                    BranchKind::Uniform => "uniform",
                    BranchKind::Divergent => "divergent",
                };
                format!(
                    "branch {kind} {}, {}, {}",
                    self.use_(cond),
                    label(*then_block),
                    label(*else_block)
                )
            }
            Terminator::Ret { uses, .. } => {
                let uses: Vec<String> = uses.iter().map(|u| self.use_(u)).collect();
                if uses.is_empty() {
                    "ret".into()
                } else {
                    format!("ret {}", uses.join(", "))
                }
            }
        }
    }
}

/// `tied(..) prefer(..) early(..) pinned(..) remat EFFECT`, each preceded by a space.
fn attributes(op: &Op) -> String {
    let mut s = String::new();
    let pair = |d: usize, u: u16| {
        if d == 0 {
            u.to_string()
        } else {
            format!("{d}={u}")
        }
    };
    for (d, def) in op.defs.iter().enumerate() {
        if let Some(u) = def.tied {
            let _ = write!(s, " tied({})", pair(d, u));
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if let Some(u) = def.prefer {
            let _ = write!(s, " prefer({})", pair(d, u));
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if def.early_clobber {
            s.push_str(&if d == 0 {
                " early".into()
            } else {
                format!(" early({d})")
            });
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if def.pinned {
            s.push_str(&if d == 0 {
                " pinned".into()
            } else {
                format!(" pinned({d})")
            });
        }
    }
    if op.remat {
        s.push_str(" remat");
    }
    s.push_str(match op.effect {
        Effect::None => "",
        Effect::ReadsMemory => " reads",
        Effect::WritesMemory => " writes",
        Effect::Barrier => " barrier",
        Effect::Control => " control",
        Effect::Carry => " carry",
    });
    for (kind, word) in [
        (RegAccessKind::Read, "implicit"),
        (RegAccessKind::Write, "implicit_def"),
        (RegAccessKind::Clobber, "clobber"),
    ] {
        let regs: Vec<&str> = op
            .regs
            .iter()
            .filter(|a| a.kind == kind)
            .map(|a| a.reg.as_str())
            .collect();
        if !regs.is_empty() {
            s.push_str(&format!(" {word}({})", regs.join(", ")));
        }
    }
    s
}
