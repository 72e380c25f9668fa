//! `chromatic corpus DIR`: the main job — every `.chr` file under DIR through the pipeline
//! (parse, validate, analyse), in parallel, with one summary line per function and totals.
//! Output is sorted by file, so it is identical from run to run.

use crate::check::validate;
use crate::diag::Source;
use crate::Outcome;
use chromatic::analysis::Analysis;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The directory to walk (recursively) for `.chr` files.
    dir: String,
}

/// What one file produced: its report lines, or its errors.
struct FileResult {
    lines: Vec<String>,
    errors: Vec<String>,
    functions: usize,
    instructions: usize,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let files = chr_files(Path::new(&args.dir))?;
    if files.is_empty() {
        anyhow::bail!("{}: no .chr files found", args.dir);
    }
    let progress = ProgressBar::new(files.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let results: Vec<FileResult> = files
        .par_iter()
        .map(|path| {
            let result = process(path);
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
            println!("{line}");
        }
        for e in &r.errors {
            eprint!("{e}");
        }
        failed += usize::from(!r.errors.is_empty());
    }
    let functions: usize = results.iter().map(|r| r.functions).sum();
    let instructions: usize = results.iter().map(|r| r.instructions).sum();
    println!(
        "files: {}  functions: {functions}  instructions: {instructions}  failed: {failed}",
        results.len()
    );
    if failed == 0 {
        Outcome::Ok
    } else {
        Outcome::Problem
    }
}

fn process(path: &Path) -> FileResult {
    let mut result = FileResult {
        lines: Vec::new(),
        errors: Vec::new(),
        functions: 0,
        instructions: 0,
    };
    let source = match Source::read(&path.display().to_string()) {
        Ok(source) => source,
        Err(e) => {
            result.errors.push(format!("{e}\n"));
            return result;
        }
    };
    let program = match chromatic::parse(&source.text) {
        Ok(p) => p,
        Err(e) => {
            result.errors.push(source.render(e.pos, &e.message));
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
    for f in &program.functions {
        let analysis = Analysis::new(f, &program.target);
        let max_live: Vec<String> = program
            .target
            .class_ids()
            .map(|c| {
                format!(
                    "{}={}",
                    program.target.class(c).name,
                    analysis.pressure.max_live(c)
                )
            })
            .collect();
        result.functions += 1;
        result.instructions += f.op_count();
        result.lines.push(format!(
            "{} @{}: max_live {}",
            source.name,
            f.name,
            max_live.join(" ")
        ));
    }
    result
}

/// Every `.chr` file under `dir`, sorted.
fn chr_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| anyhow::anyhow!("{}: {e}", d.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "chr") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}
