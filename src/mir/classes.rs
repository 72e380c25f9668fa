//! LLVM AMDGPU register classes and physical registers as chromatic classes and locations.
//!
//! The classes of `SIRegisterInfo.td`, by their printed names: `sgpr_*`/`sreg_*` are the
//! uniform class `s`, `vgpr_*`/`vreg_*` the per-lane class `v`, `agpr_*`/`areg_*` the AGPR
//! class `a` (gfx90a, gfx942); the number in the name is bits (32 per unit). A lane mask
//! (`vreg_1`, the divergent booleans before lowering) is an SGPR value of the wave size.
//! Variants that exclude registers (`_xm0`, `_xexec`, `_xexec_hi`) only remove special
//! registers chromatic does not allocate, and `_align2` is the target's VGPR alignment
//! (even tuples on gfx90a+, `docs/TARGETS.md`). The target comes from the IR's
//! `"target-cpu"`: gfx90a and gfx942 are their own targets, gfx9xx else `gfx9`, gfx10xx
//! `gfx10-w32`/`-w64` and gfx11xx `gfx11-w32`/`-w64` by wave size (wave32 unless the
//! features say `+wavefrontsize64`).

use super::MirError;
use crate::program::{Location, Pos};
use crate::target::{ClassId, Target};

/// The target of a `"target-cpu"` and whether it runs wave64.
pub fn target_of(cpu: &str, wave64_feature: bool, pos: Pos) -> Result<(Target, u16), MirError> {
    let w = |wave64: bool| if wave64 { "w64" } else { "w32" };
    let (name, wave) = match cpu {
        "gfx90a" | "gfx942" => (cpu.to_string(), 64),
        c if c.starts_with("gfx9") => ("gfx9".to_string(), 64),
        c if c.starts_with("gfx10") => (format!("gfx10-{}", w(wave64_feature)), 32),
        c if c.starts_with("gfx11") => (format!("gfx11-{}", w(wave64_feature)), 32),
        _ => {
            return Err(MirError {
                pos,
                message: format!("unsupported target-cpu `{cpu}` (gfx9, gfx10 and gfx11 are)"),
            })
        }
    };
    let wave = if wave64_feature { 64 } else { wave };
    let target = Target::builtin(&name).map_err(|e| MirError {
        pos,
        message: e.to_string(),
    })?;
    Ok((target, wave))
}

/// The chromatic class and size (32-bit units) of an LLVM register class.
pub fn class_of(target: &Target, wave: u16, class: &str) -> Option<(ClassId, u16)> {
    if class == "vreg_1" {
        return Some((target.class_by_name("s")?, wave / 32));
    }
    let base = class.split("_x").next().unwrap_or(class);
    let base = base.strip_suffix("_align2").unwrap_or(base);
    let (family, bits) = base.split_once('_')?;
    let name = match family {
        "sgpr" | "sreg" => "s",
        "vgpr" | "vreg" => "v",
        "agpr" | "areg" => "a",
        _ => return None,
    };
    let bits: u16 = bits.parse().ok()?;
    let c = target.class_by_name(name)?;
    let size = bits / 32;
    (bits.is_multiple_of(32) && target.class(c).allows_size(size)).then_some((c, size))
}

/// The registers a physical register name covers: `sgpr2`, `vgpr0`, `agpr3`, or a tuple
/// `sgpr0_sgpr1`. `None` for special registers (`exec`, `vcc`, `scc`, `m0`, …).
pub fn phys_location(target: &Target, name: &str) -> Option<Location> {
    let parts: Vec<(&str, u16)> = name
        .split('_')
        .map(|p| {
            let digits = p.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let family = &p[..p.len() - digits.len()];
            digits.parse().ok().map(|n| (family, n))
        })
        .collect::<Option<_>>()?;
    let (family, first) = *parts.first()?;
    let consecutive = parts
        .iter()
        .zip(first..)
        .all(|(&(f, n), want)| f == family && n == want);
    let class = match family {
        "sgpr" => "s",
        "vgpr" => "v",
        "agpr" => "a",
        _ => return None,
    };
    consecutive.then_some(Location::Reg {
        class: target.class_by_name(class)?,
        first,
        len: parts.len() as u16,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_map_by_family_and_bits() {
        let (t, wave) = target_of("gfx942", false, Pos::default()).unwrap();
        let name = |c: Option<(ClassId, u16)>| c.map(|(c, n)| (t.class(c).name.clone(), n));
        let got = |s| name(class_of(&t, wave, s));
        assert_eq!(got("sreg_32_xm0_xexec"), Some(("s".into(), 1)));
        assert_eq!(got("vreg_64_align2"), Some(("v".into(), 2)));
        assert_eq!(got("areg_512_align2"), Some(("a".into(), 16)));
        assert_eq!(got("sgpr_224"), Some(("s".into(), 7)));
        assert_eq!(got("vreg_1"), Some(("s".into(), 2)));
        assert_eq!(got("vreg_1"), Some(("s".into(), 2)));
        assert_eq!(got("ccr_sgpr_64"), None);
        let (w32, wave) = target_of("gfx1100", false, Pos::default()).unwrap();
        assert_eq!(w32.name, "gfx11-w32");
        assert_eq!(class_of(&w32, wave, "vreg_1").map(|c| c.1), Some(1));
        assert_eq!(class_of(&w32, wave, "agpr_32"), None);
    }

    #[test]
    fn physical_registers() {
        let (t, _) = target_of("gfx942", false, Pos::default()).unwrap();
        let s = t.class_by_name("s").unwrap();
        assert_eq!(
            phys_location(&t, "sgpr0_sgpr1"),
            Some(Location::Reg {
                class: s,
                first: 0,
                len: 2
            })
        );
        assert_eq!(phys_location(&t, "vcc"), None);
        assert_eq!(phys_location(&t, "sgpr0_sgpr2"), None);
        assert_eq!(phys_location(&t, "sgpr_null"), None);
    }
}
