//! `chromatic mutate-check FILE...`: allocate each program with the production allocator,
//! break the allocation on purpose N times, and count what the verifier catches. The last
//! line is `mutants: N  non-equivalent: M  detected: D  missed: X`.

use crate::options::{is_mir, is_ptx, read_program};
use crate::pipeline::{run_pipeline, Verdict};
use crate::Outcome;
use chromatic::alloc::AllocOptions;
use chromatic_verifier::mutate::{mutate_check, MutationKind, MutationReport};
use std::collections::BTreeMap;

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
    /// Per mutation kind: mutants, non-equivalent, detected, missed.
    by_kind: BTreeMap<String, [usize; 4]>,
}

impl Totals {
    fn add(&mut self, report: &MutationReport) {
        self.mutants += report.mutants.len();
        self.non_equivalent += report.non_equivalent();
        self.detected += report.detected();
        self.missed += report.missed();
        self.false_alarms += report.baseline_errors + usize::from(!report.baseline_agrees);
        for m in &report.mutants {
            let row = self.by_kind.entry(kind_name(m.kind)).or_default();
            row[0] += 1;
            row[1] += usize::from(!m.equivalent);
            row[2] += usize::from(m.detected);
            row[3] += usize::from(!m.equivalent && !m.detected);
        }
    }

    fn print(&self) {
        outln!("kind                       mutants  non-equivalent  detected  missed");
        for (kind, [n, ne, d, m]) in &self.by_kind {
            outln!("{kind:<25}  {n:>7}  {ne:>14}  {d:>8}  {m:>6}");
        }
        outln!(
            "mutants: {}  non-equivalent: {}  detected: {}  missed: {}",
            self.mutants,
            self.non_equivalent,
            self.detected,
            self.missed
        );
    }
}

/// `UseOtherRegister` → `use-other-register`.
fn kind_name(kind: MutationKind) -> String {
    let mut out = String::new();
    for (i, c) in format!("{kind:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
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
        let allocated = match run_pipeline(&program, &options_for(path)) {
            Verdict::Verified { allocated, .. } => allocated,
            Verdict::OverBudget(e) => {
                outln!("{path}: not mutated: over budget ({e})");
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
            outln!(
                "{path} @{}: {} mutants, {} non-equivalent, {} detected, {} missed",
                f.name,
                report.mutants.len(),
                report.non_equivalent(),
                report.detected(),
                report.missed()
            );
            totals.add(&report);
        }
    }
    if totals.false_alarms > 0 {
        eprintln!(
            "false alarms on the unmutated allocations: {}",
            totals.false_alarms
        );
    }
    totals.print();
    let clean = !problem && totals.missed == 0 && totals.false_alarms == 0;
    Ok(if clean { Outcome::Ok } else { Outcome::Problem })
}

/// PTX and MIR input are scheduled before allocation, as `alloc` does by default, so the mutants
/// break scheduled allocations too.
fn options_for(path: &str) -> AllocOptions {
    AllocOptions {
        schedule: if is_ptx(path) || is_mir(path) {
            chromatic::schedule::Schedule::Pressure
        } else {
            chromatic::schedule::Schedule::None
        },
        ..AllocOptions::default()
    }
}
