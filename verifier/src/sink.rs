//! Collects [`VerifyError`]s for one function and names values and labels for messages.

use crate::error::{ErrorKind, Point, Side, VerifyError};
use chromatic::{Location, Pos, Target};

/// Which operand an error is about, formatted only when reported: `use 2`, `def 0`,
/// `phi %y` (its argument on an edge), or a fixed name (`phi def`, `remat`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'n> {
    Use(usize),
    Def(usize),
    Phi(&'n str),
    Named(&'n str),
}

impl std::fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operand::Use(k) => write!(f, "use {k}"),
            Operand::Def(k) => write!(f, "def {k}"),
            Operand::Phi(name) => write!(f, "phi %{name}"),
            Operand::Named(name) => f.write_str(name),
        }
    }
}

/// The error list of one function under check.
#[derive(Debug)]
pub(crate) struct Sink<'a> {
    pub function: &'a str,
    pub target: &'a Target,
    pub errors: Vec<VerifyError>,
}

impl<'a> Sink<'a> {
    pub fn new(function: &'a str, target: &'a Target) -> Sink<'a> {
        Sink {
            function,
            target,
            errors: Vec::new(),
        }
    }

    /// Records an error and returns it so the caller can fill in the details.
    pub fn report(
        &mut self,
        kind: ErrorKind,
        block: &str,
        point: Point,
        pos: Pos,
    ) -> &mut VerifyError {
        self.errors.push(VerifyError {
            kind,
            side: Side::Allocated,
            function: self.function.to_string(),
            block: block.to_string(),
            point,
            operand: None,
            location: None,
            expected: None,
            found: None,
            note: None,
            line: pos.line,
            col: pos.col,
        });
        let last = self.errors.len() - 1;
        &mut self.errors[last]
    }

    pub fn loc(&self, loc: Location) -> String {
        chromatic::print::location(self.target, loc)
    }
}

impl VerifyError {
    pub(crate) fn operand(&mut self, s: impl Into<String>) -> &mut Self {
        self.operand = Some(s.into());
        self
    }

    pub(crate) fn location(&mut self, s: impl Into<String>) -> &mut Self {
        self.location = Some(s.into());
        self
    }

    pub(crate) fn expected(&mut self, s: impl Into<String>) -> &mut Self {
        self.expected = Some(s.into());
        self
    }

    pub(crate) fn found(&mut self, s: impl Into<String>) -> &mut Self {
        self.found = Some(s.into());
        self
    }

    pub(crate) fn note(&mut self, s: impl Into<String>) -> &mut Self {
        self.note = Some(s.into());
        self
    }

    /// The position is in the original program.
    pub(crate) fn in_original(&mut self) -> &mut Self {
        self.side = Side::Original;
        self
    }
}
