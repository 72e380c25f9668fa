//! Tied operands of AMDGPU instructions, which MIR does not print.
//!
//! LLVM states them in the instruction definitions (`Constraints = "$vdst = $src2"` in
//! `VOP2Instructions.td`, `VOP3PInstructions.td`): the accumulating forms write their
//! result over their addend. The table below gives the index of that operand among an
//! instruction's explicit uses, by operand layout:
//! - VOP2 `_e32` (`V_FMAC_*`, `V_MAC_*`, `V_DOT*C_*`, `V_PK_FMAC_*`): `src0, src1, src2` → 2;
//! - VOP3 `_e64` of the same: `src0_modifiers, src0, src1_modifiers, src1,
//!   src2_modifiers, src2, …` → 5;
//! - MFMA `*_mac_e64`, `*_mac_vgprcd_e64` (gfx90a+): `src0, src1, src2, cbsz, abid, blgp` → 2;
//! - WMMA `*_twoaddr*` (gfx11): modifiers before each source, as VOP3 → 5;
//! - DPP `*_dpp` (`Constraints = "$vdst = $old"`, `VOP2Instructions.td`, `VOP1Instructions.td`):
//!   the lanes the DPP controls disable keep `old`, the first explicit use → 0;
//! - `V_PERMLANE16_B32_e64`, `V_PERMLANEX16_B32_e64` (`$vdst = $vdst_in`,
//!   `VOP3Instructions.td`): `src0_modifiers, src0, src1_modifiers, src1, src2_modifiers,
//!   src2, vdst_in, op_sel` → 6;
//! - `V_WRITELANE_B32` (`$vdst = $vdst_in`): `src0, src1, vdst_in` → 2;
//! - `V_CVT_PK_FP8_F32_e64`, `V_CVT_PK_BF8_F32_e64` (gfx940+, `$vdst = $vdst_in`: the
//!   half not written is kept): `src0_modifiers, src0, src1_modifiers, src1, vdst_in,
//!   op_sel` → 4;
//! - loads into half a register (`DS_READ_*_D16*`, `GLOBAL_LOAD_*_D16*`,
//!   `BUFFER_LOAD_*_D16*`, `FLAT_LOAD_*_D16*`, `SCRATCH_LOAD_*_D16*`: `$vdst = $vdst_in`,
//!   `DSInstructions.td`, `FLATInstructions.td`, `BUFInstructions.td`): the kept half is
//!   their last explicit operand.

/// The explicit-use index the definition of `opcode` is tied to, if any, for an
/// instruction with `uses` explicit uses.
pub fn tied_operand(opcode: &str, uses: usize) -> Option<u16> {
    let half_load = [
        "DS_READ_",
        "GLOBAL_LOAD_",
        "BUFFER_LOAD_",
        "FLAT_LOAD_",
        "SCRATCH_LOAD_",
    ]
    .iter()
    .any(|p| opcode.starts_with(p))
        && opcode.contains("_D16");
    if half_load {
        return uses.checked_sub(1).and_then(|i| u16::try_from(i).ok());
    }
    let accumulating = [
        "V_FMAC_",
        "V_MAC_",
        "V_PK_FMAC_",
        "V_DOT2C_",
        "V_DOT4C_",
        "V_DOT8C_",
    ]
    .iter()
    .any(|p| opcode.starts_with(p));
    if accumulating {
        return if opcode.ends_with("_e32") {
            Some(2)
        } else if opcode.ends_with("_e64") {
            Some(5)
        } else {
            None
        };
    }
    if opcode.starts_with("V_MFMA_")
        && (opcode.ends_with("_mac_e64") || opcode.ends_with("_mac_vgprcd_e64"))
    {
        return Some(2);
    }
    if opcode.starts_with("V_WMMA_") && opcode.contains("_twoaddr") {
        return Some(5);
    }
    if opcode.ends_with("_dpp") {
        return Some(0);
    }
    match opcode {
        "V_PERMLANE16_B32_e64" | "V_PERMLANEX16_B32_e64" => Some(6),
        "V_WRITELANE_B32" => Some(2),
        "V_CVT_PK_FP8_F32_e64" | "V_CVT_PK_BF8_F32_e64" => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::tied_operand;

    #[test]
    fn table() {
        assert_eq!(tied_operand("V_FMAC_F32_e32", 6), Some(2));
        assert_eq!(tied_operand("V_FMAC_F32_e64", 6), Some(5));
        assert_eq!(
            tied_operand("V_MFMA_F32_32X32X8F16_mac_vgprcd_e64", 6),
            Some(2)
        );
        assert_eq!(tied_operand("V_MFMA_F32_32X32X8F16_e64", 6), None);
        assert_eq!(
            tied_operand("V_WMMA_F32_16X16X16_F16_twoaddr_w32", 6),
            Some(5)
        );
        assert_eq!(tied_operand("V_FMA_F32_e64", 6), None);
        assert_eq!(tied_operand("V_MOV_B32_dpp", 6), Some(0));
        assert_eq!(tied_operand("V_PERMLANEX16_B32_e64", 8), Some(6));
        assert_eq!(tied_operand("DS_READ_U16_D16_HI", 4), Some(3));
    }
}
