//! What a PTX instruction does to its register operands, from NVIDIA's PTX ISA (version
//! 9.0): which operands it defines, which it reads, which vector operands the hardware needs
//! in consecutive registers, its scheduling effect, and how it ends a block.
//!
//! The rule is the ISA's own: operand 0 is the destination (`d`) and the rest are sources,
//! except for instructions that have no destination (stores, reductions, control flow,
//! barriers and fences, prefetches, asynchronous copies, …, listed in [`NO_DESTINATION`]
//! and [`has_destination`]); an operand written `[…]` is an address, whose base register is
//! read even in a store. An opcode this module does not know follows the same rule, so
//! nothing is dropped. `docs/PTX.md` cites the ISA sections.

use super::ast::{Operand, Stmt};
use crate::program::Effect;

/// Opcodes (first component) with no destination operand: every register they name is read.
pub const NO_DESTINATION: &[&str] = &[
    "st",
    "stmatrix",
    "red",
    "bra",
    "brx",
    "ret",
    "exit",
    "trap",
    "call",
    "membar",
    "fence",
    "prefetch",
    "prefetchu",
    "cp",
    "nanosleep",
    "pmevent",
    "brkpt",
    "stackrestore",
    "setmaxnreg",
    "griddepcontrol",
    "sust",
    "sured",
    "discard",
    "applypriority",
    "tensormap",
];

/// Whether operand 0 of `stmt` is a destination.
pub fn has_destination(stmt: &Stmt) -> bool {
    let base = stmt.base();
    if NO_DESTINATION.contains(&base) {
        return false;
    }
    let first_is_written = matches!(
        stmt.operands.first(),
        Some(Operand::Reg(_) | Operand::Vector(..) | Operand::Pair(..))
    );
    first_is_written
        && match base {
            // `bar.sync`/`barrier.sync` name a barrier; `bar.red` returns a reduction.
            "bar" | "barrier" => stmt.has("red"),
            // `wgmma.mma_async` writes its accumulator (read-modify-write, see
            // [`is_read_modify_write`]); fence, commit_group and wait_group write nothing.
            "wgmma" => stmt.has("mma_async"),
            "mbarrier" => !["init", "inval", "expect_tx", "complete_tx"]
                .iter()
                .any(|m| stmt.has(m)),
            "multimem" => stmt.has("ld_reduce"),
            _ => true,
        }
}

/// Whether operand 0 is read as well as written: the accumulator of `wgmma.mma_async`
/// (§9.7.15.5: `d = A*B + d`, read when scale-d is true, and the same registers in and out).
pub fn is_read_modify_write(stmt: &Stmt) -> bool {
    stmt.base() == "wgmma" && stmt.has("mma_async")
}

/// `wgmma.mma_async`: asynchronous, its registers stay in flight until a `wgmma.wait_group`.
pub fn is_async_mma(stmt: &Stmt) -> bool {
    is_read_modify_write(stmt)
}

/// `wgmma.wait_group N`: `Some(N)`.
pub fn wait_group(stmt: &Stmt) -> Option<i64> {
    if stmt.base() != "wgmma" || !stmt.has("wait_group") {
        return None;
    }
    match stmt.operands.first() {
        Some(Operand::Imm(n, ..)) => Some(*n),
        _ => None,
    }
}

/// Opcode families whose vector operands are register tuples in SASS (consecutive, aligned
/// registers: `LDG.128`, `STS.64`, `HMMA`'s fragments, `LDSM`'s destination, `HGMMA`'s
/// accumulator). Elsewhere (`mov` packing, `cvt.f16x2`) vector elements are separate values.
const TUPLE_FAMILIES: &[&str] = &[
    "ld", "ldu", "st", "atom", "red", "ldmatrix", "stmatrix", "mma", "wgmma", "tex", "tld4",
    "suld", "sust", "multimem",
];

/// Whether a vector operand of `stmt` whose elements are `elem_bits` wide is a tuple: a
/// family that reads or writes consecutive registers, elements of at least 32 bits (narrower
/// ones are packed into 32-bit registers and unpacked by the hardware), two or more of them.
pub fn vector_is_tuple(stmt: &Stmt, elem_bits: u16, elems: usize) -> bool {
    TUPLE_FAMILIES.contains(&stmt.base()) && elem_bits >= 32 && elems >= 2
}

/// `mma.sync d, a, b, c`: the accumulator output prefers the register of its input `c`
/// (operand 3): SASS `HMMA` is usually issued with `d` and `c` the same registers.
pub fn prefers_accumulator(stmt: &Stmt) -> Option<(usize, usize)> {
    (stmt.base() == "mma" && stmt.operands.len() >= 4).then_some((0, 3))
}

/// The scheduling effect (what a scheduler may not move across). `mbarrier` waits and
/// arrivals order memory like `bar.sync` (§9.7.13.15), so they are barriers; extended-precision
/// arithmetic (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.lo.cc`, `madc`, §9.7.2) passes
/// the carry flag from one instruction to the next, so a carry chain keeps its order.
pub fn effect(stmt: &Stmt) -> Effect {
    let base = stmt.base();
    if stmt.has("cc") || ["addc", "subc", "madc"].contains(&base) {
        return Effect::Carry;
    }
    match base {
        "st" | "stmatrix" | "red" | "atom" | "cp" | "sust" | "sured" | "call" | "multimem"
        | "tensormap" | "prefetch" | "prefetchu" | "discard" | "applypriority" => {
            Effect::WritesMemory
        }
        "ld" | "ldu" | "ldmatrix" | "tex" | "tld4" | "suld" | "suq" | "txq" => Effect::ReadsMemory,
        "bar" | "barrier" | "mbarrier" | "membar" | "fence" | "wgmma" | "griddepcontrol"
        | "setmaxnreg" | "shfl" | "vote" | "match" | "redux" | "elect" | "activemask"
        | "nanosleep" => Effect::Barrier,
        _ => Effect::None,
    }
}

/// How a statement ends (or does not end) a basic block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next statement.
    Next,
    /// `bra L` / `bra.uni L`.
    Branch { uniform: bool },
    /// `ret`, `exit`, `trap`: the thread stops.
    Exit,
}

pub fn flow(stmt: &Stmt) -> Flow {
    match stmt.base() {
        "bra" => Flow::Branch {
            uniform: stmt.has("uni"),
        },
        "ret" | "exit" | "trap" => Flow::Exit,
        _ => Flow::Next,
    }
}

/// Special registers whose value lives in the constant bank on sm_80/sm_90 (the launch
/// dimensions: `ntid`, `nctaid`), so SASS reads them like a kernel parameter.
pub fn special_in_constant_bank(name: &str) -> bool {
    name.starts_with("%ntid") || name.starts_with("%nctaid")
}

/// Special registers that change while a thread runs (clocks, timers, counters, the warp
/// and SM ids, which preemption may change): never recomputed instead of kept.
pub fn special_is_volatile(name: &str) -> bool {
    [
        "%clock",
        "%globaltimer",
        "%pm",
        "%warpid",
        "%smid",
        "%nwarpid",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}
