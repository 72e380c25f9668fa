//! A [`Timeline`] as SVG: register units as rows, program points as columns, each value a
//! bar of its own colour over the columns where the unit holds it live (its name as a
//! tooltip), block boundaries as vertical lines with the block's name, the moves
//! allocation added as marks (copy: dot, spill: red triangle down, reload: green
//! triangle up, remat: blue diamond), and under the grid the live units of each class
//! per column — needed by the live values (grey) and held in registers (blue) — against a
//! dashed budget line.

use super::timeline::{Mark, Timeline};
use super::{document, escape};
use chromatic::{Function, Target};
use std::fmt::Write;

const LEFT: usize = 56;
const TOP: usize = 36;
const ROW: usize = 12;
const CHART: usize = 70;

/// Column width: 12 px, narrower for long functions.
fn column_width(columns: usize) -> usize {
    if columns <= 150 {
        12
    } else {
        (1800 / columns).max(2)
    }
}

pub fn render(t: &Timeline, f: &Function, target: &Target, budget: &[u16]) -> String {
    let cw = column_width(t.columns);
    let grid_h = t.rows.len() * ROW;
    let charts = t.pressure.len();
    let width = (LEFT + t.columns * cw + 130).max(560);
    let height = TOP + grid_h + 20 + charts * (CHART + 24) + 30;
    let mut s = document(width, height, &format!("@{} ({})", f.name, target.name));
    for (i, (class, unit)) in t.rows.iter().enumerate() {
        let y = TOP + i * ROW;
        let name = &target.class(*class).name;
        let _ = writeln!(s, "<text x=\"4\" y=\"{}\">{name}{unit}</text>", y + ROW - 2);
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#eee\"/>",
            LEFT + t.columns * cw
        );
        for &(first, last, v) in &t.bars[i] {
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>%{}</title></rect>",
                LEFT + first * cw,
                y + 1,
                (last - first + 1) * cw,
                ROW - 2,
                colour(v.0),
                escape(&f.value(v).name)
            );
        }
    }
    for (i, (name, column)) in t.blocks.iter().enumerate() {
        let x = LEFT + column * cw;
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#444\"/>",
            TOP - 14 - (i % 2) * 10,
            TOP + grid_h
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            x + 2,
            TOP - 4 - (i % 2) * 10,
            escape(name)
        );
    }
    for &(column, row, mark) in &t.marks {
        s += &mark_shape(LEFT + column * cw + cw / 2, TOP + row * ROW + ROW / 2, mark);
    }
    let mut y = TOP + grid_h + 20;
    for (class, (demand, held)) in &t.pressure {
        let name = &target.class(*class).name;
        s += &chart(demand, held, name, budget[class.index()], y, cw);
        y += CHART + 24;
    }
    let _ = writeln!(
        s,
        "<text x=\"4\" y=\"{}\">● copy  ▼ spill  ▲ reload  ◆ remat   pressure: grey needed, blue in registers</text>",
        height - 8
    );
    s + "</svg>\n"
}

fn mark_shape(x: usize, y: usize, mark: Mark) -> String {
    let (x, y) = (x as i64, y as i64);
    match mark {
        Mark::Copy => format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"2.5\" fill=\"black\"/>\n"),
        Mark::Spill => format!(
            "<polygon points=\"{},{} {},{} {},{}\" fill=\"#c00\"/>\n",
            x - 4,
            y - 3,
            x + 4,
            y - 3,
            x,
            y + 4
        ),
        Mark::Reload => format!(
            "<polygon points=\"{},{} {},{} {},{}\" fill=\"#080\"/>\n",
            x - 4,
            y + 3,
            x + 4,
            y + 3,
            x,
            y - 4
        ),
        Mark::Remat => format!(
            "<polygon points=\"{},{} {},{} {},{} {},{}\" fill=\"#06c\"/>\n",
            x,
            y - 4,
            x + 4,
            y,
            x,
            y + 4,
            x - 4,
            y
        ),
    }
}

/// Live units of one class per column, needed and held, scaled to the larger of the
/// budget and the peak — or to the peak alone when the budget is far above it (the
/// budget line then sits at the top edge, labelled with its value).
fn chart(demand: &[u32], held: &[u32], class: &str, budget: u16, top: usize, cw: usize) -> String {
    let peak = demand.iter().copied().max().unwrap_or(0).max(1);
    let far = u32::from(budget) > 2 * peak;
    let scale = if far {
        peak + peak / 4 + 1
    } else {
        peak.max(u32::from(budget))
    } as usize;
    let y_of = |n: u32| top + CHART - (n as usize * CHART) / scale;
    let steps = |points: &[u32]| -> String {
        let xy: Vec<String> = points
            .iter()
            .enumerate()
            .flat_map(|(c, &n)| [(LEFT + c * cw, y_of(n)), (LEFT + (c + 1) * cw, y_of(n))])
            .map(|(x, y)| format!("{x},{y}"))
            .collect();
        xy.join(" ")
    };
    let right = LEFT + demand.len() * cw;
    let by = if far { top } else { y_of(u32::from(budget)) };
    let mut s = format!(
        "<text x=\"4\" y=\"{}\">{class} live</text>\n<rect x=\"{LEFT}\" y=\"{top}\" width=\"{}\" height=\"{CHART}\" fill=\"none\" stroke=\"#ccc\"/>\n",
        top + 10,
        right - LEFT
    );
    let _ = writeln!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#aaa\" stroke-width=\"1.5\"/>",
        steps(demand)
    );
    let _ = writeln!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#236\" stroke-width=\"1.5\"/>",
        steps(held)
    );
    let _ = writeln!(s, "<line x1=\"{LEFT}\" y1=\"{by}\" x2=\"{right}\" y2=\"{by}\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>");
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" fill=\"#c00\">budget {budget}</text>",
        right + 4,
        by + 3
    );
    let _ = writeln!(
        s,
        "<text x=\"4\" y=\"{}\" fill=\"#888\">peak {peak}</text>",
        top + 22
    );
    s
}

/// A colour per value, hues spread by the golden angle.
fn colour(v: u32) -> String {
    let hue = (f64::from(v) * 137.508) % 360.0;
    format!("hsl({hue:.0},65%,62%)")
}
