//! Random programs that are valid by construction, for fuzzing and property tests.
//!
//! Modelled on regalloc2's fuzzing generator (`regalloc2/src/fuzzing/func.rs`): instead of
//! generating text and filtering invalid programs, the generator builds a function so that
//! every rule of `docs/FORMAT.md` holds as it goes.
//!
//! - `cfg` builds structured control flow recursively (sequence, if/else, if/then,
//!   loops with breaks and continues), so the dominator tree and the joins of divergent
//!   branches are known by construction; unreachable blocks are a separate region.
//! - `ssa` fills blocks with operations whose uses pick from the values available along
//!   the dominator tree (a scoped stack) and adds constraints (tuples, fixed registers,
//!   tied and early-clobber defs, `prefer`, remat constants, effects, high-pressure
//!   regions) within a per-instruction register budget, so allocation stays feasible.
//! - `phis` places phis with one argument per predecessor (swap cycles on back edges).
//! - `renumber` numbers values in text order, as the parser does.
//! - `knobs` holds [`GenConfig`]; `targets` picks a built-in or random generic target.
//! - `features` names what a program exercises ([`features`], [`FeatureSet`]).
//! - `shrink` exposes [`GenProgram`] as a `quickcheck::Arbitrary` whose shrinks stay valid.
//!
//! Everything is driven by [`arbitrary::Unstructured`], so a fuzzer's bytes or a seed
//! ([`generate_from_seed`]) reproduce a program exactly.

mod cfg;
mod features;
mod knobs;
mod phis;
mod renumber;
mod shrink;
mod ssa;
mod targets;
#[cfg(test)]
mod tests;

pub use features::{features, Feature, FeatureSet};
pub use knobs::GenConfig;
pub use shrink::GenProgram;

use arbitrary::{Result, Unstructured};

use crate::program::{
    Block, BlockData, Function, Location, Pos, Program, Terminator, Value, ValueData,
};
use crate::target::{ClassId, Target};

/// Bytes behind [`generate_from_seed`]: enough that default-sized programs never run dry.
const SEED_BYTES: usize = 1 << 15;

/// A random valid program drawn from `u`.
pub fn generate(u: &mut Unstructured, cfg: &GenConfig) -> Result<Program> {
    let target = targets::random_target(u, cfg)?;
    let count = u.int_in_range(1..=cfg.max_functions.max(1))?;
    let mut functions = Vec::with_capacity(count);
    for i in 0..count {
        functions.push(FnBuilder::new(u, cfg, &target, format!("f{i}")).build()?);
    }
    let target = targets::with_copy_via(u, cfg, target)?;
    Ok(Program { target, functions })
}

/// The program of `seed`: bytes from splitmix64 fed to [`generate`].
pub fn generate_from_seed(seed: u64, cfg: &GenConfig) -> Program {
    let bytes = splitmix_bytes(seed, SEED_BYTES);
    let mut u = Unstructured::new(&bytes);
    generate(&mut u, cfg).expect("generation fails only on an empty choice, which it never makes")
}

/// Vigna's splitmix64, little-endian, `len` bytes.
pub fn splitmix_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// Whether two register ranges share a unit.
fn overlaps(a: Location, b: Location) -> bool {
    match (a, b) {
        (
            Location::Reg { class, first, len },
            Location::Reg {
                class: c2,
                first: f2,
                len: l2,
            },
        ) => class == c2 && first < f2 + l2 && f2 < first + len,
        _ => false,
    }
}

/// True with probability `p` percent.
fn percent(u: &mut Unstructured, p: u8) -> Result<bool> {
    Ok(u.int_in_range(0..=99u8)? < p)
}

/// An enclosing loop while its body is built.
struct LoopCtx {
    header: Block,
    exit: Block,
    /// Blocks that branch to `exit`, with the values available at their end.
    exits: Vec<(Block, Vec<Value>)>,
    /// Blocks that branch back to the header (continues), with their available values.
    continues: Vec<(Block, Vec<Value>)>,
    /// If-arms open when the loop began.
    arms_at_entry: usize,
    /// Whether an unstructured break may make `exit` the join of a divergent branch.
    divergent_exit: bool,
}

/// One function under construction; [`cfg`] and [`ssa`] add the methods.
struct FnBuilder<'a, 'u> {
    u: &'a mut Unstructured<'u>,
    cfg: &'a GenConfig,
    target: &'a Target,
    f: Function,
    /// Values whose definitions dominate the current point, innermost last.
    avail: Vec<Value>,
    loops: Vec<LoopCtx>,
    /// If-arms being built, outermost first: whether each one's branch is divergent.
    arms: Vec<bool>,
}

impl<'a, 'u> FnBuilder<'a, 'u> {
    fn new(
        u: &'a mut Unstructured<'u>,
        cfg: &'a GenConfig,
        target: &'a Target,
        name: String,
    ) -> Self {
        let f = Function {
            name,
            pos: Pos::default(),
            blocks: Vec::new(),
            values: Vec::new(),
        };
        FnBuilder {
            u,
            cfg,
            target,
            f,
            avail: Vec::new(),
            loops: Vec::new(),
            arms: Vec::new(),
        }
    }

    fn new_block(&mut self) -> Block {
        let id = Block(self.f.blocks.len() as u32);
        self.f.blocks.push(BlockData {
            name: format!("b{}", id.0),
            pos: Pos::default(),
            freq: None,
            phis: Vec::new(),
            insts: Vec::new(),
            term: Terminator::Ret {
                uses: Vec::new(),
                pos: Pos::default(),
            },
        });
        id
    }

    fn blocks_left(&self) -> usize {
        self.cfg.max_blocks.saturating_sub(self.f.blocks.len())
    }

    fn new_value(&mut self, class: ClassId, size: u16) -> Value {
        let id = Value(self.f.values.len() as u32);
        self.f.values.push(ValueData {
            name: compact_str::format_compact!("v{}", id.0),
            class,
            size,
            pos: Pos::default(),
        });
        id
    }

    fn percent(&mut self, p: u8) -> Result<bool> {
        percent(self.u, p)
    }
}
