//! Random targets: a built-in one by name, or a `generic` target with one to three random
//! classes (units, uniform, aligned and no-swap flags), built through [`Target::generic`]
//! so that it prints and parses back like a hand-written one. Once the functions are
//! built, a class without a swap may be given another class of the same uniformity to
//! break its copy cycles through (`:via=`, as AMD AGPRs go through a VGPR): drawn last,
//! so that the functions of a given input do not depend on it.

use arbitrary::{Result, Unstructured};

use super::{percent, GenConfig};
use crate::target::{ClassId, Target};

const CLASS_NAMES: &[&str] = &["s", "v", "p", "a", "q"];

/// One built-in target per layout of register classes (sizes, alignment, swaps, spill
/// paths). The other built-ins repeat one of these layouts with another occupancy table,
/// which allocation reads only to turn an asked occupancy into a budget; a fixed list
/// keeps every seed's program the same as targets are added.
const LAYOUTS: &[&str] = &[
    "gfx9",
    "gfx90a",
    "gfx942",
    "gfx10-w32",
    "gfx10-w64",
    "gfx11-w32",
    "gfx11-w64",
    "sm_80",
    "sm_90",
    "gen9",
];
const FLAGS: &[&str] = &["uniform", "aligned", "noswap"];

/// A built-in or generic target, as `cfg.generic_target` says.
pub(super) fn random_target(u: &mut Unstructured, cfg: &GenConfig) -> Result<Target> {
    if percent(u, cfg.generic_target)? {
        let spec = generic_spec(u)?;
        Target::generic(&spec).map_err(|_| arbitrary::Error::IncorrectFormat)
    } else {
        let name = u.choose(LAYOUTS)?;
        Target::builtin(name).map_err(|_| arbitrary::Error::IncorrectFormat)
    }
}

/// `v=37:aligned s=12 ...`: distinct class names, 4 to 128 units each.
fn generic_spec(u: &mut Unstructured) -> Result<String> {
    let mut names: Vec<&str> = CLASS_NAMES.to_vec();
    let count = u.int_in_range(1..=3)?;
    let mut words = Vec::with_capacity(count);
    for _ in 0..count {
        let name = names.remove(u.choose_index(names.len())?);
        let units: u16 = if u.ratio(1, 4)? {
            u.int_in_range(4..=12)?
        } else {
            u.int_in_range(16..=128)?
        };
        let mut word = format!("{name}={units}");
        for flag in FLAGS {
            if u.ratio(1, 3)? {
                word.push(':');
                word.push_str(flag);
            }
        }
        words.push(word);
    }
    Ok(words.join(" "))
}

/// `target` with `:via=` added to `cfg.copy_via` percent of its generic classes without a
/// swap that have another class of the same uniformity. No byte is drawn at 0.
pub(super) fn with_copy_via(
    u: &mut Unstructured,
    cfg: &GenConfig,
    target: Target,
) -> Result<Target> {
    let Some(spec) = target.spec.as_deref().filter(|_| cfg.copy_via > 0) else {
        return Ok(target);
    };
    let mut words: Vec<String> = spec.split_whitespace().map(str::to_string).collect();
    for c in target.class_ids() {
        let class = target.class(c);
        let vias: Vec<ClassId> = target
            .class_ids()
            .filter(|&t| t != c && target.class(t).uniform == class.uniform)
            .collect();
        if !class.has_swap && !vias.is_empty() && percent(u, cfg.copy_via)? {
            let via = target.class(*u.choose(&vias)?);
            words[c.index()].push_str(&format!(":via={}", via.name));
        }
    }
    Target::generic(&words.join(" ")).map_err(|_| arbitrary::Error::IncorrectFormat)
}
