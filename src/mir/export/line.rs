//! One MIR instruction line rewritten: its virtual-register operands replaced, block
//! references renamed, everything else (opcode, immediates, flags, memory operands,
//! comments) kept as written.
//!
//! An operand is the text between top-level commas (or the `=` that ends the
//! definitions): flag words, then the register, then an optional `:class` and `(type)`.
//! A rewritten operand keeps its flag words except `killed` and `renamable` (kill flags
//! describe the virtual registers, not the physical ones chosen) and drops the class and
//! type, which post-allocation MIR does not write.

use super::super::lexer::{lex_line, Tok, Token};
use super::super::parse::split_memory_operands;
use super::super::MirError;
use crate::program::Pos;

/// A virtual-register operand as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegOperand {
    /// Where its `%N` is (the position the importer gave its use or definition).
    pub pos: Pos,
    pub id: u32,
    pub sub: Option<String>,
    /// `:class` written after it.
    pub class: Option<String>,
    pub undef: bool,
    pub is_def: bool,
}

/// The line with every virtual-register operand replaced by what `replace` makes of
/// it (the physical register, with `undef` where needed); the flag words LLVM no longer
/// trusts after allocation are dropped.
pub fn rewrite(
    line: &str,
    number: u32,
    replace: &mut dyn FnMut(&RegOperand) -> Result<String, MirError>,
) -> Result<String, MirError> {
    let (code, _) = split_memory_operands(line);
    let tokens = lex_line(code, number)?;
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for group in operand_groups(code, &tokens) {
        let Some(k) = group
            .tokens
            .iter()
            .position(|t| matches!(t.tok, Tok::VReg { .. }))
        else {
            continue;
        };
        let Tok::VReg { id, sub } = &group.tokens[k].tok else {
            continue;
        };
        let flags: Vec<&str> = group.tokens[..k]
            .iter()
            .filter_map(|t| match &t.tok {
                Tok::Ident(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        let class = match (group.tokens.get(k + 1), group.tokens.get(k + 2)) {
            (
                Some(colon),
                Some(Token {
                    tok: Tok::Ident(c), ..
                }),
            ) if colon.tok == Tok::Punct(':') => Some(c.clone()),
            _ => None,
        };
        let operand = RegOperand {
            pos: group.tokens[k].pos,
            id: *id,
            sub: sub.clone(),
            class,
            undef: flags.contains(&"undef"),
            is_def: group.is_def || flags.iter().any(|f| *f == "def" || *f == "implicit-def"),
        };
        let register = replace(&operand)?;
        let kept: Vec<&str> = flags
            .into_iter()
            .filter(|f| !matches!(*f, "killed" | "renamable" | "undef"))
            .collect();
        out.push_str(&line[at..group.start]);
        for f in kept {
            out.push_str(f);
            out.push(' ');
        }
        out.push_str(&register);
        at = group.end;
    }
    out.push_str(&line[at..]);
    Ok(out)
}

/// The line with every `%bb.N` renamed by `rename`, and `killed` flags dropped.
pub fn rename_blocks(
    line: &str,
    number: u32,
    rename: &dyn Fn(u32) -> u32,
) -> Result<String, MirError> {
    let (code, _) = split_memory_operands(line);
    let tokens = lex_line(code, number)?;
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for t in &tokens {
        let start = t.pos.col as usize - 1;
        match &t.tok {
            Tok::Block(b) => {
                out.push_str(&line[at..start]);
                out.push_str(&format!("%bb.{}", rename(*b)));
                at = start + format!("%bb.{b}").len();
            }
            Tok::Ident(w) if w == "killed" => {
                out.push_str(&line[at..start]);
                at = start + w.len();
                at += line[at..].len() - line[at..].trim_start().len();
            }
            _ => {}
        }
    }
    out.push_str(&line[at..]);
    Ok(out)
}

/// The block numbers a line names.
pub fn blocks_named(line: &str, number: u32) -> Result<Vec<u32>, MirError> {
    let (code, _) = split_memory_operands(line);
    Ok(lex_line(code, number)?
        .into_iter()
        .filter_map(|t| match t.tok {
            Tok::Block(b) => Some(b),
            _ => None,
        })
        .collect())
}

/// The operand texts of an instruction: byte range within the line and tokens.
struct Group<'t> {
    start: usize,
    end: usize,
    tokens: &'t [Token],
    is_def: bool,
}

/// Operands left of the top-level `=` (definitions) and after the opcode (uses).
fn operand_groups<'t>(code: &str, tokens: &'t [Token]) -> Vec<Group<'t>> {
    let top = top_level(tokens);
    let eq = top
        .iter()
        .copied()
        .find(|&i| tokens[i].tok == Tok::Punct('='));
    let mut groups = Vec::new();
    if let Some(eq) = eq {
        split(code, tokens, &top, 0, eq, true, &mut groups);
    }
    let after = eq.map_or(0, |e| e + 1);
    let opcode = tokens[after..]
        .iter()
        .position(
            |t| !matches!(&t.tok, Tok::Ident(w) if w.starts_with(|c: char| c.is_ascii_lowercase())),
        )
        .map_or(tokens.len(), |p| after + p);
    split(
        code,
        tokens,
        &top,
        opcode + 1,
        tokens.len(),
        false,
        &mut groups,
    );
    groups
}

/// The comma-separated groups among `tokens[from..to]`.
fn split<'t>(
    code: &str,
    tokens: &'t [Token],
    top: &[usize],
    from: usize,
    to: usize,
    is_def: bool,
    out: &mut Vec<Group<'t>>,
) {
    if from >= to {
        return;
    }
    let byte = |i: usize| tokens[i].pos.col as usize - 1;
    let mut start = from;
    let commas = top
        .iter()
        .copied()
        .filter(|&i| i >= from && i < to && tokens[i].tok == Tok::Punct(','));
    for end in commas.chain([to]) {
        if start < end {
            let end_byte = if end < tokens.len() {
                byte(end)
            } else {
                code.len()
            };
            out.push(Group {
                start: byte(start),
                end: byte(start) + code[byte(start)..end_byte].trim_end().len(),
                tokens: &tokens[start..end],
                is_def,
            });
        }
        start = end + 1;
    }
}

/// Indices of the tokens outside any bracket.
fn top_level(tokens: &[Token]) -> Vec<usize> {
    let mut depth = 0i32;
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if depth == 0 {
            out.push(i);
        }
        match t.tok {
            Tok::Punct('(' | '<' | '{' | '[') => depth += 1,
            Tok::Punct(')' | '>' | '}' | ']') => depth -= 1,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_replaced_and_the_rest_kept() {
        let line = "    %7:vgpr_32 = nofpexcept V_FMAC_F32_e32 -12, killed %5(s32), undef %6.sub1, implicit $exec :: (load (s32) from %ir.x)";
        let out = rewrite(line, 1, &mut |r| {
            Ok(match (r.id, r.undef, r.is_def) {
                (7, _, true) => "$vgpr3".into(),
                (5, false, false) => "$vgpr1".into(),
                (6, true, false) => "undef $vgpr0".into(),
                _ => panic!("unexpected {r:?}"),
            })
        })
        .unwrap();
        assert_eq!(
            out,
            "    $vgpr3 = nofpexcept V_FMAC_F32_e32 -12, $vgpr1, undef $vgpr0, implicit $exec :: (load (s32) from %ir.x)"
        );
    }

    #[test]
    fn blocks_are_renamed_and_kills_dropped() {
        let line = "    S_CBRANCH_SCC0 %bb.2, implicit killed $scc";
        let out = rename_blocks(line, 1, &|b| if b == 2 { 12 } else { b }).unwrap();
        assert_eq!(out, "    S_CBRANCH_SCC0 %bb.12, implicit $scc");
        assert_eq!(blocks_named(&out, 1).unwrap(), [12]);
    }
}
