//! Property: on random small programs with a correct allocation (fresh registers, phi
//! copies on a split edge, a spill and reload), the checker accepts the allocation, the
//! interpreter agrees with the original, and every mutant that changes behaviour or breaks
//! a constraint is detected.

use chromatic_verifier::mutate::{mutate_check, Rng};
use quickcheck::{QuickCheck, TestResult};

/// (original, allocated) texts of a random function: straight-line ops, then a divergent
/// if-then whose join has a phi.
fn generate(seed: u64) -> (String, String) {
    let mut rng = Rng::new(seed);
    let (mut o, mut a) = (String::new(), String::new());
    let mut vs = vec![0usize];
    let mut ss = vec![0usize];
    o.push_str("entry:\n  %s0:s1 = s_load reads\n  %v0:v1 = tid\n");
    a.push_str("entry:\n  %s0:s1@s0 = s_load reads\n  %v0:v1@v0 = tid\n");
    for i in 1..3 + rng.below(6) {
        let x = vs[rng.below(vs.len())];
        if rng.below(3) == 0 && ss.len() < 6 {
            let y = ss[rng.below(ss.len())];
            o.push_str(&format!("  %s{i}:s1 = s_add %s{y}, {i}\n"));
            a.push_str(&format!("  %s{i}:s1@s{i} = s_add %s{y}@s{y}, {i}\n"));
            ss.push(i);
        } else {
            let y = ss[rng.below(ss.len())];
            o.push_str(&format!("  %v{i}:v1 = v_mad %v{x}, %s{y}\n"));
            a.push_str(&format!("  %v{i}:v1@v{i} = v_mad %v{x}@v{x}, %s{y}@s{y}\n"));
            vs.push(i);
        }
    }
    let (x, y, z) = (
        vs[rng.below(vs.len())],
        ss[rng.below(ss.len())],
        vs[rng.below(vs.len())],
    );
    o.push_str(&format!(
        "  %c:s2 = v_cmp %v{x}, %s{y}\n  branch divergent %c, then, join\nthen:\n  %t:v1 = v_mul %v{z}, %s{y}\n  jump join\njoin:\n  %p:v1 = phi [entry: %v{x}], [then: %t]\n  %r:v1 = v_add %p, %v{z}\n  ret %r\n"
    ));
    let spill = rng.below(2) == 0;
    let (tz, reload) = if spill {
        (40, format!("  reload v40 <- m0 %v{z}\n"))
    } else {
        (z, String::new())
    };
    a.push_str(&format!(
        "{}  %c:s2@s[8:9] = v_cmp %v{x}@v{x}, %s{y}@s{y}\n  branch divergent %c@s[8:9], then, edge\nedge:\n  parallel_copy v30 <- v{x} %v{x}\n  jump join\nthen:\n{reload}  %t:v1@v31 = v_mul %v{z}@v{tz}, %s{y}@s{y}\n  parallel_copy v30 <- v31 %t\n  jump join\njoin:\n  %p:v1@v30 = phi [edge: %v{x}], [then: %t]\n  %r:v1@v32 = v_add %p@v30, %v{z}@v{z}\n  ret %r@v32\n",
        if spill { format!("  spill m0 <- v{z} %v{z}\n") } else { String::new() }
    ));
    let head = "target generic s=16 v=48\nfunc @g {\n";
    (format!("{head}{o}}}\n"), format!("{head}{a}}}\n"))
}

fn prop(seed: u64) -> TestResult {
    let (o, a) = generate(seed);
    let (Ok(o), Ok(a)) = (chromatic::parse(&o), chromatic::parse(&a)) else {
        return TestResult::error(format!("generated text does not parse:\n{o}\n{a}"));
    };
    let r = mutate_check(&o.functions[0], &a.functions[0], &o.target, 40, seed);
    let ok = r.baseline_errors == 0 && r.baseline_agrees && r.missed() == 0;
    let all_judged = r.mutants.iter().all(|m| m.equivalent || m.detected);
    TestResult::from_bool(ok && all_judged && r.mutants.len() == 40)
}

#[test]
fn checker_and_interpreter_agree_on_random_mutants() {
    QuickCheck::new()
        .tests(60)
        .quickcheck(prop as fn(u64) -> TestResult);
}

#[test]
fn generated_programs_yield_judged_mutants() {
    let (mut total, mut non_equivalent, mut flagged_equivalent) = (0, 0, 0);
    for seed in 0..30 {
        let (o, a) = generate(seed);
        let (o, a) = (chromatic::parse(&o).unwrap(), chromatic::parse(&a).unwrap());
        let r = mutate_check(&o.functions[0], &a.functions[0], &o.target, 40, seed);
        assert_eq!(
            (r.baseline_errors, r.baseline_agrees, r.missed()),
            (0, true, 0),
            "{r}"
        );
        total += r.mutants.len();
        non_equivalent += r.non_equivalent();
        flagged_equivalent += r
            .mutants
            .iter()
            .filter(|m| m.equivalent && m.detected)
            .count();
    }
    println!(
        "mutants {total} non-equivalent {non_equivalent} flagged equivalent {flagged_equivalent}"
    );
    assert_eq!(total, 1200);
    assert!(non_equivalent > 1000, "{non_equivalent}");
}
