//! The spill curve of one program and class as SVG (`chromatic sweep --svg DIR`): the
//! frequency-weighted spill cost against the budget, one dot per verified budget point,
//! and, with `--oracle`, the ILP oracle's optimum (or its bound where the search stopped)
//! as a dashed line beneath. A spiller that is monotone in the budget draws a curve that
//! never rises to the right; the distance between the two lines is the optimality gap.

use crate::draw::document;
use std::fmt::Write;

/// One budget of the curve: the allocator's cost and the oracle's, when asked for.
#[derive(Clone, Copy, Debug)]
pub struct CurvePoint {
    pub budget: u16,
    pub cost: f64,
    pub oracle: Option<f64>,
}

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

/// The chart's scales: budgets to x, costs to y.
struct Scale {
    low: f64,
    high: f64,
    top: f64,
}

impl Scale {
    fn of(points: &[CurvePoint]) -> Scale {
        let budgets = points.iter().map(|p| f64::from(p.budget));
        let low = budgets.clone().fold(f64::INFINITY, f64::min);
        let high = budgets.fold(f64::NEG_INFINITY, f64::max);
        let costs = points
            .iter()
            .flat_map(|p| [Some(p.cost), p.oracle])
            .flatten();
        let top = costs.fold(1.0, f64::max);
        Scale { low, high, top }
    }

    fn x(&self, budget: u16) -> f64 {
        let span = (self.high - self.low).max(1.0);
        LEFT + (f64::from(budget) - self.low) / span * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, cost: f64) -> f64 {
        TOP + (1.0 - cost / self.top) * (HEIGHT - TOP - BOTTOM)
    }
}

/// The curve of `points` (in any order) as an SVG document titled with `file` and `class`.
pub fn render(file: &str, class: &str, points: &[CurvePoint]) -> String {
    let mut points = points.to_vec();
    points.sort_by_key(|p| p.budget);
    let scale = Scale::of(&points);
    let title = format!("{file} — class {class}: spill cost by budget");
    let mut s = document(WIDTH, HEIGHT, &title);
    axes(&mut s, &scale);
    let oracle: Vec<(u16, f64)> = points
        .iter()
        .filter_map(|p| p.oracle.map(|o| (p.budget, o)))
        .collect();
    if !oracle.is_empty() {
        line(&mut s, &scale, &oracle, "#2a2", " stroke-dasharray=\"5,3\"");
        legend(&mut s, 1, "#2a2", "ILP oracle (optimum or bound)");
    }
    let cost: Vec<(u16, f64)> = points.iter().map(|p| (p.budget, p.cost)).collect();
    line(&mut s, &scale, &cost, "#24c", "");
    for &(budget, c) in &cost {
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"#24c\"><title>{class}={budget}: {c}</title></circle>",
            scale.x(budget),
            scale.y(c)
        );
    }
    legend(&mut s, 0, "#24c", "allocator");
    s.push_str("</svg>\n");
    s
}

/// The axes with the extreme budgets and costs as ticks.
fn axes(s: &mut String, scale: &Scale) {
    let (x0, y0) = (LEFT, HEIGHT - BOTTOM);
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{TOP}\" x2=\"{x0}\" y2=\"{y0}\" stroke=\"black\"/>\n<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{}\" y2=\"{y0}\" stroke=\"black\"/>",
        WIDTH - RIGHT
    );
    let _ = writeln!(
        s,
        "<text x=\"{x0}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">budget (units)</text>",
        y0 + 14.0,
        scale.low,
        WIDTH - RIGHT,
        y0 + 14.0,
        scale.high,
        (LEFT + WIDTH - RIGHT) / 2.0,
        y0 + 30.0
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n<text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">weighted spill cost</text>",
        x0 - 4.0,
        y0 + 3.0,
        x0 - 4.0,
        TOP + 3.0,
        scale.top,
        (TOP + y0) / 2.0,
        (TOP + y0) / 2.0
    );
}

/// A polyline through `(budget, cost)` pairs, in budget order.
fn line(s: &mut String, scale: &Scale, points: &[(u16, f64)], colour: &str, style: &str) {
    let coords: Vec<String> = points
        .iter()
        .map(|&(b, c)| format!("{:.1},{:.1}", scale.x(b), scale.y(c)))
        .collect();
    let _ = writeln!(
        s,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"{style}/>",
        coords.join(" ")
    );
}

/// Entry `row` of the legend at the top right.
fn legend(s: &mut String, row: usize, colour: &str, label: &str) {
    let y = TOP - 10.0 + 12.0 * row as f64;
    let x = WIDTH - RIGHT - 200.0;
    let _ = writeln!(
        s,
        "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"2\"/>\n<text x=\"{}\" y=\"{}\">{label}</text>",
        x + 16.0,
        x + 20.0,
        y + 3.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn higher_costs_sit_higher_and_larger_budgets_further_right() {
        let points = [
            CurvePoint {
                budget: 4,
                cost: 100.0,
                oracle: Some(80.0),
            },
            CurvePoint {
                budget: 6,
                cost: 0.0,
                oracle: Some(0.0),
            },
        ];
        let scale = Scale::of(&points);
        assert!(scale.x(4) < scale.x(6));
        assert!(scale.y(100.0) < scale.y(0.0));
        let svg = render("f.chr", "v", &points);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("stroke-dasharray"));
    }

    #[test]
    fn one_point_and_zero_costs_draw_without_dividing_by_zero() {
        let svg = render(
            "a<b>.chr",
            "s",
            &[CurvePoint {
                budget: 3,
                cost: 0.0,
                oracle: None,
            }],
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains("a&lt;b&gt;.chr"));
        assert!(!svg.contains("stroke-dasharray"));
    }
}
