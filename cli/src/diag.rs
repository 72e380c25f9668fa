//! Source-pointing diagnostics: every error with a position is printed as
//! `error: message` followed by `┌─ file:line:col` and the offending line, via
//! `codespan-reporting`. Errors without a position are printed as `file: error: message`.

use chromatic::Pos;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor::Buffer, Config};

/// One source file, kept for rendering diagnostics against it.
#[derive(Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
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

    /// Byte offset of a 1-based line:col position (columns count characters).
    fn offset(&self, pos: Pos) -> usize {
        let Some(line) = self
            .text
            .split_inclusive('\n')
            .nth(pos.line.max(1) as usize - 1)
        else {
            return self.text.len();
        };
        let start = line.as_ptr() as usize - self.text.as_ptr() as usize;
        let within = line
            .char_indices()
            .nth(pos.col.max(1) as usize - 1)
            .map_or(line.trim_end_matches('\n').len(), |(i, _)| i);
        start + within
    }

    /// Renders `message` at `pos` (or without a snippet when `pos` is unknown).
    pub fn render(&self, pos: Pos, message: &str) -> String {
        if pos == Pos::default() {
            return format!("{}: error: {message}\n", self.name);
        }
        let file = SimpleFile::new(&self.name, &self.text);
        let at = self.offset(pos);
        let end = (at + 1).min(self.text.len()).max(at);
        let diagnostic = Diagnostic::error()
            .with_message(message)
            .with_labels(vec![Label::primary((), at..end)]);
        let mut buffer = Buffer::no_color();
        let config = Config::default();
        match term::emit(&mut buffer, &config, &file, &diagnostic) {
            Ok(()) => String::from_utf8_lossy(buffer.as_slice()).into_owned(),
            Err(_) => format!("{}:{pos}: error: {message}\n", self.name),
        }
    }
}
