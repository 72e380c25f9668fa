//! The `chromatic` command-line tool: one module per command, this file only dispatches.
//!
//! Exit codes: 0 success, 1 a problem found in the input (parse, validation, allocation or
//! verification error), 2 unreadable input or bad arguments.

mod check;
mod corpus;
mod diag;
mod fmt;

use clap::Parser;
use std::process::ExitCode;

/// chromatic: a GPU register allocator that proves its own work.
#[derive(Debug, Parser)]
#[command(version, about)]
enum Cli {
    /// Parse and validate programs; print blocks, instructions, values and MaxLive per class.
    Check(check::Args),
    /// Print a program in canonical form.
    Fmt(fmt::Args),
    /// Run the pipeline on every `.chr` file under a directory, in parallel.
    Corpus(corpus::Args),
}

/// What a command reports back to `main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The input has a problem (exit 1).
    Problem,
}

fn main() -> ExitCode {
    let result = match Cli::parse() {
        Cli::Check(args) => check::run(&args),
        Cli::Fmt(args) => fmt::run(&args),
        Cli::Corpus(args) => corpus::run(&args),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problem) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
