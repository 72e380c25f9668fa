//! `chromatic alloc FILE`: allocate a program, verify the allocation independently, and
//! print it — in the `.chr` format, for a `.ptx` input with `--emit ptx` as PTX (the
//! kernel with its registers renamed to the allocated ones, `chromatic::ptx::export`), or
//! for a `.mir` input with `--emit mir` as post-allocation LLVM machine IR that
//! `llc-19 -start-after=virtregrewriter,1` assembles (`chromatic::mir::export`).
//! An allocation the verifier rejects is never printed (an internal error).

use crate::options::{is_mir, read_input, refuse_to_overwrite, BudgetArgs, ScheduleArgs};
use crate::Outcome;
use chromatic::alloc::{allocate, AllocOptions, Allocator, FunctionStats, Policy};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `.chr` or `.ptx` file to allocate.
    file: String,
    /// Allocate for this target instead of the file's (class names must match).
    #[arg(long)]
    target: Option<String>,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// `dense` (lowest free register) or `round-robin`.
    #[arg(long, value_enum, default_value_t = PolicyArg::Dense)]
    policy: PolicyArg,
    /// `ssa` (the production allocator), or a baseline: `coloring` (Chaitin–Briggs),
    /// `linear` (linear scan), `regalloc2-ion` or `regalloc2-fast` (regalloc2 0.15).
    #[arg(long, default_value_t = Allocator::Ssa)]
    allocator: Allocator,
    /// Write the allocated program here instead of standard output (never over the input).
    #[arg(short, long)]
    output: Option<String>,
    /// The output format: `chr`, `ptx` (for a `.ptx` input) or `mir` (for a `.mir` input).
    #[arg(long, value_enum, default_value_t = Emit::Chr)]
    emit: Emit,
    /// Print statistics (`--stats` as a table, `--stats=json`) — to standard output with
    /// `-o`, else to standard error.
    #[arg(long, num_args = 0..=1, default_missing_value = "table")]
    stats: Option<StatsFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Emit {
    Chr,
    Ptx,
    Mir,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PolicyArg {
    Dense,
    RoundRobin,
}

impl From<PolicyArg> for Policy {
    fn from(p: PolicyArg) -> Policy {
        match p {
            PolicyArg::Dense => Policy::Dense,
            PolicyArg::RoundRobin => Policy::RoundRobin,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    Table,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let (source, input) = read_input(&args.file)?;
    let input = match input {
        Ok(input) => input,
        Err(rendered) => {
            eprint!("{rendered}");
            return Ok(Outcome::Problem);
        }
    };
    if let Some(output) = &args.output {
        refuse_to_overwrite(output, &[&args.file])?;
    }
    if args.emit == Emit::Ptx && (input.ptx.is_none() || args.target.is_some()) {
        anyhow::bail!("--emit ptx needs a .ptx input allocated for its own target");
    }
    if args.emit == Emit::Mir && (!is_mir(&args.file) || args.target.is_some()) {
        anyhow::bail!("--emit mir needs a .mir input allocated for its own target");
    }
    let mut program = input.program;
    if let Some(name) = &args.target {
        let target =
            chromatic::Target::builtin(name).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
        program = match chromatic::parse::parse_for_target(&source.text, &target) {
            Ok(p) => p,
            Err(e) => {
                let message = format!("{} (with --target {name})", e.message);
                eprint!("{}", source.render(e.pos, &message));
                return Ok(Outcome::Problem);
            }
        };
    }
    let opts = AllocOptions {
        allocator: args.allocator,
        schedule: args
            .schedule
            .for_input((input.ptx.is_some() && args.emit == Emit::Chr) || is_mir(&args.file)),
        ..args.budget.options(args.policy.into())
    };
    let budget = chromatic::alloc::budget_of(&program.target, &opts)?;
    let (allocated, stats) = match allocate(&program, &opts) {
        Ok(result) => result,
        Err(e) => {
            let pos = e.pos().unwrap_or_default();
            eprint!("{}", source.render(pos, &e.to_string()));
            return Ok(Outcome::Problem);
        }
    };
    let errors = chromatic_verifier::verify_program(&program, &allocated, Some(&budget));
    if let Some(e) = errors.first() {
        eprintln!("internal error: the allocation failed verification and is not printed; please report: {e}");
        return Ok(Outcome::Problem);
    }
    let text = match (&input.ptx, args.emit) {
        (Some(map), Emit::Ptx) => {
            match chromatic::ptx::export::export(&source.text, map, &program, &allocated) {
                Ok(text) => text,
                Err(e) => {
                    eprintln!("{}: error: {e}", source.name);
                    return Ok(Outcome::Problem);
                }
            }
        }
        (_, Emit::Mir) => match chromatic::mir::export::export(&source.text, &allocated) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{}: error: {e}", source.name);
                return Ok(Outcome::Problem);
            }
        },
        _ => chromatic::print(&allocated),
    };
    let stats_text = args.stats.map(|format| render_stats(&stats, format));
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
            stats_text.iter().for_each(|s| out!("{s}"));
        }
        None => {
            out!("{text}");
            stats_text.iter().for_each(|s| eprint!("{s}"));
        }
    }
    Ok(Outcome::Ok)
}

pub fn render_stats(stats: &[FunctionStats], format: StatsFormat) -> String {
    if format == StatsFormat::Json {
        return serde_json::to_string_pretty(stats).unwrap_or_default() + "\n";
    }
    let mut out = String::new();
    for f in stats {
        let occupancy = f.occupancy.map_or(String::from("-"), |o| o.to_string());
        out += &format!(
            "@{}: {} instructions, occupancy {occupancy}, {} µs\n",
            f.function, f.instructions, f.alloc_time_us
        );
        out += "  class  max_live  regs_used  copies  swaps  copy_units  weighted  false_deps\n";
        for c in &f.classes {
            out += &format!(
                "  {:<5}  {:>8}  {:>9}  {:>6}  {:>5}  {:>10}  {:>8}  {:>10}\n",
                c.class,
                c.max_live,
                c.regs_used,
                c.copies,
                c.swaps,
                c.copy_units,
                c.weighted_copies,
                c.false_deps
            );
        }
        let lowered = f.classes.iter().any(|c| c.max_live < c.max_live_emitted);
        if f.blocks_scheduled > 0 || lowered {
            out += &render_schedule(f);
        }
        if has_spill_code(f) {
            out += &render_spill_code(f);
        }
    }
    out
}

/// What scheduling did: the blocks reordered and MaxLive before and after, per class.
fn render_schedule(f: &FunctionStats) -> String {
    let classes: Vec<String> = f
        .classes
        .iter()
        .filter(|c| c.max_live_emitted > 0)
        .map(|c| format!("{} {} -> {}", c.class, c.max_live_emitted, c.max_live))
        .collect();
    format!(
        "  scheduled: {} blocks reordered; max_live emitted -> scheduled: {}\n",
        f.blocks_scheduled,
        classes.join(", ")
    )
}

fn has_spill_code(f: &FunctionStats) -> bool {
    f.spill_slots > 0
        || f.lane_registers > 0
        || f.classes
            .iter()
            .any(|c| c.spills + c.lane_spills + c.class_spills + c.reloads + c.remats > 0)
}

/// The spill table of one function, printed only when it has spill code.
fn render_spill_code(f: &FunctionStats) -> String {
    let mut out = format!(
        "  spill code: {} memory slots, {} lane registers\n",
        f.spill_slots, f.lane_registers
    );
    out += "  class  spills  lane_spills  class_spills  reloads  remats  spill_cost\n";
    for c in &f.classes {
        out += &format!(
            "  {:<5}  {:>6}  {:>11}  {:>12}  {:>7}  {:>6}  {:>10}\n",
            c.class, c.spills, c.lane_spills, c.class_spills, c.reloads, c.remats, c.spill_cost
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chromatic::alloc::ClassStats;

    fn class(name: &str, spills: u32, reloads: u32, spill_cost: f64) -> ClassStats {
        ClassStats {
            class: name.into(),
            max_live: 3,
            max_live_emitted: 3,
            regs_used: 4,
            copies: 1,
            swaps: 0,
            copy_units: 1,
            weighted_copies: 10.0,
            false_deps: 2,
            spills,
            lane_spills: 0,
            class_spills: 0,
            reloads,
            remats: 0,
            spill_cost,
        }
    }

    fn function(classes: Vec<ClassStats>, spill_slots: u32) -> FunctionStats {
        FunctionStats {
            function: "f".into(),
            instructions: 7,
            occupancy: Some(10),
            classes,
            spill_slots,
            lane_registers: 0,
            alloc_time_us: 5,
            retries: 0,
            blocks_scheduled: 0,
        }
    }

    #[test]
    fn table_shows_spill_code_only_when_there_is_some() {
        let head = "@f: 7 instructions, occupancy 10, 5 µs\n  class  max_live  regs_used  copies  swaps  copy_units  weighted  false_deps\n  v             3          4       1      0           1        10           2\n";
        let none = function(vec![class("v", 0, 0, 0.0)], 0);
        assert_eq!(render_stats(&[none], StatsFormat::Table), head);
        let some = function(vec![class("v", 1, 2, 176.5)], 1);
        let spill = "  spill code: 1 memory slots, 0 lane registers\n  class  spills  lane_spills  class_spills  reloads  remats  spill_cost\n  v           1            0             0        2       0       176.5\n";
        assert_eq!(
            render_stats(&[some], StatsFormat::Table),
            format!("{head}{spill}")
        );
    }
}
