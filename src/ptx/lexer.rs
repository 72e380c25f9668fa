//! Tokens of PTX text, each with its byte span and 1-based line:col.
//!
//! PTX is free-form (statements end with `;`, not with the line), so the whole file is
//! lexed at once. Comments (`//…`, `/*…*/`) are dropped: the exporter copies the text
//! between statements verbatim, so nothing here needs to keep them. Words follow the PTX
//! ISA's identifier rule (§4.4: letters, digits, `_`, `$`, `%` at the start) extended with
//! `.` and `::`, so that an opcode with all its modifiers (`ld.global.L1::evict_last.v4.b32`),
//! a directive (`.reg`) or a special register (`%tid.x`) is one token.

use crate::program::Pos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// An identifier, opcode, directive, register or label name.
    Word,
    /// A numeric literal: decimal, `0x`/`0b`/octal integers (optional `U`), `0f`/`0d`
    /// floating-point bit patterns, decimal floats. The sign is a separate `-` token.
    Number,
    /// A double-quoted string.
    Str,
    /// One of `{ } ( ) [ ] , ; : @ ! | + - < > =`.
    Punct(char),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    /// Byte range in the source.
    pub start: usize,
    pub end: usize,
    pub pos: Pos,
}

impl Token {
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

/// A lexing error: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub pos: Pos,
    pub message: String,
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Splits `src` into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    Lexer {
        src,
        bytes: src.as_bytes(),
        i: 0,
        line: 1,
        line_start: 0,
        tokens: Vec::new(),
    }
    .run()
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    i: usize,
    line: u32,
    line_start: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn pos(&self, at: usize) -> Pos {
        Pos {
            line: self.line,
            col: self.src[self.line_start..at].chars().count() as u32 + 1,
        }
    }

    fn peek(&self, k: usize) -> u8 {
        self.bytes.get(self.i + k).copied().unwrap_or(0)
    }

    fn newline(&mut self, at: usize) {
        self.line += 1;
        self.line_start = at + 1;
    }

    fn run(mut self) -> Result<Vec<Token>, LexError> {
        while self.i < self.bytes.len() {
            let c = self.bytes[self.i];
            match c {
                b'\n' => {
                    self.newline(self.i);
                    self.i += 1;
                }
                _ if c.is_ascii_whitespace() => self.i += 1,
                b'/' if self.peek(1) == b'/' => self.skip_line_comment(),
                b'/' if self.peek(1) == b'*' => self.skip_block_comment()?,
                b'"' => self.string()?,
                _ if c.is_ascii_digit() => self.number()?,
                _ if is_word_start(c) => self.word(),
                _ if b"{}()[],;:@!|+-<>=".contains(&c) => {
                    self.push(Tok::Punct(char::from(c)), self.i, self.i + 1);
                    self.i += 1;
                }
                _ => {
                    let ch = self.src[self.i..].chars().next().unwrap_or('?');
                    return Err(LexError {
                        pos: self.pos(self.i),
                        message: format!("unexpected character `{ch}`"),
                    });
                }
            }
        }
        Ok(self.tokens)
    }

    fn push(&mut self, tok: Tok, start: usize, end: usize) {
        let pos = self.pos(start);
        self.tokens.push(Token {
            tok,
            start,
            end,
            pos,
        });
    }

    fn skip_line_comment(&mut self) {
        while self.i < self.bytes.len() && self.bytes[self.i] != b'\n' {
            self.i += 1;
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), LexError> {
        let start = self.pos(self.i);
        self.i += 2;
        while self.i < self.bytes.len() {
            if self.bytes[self.i] == b'*' && self.peek(1) == b'/' {
                self.i += 2;
                return Ok(());
            }
            if self.bytes[self.i] == b'\n' {
                self.newline(self.i);
            }
            self.i += 1;
        }
        Err(LexError {
            pos: start,
            message: "unterminated `/*` comment".into(),
        })
    }

    fn string(&mut self) -> Result<(), LexError> {
        let start = self.i;
        self.i += 1;
        while self.i < self.bytes.len() {
            match self.bytes[self.i] {
                b'"' => {
                    self.i += 1;
                    self.push(Tok::Str, start, self.i);
                    return Ok(());
                }
                b'\\' => self.i += 2,
                b'\n' => break,
                _ => self.i += 1,
            }
        }
        Err(LexError {
            pos: self.pos(start),
            message: "unterminated string".into(),
        })
    }

    /// A word: `::` inside is part of it (`L1::evict_last`), a single `:` ends it (a label).
    fn word(&mut self) {
        let start = self.i;
        self.i += 1;
        loop {
            let c = self.peek(0);
            if is_word_char(c) {
                self.i += 1;
            } else if c == b':' && self.peek(1) == b':' && is_word_char(self.peek(2)) {
                self.i += 2;
            } else {
                break;
            }
        }
        self.push(Tok::Word, start, self.i);
    }

    /// Digits, letters and `.` run together (`0f3F800000`, `0x10U`, `1.5e3`); the parser
    /// decodes the text. An exponent's sign is part of the number.
    fn number(&mut self) -> Result<(), LexError> {
        let start = self.i;
        let hex_float =
            self.peek(0) == b'0' && matches!(self.peek(1), b'f' | b'F' | b'd' | b'D' | b'x' | b'X');
        while self.i < self.bytes.len() {
            let c = self.bytes[self.i];
            let exponent_sign = matches!(c, b'+' | b'-')
                && !hex_float
                && matches!(self.bytes[self.i - 1], b'e' | b'E');
            if c.is_ascii_alphanumeric() || c == b'.' || exponent_sign {
                self.i += 1;
            } else {
                break;
            }
        }
        let text = &self.src[start..self.i];
        if decode_number(text).is_none() {
            return Err(LexError {
                pos: self.pos(start),
                message: format!("malformed number `{text}`"),
            });
        }
        self.push(Tok::Number, start, self.i);
        Ok(())
    }
}

/// A literal's value: integers as their 64-bit pattern, `0f`/`0d` floats as their bit
/// pattern, decimal floats as the bits of the `f64`.
pub fn decode_number(text: &str) -> Option<i64> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    let radix = |digits: &str, radix: u32| u64::from_str_radix(digits, radix).ok();
    let bits = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        radix(h, 16)?
    } else if let Some(h) = t.strip_prefix("0f").or_else(|| t.strip_prefix("0F")) {
        (h.len() == 8).then(|| radix(h, 16))??
    } else if let Some(h) = t.strip_prefix("0d").or_else(|| t.strip_prefix("0D")) {
        (h.len() == 16).then(|| radix(h, 16))??
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        radix(b, 2)?
    } else if t.contains(['.', 'e', 'E']) {
        text.parse::<f64>().ok()?.to_bits()
    } else if t.len() > 1 && t.starts_with('0') {
        radix(&t[1..], 8)?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(bits as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<(Tok, &str)> {
        lex(src)
            .unwrap()
            .iter()
            .map(|t| (t.tok, t.text(src)))
            .collect()
    }

    #[test]
    fn lexes_a_statement_with_modifiers_and_address() {
        let src = "@!%p1 ld.global.L1::evict_last.v2.b32 { %r1, _ }, [ %rd1 + -8 ]; // c";
        let texts: Vec<&str> = words(src).iter().map(|w| w.1).collect();
        assert_eq!(
            texts,
            [
                "@",
                "!",
                "%p1",
                "ld.global.L1::evict_last.v2.b32",
                "{",
                "%r1",
                ",",
                "_",
                "}",
                ",",
                "[",
                "%rd1",
                "+",
                "-",
                "8",
                "]",
                ";"
            ]
        );
    }

    #[test]
    fn labels_end_at_a_single_colon() {
        assert_eq!(
            words("$L__BB0_1:\n\tbra $L__BB0_1;"),
            [
                (Tok::Word, "$L__BB0_1"),
                (Tok::Punct(':'), ":"),
                (Tok::Word, "bra"),
                (Tok::Word, "$L__BB0_1"),
                (Tok::Punct(';'), ";")
            ]
        );
    }

    #[test]
    fn numbers_decode() {
        assert_eq!(decode_number("0f3F800000"), Some(0x3F80_0000));
        assert_eq!(
            decode_number("0dBFF0000000000000"),
            Some(0xBFF0_0000_0000_0000_u64 as i64)
        );
        assert_eq!(decode_number("0x10U"), Some(16));
        assert_eq!(decode_number("017"), Some(15));
        assert_eq!(decode_number("1.5"), Some(1.5f64.to_bits() as i64));
        assert_eq!(
            decode_number("4611686293305294848"),
            Some(4611686293305294848)
        );
        assert_eq!(decode_number("0f3F80"), None);
        assert_eq!(decode_number("12ab"), None);
    }

    #[test]
    fn positions_and_errors() {
        let src = "/* a\n b */ add.s32\n  #";
        let toks = lex("/* a\n b */ add.s32").unwrap();
        assert_eq!(toks[0].pos, Pos { line: 2, col: 7 });
        let e = lex(src).unwrap_err();
        assert_eq!(
            (e.pos, e.message.as_str()),
            (Pos { line: 3, col: 3 }, "unexpected character `#`")
        );
        assert_eq!(
            lex("/* x").unwrap_err().message,
            "unterminated `/*` comment"
        );
        assert_eq!(lex("\"abc").unwrap_err().message, "unterminated string");
        assert_eq!(
            lex("x 12ab").unwrap_err().message,
            "malformed number `12ab`"
        );
    }
}
