//! `chromatic corpus DIR`: the main job — every `.chr`, `.ptx` and `.mir` file under DIR through the pipeline
//! (parse, validate, allocate, verify, compare interpreter traces), in parallel, with one
//! line per function and totals. A program whose pressure exceeds its register file is
//! reported as `over-budget` (it needs spilling) and counted apart; every other problem is
//! a failure. Output is sorted by file, so it is identical from run to run (allocation
//! times are left out for that reason). `--occupancy N` budgets every file whose target has
//! an occupancy model for N waves/warps; the others keep their whole register file.

use crate::check::validate;
use crate::diag::Source;
use crate::options::parse_source;
use crate::pipeline::{run_pipeline, Verdict};
use crate::Outcome;
use chromatic::alloc::{AllocOptions, FunctionStats};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The directory to walk (recursively) for `.chr`, `.ptx` and `.mir` files.
    dir: String,
    /// Waves (AMD) or warps (NVIDIA) to reach on targets with an occupancy model: each class
    /// gets the most registers that still allow N.
    #[arg(long, value_name = "N")]
    occupancy: Option<u32>,
}

/// What one file produced: its report lines, or its errors.
struct FileResult {
    lines: Vec<String>,
    errors: Vec<String>,
    functions: usize,
    instructions: usize,
    over_budget: bool,
    copies: u32,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let files = program_files(Path::new(&args.dir))?;
    if files.is_empty() {
        anyhow::bail!("{}: no .chr, .ptx or .mir files found", args.dir);
    }
    let progress = ProgressBar::new(files.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let results: Vec<FileResult> = files
        .par_iter()
        .map(|path| {
            let result = process(path, args.occupancy);
            progress.inc(1);
            result
        })
        .collect();
    progress.finish_and_clear();
    Ok(report(&results))
}

fn report(results: &[FileResult]) -> Outcome {
    let mut failed = 0;
    for r in results {
        for line in &r.lines {
            outln!("{line}");
        }
        for e in &r.errors {
            eprint!("{e}");
        }
        failed += usize::from(!r.errors.is_empty());
    }
    let functions: usize = results.iter().map(|r| r.functions).sum();
    let instructions: usize = results.iter().map(|r| r.instructions).sum();
    let over: usize = results.iter().filter(|r| r.over_budget).count();
    let copies: u32 = results.iter().map(|r| r.copies).sum();
    outln!(
        "files: {}  functions: {functions}  instructions: {instructions}  copies: {copies}  over-budget: {over}  failed: {failed}",
        results.len()
    );
    if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::Problem
    }
}

fn process(path: &Path, occupancy: Option<u32>) -> FileResult {
    let mut result = FileResult {
        lines: Vec::new(),
        errors: Vec::new(),
        functions: 0,
        instructions: 0,
        over_budget: false,
        copies: 0,
    };
    let source = match Source::read(&path.display().to_string()) {
        Ok(source) => source,
        Err(e) => {
            result.errors.push(format!("{e}\n"));
            return result;
        }
    };
    let program = match parse_source(&source) {
        Ok(input) => input.program,
        Err(rendered) => {
            result.errors.push(rendered);
            return result;
        }
    };
    let errors = validate(&program);
    if !errors.is_empty() {
        result
            .errors
            .extend(errors.iter().map(|e| source.render(e.pos, &e.message)));
        return result;
    }
    let options = AllocOptions {
        occupancy: occupancy.filter(|_| program.target.max_occupancy().is_some()),
        ..AllocOptions::default()
    };
    match run_pipeline(&program, &options) {
        Verdict::Verified { stats, .. } => {
            for s in &stats {
                result.functions += 1;
                result.instructions += s.instructions;
                result.copies += s.classes.iter().map(|c| c.copies + c.swaps).sum::<u32>();
                result.lines.push(format!("{} {}", source.name, summary(s)));
            }
        }
        Verdict::OverBudget(e) => {
            result.over_budget = true;
            result
                .lines
                .push(format!("{} over-budget: {e}", source.name));
        }
        Verdict::Failed(message) => result.errors.push(format!("{}: {message}\n", source.name)),
    }
    result
}

/// `@f: max_live s=3 v=5  regs s=3 v=5  copies 2  swaps 1  occupancy 10  verified`
fn summary(s: &FunctionStats) -> String {
    let per_class = |f: &dyn Fn(&chromatic::alloc::ClassStats) -> String| {
        s.classes
            .iter()
            .map(|c| format!("{}={}", c.class, f(c)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let copies: u32 = s.classes.iter().map(|c| c.copies).sum();
    let swaps: u32 = s.classes.iter().map(|c| c.swaps).sum();
    let occupancy = s.occupancy.map_or(String::from("-"), |o| o.to_string());
    format!(
        "@{}: max_live {}  regs {}  copies {copies}  swaps {swaps}  occupancy {occupancy}  verified",
        s.function,
        per_class(&|c| c.max_live.to_string()),
        per_class(&|c| c.regs_used.to_string()),
    )
}

/// Every `.chr`, `.ptx` and `.mir` file under `dir`, sorted.
pub fn program_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    files_with(dir, &["chr", "ptx", "mir"])
}

/// Every file under `dir` whose extension is one of `extensions`, sorted.
pub fn files_with(dir: &Path, extensions: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| anyhow::anyhow!("{}: {e}", d.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .extension()
                .is_some_and(|e| extensions.iter().any(|x| e == *x))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}
