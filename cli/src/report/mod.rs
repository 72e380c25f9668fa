//! `chromatic report PATH...`: pre-merge statistics in the style of Mesa's shader-db.
//! Every function of every `.chr`, `.ptx` and `.mir` file (directories are walked) is allocated,
//! verified by `chromatic_verifier` and run on the interpreter against the original (the
//! pipeline of [`crate::pipeline`]); the report gives per function and class the
//! instructions after allocation, registers, occupancy, spill code, copies and their
//! weighted costs, then totals. `--save` writes the records as JSON ([`record`]);
//! `--baseline` compares with a saved run the way shader-db's `report.py` does
//! ([`shaderdb`]), and `--fail-on` turns what it finds into exit status 1 for CI gates.
//! Files run in parallel with a progress bar on standard error; standard output is sorted
//! and carries no times unless `--times` asks for them, so it is identical from run to
//! run.

mod print;
pub mod record;
pub mod shaderdb;

use crate::alloc::PolicyArg;
use crate::check::validate;
use crate::corpus::program_files;
use crate::diag::Source;
use crate::options::{is_mir, is_ptx, parse_source, BudgetArgs, ScheduleArgs};
use crate::pipeline::{run_pipeline, Verdict};
use crate::Outcome as Exit;
use chromatic::alloc::{AllocError, AllocOptions, Allocator};
use chromatic::Program;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use record::{program_name, Metrics, Outcome, Record, Saved};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.chr`, `.ptx` and `.mir` files, or directories to walk for them.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Allocate for this target instead of each file's (`.chr` files whose class names
    /// match it).
    #[arg(long)]
    target: Option<String>,
    /// The allocator: `ssa` (production), `coloring` (Chaitin–Briggs), `linear`
    /// (linear scan), `regalloc2-ion` or `regalloc2-fast` (regalloc2 0.15).
    #[arg(long, default_value_t = Allocator::Ssa, conflicts_with = "compare")]
    allocator: Allocator,
    /// Several allocators side by side, e.g. `ssa,coloring,linear`.
    #[arg(long, value_delimiter = ',', value_name = "A,B,...")]
    compare: Vec<Allocator>,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// `dense` (lowest free register) or `round-robin`.
    #[arg(long, value_enum, default_value_t = PolicyArg::Dense)]
    policy: PolicyArg,
    /// Print the records as JSON (the format `--save` writes) instead of the report.
    #[arg(long)]
    json: bool,
    /// Write the records as JSON to this file (times only with `--times`, apart from the
    /// records, so that saves of the same allocations are identical).
    #[arg(long, value_name = "STATS.json")]
    save: Option<String>,
    /// Compare with the records saved in this file, shader-db style.
    #[arg(long, value_name = "STATS.json")]
    baseline: Option<String>,
    /// Exit 1 when the comparison finds programs HURT, programs LOST, or either.
    #[arg(long, value_enum, requires = "baseline")]
    fail_on: Option<FailOn>,
    /// Show and save allocation times (they vary from run to run, so they are off by
    /// default); with `--baseline`, their totals are compared when the baseline has them.
    #[arg(long)]
    times: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FailOn {
    Hurt,
    Lost,
    Any,
}

pub fn run(args: &Args) -> anyhow::Result<Exit> {
    let files = files(&args.paths)?;
    let programs = load_all(&files, args.target.as_deref())?;
    let mut problems = programs.iter().filter(|p| p.1.is_none()).count();
    let allocators: Vec<Allocator> = if args.compare.is_empty() {
        vec![args.allocator]
    } else {
        args.compare.clone()
    };
    let saved = run_all(&programs, &allocators, args);
    problems += saved
        .records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed { .. }))
        .count();
    for r in &saved.records {
        if let Outcome::Failed { reason } = &r.outcome {
            eprintln!(
                "error: {}: allocation FAILED: {reason}",
                program_name(r, true)
            );
        }
    }
    let shown = Saved {
        records: saved.records.clone(),
        times_us: if args.times {
            saved.times_us.clone()
        } else {
            Default::default()
        },
    };
    if let Some(path) = &args.save {
        shown.write(path)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        out!("{}", print::report(&shown, &allocators));
        out!("{}", side_by_side(&saved.records, &allocators));
    }
    if let Some(path) = &args.baseline {
        let before = Saved::read(path)?;
        let times = args.times.then_some((&before.times_us, &shown.times_us));
        let comparison = shaderdb::compare(&before.records, &saved.records, times);
        if !args.json {
            out!("\n{}", comparison.text);
        }
        problems += gate(args.fail_on, &comparison);
    }
    Ok(if problems == 0 {
        Exit::Ok
    } else {
        Exit::Problem
    })
}

/// With `--compare A,B,...`: each allocator after the first against the first, the four
/// shader-db lines per metric.
fn side_by_side(records: &[Record], allocators: &[Allocator]) -> String {
    let Some((first, rest)) = allocators.split_first() else {
        return String::new();
    };
    let of = |a: &Allocator| -> Vec<Record> {
        records
            .iter()
            .filter(|r| r.allocator == a.name())
            .cloned()
            .collect()
    };
    let base = of(first);
    rest.iter()
        .map(|a| {
            let c = shaderdb::compare(&base, &of(a), None);
            format!("\n{a} against {first}:\n\n{}", c.summary)
        })
        .collect()
}

/// 1 when `--fail-on` finds what it names, with the reason on standard error.
fn gate(fail_on: Option<FailOn>, c: &shaderdb::Comparison) -> usize {
    let (hurt, lost) = match fail_on {
        None => return 0,
        Some(FailOn::Hurt) => (c.hurt, 0),
        Some(FailOn::Lost) => (0, c.lost),
        Some(FailOn::Any) => (c.hurt, c.lost),
    };
    if hurt + lost == 0 {
        return 0;
    }
    eprintln!("report: {hurt} HURT, {lost} LOST against the baseline (--fail-on)");
    1
}

/// The files named and those under the directories named, in order.
fn files(paths: &[String]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        let p = Path::new(path);
        if p.is_dir() {
            files.extend(program_files(p)?);
        } else {
            files.push(p.to_path_buf());
        }
    }
    if files.is_empty() {
        anyhow::bail!("no .chr, .ptx or .mir files found");
    }
    Ok(files)
}

/// Reads, parses and validates every file; a problem in one is printed against its
/// source and leaves `None`.
fn load_all(
    files: &[PathBuf],
    target: Option<&str>,
) -> anyhow::Result<Vec<(String, Option<Program>)>> {
    let target = target
        .map(|name| chromatic::Target::builtin(name).map_err(|e| anyhow::anyhow!("--target: {e}")))
        .transpose()?;
    files
        .par_iter()
        .map(|path| {
            let source = Source::read(&path.display().to_string())?;
            let program = match load(&source, target.as_ref()) {
                Ok(p) => Some(p),
                Err(rendered) => {
                    eprint!("{rendered}");
                    None
                }
            };
            Ok((source.name, program))
        })
        .collect()
}

fn load(source: &Source, target: Option<&chromatic::Target>) -> Result<Program, String> {
    if target.is_some() && (is_ptx(&source.name) || is_mir(&source.name)) {
        return Err(format!(
            "{}: --target applies to .chr files only\n",
            source.name
        ));
    }
    let program = match target {
        Some(t) => chromatic::parse::parse_for_target(&source.text, t).map_err(|e| {
            source.render(e.pos, &format!("{} (with --target {})", e.message, t.name))
        })?,
        None => parse_source(source)?.program,
    };
    let errors = validate(&program);
    if errors.is_empty() {
        Ok(program)
    } else {
        Err(errors
            .iter()
            .map(|e| source.render(e.pos, &e.message))
            .collect())
    }
}

/// Every program under every allocator, in parallel; records in file, function and
/// allocator order.
fn run_all(programs: &[(String, Option<Program>)], allocators: &[Allocator], args: &Args) -> Saved {
    let jobs: Vec<(&String, &Program, &Allocator)> = programs
        .iter()
        .filter_map(|(name, p)| Some((name, p.as_ref()?)))
        .flat_map(|(name, p)| allocators.iter().map(move |a| (name, p, a)))
        .collect();
    let progress = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let results: Vec<Vec<(Record, Option<u64>)>> = jobs
        .par_iter()
        .map(|(file, program, allocator)| {
            let options = AllocOptions {
                allocator: **allocator,
                schedule: args.schedule.for_input(is_ptx(file) || is_mir(file)),
                ..options_for(program, args)
            };
            let records = records(file, program, &options);
            progress.inc(1);
            records
        })
        .collect();
    progress.finish_and_clear();
    let mut saved = Saved::default();
    let mut all: Vec<(Record, Option<u64>)> = results.into_iter().flatten().collect();
    all.sort_by(|(x, _), (y, _)| {
        (&x.file, &x.function, &x.allocator).cmp(&(&y.file, &y.function, &y.allocator))
    });
    for (r, time) in all {
        if let Some(t) = time {
            saved.times_us.insert(program_name(&r, true), t);
        }
        saved.records.push(r);
    }
    saved
}

/// The budget of the command line for one program: classes its target lacks are left
/// out, a class smaller than its budget keeps its whole file, and `--occupancy` applies
/// where the target has an occupancy model.
fn options_for(program: &Program, args: &Args) -> AllocOptions {
    let mut options = args.budget.options(args.policy.into());
    let target = &program.target;
    options.budget = options
        .budget
        .into_iter()
        .filter_map(|(class, k)| {
            let units = target.class(target.class_by_name(&class)?).units;
            Some((class, k.min(units)))
        })
        .collect();
    options.occupancy = options
        .occupancy
        .filter(|_| program.target.max_occupancy().is_some());
    options
}

/// One record per function, with its allocation time when it was allocated.
fn records(file: &str, program: &Program, options: &AllocOptions) -> Vec<(Record, Option<u64>)> {
    let record = |function: &str, outcome: Outcome| Record {
        file: file.to_string(),
        function: function.to_string(),
        allocator: options.allocator.to_string(),
        outcome,
    };
    let each = |outcome: Outcome| {
        program
            .functions
            .iter()
            .map(|f| (record(&f.name, outcome.clone()), None))
            .collect()
    };
    match run_pipeline(program, options) {
        Verdict::Verified { allocated, stats } => stats
            .iter()
            .zip(&allocated.functions)
            .map(|(s, f)| {
                let m = Metrics::of(s, f);
                (
                    record(&s.function, Outcome::Verified(m)),
                    Some(s.alloc_time_us),
                )
            })
            .collect(),
        Verdict::OverBudget(AllocError::NotHandled { message, .. }) => {
            each(Outcome::NotAllocated { reason: message })
        }
        Verdict::OverBudget(e) => each(Outcome::NotAllocated {
            reason: e.to_string(),
        }),
        Verdict::Failed(reason) => each(Outcome::Failed { reason }),
    }
}
