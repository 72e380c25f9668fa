//! `chromatic mutate-check FILE...`: allocate each program with the production allocator,
//! break the allocation on purpose N times, and count what the verifier catches. The last
//! line is `mutants: N  non-equivalent: M  detected: D  missed: X`.

use crate::options::read_program;
use crate::pipeline::{run_pipeline, Verdict};
use crate::Outcome;
use chromatic::alloc::AllocOptions;
use chromatic_verifier::mutate::mutate_check;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` files.
    #[arg(required = true)]
    files: Vec<String>,
    /// Mutants per function.
    #[arg(long, default_value_t = 100)]
    mutants: usize,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Default)]
struct Totals {
    mutants: usize,
    non_equivalent: usize,
    detected: usize,
    missed: usize,
    false_alarms: usize,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let mut totals = Totals::default();
    let mut problem = false;
    for path in &args.files {
        let (_, program) = read_program(path)?;
        let program = match program {
            Ok(p) => p,
            Err(rendered) => {
                eprint!("{rendered}");
                problem = true;
                continue;
            }
        };
        let allocated = match run_pipeline(&program, &AllocOptions::default()) {
            Verdict::Verified { allocated, .. } => allocated,
            Verdict::OverBudget(e) => {
                println!("{path}: not mutated: over budget ({e})");
                continue;
            }
            Verdict::Failed(message) => {
                eprintln!("{path}: {message}");
                problem = true;
                continue;
            }
        };
        for (f, g) in program.functions.iter().zip(&allocated.functions) {
            let report = mutate_check(f, g, &program.target, args.mutants, args.seed);
            println!(
                "{path} @{}: {} mutants, {} non-equivalent, {} detected, {} missed",
                f.name,
                report.mutants.len(),
                report.non_equivalent(),
                report.detected(),
                report.missed()
            );
            totals.mutants += report.mutants.len();
            totals.non_equivalent += report.non_equivalent();
            totals.detected += report.detected();
            totals.missed += report.missed();
            totals.false_alarms += report.baseline_errors + usize::from(!report.baseline_agrees);
        }
    }
    if totals.false_alarms > 0 {
        eprintln!(
            "false alarms on the unmutated allocations: {}",
            totals.false_alarms
        );
    }
    println!(
        "mutants: {}  non-equivalent: {}  detected: {}  missed: {}",
        totals.mutants, totals.non_equivalent, totals.detected, totals.missed
    );
    let clean = !problem && totals.missed == 0 && totals.false_alarms == 0;
    Ok(if clean { Outcome::Ok } else { Outcome::Problem })
}
