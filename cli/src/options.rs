//! Options shared by several commands: the register budget (`--regs v=32,s=16`,
//! `--occupancy N`) and how to read a program, with positioned errors.

use crate::diag::Source;
use chromatic::alloc::{AllocOptions, Policy};
use chromatic::ptx::ModuleMap;
use chromatic::schedule::Schedule;
use chromatic::Program;
use chromatic_oracle::solver::Solver;

/// `--schedule pressure|none`: reorder blocks for register pressure before allocating.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub struct ScheduleArgs {
    /// `pressure` (reorder each block within its dependences to lower register pressure)
    /// or `none` (keep the emitted order); default: pressure for `.ptx` and `.mir` input,
    /// none for `.chr`.
    #[arg(long, value_name = "pressure|none")]
    schedule: Option<Schedule>,
}

impl ScheduleArgs {
    /// The schedule for an input that is scheduled by default (PTX, MIR) or not.
    pub fn for_input(&self, scheduled: bool) -> Schedule {
        self.schedule.unwrap_or(if scheduled {
            Schedule::Pressure
        } else {
            Schedule::None
        })
    }
}

/// The register budget of `alloc` and `verify`.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct BudgetArgs {
    /// Registers per class, e.g. `v=32,s=16` (default: the whole register file, or what
    /// `--occupancy` allows); a class named here overrides `--occupancy`.
    #[arg(long, value_parser = parse_regs)]
    regs: Option<Regs>,
    /// Waves (AMD) or warps (NVIDIA) to reach: each class gets the most registers that
    /// still allow N, from the target's occupancy tables.
    #[arg(long, value_name = "N")]
    occupancy: Option<u32>,
}

impl BudgetArgs {
    pub fn options(&self, policy: Policy) -> AllocOptions {
        AllocOptions {
            budget: self.regs.clone().unwrap_or_default().0,
            occupancy: self.occupancy,
            policy,
            ..AllocOptions::default()
        }
    }
}

/// A register budget from the command line: `CLASS=K` pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Regs(pub Vec<(String, u16)>);

/// Parses `--solver microlp|highs`; HiGHS only in a build with `--features highs`.
pub fn parse_solver(text: &str) -> Result<Solver, String> {
    let solver = match text {
        "microlp" => Solver::Microlp,
        "highs" => Solver::Highs,
        _ => return Err(format!("`{text}`: expected `microlp` or `highs`")),
    };
    if solver.available() {
        Ok(solver)
    } else {
        Err(
            "this chromatic was built without HiGHS: build it with `cargo build --release \
             --features highs` (needs cmake, a C++ compiler and libclang)"
                .to_string(),
        )
    }
}

/// Parses `CLASS=K,CLASS=K`.
pub fn parse_regs(text: &str) -> Result<Regs, String> {
    let pairs: Result<Vec<(String, u16)>, String> = text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (class, k) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}`: expected CLASS=K"))?;
            let k: u16 = k
                .parse()
                .map_err(|_| format!("`{item}`: K must be a number of registers"))?;
            Ok((class.to_string(), k))
        })
        .collect();
    pairs.map(Regs)
}

/// Refuses an output path that is one of the inputs, however spelled (a link, `./`), so that
/// a typo cannot overwrite the program being read.
pub fn refuse_to_overwrite(output: &str, inputs: &[&str]) -> anyhow::Result<()> {
    let Ok(out) = std::fs::canonicalize(output) else {
        return Ok(());
    };
    for input in inputs {
        if std::fs::canonicalize(input).is_ok_and(|i| i == out) {
            anyhow::bail!(
                "-o {output}: that is the input file {input}; write the output elsewhere"
            );
        }
    }
    Ok(())
}

/// Reads and parses `path` (`.chr`, or `.ptx` / `.mir` imported); an error is rendered against the
/// source.
pub fn read_program(path: &str) -> anyhow::Result<(Source, Result<Program, String>)> {
    let (source, input) = read_input(path)?;
    Ok((source, input.map(|i| i.program)))
}

/// A program read from a file, with the PTX module it came from when it was PTX.
#[derive(Debug)]
pub struct Input {
    pub program: Program,
    pub ptx: Option<ModuleMap>,
}

/// Whether `path` names a PTX file (by its extension).
pub fn is_ptx(path: &str) -> bool {
    std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
}

/// Whether `path` names LLVM machine IR (by its extension).
pub fn is_mir(path: &str) -> bool {
    std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("mir"))
}

/// Parses a source: PTX when its name ends in `.ptx`, LLVM AMDGPU machine IR when it
/// ends in `.mir`, else the `.chr` format.
pub fn parse_source(source: &Source) -> Result<Input, String> {
    if is_mir(&source.name) {
        chromatic::mir::import(&source.text)
            .map(|program| Input { program, ptx: None })
            .map_err(|e| source.render(e.pos, &e.message))
    } else if is_ptx(&source.name) {
        chromatic::ptx::import(&source.text)
            .map(|i| Input {
                program: i.program,
                ptx: Some(i.module),
            })
            .map_err(|e| source.render(e.pos, &e.message))
    } else {
        chromatic::parse(&source.text)
            .map(|program| Input { program, ptx: None })
            .map_err(|e| source.render(e.pos, &e.message))
    }
}

/// Reads and parses `path` like [`parse_source`].
pub fn read_input(path: &str) -> anyhow::Result<(Source, Result<Input, String>)> {
    let source = Source::read(path)?;
    let input = parse_source(&source);
    Ok((source, input))
}
