//! `chromatic draw FILE -o OUT.svg`: one function's allocation as a picture — which
//! register holds which value at each program point, where allocation added copies,
//! spills and reloads, block boundaries, and the pressure per class against the budget.
//! The allocation is verified before it is drawn.

mod svg;
mod timeline;

use crate::alloc::PolicyArg;
use crate::options::{read_input, refuse_to_overwrite, BudgetArgs};
use crate::Outcome;
use chromatic::alloc::{allocate, budget_of, AllocOptions, Allocator};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` or `.ptx` file.
    file: String,
    /// The SVG file to write.
    #[arg(short, long)]
    output: String,
    /// The function to draw (default: the first).
    #[arg(long)]
    function: Option<String>,
    /// `ssa`, `coloring` or `linear`.
    #[arg(long, default_value_t = Allocator::Ssa)]
    allocator: Allocator,
    #[command(flatten)]
    budget: BudgetArgs,
    /// `dense` or `round-robin`.
    #[arg(long, value_enum, default_value_t = PolicyArg::Dense)]
    policy: PolicyArg,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    refuse_to_overwrite(&args.output, &[&args.file])?;
    let (source, input) = read_input(&args.file)?;
    let program = match input {
        Ok(input) => input.program,
        Err(rendered) => {
            eprint!("{rendered}");
            return Ok(Outcome::Problem);
        }
    };
    let index = match &args.function {
        None => 0,
        Some(name) => program
            .functions
            .iter()
            .position(|f| &f.name == name)
            .ok_or_else(|| anyhow::anyhow!("{}: no function @{name}", source.name))?,
    };
    let options = AllocOptions {
        allocator: args.allocator,
        ..args.budget.options(args.policy.into())
    };
    let budget = budget_of(&program.target, &options)?;
    let allocated = match allocate(&program, &options) {
        Ok((allocated, _)) => allocated,
        Err(e) => {
            eprint!(
                "{}",
                source.render(e.pos().unwrap_or_default(), &e.to_string())
            );
            return Ok(Outcome::Problem);
        }
    };
    let errors = chromatic_verifier::verify_program(&program, &allocated, Some(&budget));
    if let Some(e) = errors.first() {
        eprintln!("internal error: the allocation failed verification and is not drawn: {e}");
        return Ok(Outcome::Problem);
    }
    let f = &allocated.functions[index];
    let t = timeline::build(f, &allocated.target);
    let picture = svg::render(&t, f, &allocated.target, &budget);
    std::fs::write(&args.output, picture).map_err(|e| anyhow::anyhow!("{}: {e}", args.output))?;
    Ok(Outcome::Ok)
}

/// The opening of an SVG document of `width` × `height` on white, 10-point monospace,
/// with `title` (escaped here) at the top left.
pub(crate) fn document(
    width: impl std::fmt::Display,
    height: impl std::fmt::Display,
    title: &str,
) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"monospace\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"4\" y=\"12\" font-size=\"12\">{}</text>\n",
        escape(title)
    )
}

/// `text` with the characters XML gives a meaning escaped.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
