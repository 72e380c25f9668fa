//! The optimality gap as SVG (`chromatic gap --svg FILE`): one line per function and
//! class, a bar for the production allocator's value (registers for `minregs`, weighted
//! spill cost for `spill`) and beneath it a bar for the oracle's — its verified optimum,
//! its best allocation when the search stopped, or its bound for bound-only rows — with
//! a tick at MaxLive for `minregs`. A row whose two bars differ is a heuristic loss.

use crate::draw::{document, escape};
use std::fmt::Write;

/// One row of the chart.
#[derive(Clone, Debug)]
pub struct GapBar {
    pub label: String,
    pub heuristic: f64,
    pub oracle: f64,
    /// A lower bound every allocation meets (MaxLive for `minregs`).
    pub floor: Option<f64>,
}

const LABEL: f64 = 420.0;
const BARS: f64 = 360.0;
const ROW: f64 = 22.0;
const TOP: f64 = 40.0;

/// The chart of `bars`, titled with what the values measure.
pub fn render(measure: &str, bars: &[GapBar]) -> String {
    let width = LABEL + BARS + 60.0;
    let height = TOP + ROW * bars.len() as f64 + 20.0;
    let top = bars
        .iter()
        .flat_map(|b| [b.heuristic, b.oracle])
        .fold(1.0, f64::max);
    let title = format!("{measure}: allocator (blue) against the ILP oracle (green)");
    let mut s = document(width, height, &title);
    for (i, b) in bars.iter().enumerate() {
        row(&mut s, TOP + ROW * i as f64, b, top);
    }
    s.push_str("</svg>\n");
    s
}

/// One row: its label, the two bars with their values, and the floor's tick.
fn row(s: &mut String, y: f64, b: &GapBar, top: f64) {
    let length = |v: f64| v / top * BARS;
    let loss = if b.heuristic > b.oracle + 1e-9 {
        " fill=\"#c22\""
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "<text x=\"4\" y=\"{:.1}\"{loss}>{}</text>",
        y + 13.0,
        escape(&fitted(&b.label))
    );
    for (dy, value, colour) in [(2.0, b.heuristic, "#24c"), (11.0, b.oracle, "#2a2")] {
        let _ = writeln!(
            s,
            "<rect x=\"{LABEL}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\" fill=\"{colour}\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{value}</text>",
            y + dy,
            length(value),
            LABEL + length(value) + 4.0,
            y + dy + 8.0
        );
    }
    if let Some(floor) = b.floor {
        let x = LABEL + length(floor);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"black\"/>",
            y,
            y + 20.0
        );
    }
}

/// Characters of a label that fit left of the bars (10-pixel monospace).
const LABEL_CHARS: usize = 66;

/// `label`, or its last characters after an ellipsis when it does not fit.
fn fitted(label: &str) -> String {
    let count = label.chars().count();
    if count <= LABEL_CHARS {
        return label.to_string();
    }
    let tail: String = label.chars().skip(count - (LABEL_CHARS - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_is_marked_and_every_row_has_two_bars() {
        let bars = [
            GapBar {
                label: "a.chr @f v".into(),
                heuristic: 3.0,
                oracle: 2.0,
                floor: Some(2.0),
            },
            GapBar {
                label: "b.chr @g s".into(),
                heuristic: 1.0,
                oracle: 1.0,
                floor: None,
            },
        ];
        let svg = render("registers", &bars);
        assert_eq!(svg.matches("<rect x=").count(), 4);
        assert_eq!(svg.matches("fill=\"#c22\"").count(), 1);
        assert_eq!(svg.matches("<line").count(), 1);
    }

    #[test]
    fn long_labels_keep_their_end() {
        let long = format!("{}@f v", "d/".repeat(40));
        let fit = fitted(&long);
        assert_eq!(fit.chars().count(), LABEL_CHARS);
        assert!(fit.starts_with('…') && fit.ends_with("@f v"));
        assert_eq!(fitted("a.chr @f v"), "a.chr @f v");
    }
}
