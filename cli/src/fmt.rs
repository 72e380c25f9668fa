//! `chromatic fmt FILE`: print the canonical form of a program with its comments (of a
//! `.ptx` file, the program it imports to).

use crate::diag::Source;
use crate::options::parse_source;
use crate::Outcome;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` or `.ptx` file to format.
    file: String,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let source = Source::read(&args.file)?;
    match parse_source(&source) {
        Ok(input) if input.ptx.is_some() => {
            out!("{}", chromatic::print(&input.program));
            Ok(Outcome::Ok)
        }
        Ok(input) => {
            out!(
                "{}",
                chromatic::print::print_with_comments(&input.program, &source.text)
            );
            Ok(Outcome::Ok)
        }
        Err(rendered) => {
            eprint!("{rendered}");
            Ok(Outcome::Problem)
        }
    }
}
