//! Prints a synthetic program (`chromatic::synth::synthetic`) of about N instructions, the
//! input of the `alloc` benchmark, so that a profiler can run the CLI on it.
//!
//! ```sh
//! cargo run --release --example synthetic -- 1000000 > /tmp/synth-1m.chr
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(insts) = std::env::args().nth(1).and_then(|n| n.parse().ok()) else {
        eprintln!("usage: synthetic INSTRUCTIONS");
        return ExitCode::from(2);
    };
    print!("{}", chromatic::synth::synthetic(insts));
    ExitCode::SUCCESS
}
