//! The library end to end: parse a program, allocate it with the production allocator and
//! with the two baselines, check each allocation with the independent verifier, and print
//! the statistics a compiler engineer compares.
//!
//! ```sh
//! cargo run --release --example allocate -- corpus/divergent_loop.chr v=8
//! ```

use chromatic::alloc::{allocate, budget_of, AllocOptions, Allocator};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: allocate FILE.chr [CLASS=K ...]");
        return ExitCode::from(2);
    };
    match run(&path, args.collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{path}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str, budget: Vec<String>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let program = chromatic::parse(&text).map_err(|e| e.to_string())?;
    let budget = budget
        .iter()
        .map(|item| {
            let (class, k) = item.split_once('=').ok_or("expected CLASS=K")?;
            Ok((class.to_string(), k.parse().map_err(|_| "K is a number")?))
        })
        .collect::<Result<Vec<(String, u16)>, &str>>()?;
    for allocator in Allocator::ALL {
        let options = AllocOptions {
            budget: budget.clone(),
            allocator,
            ..AllocOptions::default()
        };
        let (allocated, stats) = match allocate(&program, &options) {
            Ok(done) => done,
            Err(e) => {
                println!("{allocator}: not allocated: {e}");
                continue;
            }
        };
        let units = budget_of(&program.target, &options).map_err(|e| e.to_string())?;
        let errors = chromatic_verifier::verify_program(&program, &allocated, Some(&units));
        if let Some(e) = errors.first() {
            return Err(format!("{allocator}: the allocation does not verify: {e}"));
        }
        for f in &stats {
            let per_class: Vec<String> = f
                .classes
                .iter()
                .map(|c| {
                    format!(
                        "{}: regs {} copies {} spills {} reloads {}",
                        c.class, c.regs_used, c.copies, c.spills, c.reloads
                    )
                })
                .collect();
            println!(
                "{allocator} @{}: {}  verified",
                f.function,
                per_class.join(", ")
            );
        }
    }
    Ok(())
}
