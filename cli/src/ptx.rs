//! `chromatic ptx FILE...`: chromatic against ptxas on PTX kernels. Per kernel: its
//! instructions, MaxLive, the registers chromatic uses in minimum-registers mode (`r` and
//! `p`), and ptxas's "Used N registers" (from `--manifest`, or by running ptxas); with
//! `--regs r=K` (ptxas gets `--maxrregcount K`) or `--at-ptxas` (K = ptxas's own count
//! for that kernel) the spill and reload bytes of both at that budget; with `--export`,
//! ptxas's count on the kernel chromatic exports (its minimum-registers allocation as PTX)
//! next to its count on the original. Every allocation is verified and its interpreter
//! trace compared with the original's (a kernel that fails is an error, exit 1). The last
//! lines give the totals: `registers <= ptxas on N/M kernels`, kernels needing more than
//! the 7 predicate registers, the distribution of spill bytes against ptxas's, and how the
//! exported kernels assemble. Files run in parallel; output follows file and kernel order
//! and is identical from run to run, except with `--times`, which adds the import,
//! allocation and verification times and the slowest kernels, and the time of each
//! allocation at the budget and the slowest of those.

use crate::corpus::files_with;
use crate::diag::Source;
use crate::options::{parse_regs, parse_source, Regs, ScheduleArgs};
use crate::pipeline::{checked, class_max, Times};
use crate::ptxas::{Counts, Manifest, Ptxas};
use crate::Outcome;
use chromatic::alloc::{AllocOptions, FunctionStats};
use chromatic::ptx::ModuleMap;
use chromatic::schedule::Schedule;
use chromatic::{Function, InstKind, Location, Program, Target};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.ptx` files, or directories to walk for them.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Also allocate every kernel at this budget, e.g. `r=64` (ptxas: `--maxrregcount 64`).
    #[arg(long, value_parser = parse_regs)]
    regs: Option<Regs>,
    /// Also allocate every kernel at ptxas's own register count for it.
    #[arg(long, conflicts_with = "regs")]
    at_ptxas: bool,
    /// Export each minimum-registers allocation as PTX and assemble it with ptxas (the
    /// allocation of the emitted order: export keeps the statements' text order).
    #[arg(long)]
    export: bool,
    /// ptxas's counts on the original kernels, from this manifest (`file`, `kernel`,
    /// `ptxas_regs`, `spill_store_bytes`, `spill_load_bytes`; tab-separated).
    #[arg(long)]
    manifest: Option<String>,
    /// The ptxas to run (default: `ptxas` on the PATH, when there is one).
    #[arg(long)]
    ptxas: Option<String>,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Print the kernels as JSON instead of lines and totals.
    #[arg(long)]
    json: bool,
    /// Add import, allocation and verification times (these vary from run to run).
    #[arg(long)]
    times: bool,
}

/// Registers of the two NVIDIA classes.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Regs2 {
    r: u32,
    p: u32,
}

/// Spill code of an allocation, in bytes of local memory.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Spill {
    store_bytes: u32,
    load_bytes: u32,
}

impl Spill {
    fn of(f: &Function) -> Spill {
        let mut s = Spill::default();
        let bytes = |l: Location| 4 * u32::from(l.len());
        for inst in f.blocks.iter().flat_map(|b| &b.insts) {
            match &inst.kind {
                InstKind::Spill(m) if matches!(m.dst, Location::Slot { .. }) => {
                    s.store_bytes += bytes(m.dst)
                }
                InstKind::Reload(m) if matches!(m.src, Location::Slot { .. }) => {
                    s.load_bytes += bytes(m.src)
                }
                _ => {}
            }
        }
        s
    }

    fn total(&self) -> u32 {
        self.store_bytes + self.load_bytes
    }
}

/// The allocation at a budget, beside ptxas's at the same register count.
#[derive(Clone, Debug, Serialize)]
struct AtBudget {
    regs: u16,
    chromatic: Option<Spill>,
    ptxas: Option<Counts>,
    error: Option<String>,
    /// Microseconds the allocation at the budget took (with `--times`).
    #[serde(skip_serializing_if = "Option::is_none")]
    alloc_us: Option<u64>,
}

/// One kernel.
#[derive(Clone, Debug, Serialize)]
struct Kernel {
    file: String,
    kernel: String,
    instructions: usize,
    /// MaxLive in the emitted order.
    max_live_emitted: Regs2,
    /// MaxLive of the order allocated (after scheduling, when it ran).
    max_live: Regs2,
    /// Blocks the scheduler reordered.
    blocks_scheduled: u32,
    regs: Option<Regs2>,
    ptxas: Option<Counts>,
    budget: Option<AtBudget>,
    /// ptxas on the exported minimum-registers allocation.
    exported: Option<Counts>,
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    times: Option<Times>,
}

/// What a run needs besides the file.
struct Context {
    manifest: Option<Manifest>,
    ptxas: Option<Ptxas>,
    budget: Budget,
    export: bool,
    schedule: Schedule,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Budget {
    None,
    Fixed(u16),
    AtPtxas,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let mut files = Vec::new();
    for path in &args.paths {
        files.extend(ptx_files(Path::new(path))?);
    }
    if files.is_empty() {
        anyhow::bail!("no .ptx files found");
    }
    let budget = match (&args.regs, args.at_ptxas) {
        (Some(regs), _) => Budget::Fixed(fixed_r(regs)?),
        (None, true) => Budget::AtPtxas,
        (None, false) => Budget::None,
    };
    let ctx = Context {
        manifest: args.manifest.as_deref().map(Manifest::read).transpose()?,
        ptxas: Ptxas::find(args.ptxas.as_deref())?,
        budget,
        export: args.export,
        schedule: args.schedule.for_input(true),
    };
    if ctx.export && ctx.ptxas.is_none() {
        anyhow::bail!("--export needs ptxas: on the PATH or given by --ptxas");
    }
    let progress = ProgressBar::new(files.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let kernels: Vec<Kernel> = files
        .par_iter()
        .map(|f| {
            let rows = file_kernels(f, &ctx, args.times);
            progress.inc(1);
            rows
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect();
    progress.finish_and_clear();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&kernels)?);
    } else {
        kernels.iter().for_each(|k| outln!("{}", line(k)));
        out!("{}", totals(&kernels, budget));
        if args.times {
            out!("{}", timing(&kernels));
        }
    }
    Ok(if kernels.iter().any(|k| k.error.is_some()) {
        Outcome::Problem
    } else {
        Outcome::Ok
    })
}

/// `K` of `--regs r=K`.
fn fixed_r(regs: &Regs) -> anyhow::Result<u16> {
    match regs.0.as_slice() {
        [(class, k)] if class == "r" => Ok(*k),
        _ => anyhow::bail!("--regs: give the budget of class `r` only, e.g. r=64"),
    }
}

/// Every `.ptx` file under `path` (or `path` itself), sorted.
fn ptx_files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    files_with(path, &["ptx"])
}

/// A row for a file that could not be read or imported.
fn file_error(file: &str, message: String) -> Vec<Kernel> {
    vec![Kernel {
        file: file.to_string(),
        kernel: String::new(),
        instructions: 0,
        max_live_emitted: Regs2::default(),
        max_live: Regs2::default(),
        blocks_scheduled: 0,
        regs: None,
        ptxas: None,
        budget: None,
        exported: None,
        error: Some(message),
        times: None,
    }]
}

fn file_kernels(path: &Path, ctx: &Context, times: bool) -> Vec<Kernel> {
    let name = path.display().to_string();
    let source = match Source::read(&name) {
        Ok(s) => s,
        Err(e) => return file_error(&name, e.to_string()),
    };
    let start = Instant::now();
    let input = match parse_source(&source) {
        Ok(input) => input,
        Err(rendered) => return file_error(&name, rendered),
    };
    let import_us = start.elapsed().as_micros() as u64;
    let Some(map) = input.ptx else {
        return file_error(&name, "not a .ptx file".into());
    };
    let program = input.program;
    let arch = map.ast.arch.clone();
    let original = original_counts(path, &source.text, &arch, &program, ctx);
    let at_fixed = match (ctx.budget, &ctx.ptxas) {
        (Budget::Fixed(k), Some(ptxas)) => ptxas.assemble(&source.text, &arch, Some(k)).ok(),
        _ => None,
    };
    let kernel_import_us = import_us / program.functions.len().max(1) as u64;
    let (mut rows, allocated): (Vec<Kernel>, Vec<Option<Function>>) = program
        .functions
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let ptxas = original.get(i).copied().flatten();
            let at_fixed = at_fixed.as_ref().and_then(|c| c.get(&f.name).copied());
            let ptx_counts = (ptxas, at_fixed);
            kernel_row(
                &name,
                &program.target,
                f,
                ctx,
                ptx_counts,
                times.then_some(kernel_import_us),
            )
        })
        .unzip();
    if ctx.export {
        export_counts(
            &source.text,
            &arch,
            &map,
            &program,
            allocated,
            ctx,
            &mut rows,
        );
    }
    rows
}

/// One kernel of a file: allocated, verified and interpreted in minimum-registers mode and
/// at the budget; its row and, with `--export`, the allocation to write back. `ptxas` is
/// ptxas's counts on the original and at the fixed budget; `import_us` the kernel's share
/// of the file's import time, with `--times`.
fn kernel_row(
    file: &str,
    target: &Target,
    f: &Function,
    ctx: &Context,
    ptxas: (Option<Counts>, Option<Counts>),
    import_us: Option<u64>,
) -> (Kernel, Option<Function>) {
    let single = Program {
        target: target.clone(),
        functions: vec![f.clone()],
    };
    let mut row = Kernel {
        file: file.to_string(),
        kernel: f.name.clone(),
        instructions: f.op_count(),
        max_live_emitted: Regs2::default(),
        max_live: Regs2::default(),
        blocks_scheduled: 0,
        regs: None,
        ptxas: ptxas.0,
        budget: None,
        exported: None,
        error: None,
        times: import_us.map(|import_us| Times {
            import_us,
            ..Times::default()
        }),
    };
    let options = AllocOptions {
        schedule: ctx.schedule,
        ..AllocOptions::default()
    };
    let allocated = match checked(&single, &options, row.times.as_mut()) {
        Ok((a, stats)) => {
            row.max_live_emitted = per_class(&stats, |c| c.max_live_emitted);
            row.max_live = per_class(&stats, |c| c.max_live);
            row.blocks_scheduled = stats.iter().map(|s| s.blocks_scheduled).sum();
            row.regs = Some(per_class(&stats, |c| c.regs_used.into()));
            export_allocation(&single, ctx, a)
        }
        Err(e) => {
            row.error = Some(e);
            None
        }
    };
    row.budget = at_budget(&single, ctx, ptxas, import_us.is_some());
    (row, allocated)
}

/// ptxas's counts on the original kernels: the manifest's, else ptxas's.
fn original_counts(
    path: &Path,
    text: &str,
    arch: &str,
    program: &Program,
    ctx: &Context,
) -> Vec<Option<Counts>> {
    let from_manifest: Vec<Option<Counts>> = program
        .functions
        .iter()
        .map(|f| ctx.manifest.as_ref().and_then(|m| m.get(path, &f.name)))
        .collect();
    if from_manifest.iter().all(Option::is_some) {
        return from_manifest;
    }
    let ran = ctx
        .ptxas
        .as_ref()
        .and_then(|p| p.assemble(text, arch, None).ok());
    program
        .functions
        .iter()
        .zip(from_manifest)
        .map(|(f, m)| m.or_else(|| ran.as_ref().and_then(|r| r.get(&f.name).copied())))
        .collect()
}

fn per_class(stats: &[FunctionStats], get: impl Fn(&chromatic::alloc::ClassStats) -> u32) -> Regs2 {
    let class = |name: &str| class_max(stats, name, &get);
    Regs2 {
        r: class("r"),
        p: class("p"),
    }
}

fn at_budget(
    single: &Program,
    ctx: &Context,
    (original, fixed): (Option<Counts>, Option<Counts>),
    times: bool,
) -> Option<AtBudget> {
    let (k, ptxas) = match ctx.budget {
        Budget::None => return None,
        Budget::Fixed(k) => (k, fixed),
        Budget::AtPtxas => (original?.regs.min(255) as u16, original),
    };
    let options = AllocOptions {
        budget: vec![("r".into(), k)],
        schedule: ctx.schedule,
        ..AllocOptions::default()
    };
    let mut spent = Times::default();
    let (chromatic, error) = match checked(single, &options, Some(&mut spent)) {
        Ok((a, _)) => (Some(Spill::of(&a.functions[0])), None),
        Err(e) => (None, Some(e)),
    };
    Some(AtBudget {
        regs: k,
        chromatic,
        ptxas,
        error,
        alloc_us: times.then_some(spent.alloc_us),
    })
}

/// The allocation `--export` writes: `allocated`, or with scheduling on, the kernel
/// allocated again in its emitted order (export writes statements in their text order).
fn export_allocation(single: &Program, ctx: &Context, allocated: Program) -> Option<Function> {
    if !ctx.export || ctx.schedule == Schedule::None {
        return allocated.functions.into_iter().next();
    }
    checked(single, &AllocOptions::default(), None)
        .ok()
        .and_then(|(a, _)| a.functions.into_iter().next())
}

/// Exports the minimum-registers allocation of every kernel and assembles it.
fn export_counts(
    text: &str,
    arch: &str,
    map: &ModuleMap,
    program: &Program,
    allocated: Vec<Option<Function>>,
    ctx: &Context,
    rows: &mut [Kernel],
) {
    let Some(functions) = allocated.into_iter().collect::<Option<Vec<_>>>() else {
        return;
    };
    let Some(ptxas) = &ctx.ptxas else { return };
    let all = Program {
        target: program.target.clone(),
        functions,
    };
    let result = chromatic::ptx::export::export(text, map, program, &all)
        .map_err(|e| format!("export: {e}"))
        .and_then(|ptx| {
            ptxas
                .assemble(&ptx, arch, None)
                .map_err(|e| format!("ptxas on the export: {e}"))
        });
    for row in rows.iter_mut() {
        match &result {
            Ok(counts) => row.exported = counts.get(&row.kernel).copied(),
            Err(e) => row.error = Some(e.clone()),
        }
    }
}

fn line(k: &Kernel) -> String {
    let mut s = format!("{} @{}:", k.file, k.kernel);
    if k.kernel.is_empty() {
        s.pop();
    } else {
        s += &format!(
            " insts {}  max_live r={} p={}",
            k.instructions, k.max_live_emitted.r, k.max_live_emitted.p
        );
        if k.blocks_scheduled > 0 {
            s += &format!("  scheduled r={} p={}", k.max_live.r, k.max_live.p);
        }
    }
    if let Some(r) = k.regs {
        s += &format!("  regs r={} p={}", r.r, r.p);
    }
    s += &format!(
        "  ptxas {}",
        k.ptxas.map_or("-".into(), |c| c.regs.to_string())
    );
    if let Some(b) = &k.budget {
        let ours = b.chromatic.map_or("-".into(), |c| {
            format!("{}+{}", c.store_bytes, c.load_bytes)
        });
        let theirs = b.ptxas.map_or("-".into(), |c| {
            format!("{}+{}", c.spill_store_bytes, c.spill_load_bytes)
        });
        s += &format!("  at r={}: spill bytes {ours} ptxas {theirs}", b.regs);
        if let Some(us) = b.alloc_us {
            s += &format!(" in {us} µs");
        }
    }
    if let Some(e) = k.exported {
        s += &format!("  exported: ptxas {}", e.regs);
    }
    if let Some(e) = &k.error {
        s += &format!("  error: {}", e.lines().next().unwrap_or_default());
    }
    if let Some(t) = k.times {
        s += &format!("  {} µs", t.total());
    }
    s
}

fn totals(kernels: &[Kernel], budget: Budget) -> String {
    let rows: Vec<&Kernel> = kernels.iter().filter(|k| !k.kernel.is_empty()).collect();
    let failed = kernels.iter().filter(|k| k.error.is_some()).count();
    let compared: Vec<(u32, u32)> = rows
        .iter()
        .filter_map(|k| Some((k.regs?.r, k.ptxas?.regs)))
        .collect();
    let at_most = compared
        .iter()
        .filter(|(ours, theirs)| ours <= theirs)
        .count();
    let over7 = rows.iter().filter(|k| k.max_live.p > 7).count();
    let mut s = format!(
        "kernels: {}  instructions: {}  regs r: {} (ptxas {})  predicates over 7: {over7}  failed: {failed}\n",
        rows.len(),
        rows.iter().map(|k| k.instructions).sum::<usize>(),
        compared.iter().map(|c| c.0).sum::<u32>(),
        compared.iter().map(|c| c.1).sum::<u32>(),
    );
    if budget != Budget::None {
        s += &spill_totals(&rows);
    }
    let exported: Vec<(u32, u32)> = rows
        .iter()
        .filter_map(|k| Some((k.exported?.regs, k.ptxas?.regs)))
        .collect();
    if !exported.is_empty() {
        let lower = exported.iter().filter(|(e, o)| e < o).count();
        let equal = exported.iter().filter(|(e, o)| e == o).count();
        s += &format!(
            "exported: {} assembled  ptxas registers on the export vs the original: lower {lower}, equal {equal}, higher {} (total {} vs {})\n",
            exported.len(),
            exported.len() - lower - equal,
            exported.iter().map(|e| e.0).sum::<u32>(),
            exported.iter().map(|e| e.1).sum::<u32>(),
        );
    }
    s + &format!(
        "registers <= ptxas on {at_most}/{} kernels\n",
        compared.len()
    )
}

/// Spill bytes at the budget against ptxas's, in total and per kernel.
fn spill_totals(rows: &[&Kernel]) -> String {
    let pairs: Vec<(u32, u32)> = rows
        .iter()
        .filter_map(|k| {
            let b = k.budget.as_ref()?;
            Some((b.chromatic?.total(), b.ptxas?.spill_bytes()))
        })
        .collect();
    let over = rows
        .iter()
        .filter(|k| k.budget.as_ref().is_some_and(|b| b.error.is_some()))
        .count();
    let (ours, theirs): (u32, u32) = pairs.iter().fold((0, 0), |a, p| (a.0 + p.0, a.1 + p.1));
    let count = |f: &dyn Fn(u32, u32) -> bool| pairs.iter().filter(|(o, t)| f(*o, *t)).count();
    let ratio = if theirs > 0 {
        format!("{:.2}x", f64::from(ours) / f64::from(theirs))
    } else {
        "-".into()
    };
    format!(
        "at the budget: spill+reload bytes {ours} (ptxas {theirs}, {ratio}) over {} kernels, {over} not allocated\n\
spill distribution: none for both {}, chromatic none {}, ptxas none {}, chromatic <= ptxas {}, <= 2x {}, > 2x {}\n",
        pairs.len(),
        count(&|o, t| o == 0 && t == 0),
        count(&|o, t| o == 0 && t > 0),
        count(&|o, t| o > 0 && t == 0),
        count(&|o, t| o > 0 && t > 0 && o <= t),
        count(&|o, t| t > 0 && o > t && o <= 2 * t),
        count(&|o, t| t > 0 && o > 2 * t),
    )
}

/// Total times and the slowest kernels.
fn timing(kernels: &[Kernel]) -> String {
    let mut timed: Vec<(&Kernel, Times)> =
        kernels.iter().filter_map(|k| Some((k, k.times?))).collect();
    let sum = |f: fn(&Times) -> u64| timed.iter().map(|(_, t)| f(t)).sum::<u64>();
    let mut s = format!(
        "time: import {} ms  allocation {} ms  verification {} ms  total {} ms (one core)\n",
        sum(|t| t.import_us) / 1000,
        sum(|t| t.alloc_us) / 1000,
        sum(|t| t.verify_us) / 1000,
        sum(Times::total) / 1000,
    );
    timed.sort_by_key(|(_, t)| std::cmp::Reverse(t.total()));
    for (k, t) in timed.iter().take(5) {
        s += &format!(
            "slowest: {} @{} ({} insts): {} µs (import {}, allocation {}, verification {})\n",
            k.file,
            k.kernel,
            k.instructions,
            t.total(),
            t.import_us,
            t.alloc_us,
            t.verify_us
        );
    }
    s + &budget_timing(kernels)
}

/// The allocations at the budget: their total time and the slowest.
fn budget_timing(kernels: &[Kernel]) -> String {
    let mut timed: Vec<(&Kernel, u64)> = kernels
        .iter()
        .filter_map(|k| Some((k, k.budget.as_ref()?.alloc_us?)))
        .collect();
    if timed.is_empty() {
        return String::new();
    }
    let total: u64 = timed.iter().map(|(_, us)| us).sum();
    let mut s = format!("time at the budget: allocation {} ms\n", total / 1000);
    timed.sort_by_key(|&(_, us)| std::cmp::Reverse(us));
    for (k, us) in timed.iter().take(5) {
        s += &format!(
            "slowest at the budget: {} @{} ({} insts): allocation {us} µs\n",
            k.file, k.kernel, k.instructions
        );
    }
    s
}
