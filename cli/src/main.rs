//! The `chromatic` command-line tool: one module per command, this file only dispatches.
//!
//! Exit codes: 0 success, 1 a problem found in the input (parse, validation, allocation or
//! verification error), 2 unreadable input or bad arguments.

#[macro_use]
mod out;

mod alloc;
mod bench;
mod check;
mod corpus;
mod curve;
mod diag;
mod draw;
mod fmt;
mod gap;
mod gap_svg;
mod gen;
mod llc;
mod mir;
mod mutate_check;
mod options;
mod pipeline;
mod ptx;
mod ptxas;
mod ra2_gen;
mod report;
mod run;
mod schedule_gap;
mod sweep;
mod tool;
mod verify;

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
    /// Allocate registers; print the allocated program.
    Alloc(alloc::Args),
    /// Check an allocation against its original by independent dataflow.
    Verify(verify::Args),
    /// Run a program on the reference interpreter and print its trace digest.
    Run(run::Args),
    /// Break correct allocations on purpose and count what the verifier catches.
    MutateCheck(mutate_check::Args),
    /// Run the pipeline on every `.chr` file under a directory, in parallel.
    Corpus(corpus::Args),
    /// Allocate every program at every budget from MaxLive down to the lowest legal one.
    Sweep(sweep::Args),
    /// The production allocator against the ILP optimum, per function and class.
    Gap(gap::Args),
    /// Compare with ptxas on PTX kernels: registers, spill bytes at a budget, exports.
    Ptx(ptx::Args),
    /// Compare with LLVM's AMDGPU allocator on `.mir` kernels: registers, occupancy, spills.
    Mir(mir::Args),
    /// Pre-merge statistics, shader-db style: allocate, verify and measure every program;
    /// compare with a saved baseline.
    Report(report::Args),
    /// The pressure scheduler's peak per block against the optimal schedule's.
    ScheduleGap(schedule_gap::Args),
    /// Draw one function's allocation as SVG: registers × program points, moves, pressure.
    Draw(draw::Args),
    /// Allocators side by side on the same programs: instructions/s, spill cost, copies,
    /// the verifier beside regalloc2's checker.
    Bench(bench::Args),
    /// Write regalloc2's fuzz-generator functions as `.chr` files, one per seed.
    #[command(name = "ra2-gen")]
    Ra2Gen(ra2_gen::Args),
    /// Write chromatic's own generator's programs as `.chr` files, one per seed.
    Gen(gen::Args),
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
        Cli::Alloc(args) => alloc::run(&args),
        Cli::Verify(args) => verify::run(&args),
        Cli::Run(args) => run::run(&args),
        Cli::MutateCheck(args) => mutate_check::run(&args),
        Cli::Corpus(args) => corpus::run(&args),
        Cli::Sweep(args) => sweep::run(&args),
        Cli::Ptx(args) => ptx::run(&args),
        Cli::Mir(args) => mir::run(&args),
        Cli::Gap(args) => gap::run(&args),
        Cli::Report(args) => report::run(&args),
        Cli::Draw(args) => draw::run(&args),
        Cli::ScheduleGap(args) => schedule_gap::run(&args),
        Cli::Ra2Gen(args) => ra2_gen::run(&args),
        Cli::Gen(args) => gen::run(&args),
        Cli::Bench(args) => bench::run(&args),
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
