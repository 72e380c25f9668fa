//! The canonical printer of the `.chr` format: `print(parse(print(p))) == print(p)`.
//!
//! Canonical form: `target` line, a blank line, functions separated by blank lines, block
//! labels at column 0, instructions indented by two spaces, `, ` between operands,
//! attributes in the order tied, prefer, early, pinned, remat, effect. Comments are not kept.

use crate::program::*;
use crate::target::Target;
use std::fmt::Write;

/// The whole program in canonical form.
pub fn print(p: &Program) -> String {
    let mut out = format!("target {}\n", p.target.header());
    for f in &p.functions {
        out.push('\n');
        print_function(&mut out, &p.target, f);
    }
    out
}

/// A location as written in the text: `v4`, `v[4:7]`, `m3`, `m[3:4]`, `v7.l5`, `v7.l[4:5]`.
pub fn location(t: &Target, loc: Location) -> String {
    let range = |prefix: &str, first: u32, len: u16| {
        if len == 1 {
            format!("{prefix}{first}")
        } else {
            format!("{prefix}[{first}:{}]", first + u32::from(len) - 1)
        }
    };
    match loc {
        Location::Reg { class, first, len } => range(&t.class(class).name, first.into(), len),
        Location::Slot { first, len } => range("m", first, len),
        Location::Lane {
            class,
            reg,
            first,
            len,
        } => {
            let reg = format!("{}{reg}.l", t.class(class).name);
            range(&reg, first.into(), len)
        }
    }
}

fn print_function(out: &mut String, t: &Target, f: &Function) {
    let _ = writeln!(out, "func @{} {{", f.name);
    for block in &f.blocks {
        match block.freq {
            Some(freq) => {
                let _ = writeln!(out, "{} freq={freq}:", block.name);
            }
            None => {
                let _ = writeln!(out, "{}:", block.name);
            }
        }
        let p = Printer { t, f };
        for phi in &block.phis {
            let _ = writeln!(out, "  {}", p.phi(phi));
        }
        for inst in &block.insts {
            let _ = writeln!(out, "  {}", p.inst(inst));
        }
        let _ = writeln!(out, "  {}", p.terminator(&block.term));
    }
    out.push_str("}\n");
}

struct Printer<'a> {
    t: &'a Target,
    f: &'a Function,
}

impl Printer<'_> {
    fn name(&self, v: Value) -> String {
        format!("%{}", self.f.value(v).name)
    }

    fn loc(&self, loc: Location) -> String {
        location(self.t, loc)
    }

    fn constraints(&self, fixed: Option<Location>, loc: Option<Location>) -> String {
        let mut s = String::new();
        if let Some(fixed) = fixed {
            let _ = write!(s, " fixed({})", self.loc(fixed));
        }
        if let Some(loc) = loc {
            let _ = write!(s, "@{}", self.loc(loc));
        }
        s
    }

    fn def(&self, d: &Def) -> String {
        let v = self.f.value(d.value);
        let class = &self.t.class(v.class).name;
        format!(
            "%{}:{class}{}{}",
            v.name,
            v.size,
            self.constraints(d.fixed, d.loc)
        )
    }

    fn use_(&self, u: &Use) -> String {
        format!("{}{}", self.name(u.value), self.constraints(u.fixed, u.loc))
    }

    fn phi(&self, phi: &Phi) -> String {
        let args: Vec<String> = phi
            .args
            .iter()
            .map(|a| format!("[{}: {}]", self.f.block(a.block).name, self.name(a.value)))
            .collect();
        let pinned = if phi.def.pinned { " pinned" } else { "" };
        format!("{} = phi {}{pinned}", self.def(&phi.def), args.join(", "))
    }

    fn moves(&self, moves: &[Move]) -> String {
        let parts: Vec<String> = moves
            .iter()
            .map(|m| {
                format!(
                    "{} <- {} {}",
                    self.loc(m.dst),
                    self.loc(m.src),
                    self.name(m.value)
                )
            })
            .collect();
        parts.join(", ")
    }

    fn inst(&self, inst: &Inst) -> String {
        match &inst.kind {
            InstKind::Op(op) => self.op(op),
            InstKind::ParallelCopy(moves) => format!("parallel_copy {}", self.moves(moves)),
            InstKind::Swap(a, b) => format!("swap {}, {}", self.loc(*a), self.loc(*b)),
            InstKind::Spill(m) => format!("spill {}", self.moves(std::slice::from_ref(m))),
            InstKind::Reload(m) => format!("reload {}", self.moves(std::slice::from_ref(m))),
            InstKind::Remat { dst, value } => {
                format!("remat {} <- {}", self.loc(*dst), self.name(*value))
            }
        }
    }

    fn op(&self, op: &Op) -> String {
        let mut s = String::new();
        if !op.defs.is_empty() {
            let defs: Vec<String> = op.defs.iter().map(|d| self.def(d)).collect();
            let _ = write!(s, "{} = ", defs.join(", "));
        }
        s.push_str(&op.opcode);
        let operands: Vec<String> = op
            .operands
            .iter()
            .map(|o| match o {
                Operand::Value(u) => self.use_(u),
                Operand::Imm(n) => n.to_string(),
            })
            .collect();
        if !operands.is_empty() {
            let _ = write!(s, " {}", operands.join(", "));
        }
        s.push_str(&attributes(op));
        s
    }

    fn terminator(&self, term: &Terminator) -> String {
        let label = |b: Block| self.f.block(b).name.clone();
        match term {
            Terminator::Jump { target, .. } => format!("jump {}", label(*target)),
            Terminator::Branch {
                kind,
                cond,
                then_block,
                else_block,
                ..
            } => {
                let kind = match kind {
                    BranchKind::Uniform => "uniform",
                    BranchKind::Divergent => "divergent",
                };
                format!(
                    "branch {kind} {}, {}, {}",
                    self.use_(cond),
                    label(*then_block),
                    label(*else_block)
                )
            }
            Terminator::Ret { uses, .. } => {
                let uses: Vec<String> = uses.iter().map(|u| self.use_(u)).collect();
                if uses.is_empty() {
                    "ret".into()
                } else {
                    format!("ret {}", uses.join(", "))
                }
            }
        }
    }
}

/// `tied(..) prefer(..) early(..) pinned(..) remat EFFECT`, each preceded by a space.
fn attributes(op: &Op) -> String {
    let mut s = String::new();
    let pair = |d: usize, u: u16| {
        if d == 0 {
            u.to_string()
        } else {
            format!("{d}={u}")
        }
    };
    for (d, def) in op.defs.iter().enumerate() {
        if let Some(u) = def.tied {
            let _ = write!(s, " tied({})", pair(d, u));
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if let Some(u) = def.prefer {
            let _ = write!(s, " prefer({})", pair(d, u));
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if def.early_clobber {
            s.push_str(&if d == 0 {
                " early".into()
            } else {
                format!(" early({d})")
            });
        }
    }
    for (d, def) in op.defs.iter().enumerate() {
        if def.pinned {
            s.push_str(&if d == 0 {
                " pinned".into()
            } else {
                format!(" pinned({d})")
            });
        }
    }
    if op.remat {
        s.push_str(" remat");
    }
    s.push_str(match op.effect {
        Effect::None => "",
        Effect::ReadsMemory => " reads",
        Effect::WritesMemory => " writes",
        Effect::Barrier => " barrier",
        Effect::Control => " control",
    });
    s
}
