//! `chromatic fmt FILE`: print the canonical form of a program, with its comments.

use crate::diag::Source;
use crate::Outcome;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` file to format.
    file: String,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let source = Source::read(&args.file)?;
    match chromatic::parse(&source.text) {
        Ok(program) => {
            print!(
                "{}",
                chromatic::print::print_with_comments(&program, &source.text)
            );
            Ok(Outcome::Ok)
        }
        Err(err) => {
            eprint!("{}", source.render(err.pos, &err.message));
            Ok(Outcome::Problem)
        }
    }
}
