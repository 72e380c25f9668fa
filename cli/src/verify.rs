//! `chromatic verify ORIGINAL ALLOCATED`: check an allocation by independent dataflow.
//! Exit 0 valid, 1 invalid, 2 unreadable input.

use crate::options::{read_program, BudgetArgs};
use crate::Outcome;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The original (unallocated) program.
    original: String,
    /// The allocated program, from chromatic or another tool.
    allocated: String,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Print the errors as JSON on standard output.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let original = parsed(&args.original)?;
    let allocated = parsed(&args.allocated)?;
    let options = args.budget.options(chromatic::alloc::Policy::default());
    let budget = chromatic::alloc::budget_of(&original.target, &options)?;
    let errors = chromatic_verifier::verify_program(&original, &allocated, Some(&budget));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&errors)?);
    } else {
        for e in &errors {
            eprintln!("{}: {e}", args.allocated);
        }
        if errors.is_empty() {
            println!("{}: valid", args.allocated);
        }
    }
    Ok(if errors.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Problem
    })
}

fn parsed(path: &str) -> anyhow::Result<chromatic::Program> {
    let (_, program) = read_program(path)?;
    program.map_err(|rendered| anyhow::anyhow!("cannot parse {path}:\n{rendered}"))
}
