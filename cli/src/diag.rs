//! Source-pointing diagnostics: every error with a position is printed as
//! `error[code]: message` followed by `┌─ file:line:col`, the offending line with the
//! statement or token underlined, and notes, via `codespan-reporting`. Errors without a
//! position are printed as `file: error: message`.

use chromatic::Pos;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::Buffer, Config};
use std::ops::Range;

/// One source file, kept for rendering diagnostics against it.
#[derive(Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// A diagnostic to render against a [`Source`].
#[derive(Debug, Default)]
pub struct Report<'a> {
    pub pos: Pos,
    /// A stable name for the rule, printed as `error[code]`.
    pub code: Option<&'a str>,
    pub message: &'a str,
    pub notes: Vec<String>,
}

impl Source {
    pub fn read(path: &str) -> anyhow::Result<Source> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{path}: cannot read: {e}"))?;
        Ok(Source {
            name: path.to_string(),
            text,
        })
    }

    /// The byte range of line `pos.line` (1-based), without its newline.
    fn line(&self, pos: Pos) -> Option<Range<usize>> {
        let line = self
            .text
            .split_inclusive('\n')
            .nth(pos.line.max(1) as usize - 1)?;
        let start = line.as_ptr() as usize - self.text.as_ptr() as usize;
        Some(start..start + line.trim_end_matches(['\n', '\r']).len())
    }

    /// What to underline at `pos`: the whole statement (up to a comment) when `pos` is its
    /// first token, else the token there; at least one character.
    fn span(&self, pos: Pos) -> Range<usize> {
        let Some(line) = self.line(pos) else {
            return self.text.len()..self.text.len();
        };
        let text = &self.text[line.clone()];
        let at = text
            .char_indices()
            .nth(pos.col.max(1) as usize - 1)
            .map_or(text.len(), |(i, _)| i);
        let statement_end = text.find(';').unwrap_or(text.len());
        let statement = text[..statement_end].trim_end();
        let first_token = text.len() - text.trim_start().len();
        let end = if at == first_token {
            statement.len()
        } else {
            let rest = &text[at.min(statement.len())..statement.len()];
            at + rest
                .find(|c: char| c.is_whitespace() || c == ',')
                .unwrap_or(rest.len())
        };
        let end = end.max(at + 1).min(line.end - line.start).max(at);
        line.start + at..line.start + end
    }

    /// Renders `message` at `pos` (or without a snippet when `pos` is unknown).
    pub fn render(&self, pos: Pos, message: &str) -> String {
        self.report(&Report {
            pos,
            message,
            ..Report::default()
        })
    }

    /// Renders a diagnostic with its code and notes.
    pub fn report(&self, r: &Report) -> String {
        let code = r.code.map(|c| format!("[{c}]")).unwrap_or_default();
        if r.pos == Pos::default() {
            let notes: String = r.notes.iter().map(|n| format!("  = {n}\n")).collect();
            return format!("{}: error{code}: {}\n{notes}", self.name, r.message);
        }
        let file = SimpleFile::new(&self.name, &self.text);
        let mut diagnostic = Diagnostic::error()
            .with_message(r.message)
            .with_labels(vec![Label::primary((), self.span(r.pos))])
            .with_notes(r.notes.clone());
        if let Some(c) = r.code {
            diagnostic = diagnostic.with_code(c);
        }
        let mut buffer = Buffer::no_color();
        let config = Config::default();
        match term::emit(&mut buffer, &config, &file, &diagnostic) {
            Ok(()) => String::from_utf8_lossy(buffer.as_slice()).into_owned(),
            Err(_) => format!("{}:{}: error{code}: {}\n", self.name, r.pos, r.message),
        }
    }
}
