//! regalloc2's fuzz-generator functions (`regalloc2::fuzzing::func::Func`, the
//! distribution regalloc2 tests `ion` and `fastalloc` on) as `.chr` programs, so that
//! chromatic runs on regalloc2's own test distribution.
//!
//! A function is generated from splitmix64 bytes of a seed with the options of
//! regalloc2's `ion` fuzz target (reused inputs, fixed registers, clobbers,
//! call-site-like defs), at one of several [`Size`]s, and read back through the
//! `Function` trait. The translation is one to one:
//!
//! - the three classes `Int`, `Float`, `Vector` are `r`, `f`, `v` of a generic target
//!   with 63 registers each: regalloc2's fuzz machine allocates registers 0–31 and keeps
//!   32–62 as fixed stack slots (registers only fixed operands name), so every fixed
//!   register the generator writes exists in the translation;
//! - `vN` is `%vN`; block parameters are phis, branch arguments their arguments;
//! - operands: uses in order; a def is early-clobber (`early(D)`) when regalloc2 writes
//!   it early, tied (`tied(D=U)`) when it reuses input U, `fixed(...)` when fixed; `Any`
//!   and `Reg` operands are both plain register operands (chromatic operands are
//!   registers);
//! - a clobber is what regalloc2 models it as, a late def of a fresh value fixed to the
//!   clobbered register (`%kI_J`), never read;
//! - a fixed non-allocatable operand (register 63, no value) names nothing to allocate
//!   and is left out;
//! - a block with two successors needs a condition to branch on: `%cN = cond` just
//!   before `branch uniform %cN, ...` (regalloc2's generated branches read nothing).
//!
//! What the generator never writes (late uses, operands constrained to the stack or to
//! the low registers) is an error.

use regalloc2::fuzzing::func::{Func, Options};
use regalloc2::{
    Block, Function as _, Inst, Operand, OperandConstraint, OperandKind, OperandPos, RegClass,
};
use std::fmt::Write as _;

/// Generator sizes: regalloc2's own, and larger ones. The larger sizes take blocks of
/// 20–30 values: the generator gives up on a function when a branch argument finds no
/// value of its parameter's class at hand, which blocks of regalloc2's 5–15 values make
/// near certain in a function of hundreds of blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Size {
    /// regalloc2's fuzz options: 1–100 blocks of 5–15 values.
    Default,
    /// 40–60 blocks (about 1,000 instructions).
    K1,
    /// 200–250 blocks (about 5,000 instructions).
    K5,
    /// 1,000–1,100 blocks (about 25,000 instructions).
    K25,
    /// 1–20 blocks of 150–250 values each: many values live at once.
    Pressure,
}

impl Size {
    pub const ALL: [Size; 5] = [Size::Default, Size::K1, Size::K5, Size::K25, Size::Pressure];

    pub fn name(self) -> &'static str {
        match self {
            Size::Default => "default",
            Size::K1 => "1k",
            Size::K5 => "5k",
            Size::K25 => "25k",
            Size::Pressure => "pressure",
        }
    }

    fn options(self) -> Options {
        let ion = Options {
            reused_inputs: true,
            fixed_regs: true,
            fixed_nonallocatable: true,
            clobbers: true,
            reftypes: true,
            callsite_ish_constraints: true,
            ..Options::DEFAULT
        };
        match self {
            Size::Default => ion,
            Size::K1 => Options {
                num_blocks: 40..=60,
                num_vregs_per_block: 20..=30,
                ..ion
            },
            Size::K5 => Options {
                num_blocks: 200..=250,
                num_vregs_per_block: 20..=30,
                ..ion
            },
            Size::K25 => Options {
                num_blocks: 1000..=1100,
                num_vregs_per_block: 20..=30,
                ..ion
            },
            Size::Pressure => Options {
                num_blocks: 1..=20,
                num_vregs_per_block: 150..=250,
                ..ion
            },
        }
    }

    /// Enough bytes that the generator never runs short (it takes the smallest choice
    /// when it does).
    fn bytes(self) -> usize {
        let blocks = *self.options().num_blocks.end();
        let values = *self.options().num_vregs_per_block.end();
        blocks * values * 64
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        Size::ALL
            .into_iter()
            .find(|z| z.name() == s)
            .ok_or_else(|| format!("`{s}`: expected one of default, 1k, 5k, 25k, pressure"))
    }
}

/// The generator's function for `seed` at `size`, or `None` when the generator gives up
/// on these bytes (it does when a branch argument of a parameter's class is not
/// available).
pub fn generate(seed: u64, size: Size) -> Option<Func> {
    from_bytes(&crate::gen::splitmix_bytes(seed, size.bytes()), size)
}

/// The generator's function for `data` (a fuzzer's bytes) at `size`, or `None` when the
/// generator gives up on them.
pub fn from_bytes(data: &[u8], size: Size) -> Option<Func> {
    let mut u = arbitrary::Unstructured::new(data);
    Func::arbitrary_with_options(&mut u, &size.options()).ok()
}

/// The `.chr` text of `func`, named `@name`, with a first comment line saying where it
/// came from.
pub fn to_chr(func: &Func, name: &str, origin: &str) -> Result<String, String> {
    let mut out = format!("; {origin}\ntarget generic r=63 f=63 v=63\n\nfunc @{name} {{\n");
    for b in 0..func.num_blocks() {
        block(func, Block::new(b), &mut out)?;
    }
    out.push_str("}\n");
    Ok(out)
}

fn class_name(c: RegClass) -> &'static str {
    match c {
        RegClass::Int => "r",
        RegClass::Float => "f",
        RegClass::Vector => "v",
    }
}

fn block(func: &Func, b: Block, out: &mut String) -> Result<(), String> {
    let _ = writeln!(out, "b{}:", b.index());
    for (i, p) in func.block_params(b).iter().enumerate() {
        let args: Vec<String> = func
            .block_preds(b)
            .iter()
            .map(|&pred| {
                let last = func.block_insns(pred).last();
                let succ = func.block_succs(pred).iter().position(|&s| s == b);
                let arg = func.branch_blockparams(pred, last, succ.expect("an edge"))[i];
                format!("[b{}: %v{}]", pred.index(), arg.vreg())
            })
            .collect();
        let _ = writeln!(
            out,
            "  %v{}:{}1 = phi {}",
            p.vreg(),
            class_name(p.class()),
            args.join(", ")
        );
    }
    for inst in func.block_insns(b).iter() {
        if func.is_branch(inst) {
            terminator(func, b, out)?;
        } else if func.is_ret(inst) {
            out.push_str("  ret\n");
        } else {
            operation(func, inst, out)?;
        }
    }
    Ok(())
}

fn terminator(func: &Func, b: Block, out: &mut String) -> Result<(), String> {
    match func.block_succs(b) {
        [s] => {
            let _ = writeln!(out, "  jump b{}", s.index());
        }
        [s, t] => {
            let c = b.index();
            let _ = writeln!(out, "  %c{c}:r1 = cond");
            let _ = writeln!(
                out,
                "  branch uniform %c{c}, b{}, b{}",
                s.index(),
                t.index()
            );
        }
        succs => {
            return Err(format!(
                "block b{} branches to {} blocks; `.chr` branches to at most two",
                b.index(),
                succs.len()
            ))
        }
    }
    Ok(())
}

/// One generated instruction: defs (operand defs, then clobbers), uses, attributes.
fn operation(func: &Func, inst: Inst, out: &mut String) -> Result<(), String> {
    let operands: Vec<Operand> = func
        .inst_operands(inst)
        .iter()
        .copied()
        .filter(|o| o.as_fixed_nonallocatable().is_none())
        .collect();
    let uses: Vec<&Operand> = operands
        .iter()
        .filter(|o| o.kind() == OperandKind::Use)
        .collect();
    let mut defs = Vec::new();
    let mut attrs = Vec::new();
    for o in operands.iter().filter(|o| o.kind() == OperandKind::Def) {
        let d = defs.len();
        if o.pos() == OperandPos::Early {
            attrs.push(format!("early({d})"));
        }
        let mut def = format!("%v{}:{}1", o.vreg().vreg(), class_name(o.class()));
        match o.constraint() {
            OperandConstraint::FixedReg(r) => def += &fixed(r),
            OperandConstraint::Reuse(i) => {
                let reused = &operands[i];
                let u = uses.iter().position(|&x| x == reused);
                let u = u.ok_or_else(|| format!("inst{}: reuses a def", inst.index()))?;
                attrs.push(format!("tied({d}={u})"));
            }
            OperandConstraint::Stack | OperandConstraint::Limit(_) => return Err(restricted(inst)),
            OperandConstraint::Any | OperandConstraint::Reg => {}
        }
        defs.push(def);
    }
    for (k, r) in func.inst_clobbers(inst).into_iter().enumerate() {
        let (i, class) = (inst.index(), class_name(r.class()));
        defs.push(format!("%k{i}_{k}:{class}1{}", fixed(r)));
    }
    let mut reads = Vec::new();
    for u in &uses {
        if u.pos() == OperandPos::Late {
            return Err(format!("inst{}: a late use", inst.index()));
        }
        let mut text = format!("%v{}", u.vreg().vreg());
        match u.constraint() {
            OperandConstraint::FixedReg(r) => text += &fixed(r),
            OperandConstraint::Stack | OperandConstraint::Limit(_) => return Err(restricted(inst)),
            _ => {}
        }
        reads.push(text);
    }
    let _ = write!(out, "  {} = op", defs.join(", "));
    if !reads.is_empty() {
        let _ = write!(out, " {}", reads.join(", "));
    }
    for a in attrs {
        let _ = write!(out, " {a}");
    }
    out.push('\n');
    Ok(())
}

fn fixed(r: regalloc2::PReg) -> String {
    format!(" fixed({}{})", class_name(r.class()), r.hw_enc())
}

fn restricted(inst: Inst) -> String {
    format!(
        "inst{}: an operand constrained to the stack or to low registers",
        inst.index()
    )
}
