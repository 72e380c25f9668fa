//! Synthetic programs for benchmarks. [`synthetic`]: a chain of segments, each a straight
//! run and a diamond (every third one divergent), with loops two deep (every fourth
//! segment closes a loop around an inner one-segment loop), and about ten per-lane values
//! live at any point. [`crowded_block`]: one straight-line block where every instruction
//! reads the value defined 25 before it, so 25 values are live throughout and a budget
//! below that keeps the block crowded from one end to the other (the shape where work
//! per eviction that follows the crowded run ahead turns quadratic). Valid SSA by
//! construction; the size is chosen in instructions.

use std::fmt::Write;

/// A program of about `insts` instructions in the text format.
pub fn synthetic(insts: usize) -> String {
    let mut s = String::from("target gfx9\n\nfunc @synthetic {\nentry:\n");
    let mut window: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
    for w in &window {
        let _ = writeln!(s, "  %{w}:v1 = v_mov_b32 0");
    }
    let _ = writeln!(s, "  jump s0");
    let segments = insts / 20;
    for k in 0..segments {
        let _ = writeln!(s, "s{k}:");
        for i in 0..10 {
            let name = format!("a{k}_{i}");
            let (x, y) = (&window[window.len() - 1], &window[window.len() - 10]);
            let _ = writeln!(s, "  %{name}:v1 = v_fma_f32 {}, {}", pct(x), pct(y));
            window.push(name);
        }
        let last = window[window.len() - 1].clone();
        let kind = if k % 3 == 2 { "divergent" } else { "uniform" };
        let _ = writeln!(
            s,
            "  %c{k}:s1 = s_cmp {}\n  branch {kind} %c{k}, t{k}, e{k}",
            pct(&last)
        );
        for arm in ["t", "e"] {
            let _ = writeln!(s, "{arm}{k}:");
            let mut prev = last.clone();
            for i in 0..4 {
                let name = format!("{arm}{k}_{i}");
                let _ = writeln!(
                    s,
                    "  %{name}:v1 = v_add_f32 {}, {}",
                    pct(&prev),
                    pct(&window[window.len() - 5])
                );
                prev = name;
            }
            let _ = writeln!(s, "  jump j{k}");
        }
        let _ = writeln!(
            s,
            "j{k}:\n  %m{k}:v1 = phi [t{k}: %t{k}_3], [e{k}: %e{k}_3]"
        );
        window.push(format!("m{k}"));
        let next = if k + 1 == segments {
            "exit".to_string()
        } else {
            format!("s{}", k + 1)
        };
        if k % 4 == 1 {
            let _ = writeln!(s, "  branch uniform %c{k}, s{k}, {next}");
        } else if k % 4 == 3 {
            let _ = writeln!(s, "  branch uniform %c{k}, s{}, {next}", k - 2);
        } else {
            let _ = writeln!(s, "  jump {next}");
        }
        window.drain(..window.len() - 10);
    }
    let _ = writeln!(s, "exit:\n  ret {}\n}}", pct(&window[window.len() - 1]));
    s
}

/// One block of `insts` instructions of the `generic v=64` target, 25 values live at every
/// point.
pub fn crowded_block(insts: usize) -> String {
    const LIVE: usize = 25;
    let mut s = String::from("target generic v=64\n\nfunc @crowded {\nentry:\n");
    for i in 0..insts.max(LIVE) {
        if i < LIVE {
            let _ = writeln!(s, "  %x{i}:v1 = mov {i}");
        } else {
            let _ = writeln!(s, "  %x{i}:v1 = add %x{}, %x{}", i - LIVE, i - 1);
        }
    }
    let _ = writeln!(s, "  ret %x{}\n}}", insts.max(LIVE) - 1);
    s
}

fn pct(name: &str) -> String {
    format!("%{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;

    /// The crowded block is one block of the asked size, 25 values live at its peak.
    #[test]
    fn the_crowded_block_keeps_25_values_live() {
        let p = crate::parse(&crowded_block(300)).expect("the crowded block parses");
        let f = &p.functions[0];
        assert_eq!((f.blocks.len(), f.op_count()), (1, 300));
        let a = Analysis::new(f, &p.target);
        let v = p.target.class_by_name("v").expect("class v");
        assert_eq!(a.pressure.max_live(v), 25);
    }
}
