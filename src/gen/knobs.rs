//! Knobs of the program generator: sizes, probabilities and which hazards to produce.
//!
//! Probabilities are percentages (0–100) so that a config reads like a recipe. The
//! defaults give programs of a few dozen blocks with every feature reachable; the
//! coverage test in `gen::tests` checks that 10,000 seeds hit every feature.

/// What the generator may produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Functions per program (at least one).
    pub max_functions: usize,
    /// Blocks per function, unreachable ones included.
    pub max_blocks: usize,
    /// Nesting depth of structured control flow (ifs and loops).
    pub max_depth: usize,
    /// Random operations per fill of a block (pressure regions come on top).
    pub max_insts_per_block: usize,
    /// Values a high-pressure region defines before using them all.
    pub max_values_live: usize,
    /// Percent of pieces that are high-pressure regions.
    pub pressure: u8,
    /// Whether values may be tuples (sizes 2/3/4/8/16 where the class allows them).
    pub tuples: bool,
    /// Percent of defs and uses fixed to a register.
    pub fixed: u8,
    /// Percent of branches that are divergent.
    pub divergence: u8,
    /// Percent of loop breaks and continues that are divergent, and may sit inside a
    /// divergent arm (with a divergent latch looping back past a non-empty else-side):
    /// divergence no structurizer left, which the allocator rejects for functions with
    /// uniform values and the verifier must still follow. 0 by default.
    pub unstructured: u8,
    /// Sometimes fix two operands (or defs) of one instruction to overlapping registers.
    /// Allocation of such a program is infeasible: an allocator must report an error.
    pub conflicting_fixed: bool,
    /// Percent of functions that get a few unreachable blocks.
    pub unreachable: u8,
    /// Percent of blocks annotated with a frequency.
    pub freq: u8,
    /// Percent of programs on a `generic` target with random classes (else a built-in).
    pub generic_target: u8,
    /// Percent of a generic target's classes without a swap that break their copy cycles
    /// through another class (`:via=`, as AMD AGPRs go through a VGPR), where the target
    /// has one of the same uniformity. Drawn after the functions, so it changes only the
    /// target line of a given input; 0 by default so that the costs of the seeds tests
    /// name stay as they were, and the fuzz targets turn it on.
    pub copy_via: u8,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_functions: 2,
            max_blocks: 32,
            max_depth: 4,
            max_insts_per_block: 6,
            max_values_live: 24,
            pressure: 10,
            tuples: true,
            fixed: 8,
            divergence: 50,
            unstructured: 0,
            conflicting_fixed: false,
            unreachable: 20,
            freq: 10,
            generic_target: 30,
            copy_via: 0,
        }
    }
}
