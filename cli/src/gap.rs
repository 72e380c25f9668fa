//! `chromatic gap FILE...`: the production allocator against the optimum, per function and
//! class. The allocator runs first (allocated, verified, interpreted); then, with
//! `--problem minregs` (the default), the ILP oracle (`chromatic_oracle::minregs`) finds
//! the least registers of every class without spilling, warm-started from the
//! allocator's assignment, and its allocation is decoded, verified and run against the
//! original like any other: a row reports a number only for an allocation that verifies.
//! With `--problem spill`, each class below its MaxLive at the budget gets the spill
//! oracle's lower bound (`chromatic_oracle::spill`), a bound-only row with no allocation.
//!
//! Functions run in parallel with a progress bar on stderr; rows follow file, function and
//! class order. Rows of a function the allocator spilled (it may, even at the whole
//! register file) are marked `(spills)` and left out of the gap figures: its registers
//! do not compare with an allocation without spills. Solve times change from run to run, so they are printed only with
//! `--times` (and always in `--json`); the rest of the output is deterministic when the
//! limits are node limits or no time limit is reached. The last line sums up:
//! `optimal proven: N/M  mean gap: X%  max gap: Y%  verified: V/M`.

use crate::gap_svg::{self, GapBar};
use crate::options::{parse_solver, refuse_to_overwrite, BudgetArgs};
use crate::pipeline::{run_pipeline, traces_disagree, Verdict};
use crate::sweep::{files_under, load};
use crate::Outcome;
use chromatic::alloc::{budget_of, AllocOptions, ClassStats, FunctionStats, Policy};
use chromatic::{Function, Program};
use chromatic_oracle::allocation::allocate;
use chromatic_oracle::copies::min_copies;
use chromatic_oracle::minregs::{self, Status};
use chromatic_oracle::solver::Solver;
use chromatic_oracle::OracleError;
use chromatic_oracle::{residency, spill};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The least registers per class without spilling.
    Minregs,
    /// The least spill cost of each class above its budget, as a verified allocation.
    Spill,
    /// The least frequency-weighted copies per class without spilling (optimal
    /// coalescing), within the registers of the starting assignment.
    Copies,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.chr` or `.ptx` files, or directories to walk for `.chr` files.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Which optimum to compute.
    #[arg(long, value_enum, default_value = "minregs")]
    problem: Kind,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Seconds the solver may spend per function and class.
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    time_limit: f64,
    /// Branch-and-bound nodes the solver may explore per function and class.
    #[arg(long, value_name = "N")]
    nodes: Option<u64>,
    /// The ILP solver: `microlp` (pure Rust) or `highs` (in a build with `--features
    /// highs`).
    #[arg(long, value_parser = parse_solver, default_value = "microlp", value_name = "SOLVER")]
    solver: Solver,
    /// Write each file's optimal allocation as `DIR/<name>.chr` (minregs, when every
    /// function of the file verified).
    #[arg(long, value_name = "DIR")]
    emit_dir: Option<PathBuf>,
    /// Also draw the gap of every verified row as an SVG chart into this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Print the rows and the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Print each row's solve time.
    #[arg(long)]
    times: bool,
}

/// One function and class.
#[derive(Debug, Clone, Serialize)]
struct Row {
    file: String,
    function: String,
    class: String,
    max_live: u32,
    /// The production allocator's registers used (minregs) or spill cost (spill).
    heuristic: f64,
    /// Whether the allocator spilled in the function (minregs: its registers then do not
    /// compare with an allocation without spills — lane spills take registers of another
    /// class — and the row is left out of the gap figures).
    heuristic_spills: bool,
    /// The oracle's best verified allocation (minregs); `None` for bound-only rows.
    best: Option<f64>,
    bound: f64,
    /// `optimal`, `limit` or `bound-only`.
    status: &'static str,
    variables: usize,
    constraints: usize,
    seconds: f64,
    verified: bool,
}

impl Row {
    fn proven(&self) -> bool {
        self.status == "optimal"
    }

    /// How far the heuristic is above the oracle's best (or its bound), in percent.
    fn gap(&self) -> f64 {
        let reference = self.best.unwrap_or(self.bound);
        if reference > 0.0 {
            100.0 * (self.heuristic - reference) / reference
        } else if self.heuristic > 0.0 {
            100.0
        } else {
            0.0
        }
    }
}

/// What one function produced.
struct Done {
    rows: Vec<Row>,
    allocated: Option<Function>,
    error: Option<String>,
    /// Why the function (or one class of it) has no row, when that is not a failure: it
    /// needs spilling, has no solution in the model or none in the limits, or the model
    /// is over its size cap.
    skipped: Vec<String>,
}

/// An oracle answer that is no failure: the function needs spilling, or has no solution
/// in the model, in the limits, or at all.
fn is_unsolved(e: &OracleError) -> bool {
    matches!(
        e,
        OracleError::NeedsSpilling { .. }
            | OracleError::Infeasible
            | OracleError::NoSolution
            | OracleError::OutsideModel(_)
    )
}

impl Done {
    fn skipped(why: String) -> Done {
        Done {
            rows: Vec::new(),
            allocated: None,
            error: None,
            skipped: vec![why],
        }
    }

    fn failed(error: String) -> Done {
        Done {
            rows: Vec::new(),
            allocated: None,
            error: Some(error),
            skipped: Vec::new(),
        }
    }
}

/// One file with the allocator's verified result.
struct Loaded {
    name: String,
    program: Program,
    budget: Vec<u16>,
    allocated: Program,
    stats: Vec<FunctionStats>,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let options = args.budget.options(Policy::default());
    let (loaded, mut problems) = load_all(&args.paths, &options)?;
    let limits = minregs::Limits {
        time: Duration::try_from_secs_f64(args.time_limit)
            .map_err(|_| anyhow::anyhow!("--time-limit {}: not a duration", args.time_limit))?,
        nodes: args.nodes,
        solver: args.solver,
    };
    let spill_limits = spill::Limits {
        residency: residency::Limits {
            time: limits.time,
            nodes: args.nodes,
            solver: args.solver,
            ..residency::Limits::default()
        },
        assignment: limits,
    };
    let jobs: Vec<(usize, usize)> = loaded
        .iter()
        .enumerate()
        .flat_map(|(i, l)| (0..l.program.functions.len()).map(move |j| (i, j)))
        .collect();
    let progress = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let done: Vec<Done> = jobs
        .par_iter()
        .map(|&(i, j)| {
            let d = match args.problem {
                Kind::Minregs => minregs_rows(&loaded[i], j, limits),
                Kind::Spill => spill_rows(&loaded[i], j, spill_limits),
                Kind::Copies => copies_rows(&loaded[i], j, limits),
            };
            progress.inc(1);
            d
        })
        .collect();
    progress.finish_and_clear();
    for d in &done {
        if let Some(e) = &d.error {
            eprintln!("error: {e}");
            problems += 1;
        }
    }
    problems += done
        .iter()
        .flat_map(|d| &d.rows)
        .filter(|r| !r.verified && r.best.is_some())
        .count();
    if let Some(dir) = &args.emit_dir {
        emit(dir, &loaded, &jobs, &done)?;
    }
    let skipped: Vec<String> = done.iter().flat_map(|d| d.skipped.clone()).collect();
    let rows: Vec<Row> = done.into_iter().flat_map(|d| d.rows).collect();
    print(&rows, &skipped, args)?;
    if let Some(path) = &args.svg {
        draw(path, &rows, args.problem)?;
    }
    Ok(if problems == 0 {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}

/// The chart of the rows with an oracle answer (verified, or a bound), in row order.
fn draw(path: &Path, rows: &[Row], problem: Kind) -> anyhow::Result<()> {
    let bars: Vec<GapBar> = rows
        .iter()
        .filter(|r| r.verified || r.best.is_none())
        .map(|r| GapBar {
            label: format!("{} @{} {}", r.file, r.function, r.class),
            heuristic: r.heuristic,
            oracle: r.best.unwrap_or(r.bound),
            floor: matches!(problem, Kind::Minregs).then_some(f64::from(r.max_live)),
        })
        .collect();
    let measure = match problem {
        Kind::Minregs => "registers without spilling",
        Kind::Spill => "weighted spill cost",
        Kind::Copies => "weighted copies",
    };
    std::fs::write(path, gap_svg::render(measure, &bars))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Every file read, validated and allocated by the production allocator; the number of
/// files that failed (reported on stderr), a file whose target has no budget for the
/// occupancy asked for among them (the others go on).
fn load_all(paths: &[String], options: &AllocOptions) -> anyhow::Result<(Vec<Loaded>, usize)> {
    let mut files = Vec::new();
    for path in paths {
        files.extend(files_under(Path::new(path))?);
    }
    let mut loaded = Vec::new();
    let mut problems = 0;
    for path in files {
        let name = path.display().to_string();
        let program = match load(&path)? {
            Ok(p) => p,
            Err(message) => {
                eprint!("{message}");
                problems += 1;
                continue;
            }
        };
        let budget = match budget_of(&program.target, options) {
            Ok(budget) => budget,
            Err(e) => {
                eprintln!("{name}: {e}");
                problems += 1;
                continue;
            }
        };
        match run_pipeline(&program, options) {
            Verdict::Verified { allocated, stats } => loaded.push(Loaded {
                name,
                program,
                budget,
                allocated,
                stats,
            }),
            Verdict::OverBudget(e) => {
                eprintln!("{name}: the allocator cannot meet the budget: {e}");
                problems += 1;
            }
            Verdict::Failed(message) => {
                eprintln!("{name}: {message}");
                problems += 1;
            }
        }
    }
    Ok((loaded, problems))
}

/// The oracle's allocation of function `j`, checked; one row per class with values.
fn minregs_rows(l: &Loaded, j: usize, limits: minregs::Limits) -> Done {
    let f = &l.program.functions[j];
    let hint = l.allocated.functions.get(j);
    let answer = match allocate(f, &l.program.target, &l.budget, hint, limits) {
        Ok(a) => a,
        Err(e) if is_unsolved(&e) => return Done::skipped(format!("{} @{}: {e}", l.name, f.name)),
        Err(e) => return Done::failed(format!("{} @{}: oracle: {e}", l.name, f.name)),
    };
    let check = check(&l.program, j, &answer.function, &l.budget);
    let rows = answer
        .classes
        .iter()
        .map(|c| Row {
            file: l.name.clone(),
            function: f.name.clone(),
            class: l.program.target.class(c.class).name.clone(),
            max_live: u32::from(c.max_live),
            heuristic: f64::from(l.stats[j].classes[c.class.index()].regs_used),
            heuristic_spills: l.stats[j].classes.iter().any(spills),
            best: Some(f64::from(c.regs)),
            bound: f64::from(c.bound),
            status: match c.status {
                Status::Optimal => "optimal",
                Status::Limit => "limit",
            },
            variables: c.variables,
            constraints: c.constraints,
            seconds: c.seconds,
            verified: check.is_none(),
        })
        .collect();
    Done {
        rows,
        allocated: check.is_none().then_some(answer.function),
        error: check.map(|e| format!("{} @{}: the oracle's allocation {e}", l.name, f.name)),
        skipped: Vec::new(),
    }
}

/// The copies oracle's allocation of function `j`, checked; one row per class with the
/// allocator's and the oracle's frequency-weighted copies.
fn copies_rows(l: &Loaded, j: usize, limits: minregs::Limits) -> Done {
    let f = &l.program.functions[j];
    let target = &l.program.target;
    let hint = l.allocated.functions.get(j);
    let answer = match min_copies(f, target, &l.budget, hint, limits) {
        Ok(a) => a,
        Err(e) if is_unsolved(&e) => return Done::skipped(format!("{} @{}: {e}", l.name, f.name)),
        Err(e) => return Done::failed(format!("{} @{}: copies oracle: {e}", l.name, f.name)),
    };
    let analysis = chromatic::analysis::Analysis::new(f, target);
    let measured = chromatic::alloc::stats::collect(f, &answer.function, target, &analysis, 0);
    let mut problem = check(&l.program, j, &answer.function, &l.budget);
    let rows = answer
        .classes
        .iter()
        .map(|c| {
            let counted = measured.classes[c.class.index()].weighted_copies;
            if (counted - c.cost).abs() > 1e-6 * counted.max(1.0) && problem.is_none() {
                problem = Some(format!(
                    "has {counted} weighted copies by the allocator's count, not the model's {}",
                    c.cost
                ));
            }
            Row {
                file: l.name.clone(),
                function: f.name.clone(),
                class: target.class(c.class).name.clone(),
                max_live: l.stats[j].classes[c.class.index()].max_live,
                heuristic: l.stats[j].classes[c.class.index()].weighted_copies,
                heuristic_spills: l.stats[j].classes.iter().any(spills),
                best: Some(c.cost),
                bound: c.bound,
                status: match c.status {
                    Status::Optimal => "optimal",
                    Status::Limit => "limit",
                },
                variables: c.variables,
                constraints: c.constraints,
                seconds: c.seconds,
                verified: true,
            }
        })
        .collect::<Vec<Row>>();
    let verified = problem.is_none();
    Done {
        rows: rows.into_iter().map(|r| Row { verified, ..r }).collect(),
        allocated: verified.then_some(answer.function),
        error: problem.map(|e| format!("{} @{}: the oracle's allocation {e}", l.name, f.name)),
        skipped: Vec::new(),
    }
}

/// Whether the allocator put spill code in the class.
fn spills(c: &ClassStats) -> bool {
    c.spills + c.lane_spills + c.class_spills + c.reloads + c.remats > 0
}

/// Why the allocation of function `j` is wrong: the verifier's first error or the first
/// difference of the interpreter's traces; `None` when it is right.
fn check(p: &Program, j: usize, allocated: &Function, budget: &[u16]) -> Option<String> {
    let original = Program {
        target: p.target.clone(),
        functions: vec![p.functions[j].clone()],
    };
    let allocated = Program {
        target: p.target.clone(),
        functions: vec![allocated.clone()],
    };
    let errors = chromatic_verifier::verify_program(&original, &allocated, Some(budget));
    if let Some(e) = errors.first() {
        return Some(format!("does not verify: {e} ({} errors)", errors.len()));
    }
    traces_disagree(&original, &allocated).map(|m| format!("runs differently: {m}"))
}

/// The spill oracle's allocation of function `j` for each class whose MaxLive exceeds its
/// budget, checked, against the allocator's spill cost of the class.
fn spill_rows(l: &Loaded, j: usize, limits: spill::Limits) -> Done {
    let f = &l.program.functions[j];
    let target = &l.program.target;
    let mut done = Done {
        rows: Vec::new(),
        allocated: None,
        error: None,
        skipped: Vec::new(),
    };
    for c in &l.stats[j].classes {
        let Some(class) = target.class_by_name(&c.class) else {
            continue;
        };
        if c.max_live <= u32::from(l.budget[class.index()]) {
            continue;
        }
        let answer = match spill::min_spill(f, target, class, &l.budget, limits) {
            Ok(a) => a,
            Err(e) if not_solved(&e) => {
                done.skipped.push(format!(
                    "{} @{} {}: not solved: {e}",
                    l.name, f.name, c.class
                ));
                continue;
            }
            Err(e) => return Done::failed(format!("{} @{}: spill oracle: {e}", l.name, f.name)),
        };
        let problem = check(&l.program, j, &answer.function, &l.budget)
            .or_else(|| cost_differs(l, j, &answer));
        done.rows.push(Row {
            file: l.name.clone(),
            function: f.name.clone(),
            class: c.class.clone(),
            max_live: c.max_live,
            heuristic: c.spill_cost,
            heuristic_spills: false,
            best: Some(answer.cost),
            bound: answer.bound,
            status: match answer.status {
                Status::Optimal => "optimal",
                Status::Limit => "limit",
            },
            variables: answer.variables,
            constraints: answer.constraints,
            seconds: answer.seconds,
            verified: problem.is_none(),
        });
        match problem {
            Some(e) => {
                done.error = Some(format!(
                    "{} @{}: the oracle's allocation {e}",
                    l.name, f.name
                ))
            }
            None => done.allocated = Some(answer.function),
        }
    }
    done
}

/// Why the oracle gave no answer when that is a limit of the model or the solver, not a
/// failure: the answer is reported as not solved.
fn not_solved(e: &OracleError) -> bool {
    matches!(
        e,
        OracleError::TooLarge { .. }
            | OracleError::OutsideModel(_)
            | OracleError::NoAssignment(_)
            | OracleError::NoSolution
            | OracleError::BelowLowest { .. }
    )
}

/// When the spill cost of the oracle's allocation, measured as the allocator's is, is not
/// the model's: the model and the decoding disagree, a bug.
fn cost_differs(l: &Loaded, j: usize, answer: &spill::SpillAllocation) -> Option<String> {
    let f = &l.program.functions[j];
    let analysis = chromatic::analysis::Analysis::new(f, &l.program.target);
    let stats =
        chromatic::alloc::stats::collect(f, &answer.function, &l.program.target, &analysis, 0);
    let measured = stats.classes[answer.class.index()].spill_cost;
    ((measured - answer.cost).abs() > 1e-6 * measured.abs().max(1.0)).then(|| {
        format!(
            "costs {measured} by the allocator's count, not the model's {}",
            answer.cost
        )
    })
}

/// Writes each file whose functions all have a verified oracle allocation.
fn emit(
    dir: &Path,
    loaded: &[Loaded],
    jobs: &[(usize, usize)],
    done: &[Done],
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let inputs: Vec<&str> = loaded.iter().map(|l| l.name.as_str()).collect();
    let mut written: Vec<PathBuf> = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        let functions: Option<Vec<Function>> = jobs
            .iter()
            .zip(done)
            .filter(|((fi, _), _)| *fi == i)
            .map(|(_, d)| d.allocated.clone())
            .collect();
        let Some(functions) = functions.filter(|fs| !fs.is_empty()) else {
            continue;
        };
        let out = output_path(dir, &file_stem(&l.name), "chr", &written);
        let out_name = out.display().to_string();
        refuse_to_overwrite(&out_name, &inputs).map_err(|_| {
            anyhow::anyhow!(
                "--emit-dir would write over the input {out_name}; choose another directory"
            )
        })?;
        let program = Program {
            target: l.program.target.clone(),
            functions,
        };
        std::fs::write(&out, chromatic::print(&program))
            .map_err(|e| anyhow::anyhow!("{out_name}: {e}"))?;
        written.push(out);
    }
    Ok(())
}

/// `DIR/<stem>.<extension>`, or `DIR/<stem>-2.<extension>` and so on when an earlier
/// output took it.
pub(crate) fn output_path(dir: &Path, stem: &str, extension: &str, written: &[PathBuf]) -> PathBuf {
    let mut out = dir.join(format!("{stem}.{extension}"));
    let mut n = 1;
    while written.contains(&out) {
        n += 1;
        out = dir.join(format!("{stem}-{n}.{extension}"));
    }
    out
}

/// The file name of `path` without its extension (`out` when it has none).
pub(crate) fn file_stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map_or_else(|| String::from("out"), |s| s.to_string_lossy().into_owned())
}

/// Summary over the rows.
#[derive(Debug, Serialize)]
struct Summary {
    rows: usize,
    proven: usize,
    verified: usize,
    mean_gap: f64,
    max_gap: f64,
    /// Rows in the gap figures with an oracle allocation.
    compared: usize,
    /// Of those, the rows where the allocator is above the oracle's best.
    above: usize,
    /// The allocator's registers (or cost) minus the oracle's best, summed over the rows
    /// in the gap figures.
    excess: f64,
    seconds: f64,
}

fn summary(rows: &[Row]) -> Summary {
    let compared = || rows.iter().filter(|r| !r.heuristic_spills);
    let gaps: Vec<f64> = compared().map(Row::gap).collect();
    let excess: Vec<f64> = compared()
        .filter_map(|r| Some(r.heuristic - r.best?))
        .collect();
    Summary {
        rows: rows.len(),
        proven: rows.iter().filter(|r| r.proven()).count(),
        verified: rows.iter().filter(|r| r.verified).count(),
        mean_gap: if gaps.is_empty() {
            0.0
        } else {
            gaps.iter().sum::<f64>() / gaps.len() as f64
        },
        max_gap: gaps.iter().copied().fold(0.0, f64::max),
        compared: excess.len(),
        above: excess.iter().filter(|&&x| x > 1e-6).count(),
        excess: excess.iter().sum(),
        seconds: rows.iter().map(|r| r.seconds).sum(),
    }
}

fn print(rows: &[Row], skipped: &[String], args: &Args) -> anyhow::Result<()> {
    let s = summary(rows);
    if args.json {
        #[derive(Serialize)]
        struct Report<'a> {
            rows: &'a [Row],
            skipped: &'a [String],
            summary: &'a Summary,
        }
        let report = Report {
            rows,
            skipped,
            summary: &s,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    for r in rows {
        outln!("{}", line(r, args.times));
    }
    for reason in skipped {
        outln!("skipped: {reason}");
    }
    if args.times {
        outln!("solve time: {:.2} s", s.seconds);
    }
    outln!(
        "heuristic above the oracle: {} of {} rows, by {} in total",
        s.above,
        s.compared,
        num(s.excess)
    );
    outln!(
        "optimal proven: {}/{}  mean gap: {:.1}%  max gap: {:.1}%  verified: {}/{}",
        s.proven,
        s.rows,
        s.mean_gap,
        s.max_gap,
        s.verified,
        s.rows
    );
    Ok(())
}

/// `FILE @f v: max_live 8  heuristic 9  optimum 8  gap 12.5%  optimal  vars 120  cons 300  verified`
fn line(r: &Row, times: bool) -> String {
    let best = match (r.best, r.status) {
        (Some(b), "optimal") => format!("optimum {}", num(b)),
        (Some(b), _) => format!("best {}  bound {}", num(b), num(r.bound)),
        (None, _) => format!("bound {}", num(r.bound)),
    };
    let time = if times {
        format!("  {:.3} s", r.seconds)
    } else {
        String::new()
    };
    let verified = match (r.best, r.verified) {
        (None, _) => "no allocation",
        (Some(_), true) => "verified",
        (Some(_), false) => "NOT VERIFIED",
    };
    let spills = if r.heuristic_spills { " (spills)" } else { "" };
    format!(
        "{} @{} {}: max_live {}  heuristic {}{spills}  {best}  gap {:.1}%  {}  vars {}  cons {}{time}  {verified}",
        r.file,
        r.function,
        r.class,
        r.max_live,
        num(r.heuristic),
        r.gap(),
        r.status,
        r.variables,
        r.constraints,
    )
}

/// A number as the solver's floating point sums should read: to a thousandth.
fn num(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0 + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(heuristic: f64, best: f64, heuristic_spills: bool) -> Row {
        Row {
            file: String::from("f.chr"),
            function: String::from("f"),
            class: String::from("v"),
            max_live: 2,
            heuristic,
            heuristic_spills,
            best: Some(best),
            bound: best,
            status: "optimal",
            variables: 0,
            constraints: 0,
            seconds: 0.0,
            verified: true,
        }
    }

    /// A function the allocator spilled uses fewer registers than any allocation without
    /// spills may: its rows are shown but kept out of the gap figures.
    #[test]
    fn rows_of_a_spilled_function_are_left_out_of_the_gap() {
        let s = summary(&[
            row(3.0, 2.0, false),
            row(72.0, 98.0, true),
            row(4.0, 4.0, false),
        ]);
        assert_eq!((s.proven, s.verified, s.rows), (3, 3, 3));
        assert_eq!((s.mean_gap, s.max_gap), (25.0, 50.0));
        assert_eq!((s.compared, s.above, s.excess), (2, 1, 1.0));
    }
}
