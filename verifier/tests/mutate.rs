//! The mutation engine on hand-written correct allocations: no false alarm on the
//! allocation itself, no non-equivalent mutant missed.

use chromatic_verifier::mutate::{mutate_check, MutationKind};

const SWAP3: &str = include_str!("../../corpus/swap_cycle3.chr");

const SWAP3_ALLOCATED: &str = "target generic s=8 v=16
func @swap_cycle3 {
entry:
  %x0:v1@v0 = v_mov 1
  %y0:v1@v1 = v_mov 2
  %z0:v1@v2 = v_mov 3
  %n:s1@s0 = s_load reads
  jump loop
loop:
  %x:v1@v0 = phi [entry: %x0], [back: %y]
  %y:v1@v1 = phi [entry: %y0], [back: %z]
  %z:v1@v2 = phi [entry: %z0], [back: %x]
  %c:s1@s1 = s_cmp %n@s0
  branch uniform %c@s1, back, exit
back:
  parallel_copy v0 <- v1 %y, v1 <- v2 %z, v2 <- v0 %x
  jump loop
exit:
  %s:v1@v3 = v_add %x@v0, %y@v1
  %t:v1@v3 = v_add %s@v3, %z@v2
  ret %t@v3
}
";

fn report(original: &str, allocated: &str, n: usize, seed: u64) -> String {
    let o = chromatic::parse(original).unwrap();
    let a = chromatic::parse(allocated).unwrap();
    mutate_check(&o.functions[0], &a.functions[0], &o.target, n, seed).to_string()
}

#[test]
fn three_cycle_mutants_all_caught() {
    let text = report(SWAP3, SWAP3_ALLOCATED, 300, 7);
    println!("{text}");
    assert!(
        text.starts_with("baseline errors: 0  baseline traces agree: yes\n"),
        "{text}"
    );
    assert!(text.ends_with("missed: 0"), "{text}");
}

mod fixtures;

#[test]
fn rich_allocation_mutants_all_caught() {
    let text = report(fixtures::RICH, fixtures::RICH_ALLOCATED, 1000, 11);
    println!("{text}");
    assert!(
        text.starts_with("baseline errors: 0  baseline traces agree: yes\n"),
        "{text}"
    );
    assert!(text.ends_with("missed: 0"), "{text}");
}

#[test]
fn divergent_diamond_mutants_all_caught() {
    let original = include_str!("../../corpus/divergent_uniform_live_through_else.chr");
    let o = chromatic::parse(original).unwrap();
    let a = chromatic::parse(&fixtures::diamond_allocated("s[8:9]")).unwrap();
    let r = mutate_check(&o.functions[0], &a.functions[0], &o.target, 500, 3);
    let text = r.to_string();
    println!("{text}");
    assert_eq!(
        (r.baseline_errors, r.baseline_agrees, r.missed()),
        (0, true, 0),
        "{text}"
    );
    assert!(r
        .mutants
        .iter()
        .any(|m| m.kind == MutationKind::UniformClobberInArm && !m.equivalent));
}

#[test]
fn whole_wave_spill_mutants_all_caught() {
    let text = report(
        fixtures::DIVERGENT_LOOP,
        fixtures::DIVERGENT_LOOP_SPILLED,
        500,
        5,
    );
    println!("{text}");
    assert!(
        text.starts_with("baseline errors: 0  baseline traces agree: yes\n"),
        "{text}"
    );
    assert!(text.ends_with("missed: 0"), "{text}");
}

/// The uniform counter of a divergent loop stored through a per-lane register: lanes that
/// left the loop early miss the last iterations' stores, and the reload after the loop
/// reads an older counter.
#[test]
fn spill_through_per_lane_register_caught() {
    let o = chromatic::parse(fixtures::DIVERGENT_LOOP).unwrap();
    let a = chromatic::parse(fixtures::DIVERGENT_LOOP_SPILLED).unwrap();
    let r = mutate_check(&o.functions[0], &a.functions[0], &o.target, 300, 5);
    let text = r.to_string();
    println!("{text}");
    assert_eq!(
        (r.baseline_errors, r.baseline_agrees, r.missed()),
        (0, true, 0),
        "{text}"
    );
    assert!(r
        .mutants
        .iter()
        .any(|m| m.kind == MutationKind::SpillThroughPerLane && !m.equivalent));
}

const MEMORY: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = tid
  %lo:v1 = add.cc %a carry
  %b:v1 = load %a reads
  store %a writes
  %c:v1 = load %a reads
  bar barrier
  %hi:v1 = addc %a carry
  ret %b, %c, %lo, %hi
}
";

/// The allocation of `MEMORY`, its operations reordered within their dependences (as a
/// scheduler may): the carry pair and the first read moved.
const MEMORY_SCHEDULED: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = tid
  %b:v1@v2 = load %a@v0 reads
  store %a@v0 writes
  %lo:v1@v1 = add.cc %a@v0 carry
  %c:v1@v3 = load %a@v0 reads
  bar barrier
  %hi:v1@v4 = addc %a@v0 carry
  ret %b@v2, %c@v3, %lo@v1, %hi@v4
}
";

#[test]
fn broken_dependences_are_all_caught() {
    let text = report(MEMORY, MEMORY_SCHEDULED, 300, 3);
    println!("{text}");
    assert!(
        text.starts_with("baseline errors: 0  baseline traces agree: yes\n"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("BreakDependence: "))
        .unwrap_or_else(|| panic!("no BreakDependence row\n{text}"));
    assert!(!row.starts_with("BreakDependence: 0 "), "{row}");
    assert!(row.ends_with("missed: 0"), "{row}");
    assert!(text.ends_with("missed: 0"), "{text}");
}
