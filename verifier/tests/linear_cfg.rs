//! The linear CFG is the order in which the wave runs blocks: every pair of blocks the
//! interpreter runs one after the other is a linear edge, on random programs of every
//! divergent shape (the generator's `unstructured` knob: divergent breaks and continues,
//! sides that jump into each other, loop back to their branch, return) and on
//! hand-written unstructured shapes.

use chromatic::gen::{generate_from_seed, GenConfig};
use chromatic::{Function, Target};
use chromatic_verifier::cfg::Cfg;
use chromatic_verifier::interp::{run, Config};

/// Asserts that every consecutive pair of blocks of the runs is a linear edge; returns
/// the number of pairs.
fn assert_runs_follow_linear_cfg(f: &Function, target: &Target, program: &str) -> usize {
    let cfg = Cfg::new(f);
    let mut pairs = 0;
    for seed in 0..4 {
        for lanes in [4, 7] {
            let config = Config {
                seed,
                lanes,
                max_events: 3_000,
            };
            let path = run(f, target, &config).path;
            for w in path.windows(2) {
                let (x, y) = (w[0], w[1]);
                assert!(
                    cfg.linear_succs[x].contains(&y),
                    "`{}` ran right after `{}` (seed {seed}, {lanes} lanes), no linear edge\n{program}",
                    f.blocks[y].name,
                    f.blocks[x].name
                );
            }
            pairs += path.len().saturating_sub(1);
        }
    }
    pairs
}

/// Whether some divergent branch is not structured: a side that returns, or a then-walk
/// that reaches the else-arm or, with an else-side pending, its own branch.
fn unstructured(f: &Function) -> bool {
    let cfg = Cfg::new(f);
    cfg.divergent.iter().any(|d| {
        let returns = |x: &usize| cfg.succs[*x].is_empty();
        let then_escapes = d.join != Some(d.else_block)
            && (d.then_walk.contains(&d.else_block) || d.then_walk.contains(&d.branch));
        then_escapes || d.then_walk.iter().chain(&d.else_walk).any(returns)
    })
}

#[test]
fn random_programs_run_along_the_linear_cfg() {
    let (mut functions, mut shapes, mut pairs) = (0, 0, 0);
    let config = GenConfig {
        unstructured: 30,
        ..GenConfig::default()
    };
    for seed in 0..1500 {
        let p = generate_from_seed(seed, &config);
        let text = chromatic::print(&p);
        for f in &p.functions {
            functions += 1;
            shapes += usize::from(unstructured(f));
            pairs += assert_runs_follow_linear_cfg(f, &p.target, &text);
        }
    }
    println!("{functions} functions, {shapes} with unstructured divergence, {pairs} pairs");
    assert!(shapes > 50, "{shapes}");
}

/// Each divergent branch's join is its immediate post-dominator, which `Cfg::new`
/// computes only for functions with a divergent branch; the others have no divergent
/// branch and a linear CFG equal to the logical one.
#[test]
fn joins_are_post_dominators_and_convergent_code_is_its_own_linear_cfg() {
    let config = GenConfig {
        unstructured: 30,
        ..GenConfig::default()
    };
    let (mut divergent, mut convergent) = (0, 0);
    for seed in 0..300 {
        for f in &generate_from_seed(seed, &config).functions {
            let cfg = Cfg::new(f);
            let ipdom = cfg.post_dominators();
            for d in &cfg.divergent {
                assert_eq!(d.join, ipdom[d.branch], "seed {seed}");
            }
            if f.blocks.iter().any(|b| b.term.is_divergent()) {
                divergent += 1;
                continue;
            }
            convergent += 1;
            assert_eq!(cfg.linear_preds, cfg.preds, "seed {seed}");
        }
    }
    assert!(divergent > 0 && convergent > 0, "{divergent} {convergent}");
}

fn check_shape(text: &str) {
    let p = chromatic::parse(text).expect("parses");
    let f = &p.functions[0];
    assert!(unstructured(f), "{text}");
    assert_runs_follow_linear_cfg(f, &p.target, text);
}

#[test]
fn then_side_entering_the_else_side() {
    check_shape(
        "target gfx9\nfunc @f {\nb:\n  %c:s1 = c\n  branch divergent %c, t, e\nt:\n  branch divergent %c, e, j\ne:\n  x\n  jump j\nj:\n  ret\n}\n",
    );
}

#[test]
fn then_side_looping_back_past_a_pending_else_side() {
    check_shape(
        "target gfx9\nfunc @f {\nentry:\n  jump h\nh:\n  %c:s1 = c\n  branch divergent %c, t, e\nt:\n  branch divergent %c, h, j\ne:\n  x\n  jump j\nj:\n  ret\n}\n",
    );
}

#[test]
fn returns_inside_both_sides() {
    check_shape(
        "target gfx9\nfunc @f {\nb:\n  %c:s1 = c\n  branch divergent %c, t, e\nt:\n  branch divergent %c, r1, j\nr1:\n  ret\ne:\n  branch divergent %c, r2, j\nr2:\n  ret\nj:\n  ret\n}\n",
    );
}

#[test]
fn uniform_branch_returning_inside_a_divergent_side() {
    check_shape(
        "target gfx9\nfunc @f {\nb:\n  %c:s1 = c\n  branch divergent %c, t, e\nt:\n  branch uniform %c, r, j\nr:\n  ret\ne:\n  x\n  jump j\nj:\n  y\n  ret\n}\n",
    );
}
