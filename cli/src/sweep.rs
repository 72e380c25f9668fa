//! `chromatic sweep PATH...`: the spill curve of every program. For each `.chr` or `.ptx`
//! file (a directory is walked for `.chr` files: real kernels have hundreds of budget
//! points each, so they are swept when named), each register class and each budget from the
//! class's MaxLive down to its lowest legal budget (what the most demanding instruction
//! needs, `spill::minimum`), the whole pipeline runs with that class at that budget and the
//! others at their full file: spill, assign, verify independently, compare interpreter
//! traces. One line per point gives the spill code the budget cost (static counts and the
//! frequency-weighted cost) and the occupancy reached; the totals close the report.
//! Points run in parallel; output follows file, class and budget order, so it is identical
//! from run to run. Any point that does not verify makes the command exit 1.
//!
//! With `--oracle`, each verified point is also solved by the ILP oracle
//! (`chromatic_oracle::spill`): an allocation of least spill cost for the swept class at
//! that budget (the best found and a lower bound when a limit stops the proof), verified
//! like the allocator's, next to the allocator's cost of the same class; the totals give
//! the optimality gap over the points proven optimal. A point the oracle does not solve
//! (a model over its size cap, outside the model) says why.

use crate::check::validate;
use crate::corpus::files_with;
use crate::curve::{self, CurvePoint};
use crate::diag::Source;
use crate::gap::{file_stem, output_path};
use crate::options::{parse_solver, parse_source};
use crate::pipeline::{run_pipeline, Verdict};
use crate::Outcome;
use chromatic::alloc::spill::minimum::lowest_legal;
use chromatic::alloc::{budget_of, AllocOptions, FunctionStats};
use chromatic::analysis::Analysis;
use chromatic::Program;
use chromatic_oracle::minregs::{self, Status};
use chromatic_oracle::residency;
use chromatic_oracle::solver::Solver;
use chromatic_oracle::spill::{min_spill, Limits};
use chromatic_oracle::OracleError;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.chr` or `.ptx` files, or directories to walk for `.chr` files.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Sweep only this class, in the programs whose target has it (default: every class
    /// with live values).
    #[arg(long)]
    class: Option<String>,
    /// Print the points as JSON instead of lines and totals.
    #[arg(long)]
    json: bool,
    /// Compare each point's spill cost with the ILP oracle's minimum.
    #[arg(long)]
    oracle: bool,
    /// Branch-and-bound nodes the oracle may explore per function.
    #[arg(long, default_value_t = 2_000, value_name = "N")]
    nodes: u64,
    /// The oracle's ILP solver: `microlp` (pure Rust) or `highs` (in a build with
    /// `--features highs`).
    #[arg(long, value_parser = parse_solver, default_value = "microlp", value_name = "SOLVER")]
    solver: Solver,
    /// Also draw each program's spill curve per class as SVG into this directory
    /// (`<stem>.<class>.svg`), with the oracle's line under `--oracle`.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

/// One program with one class at one budget.
#[derive(Debug, Serialize)]
struct Point {
    file: String,
    class: String,
    budget: u16,
    /// Per function, when the point verified.
    stats: Vec<FunctionStats>,
    error: Option<String>,
    /// The oracle's answer, with `--oracle`.
    oracle: Option<Oracle>,
    /// Why the oracle gave no answer, with `--oracle`.
    not_solved: Option<String>,
}

/// The oracle against the allocator on the swept class, summed over the functions.
#[derive(Debug, Serialize, Clone, Copy)]
struct Oracle {
    /// The allocator's frequency-weighted spill cost of the class.
    allocator: f64,
    /// The cost of the oracle's verified allocation.
    best: f64,
    /// The minimum, when proven for every function.
    optimum: Option<f64>,
    /// A lower bound on the minimum.
    bound: f64,
}

/// Spill code summed over the functions and classes of a point, or of a whole sweep.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    spills: u32,
    reloads: u32,
    remats: u32,
    lane_spills: u32,
    class_spills: u32,
    slots: u32,
    cost: f64,
}

impl Totals {
    fn of(stats: &[FunctionStats]) -> Totals {
        let mut t = Totals::default();
        for f in stats {
            t.slots += f.spill_slots;
            for c in &f.classes {
                t.spills += c.spills;
                t.reloads += c.reloads;
                t.remats += c.remats;
                t.lane_spills += c.lane_spills;
                t.class_spills += c.class_spills;
                t.cost += c.spill_cost;
            }
        }
        t
    }

    fn add(&mut self, o: Totals) {
        self.spills += o.spills;
        self.reloads += o.reloads;
        self.remats += o.remats;
        self.lane_spills += o.lane_spills;
        self.class_spills += o.class_spills;
        self.slots += o.slots;
        self.cost += o.cost;
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            out,
            "spills {}  reloads {}  remats {}  lane_spills {}  class_spills {}  slots {}  cost {}",
            self.spills,
            self.reloads,
            self.remats,
            self.lane_spills,
            self.class_spills,
            self.slots,
            self.cost
        )
    }
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let mut files = Vec::new();
    for path in &args.paths {
        files.extend(files_under(Path::new(path))?);
    }
    let mut programs = Vec::new();
    let mut problems = 0;
    for path in &files {
        match load(path)? {
            Ok(p) => programs.push((path.display().to_string(), p)),
            Err(message) => {
                eprint!("{message}");
                problems += 1;
            }
        }
    }
    let jobs = jobs(&programs, args.class.as_deref())?;
    let limits = args.oracle.then_some(Limits {
        residency: residency::Limits {
            nodes: Some(args.nodes),
            time: std::time::Duration::from_secs(120),
            solver: args.solver,
            ..residency::Limits::default()
        },
        assignment: minregs::Limits {
            solver: args.solver,
            ..minregs::Limits::default()
        },
    });
    let points = run_points(&programs, &jobs, limits);
    problems += points.iter().filter(|p| p.error.is_some()).count();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&points)?);
    } else {
        report(&points);
    }
    if let Some(dir) = &args.svg {
        draw_curves(dir, &points)?;
    }
    Ok(if problems == 0 {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}

pub(crate) fn files_under(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if path.is_dir() {
        files_with(path, &["chr"])
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

/// Reads, parses (`.chr`, or `.ptx` imported) and validates one file (an unreadable file
/// is an error, exit 2); a problem in the program is rendered against its source.
pub(crate) fn load(path: &Path) -> anyhow::Result<Result<Program, String>> {
    let source = Source::read(&path.display().to_string())?;
    let program = match parse_source(&source) {
        Ok(input) => input.program,
        Err(rendered) => return Ok(Err(rendered)),
    };
    let errors = validate(&program);
    Ok(if errors.is_empty() {
        Ok(program)
    } else {
        Err(errors
            .iter()
            .map(|e| source.render(e.pos, &e.message))
            .collect())
    })
}

/// (program index, class name, budget) for every point, in report order.
fn jobs(
    programs: &[(String, Program)],
    only: Option<&str>,
) -> anyhow::Result<Vec<(usize, String, u16)>> {
    let mut jobs = Vec::new();
    for (i, (_, p)) in programs.iter().enumerate() {
        for (class, budgets) in budget_ranges(p) {
            if only.is_none_or(|name| name == class) {
                jobs.extend(budgets.rev().map(|k| (i, class.clone(), k)));
            }
        }
    }
    if let Some(name) = only {
        let known = programs
            .iter()
            .any(|(_, p)| p.target.class_by_name(name).is_some());
        if !known {
            anyhow::bail!("no program's target has a class `{name}`");
        }
    }
    Ok(jobs)
}

/// Per class with live values: budgets from the lowest legal one (at least 1) to MaxLive,
/// both over every function of `p` and capped by the register file.
fn budget_ranges(p: &Program) -> Vec<(String, std::ops::RangeInclusive<u16>)> {
    let analyses: Vec<Analysis> = p
        .functions
        .iter()
        .map(|f| Analysis::new(f, &p.target))
        .collect();
    let lowest: Vec<Vec<u32>> = p
        .functions
        .iter()
        .map(|f| lowest_legal(f, &p.target).iter().map(|l| l.units).collect())
        .collect();
    p.target
        .class_ids()
        .filter_map(|c| {
            let class = p.target.class(c);
            let max_live = analyses.iter().map(|a| a.pressure.max_live(c)).max()?;
            let low = lowest.iter().map(|l| l[c.index()]).max()?.max(1);
            let high = max_live.min(u32::from(class.units));
            (max_live > 0).then(|| (class.name.clone(), low as u16..=high as u16))
        })
        .collect()
}

fn run_points(
    programs: &[(String, Program)],
    jobs: &[(usize, String, u16)],
    oracle: Option<Limits>,
) -> Vec<Point> {
    let progress = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let points = jobs
        .par_iter()
        .map(|(i, class, budget)| {
            let (file, program) = &programs[*i];
            let mut point = run_point(file, program, class, *budget);
            if let Some(limits) = oracle.filter(|_| point.error.is_none()) {
                match solve(program, &point, limits) {
                    Ok(Ok(o)) => point.oracle = Some(o),
                    Ok(Err(why)) => point.not_solved = Some(why),
                    Err(e) => point.error = Some(format!("oracle: {e}")),
                }
            }
            progress.inc(1);
            point
        })
        .collect();
    progress.finish_and_clear();
    points
}

fn run_point(file: &str, program: &Program, class: &str, budget: u16) -> Point {
    let options = AllocOptions {
        budget: vec![(class.to_string(), budget)],
        ..AllocOptions::default()
    };
    let (stats, error) = match run_pipeline(program, &options) {
        Verdict::Verified { stats, .. } => (stats, None),
        Verdict::OverBudget(e) => (Vec::new(), Some(e.to_string())),
        Verdict::Failed(message) => (Vec::new(), Some(message)),
    };
    Point {
        file: file.to_string(),
        class: class.to_string(),
        budget,
        stats,
        error,
        oracle: None,
        not_solved: None,
    }
}

/// The oracle's allocation for the point's class and budget, function by function, each
/// verified; `Ok(Err(why))` when a function is not solved (too large, outside the model).
fn solve(
    program: &Program,
    point: &Point,
    limits: Limits,
) -> Result<Result<Oracle, String>, String> {
    let target = &program.target;
    let class = target
        .class_by_name(&point.class)
        .ok_or_else(|| format!("no class `{}`", point.class))?;
    let options = AllocOptions {
        budget: vec![(point.class.clone(), point.budget)],
        ..AllocOptions::default()
    };
    let budget = budget_of(target, &options).map_err(|e| e.to_string())?;
    let mut result = Oracle {
        allocator: 0.0,
        best: 0.0,
        optimum: Some(0.0),
        bound: 0.0,
    };
    for (f, stats) in program.functions.iter().zip(&point.stats) {
        result.allocator += stats.classes[class.index()].spill_cost;
        let answer = match min_spill(f, target, class, &budget, limits) {
            Ok(a) => a,
            Err(e) if not_solved(&e) => return Ok(Err(format!("@{}: {e}", f.name))),
            Err(e) => return Err(format!("@{}: {e}", f.name)),
        };
        verify_oracle(program, f, &answer.function, &budget)?;
        result.best += answer.cost;
        result.bound += answer.bound;
        let proven = answer.status == Status::Optimal;
        result.optimum = result.optimum.filter(|_| proven).map(|o| o + answer.cost);
    }
    Ok(Ok(result))
}

/// Answers that are limits of the model or the solver rather than failures.
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

/// The oracle's allocation of `f` checked by the verifier.
fn verify_oracle(
    program: &Program,
    f: &chromatic::Function,
    allocated: &chromatic::Function,
    budget: &[u16],
) -> Result<(), String> {
    let one = |g: &chromatic::Function| Program {
        target: program.target.clone(),
        functions: vec![g.clone()],
    };
    let errors = chromatic_verifier::verify_program(&one(f), &one(allocated), Some(budget));
    match errors.first() {
        None => Ok(()),
        Some(e) => Err(format!(
            "@{}: the oracle's allocation does not verify: {e} ({} errors)",
            f.name,
            errors.len()
        )),
    }
}

fn report(points: &[Point]) {
    let mut totals = Totals::default();
    let mut failed = 0;
    for p in points {
        let head = format!("{} {}={}", p.file, p.class, p.budget);
        match &p.error {
            Some(e) => {
                failed += 1;
                outln!("{head}  FAILED: {e}");
            }
            None => {
                let t = Totals::of(&p.stats);
                totals.add(t);
                let oracle = match (&p.oracle, &p.not_solved) {
                    (Some(o), _) => oracle_column(*o),
                    (None, Some(why)) => format!("  oracle not solved: {why}"),
                    (None, None) => String::new(),
                };
                outln!(
                    "{head}  {t}  occupancy {}  verified{oracle}",
                    occupancy(&p.stats)
                );
            }
        }
    }
    outln!(
        "points: {}  verified: {}  failed: {failed}  {totals}",
        points.len(),
        points.len() - failed
    );
    let (rises, steps) = rises(points);
    outln!("one register more costs more: {rises} of {steps} steps");
    let answers: Vec<Oracle> = points.iter().filter_map(|p| p.oracle).collect();
    let not_solved = points.iter().filter(|p| p.not_solved.is_some()).count();
    if !answers.is_empty() || not_solved > 0 {
        outln!("{}  not solved: {not_solved}", gap_summary(&answers));
    }
}

/// The swept class's frequency-weighted spill cost at a point, over its functions.
fn class_cost(p: &Point) -> f64 {
    let of_class = |f: &FunctionStats| {
        f.classes
            .iter()
            .filter(|c| c.class == p.class)
            .map(|c| c.spill_cost)
            .sum::<f64>()
    };
    p.stats.iter().map(of_class).sum()
}

/// One SVG spill curve per file and class with verified points, into `dir`.
fn draw_curves(dir: &Path, points: &[Point]) -> anyhow::Result<()> {
    let mut curves: BTreeMap<(&str, &str), Vec<CurvePoint>> = BTreeMap::new();
    for p in points.iter().filter(|p| p.error.is_none()) {
        curves
            .entry((&p.file, &p.class))
            .or_default()
            .push(CurvePoint {
                budget: p.budget,
                cost: class_cost(p),
                oracle: p.oracle.map(|o| o.optimum.unwrap_or(o.bound)),
            });
    }
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut written: Vec<PathBuf> = Vec::new();
    for ((file, class), curve) in &curves {
        let stem = format!("{}.{class}", file_stem(file));
        let out = output_path(dir, &stem, "svg", &written);
        std::fs::write(&out, curve::render(file, class, curve))
            .map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
        written.push(out);
    }
    Ok(())
}

/// Steps from a budget to the next one up (same file and class, both verified) where the
/// swept class's spill cost rises: a spiller is monotone when there are none.
fn rises(points: &[Point]) -> (usize, usize) {
    let mut costs: BTreeMap<(&str, &str, u16), f64> = BTreeMap::new();
    for p in points.iter().filter(|p| p.error.is_none()) {
        costs.insert((&p.file, &p.class, p.budget), class_cost(p));
    }
    let mut steps = 0;
    let mut rises = 0;
    for (&(file, class, k), &cost) in &costs {
        if let Some(&above) = costs.get(&(file, class, k + 1)) {
            steps += 1;
            rises += usize::from(above > cost + 1e-9);
        }
    }
    (rises, steps)
}

/// `  class cost 64  optimum 64` or `  class cost 70  bound 60`.
fn oracle_column(o: Oracle) -> String {
    match o.optimum {
        Some(optimum) => format!(
            "  class cost {}  optimum {}",
            cost(o.allocator),
            cost(optimum)
        ),
        None => format!(
            "  class cost {}  best {}  bound {}",
            cost(o.allocator),
            cost(o.best),
            cost(o.bound)
        ),
    }
}

/// A cost as the solver's floating point sums should read: to a thousandth, without the
/// rounding noise (`1632`, not `1631.9999999999998`).
fn cost(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The optimality gap over the points the oracle proved.
fn gap_summary(answers: &[Oracle]) -> String {
    let proven: Vec<(f64, f64)> = answers
        .iter()
        .filter_map(|o| Some((o.allocator, o.optimum?)))
        .collect();
    let allocator: f64 = proven.iter().map(|p| p.0).sum();
    let optimum: f64 = proven.iter().map(|p| p.1).sum();
    let at_optimum = proven.iter().filter(|p| p.0 <= p.1 + 1e-6).count();
    let gap = if optimum > 0.0 {
        format!("{:.1}%", 100.0 * (allocator - optimum) / optimum)
    } else {
        String::from("-")
    };
    format!(
        "oracle: proven {} of {}  at optimum: {at_optimum}  allocator cost {}  optimum {}  gap {gap}",
        proven.len(),
        answers.len(),
        cost(allocator),
        cost(optimum)
    )
}

/// The lowest occupancy over the functions, `-` without an occupancy model.
fn occupancy(stats: &[FunctionStats]) -> String {
    stats
        .iter()
        .filter_map(|s| s.occupancy)
        .min()
        .map_or(String::from("-"), |o| o.to_string())
}

#[cfg(test)]
mod tests {
    use super::cost;

    #[test]
    fn costs_print_without_floating_point_noise() {
        assert_eq!(cost(1631.9999999999998).to_string(), "1632");
        assert_eq!(cost(88.5).to_string(), "88.5");
    }
}
