//! Tokens of one line of `.chr` text.
//!
//! The format is line-oriented: every statement fits on one line, so the lexer works a
//! line at a time and every token knows its 1-based column. `;` starts a comment.

use crate::program::Pos;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tok<'a> {
    /// Letters, digits, `_`, `.` and `-`, starting with a letter or `_`: opcodes, labels,
    /// class-and-size (`v4`), locations (`v[`, `v7.l5`), keywords.
    Ident(&'a str),
    /// `%name`, without the `%`.
    Value(&'a str),
    Int(i64),
    Float(f64),
    /// One of `= , : [ ] ( ) { } @`.
    Punct(char),
    /// `<-`
    Arrow,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub pos: Pos,
}

/// A lexing error: the position and what is wrong there.
pub type LexError = (Pos, String);

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Whether `name` is one identifier of the text format (a letter or `_`, then letters,
/// digits, `_`, `.` or `-`): what an importer may use as a function's or block's name.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char)
}

/// Splits one line (without its newline) into tokens, dropping any comment. Tokens are
/// ASCII, so up to the first token error byte offsets equal character columns.
pub fn lex_line(line: &str, line_no: u32) -> Result<Vec<Token<'_>>, LexError> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let run_end = |from: usize, pred: fn(char) -> bool| {
        let mut j = from;
        while j < bytes.len() && pred(char::from(bytes[j])) {
            j += 1;
        }
        j
    };
    while i < bytes.len() {
        let c = char::from(bytes[i]);
        let next = bytes.get(i + 1).map(|&b| char::from(b));
        let pos = Pos {
            line: line_no,
            col: line[..i].chars().count() as u32 + 1,
        };
        if c == ';' {
            break;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let tok = if is_ident_start(c) {
            i = run_end(i, is_ident_char);
            Tok::Ident(&line[start..i])
        } else if c == '%' {
            i = run_end(i + 1, is_ident_char);
            if i == start + 1 {
                return Err((pos, "expected a value name after `%`".into()));
            }
            Tok::Value(&line[start + 1..i])
        } else if c.is_ascii_digit() || c == '-' && next.is_some_and(|n| n.is_ascii_digit()) {
            i = run_end(i + 1, |c| c.is_ascii_alphanumeric() || c == '.');
            let text = &line[start..i];
            number(text).ok_or_else(|| (pos, format!("malformed number `{text}`")))?
        } else if c == '<' && next == Some('-') {
            i += 2;
            Tok::Arrow
        } else if "=,:[](){}@".contains(c) {
            i += 1;
            Tok::Punct(c)
        } else {
            let c = line[start..].chars().next().unwrap_or(c);
            return Err((pos, format!("unexpected character `{c}`")));
        };
        tokens.push(Token { tok, pos });
    }
    Ok(tokens)
}

fn number(text: &str) -> Option<Tok<'static>> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let magnitude = if let Some(hex) = digits.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.contains('.') {
        let value: f64 = digits.parse().ok()?;
        return Some(Tok::Float(if negative { -value } else { value }));
    } else {
        digits.parse().ok()?
    };
    Some(Tok::Int(if negative { -magnitude } else { magnitude }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(line: &str) -> Vec<Tok<'_>> {
        lex_line(line, 1)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn lexes_an_instruction() {
        assert_eq!(
            toks("%x:v4@v[4:7] = load.v4 %b, -3, 0x10 ; comment"),
            vec![
                Tok::Value("x"),
                Tok::Punct(':'),
                Tok::Ident("v4"),
                Tok::Punct('@'),
                Tok::Ident("v"),
                Tok::Punct('['),
                Tok::Int(4),
                Tok::Punct(':'),
                Tok::Int(7),
                Tok::Punct(']'),
                Tok::Punct('='),
                Tok::Ident("load.v4"),
                Tok::Value("b"),
                Tok::Punct(','),
                Tok::Int(-3),
                Tok::Punct(','),
                Tok::Int(16),
            ]
        );
    }

    #[test]
    fn columns_count_characters() {
        let t = lex_line("  jump  é", 3).unwrap_err();
        assert_eq!(t.0, Pos { line: 3, col: 9 });
    }

    #[test]
    fn arrow_float_and_at() {
        assert_eq!(
            toks("func @f bb freq=0.5 v1 <- v2"),
            vec![
                Tok::Ident("func"),
                Tok::Punct('@'),
                Tok::Ident("f"),
                Tok::Ident("bb"),
                Tok::Ident("freq"),
                Tok::Punct('='),
                Tok::Float(0.5),
                Tok::Ident("v1"),
                Tok::Arrow,
                Tok::Ident("v2"),
            ]
        );
    }

    #[test]
    fn malformed_number_is_an_error() {
        assert_eq!(
            lex_line("x 12ab", 2).unwrap_err(),
            (Pos { line: 2, col: 3 }, "malformed number `12ab`".into())
        );
    }
}
