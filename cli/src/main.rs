//! The `chromatic` command-line tool.

use clap::Parser;

/// chromatic: a GPU register allocator that proves its own work.
#[derive(Debug, Parser)]
#[command(version, about)]
enum Cli {}

fn main() {
    match Cli::parse() {}
}
