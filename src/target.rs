//! Targets: register classes, tuple alignment, spill destinations, costs and occupancy.
//!
//! A target is data, not code: the allocator, verifier and oracle read it and never
//! special-case a GPU by name. Numbers and their sources are in `docs/TARGETS.md` (AMD
//! occupancy tables, NVIDIA register allocation granularity, Intel flag registers).
//!
//! [`Target::budget_for_occupancy`] inverts [`Target::occupancy`]: the largest registers
//! per class that still reach a number of waves or warps, in closed form from the same
//! tables (round down to the allocation granule; the SGPR table read backwards).

use std::fmt;

/// Index of a register class within its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassId(pub u8);

impl ClassId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// How a tuple of `size` units must be aligned in its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignRule {
    /// Any start register (AMD VGPR tuples, Intel GRF ranges).
    Stride1,
    /// Start register a multiple of the tuple size rounded up to a power of two, capped at
    /// `max` (AMD SGPR pairs 2-aligned and quads 4-aligned; NVIDIA 64-bit pairs even and
    /// 128-bit quads 4-aligned).
    Natural { max: u16 },
}

impl AlignRule {
    /// The required alignment of the first unit of a tuple of `size` units.
    pub fn alignment(self, size: u16) -> u16 {
        match self {
            AlignRule::Stride1 => 1,
            AlignRule::Natural { max } => size.next_power_of_two().min(max).max(1),
        }
    }
}

/// Where a spilled value of a class may be kept, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpillTarget {
    /// Scratch (local) memory slots.
    Memory,
    /// Lanes of a reserved register of a per-lane class: AMD SGPR → VGPR lanes
    /// (`v_writelane`/`v_readlane`), `lanes` slots per register (the wave size).
    Lanes { class: ClassId, lanes: u16 },
    /// A register of another class: PTX predicates into 32-bit registers (`selp`/`setp`),
    /// Intel flags into GRFs (a compare on reload).
    Class { class: ClassId },
}

/// One register class of a target.
#[derive(Clone, Debug, PartialEq)]
pub struct RegClass {
    /// Name used in the text format: values are typed `%x:v4`, locations printed `v[4:7]`.
    pub name: String,
    /// Number of allocatable units.
    pub units: u16,
    /// Uniform (one value per wave, follows the linear CFG) or per-lane (follows the logical CFG).
    pub uniform: bool,
    pub align: AlignRule,
    /// Tuple sizes a value of this class may have.
    pub sizes: Vec<u16>,
    /// Spill destinations in order of preference.
    pub spill: Vec<SpillTarget>,
    /// Whether the target can exchange two registers of this class in one instruction.
    pub has_swap: bool,
    /// A class into whose free register one unit of this class may be copied and back,
    /// bit for bit, while a copy cycle is broken (AMD AGPRs: a VGPR, by
    /// `v_accvgpr_read_b32` / `v_accvgpr_write_b32`). A class without a swap breaks
    /// cycles through a free unit of its own, then of this class, then memory.
    pub copy_temp: Option<ClassId>,
}

impl RegClass {
    pub fn allows_size(&self, size: u16) -> bool {
        self.sizes.contains(&size)
    }
}

/// Frequency-independent costs of the instructions that spilling adds, per unit moved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    pub mem_store: f64,
    pub mem_load: f64,
    pub lane_write: f64,
    pub lane_read: f64,
    pub class_move: f64,
    pub remat: f64,
    pub copy: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            mem_store: 8.0,
            mem_load: 8.0,
            lane_write: 1.0,
            lane_read: 1.0,
            class_move: 1.0,
            remat: 1.0,
            copy: 1.0,
        }
    }
}

/// How registers used limit the number of waves or warps in flight.
#[derive(Clone, Debug, PartialEq)]
pub enum Occupancy {
    /// No register-bound occupancy model.
    None,
    /// AMD: `waves = min(max_waves, physical / align(max(v, granule), granule))` for the
    /// per-lane class; the uniform class limits occupancy by `sgpr_table` when non-empty
    /// (GFX8/9: LLVM's table, ≤80 → 10, ≤88 → 9, ≤100 → 8, else 7). With an AGPR class
    /// `v` stands for what [`AgprFile`] says: `align(VGPRs, 4) + AGPRs` on the unified
    /// file, `max(VGPRs, AGPRs)` on gfx908's separate one.
    Amd {
        vgpr_class: ClassId,
        agpr_class: Option<(ClassId, AgprFile)>,
        physical: u32,
        granule: u32,
        max_waves: u32,
        sgpr_class: ClassId,
        sgpr_table: Vec<(u32, u32)>,
    },
    /// NVIDIA sm_70 to sm_120: registers allocated per warp in multiples of 256 (8 per
    /// thread) from 65536 per SM; `warps = min(max_warps, 4·⌊16384 / (⌈R/8⌉·8·32)⌋)`, where
    /// `max_warps` is 64 (sm_70, sm_80, sm_90, sm_100), 48 (sm_86, sm_120) or 32 (sm_75).
    Nvidia { class: ClassId, max_warps: u32 },
}

/// Where a wave's AGPRs live (LLVM `AMDGPUBaseInfo.cpp`, `getTotalNumVGPRs(has90AInsts,
/// NumAGPRs, NumVGPRs)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgprFile {
    /// gfx908: a file of their own, as large as the VGPRs'; occupancy reads the larger
    /// of the two counts.
    Separate,
    /// gfx90a and later: one file, the VGPRs rounded up to 4 and then the AGPRs.
    Unified,
}

/// Waves on GFX8/9 when the SGPRs used exceed every limit of the `sgpr_table`.
const SGPR_TABLE_FLOOR: u32 = 7;
/// NVIDIA: registers per SM partition (a quarter of the 65536 of an SM).
const NV_PARTITION_REGS: u32 = 16384;
/// NVIDIA: registers per thread are allocated in multiples of this.
const NV_GRANULE: u32 = 8;
/// NVIDIA: threads per warp.
const NV_WARP: u32 = 32;

/// Why no budget reaches an occupancy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    #[error("target `{0}` has no occupancy model; give a register budget instead")]
    NoModel(String),
    #[error("occupancy must be at least 1 {0}")]
    Zero(&'static str),
    #[error("target `{target}` runs at most {max} {unit}s; occupancy {asked} cannot be reached")]
    TooHigh {
        target: String,
        asked: u32,
        max: u32,
        unit: &'static str,
    },
}

/// A register file description.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// `gfx9`, `sm_90`, … or `generic` for a file-defined target.
    pub name: String,
    pub classes: Vec<RegClass>,
    pub occupancy: Occupancy,
    pub costs: Costs,
    /// For a file-defined target, the header text after `target generic`, kept so that
    /// printing reproduces it.
    pub spec: Option<String>,
}

/// Names of the built-in targets, in the order `--help` lists them. AMD targets are named
/// by register-file model, each standing for the processors `docs/TARGETS.md` lists
/// (`gfx10-3-w32`: gfx1030–gfx1036 in wave32); NVIDIA targets by the first architecture
/// of a model (`sm_86`: sm_86, sm_87 and sm_89, 48 warps per SM).
pub const BUILTIN_TARGETS: &[&str] = &[
    "gfx9",
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx10-w32",
    "gfx10-w64",
    "gfx10-3-w32",
    "gfx10-3-w64",
    "gfx11-w32",
    "gfx11-w64",
    "gfx1102-w32",
    "gfx1102-w64",
    "gfx12-w32",
    "gfx12-w64",
    "sm_70",
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_90",
    "sm_100",
    "sm_120",
    "gen9",
];

/// Why a target description was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("unknown target `{0}` (expected one of: {list}, generic)", list = BUILTIN_TARGETS.join(", "))]
    Unknown(String),
    #[error(
        "bad class description `{0}`: expected NAME=UNITS[:uniform][:aligned][:noswap][:via=CLASS]"
    )]
    BadClass(String),
    #[error("class `{0}` copies through `{1}`, which is {2}")]
    BadCopyTemp(String, String, &'static str),
    #[error("class name `{0}` is reserved or invalid (names are lowercase letters, not `m`)")]
    BadClassName(String),
    #[error("duplicate class `{0}`")]
    DuplicateClass(String),
    #[error("a generic target needs at least one class")]
    NoClasses,
    #[error("class `{0}` has {1} units; a class has 1 to 1024")]
    BadUnits(String, u32),
}

const TUPLE_SIZES: &[u16] = &[1, 2, 3, 4, 8, 16];
/// NVIDIA register tuples: 32-bit registers, 64-bit pairs and 128-bit quads.
const NV_TUPLE_SIZES: &[u16] = &[1, 2, 4];
/// AMD register tuples: LLVM's SGPR and VGPR classes of 32 to 256 bits, and 512.
const AMD_TUPLE_SIZES: &[u16] = &[1, 2, 3, 4, 5, 6, 7, 8, 16];

impl Target {
    /// A built-in target by name.
    pub fn builtin(name: &str) -> Result<Target, TargetError> {
        match name {
            "gfx9" => Ok(amd(name, 102, 64, 256, 4, 10, llvm_gfx9_sgpr_table())),
            "gfx908" => Ok(cdna1()),
            "gfx90a" | "gfx942" | "gfx950" => Ok(cdna(name)),
            "gfx10-w32" => Ok(amd(name, 106, 32, 1024, 8, 20, vec![])),
            "gfx10-w64" => Ok(amd(name, 106, 64, 512, 4, 20, vec![])),
            "gfx10-3-w32" | "gfx1102-w32" => Ok(amd(name, 106, 32, 1024, 16, 16, vec![])),
            "gfx10-3-w64" | "gfx1102-w64" => Ok(amd(name, 106, 64, 512, 8, 16, vec![])),
            "gfx11-w32" | "gfx12-w32" => Ok(amd(name, 106, 32, 1536, 24, 16, vec![])),
            "gfx11-w64" | "gfx12-w64" => Ok(amd(name, 106, 64, 768, 12, 16, vec![])),
            "sm_70" | "sm_80" | "sm_100" => Ok(nvidia(name, 64, NV_TUPLE_SIZES)),
            "sm_75" => Ok(nvidia(name, 32, NV_TUPLE_SIZES)),
            "sm_86" | "sm_120" => Ok(nvidia(name, 48, NV_TUPLE_SIZES)),
            "sm_90" => Ok(nvidia(name, 64, &[1, 2, 4, 8, 16, 32, 64, 128])),
            "gen9" => Ok(intel_gen9()),
            other => Err(TargetError::Unknown(other.to_string())),
        }
    }

    /// A file-defined target: `s=16 v=32 p=4`, each class `NAME=UNITS` with optional
    /// `:uniform`, `:aligned` (natural alignment up to 4), `:noswap` and `:via=CLASS` flags.
    /// Without flags, a class named `s` is uniform and aligned (like AMD SGPRs); others are
    /// per-lane with stride 1. Every class spills to memory. `:via=CLASS` names the class a
    /// copy cycle of this one may go through ([`RegClass::copy_temp`], as AMD AGPRs go
    /// through a VGPR): another class of the target, uniform exactly when this one is.
    pub fn generic(spec: &str) -> Result<Target, TargetError> {
        let mut classes: Vec<RegClass> = Vec::new();
        let mut vias = Vec::new();
        for word in spec.split_whitespace() {
            let (class, via) = parse_generic_class(word)?;
            if classes.iter().any(|c| c.name == class.name) {
                return Err(TargetError::DuplicateClass(class.name));
            }
            vias.push(via);
            classes.push(class);
        }
        if classes.is_empty() {
            return Err(TargetError::NoClasses);
        }
        for (i, via) in vias.into_iter().enumerate() {
            if let Some(via) = via {
                classes[i].copy_temp = Some(copy_temp_class(&classes, i, &via)?);
            }
        }
        Ok(Target {
            name: "generic".into(),
            classes,
            occupancy: Occupancy::None,
            costs: Costs::default(),
            spec: Some(spec.split_whitespace().collect::<Vec<_>>().join(" ")),
        })
    }

    pub fn class(&self, id: ClassId) -> &RegClass {
        &self.classes[id.index()]
    }

    /// The instruction that writes a register of `class` with one of two immediates chosen
    /// by a value of `cond_class`, where the target has one: PTX `selp.bN d, a, b, p` on
    /// the NVIDIA targets (NVIDIA, "PTX ISA", "Comparison and Selection Instructions: selp"),
    /// which writes a 32- or 64-bit register and reads a predicate. A phi of constants over
    /// a branch on such a value is then recomputed as a select where it is read
    /// (`schedule::select`). The AMD equivalent, `V_CNDMASK_B32` under a lane mask, is not
    /// modelled: the MIR branches of this crate test `$scc`/`$vcc`/`$exec`, not a value.
    pub fn select_opcode(&self, class: ClassId, cond_class: ClassId) -> Option<&'static str> {
        let nvidia = matches!(self.occupancy, Occupancy::Nvidia { .. });
        let classes = (
            self.class(class).name.as_str(),
            self.class(cond_class).name.as_str(),
        );
        (nvidia && classes == ("r", "p")).then_some("selp")
    }

    pub fn class_by_name(&self, name: &str) -> Option<ClassId> {
        self.classes
            .iter()
            .position(|c| c.name == name)
            .map(|i| ClassId(i as u8))
    }

    pub fn class_ids(&self) -> impl Iterator<Item = ClassId> + '_ {
        (0..self.classes.len()).map(|i| ClassId(i as u8))
    }

    /// Waves (AMD) or warps (NVIDIA) in flight when each class uses `regs_used[class]`
    /// registers (highest used + 1); `None` when the target has no occupancy model.
    pub fn occupancy(&self, regs_used: &[u16]) -> Option<u32> {
        match &self.occupancy {
            Occupancy::None => None,
            Occupancy::Amd {
                vgpr_class,
                agpr_class,
                physical,
                granule,
                max_waves,
                sgpr_class,
                sgpr_table,
            } => {
                let v = vgpr_file(regs_used, *vgpr_class, *agpr_class);
                let rounded = v.max(*granule).div_ceil(*granule) * granule;
                let by_vgpr = (*max_waves).min(physical / rounded);
                let s = u32::from(regs_used[sgpr_class.index()]);
                let by_sgpr = sgpr_table.iter().find(|(limit, _)| s <= *limit).map_or(
                    if sgpr_table.is_empty() {
                        *max_waves
                    } else {
                        SGPR_TABLE_FLOOR
                    },
                    |&(_, w)| w,
                );
                Some(by_vgpr.min(by_sgpr))
            }
            Occupancy::Nvidia { class, max_warps } => {
                let r = u32::from(regs_used[class.index()]).max(1);
                let per_thread = r.div_ceil(NV_GRANULE) * NV_GRANULE;
                Some((*max_warps).min(4 * (NV_PARTITION_REGS / (per_thread * NV_WARP))))
            }
        }
    }

    /// The VGPR figure AMD occupancy reads (LLVM's `.vgpr_count`) for `regs_used` per class;
    /// `None` on a target without the AMD model.
    pub fn vgpr_file(&self, regs_used: &[u16]) -> Option<u32> {
        match &self.occupancy {
            Occupancy::Amd {
                vgpr_class,
                agpr_class,
                ..
            } => Some(vgpr_file(regs_used, *vgpr_class, *agpr_class)),
            _ => None,
        }
    }

    /// The most waves (AMD) or warps (NVIDIA) the target can run; `None` without a model.
    pub fn max_occupancy(&self) -> Option<u32> {
        match self.occupancy {
            Occupancy::None => None,
            Occupancy::Amd { max_waves, .. } => Some(max_waves),
            Occupancy::Nvidia { max_warps, .. } => Some(max_warps),
        }
    }

    /// The largest registers per class (indexed by class) with which the target still runs
    /// `n` waves or warps: the inverse of [`Target::occupancy`]. Classes that do not limit
    /// occupancy keep their whole file; every budget is at most the class's units.
    pub fn budget_for_occupancy(&self, n: u32) -> Result<Vec<u16>, OccupancyError> {
        let (max, unit) = match self.occupancy {
            Occupancy::None => return Err(OccupancyError::NoModel(self.name.clone())),
            Occupancy::Amd { max_waves, .. } => (max_waves, "wave"),
            Occupancy::Nvidia { max_warps, .. } => (max_warps, "warp"),
        };
        if n == 0 {
            return Err(OccupancyError::Zero(unit));
        }
        if n > max {
            return Err(OccupancyError::TooHigh {
                target: self.name.clone(),
                asked: n,
                max,
                unit,
            });
        }
        let mut budget: Vec<u16> = self.classes.iter().map(|c| c.units).collect();
        for (class, regs) in self.occupancy_limits(n) {
            let b = &mut budget[class.index()];
            *b = (*b).min(u16::try_from(regs).unwrap_or(u16::MAX));
        }
        Ok(budget)
    }

    /// Registers per limiting class that reach `n` (1 ≤ n ≤ the maximum) waves or warps,
    /// before clipping to the class's units.
    fn occupancy_limits(&self, n: u32) -> Vec<(ClassId, u32)> {
        match &self.occupancy {
            Occupancy::None => Vec::new(),
            Occupancy::Amd {
                vgpr_class,
                agpr_class,
                physical,
                granule,
                sgpr_class,
                sgpr_table,
                ..
            } => {
                let vgprs = physical / n / granule * granule;
                let mut limits = vec![(*sgpr_class, sgpr_limit(sgpr_table, n))];
                match agpr_class {
                    Some((a, AgprFile::Unified)) => {
                        let arch = vgprs.min(ARCH_VGPRS);
                        limits.push((*vgpr_class, arch));
                        limits.push((*a, vgprs - arch));
                    }
                    Some((a, AgprFile::Separate)) => {
                        limits.push((*vgpr_class, vgprs));
                        limits.push((*a, vgprs));
                    }
                    None => limits.push((*vgpr_class, vgprs)),
                }
                limits
            }

            Occupancy::Nvidia { class, .. } => {
                let per_quarter = n.div_ceil(4);
                let granules = NV_PARTITION_REGS / (NV_GRANULE * NV_WARP) / per_quarter;
                vec![(*class, granules * NV_GRANULE)]
            }
        }
    }

    /// The text after `target` in a file header.
    pub fn header(&self) -> String {
        match &self.spec {
            Some(spec) => format!("generic {spec}"),
            None => self.name.clone(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.header())
    }
}

/// Architectural VGPRs a wave may address on the unified-file targets; the rest of the
/// file holds AGPRs.
const ARCH_VGPRS: u32 = 256;

/// The VGPR figure occupancy reads (LLVM's `.vgpr_count`): the VGPRs; on a unified file
/// (gfx90a to gfx950) with AGPRs in use the VGPRs rounded up to 4 plus the AGPRs (LLVM
/// `AMDGPUUsage`, "unified VGPR file"); on gfx908 the larger of VGPRs and AGPRs.
fn vgpr_file(regs_used: &[u16], v: ClassId, a: Option<(ClassId, AgprFile)>) -> u32 {
    let vgprs = u32::from(regs_used[v.index()]);
    match a.map(|(a, file)| (u32::from(regs_used[a.index()]), file)) {
        Some((agprs, AgprFile::Unified)) if agprs > 0 => vgprs.next_multiple_of(4) + agprs,
        Some((agprs, AgprFile::Separate)) => vgprs.max(agprs),
        _ => vgprs,
    }
}

/// The most SGPRs that still allow `n` waves by the table (no limit without one).
fn sgpr_limit(sgpr_table: &[(u32, u32)], n: u32) -> u32 {
    if sgpr_table.is_empty() || n <= SGPR_TABLE_FLOOR {
        return u32::MAX;
    }
    sgpr_table
        .iter()
        .filter(|&&(_, waves)| waves >= n)
        .map(|&(limit, _)| limit)
        .max()
        .unwrap_or(0)
}

/// The class `via` names as class `i`'s copy temporary: another class, of the same
/// uniformity (a per-lane value does not fit a uniform register, and a uniform class's
/// unit copied into a per-lane one would be read back from one lane only).
fn copy_temp_class(classes: &[RegClass], i: usize, via: &str) -> Result<ClassId, TargetError> {
    let class = &classes[i];
    let bad = |why| TargetError::BadCopyTemp(class.name.clone(), via.into(), why);
    let t = classes
        .iter()
        .position(|c| c.name == via)
        .ok_or_else(|| bad("not a class of the target"))?;
    if t == i {
        return Err(bad("the class itself"));
    }
    if classes[t].uniform != class.uniform {
        return Err(bad(if class.uniform { "per-lane" } else { "uniform" }));
    }
    Ok(ClassId(t as u8))
}

/// One `NAME=UNITS[:flag]*` word: the class, and the class its `:via=` flag names (not
/// yet resolved: that takes the whole target).
pub(crate) fn parse_generic_class(word: &str) -> Result<(RegClass, Option<String>), TargetError> {
    let mut parts = word.split(':');
    let head = parts.next().unwrap_or_default();
    let (name, units) = head
        .split_once('=')
        .ok_or_else(|| TargetError::BadClass(word.into()))?;
    if name.is_empty() || name == "m" || !name.chars().all(|c| c.is_ascii_lowercase()) {
        return Err(TargetError::BadClassName(name.into()));
    }
    let units: u32 = units
        .parse()
        .map_err(|_| TargetError::BadClass(word.into()))?;
    if !(1..=1024).contains(&units) {
        return Err(TargetError::BadUnits(name.into(), units));
    }
    let flags: Vec<&str> = parts.collect();
    let defaults = flags.is_empty();
    let mut uniform = defaults && name == "s";
    let mut aligned = defaults && name == "s";
    let mut has_swap = true;
    let mut via = None;
    for flag in flags {
        match flag {
            "uniform" => uniform = true,
            "aligned" => aligned = true,
            "noswap" => has_swap = false,
            _ => match flag.strip_prefix("via=") {
                Some(name) if !name.is_empty() => via = Some(name.to_string()),
                _ => return Err(TargetError::BadClass(word.into())),
            },
        }
    }
    let class = RegClass {
        name: name.into(),
        units: units as u16,
        uniform,
        align: if aligned {
            AlignRule::Natural { max: 4 }
        } else {
            AlignRule::Stride1
        },
        sizes: TUPLE_SIZES.to_vec(),
        spill: vec![SpillTarget::Memory],
        has_swap,
        copy_temp: None,
    };
    Ok((class, via))
}

/// LLVM `AMDGPUSubtarget::getOccupancyWithNumSGPRs` for GFX8/9 (ACO says 8 waves for
/// 81–88; we follow LLVM, see `docs/TARGETS.md`).
fn llvm_gfx9_sgpr_table() -> Vec<(u32, u32)> {
    vec![(80, 10), (88, 9), (100, 8)]
}

fn amd(
    name: &str,
    sgprs: u16,
    wave: u16,
    physical: u32,
    granule: u32,
    max_waves: u32,
    sgpr_table: Vec<(u32, u32)>,
) -> Target {
    let s = ClassId(0);
    let v = ClassId(1);
    Target {
        name: name.into(),
        classes: vec![
            RegClass {
                name: "s".into(),
                units: sgprs,
                uniform: true,
                align: AlignRule::Natural { max: 4 },
                sizes: AMD_TUPLE_SIZES.to_vec(),
                spill: vec![
                    SpillTarget::Lanes {
                        class: v,
                        lanes: wave,
                    },
                    SpillTarget::Memory,
                ],
                has_swap: false,
                copy_temp: None,
            },
            RegClass {
                name: "v".into(),
                units: 256,
                uniform: false,
                align: AlignRule::Stride1,
                sizes: AMD_TUPLE_SIZES.to_vec(),
                spill: vec![SpillTarget::Memory],
                has_swap: true,
                copy_temp: None,
            },
        ],
        occupancy: Occupancy::Amd {
            vgpr_class: v,
            agpr_class: None,
            physical,
            granule,
            max_waves,
            sgpr_class: s,
            sgpr_table,
        },
        costs: Costs {
            mem_store: 16.0,
            mem_load: 16.0,
            ..Costs::default()
        },
        spec: None,
    }
}

/// CDNA2/CDNA3/CDNA4 (gfx90a, gfx942, gfx950): wave64, 102 SGPRs, VGPR tuples
/// even-aligned, and an AGPR class `a` that shares one 512-register file with the VGPRs
/// (granule 8, at most 8 waves per SIMD); a copy cycle of AGPRs with no AGPR free goes
/// through a VGPR.
fn cdna(name: &str) -> Target {
    let mut t = amd(name, 102, 64, 512, 8, 8, llvm_gfx9_sgpr_table());
    let v = ClassId(1);
    t.classes[v.index()].align = AlignRule::Natural { max: 2 };
    with_agprs(t, AlignRule::Natural { max: 2 }, AgprFile::Unified)
}

/// CDNA1 (gfx908): GFX9's VGPR file and occupancy (256, granule 4, 10 waves), tuples
/// unaligned, and 256 AGPRs in a file of their own; occupancy reads the larger count.
fn cdna1() -> Target {
    let t = amd("gfx908", 102, 64, 256, 4, 10, llvm_gfx9_sgpr_table());
    with_agprs(t, AlignRule::Stride1, AgprFile::Separate)
}

/// Adds the AGPR class `a` (256 units, no swap; a copy cycle with no AGPR free goes
/// through a VGPR) to an AMD target.
fn with_agprs(mut t: Target, align: AlignRule, file: AgprFile) -> Target {
    let v = ClassId(1);
    let a = ClassId(2);
    t.classes.push(RegClass {
        name: "a".into(),
        units: 256,
        uniform: false,
        align,
        sizes: AMD_TUPLE_SIZES.to_vec(),
        spill: vec![SpillTarget::Memory],
        has_swap: false,
        copy_temp: Some(v),
    });
    if let Occupancy::Amd { agpr_class, .. } = &mut t.occupancy {
        *agpr_class = Some((a, file));
    }
    t
}

/// NVIDIA: `max_warps` resident warps per SM at most; `sizes` are the tuple sizes of
/// class `r` (sm_90 adds the 8- to 128-register accumulators of `wgmma`, which SASS
/// `HGMMA` reads and writes as one register range).
fn nvidia(name: &str, max_warps: u32, sizes: &[u16]) -> Target {
    let r = ClassId(0);
    Target {
        name: name.into(),
        classes: vec![
            RegClass {
                name: "r".into(),
                units: 255,
                uniform: false,
                align: AlignRule::Natural { max: 4 },
                sizes: sizes.to_vec(),
                spill: vec![SpillTarget::Memory],
                has_swap: false,
                copy_temp: None,
            },
            RegClass {
                name: "p".into(),
                units: 7,
                uniform: false,
                align: AlignRule::Stride1,
                sizes: vec![1],
                spill: vec![SpillTarget::Class { class: r }, SpillTarget::Memory],
                has_swap: false,
                copy_temp: None,
            },
        ],
        occupancy: Occupancy::Nvidia {
            class: r,
            max_warps,
        },
        costs: Costs::default(),
        spec: None,
    }
}

fn intel_gen9() -> Target {
    let g = ClassId(0);
    Target {
        name: "gen9".into(),
        classes: vec![
            RegClass {
                name: "g".into(),
                units: 128,
                uniform: false,
                align: AlignRule::Stride1,
                sizes: TUPLE_SIZES.to_vec(),
                spill: vec![SpillTarget::Memory],
                has_swap: false,
                copy_temp: None,
            },
            RegClass {
                name: "f".into(),
                units: 4,
                uniform: false,
                align: AlignRule::Stride1,
                sizes: vec![1],
                spill: vec![SpillTarget::Class { class: g }, SpillTarget::Memory],
                has_swap: false,
                copy_temp: None,
            },
        ],
        occupancy: Occupancy::None,
        costs: Costs::default(),
        spec: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx9_vgpr_occupancy_matches_the_documented_table() {
        let t = Target::builtin("gfx9").unwrap();
        let waves = |v| t.occupancy(&[10, v]).unwrap();
        assert_eq!([waves(32), waves(64), waves(128), waves(256)], [8, 4, 2, 1]);
        assert_eq!(waves(1), 10);
    }

    #[test]
    fn gfx9_sgprs_limit_occupancy_llvm_table() {
        let t = Target::builtin("gfx9").unwrap();
        let waves = |s| t.occupancy(&[s, 8]).unwrap();
        assert_eq!([waves(80), waves(81), waves(89), waves(101)], [10, 9, 8, 7]);
    }

    /// LLVM 19's own figures for gfx942 kernels (unified VGPRs → occupancy).
    #[test]
    fn gfx942_occupancy_counts_the_unified_file() {
        let t = Target::builtin("gfx942").unwrap();
        assert_eq!(t.occupancy(&[0, 40, 48]), Some(5));
        assert_eq!(t.occupancy(&[0, 98, 0]), Some(4));
        assert_eq!(t.occupancy(&[0, 182, 0]), Some(2));
        assert_eq!(t.occupancy(&[0, 256, 149]), Some(1));
        assert_eq!(t.occupancy(&[0, 62, 64]), Some(4));
        assert_eq!(t.occupancy(&[0, 5, 0]), Some(8));
    }

    /// LLVM 19's own figures for gfx908 kernels (`; NumVgprs`, `; NumAgprs`,
    /// `; Occupancy`): the AGPR file is separate, occupancy reads the larger count.
    #[test]
    fn gfx908_occupancy_reads_the_larger_file() {
        let t = Target::builtin("gfx908").unwrap();
        assert_eq!(t.occupancy(&[0, 89, 64]), Some(2));
        assert_eq!(t.occupancy(&[0, 84, 84]), Some(3));
        assert_eq!(t.occupancy(&[0, 115, 128]), Some(2));
        assert_eq!(t.occupancy(&[0, 41, 16]), Some(5));
        assert_eq!(t.occupancy(&[0, 23, 16]), Some(10));
        assert_eq!(t.vgpr_file(&[0, 115, 128]), Some(128));
        assert_eq!(t.budget_for_occupancy(4).unwrap(), vec![102, 64, 64]);
    }

    #[test]
    fn gfx11_w32_occupancy_matches_the_documented_table() {
        let t = Target::builtin("gfx11-w32").unwrap();
        assert_eq!(t.occupancy(&[0, 256]), Some(5));
        assert_eq!(t.occupancy(&[0, 128]), Some(10));
    }

    /// LLVM's `getMaxWavesPerEU`, `getVGPRAllocGranule` and `getTotalNumVGPRs`: gfx10.3
    /// and the gfx11 parts without the larger file allocate 16 VGPRs at a time from 1024
    /// and run at most 16 waves; gfx10.1 allocates 8 and runs 20; gfx12 is gfx11's 1536.
    #[test]
    fn rdna_occupancy_follows_each_register_file() {
        let waves = |name: &str, v: u16| Target::builtin(name).unwrap().occupancy(&[0, v]);
        for name in ["gfx10-3-w32", "gfx1102-w32"] {
            let steps = [16, 64, 65, 80, 128, 256].map(|v| waves(name, v));
            assert_eq!(steps, [16, 16, 12, 12, 8, 4].map(Some), "{name}");
        }
        assert_eq!(waves("gfx10-3-w64", 64), Some(8));
        assert_eq!(waves("gfx10-w32", 8), Some(20));
        assert_eq!(waves("gfx10-w32", 72), Some(14));
        for v in [24, 96, 97, 256] {
            assert_eq!(waves("gfx12-w32", v), waves("gfx11-w32", v));
        }
        let cdna = |name: &str| Target::builtin(name).unwrap().occupancy(&[0, 96, 32]);
        assert_eq!(cdna("gfx950"), cdna("gfx942"));
    }

    /// CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
    /// 64 resident warps per SM on 7.0, 8.0, 9.0 and 10.0, 48 on 8.6/8.9 and 12.0, 32 on
    /// 7.5; the registers per SM (65536) and the allocation unit are the same on all.
    #[test]
    fn nvidia_warps_per_sm_cap_the_register_bound() {
        let warps = |name: &str, r: u16| Target::builtin(name).unwrap().occupancy(&[r, 0]);
        assert_eq!(
            ["sm_70", "sm_75", "sm_80", "sm_86", "sm_100", "sm_120"].map(|n| warps(n, 32)),
            [64, 32, 64, 48, 64, 48].map(Some)
        );
        assert_eq!(warps("sm_86", 40), Some(48));
        assert_eq!(warps("sm_86", 48), Some(40));
        assert_eq!(warps("sm_75", 64), Some(32));
        assert_eq!(warps("sm_75", 72), Some(28));
        let sm86 = Target::builtin("sm_86").unwrap();
        assert!(matches!(
            sm86.budget_for_occupancy(64),
            Err(OccupancyError::TooHigh { max: 48, .. })
        ));
        assert_eq!(sm86.budget_for_occupancy(48).unwrap()[0], 40);
    }

    #[test]
    fn sm90_occupancy_steps_at_documented_counts() {
        let t = Target::builtin("sm_90").unwrap();
        let steps: Vec<u16> = (1..=255)
            .filter(|&r| t.occupancy(&[r, 0]) != t.occupancy(&[r + 1, 0]))
            .collect();
        assert_eq!(steps, [32, 40, 48, 56, 64, 72, 80, 96, 128, 168]);
        assert_eq!(t.occupancy(&[255, 0]), Some(8));
    }

    /// Budget of class `name` for `n` waves or warps.
    fn budget(t: &Target, n: u32, name: &str) -> u16 {
        let c = t.class_by_name(name).unwrap();
        t.budget_for_occupancy(n).unwrap()[c.index()]
    }

    #[test]
    fn gfx9_vgpr_budget_inverts_notes_spot_checks() {
        let t = Target::builtin("gfx9").unwrap();
        let v = |n| budget(&t, n, "v");
        assert_eq!([v(8), v(4), v(2), v(1)], [32, 64, 128, 256]);
        assert_eq!([v(10), v(9), v(7), v(5), v(3)], [24, 28, 36, 48, 84]);
    }

    #[test]
    fn gfx9_sgpr_budget_follows_llvm_table() {
        let t = Target::builtin("gfx9").unwrap();
        let s = |n| budget(&t, n, "s");
        assert_eq!([s(10), s(9), s(8), s(7), s(1)], [80, 88, 100, 102, 102]);
    }

    #[test]
    fn gfx10_and_gfx11_budgets() {
        let w32 = Target::builtin("gfx11-w32").unwrap();
        assert_eq!([5, 10, 16].map(|n| budget(&w32, n, "v")), [256, 144, 96]);
        assert_eq!(budget(&w32, 10, "s"), 106);
        let w64 = Target::builtin("gfx10-w64").unwrap();
        assert_eq!(
            [20, 10, 4, 1].map(|n| budget(&w64, n, "v")),
            [24, 48, 128, 256]
        );
    }

    #[test]
    fn sm90_budgets_are_the_documented_breakpoints() {
        let t = Target::builtin("sm_90").unwrap();
        let mut budgets: Vec<u16> = (1..=64).map(|n| budget(&t, n, "r")).collect();
        budgets.dedup();
        assert_eq!(budgets, [255, 168, 128, 96, 80, 72, 64, 56, 48, 40, 32]);
        assert_eq!(budget(&t, 64, "p"), 7);
    }

    #[test]
    fn budget_for_occupancy_errors() {
        let gfx9 = Target::builtin("gfx9").unwrap();
        assert_eq!(
            gfx9.budget_for_occupancy(11).unwrap_err().to_string(),
            "target `gfx9` runs at most 10 waves; occupancy 11 cannot be reached"
        );
        assert_eq!(
            gfx9.budget_for_occupancy(0),
            Err(OccupancyError::Zero("wave"))
        );
        let sm90 = Target::builtin("sm_90").unwrap();
        assert!(matches!(
            sm90.budget_for_occupancy(65),
            Err(OccupancyError::TooHigh { max: 64, .. })
        ));
        for t in [
            Target::builtin("gen9").unwrap(),
            Target::generic("v=8").unwrap(),
        ] {
            assert_eq!(
                t.budget_for_occupancy(1),
                Err(OccupancyError::NoModel(t.name.clone()))
            );
        }
    }

    /// For every built-in target with a model and every reachable `n`: the budget reaches
    /// `n`, and one more register in any class (within its file) falls below `n`.
    #[test]
    fn budget_for_occupancy_is_the_maximal_inverse() {
        for name in BUILTIN_TARGETS {
            let t = Target::builtin(name).unwrap();
            let Some(max) = t.max_occupancy() else {
                continue;
            };
            for n in 1..=max {
                let budget = t.budget_for_occupancy(n).unwrap();
                let reached = t.occupancy(&budget).unwrap();
                assert!(reached >= n, "{name} n={n}: {budget:?} gives {reached}");
                for c in t.class_ids() {
                    let mut more = budget.clone();
                    more[c.index()] += 1;
                    if more[c.index()] > t.class(c).units {
                        continue;
                    }
                    let reached = t.occupancy(&more).unwrap();
                    assert!(reached < n, "{name} n={n}: {more:?} still gives {reached}");
                }
            }
        }
    }

    #[test]
    fn natural_alignment_caps_at_max() {
        let a = AlignRule::Natural { max: 4 };
        assert_eq!([1, 2, 3, 4, 8].map(|s| a.alignment(s)), [1, 2, 4, 4, 4]);
        assert_eq!(AlignRule::Stride1.alignment(8), 1);
    }

    #[test]
    fn generic_defaults_and_flags() {
        let t = Target::generic("s=16 v=32 p=4:uniform:noswap").unwrap();
        assert!(t.classes[0].uniform && t.classes[0].align == AlignRule::Natural { max: 4 });
        assert!(!t.classes[1].uniform && t.classes[1].align == AlignRule::Stride1);
        assert!(t.classes[2].uniform && !t.classes[2].has_swap);
        assert_eq!(t.header(), "generic s=16 v=32 p=4:uniform:noswap");
    }

    #[test]
    fn generic_errors() {
        assert_eq!(
            Target::generic("m=4"),
            Err(TargetError::BadClassName("m".into()))
        );
        assert_eq!(
            Target::generic("v=4 v=8"),
            Err(TargetError::DuplicateClass("v".into()))
        );
        assert_eq!(Target::generic(""), Err(TargetError::NoClasses));
        assert!(matches!(
            Target::generic("v=0"),
            Err(TargetError::BadUnits(..))
        ));
    }

    #[test]
    fn generic_copy_temp_names_another_class_of_the_same_uniformity() {
        let t = Target::generic("a=8:noswap:via=v v=16").unwrap();
        assert_eq!(t.classes[0].copy_temp, Some(ClassId(1)));
        assert_eq!(t.classes[1].copy_temp, None);
        assert_eq!(t.header(), "generic a=8:noswap:via=v v=16");
        let err = |spec, why| {
            assert_eq!(
                Target::generic(spec),
                Err(TargetError::BadCopyTemp("a".into(), "x".into(), why)),
                "{spec}"
            )
        };
        err("a=8:via=x v=16", "not a class of the target");
        err("a=8:via=x x=16:uniform", "uniform");
        err("a=8:uniform:via=x x=16", "per-lane");
        assert_eq!(
            Target::generic("x=8:via=x"),
            Err(TargetError::BadCopyTemp(
                "x".into(),
                "x".into(),
                "the class itself"
            ))
        );
        assert!(matches!(
            Target::generic("a=8:via="),
            Err(TargetError::BadClass(..))
        ));
    }
}
