//! Collects [`VerifyError`]s for one function and names values and labels for messages.

use crate::error::{ErrorKind, Point, Side, VerifyError};
use chromatic::{Location, Pos, Target};

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
