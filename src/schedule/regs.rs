//! Dependences through fixed registers: the order an operation's [`RegAccess`]es impose
//! (AMD `$scc`, `$vcc`, `$exec`, `$m0`, `$mode`, read and written implicitly).
//!
//! Per register, the classic read/write dependences of list scheduling (Gibbons &
//! Muchnick 1986): a read follows the last write (true dependence); a write follows the
//! last write (output) and every read since it (anti). A *clobber* — a write nothing reads,
//! LLVM's `implicit-def dead` — needs less: it follows the last write and the reads since,
//! so it never lands between a write and its readers, and the next write follows it; two
//! clobbers with no write between them move freely past each other, so the many
//! `S_ADD_I32 …, implicit-def dead $scc` of a block are not chained. The verifier checks
//! the same rule by counting (`verifier/src/order.rs`).

use crate::program::{Op, RegAccessKind};
use rustc_hash::FxHashMap;

/// The accesses to each register seen so far in a forward pass over a block.
#[derive(Debug, Default)]
pub struct RegOrder<'o> {
    regs: FxHashMap<&'o str, Epoch>,
}

/// One register since its last write.
#[derive(Debug, Default)]
struct Epoch {
    last_write: Option<u32>,
    reads: Vec<u32>,
    clobbers: Vec<u32>,
}

impl<'o> RegOrder<'o> {
    /// Adds to `preds` what op `j` must follow through its fixed registers, and records
    /// its accesses.
    pub fn add(&mut self, op: &'o Op, j: u32, preds: &mut Vec<u32>) {
        for access in &op.regs {
            let epoch = self.regs.entry(access.reg.as_str()).or_default();
            preds.extend(epoch.last_write);
            match access.kind {
                RegAccessKind::Read => epoch.reads.push(j),
                RegAccessKind::Clobber => {
                    preds.extend(&epoch.reads);
                    epoch.clobbers.push(j);
                }
                RegAccessKind::Write => {
                    preds.append(&mut epoch.reads);
                    preds.append(&mut epoch.clobbers);
                    epoch.last_write = Some(j);
                }
            }
        }
        preds.retain(|&i| i != j);
    }
}

#[cfg(test)]
mod tests {
    use crate::schedule::deps::Deps;

    fn deps(body: &str) -> Deps {
        let text = format!("target gfx9\nfunc @f {{\nentry:\n{body}  ret\n}}\n");
        let p = crate::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        Deps::of_block(&p.functions[0].blocks[0]).expect("operations only")
    }

    #[test]
    fn reads_follow_their_write_and_the_next_write_follows_them() {
        let d = deps(
            "  s_cmp implicit_def(scc)\n  %a:s1 = s_cselect implicit(scc)\n  %b:s1 = s_cselect implicit(scc)\n  s_cmp implicit_def(scc)\n",
        );
        assert_eq!(d.preds, vec![vec![], vec![0], vec![0], vec![0, 1, 2]]);
    }

    #[test]
    fn clobbers_stay_out_of_a_write_and_its_reads_but_move_among_themselves() {
        let d = deps(
            "  %a:s1 = s_add clobber(scc)\n  %b:s1 = s_add clobber(scc)\n  s_cmp implicit_def(scc)\n  %c:s1 = s_cselect implicit(scc)\n  %d:s1 = s_add clobber(scc)\n",
        );
        assert_eq!(
            d.preds,
            vec![vec![], vec![], vec![0, 1], vec![2], vec![2, 3]]
        );
    }

    #[test]
    fn registers_apart_do_not_order() {
        let d = deps("  %a:v1 = v_add implicit(exec)\n  %b:v1 = v_mul implicit(exec)\n  s_cmp implicit_def(scc)\n");
        assert_eq!(d.preds, vec![Vec::<u32>::new(); 3]);
    }
}
