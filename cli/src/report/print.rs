//! The text of a report: one line per function and allocator, then totals per allocator
//! over the functions every allocator of the run verified, so that allocators compared
//! side by side are summed over the same programs.

use super::record::{program_name, rounded, ClassMetrics, Metrics, Outcome, Record, Saved};
use chromatic::alloc::Allocator;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

pub fn report(saved: &Saved, allocators: &[Allocator]) -> String {
    let several = allocators.len() > 1;
    let mut out = String::new();
    for r in &saved.records {
        let name = program_name(r, several);
        let time = saved
            .times_us
            .get(&program_name(r, true))
            .map(|t| format!("  time {t}µs"))
            .unwrap_or_default();
        let _ = match &r.outcome {
            Outcome::Verified(m) => writeln!(out, "{name}: {}{time}  verified", line(m)),
            Outcome::NotAllocated { reason } => {
                writeln!(out, "{name}: not allocated by {}: {reason}", r.allocator)
            }
            Outcome::Failed { reason } => writeln!(out, "{name}: FAILED: {reason}"),
        };
    }
    out += &totals(saved, allocators);
    out
}

/// `instructions 12  occupancy 10  registers s=2 v=3  spills 0  …`, and where scheduling
/// changed MaxLive, `max_live emitted v=5 scheduled v=4`.
fn line(m: &Metrics) -> String {
    let occupancy = m.occupancy.map_or(String::from("-"), |o| o.to_string());
    let mut s = format!(
        "instructions {}  occupancy {occupancy}  {}",
        m.instructions,
        per_class_columns(&m.classes)
    );
    if m.classes.values().any(|c| c.max_live != c.max_live_emitted) {
        let per_class = |get: fn(&ClassMetrics) -> u32| -> String {
            let values: Vec<String> = m
                .classes
                .iter()
                .map(|(class, c)| format!("{class}={}", get(c)))
                .collect();
            values.join(" ")
        };
        s += &format!(
            "  max_live emitted {} scheduled {}",
            per_class(|c| c.max_live_emitted),
            per_class(|c| c.max_live)
        );
    }
    s
}

type Column = (&'static str, fn(&ClassMetrics) -> f64);

const COLUMNS: [Column; 7] = [
    ("registers", |c| f64::from(c.registers)),
    ("spills", |c| f64::from(c.spills)),
    ("reloads", |c| f64::from(c.reloads)),
    ("remats", |c| f64::from(c.remats)),
    ("copies", |c| f64::from(c.copies)),
    ("spill_cost", |c| c.spill_cost),
    ("copy_cost", |c| c.copy_cost),
];

/// Each column per class (`registers s=2 v=3`), or `0` when every class has 0 there
/// (registers always per class).
fn per_class_columns(classes: &BTreeMap<String, ClassMetrics>) -> String {
    COLUMNS
        .iter()
        .enumerate()
        .map(|(i, (name, get))| {
            let all_zero = classes.values().all(|c| get(c) == 0.0);
            if all_zero && i > 0 {
                return format!("{name} 0");
            }
            let values: Vec<String> = classes
                .iter()
                .map(|(class, c)| format!("{class}={}", rounded(get(c))))
                .collect();
            format!("{name} {}", values.join(" "))
        })
        .collect::<Vec<_>>()
        .join("  ")
}

/// Per allocator: how many functions it verified, declined and failed, and its metrics
/// summed over the functions every allocator verified.
fn totals(saved: &Saved, allocators: &[Allocator]) -> String {
    let mut verified_by: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in &saved.records {
        if matches!(r.outcome, Outcome::Verified(_)) {
            *verified_by.entry((&r.file, &r.function)).or_default() += 1;
        }
    }
    let shared: BTreeSet<(&str, &str)> = verified_by
        .into_iter()
        .filter(|(_, n)| *n == allocators.len())
        .map(|(k, _)| k)
        .collect();
    let mut out = format!(
        "totals over the {} functions {}verified:\n",
        shared.len(),
        if allocators.len() > 1 {
            "every allocator "
        } else {
            ""
        }
    );
    for allocator in allocators {
        let mine: Vec<&Record> = saved
            .records
            .iter()
            .filter(|r| r.allocator == allocator.name())
            .collect();
        let count = |f: fn(&Outcome) -> bool| mine.iter().filter(|r| f(&r.outcome)).count();
        let summed = sum(mine
            .iter()
            .filter(|r| shared.contains(&(r.file.as_str(), r.function.as_str())))
            .filter_map(|r| match &r.outcome {
                Outcome::Verified(m) => Some(m),
                _ => None,
            }));
        let time: u64 = mine
            .iter()
            .filter_map(|r| saved.times_us.get(&program_name(r, true)))
            .sum();
        let time = if saved.times_us.is_empty() {
            String::new()
        } else {
            format!("  time {time}µs")
        };
        let _ = writeln!(
            out,
            "{allocator}: functions {}  verified {}  not allocated {}  failed {}  {}{time}",
            mine.len(),
            count(|o| matches!(o, Outcome::Verified(_))),
            count(|o| matches!(o, Outcome::NotAllocated { .. })),
            count(|o| matches!(o, Outcome::Failed { .. })),
            line(&summed).replacen("occupancy", "occupancy sum", 1),
        );
    }
    out
}

/// Metrics summed over functions, class by class.
fn sum<'a>(metrics: impl Iterator<Item = &'a Metrics>) -> Metrics {
    let mut total = Metrics {
        instructions: 0,
        occupancy: None,
        classes: BTreeMap::new(),
    };
    for m in metrics {
        total.instructions += m.instructions;
        if let Some(o) = m.occupancy {
            total.occupancy = Some(total.occupancy.unwrap_or(0) + o);
        }
        for (class, c) in &m.classes {
            let t = total.classes.entry(class.clone()).or_insert(ClassMetrics {
                max_live_emitted: 0,
                max_live: 0,
                registers: 0,
                spills: 0,
                reloads: 0,
                remats: 0,
                copies: 0,
                spill_cost: 0.0,
                copy_cost: 0.0,
            });
            t.max_live_emitted += c.max_live_emitted;
            t.max_live += c.max_live;
            t.registers += c.registers;
            t.spills += c.spills;
            t.reloads += c.reloads;
            t.remats += c.remats;
            t.copies += c.copies;
            t.spill_cost = rounded(t.spill_cost + c.spill_cost);
            t.copy_cost = rounded(t.copy_cost + c.copy_cost);
        }
    }
    total
}
