//! `chromatic bench FILE... --allocators ssa,regalloc2-ion,regalloc2-fast`: allocators
//! side by side on the same programs, in one process. Per allocator: instructions per
//! second (original operations over the median of `--runs` timed allocations of each
//! program, the allocators taking turns run by run, parsing excluded), its ratio to the
//! first allocator's, the weighted spill cost and the copies; then the verifier's
//! throughput (checking the first allocator's allocations) beside regalloc2's checker
//! (`regalloc2::checker`, checking `ion`'s output), and `ion`'s speed inside
//! `regalloc2::run` alone (the adapter's lowering and raising excluded). Totals are over
//! the programs every allocator allocates; declines are counted. The last line:
//! `ssa vs regalloc2-ion: speed ×S, weighted spill cost ×C` (S > 1: ssa is faster;
//! C ≤ 1: it spills less). Timings vary with the machine's load.

use crate::options::{read_program, BudgetArgs};
use crate::Outcome;
use chromatic::alloc::regalloc2_adapter as ra2;
use chromatic::alloc::{allocate, budget_of, AllocOptions, Allocator, FunctionStats, Policy};
use chromatic::Program;
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.chr` (or `.ptx`) files.
    #[arg(required = true)]
    files: Vec<String>,
    /// The allocators, the first the one the others are compared with.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ssa,regalloc2-ion,regalloc2-fast"
    )]
    allocators: Vec<Allocator>,
    /// Timed runs per program and allocator (the median counts).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[command(flatten)]
    budget: BudgetArgs,
}

/// One allocator's totals over the shared programs.
#[derive(Debug, Default, Clone)]
struct Totals {
    time: Duration,
    spill_cost: f64,
    copies: u64,
    declined: usize,
}

/// What one allocation run measured: its median time, statistics and allocation.
type Run = (Duration, Vec<FunctionStats>, Program);

/// One program's measurements per allocator (an error: not allocated).
struct Measured {
    instructions: usize,
    per_allocator: Vec<Result<Run, chromatic::alloc::AllocError>>,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    anyhow::ensure!(!args.allocators.is_empty(), "--allocators names none");
    let mut programs = Vec::new();
    for path in &args.files {
        let (_, parsed) = read_program(path)?;
        programs.push(parsed.map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    let mut totals = vec![Totals::default(); args.allocators.len()];
    let (mut instructions, mut verify_time, mut checker_time) = (0, Duration::ZERO, Duration::ZERO);
    let mut ion_alone = Duration::ZERO;
    let (mut checked_instructions, mut shared) = (0, 0);
    for (path, p) in args.files.iter().zip(&programs) {
        let m = measure(p, &args.allocators, args.runs, &args.budget);
        for (a, e) in args.allocators.iter().zip(&m.per_allocator) {
            if let Err(e) = e {
                eprintln!("{path} [{a}]: not measured: {e}");
            }
        }
        for (t, r) in totals.iter_mut().zip(&m.per_allocator) {
            t.declined += usize::from(r.is_err());
        }
        if m.per_allocator.iter().any(Result::is_err) {
            continue;
        }
        shared += 1;
        instructions += m.instructions;
        for (t, r) in totals.iter_mut().zip(&m.per_allocator) {
            let (time, stats, _) = r.as_ref().expect("all allocated");
            t.time += *time;
            t.spill_cost += stats
                .iter()
                .flat_map(|s| &s.classes)
                .map(|c| c.spill_cost)
                .sum::<f64>();
            t.copies += stats
                .iter()
                .flat_map(|s| &s.classes)
                .map(|c| u64::from(c.copies))
                .sum::<u64>();
        }
        let (_, _, first) = m.per_allocator[0].as_ref().expect("allocated");
        // The budget is found outside the timed runs, as the checker's input is.
        let budget = budget_of(&p.target, &options(args.allocators[0], &args.budget)).ok();
        verify_time += median(args.runs, || {
            let errors = chromatic_verifier::verify_program(p, first, budget.as_deref());
            assert!(errors.is_empty(), "{}", errors[0]);
        });
        if let Some((run, check)) = checker(p, args.runs, &args.budget) {
            ion_alone += run;
            checker_time += check;
            checked_instructions += m.instructions;
        }
    }
    if shared == 0 {
        anyhow::bail!("no program was allocated by every allocator; nothing to compare");
    }
    print(args, &totals, instructions, shared, programs.len());
    let rate = |n: usize, t: Duration| n as f64 / t.as_secs_f64().max(1e-9);
    outln!(
        "verifier: {:.0} instructions/s ({} allocations)",
        rate(instructions, verify_time),
        args.allocators[0]
    );
    if checked_instructions > 0 {
        outln!(
            "regalloc2-ion inside regalloc2::run alone (no lowering, no raising): {:.0} instructions/s",
            rate(checked_instructions, ion_alone)
        );
        outln!(
            "regalloc2 checker: {:.0} instructions/s (regalloc2-ion's output); verifier ×{:.2}",
            rate(checked_instructions, checker_time),
            rate(instructions, verify_time) / rate(checked_instructions, checker_time)
        );
    }
    last_line(args, &totals, instructions);
    Ok(Outcome::Ok)
}

fn options(allocator: Allocator, budget: &BudgetArgs) -> AllocOptions {
    AllocOptions {
        allocator,
        ..budget.options(Policy::Dense)
    }
}

/// Each allocator's allocation of `p` and the median of `runs` timed allocations. The
/// timed runs take the allocators in turn (one run of each, then the next round), so a
/// drift of the machine's speed during the measurement falls on all of them alike and
/// their ratio stays put.
fn measure(p: &Program, allocators: &[Allocator], runs: usize, budget: &BudgetArgs) -> Measured {
    let instructions = p.functions.iter().map(|f| f.op_count()).sum();
    let opts: Vec<AllocOptions> = allocators.iter().map(|&a| options(a, budget)).collect();
    let first: Vec<_> = opts.iter().map(|o| allocate(p, o)).collect();
    let mut times = vec![Vec::with_capacity(runs.max(1)); opts.len()];
    for _ in 0..runs.max(1) {
        for ((o, done), t) in opts.iter().zip(&first).zip(&mut times) {
            if done.is_ok() {
                t.push(timed(|| {
                    allocate(p, o).expect("allocated before");
                }));
            }
        }
    }
    let per_allocator = first
        .into_iter()
        .zip(times)
        .map(|(done, t)| done.map(|(allocated, stats)| (median_of(t), stats, allocated)))
        .collect();
    Measured {
        instructions,
        per_allocator,
    }
}

/// The median times of `ion` alone (`regalloc2::run`, without the adapter's lowering and
/// raising) and of regalloc2's checker on its output, over all functions of `p`; `None`
/// when the adapter declines one.
fn checker(p: &Program, runs: usize, budget: &BudgetArgs) -> Option<(Duration, Duration)> {
    let opts = options(Allocator::Regalloc2Ion, budget);
    let units = budget_of(&p.target, &opts).ok()?;
    let (mut run, mut check) = (Duration::ZERO, Duration::ZERO);
    for f in &p.functions {
        let input = ra2::lower(f, &p.target, &units, Allocator::Regalloc2Ion).ok()?;
        let out = ra2::run(&input, Allocator::Regalloc2Ion).ok()?;
        run += median(runs, || {
            ra2::run(&input, Allocator::Regalloc2Ion).expect("ran before");
        });
        check += median(runs, || {
            ra2::check(&input, &out).expect("regalloc2's checker accepts ion's output");
        });
    }
    Some((run, check))
}

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    median_of((0..runs.max(1)).map(|_| timed(&mut f)).collect())
}

fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn median_of(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn print(args: &Args, totals: &[Totals], instructions: usize, shared: usize, files: usize) {
    outln!(
        "{shared} of {files} programs allocated by every allocator, {instructions} instructions"
    );
    outln!(
        "{:<16} {:>14} {:>8} {:>18} {:>8} {:>9}",
        "allocator",
        "instructions/s",
        "ratio",
        "weighted spill cost",
        "copies",
        "declined"
    );
    let rate = |t: &Totals| instructions as f64 / t.time.as_secs_f64().max(1e-9);
    let first = rate(&totals[0]);
    for (a, t) in args.allocators.iter().zip(totals) {
        outln!(
            "{:<16} {:>14.0} {:>8.3} {:>18.0} {:>8} {:>9}",
            a.name(),
            rate(t),
            rate(t) / first,
            t.spill_cost,
            t.copies,
            t.declined
        );
    }
}

/// `A vs B: speed ×S, weighted spill cost ×C`, the first allocator against
/// `regalloc2-ion` (or the second named).
fn last_line(args: &Args, totals: &[Totals], instructions: usize) {
    let other = args
        .allocators
        .iter()
        .position(|&a| a == Allocator::Regalloc2Ion)
        .or((args.allocators.len() > 1).then_some(1));
    let Some(i) = other.filter(|&i| i > 0) else {
        return;
    };
    let rate = |t: &Totals| instructions as f64 / t.time.as_secs_f64().max(1e-9);
    let speed = rate(&totals[0]) / rate(&totals[i]);
    let cost = match (totals[0].spill_cost, totals[i].spill_cost) {
        (a, b) if b > 0.0 => format!("{:.3}", a / b),
        (0.0, _) => "1 (neither spills)".into(),
        _ => "inf (only the first spills)".into(),
    };
    outln!(
        "{} vs {}: speed ×{speed:.3}, weighted spill cost ×{cost}",
        args.allocators[0],
        args.allocators[i]
    );
}
