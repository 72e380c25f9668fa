//! Two runs compared in the manner of Mesa's shader-db `report.py`: per metric, the
//! totals over the programs both runs allocated, the totals over the programs whose value
//! changed, how many were helped and how many HURT, then one line per such program;
//! `GAINED`/`LOST` for programs that newly reach or lose an occupancy tier, a spill-free
//! allocation, or an allocation at all. Allocation time is shown but never counted as
//! helped or HURT: it is noise.

use super::record::{program_name, rounded, Metrics, Outcome, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The text of a comparison and what a CI gate looks at.
#[derive(Debug, Default)]
pub struct Comparison {
    pub text: String,
    /// Only the four lines per metric: what `--compare` prints per allocator.
    pub summary: String,
    /// Programs HURT, summed over the metrics.
    pub hurt: usize,
    /// Programs that lost an occupancy tier, a spill-free allocation or an allocation.
    pub lost: usize,
}

/// The per-class metrics, in report order.
const CLASS_METRICS: [&str; 7] = [
    "registers",
    "spills",
    "reloads",
    "remats",
    "copies",
    "spill cost",
    "copy cost",
];

/// `(name, value)` of every metric of `m`: `instructions`, `occupancy` where the target
/// has a model, then `<metric> <class>` per class.
pub fn metric_values(m: &Metrics) -> Vec<(String, f64)> {
    let mut values = vec![(String::from("instructions"), m.instructions as f64)];
    if let Some(o) = m.occupancy {
        values.push((String::from("occupancy"), f64::from(o)));
    }
    for (class, c) in &m.classes {
        let per_class = [
            f64::from(c.registers),
            f64::from(c.spills),
            f64::from(c.reloads),
            f64::from(c.remats),
            f64::from(c.copies),
            c.spill_cost,
            c.copy_cost,
        ];
        for (name, v) in CLASS_METRICS.iter().zip(per_class) {
            values.push((format!("{name} {class}"), v));
        }
    }
    values
}

/// Report order: `instructions`, `occupancy`, then each class metric over the classes.
fn metric_order(name: &str) -> (usize, &str) {
    match name {
        "instructions" => (0, ""),
        "occupancy" => (1, ""),
        _ => {
            let (metric, class) = name.rsplit_once(' ').unwrap_or((name, ""));
            let i = CLASS_METRICS.iter().position(|m| *m == metric);
            (2 + i.unwrap_or(CLASS_METRICS.len()), class)
        }
    }
}

fn higher_is_better(metric: &str) -> bool {
    metric == "occupancy"
}

/// Mesa's `format_percent`: two decimals, `<.01%` for a change too small to show.
fn percent(before: f64, after: f64) -> String {
    if before == 0.0 {
        return if after == 0.0 {
            "0.00%".into()
        } else {
            "inf".into()
        };
    }
    let frac = (after - before) / before;
    if frac != 0.0 && frac.abs() < 0.0001 {
        String::from("<.01%")
    } else {
        format!("{:.2}%", frac * 100.0)
    }
}

fn change(before: f64, after: f64) -> String {
    format!(
        "{} -> {} ({})",
        rounded(before),
        rounded(after),
        percent(before, after)
    )
}

type Key = (String, String, String);

/// Allocation time per program, as saved.
type Times = BTreeMap<String, u64>;

/// Records by program; the allocator is part of the key unless each side has one
/// allocator (then `--allocator coloring` compares against a baseline saved with `ssa`).
fn by_key(records: &[Record], with_allocator: bool) -> BTreeMap<Key, &Record> {
    records
        .iter()
        .map(|r| {
            let allocator = if with_allocator {
                r.allocator.clone()
            } else {
                String::new()
            };
            ((r.file.clone(), r.function.clone(), allocator), r)
        })
        .collect()
}

fn allocators(records: &[Record]) -> BTreeSet<&str> {
    records.iter().map(|r| r.allocator.as_str()).collect()
}

/// Compares `after` with `before`; `times` are both runs' times when they are to be shown.
pub fn compare(before: &[Record], after: &[Record], times: Option<(&Times, &Times)>) -> Comparison {
    let with_allocator = allocators(before).len() > 1 || allocators(after).len() > 1;
    let (b, a) = (
        by_key(before, with_allocator),
        by_key(after, with_allocator),
    );
    let shared: Vec<(&Record, &Record)> = b
        .iter()
        .filter_map(|(k, rb)| Some((*rb, *a.get(k)?)))
        .collect();
    let mut out = Comparison::default();
    let verified: Vec<(&Record, &Metrics, &Metrics)> = shared
        .iter()
        .filter_map(|(rb, ra)| match (&rb.outcome, &ra.outcome) {
            (Outcome::Verified(mb), Outcome::Verified(ma)) => Some((*ra, mb, ma)),
            _ => None,
        })
        .collect();
    for metric in metrics_of(&verified) {
        metric_block(&metric, &verified, with_allocator, &mut out);
    }
    if let Some((tb, ta)) = times {
        time_line(&verified, tb, ta, &mut out.text);
    }
    gained_lost(&shared, with_allocator, &mut out);
    let missing = b.keys().filter(|k| !a.contains_key(*k)).count();
    let new = a.keys().filter(|k| !b.contains_key(*k)).count();
    if missing + new > 0 {
        let _ = writeln!(
            out.text,
            "programs only in the baseline: {missing}  only in this run: {new}"
        );
    }
    out
}

/// Every metric some shared program has, in report order.
fn metrics_of(verified: &[(&Record, &Metrics, &Metrics)]) -> Vec<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (_, mb, ma) in verified {
        for (name, _) in metric_values(mb).into_iter().chain(metric_values(ma)) {
            names.insert(name);
        }
    }
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by(|x, y| metric_order(x).cmp(&metric_order(y)));
    names
}

fn value_of(m: &Metrics, metric: &str) -> f64 {
    metric_values(m)
        .into_iter()
        .find(|(name, _)| name == metric)
        .map_or(0.0, |(_, v)| v)
}

/// The four shader-db lines of one metric, then its helped and HURT programs; a metric
/// that is 0 everywhere on both sides is left out.
fn metric_block(
    metric: &str,
    verified: &[(&Record, &Metrics, &Metrics)],
    with_allocator: bool,
    out: &mut Comparison,
) {
    let values: Vec<(&Record, f64, f64)> = verified
        .iter()
        .map(|(r, mb, ma)| (*r, value_of(mb, metric), value_of(ma, metric)))
        .collect();
    let total = |pick: fn(&(&Record, f64, f64)) -> f64, only: &dyn Fn(f64, f64) -> bool| {
        values
            .iter()
            .filter(|v| only(v.1, v.2))
            .map(pick)
            .sum::<f64>()
    };
    let differs = |x: f64, y: f64| (x - y).abs() > 1e-9;
    let (all_b, all_a) = (total(|v| v.1, &|_, _| true), total(|v| v.2, &|_, _| true));
    if all_b == 0.0 && all_a == 0.0 {
        return;
    }
    let (aff_b, aff_a) = (total(|v| v.1, &differs), total(|v| v.2, &differs));
    let better = |x: f64, y: f64| {
        if higher_is_better(metric) {
            y > x
        } else {
            y < x
        }
    };
    let helped: Vec<_> = values
        .iter()
        .filter(|v| differs(v.1, v.2) && better(v.1, v.2))
        .collect();
    let hurt: Vec<_> = values
        .iter()
        .filter(|v| differs(v.1, v.2) && !better(v.1, v.2))
        .collect();
    let four = format!(
        "total {metric} in shared programs: {}\n{metric} in affected programs: {}\nhelped: {}\nHURT: {}\n",
        change(all_b, all_a),
        change(aff_b, aff_a),
        helped.len(),
        hurt.len()
    );
    out.summary += &four;
    out.summary.push('\n');
    let t = &mut out.text;
    t.push_str(&four);
    for (label, list) in [("helped", &helped), ("HURT", &hurt)] {
        for (r, x, y) in list.iter().copied() {
            let name = program_name(r, with_allocator);
            let _ = writeln!(t, "{metric} {label}: {name}: {}", change(*x, *y));
        }
    }
    t.push('\n');
    out.hurt += hurt.len();
}

fn time_line(
    verified: &[(&Record, &Metrics, &Metrics)],
    before: &Times,
    after: &Times,
    text: &mut String,
) {
    if before.is_empty() {
        text.push_str("allocation time: the baseline has none (save it with --times)\n\n");
        return;
    }
    let (mut tb, mut ta) = (0.0, 0.0);
    for (r, _, _) in verified {
        let key = program_name(r, true);
        if let (Some(b), Some(a)) = (before.get(&key), after.get(&key)) {
            tb += *b as f64;
            ta += *a as f64;
        }
    }
    let _ = writeln!(
        text,
        "total allocation time (µs) in shared programs: {} (not counted as helped or HURT)\n",
        change(tb, ta)
    );
}

/// `GAINED:`/`LOST:` lines: an allocation, an occupancy tier, a spill-free allocation.
fn gained_lost(shared: &[(&Record, &Record)], with_allocator: bool, out: &mut Comparison) {
    for (rb, ra) in shared {
        let name = program_name(ra, with_allocator);
        for (gained, what) in transitions(&rb.outcome, &ra.outcome) {
            let label = if gained { "GAINED" } else { "LOST" };
            out.lost += usize::from(!gained);
            let _ = writeln!(out.text, "{label}: {name}: {what}");
        }
    }
}

fn transitions(before: &Outcome, after: &Outcome) -> Vec<(bool, String)> {
    match (before, after) {
        (Outcome::Verified(mb), Outcome::Verified(ma)) => {
            let mut t = Vec::new();
            if let (Some(ob), Some(oa)) = (mb.occupancy, ma.occupancy) {
                if ob != oa {
                    t.push((oa > ob, format!("occupancy {ob} -> {oa}")));
                }
            }
            if mb.spill_free() != ma.spill_free() {
                t.push((ma.spill_free(), String::from("spill-free allocation")));
            }
            t
        }
        (Outcome::Verified(_), Outcome::NotAllocated { reason } | Outcome::Failed { reason }) => {
            vec![(false, format!("allocation ({reason})"))]
        }
        (_, Outcome::Verified(_)) => vec![(true, String::from("allocation"))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{ClassMetrics, Metrics, Outcome};
    use super::{percent, transitions};

    fn verified(occupancy: u32, spills: u32) -> Outcome {
        let class = ClassMetrics {
            max_live_emitted: 8,
            max_live: 8,
            registers: 8,
            spills,
            reloads: spills,
            remats: 0,
            copies: 0,
            spill_cost: 0.0,
            copy_cost: 0.0,
        };
        Outcome::Verified(Metrics {
            instructions: 10,
            occupancy: Some(occupancy),
            classes: [(String::from("v"), class)].into(),
        })
    }

    #[test]
    fn occupancy_tiers_and_spill_free_allocations_are_gained_and_lost() {
        assert_eq!(
            transitions(&verified(10, 0), &verified(8, 2)),
            [
                (false, String::from("occupancy 10 -> 8")),
                (false, String::from("spill-free allocation"))
            ]
        );
        assert_eq!(
            transitions(&verified(8, 2), &verified(10, 0)),
            [
                (true, String::from("occupancy 8 -> 10")),
                (true, String::from("spill-free allocation"))
            ]
        );
        assert!(transitions(&verified(8, 2), &verified(8, 1)).is_empty());
    }

    #[test]
    fn percentages_as_shader_db_prints_them() {
        assert_eq!(percent(1121.0, 1071.0), "-4.46%");
        assert_eq!(percent(15398451.0, 15398179.0), "<.01%");
        assert_eq!(percent(0.0, 0.0), "0.00%");
        assert_eq!(percent(0.0, 3.0), "inf");
    }
}
