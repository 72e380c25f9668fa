//! The independent verifier: checks an allocated program against its original by its own
//! dataflow, trusting nothing the allocator says. Uses only the root crate's program model,
//! parser and printer; its control-flow facts ([`cfg`]) are computed here.
//!
//! # The checker ([`verify`])
//!
//! In the spirit of CompCert's validator (Rideau & Leroy, CC 2010) and regalloc2's checker,
//! without their holes (NOTES §4):
//!
//! 1. *Structure* (`structure.rs`): same blocks (plus split-edge blocks), same terminators
//!    and phis, every original operation exactly once, unchanged; only parallel copies,
//!    swaps, spills, reloads and remats added. Order is a rule of its own.
//! 2. *Constraints* (`constraints.rs`): class, size, range, budget, alignment of every
//!    operand location; fixed, tied, early-clobber; shape of artefacts, moves between
//!    classes only as class spills (below).
//! 3. *Dataflow* (`dataflow.rs`): a forward analysis over location units.
//!
//! ## The lattice
//!
//! A *unit* is one register of a class (`v5`), one memory slot (`m3`), or one lane of a
//! register (`v7.l2`). The state at a point maps each unit the function names to a label:
//!
//! ```text
//!   ⊤ (unreached)
//!   (value, part)   part i of an original SSA value, 0 ≤ i < size
//!   Conflict  ⊥     different values on two paths
//!   PerLane   ⊥     a wave slot last written per lane (below)
//!   Undefined ⊥     never written on some path
//! ```
//!
//! with meet `x ⊓ x = x`, `⊤ ⊓ x = x`, two different values giving Conflict, and otherwise
//! the lower of the two in the order value > Conflict > PerLane > Undefined. The entry holds
//! Undefined everywhere. Transfer: an op checks that each use location holds `(v, 0..size)` in
//! order, then writes `(d, i)` to each def unit; a parallel copy (and a swap, spill, reload)
//! reads every source before writing, copying labels unit by unit, so a copy from ⊥ gives ⊥
//! (regalloc2 kept the destination's old value), and a label a move may not carry into its
//! destination (below) gives ⊥ there; a remat writes its value's labels if the
//! original defines it by a `remat` op. On an edge into block `b`, a unit of a phi's
//! location holding the edge's argument part i becomes `(phi, i)`, anything else ⊥; every
//! phi argument is also checked at the end of its predecessor. Labels carry no value from
//! the allocator (move annotations are ignored), so the analysis is exact per SSA value and
//! sound for any number of iterations.
//!
//! Units written regardless of the exec mask take their meet over the *linear* CFG (the
//! order the wave runs blocks in), the others over the *logical* CFG (the paths a lane
//! takes): uniform registers and lanes are linear, per-lane registers logical. A slot unit
//! is a *wave slot*, linear, when some move writes it in every lane — a store from a
//! uniform register (whole-wave, `docs/FORMAT.md`), or any store in a function without
//! divergent branches, whose exec mask stays full — and a *lane slot*, logical, otherwise.
//! A wave slot takes a value label only from such a whole-wave write; any other write
//! leaves it PerLane. So a wave slot's value label holds in every lane, as a uniform
//! register's does, and no lane slot is ever written behind a lane's back. In a function
//! with a divergent branch a uniform register or lane may load only a wave slot not PerLane
//! (`UniformFromScratch`): a lane slot's label is what each lane last wrote itself, for a
//! uniform value possibly an older instance than the wave's (a lane that left a divergent
//! loop early). A phi's location may be a slot (or lanes, for a uniform class): a memory
//! phi, checked like any other.
//!
//! ## Moves and classes
//!
//! A move keeps its value in its class, except a *class spill*: a `spill` from a register
//! of a class into a register of a class it spills to (`SpillTarget::Class`: PTX predicates
//! into `r`, Intel flags into `g`) and the `reload` back. Any other register-to-register
//! move or swap between classes is `CrossClassMove` (a local rule). A class spill converts
//! (`selp`/`setp`, a flag compare), which is defined on whole values only: its source must
//! hold every part, in order, of one value of the spilled class whose size is the move's
//! width (`ClassSpillMismatch`). No move puts a per-lane value in a uniform register or
//! lanes (`PerLaneInUniform`), nor a uniform value in a per-lane register
//! (`UniformInPerLane`): written under an exec mask, such a register holds in each lane the
//! instance that lane last saw, and a move back into a uniform register reads the first
//! active lane's, an older one where that lane left a divergent loop early. A uniform value
//! leaves its registers only for lanes (a lane is a uniform unit) or a slot, under the slot
//! rules above. Both lane-kind rules look at labels, not locations, so a reload from a slot
//! is judged by what the slot holds.
//!
//! # The interpreter ([`interp`]) and the mutation engine ([`mutate`])
//!
//! An executable SIMT semantics in which every op is an uninterpreted function, run on
//! both programs to compare traces; and random wrong allocations to measure the checker.

pub mod cfg;
pub mod check;
mod constraints;
mod dataflow;
pub mod error;
pub mod interp;
pub mod mutate;
mod sink;
mod structure;
mod unit;

pub use check::{verify, verify_program};
pub use error::{ErrorKind, Point, VerifyError};
