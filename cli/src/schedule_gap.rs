//! `chromatic schedule-gap PATH...`: the pressure scheduler against the optimal schedule.
//! For every block of every function (`.chr` and `.ptx` files; directories are walked)
//! with 2 to `--max-ops` operations, and every class with demand there: the peak demand
//! in the emitted order, after the list scheduler (`chromatic::schedule`, run as `alloc
//! --schedule pressure` runs it without a budget), and the least peak over every legal
//! order (`chromatic_oracle::schedule`, exact). The totals give the blocks solved, the
//! mean of heuristic / optimum, how many are optimal, within 5%, and 50% or more above.
//! Output is sorted and deterministic.

use crate::corpus::program_files;
use crate::options::read_program;
use chromatic::analysis::Analysis;
use chromatic::schedule::{peak, reorder_function, Goal};
use chromatic::{Block, BlockData, Op, Program, Value};
use rayon::prelude::*;
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `.chr` and `.ptx` files, or directories to walk for them.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Blocks with more operations are left out.
    #[arg(long, default_value_t = 24)]
    max_ops: usize,
    /// Sets of placed operations the exact search may visit per block and class.
    #[arg(long, default_value_t = 2_000_000)]
    states: usize,
    /// Print every block, not only the totals.
    #[arg(long)]
    blocks: bool,
}

/// One block and class: peaks emitted, scheduled and optimal (`None`: not solved).
struct Row {
    name: String,
    emitted: u32,
    scheduled: u32,
    optimum: Option<u32>,
}

pub fn run(args: &Args) -> anyhow::Result<crate::Outcome> {
    let mut files = Vec::new();
    for path in &args.paths {
        let p = Path::new(path);
        if p.is_dir() {
            files.extend(program_files(p)?);
        } else {
            files.push(p.to_path_buf());
        }
    }
    let mut problems = 0;
    let mut programs = Vec::new();
    for file in &files {
        let name = file.display().to_string();
        match read_program(&name)?.1 {
            Ok(p) if crate::check::validate(&p).is_empty() => programs.push((name, p)),
            Ok(_) | Err(_) => problems += 1,
        }
    }
    let rows: Vec<Row> = programs
        .par_iter()
        .flat_map_iter(|(name, p)| program_rows(name, p, args))
        .collect();
    if args.blocks {
        for r in &rows {
            let optimum = r.optimum.map_or("-".into(), |o| o.to_string());
            outln!(
                "{}: emitted {}  scheduled {}  optimum {optimum}",
                r.name,
                r.emitted,
                r.scheduled
            );
        }
    }
    out!("{}", totals(&rows));
    Ok(if problems == 0 {
        crate::Outcome::Ok
    } else {
        crate::Outcome::Problem
    })
}

fn program_rows(name: &str, p: &Program, args: &Args) -> Vec<Row> {
    let budget: Vec<u16> = p.target.classes.iter().map(|c| c.units).collect();
    let mut rows = Vec::new();
    for f in &p.functions {
        let scheduled = reorder_function(f, &p.target, &budget, Goal::Minimise).func;
        let analysis = Analysis::new(f, &p.target);
        let mut live = peak::Live::new(f, &p.target);
        for (b, (original, after)) in f.blocks.iter().zip(&scheduled.blocks).enumerate() {
            let (Some(ops), Some(after_ops)) = (ops_of(original), ops_of(after)) else {
                continue;
            };
            if ops.len() < 2 || ops.len() > args.max_ops {
                continue;
            }
            let live_end = live_at_end(original, analysis.liveness.live_out(Block(b as u32)));
            let order: Vec<u32> = (0..ops.len() as u32).collect();
            let emitted = peak::peak(&ops, &order, &live_end, &mut live);
            let heuristic = peak::peak(&after_ops, &order, &live_end, &mut live);
            for (c, (&e, &h)) in emitted.iter().zip(&heuristic).enumerate() {
                if e == 0 && h == 0 {
                    continue;
                }
                rows.push(Row {
                    name: format!(
                        "{name} @{} {} {}",
                        f.name, original.name, p.target.classes[c].name
                    ),
                    emitted: e,
                    scheduled: h,
                    optimum: chromatic_oracle::schedule::min_peak(
                        f,
                        &ops,
                        &live_end,
                        c,
                        args.states,
                    ),
                });
            }
        }
    }
    rows
}

fn ops_of(block: &BlockData) -> Option<Vec<&Op>> {
    block.insts.iter().map(|i| i.op()).collect()
}

fn live_at_end(block: &BlockData, live_out: &[Value]) -> Vec<Value> {
    let mut values = live_out.to_vec();
    values.extend(block.term.uses().iter().map(|u| u.value));
    values.sort_unstable();
    values.dedup();
    values
}

fn totals(rows: &[Row]) -> String {
    let solved: Vec<(u32, u32, u32)> = rows
        .iter()
        .filter_map(|r| Some((r.emitted, r.scheduled, r.optimum?)))
        .filter(|&(_, _, o)| o > 0)
        .collect();
    let ratio = |x: u32, o: u32| f64::from(x) / f64::from(o);
    let mean = |pick: fn(&(u32, u32, u32)) -> u32| {
        solved.iter().map(|s| ratio(pick(s), s.2)).sum::<f64>() / solved.len().max(1) as f64
    };
    let count = |p: &dyn Fn(f64) -> bool| solved.iter().filter(|s| p(ratio(s.1, s.2))).count();
    let worse = solved.iter().filter(|s| s.1 > s.0).count();
    format!(
        "blocks x classes: {}  solved: {}  unsolved: {}\n\
heuristic / optimum: mean {:.4} ({:+.2}% above)  optimal {}  within 5% {}  50% or more above {}  (emitted order: mean {:.4})\n\
scheduled worse than emitted: {worse}\n",
        rows.len(),
        solved.len(),
        rows.len() - solved.len(),
        mean(|s| s.1),
        (mean(|s| s.1) - 1.0) * 100.0,
        count(&|r| r <= 1.0),
        count(&|r| r <= 1.05),
        count(&|r| r >= 1.5),
        mean(|s| s.0),
    )
}
