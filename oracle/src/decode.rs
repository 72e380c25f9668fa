//! An assignment (a first register per value) turned into an allocated function in the
//! format's terms (`docs/FORMAT.md`), so that a checker that trusts nothing can verify it:
//!
//! - every definition, use and phi gets its value's register;
//! - a use with a fixed register reads it, after a copy when the value sits elsewhere; a
//!   use tied to a definition in another register reads a copy made in the definition's
//!   register; these copies form one `parallel_copy` before the instruction (before the
//!   terminator, for its uses);
//! - a definition with a fixed register (its own, or its tied operand's) is written there
//!   and, when its value lives elsewhere, moved by one `parallel_copy` after the
//!   instruction;
//! - phis leave SSA as one `parallel_copy` per incoming edge that moves anything: at the
//!   end of the predecessor when it ends in a jump, else in a new block that splits the
//!   edge (Sreedhar et al.'s and Boissinot et al.'s out-of-SSA with parallel copies).

use chromatic::program::{
    Block, BlockData, Def, Function, Inst, InstKind, Location, Move, Op, Operand, Pos, Terminator,
    Use, Value,
};

/// Why an assignment cannot be written as an allocation.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("`%{0}` has no register")]
    Unassigned(String),
    #[error("block `{0}`: two copies before one instruction write overlapping registers")]
    OverlappingCopies(String),
}

/// `f` allocated with `first[v]` as the first register of every value `v`.
pub fn decode(f: &Function, first: &[Option<u16>]) -> Result<Function, DecodeError> {
    let mentioned = mentioned(f);
    let locs: Vec<Location> = f
        .value_ids()
        .map(|v| {
            let data = f.value(v);
            if !mentioned[v.index()] {
                return Ok(Location::Slot { first: 0, len: 0 });
            }
            let first = first
                .get(v.index())
                .copied()
                .flatten()
                .ok_or_else(|| DecodeError::Unassigned(data.name.to_string()))?;
            Ok(Location::Reg {
                class: data.class,
                first,
                len: data.size,
            })
        })
        .collect::<Result<_, DecodeError>>()?;
    let mut out = f.clone();
    for block in &mut out.blocks {
        locate_block(block, &locs)?;
    }
    edge_copies(&mut out, &locs);
    Ok(out)
}

/// Per value, whether the function defines or reads it (a value the spill model took out
/// of the program, a memory phi, is neither, and its location is never written).
fn mentioned(f: &Function) -> Vec<bool> {
    let seen: Vec<std::cell::Cell<bool>> = vec![std::cell::Cell::new(false); f.values.len()];
    let mut g = f.clone();
    g.map_values(|v| {
        seen[v.index()].set(true);
        v
    });
    seen.iter().map(std::cell::Cell::get).collect()
}

fn locate_block(block: &mut BlockData, locs: &[Location]) -> Result<(), DecodeError> {
    for phi in &mut block.phis {
        phi.def.loc = Some(locs[phi.def.value.index()]);
    }
    let mut insts = Vec::with_capacity(block.insts.len());
    for mut inst in std::mem::take(&mut block.insts) {
        let mut after = Vec::new();
        if let InstKind::Op(op) = &mut inst.kind {
            let written: Vec<Location> = op.defs.iter().map(|d| written(op, d, locs)).collect();
            let mut moves = Vec::new();
            for k in 0..op.operands.len() {
                let tied = op
                    .defs
                    .iter()
                    .zip(&written)
                    .find(|(d, _)| d.tied == Some(k as u16))
                    .map(|(_, &w)| w);
                if let Operand::Value(u) = &mut op.operands[k] {
                    read(u, tied, locs, &mut moves);
                }
            }
            for (d, &w) in op.defs.iter_mut().zip(&written) {
                let home = locs[d.value.index()];
                if w != home {
                    after.push(Move {
                        dst: home,
                        src: w,
                        value: d.value,
                    });
                }
                d.loc = Some(w);
            }
            push_copy(&mut insts, moves, &block.name)?;
        }
        insts.push(inst);
        push_copy(&mut insts, after, &block.name)?;
    }
    let mut moves = Vec::new();
    for u in block.term.uses_mut() {
        read(u, None, locs, &mut moves);
    }
    push_copy(&mut insts, moves, &block.name)?;
    block.insts = insts;
    Ok(())
}

/// Where definition `d` is written: its fixed register, or the fixed register of the
/// operand it is tied to, or its value's own register.
fn written(op: &Op, d: &Def, locs: &[Location]) -> Location {
    let home = locs[d.value.index()];
    let tied_fixed = d
        .tied
        .and_then(|t| op.operands.get(usize::from(t))?.as_use()?.fixed);
    d.fixed
        .or(tied_fixed)
        .filter(|w| w.reg_class() == home.reg_class())
        .unwrap_or(home)
}

/// Where `u` is read: its fixed register, the register of the definition tied to it, or
/// its own; a copy moves it there first.
fn read(u: &mut Use, tied: Option<Location>, locs: &[Location], moves: &mut Vec<Move>) {
    let home = locs[u.value.index()];
    let tied = tied.filter(|t| t.reg_class() == home.reg_class());
    let at = u.fixed.or(tied).unwrap_or(home);
    if at != home {
        let m = Move {
            dst: at,
            src: home,
            value: u.value,
        };
        if !moves.contains(&m) {
            moves.push(m);
        }
    }
    u.loc = Some(at);
}

fn push_copy(insts: &mut Vec<Inst>, moves: Vec<Move>, block: &str) -> Result<(), DecodeError> {
    if moves.is_empty() {
        return Ok(());
    }
    for (i, a) in moves.iter().enumerate() {
        if moves[i + 1..].iter().any(|b| overlap(a.dst, b.dst)) {
            return Err(DecodeError::OverlappingCopies(block.to_string()));
        }
    }
    insts.push(Inst {
        kind: InstKind::ParallelCopy(moves),
        pos: Pos::default(),
    });
    Ok(())
}

fn overlap(a: Location, b: Location) -> bool {
    match (a, b) {
        (
            Location::Reg {
                class: c,
                first: f,
                len: l,
            },
            Location::Reg {
                class: d,
                first: g,
                len: m,
            },
        ) => c == d && f < g + m && g < f + l,
        _ => a == b,
    }
}

/// The phi copies of every edge that moves something.
fn edge_copies(f: &mut Function, locs: &[Location]) {
    for s in f.block_ids().collect::<Vec<_>>() {
        let preds: Vec<Block> = f
            .block(s)
            .phis
            .first()
            .map_or(Vec::new(), |phi| phi.args.iter().map(|a| a.block).collect());
        for p in preds {
            let moves = phi_moves(f, s, p, locs);
            if moves.is_empty() {
                continue;
            }
            let copy = Inst {
                kind: InstKind::ParallelCopy(moves),
                pos: Pos::default(),
            };
            match f.block(p).term {
                Terminator::Jump { .. } => f.blocks[p.index()].insts.push(copy),
                _ => split(f, p, s).insts.push(copy),
            }
        }
    }
}

fn phi_moves(f: &Function, s: Block, p: Block, locs: &[Location]) -> Vec<Move> {
    let loc = |v: Value| locs[v.index()];
    f.block(s)
        .phis
        .iter()
        .filter_map(|phi| {
            let arg = phi.args.iter().find(|a| a.block == p)?.value;
            let dst = loc(phi.def.value);
            (dst != loc(arg)).then_some(Move {
                dst,
                src: loc(arg),
                value: arg,
            })
        })
        .collect()
}

/// A new block on the edge `p → s`, which `p` now branches to and `s`'s phis name.
fn split(f: &mut Function, p: Block, s: Block) -> &mut BlockData {
    let n = Block(f.blocks.len() as u32);
    let mut name = format!("{}.{}", f.block(p).name, f.block(s).name);
    while f.blocks.iter().any(|b| b.name == name) {
        name.push('_');
    }
    if let Terminator::Branch {
        then_block,
        else_block,
        ..
    } = &mut f.blocks[p.index()].term
    {
        for target in [then_block, else_block] {
            if *target == s {
                *target = n;
            }
        }
    }
    for phi in &mut f.blocks[s.index()].phis {
        for a in phi.args.iter_mut().filter(|a| a.block == p) {
            a.block = n;
        }
    }
    f.blocks.push(BlockData {
        name,
        pos: Pos::default(),
        freq: None,
        phis: Vec::new(),
        insts: Vec::new(),
        term: Terminator::Jump {
            target: s,
            pos: Pos::default(),
        },
    });
    let last = f.blocks.len() - 1;
    &mut f.blocks[last]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str, regs: &[(&str, u16)]) -> String {
        let p = chromatic::parse(text).expect("parses");
        let f = &p.functions[0];
        let first: Vec<Option<u16>> = f
            .value_ids()
            .map(|v| {
                let name = &f.value(v).name;
                regs.iter().find(|(n, _)| n == name).map(|&(_, r)| r)
            })
            .collect();
        let out = decode(f, &first).expect("decodes");
        chromatic::print(&chromatic::Program {
            target: p.target.clone(),
            functions: vec![out],
        })
    }

    #[test]
    fn a_fixed_use_elsewhere_is_copied_before_and_a_fixed_definition_after() {
        let text = decoded(
            "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %c:v1 fixed(v0) = mul %a fixed(v2)
  ret %c
}",
            &[("a", 1), ("c", 3)],
        );
        assert!(text.contains("parallel_copy v2 <- v1 %a\n  %c:v1 fixed(v0)@v0 = mul %a fixed(v2)@v2\n  parallel_copy v3 <- v0 %c"), "{text}");
    }

    #[test]
    fn a_phi_in_another_register_is_copied_on_a_split_edge() {
        let text = decoded(
            "target generic v=8
func @f {
b:
  %x:v1 = load 0 reads
  %p:v1 = cmp %x
  branch uniform %p, j, e
e:
  jump j
j:
  %y:v1 = phi [b: %x], [e: %x]
  ret %y
}",
            &[("x", 0), ("p", 1), ("y", 2)],
        );
        assert!(
            text.contains("b.j:\n  parallel_copy v2 <- v0 %x\n  jump j"),
            "{text}"
        );
        assert!(
            text.contains("e:\n  parallel_copy v2 <- v0 %x\n  jump j"),
            "{text}"
        );
    }
}
