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
//! - WMMA `*_twoaddr*` (gfx11): modifiers before each source, as VOP3 → 5.

/// The explicit-use index the definition of `opcode` is tied to, if any.
pub fn tied_operand(opcode: &str) -> Option<u16> {
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
    None
}

#[cfg(test)]
mod tests {
    use super::tied_operand;

    #[test]
    fn table() {
        assert_eq!(tied_operand("V_FMAC_F32_e32"), Some(2));
        assert_eq!(tied_operand("V_FMAC_F32_e64"), Some(5));
        assert_eq!(
            tied_operand("V_MFMA_F32_32X32X8F16_mac_vgprcd_e64"),
            Some(2)
        );
        assert_eq!(tied_operand("V_MFMA_F32_32X32X8F16_e64"), None);
        assert_eq!(tied_operand("V_WMMA_F32_16X16X16_F16_twoaddr_w32"), Some(5));
        assert_eq!(tied_operand("V_FMA_F32_e64"), None);
    }
}
