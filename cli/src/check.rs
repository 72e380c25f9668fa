//! `chromatic check FILE...`: parse, validate SSA form, and summarise each function.

use crate::diag::Source;
use crate::options::parse_source;
use crate::Outcome;
use chromatic::analysis::{ssa, Analysis};
use chromatic::{Function, Program};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` or `.ptx` files to check.
    #[arg(required = true)]
    files: Vec<String>,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let mut outcome = Outcome::Ok;
    for path in &args.files {
        let source = Source::read(path)?;
        if check_source(&source) == Outcome::Problem {
            outcome = Outcome::Problem;
        }
    }
    Ok(outcome)
}

/// Parses and validates one file, printing its summary or its errors.
pub fn check_source(source: &Source) -> Outcome {
    let program = match parse_source(source) {
        Ok(input) => input.program,
        Err(rendered) => {
            eprint!("{rendered}");
            return Outcome::Problem;
        }
    };
    let errors = validate(&program);
    for err in &errors {
        eprint!("{}", source.render(err.pos, &err.message));
    }
    if !errors.is_empty() {
        return Outcome::Problem;
    }
    outln!("{}: target {}", source.name, program.target);
    for function in &program.functions {
        outln!("  {}", summary(&program, function));
    }
    Outcome::Ok
}

/// SSA validation errors of every function, in source order.
pub fn validate(program: &Program) -> Vec<ssa::SsaError> {
    program
        .functions
        .iter()
        .filter_map(|f| ssa::validate(f, &program.target).err())
        .flatten()
        .collect()
}

fn summary(program: &Program, function: &Function) -> String {
    let analysis = Analysis::new(function, &program.target);
    let max_live: Vec<String> = program
        .target
        .class_ids()
        .map(|c| {
            let name = &program.target.class(c).name;
            format!("{name}={}", analysis.pressure.max_live(c))
        })
        .collect();
    format!(
        "@{}: {} blocks, {} instructions, {} values, max_live {}",
        function.name,
        function.blocks.len(),
        function.op_count(),
        function.values.len(),
        max_live.join(" ")
    )
}
