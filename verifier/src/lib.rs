//! The independent verifier: checks an allocated program against its original by its own
//! dataflow, trusting nothing the allocator says. Uses only the root crate's program model,
//! parser and printer; its control-flow facts ([`cfg`]) are computed here.
//!
//! # The checker ([`verify`])
//!
//! In the spirit of CompCert's validator (Rideau & Leroy, CC 2010) and regalloc2's checker,
//! without their holes (regalloc2's checker lets a move from an unknown location
//! keep the destination's old value, barely checks reused inputs, and misses early defs
//! overlapping early uses and overlapping registers):
//!
//! 1. *Structure* (`structure.rs`): same blocks (plus split-edge blocks), same terminators
//!    and phis, every original operation exactly once, unchanged; only parallel copies,
//!    swaps, spills, reloads and remats added. Order is a rule of its own (`order.rs`):
//!    operations may be reordered within a block (a scheduler ran) as long as every
//!    dependence the verifier computes from the original holds.
//! 2. *Constraints* (`constraints.rs`): class, size, range, budget, alignment of every
//!    operand location; fixed, tied, early-clobber; shape of artefacts, moves between
//!    classes only as class spills (below), parallel copies with disjoint destinations,
//!    swaps of disjoint locations.
//! 3. *Dataflow* (`dataflow.rs`): a forward analysis over location units; its fixpoint
//!    revisits a block through the block's summary (`summary.rs`).
//!
//! ## The lattice
//!
//! A *unit* is one register of a class (`v5`), one memory slot (`m3`), or one lane of a
//! register (`v7.l2`). The state at a point maps each *key* (`keys.rs`: a register unit, a
//! lane, the lane view or the wave view of a slot unit) to a label:
//!
//! ```text
//!   ⊤ (unreached)
//!   (value, part)   part i of an original SSA value, 0 ≤ i < size
//!   Clobbered ⊥     overwritten through a register or lane it shares storage with
//!   Skipped   ⊥     overwritten while the lanes reading it waited elsewhere
//!   Conflict  ⊥     different values on two paths
//!   PerLane   ⊥     a wave view last written per lane (below)
//!   Undefined ⊥     never written on some path
//! ```
//!
//! with meet `x ⊓ x = x`, `⊤ ⊓ x = x`, two different values giving Conflict, and otherwise
//! the lower of the two in the order value > Clobbered > Skipped > Conflict > PerLane >
//! Undefined (any ⊥ fails a use alike; the order only picks the message). The entry holds
//! Undefined everywhere. Transfer: an op checks that each use location holds
//! `(v, 0..size)` in order, then writes `(d, i)` to each def unit; a parallel copy (and a
//! swap, spill, reload) reads every source before writing, copying labels unit by unit, so
//! a copy from ⊥ gives ⊥ (regalloc2 kept the destination's old value), and a label a move
//! may not carry into its destination (below) gives ⊥ there; a remat writes its value's
//! labels if the original defines it by a `remat` op, or by a pure op whose operands it
//! reads, in that op's block or in a block that block dominates (`fresh.rs`), or if it is
//! a phi of constants it recomputes as a select on the condition of the branch that
//! decides the phi's edge, where the phi's block dominates (`select.rs`). A write to a register clobbers its
//! lanes, a write to a lane its register. At a block's entry every phi's location holds
//! the phi, and every phi argument is checked at the end of its predecessor (on each edge
//! of the CFG the phi's class follows). Phis of one block with the same class, size and
//! arguments are one value (`check.rs`), so they may share a location. Labels carry no
//! value from the allocator (move annotations are ignored), so the analysis is exact per
//! SSA value and sound for any number of iterations.
//!
//! Keys written regardless of the exec mask take their meet over the *linear* CFG
//! (`cfg.rs`: the order the wave runs blocks, for any divergent shape), the others over
//! the *logical* CFG (the paths a lane takes): uniform registers, lanes and slots' wave
//! views are linear, per-lane registers and slots' lane views logical. A slot unit's lane
//! view is what every lane reaching a point holds; in a function with a divergent branch,
//! a slot unit some whole-wave store writes (from a uniform register, `docs/FORMAT.md`) also
//! has a wave view, the value every lane holds, which a per-lane store leaves PerLane.
//! Where the wave view holds a value, the lane view takes it. On a logical edge whose
//! lanes wait while a walk runs (`keys.rs`), the per-lane keys that walk writes regardless
//! of the exec mask (a slot's lane view by a whole-wave store, a register by a write to one
//! of its lanes) are Skipped. In a function with a divergent branch a uniform register or
//! lane may load a slot only through a wave view not PerLane (`UniformFromScratch`): a lane
//! view's label is what each lane last wrote itself, for a uniform value possibly an older
//! instance than the wave's (a lane that left a divergent loop early). A phi's location may
//! be a slot (or lanes, for a uniform class): a memory phi, checked like any other.
//!
//! ## Moves and classes
//!
//! A move keeps its value in its class, except a *class spill*: a `spill` from a register
//! of a class into a register of a class it spills to (`SpillTarget::Class`: PTX predicates
//! into `r`, Intel flags into `g`) and the `reload` back, and a bitwise copy between a
//! class and its copy-temporary class (`RegClass::copy_temp`, AMD AGPR ↔ VGPR). Any other
//! register-to-register move or swap between classes is `CrossClassMove` (a local rule).
//! A class spill converts
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
mod fresh;
pub mod interp;
mod keys;
pub mod mutate;
mod order;
mod select;
mod sink;
mod structure;
mod summary;
mod unit;

pub use check::{verify, verify_program};
pub use error::{ErrorKind, Point, Side, VerifyError};
