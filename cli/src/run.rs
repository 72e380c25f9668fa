//! `chromatic run FILE`: run every function on the reference interpreter and print its
//! trace digest (equal digests: same ops executed with the same inputs, in order).

use crate::options::read_program;
use crate::Outcome;
use chromatic_verifier::interp::{run as interpret, Config};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` file (original or allocated).
    file: String,
    /// Lanes in the wave.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    lanes: u32,
    /// Seed of the branch outcomes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let (_, program) = read_program(&args.file)?;
    let program = match program {
        Ok(p) => p,
        Err(rendered) => {
            eprint!("{rendered}");
            return Ok(Outcome::Problem);
        }
    };
    let config = Config {
        lanes: args.lanes,
        seed: args.seed,
        ..Config::default()
    };
    for f in &program.functions {
        let trace = interpret(f, &program.target, &config);
        println!(
            "@{}: digest {:016x}, {} events",
            f.name,
            trace.digest(),
            trace.events.len()
        );
    }
    Ok(Outcome::Ok)
}
