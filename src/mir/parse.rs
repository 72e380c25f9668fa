//! The MIR file: YAML documents read line by line, bodies instruction by instruction.
//!
//! Not a YAML reader: a `.mir` file from `llc` is a fixed layout — an optional `--- |`
//! document holding the IR (read only for `"target-cpu"` and `+wavefrontsize64`), then one
//! `---` document per machine function whose top-level keys `name:`, `registers:` (one
//! `- { id: N, class: C, … }` per line) and `body: |` are read; every other key is
//! skipped. In the body, `bb.N …:` opens a block, `successors:` lists its successors,
//! and every other line is one instruction:
//! `[defs =] [mi-flags] OPCODE [operands] [:: memory operands] [debug-location …]`.

use super::ast::{BlockAst, Flags, FunctionAst, InstAst, Module, OperandAst, OperandKind};
use super::lexer::{lex_line, Tok, Token};
use super::MirError;
use crate::program::Pos;
use std::collections::HashMap;

/// Parses a whole `.mir` file.
pub fn parse_module(src: &str) -> Result<Module, MirError> {
    let mut module = Module {
        cpu: None,
        wave64_feature: false,
        functions: Vec::new(),
    };
    let lines: Vec<(u32, &str)> = src.lines().zip(1..).map(|(l, n)| (n, l)).collect();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        i += 1;
        if !line.starts_with("---") {
            continue;
        }
        let end = document_end(&lines, i);
        if line.trim_end().ends_with('|') {
            read_ir(&lines[i..end], &mut module);
        } else {
            module
                .functions
                .push(function(&lines[i..end], Pos { line: n, col: 1 })?);
        }
        i = end;
    }
    Ok(module)
}

/// The index of the line that ends the document starting at `start`.
fn document_end(lines: &[(u32, &str)], start: usize) -> usize {
    lines[start..]
        .iter()
        .position(|(_, l)| l.starts_with("---") || l.starts_with("..."))
        .map_or(lines.len(), |p| start + p)
}

fn read_ir(lines: &[(u32, &str)], module: &mut Module) {
    for &(n, line) in lines {
        if module.cpu.is_none() {
            if let Some(at) = line.find("\"target-cpu\"=\"") {
                let rest = &line[at + 14..];
                let cpu = rest.split('"').next().unwrap_or_default();
                let pos = Pos {
                    line: n,
                    col: at as u32 + 1,
                };
                module.cpu = Some((cpu.to_string(), pos));
            }
        }
        if line.contains("\"target-features\"") && line.contains("+wavefrontsize64") {
            module.wave64_feature = true;
        }
    }
}

fn function(lines: &[(u32, &str)], pos: Pos) -> Result<FunctionAst, MirError> {
    let mut f = FunctionAst {
        name: String::new(),
        pos,
        classes: HashMap::new(),
        blocks: Vec::new(),
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        i += 1;
        let repeated = ["name:", "body:"]
            .into_iter()
            .find(|key| line.starts_with(key) && seen.contains(key));
        if let Some(key) = repeated {
            return Err(MirError {
                pos: Pos { line: n, col: 1 },
                message: format!("a second `{key}` in one machine function"),
            });
        }
        if let Some(key) = ["name:", "body:"].into_iter().find(|k| line.starts_with(k)) {
            seen.push(key);
        }
        if let Some(name) = line.strip_prefix("name:") {
            f.name = name.trim().trim_matches('\'').to_string();
            f.pos = Pos { line: n, col: 1 };
        } else if line.starts_with("registers:") {
            while i < lines.len() && lines[i].1.starts_with("  - ") {
                register(lines[i], &mut f.classes)?;
                i += 1;
            }
        } else if line.starts_with("body:") {
            let start = i;
            while i < lines.len() && (lines[i].1.is_empty() || lines[i].1.starts_with(' ')) {
                i += 1;
            }
            f.blocks = body(&lines[start..i])?;
        }
    }
    if f.name.is_empty() {
        return Err(MirError {
            pos,
            message: "machine function without `name:`".into(),
        });
    }
    if !crate::lexer::is_identifier(&f.name) {
        return Err(MirError {
            pos: f.pos,
            message: format!(
                "function name `{}` is not an identifier of chromatic's text format (a letter or `_`, then letters, digits, `_`, `.`, `-`)",
                f.name
            ),
        });
    }
    if f.blocks.is_empty() {
        return Err(MirError {
            pos: f.pos,
            message: format!("machine function `{}` has no `body:` blocks", f.name),
        });
    }
    Ok(f)
}

/// `  - { id: 3, class: sreg_64, preferred-register: '' }`.
fn register(
    (n, line): (u32, &str),
    classes: &mut HashMap<u32, (String, Pos)>,
) -> Result<(), MirError> {
    let field = |key: &str| {
        line.find(key).map(|at| {
            let rest = &line[at + key.len()..];
            let end = rest.find([',', '}']).unwrap_or(rest.len());
            (rest[..end].trim(), at as u32 + 1)
        })
    };
    let pos = |col| Pos { line: n, col };
    let bad = |message: &str| MirError {
        pos: pos(1),
        message: message.into(),
    };
    let (id, _) = field("id:").ok_or_else(|| bad("register entry without `id:`"))?;
    let (class, col) = field("class:").ok_or_else(|| bad("register entry without `class:`"))?;
    let id: u32 = id
        .parse()
        .map_err(|_| bad(&format!("register id `{id}` is not a number")))?;
    classes.insert(id, (class.to_string(), pos(col)));
    Ok(())
}

fn body(lines: &[(u32, &str)]) -> Result<Vec<BlockAst>, MirError> {
    let mut blocks: Vec<BlockAst> = Vec::new();
    for &(n, line) in lines {
        let text = line.trim();
        if text.is_empty() || text.starts_with(';') {
            continue;
        }
        let col = (line.len() - line.trim_start().len()) as u32 + 1;
        let pos = Pos { line: n, col };
        if let Some(rest) = text.strip_prefix("bb.").filter(|_| text.ends_with(':')) {
            blocks.push(block_header(rest, pos)?);
            continue;
        }
        let block = blocks.last_mut().ok_or_else(|| MirError {
            pos,
            message: "instruction before the first `bb.N:` block".into(),
        })?;
        if let Some(rest) = text.strip_prefix("successors:") {
            let tokens = lex_line(rest, n)?;
            block.successors = tokens
                .iter()
                .filter_map(|t| match t.tok {
                    Tok::Block(b) => Some(b),
                    _ => None,
                })
                .collect();
        } else if !text.starts_with("liveins:") {
            let (code, memory) = split_memory_operands(line);
            let mut tokens = lex_line(code, n)?;
            let mut inst = instruction(&mut tokens, pos)?;
            inst.stores = memory
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "store");
            inst.loads = memory
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == "load");
            block.insts.push(inst);
        }
    }
    Ok(blocks)
}

/// `bb.3.Flow22:`, `bb.0 (%ir-block.8):` after `bb.`.
fn block_header(rest: &str, pos: Pos) -> Result<BlockAst, MirError> {
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let number = digits.parse().map_err(|_| MirError {
        pos,
        message: format!("bad block header `bb.{rest}`"),
    })?;
    Ok(BlockAst {
        number,
        pos,
        successors: Vec::new(),
        insts: Vec::new(),
    })
}

/// An instruction line cut before its memory operands (` :: (load …)`), which are free
/// text to allocation, and those operands.
pub(super) fn split_memory_operands(line: &str) -> (&str, &str) {
    let mut in_string = false;
    let bytes = line.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
            b':' if !in_string && line[i..].starts_with(":: ") => {
                return (&line[..i], &line[i + 2..])
            }
            _ => {}
        }
    }
    (line, "")
}

/// Words after which the rest of an instruction line is annotation; a comma separates the
/// first of them from the last operand (`ATOMIC_FENCE 5, 2, mmra !3`).
const TRAILERS: &[&str] = &[
    "debug-location",
    "pre-instr-symbol",
    "post-instr-symbol",
    "heap-alloc-marker",
    "pcsections",
    "mmra",
    "cfi-type",
    "debug-instr-number",
];

fn instruction(tokens: &mut Vec<Token>, pos: Pos) -> Result<InstAst, MirError> {
    if let Some(cut) = tokens
        .iter()
        .position(|t| matches!(&t.tok, Tok::Ident(w) if TRAILERS.contains(&w.as_str())))
    {
        tokens.truncate(cut);
        if tokens.last().is_some_and(|t| t.tok == Tok::Punct(',')) {
            tokens.pop();
        }
    }
    let eq = top_level(tokens).find(|&i| tokens[i].tok == Tok::Punct('='));
    let (defs, rest) = match eq {
        Some(eq) => (operands(&tokens[..eq], pos)?, &tokens[eq + 1..]),
        None => (Vec::new(), &tokens[..]),
    };
    let at = rest
        .iter()
        .position(
            |t| !matches!(&t.tok, Tok::Ident(w) if w.starts_with(|c: char| c.is_ascii_lowercase())),
        )
        .unwrap_or(rest.len());
    let opcode = match rest.get(at).map(|t| &t.tok) {
        Some(Tok::Ident(op)) => op.clone(),
        _ => {
            return Err(MirError {
                pos: rest.get(at).map_or(pos, |t| t.pos),
                message: "expected an opcode".into(),
            })
        }
    };
    Ok(InstAst {
        pos,
        defs,
        opcode,
        operands: operands(&rest[at + 1..], rest[at].pos)?,
        stores: false,
        loads: false,
    })
}

/// Indices of `tokens` outside any bracket.
fn top_level(tokens: &[Token]) -> impl Iterator<Item = usize> + '_ {
    let mut depth = 0i32;
    tokens.iter().enumerate().filter_map(move |(i, t)| {
        let here = depth;
        match t.tok {
            Tok::Punct('(' | '<' | '{' | '[') => depth += 1,
            Tok::Punct(')' | '>' | '}' | ']') => depth -= 1,
            _ => {}
        }
        (here == 0).then_some(i)
    })
}

/// Comma-separated operands; `before` is where an empty first one is reported.
fn operands(tokens: &[Token], before: Pos) -> Result<Vec<OperandAst>, MirError> {
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut start = 0;
    let commas: Vec<usize> = top_level(tokens)
        .filter(|&i| tokens[i].tok == Tok::Punct(','))
        .collect();
    let mut at = before;
    for end in commas.into_iter().chain([tokens.len()]) {
        out.push(operand(&tokens[start..end], at)?);
        at = tokens.get(end).map_or(at, |comma| comma.pos);
        start = end + 1;
    }
    Ok(out)
}

/// One operand; `at` (the comma or opcode before it) is where an empty one is reported.
fn operand(group: &[Token], at: Pos) -> Result<OperandAst, MirError> {
    let mut flags = Flags::default();
    let mut i = 0;
    while let Some(Tok::Ident(w)) = group.get(i).map(|t| &t.tok) {
        match w.as_str() {
            "killed" => flags.killed = true,
            "dead" => flags.dead = true,
            "undef" => flags.undef = true,
            "implicit" => flags.implicit = true,
            "implicit-def" => flags.implicit_def = true,
            "early-clobber" => flags.early_clobber = true,
            "def" => flags.def = true,
            "internal" | "renamable" | "debug-use" => {}
            _ => break,
        }
        i += 1;
    }
    let Some(head) = group.get(i) else {
        return Err(MirError {
            pos: group.first().map_or(at, |t| t.pos),
            message: "empty operand".into(),
        });
    };
    let kind = match &head.tok {
        Tok::VReg { id, sub } => OperandKind::VReg {
            id: *id,
            sub: sub.clone(),
            class: match (group.get(i + 1), group.get(i + 2)) {
                (Some(colon), Some(class)) if colon.tok == Tok::Punct(':') => match &class.tok {
                    Tok::Ident(c) => Some(c.clone()),
                    _ => None,
                },
                _ => None,
            },
        },
        Tok::Phys(name) => OperandKind::Phys(name.clone()),
        Tok::Number { value: Some(v), .. } => OperandKind::Imm(*v),
        Tok::Block(b) => OperandKind::Block(*b),
        Tok::Ref(r) => match r.strip_prefix("%subreg.") {
            Some(index) => OperandKind::SubRegIndex(index.to_string()),
            None => OperandKind::Other,
        },
        _ => OperandKind::Other,
    };
    Ok(OperandAst {
        kind,
        flags,
        pos: head.pos,
    })
}
