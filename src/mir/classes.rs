//! LLVM AMDGPU register classes and physical registers as chromatic classes and locations.
//!
//! The classes of `SIRegisterInfo.td`, by their printed names: `sgpr_*`/`sreg_*` are the
//! uniform class `s`, `vgpr_*`/`vreg_*` the per-lane class `v`, `agpr_*`/`areg_*` the AGPR
//! class `a` (gfx90a, gfx942); the number in the name is bits (32 per unit). A lane mask
//! (`vreg_1`, the divergent booleans before lowering) is an SGPR value of the wave size.
//! Variants that exclude registers (`_xm0`, `_xexec`, `_xexec_hi`) only remove special
//! registers chromatic does not allocate, and `_align2` is the target's VGPR alignment
//! (even tuples on gfx90a+, `docs/TARGETS.md`). The target comes from the IR's
//! `"target-cpu"`, by the register file the processor has (`register_file_model`):
//! gfx90a, gfx940–gfx942 and gfx950 have the unified VGPR/AGPR file, gfx908 a separate
//! AGPR file, other gfx9xx are `gfx9`; RDNA processors take `gfx10`, `gfx10-3`, `gfx11`,
//! `gfx1102` or `gfx12` with their wave size (wave32 unless the features say
//! `+wavefrontsize64`).

use super::MirError;
use crate::program::{Location, Pos};
use crate::target::{ClassId, Target};

/// The target of a `"target-cpu"` and whether it runs wave64.
pub fn target_of(cpu: &str, wave64_feature: bool, pos: Pos) -> Result<(Target, u16), MirError> {
    let Some(model) = register_file_model(cpu) else {
        return Err(MirError {
            pos,
            message: format!(
                "unsupported target-cpu `{cpu}` (gfx9 with gfx908, gfx90a, gfx940–gfx942 and \
                 gfx950, gfx10, gfx11, gfx1200 and gfx1201 are)"
            ),
        });
    };
    let (name, wave) = match model.strip_suffix("-w") {
        Some(rdna) => {
            let wave = if wave64_feature { 64 } else { 32 };
            (format!("{rdna}-w{wave}"), wave)
        }
        None => (model.to_string(), 64),
    };
    let target = Target::builtin(&name).map_err(|e| MirError {
        pos,
        message: e.to_string(),
    })?;
    Ok((target, wave))
}

/// The built-in target whose register file a processor has (LLVM's `GCNProcessors.td`
/// and `AMDGPUBaseInfo.cpp`, `docs/TARGETS.md`); RDNA models end in `-w`, completed by
/// the wave size. LLVM's generic processors take the model every member can run.
fn register_file_model(cpu: &str) -> Option<&'static str> {
    Some(match cpu {
        "gfx908" => "gfx908",
        "gfx90a" => "gfx90a",
        "gfx940" | "gfx941" | "gfx942" | "gfx9-4-generic" => "gfx942",
        "gfx950" => "gfx950",
        c if c.starts_with("gfx9") => "gfx9",
        "gfx10-1-generic" => "gfx10-w",
        "gfx10-3-generic" => "gfx10-3-w",
        c if c.starts_with("gfx101") => "gfx10-w",
        c if c.starts_with("gfx103") => "gfx10-3-w",
        "gfx1100" | "gfx1101" | "gfx1151" => "gfx11-w",
        c if c.starts_with("gfx11") => "gfx1102-w",
        "gfx1200" | "gfx1201" | "gfx12-generic" => "gfx12-w",
        _ => return None,
    })
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
    fn processors_take_the_register_file_they_have() {
        let name = |cpu, wave64| target_of(cpu, wave64, Pos::default()).map(|(t, w)| (t.name, w));
        let expect = [
            ("gfx900", false, "gfx9", 64),
            ("gfx908", false, "gfx908", 64),
            ("gfx90a", false, "gfx90a", 64),
            ("gfx940", false, "gfx942", 64),
            ("gfx9-4-generic", false, "gfx942", 64),
            ("gfx950", false, "gfx950", 64),
            ("gfx1010", false, "gfx10-w32", 32),
            ("gfx1030", false, "gfx10-3-w32", 32),
            ("gfx1036", true, "gfx10-3-w64", 64),
            ("gfx1100", false, "gfx11-w32", 32),
            ("gfx1151", true, "gfx11-w64", 64),
            ("gfx1102", false, "gfx1102-w32", 32),
            ("gfx1103", false, "gfx1102-w32", 32),
            ("gfx11-generic", false, "gfx1102-w32", 32),
            ("gfx1201", false, "gfx12-w32", 32),
        ];
        for (cpu, wave64, target, wave) in expect {
            assert_eq!(
                name(cpu, wave64).unwrap(),
                (target.to_string(), wave),
                "{cpu}"
            );
        }
        for cpu in ["gfx803", "gfx1250", "sm_90"] {
            let e = name(cpu, false).unwrap_err();
            assert!(
                e.message
                    .starts_with(&format!("unsupported target-cpu `{cpu}`")),
                "{e}"
            );
        }
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
