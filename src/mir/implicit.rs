//! The fixed registers an instruction reads and writes outside the allocatable files:
//! `$scc`, `$vcc`, `$exec`, `$m0`, `$mode` (and any other physical register it names),
//! as [`RegAccess`]es of the program model, so a scheduler keeps the order they impose
//! and the verifier checks it.
//!
//! MIR lists them as operands: explicit (`$vcc = S_AND_B64 …`, `S_CSELECT_B32 …, implicit
//! $scc`) or implicit (`implicit-def dead $scc`, `implicit $exec`). A `dead` def is a
//! clobber: it writes a value nothing reads, so it only has to stay out of the ranges
//! between another write and its reads. LLVM does not track liveness of the registers it
//! reserves (`SIRegisterInfo::getReservedRegs`: `$exec`, `$mode`, `$m0`, `$flat_scr`) and prints
//! their defs `dead` too (`SI_IF … implicit-def dead $exec`), so a def of a reserved
//! register is always a write. Halves name their whole register (`$vcc_lo` is `vcc`,
//! `$exec_lo` is `exec`): two accesses to one register conflict if they may overlap.

use super::ast::{InstAst, OperandAst, OperandKind};
use crate::program::{RegAccess, RegAccessKind};

/// Registers LLVM reserves (`SIRegisterInfo::getReservedRegs`), whose `dead` flag it
/// does not track.
const RESERVED: &[&str] = &["exec", "mode", "m0", "flat_scr"];

/// The fixed-register accesses of `inst`, sorted and distinct.
pub fn accesses(inst: &InstAst) -> Vec<RegAccess> {
    let mut out: Vec<RegAccess> = inst
        .defs
        .iter()
        .chain(&inst.operands)
        .filter_map(|o| access(o, inst.defs.iter().any(|d| std::ptr::eq(d, o))))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The access of one operand (`def` when it is left of `=`), if it names a physical
/// register.
fn access(o: &OperandAst, def: bool) -> Option<RegAccess> {
    let OperandKind::Phys(name) = &o.kind else {
        return None;
    };
    let reg = whole_register(name);
    let kind = if !(def || o.is_def()) {
        RegAccessKind::Read
    } else if o.flags.dead && !RESERVED.contains(&reg) {
        RegAccessKind::Clobber
    } else {
        RegAccessKind::Write
    };
    Some(RegAccess {
        reg: reg.to_string(),
        kind,
    })
}

/// The register a (half) register name belongs to.
fn whole_register(name: &str) -> &str {
    name.strip_suffix("_lo")
        .or_else(|| name.strip_suffix("_hi"))
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::RegAccessKind::{Clobber, Read, Write};

    fn accesses_of(line: &str) -> Vec<(String, RegAccessKind)> {
        let src = format!(
            "--- |\n  attributes #0 = {{ \"target-cpu\"=\"gfx942\" }}\n...\n---\nname: f\nbody: |\n  bb.0:\n    {line}\n    S_ENDPGM 0\n...\n"
        );
        let module = crate::mir::parse::parse_module(&src).unwrap_or_else(|e| panic!("{e}"));
        let inst = &module.functions[0].blocks[0].insts[0];
        accesses(inst)
            .into_iter()
            .map(|a| (a.reg, a.kind))
            .collect()
    }

    #[test]
    fn dead_defs_clobber_and_reads_read() {
        assert_eq!(
            accesses_of("%1:sreg_32 = S_ADD_I32 %0:sreg_32, 1, implicit-def dead $scc"),
            vec![("scc".into(), Clobber)]
        );
        assert_eq!(
            accesses_of("%2:sreg_32 = S_CSELECT_B32 1, 0, implicit $scc"),
            vec![("scc".into(), Read)]
        );
        assert_eq!(
            accesses_of("S_CMP_EQ_U32 %0:sreg_32, 0, implicit-def $scc"),
            vec![("scc".into(), Write)]
        );
    }

    #[test]
    fn halves_name_their_register_and_reserved_defs_always_write() {
        assert_eq!(
            accesses_of("$vcc_lo = S_AND_B32 $exec_lo, %0:sreg_32, implicit-def dead $scc"),
            vec![
                ("exec".into(), Read),
                ("scc".into(), Clobber),
                ("vcc".into(), Write)
            ]
        );
        assert_eq!(
            accesses_of("%3:sreg_64 = SI_IF %0:sreg_64, %bb.0, implicit-def dead $exec, implicit-def dead $scc, implicit $exec"),
            vec![
                ("exec".into(), Read),
                ("exec".into(), Write),
                ("scc".into(), Clobber)
            ]
        );
    }
}
