//! What the verifier reports: one [`VerifyError`] per violated rule at one place, with a
//! stable [`ErrorKind`] (named in JSON by its kebab-case code, `wrong-value`) and a message
//! in plain words.

use serde::Serialize;
use std::fmt;

/// The rule an allocation broke (`docs/FORMAT.md`, "What an allocation must satisfy").
/// Codes are stable: tests and `--json` rely on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The allocated program carries no location at all.
    NotAllocated,
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
    /// An original operation moved across one it depends on.
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
    /// A parallel copy that writes one unit twice (two destinations that share a register,
    /// a slot, or a register and one of its lanes).
    OverlappingDestinations,
    /// A swap of two locations that share a unit.
    OverlappingSwap,
    /// A remat that does not recompute its value: its definition has an effect or a
    /// constraint, lies in another block, or has other operands.
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
    /// A use whose location holds nothing known (never written, different on two paths,
    /// overwritten).
    UndefinedValue,
}

impl ErrorKind {
    /// The stable code: `WrongValue` → `wrong-value`.
    pub fn code(self) -> String {
        let mut out = String::new();
        for (i, c) in format!("{self:?}").chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}

/// Which program a position is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Original,
    Allocated,
}

/// Where in the block an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
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
    /// The program `line` and `col` are in (the original for what the allocation lacks).
    pub side: Side,
    pub function: String,
    pub block: String,
    pub point: Point,
    /// Which operand: `def 0`, `use 2`, `move 1`, `phi %y`, …
    pub operand: Option<String>,
    /// The location concerned, as written in the text.
    pub location: Option<String>,
    /// What the rule expected, e.g. `%x[1]` (part 1 of `%x`).
    pub expected: Option<String>,
    /// What was found: a value (`%y`, `%x[1]` for part 1 of a tuple), or for a use that
    /// reads nothing known, why (`is not written on every path to here`).
    pub found: Option<String>,
    /// More about the rule at this place (the budget, the alignment, …).
    pub note: Option<String>,
    /// Source position (`line:col`, 0:0 when generated).
    pub line: u32,
    pub col: u32,
}

impl VerifyError {
    /// The error in plain words, without its place.
    pub fn message(&self) -> String {
        let op = self.operand.as_deref().unwrap_or("operand");
        let loc = self.location.as_deref().unwrap_or("?");
        let expected = self.expected.as_deref().unwrap_or("?");
        let found = self.found.as_deref().unwrap_or("?");
        let value = || match &self.expected {
            Some(v) => format!("`{v}` ({op})"),
            None => op.to_string(),
        };
        let mut m = match self.kind {
            ErrorKind::NotAllocated => {
                "not allocated: no definition or use carries a location (`@REG` after each \
                 value); pass the allocated program second"
                    .to_string()
            }
            ErrorKind::MissingFunction => format!(
                "function `@{}` of the original is missing from the allocation",
                self.function
            ),
            ErrorKind::MissingBlock => format!(
                "block `{}` of the original is missing from the allocation",
                self.block
            ),
            ErrorKind::ExtraBlock => format!(
                "block `{}` is not in the original, and is no split edge (one predecessor, \
                 only added moves and a `jump`, on an edge of the original)",
                self.block
            ),
            ErrorKind::TerminatorMismatch => {
                "this terminator differs from the original's".to_string()
            }
            ErrorKind::PhiMismatch => "this phi differs from the original's".to_string(),
            ErrorKind::MissingOp => format!(
                "this operation of the original is missing from block `{}` of the \
                 allocation, or changed there",
                self.block
            ),
            ErrorKind::UnexpectedOp => "an operation the original does not have (an \
                 allocation may add only parallel_copy, swap, spill, reload and remat)"
                .to_string(),
            ErrorKind::OpOrder => format!("an operation moved across one it depends on: it belongs {expected}"),
            ErrorKind::UnknownValue => format!("`{found}` is not a value of the original"),
            ErrorKind::MissingLocation => format!("{} has no location", value()),
            ErrorKind::NotARegister => format!("{} must be in a register, not {loc}", value()),
            ErrorKind::WrongClass => {
                format!("{} is in {loc}, not a register of its class", value())
            }
            ErrorKind::WrongSize => format!("{} is in {loc}, not of its size", value()),
            ErrorKind::OutOfRange => {
                format!("{loc} ({op}) is beyond the registers (or lanes) of its class")
            }
            ErrorKind::OverBudget => format!("{loc} ({op}) is beyond the register budget"),
            ErrorKind::Misaligned => format!("{} is in {loc}, which is misaligned", value()),
            ErrorKind::FixedViolated => format!("{op} is in {loc} but is fixed to {expected}"),
            ErrorKind::TiedViolated => {
                format!("{op} is in {loc} but is tied to an operand in {expected}")
            }
            ErrorKind::EarlyClobberOverlap => {
                format!("early-clobber {op} in {loc} shares a register with a use")
            }
            ErrorKind::DefsOverlap => {
                format!("{op} in {loc} overlaps an earlier def of this operation")
            }
            ErrorKind::LengthMismatch => {
                format!("{op}: {loc} and its other side differ in length or kind")
            }
            ErrorKind::SwapUnsupported => {
                format!("the class of {loc} has no swap instruction")
            }
            ErrorKind::OverlappingDestinations => format!(
                "{op} writes {loc}, which an earlier move of this parallel copy writes too \
                 (destinations must be disjoint)"
            ),
            ErrorKind::OverlappingSwap => {
                format!("the two locations of this swap overlap ({loc})")
            }
            ErrorKind::NotRematerialisable => {
                format!("remat of `{expected}` that does not recompute it")
            }
            ErrorKind::PerLaneInUniform => format!(
                "{op} puts the per-lane value `{found}` into {loc}, which holds one value per \
                 wave"
            ),
            ErrorKind::UniformInPerLane => format!(
                "{op} puts the uniform value `{found}` into the per-lane register {loc} (lanes \
                 masked off keep an older value)"
            ),
            ErrorKind::CrossClassMove => format!(
                "{op} moves into {loc}, a register of another class (only a class spill and \
                 its reload may)"
            ),
            ErrorKind::ClassSpillMismatch => {
                format!("{op}: a class spill converts {expected}, but {loc} holds {found}")
            }
            ErrorKind::UniformFromScratch => format!(
                "{op} loads {loc}, which holds one value per wave, from a slot written per \
                 lane: lanes masked off at that store hold another value"
            ),
            ErrorKind::WrongValue => {
                format!("{} is read from {loc}, which holds `{found}` here", value())
            }
            ErrorKind::UndefinedValue => format!("{} is read from {loc}, which {found}", value()),
            ErrorKind::PinnedMoved => format!(
                "{op} reads {loc}, which holds the pinned value `{found}` (a pinned value stays \
                 where it was defined while it lives: nothing may copy, swap, spill or reload it)"
            ),
            ErrorKind::PinnedPhi => format!(
                "this phi takes the pinned value `{found}` but is not `pinned` itself (the value is \
                 still in flight through it)"
            ),
        };
        if let Some(note) = &self.note {
            m.push_str(&format!(" ({note})"));
        }
        m
    }

    /// Where, in words: `@f, block entry, instruction 2`.
    pub fn place(&self) -> String {
        let mut s = format!("@{}", self.function);
        if !self.block.is_empty() {
            s.push_str(&format!(", block {}", self.block));
        }
        match self.point {
            Point::Block => {}
            Point::Phi(i) => s.push_str(&format!(", phi {i}")),
            Point::Inst(i) => s.push_str(&format!(", instruction {i}")),
            Point::Term => s.push_str(", terminator"),
            Point::Edge(_) => s.push_str(", end of block"),
        }
        if self.side == Side::Original {
            s.push_str(" of the original");
        }
        s
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.line, self.col)?;
        }
        write!(
            f,
            "{} [{}] ({})",
            self.message(),
            self.kind.code(),
            self.place()
        )
    }
}

impl std::error::Error for VerifyError {}
