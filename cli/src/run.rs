//! `chromatic run FILE`: run every function on the reference interpreter and print its
//! trace digest (equal digests: same ops executed with the same inputs, in order);
//! `--trace` prints the events themselves; `--against ALLOCATED` runs FILE (the original)
//! and the allocation side by side and prints, per function, the first event where they
//! differ: where each ran it, on which lanes, and which lanes' inputs differ.

use crate::diag::Source;
use crate::options::read_program;
use crate::Outcome;
use chromatic::{Function, Program};
use chromatic_verifier::interp::{run as interpret, run_allocation, Config, Event, Site, Trace};

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
    /// Print every event: where it ran, its active lanes and its input tokens.
    #[arg(long)]
    trace: bool,
    /// An allocation of FILE to run side by side with it; prints the first differing
    /// event of each function (exit 1 when some differ).
    #[arg(long, value_name = "ALLOCATED")]
    against: Option<String>,
}

/// A program with the file it came from.
struct Loaded {
    source: Source,
    program: Program,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let Some(main) = load(&args.file)? else {
        return Ok(Outcome::Problem);
    };
    let config = Config {
        lanes: args.lanes,
        seed: args.seed,
        ..Config::default()
    };
    if let Some(path) = &args.against {
        let Some(other) = load(path)? else {
            return Ok(Outcome::Problem);
        };
        return Ok(compare(&main, &other, &config));
    }
    for f in &main.program.functions {
        let trace = interpret(f, &main.program.target, &config);
        outln!(
            "@{}: digest {:016x}, {} events",
            f.name,
            trace.digest(),
            trace.events.len()
        );
        if args.trace {
            for (i, (event, site)) in trace.events.iter().zip(&trace.sites).enumerate() {
                outln!("  #{i} {}", describe(&main, f, event, *site));
            }
        }
    }
    Ok(Outcome::Ok)
}

fn load(path: &str) -> anyhow::Result<Option<Loaded>> {
    let (source, program) = read_program(path)?;
    match program {
        Ok(program) => Ok(Some(Loaded { source, program })),
        Err(rendered) => {
            eprint!("{rendered}");
            Ok(None)
        }
    }
}

/// Runs each function of `original` and its namesake in `allocated`; prints where they
/// first differ.
fn compare(original: &Loaded, allocated: &Loaded, config: &Config) -> Outcome {
    let mut outcome = Outcome::Ok;
    for f in &original.program.functions {
        let Some(g) = allocated
            .program
            .functions
            .iter()
            .find(|g| g.name == f.name)
        else {
            eprintln!(
                "{}: no function @{} to run against",
                allocated.source.name, f.name
            );
            outcome = Outcome::Problem;
            continue;
        };
        let a = interpret(f, &original.program.target, config);
        let b = run_allocation(g, f, &allocated.program.target, config);
        match a.first_divergence(&b) {
            None => outln!("@{}: traces agree ({} events)", f.name, a.events.len()),
            Some(i) => {
                outcome = Outcome::Problem;
                outln!(
                    "@{}: first difference at event {i} (seed {}, {} lanes)",
                    f.name,
                    config.seed,
                    config.lanes
                );
                outln!("  original:  {}", at(original, f, &a, i));
                outln!("  allocated: {}", at(allocated, g, &b, i));
                if let (Some(x), Some(y)) = (a.events.get(i), b.events.get(i)) {
                    let names = a
                        .sites
                        .get(i)
                        .map(|&s| input_names(f, s))
                        .unwrap_or_default();
                    outln!("  differs in: {}", difference(x, y, &names));
                }
            }
        }
    }
    outcome
}

/// Event `i` of a trace, or how the trace ended before it.
fn at(loaded: &Loaded, f: &Function, trace: &Trace, i: usize) -> String {
    match (trace.events.get(i), trace.sites.get(i)) {
        (Some(e), Some(&site)) => describe(loaded, f, e, site),
        _ if trace.halted => format!("stopped by the event budget after {i} events"),
        _ => format!("returned after {i} events"),
    }
}

/// `file:line:col  block entry, instruction 2: v_add  lanes 0 1 2 3  inputs lane 0: …`.
fn describe(loaded: &Loaded, f: &Function, e: &Event, site: Site) -> String {
    let block = &f.blocks[site.block];
    let (what, pos) = match site.inst {
        Some(i) => {
            let inst = &block.insts[i];
            let opcode = inst.op().map_or("?", |op| op.opcode.as_str());
            (format!("instruction {i} `{opcode}`"), inst.pos)
        }
        None => ("terminator".to_string(), block.term.pos()),
    };
    format!(
        "{}:{pos}  block {}, {what}  lanes {}  inputs {}",
        loaded.source.name,
        block.name,
        lanes(e.mask),
        per_lane(e)
            .iter()
            .map(|(l, tokens)| format!("lane {l}: {}", hex(tokens)))
            .collect::<Vec<_>>()
            .join("  ")
    )
}

/// The active lanes of a mask, `0 1 3`.
fn lanes(mask: u64) -> String {
    let active: Vec<String> = (0..64)
        .filter(|l| mask >> l & 1 == 1)
        .map(|l: u32| l.to_string())
        .collect();
    if active.is_empty() {
        "none".into()
    } else {
        active.join(" ")
    }
}

/// The input tokens of each active lane.
fn per_lane(e: &Event) -> Vec<(u32, &[u64])> {
    let active: Vec<u32> = (0..64).filter(|l| e.mask >> l & 1 == 1).collect();
    let per = e.inputs.len() / active.len().max(1);
    active
        .iter()
        .enumerate()
        .map(|(k, &l)| (l, &e.inputs[k * per..(k + 1) * per]))
        .collect()
}

fn hex(tokens: &[u64]) -> String {
    if tokens.is_empty() {
        return "-".into();
    }
    let words: Vec<String> = tokens.iter().map(|t| format!("{:08x}", t >> 32)).collect();
    words.join(",")
}

/// The name of each input token of the event at `site`: `%a`, `%x[1]` (part 1), `imm`.
fn input_names(f: &Function, site: Site) -> Vec<String> {
    let block = &f.blocks[site.block];
    let operands: Vec<Option<&chromatic::Use>> = match site.inst.and_then(|i| block.insts[i].op()) {
        Some(op) => op.operands.iter().map(|o| o.as_use()).collect(),
        None => block.term.uses().iter().map(Some).collect(),
    };
    let mut names = Vec::new();
    for operand in operands {
        match operand {
            None => names.push("imm".to_string()),
            Some(u) => {
                let v = f.value(u.value);
                if v.size == 1 {
                    names.push(format!("%{}", v.name));
                } else {
                    names.extend((0..v.size).map(|p| format!("%{}[{p}]", v.name)));
                }
            }
        }
    }
    names
}

/// Which of two events' op, lanes and inputs differ (`names`: of the inputs).
fn difference(x: &Event, y: &Event, names: &[String]) -> String {
    if x.op != y.op {
        return "the operation (the programs ran different code)".into();
    }
    if x.mask != y.mask {
        return format!(
            "the active lanes ({} against {})",
            lanes(x.mask),
            lanes(y.mask)
        );
    }
    let lanes_differing: Vec<String> = per_lane(x)
        .iter()
        .zip(per_lane(y))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((l, a), (_, b))| {
            let inputs: Vec<String> = a
                .iter()
                .zip(b)
                .enumerate()
                .filter(|(_, (p, q))| p != q)
                .map(|(k, _)| names.get(k).cloned().unwrap_or_else(|| k.to_string()))
                .collect();
            format!("lane {l} ({})", inputs.join(", "))
        })
        .collect();
    format!("the inputs of {}", lanes_differing.join(", "))
}
