//! Synthetic programs for benchmarks: a chain of segments, each a straight run and a
//! diamond (every third one divergent), with loops two deep (every fourth segment closes a
//! loop around an inner one-segment loop), and about ten per-lane values live at any
//! point. Valid SSA by construction; the size is chosen in instructions.

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

fn pct(name: &str) -> String {
    format!("%{name}")
}
