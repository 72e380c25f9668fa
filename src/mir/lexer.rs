//! Tokens of one line of a MIR `body:`, each with its 1-based line:col.
//!
//! MIR prints one machine instruction per line, so the body is lexed line by line.
//! Register references keep their shape in one token (`%12`, `%12.sub0_sub1`, `$sgpr0_sgpr1`,
//! `%bb.3`, `%subreg.sub1`, `%ir-block.8`); `/* … */` comments (the flag words LLVM prints
//! beside `INLINEASM` operands) are dropped.

use crate::program::Pos;

use super::MirError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// `%N`, with the sub-register index of `%N.sub0_sub1`.
    VReg {
        id: u32,
        sub: Option<String>,
    },
    /// `%bb.N`.
    Block(u32),
    /// `$name`: a physical register.
    Phys(String),
    /// `%subreg.NAME`, `%ir.x`, `%stack.0`, `@global`, `!7`: references allocation ignores.
    Ref(String),
    /// An identifier: opcode, flag, class name.
    Ident(String),
    /// A number; `value` is `None` where it is not an `i64` (a float).
    Number {
        text: String,
        value: Option<i64>,
    },
    Str(String),
    /// One of `= , : ( ) < > { } [ ] &`.
    Punct(char),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// Splits `text`, line `line` of the file, into tokens.
pub fn lex_line(text: &str, line: u32) -> Result<Vec<Token>, MirError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let pos = Pos {
            line,
            col: i as u32 + 1,
        };
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").ok_or_else(|| MirError {
                pos,
                message: "unterminated `/*` comment".into(),
            })?;
            i += end + 4;
            continue;
        }
        let (tok, len) = token_at(&text[i..], pos)?;
        out.push(Token { tok, pos });
        i += len;
    }
    Ok(out)
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

/// The length of the word at the start of `s` (letters, digits, `_`, `.`, `-`).
fn word_len(s: &str) -> usize {
    s.bytes().take_while(|&c| is_word_char(c)).count()
}

fn token_at(s: &str, pos: Pos) -> Result<(Tok, usize), MirError> {
    let c = s.as_bytes()[0];
    match c {
        b'%' => Ok(percent(s, pos)?),
        b'$' => physical_register(s, pos),
        b'@' | b'!' => {
            let n = word_len(&s[1..]);
            Ok((Tok::Ref(s[..1 + n].to_string()), 1 + n))
        }
        b'"' => string(s, pos),
        b'=' | b',' | b':' | b'(' | b')' | b'<' | b'>' | b'{' | b'}' | b'[' | b']' | b'&' => {
            Ok((Tok::Punct(c as char), 1))
        }
        b'-' | b'0'..=b'9' => {
            let n = 1 + s[1..]
                .bytes()
                .take_while(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'-'))
                .count();
            let text = &s[..n];
            Ok((
                Tok::Number {
                    text: text.to_string(),
                    value: parse_int(text),
                },
                n,
            ))
        }
        c if c.is_ascii_alphabetic() || c == b'_' => {
            let n = word_len(s);
            Ok((Tok::Ident(s[..n].to_string()), n))
        }
        _ => Err(MirError {
            pos,
            message: format!("unexpected character `{}`", s.chars().next().unwrap_or(' ')),
        }),
    }
}

/// `$name`: a physical register, named like an identifier (`$vgpr0`, `$sgpr0_sgpr1`,
/// `$exec_lo`, `$noreg`): a letter or `_`, then letters, digits and `_`. The name is kept
/// as the register an operation accesses, so it must be one the text format can name too.
fn physical_register(s: &str, pos: Pos) -> Result<(Tok, usize), MirError> {
    let n = word_len(&s[1..]);
    let name = &s[1..1 + n];
    let mut chars = name.bytes();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_');
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        let message = if name.is_empty() {
            "expected a physical register name after `$`".to_string()
        } else {
            format!("`${name}` is not a physical register name (a letter or `_`, then letters, digits and `_`)")
        };
        return Err(MirError { pos, message });
    }
    Ok((Tok::Phys(name.to_string()), 1 + n))
}

fn parse_int(text: &str) -> Option<i64> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    Some(if neg { -value } else { value })
}

/// `%N`, `%N.sub`, `%bb.N`, or another `%name.x` reference.
fn percent(s: &str, pos: Pos) -> Result<(Tok, usize), MirError> {
    let n = 1 + word_len(&s[1..]);
    let word = &s[1..n];
    if let Some(rest) = word.strip_prefix("bb.") {
        let number = rest.parse().map_err(|_| MirError {
            pos,
            message: format!("bad block reference `%{word}`"),
        })?;
        return Ok((Tok::Block(number), n));
    }
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Ok((Tok::Ref(s[..n].to_string()), n));
    }
    let id = word[..digits].parse().map_err(|_| MirError {
        pos,
        message: format!("virtual register number `{}` is too large", &word[..digits]),
    })?;
    let sub = match &word[digits..] {
        "" => None,
        rest => match rest.strip_prefix('.') {
            Some(sub) if !sub.is_empty() => Some(sub.to_string()),
            _ => {
                return Err(MirError {
                    pos,
                    message: format!("bad virtual register `%{word}`"),
                })
            }
        },
    };
    Ok((Tok::VReg { id, sub }, n))
}

fn string(s: &str, pos: Pos) -> Result<(Tok, usize), MirError> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Ok((Tok::Str(s[1..i].to_string()), i + 1)),
            _ => i += 1,
        }
    }
    Err(MirError {
        pos,
        message: "unterminated string".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex_line(text, 1)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn registers_keep_their_shape() {
        assert_eq!(
            toks("%36.sub0_sub1, $sgpr0_sgpr1 %bb.8(0x40000000)"),
            [
                Tok::VReg {
                    id: 36,
                    sub: Some("sub0_sub1".into())
                },
                Tok::Punct(','),
                Tok::Phys("sgpr0_sgpr1".into()),
                Tok::Block(8),
                Tok::Punct('('),
                Tok::Number {
                    text: "0x40000000".into(),
                    value: Some(0x4000_0000)
                },
                Tok::Punct(')'),
            ]
        );
    }

    #[test]
    fn comments_vanish_and_errors_have_columns() {
        assert_eq!(toks("2228234 /* regdef:VGPR_32 */").len(), 1);
        let e = lex_line("  %1 = FOO ^", 7).unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (7, 12));
    }

    /// A physical register's name is an identifier: one that starts with a digit or holds
    /// a `.` or `-` is an error at the `$`, not a register the text format cannot name.
    #[test]
    fn a_physical_register_name_is_an_identifier() {
        for bad in ["$0ode", "$vgpr0.x", "$a-b"] {
            let e = lex_line(&format!("    S_NOP 0, implicit {bad}"), 4).unwrap_err();
            assert_eq!((e.pos.line, e.pos.col), (4, 23), "{bad}");
            assert!(e.message.contains(bad), "{bad}: {}", e.message);
        }
        assert_eq!(
            toks("$_x1 $exec_lo"),
            vec![Tok::Phys("_x1".into()), Tok::Phys("exec_lo".into())]
        );
    }

    /// A `$` names a physical register: alone it is an error, not a register named "".
    #[test]
    fn a_dollar_without_a_name_is_an_error() {
        let e = lex_line("    S_NOP 0, implicit $, ec", 3).unwrap_err();
        assert_eq!((e.pos.line, e.pos.col), (3, 23));
        assert!(
            e.message.contains("physical register name"),
            "{}",
            e.message
        );
    }
}
