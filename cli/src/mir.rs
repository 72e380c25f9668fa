//! `chromatic mir FILE...`: chromatic against LLVM 19's AMDGPU allocator on `.mir` kernels
//! (the SSA machine IR LLVM allocates, `llc -stop-before=phi-node-elimination`).
//!
//! Per kernel: MaxLive per class, the registers chromatic uses in minimum-registers mode
//! (the whole file as budget) per class, after pressure scheduling (`--schedule`, default
//! `pressure`), its VGPR-file figure (what occupancy reads: VGPRs, or with AGPRs in use
//! the unified `align(VGPRs, 4) + AGPRs` on gfx90a and later, `max(VGPRs, AGPRs)` on
//! gfx908) and occupancy, and LLVM's
//! figures for the same input from `--manifest` (the rows of producer `llc-19`:
//! `.vgpr_count`, `.sgpr_count`, `.agpr_count`, `; Occupancy:`, spill counts). With
//! `--at-llvm` each kernel is allocated again with LLVM's own VGPRs and AGPRs as budget,
//! and the VGPR units chromatic stores to scratch are put beside LLVM's
//! `.vgpr_spill_count`. Every allocation is verified and its interpreter traces compared
//! with the original's (a kernel that fails is an error, exit 1). The last lines are the
//! totals and distributions; the very last says `VGPRs <= LLVM on N/M kernels`. With
//! `--export`, each file's minimum-registers allocation is written back as MIR
//! (`chromatic::mir::export`) and assembled by `llc-19` ([`crate::llc`]); its VGPR, SGPR
//! and AGPR counts from the assembly are shown beside the others, and a kernel whose
//! export does not assemble is an error. Output
//! follows file order and is identical from run to run, except with `--times`, which adds
//! the import, allocation and verification time of the whole run.

use crate::corpus::files_with;
use crate::diag::Source;
use crate::llc::{KernelCounts, Llc};
use crate::options::{parse_source, ScheduleArgs};
use crate::pipeline::{checked, class_max, Times};
use crate::Outcome;
use chromatic::alloc::{AllocOptions, FunctionStats};
use chromatic::target::Target;
use chromatic::{Function, InstKind, Location, Program};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.mir` files, or directories to walk for them.
    #[arg(required = true)]
    paths: Vec<String>,
    /// LLVM's statistics per kernel: a tab-separated file with a header naming `name`
    /// (the file name without `.mir`), `producer` (rows of `llc-19` are read), `vgprs`,
    /// `sgprs`, `agprs`, `arch_vgprs`, `vgpr_spills`, `sgpr_spills`, `occupancy`.
    #[arg(long)]
    manifest: Option<String>,
    /// Also allocate every kernel with LLVM's VGPRs and AGPRs as the budget.
    #[arg(long, requires = "manifest")]
    at_llvm: bool,
    /// Write each allocation back as MIR and assemble it with `llc-19` (or `--llc`).
    #[arg(long)]
    export: bool,
    /// The `llc` to assemble exports with (default: `llc-19` on the PATH).
    #[arg(long, requires = "export")]
    llc: Option<String>,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Print the kernels as JSON instead of lines and totals.
    #[arg(long)]
    json: bool,
    /// Add the import, allocation and verification time of the run (varies from run to run).
    #[arg(long)]
    times: bool,
}

/// Registers per AMD class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
struct Regs {
    s: u32,
    v: u32,
    a: u32,
}

/// LLVM 19's figures for one kernel.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Llvm {
    /// `.vgpr_count`: the VGPR-file figure (with AGPRs: unified on gfx90a and later, the
    /// larger count on gfx908).
    vgpr_file: u32,
    /// `; NumVgprs:`, the architectural VGPRs alone.
    arch_vgprs: u32,
    sgprs: u32,
    agprs: u32,
    occupancy: u32,
    vgpr_spills: u32,
    sgpr_spills: u32,
}

/// The allocation at LLVM's register counts.
#[derive(Clone, Debug, Serialize)]
struct AtLlvm {
    budget: Regs,
    /// VGPR and AGPR units chromatic stores to scratch.
    vgpr_spills: Option<u32>,
    /// SGPRs chromatic spills (to VGPR lanes or scratch).
    sgpr_spills: Option<u32>,
    error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
struct Kernel {
    file: String,
    kernel: String,
    instructions: usize,
    max_live: Regs,
    regs: Option<Regs>,
    vgpr_file: Option<u32>,
    occupancy: Option<u32>,
    llvm: Option<Llvm>,
    at_llvm: Option<AtLlvm>,
    /// The allocation at LLVM's occupancy.
    at_llvm_occupancy: Option<AtLlvm>,
    /// `llc`'s counts on the exported allocation.
    exported: Option<KernelCounts>,
    error: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let mut files: Vec<PathBuf> = Vec::new();
    for path in &args.paths {
        let p = Path::new(path);
        if p.is_dir() {
            files.extend(files_with(p, &["mir"])?);
        } else {
            files.push(p.to_path_buf());
        }
    }
    if files.is_empty() {
        anyhow::bail!("no .mir files found");
    }
    let manifest = args.manifest.as_deref().map(read_manifest).transpose()?;
    let llc = match args.export {
        true => Some(Llc::find(args.llc.as_deref())?.ok_or_else(|| {
            anyhow::anyhow!("--export needs llc-19: on the PATH or given by --llc")
        })?),
        false => None,
    };
    let base = AllocOptions {
        schedule: args.schedule.for_input(true),
        ..AllocOptions::default()
    };
    let start = Instant::now();
    let results: Vec<(Vec<Kernel>, Times)> = files
        .par_iter()
        .map(|f| file_kernels(f, manifest.as_ref(), args.at_llvm, llc.as_ref(), &base))
        .collect();
    let wall = start.elapsed();
    let mut times = Times::default();
    let mut kernels = Vec::new();
    for (rows, t) in results {
        times.import_us += t.import_us;
        times.alloc_us += t.alloc_us;
        times.verify_us += t.verify_us;
        kernels.extend(rows);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&kernels)?);
    } else {
        kernels.iter().for_each(|k| outln!("{}", line(k)));
        if args.times {
            outln!(
                "times: import {} ms  allocation {} ms  verification {} ms (summed over threads), wall {} ms for import + allocation + verification + interpretation",
                times.import_us / 1000,
                times.alloc_us / 1000,
                times.verify_us / 1000,
                wall.as_millis()
            );
        }
        out!("{}", totals(&kernels));
    }
    Ok(if kernels.iter().any(|k| k.error.is_some()) {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}

/// The `llc-19` rows of the manifest, by kernel file name.
fn read_manifest(path: &str) -> anyhow::Result<HashMap<String, Llvm>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--manifest {path}: {e}"))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| anyhow::anyhow!("--manifest {path}: no column `{name}`"))
    };
    let [name, producer, vgprs, sgprs, agprs, arch, vspill, sspill, occupancy] = [
        "name",
        "producer",
        "vgprs",
        "sgprs",
        "agprs",
        "arch_vgprs",
        "vgpr_spills",
        "sgpr_spills",
        "occupancy",
    ]
    .map(column);
    let (name, producer) = (name?, producer?);
    let numbers = [vgprs?, sgprs?, agprs?, arch?, vspill?, sspill?, occupancy?];
    let mut rows = HashMap::new();
    for (i, row) in lines.enumerate() {
        let cells: Vec<&str> = row.split('\t').collect();
        if cells.get(producer) != Some(&"llc-19") {
            continue;
        }
        let number = |c: usize| -> anyhow::Result<u32> {
            let cell = cells.get(c).copied().unwrap_or_default();
            if cell.is_empty() {
                return Ok(0);
            }
            cell.parse().map_err(|_| {
                anyhow::anyhow!("--manifest {path}:{}: `{cell}` is not a count", i + 2)
            })
        };
        let [vgpr_file, sgprs, agprs, arch_vgprs, vgpr_spills, sgpr_spills, occupancy] =
            numbers.map(number);
        let key = cells.get(name).copied().unwrap_or_default().to_string();
        rows.insert(
            key,
            Llvm {
                vgpr_file: vgpr_file?,
                arch_vgprs: arch_vgprs?,
                sgprs: sgprs?,
                agprs: agprs?,
                occupancy: occupancy?,
                vgpr_spills: vgpr_spills?,
                sgpr_spills: sgpr_spills?,
            },
        );
    }
    Ok(rows)
}

fn file_error(file: &str, message: String) -> Vec<Kernel> {
    vec![Kernel {
        file: file.into(),
        kernel: String::new(),
        instructions: 0,
        max_live: Regs::default(),
        regs: None,
        vgpr_file: None,
        occupancy: None,
        llvm: None,
        at_llvm: None,
        at_llvm_occupancy: None,
        exported: None,
        error: Some(message),
    }]
}

fn file_kernels(
    path: &Path,
    manifest: Option<&HashMap<String, Llvm>>,
    at_llvm: bool,
    llc: Option<&Llc>,
    base: &AllocOptions,
) -> (Vec<Kernel>, Times) {
    let name = path.display().to_string();
    let mut times = Times::default();
    let source = match Source::read(&name) {
        Ok(s) => s,
        Err(e) => return (file_error(&name, e.to_string()), times),
    };
    let start = Instant::now();
    let program = match parse_source(&source) {
        Ok(input) => input.program,
        Err(rendered) => return (file_error(&name, rendered), times),
    };
    times.import_us = start.elapsed().as_micros() as u64;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let llvm = manifest.and_then(|m| m.get(&stem).copied());
    let (mut rows, allocated): (Vec<Kernel>, Vec<Option<Function>>) = program
        .functions
        .iter()
        .map(|f| {
            let single = Program {
                target: program.target.clone(),
                functions: vec![f.clone()],
            };
            kernel(&name, &single, llvm, at_llvm, base, &mut times)
        })
        .unzip();
    if let (Some(llc), Some(functions)) = (llc, allocated.into_iter().collect::<Option<_>>()) {
        let allocated = Program {
            target: program.target.clone(),
            functions,
        };
        export(&source.text, &allocated, llc, &mut rows);
    }
    (rows, times)
}

/// The allocation of a whole file written back as MIR and assembled by `llc`: its counts
/// per kernel, or the reason it failed as each kernel's error.
fn export(source: &str, allocated: &Program, llc: &Llc, rows: &mut [Kernel]) {
    let cpu = chromatic::mir::parse::parse_module(source)
        .ok()
        .and_then(|m| m.cpu)
        .map(|(cpu, _)| cpu)
        .unwrap_or_default();
    let assembled = chromatic::mir::export::export(source, allocated)
        .map_err(|e| format!("export: {e}"))
        .and_then(|text| {
            llc.assemble(&text, &cpu)
                .map_err(|e| format!("llc on the export: {e}"))
        });
    for row in rows {
        match &assembled {
            Ok(counts) => match counts.iter().find(|(name, _)| *name == row.kernel) {
                Some((_, c)) => row.exported = Some(*c),
                None => row.error = Some("llc on the export: no metadata for the kernel".into()),
            },
            Err(e) => row.error = Some(e.clone()),
        }
    }
}

/// One kernel's row, and its minimum-registers allocation.
fn kernel(
    file: &str,
    p: &Program,
    llvm: Option<Llvm>,
    at_llvm: bool,
    base: &AllocOptions,
    times: &mut Times,
) -> (Kernel, Option<Function>) {
    let f = &p.functions[0];
    let mut row = Kernel {
        file: file.into(),
        kernel: f.name.clone(),
        instructions: f.op_count(),
        max_live: Regs::default(),
        regs: None,
        vgpr_file: None,
        occupancy: None,
        llvm,
        at_llvm: None,
        at_llvm_occupancy: None,
        exported: None,
        error: None,
    };
    let mut allocated = None;
    match checked(p, base, Some(times)) {
        Ok((a, stats)) => {
            allocated = a.functions.into_iter().next();
            row.max_live = per_class(&stats, |c| c.max_live);
            let regs = per_class(&stats, |c| c.regs_used.into());
            row.regs = Some(regs);
            row.vgpr_file = p.target.vgpr_file(&used(&p.target, regs));
            row.occupancy = stats[0].occupancy;
        }
        Err(e) => row.error = Some(e),
    }
    if let (true, Some(l)) = (at_llvm, llvm) {
        row.at_llvm = Some(allocate_at_llvm(p, l, base));
        row.at_llvm_occupancy = Some(allocate_at_llvm_occupancy(p, l, base));
    }
    (row, allocated)
}

/// Registers used per class of `target` (the order occupancy reads) for `regs`.
fn used(target: &Target, regs: Regs) -> Vec<u16> {
    target
        .classes
        .iter()
        .map(|c| match c.name.as_str() {
            "s" => regs.s,
            "v" => regs.v,
            "a" => regs.a,
            _ => 0,
        })
        .map(|n| u16::try_from(n).unwrap_or(u16::MAX))
        .collect()
}

fn per_class(stats: &[FunctionStats], get: impl Fn(&chromatic::alloc::ClassStats) -> u32) -> Regs {
    let class = |name: &str| class_max(stats, name, &get);
    Regs {
        s: class("s"),
        v: class("v"),
        a: class("a"),
    }
}

/// The allocation with LLVM's architectural VGPRs and AGPRs as the budget.
fn allocate_at_llvm(p: &Program, l: Llvm, base: &AllocOptions) -> AtLlvm {
    let has_agprs = p.target.class_by_name("a").is_some();
    allocate_at(
        p,
        Regs {
            s: 0,
            v: l.arch_vgprs.clamp(1, 256),
            a: if has_agprs { l.agprs.min(256) } else { 0 },
        },
        base,
    )
}

/// The allocation with LLVM's AGPRs and the most VGPRs that keep LLVM's occupancy as the
/// budget, by the target's own VGPR figure (`align(v, 4) + a` on a unified file,
/// `max(v, a)` on gfx908's).
fn allocate_at_llvm_occupancy(p: &Program, l: Llvm, base: &AllocOptions) -> AtLlvm {
    let has_agprs = p.target.class_by_name("a").is_some();
    let a = if has_agprs { l.agprs.min(256) } else { 0 };
    let keeps = |v: u32| {
        let regs = used(&p.target, Regs { s: 0, v, a });
        p.target
            .occupancy(&regs)
            .is_some_and(|waves| waves >= l.occupancy.max(1))
    };
    match (1..=256).rev().find(|&v| keeps(v)) {
        Some(v) => allocate_at(p, Regs { s: 0, v, a }, base),
        None => allocate_at_llvm(p, l, base),
    }
}

/// The allocation with `budget` VGPRs and AGPRs (an AGPR budget only on targets with
/// AGPRs).
fn allocate_at(p: &Program, budget: Regs, base: &AllocOptions) -> AtLlvm {
    let has_agprs = p.target.class_by_name("a").is_some();
    let mut classes = vec![("v".to_string(), budget.v as u16)];
    if has_agprs {
        classes.push(("a".to_string(), budget.a as u16));
    }
    let options = AllocOptions {
        budget: classes,
        ..base.clone()
    };
    match checked(p, &options, None) {
        Ok((a, _)) => {
            let (vgpr_spills, sgpr_spills) = spilled_units(&a);
            AtLlvm {
                budget,
                vgpr_spills: Some(vgpr_spills),
                sgpr_spills: Some(sgpr_spills),
                error: None,
            }
        }
        Err(e) => AtLlvm {
            budget,
            vgpr_spills: None,
            sgpr_spills: None,
            error: Some(e),
        },
    }
}

/// Units spilled: per-lane (VGPR, AGPR) units stored to scratch, and SGPR units spilled
/// anywhere (VGPR lanes or scratch).
fn spilled_units(p: &Program) -> (u32, u32) {
    let (mut per_lane, mut uniform) = (0, 0);
    for inst in p
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.insts)
    {
        let InstKind::Spill(m) = &inst.kind else {
            continue;
        };
        let Location::Reg { class, len, .. } = m.src else {
            continue;
        };
        if p.target.class(class).uniform {
            uniform += u32::from(len);
        } else if matches!(m.dst, Location::Slot { .. }) {
            per_lane += u32::from(len);
        }
    }
    (per_lane, uniform)
}

fn line(k: &Kernel) -> String {
    let regs = |r: Regs| format!("s={} v={} a={}", r.s, r.v, r.a);
    let mut out = format!(
        "{} @{}: instructions {}  max_live {}",
        k.file,
        k.kernel,
        k.instructions,
        regs(k.max_live)
    );
    if let (Some(r), Some(file)) = (k.regs, k.vgpr_file) {
        let occupancy = k.occupancy.map_or("-".into(), |o| o.to_string());
        out += &format!(
            "  chromatic {}  vgpr_file {file}  occupancy {occupancy}",
            regs(r)
        );
    }
    if let Some(l) = k.llvm {
        out += &format!(
            "  llvm s={} v={} a={}  vgpr_file {}  occupancy {}",
            l.sgprs, l.arch_vgprs, l.agprs, l.vgpr_file, l.occupancy
        );
    }
    if let Some(b) = &k.at_llvm {
        out += &format!(
            "  at llvm v={} a={}: {}",
            b.budget.v,
            b.budget.a,
            at_text(b, k.llvm)
        );
    }
    if let (Some(b), Some(l)) = (&k.at_llvm_occupancy, k.llvm) {
        out += &format!(
            "  at llvm's occupancy {} v={} a={}: {}",
            l.occupancy,
            b.budget.v,
            b.budget.a,
            at_text(b, k.llvm)
        );
    }
    if let Some(e) = k.exported {
        out += &format!("  exported: llc s={} v={} a={}", e.sgprs, e.vgprs, e.agprs);
    }
    if let Some(e) = &k.error {
        out += &format!("  error: {e}");
    }
    out
}

/// Which allocation at a budget of LLVM's a row holds.
type AtBudget = fn(&Kernel) -> Option<&AtLlvm>;

/// The spills of every kernel at LLVM's `what` (registers or occupancy), summed.
fn at_totals(what: &str, at: &[(&AtLlvm, Llvm)]) -> String {
    let sum = |f: &dyn Fn(&AtLlvm) -> Option<u32>| at.iter().filter_map(|(b, _)| f(b)).sum::<u32>();
    format!(
        "at llvm's {what}: allocated {}/{}  spills chromatic v={} s={}  llvm v={} s={}  chromatic spills more VGPRs on {} kernels\n",
        at.iter().filter(|(b, _)| b.error.is_none()).count(),
        at.len(),
        sum(&|b| b.vgpr_spills),
        sum(&|b| b.sgpr_spills),
        at.iter().map(|(_, l)| l.vgpr_spills).sum::<u32>(),
        at.iter().map(|(_, l)| l.sgpr_spills).sum::<u32>(),
        at.iter()
            .filter(|(b, l)| b.vgpr_spills.is_some_and(|v| v > l.vgpr_spills))
            .count()
    )
}

fn is_export_error(e: &str) -> bool {
    e.starts_with("export:") || e.starts_with("llc on the export:")
}

/// The spills of an allocation at a budget beside LLVM's.
fn at_text(b: &AtLlvm, llvm: Option<Llvm>) -> String {
    match (b.vgpr_spills, b.sgpr_spills, &b.error) {
        (Some(v), Some(s), _) => format!(
            "spills chromatic v={v} s={s} llvm v={} s={}",
            llvm.map_or(0, |l| l.vgpr_spills),
            llvm.map_or(0, |l| l.sgpr_spills)
        ),
        (_, _, Some(e)) => format!("error: {e}"),
        _ => "-".into(),
    }
}

/// Smallest, median and largest of `values`.
fn spread(mut values: Vec<i64>) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.sort_unstable();
    format!(
        "min {} median {} max {}",
        values[0],
        values[values.len() / 2],
        values[values.len() - 1]
    )
}

fn totals(kernels: &[Kernel]) -> String {
    let ok: Vec<&Kernel> = kernels.iter().filter(|k| k.error.is_none()).collect();
    let compared: Vec<(u32, u32, u32, u32)> = ok
        .iter()
        .filter_map(|k| {
            let l = k.llvm?;
            Some((k.vgpr_file?, l.vgpr_file, k.occupancy?, l.occupancy))
        })
        .collect();
    let mut out = format!(
        "kernels: {}  allocated, verified and interpreted: {}  failed: {}  instructions: {}\n",
        kernels.len(),
        ok.len(),
        kernels.len() - ok.len(),
        ok.iter().map(|k| k.instructions).sum::<usize>()
    );
    let diff: Vec<i64> = compared
        .iter()
        .map(|&(ours, llvm, ..)| i64::from(ours) - i64::from(llvm))
        .collect();
    let occupancy: Vec<i64> = compared
        .iter()
        .map(|&(.., ours, llvm)| i64::from(ours) - i64::from(llvm))
        .collect();
    out += &format!(
        "vgpr_file chromatic - llvm: {}  (lower {}, equal {}, higher {})\n",
        spread(diff.clone()),
        diff.iter().filter(|d| **d < 0).count(),
        diff.iter().filter(|d| **d == 0).count(),
        diff.iter().filter(|d| **d > 0).count()
    );
    out += &format!(
        "occupancy chromatic - llvm: {}  (lower than llvm on {} kernels)\n",
        spread(occupancy.clone()),
        occupancy.iter().filter(|d| **d < 0).count()
    );
    let ways: [(&str, AtBudget); 2] = [
        ("registers", |k| k.at_llvm.as_ref()),
        ("occupancy", |k| k.at_llvm_occupancy.as_ref()),
    ];
    for (what, at) in ways {
        let at: Vec<(&AtLlvm, Llvm)> = kernels
            .iter()
            .filter_map(|k| Some((at(k)?, k.llvm?)))
            .collect();
        if !at.is_empty() {
            out += &at_totals(what, &at);
        }
    }
    let exported = kernels.iter().filter(|k| k.exported.is_some()).count();
    if exported > 0
        || kernels
            .iter()
            .any(|k| k.error.as_deref().is_some_and(is_export_error))
    {
        out += &format!(
            "exported: {exported}/{} kernels assembled by llc from chromatic's allocation\n",
            kernels.len()
        );
    }
    out += &format!(
        "VGPRs <= LLVM on {}/{} kernels\n",
        diff.iter().filter(|d| **d <= 0).count(),
        compared.len()
    );
    out
}
