//! What the verifier reports: one [`VerifyError`] per violated rule at one place, with a
//! stable [`ErrorKind`] for tests and JSON output.

use serde::Serialize;
use std::fmt;

/// The rule an allocation broke. Names are stable (tests and `--json` rely on them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ErrorKind {
    /// A function of the original has no allocated counterpart.
    MissingFunction,
    /// A block of the original is missing from the allocation.
    MissingBlock,
    /// A block the original lacks that is not a split edge (artefacts and a `jump` on an
    /// original edge).
    ExtraBlock,
    /// The terminator differs from the original's (kind, targets modulo split edges, values).
    TerminatorMismatch,
    /// The phis differ from the original's (values, arguments modulo split edges).
    PhiMismatch,
    /// An original operation is absent from its block (or was changed).
    MissingOp,
    /// An operation the original lacks that is not an artefact.
    UnexpectedOp,
    /// Original operations appear in a different order.
    OpOrder,
    /// A value name the original does not define.
    UnknownValue,
    /// A definition or use without a location.
    MissingLocation,
    /// An operand location that is not a register.
    NotARegister,
    /// A location of another class than its value's, or a lane location in a uniform class.
    WrongClass,
    /// A location whose length is not the value's size.
    WrongSize,
    /// A location beyond the class's units (or lanes).
    OutOfRange,
    /// A register beyond the allowed budget of its class.
    OverBudget,
    /// A tuple not aligned as the target requires.
    Misaligned,
    /// A fixed operand not in its fixed location.
    FixedViolated,
    /// A tied def not in its tied use's location.
    TiedViolated,
    /// An early-clobber def sharing a unit with a use.
    EarlyClobberOverlap,
    /// Two defs of one instruction sharing a unit.
    DefsOverlap,
    /// A move or swap between locations of different lengths or kinds.
    LengthMismatch,
    /// A swap in a class whose target has no swap instruction.
    SwapUnsupported,
    /// A register used both for lane spills and as a whole register.
    LaneRegisterReused,
    /// A remat of a value whose definition is not rematerialisable.
    NotRematerialisable,
    /// A per-lane value moved into a uniform register or lane slot.
    PerLaneInUniform,
    /// A uniform value moved into a per-lane register: lanes masked off at the move never
    /// receive it, so moving it back into a uniform register may read an older instance.
    UniformInPerLane,
    /// A register-to-register move or swap between two classes that is not a class spill
    /// (a `spill` from a class into a register of a class it spills to, or the `reload`
    /// back).
    CrossClassMove,
    /// A class spill or reload whose source does not hold exactly one whole value of the
    /// spilled class, of the move's width.
    ClassSpillMismatch,
    /// A uniform register or lane loaded, in a function with divergent branches, from a slot
    /// that was written per lane (not by a whole-wave store of a uniform register): lanes
    /// masked off when the slot was written hold a stale value.
    UniformFromScratch,
    /// A copy, swap, spill or reload reads a `pinned` value: it must stay where it was
    /// defined for its whole life (an asynchronous result in flight, `docs/FORMAT.md`).
    PinnedMoved,
    /// A phi takes a `pinned` value as an argument but is not `pinned` itself.
    PinnedPhi,
    /// A use whose location holds another value (or another part of it).
    WrongValue,
    /// A use whose location holds nothing known (never written, or different on two paths).
    UndefinedValue,
}

/// Where in the allocated block an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Point {
    /// The whole block or function.
    Block,
    /// Phi number `n`.
    Phi(usize),
    /// Instruction number `n` of the allocated block (artefacts counted).
    Inst(usize),
    /// The terminator.
    Term,
    /// The end of the block, on the edge to the named successor (phi arguments).
    Edge(usize),
}

/// One violation, precisely placed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyError {
    pub kind: ErrorKind,
    pub function: String,
    pub block: String,
    pub point: Point,
    /// Which operand: `def 0`, `use 2`, `move 1`, `phi %y`, …
    pub operand: Option<String>,
    /// The location concerned, as written in the text.
    pub location: Option<String>,
    /// What the rule expected, e.g. `%x[1]` (part 1 of `%x`).
    pub expected: Option<String>,
    /// What was found, e.g. `%y[0]`, `undefined`, `conflict`.
    pub found: Option<String>,
    /// Source position in the allocated text (`line:col`, 0:0 when generated).
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{} {}", self.function, self.block)?;
        match self.point {
            Point::Block => {}
            Point::Phi(i) => write!(f, " phi {i}")?,
            Point::Inst(i) => write!(f, " inst {i}")?,
            Point::Term => write!(f, " terminator")?,
            Point::Edge(_) => write!(f, " end")?,
        }
        if self.line > 0 {
            write!(f, " ({}:{})", self.line, self.col)?;
        }
        write!(f, ": {:?}", self.kind)?;
        if let Some(op) = &self.operand {
            write!(f, " {op}")?;
        }
        if let Some(loc) = &self.location {
            write!(f, " at {loc}")?;
        }
        if let Some(e) = &self.expected {
            write!(f, ": expected {e}")?;
        }
        if let Some(found) = &self.found {
            write!(f, ", found {found}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyError {}
