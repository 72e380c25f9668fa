//! Spilling on the corpus: for every program, every class and every budget from MaxLive
//! down to the lowest legal budget, the pipeline succeeds, the verifier accepts and the
//! interpreter agrees; below the lowest legal budget, a clear error.

mod common;

use chromatic::alloc::spill::minimum::lowest_legal;
use chromatic::alloc::{allocate, AllocError, AllocOptions};
use chromatic::analysis::Analysis;
use chromatic::gen::{generate_from_seed, GenConfig};
use chromatic::{parse, print, InstKind, Location, Program, Value};
use chromatic_verifier::interp::{run, Config};
use std::path::PathBuf;

/// Every program under `corpus/` and `corpus/regressions/`, by path relative to `corpus/`.
fn corpus_programs() -> Vec<(String, Program)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let chr_files = |sub: &str| -> Vec<String> {
        std::fs::read_dir(dir.join(sub))
            .expect("corpus dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".chr"))
            .map(|n| format!("{sub}{n}"))
            .collect()
    };
    let mut names = chr_files("");
    names.extend(chr_files("regressions/"));
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).expect("corpus file");
            let p = parse(&text).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, p)
        })
        .collect()
}

/// Per class: (name, MaxLive, lowest legal budget) over all functions of `p`.
fn class_range(p: &Program) -> Vec<(String, u32, u32)> {
    p.target
        .class_ids()
        .map(|c| {
            let (mut max_live, mut lowest) = (0, 0);
            for f in &p.functions {
                max_live = max_live.max(Analysis::new(f, &p.target).pressure.max_live(c));
                lowest = lowest.max(lowest_legal(f, &p.target)[c.index()].units);
            }
            (p.target.class(c).name.clone(), max_live, lowest)
        })
        .collect()
}

/// Every (class, budget) a sweep of `p` allocates at: from the class's lowest legal
/// budget (at least 1) up to its MaxLive, within the class's register file.
fn swept_budgets(p: &Program) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for (class, max_live, lowest) in class_range(p) {
        let units = u32::from(
            p.target
                .class(p.target.class_by_name(&class).unwrap())
                .units,
        );
        for k in lowest.max(1)..=max_live.min(units) {
            out.push((class.clone(), k as u16));
        }
    }
    out
}

/// Allocates under `budget`; `Err` describes what went wrong.
fn check(p: &Program, budget: Vec<(String, u16)>) -> Result<(), String> {
    let opts = AllocOptions {
        budget,
        ..AllocOptions::default()
    };
    let (a, _) = allocate(p, &opts).map_err(|e| format!("{e}"))?;
    let budget = chromatic::alloc::budget_of(&p.target, &opts).map_err(|e| e.to_string())?;
    let errors = chromatic_verifier::verify_program(p, &a, Some(&budget));
    if let Some(e) = errors.first() {
        return Err(format!("{e}\n{}", print(&a)));
    }
    for (f, g) in p.functions.iter().zip(&a.functions) {
        for seed in 0..4 {
            let config = Config {
                seed,
                ..Config::default()
            };
            let (x, y) = (run(f, &p.target, &config), run(g, &a.target, &config));
            if let Some(d) = x.first_divergence(&y) {
                return Err(format!(
                    "traces differ at {d:?}, seed {seed}\n{}",
                    print(&a)
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_budget_from_max_live_down_to_the_lowest_legal_one_verifies() {
    let mut failures = Vec::new();
    let mut runs = 0;
    for (name, p) in corpus_programs() {
        for (class, k) in swept_budgets(&p) {
            runs += 1;
            if let Err(e) = check(&p, vec![(class.clone(), k)]) {
                failures.push(format!("{name} {class}={k}: {e}"));
            }
        }
    }
    assert!(runs > 100, "only {runs} budgets tried");
    assert!(
        failures.is_empty(),
        "{} of {runs} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_class_at_its_lowest_legal_budget_at_once_verifies() {
    let mut failures = Vec::new();
    for (name, p) in corpus_programs() {
        let budget: Vec<(String, u16)> = class_range(&p)
            .into_iter()
            .map(|(class, _, lowest)| (class, lowest.max(1) as u16))
            .collect();
        if let Err(e) = check(&p, budget.clone()) {
            failures.push(format!("{name} {budget:?}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_budget_below_the_lowest_legal_one_is_an_error_at_the_instruction() {
    let p = parse(
        "target generic s=4 v=8
func @f {
b:
  %a:v1 = mov 1
  %b:v1 = mov 2
  %c:v1 = mov 3
  %d:v1 = mad %a, %b, %c
  ret %d
}
",
    )
    .unwrap();
    let opts = AllocOptions {
        budget: vec![("v".into(), 2)],
        ..AllocOptions::default()
    };
    let e = allocate(&p, &opts).unwrap_err();
    assert!(
        matches!(
            e,
            AllocError::BelowLowest {
                needed: 3,
                budget: 2,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.pos().map(|p| p.line), Some(7));
    assert!(check(&p, vec![("v".into(), 3)]).is_ok());
}

/// Fuzz regressions in `corpus/regressions/`: each allocates at its target's full budget
/// and verifies.
#[test]
fn regressions_allocate_and_verify() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("regressions dir") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("regression file");
        let p = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&p, Vec::new()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        count += 1;
    }
    assert!(count > 0);
}

/// Allocates `src` under `budget`, checks it, and returns the allocated function's blocks
/// as (block name, instruction kinds).
fn spilled(src: &str, budget: &[(&str, u16)]) -> (Program, Program) {
    let p = parse(src).unwrap_or_else(|e| panic!("{e}"));
    let budget: Vec<(String, u16)> = budget.iter().map(|(c, k)| (c.to_string(), *k)).collect();
    check(&p, budget.clone()).unwrap_or_else(|e| panic!("{e}"));
    let opts = AllocOptions {
        budget,
        ..AllocOptions::default()
    };
    let (a, _) = allocate(&p, &opts).unwrap();
    (p, a)
}

/// The spill-code instructions of block `name` of the only function.
fn spill_code<'a>(a: &'a Program, name: &str) -> Vec<&'a InstKind> {
    let f = &a.functions[0];
    let b = f.blocks.iter().find(|b| b.name == name).expect("block");
    b.insts
        .iter()
        .map(|i| &i.kind)
        .filter(|k| {
            matches!(
                k,
                InstKind::Spill(_) | InstKind::Reload(_) | InstKind::Remat { .. }
            )
        })
        .collect()
}

fn value_named(a: &Program, name: &str) -> Value {
    let f = &a.functions[0];
    f.value_ids()
        .find(|v| f.value(*v).name == name)
        .expect("value")
}

/// How many reloads of the value named `value` block `block` of the only function holds.
fn reloads_of(a: &Program, value: &str, block: &str) -> usize {
    let v = value_named(a, value);
    spill_code(a, block)
        .into_iter()
        .filter(|k| matches!(k, InstKind::Reload(m) if m.value == v))
        .count()
}

#[test]
fn a_value_live_through_a_loop_is_spilled_before_it_and_reloaded_after_it() {
    let (_, a) = spilled(
        "target generic s=4 v=8
func @f {
entry:
  %x:v1 = mov 1
  %n:s1 = s_mov 0
  %i0:v1 = mov 0
  jump head
head:
  %i:v1 = phi [entry: %i0], [body: %i2]
  %c:s1 = s_cmp %n
  branch uniform %c, body, exit
body:
  %p:v1 = mov 2
  %q:v1 = mov 3
  %d:v1 = add %p, %q
  %i2:v1 = add %i, %d
  jump head
exit:
  %y:v1 = add %x, %i
  ret %y
}
",
        &[("v", 3)],
    );
    let x = value_named(&a, "x");
    let moves_x = |kinds: Vec<&InstKind>| {
        kinds
            .into_iter()
            .filter(|k| matches!(k, InstKind::Spill(m) | InstKind::Reload(m) if m.value == x))
            .count()
    };
    assert_eq!(moves_x(spill_code(&a, "entry")), 1, "{}", print(&a));
    assert_eq!(moves_x(spill_code(&a, "exit")), 1, "{}", print(&a));
    assert!(spill_code(&a, "head").is_empty(), "{}", print(&a));
    assert!(spill_code(&a, "body").is_empty(), "{}", print(&a));
}

/// A value in memory where a loop is entered, live through the loop and not read in it,
/// stays in memory when the entering edge runs more often than its next read after the
/// loop: reloaded on that edge to fill the room the loop leaves, it cost one reload per
/// run of the edge, and one register more reloaded one more such value (seed 905 of the
/// generated programs, class `a`: 2,716 at a=47, 13,020 at a=48).
#[test]
fn a_live_through_value_in_memory_at_a_hot_loop_entry_is_reloaded_after_the_loop() {
    let (_, a) = spilled(
        "target generic v=3
func @f {
entry:
  %x:v1 = mov 1
  jump pre
pre freq=10:
  %a:v1 = mov 2
  %b:v1 = mov 3
  %c:v1 = mov 4
  %s:v1 = add %a, %b
  %t:v1 = add %s, %c
  jump head
head:
  %i:v1 = phi [pre: %t], [head: %j]
  %j:v1 = add %i, 1
  branch uniform %j, head, exit
exit:
  %r:v1 = add %x, %j
  ret %r
}
",
        &[("v", 3)],
    );
    assert_eq!(reloads_of(&a, "x", "pre"), 0, "{}", print(&a));
    assert_eq!(reloads_of(&a, "x", "exit"), 1, "{}", print(&a));
}

/// `%i` leaves the registers in the cold side of a branch inside a loop, before that side
/// reads anything. MIN prices its store there, at frequency 0.25; taken out of the cold
/// block's entry instead, it left on the edge from the loop header, whose two successors
/// put that edge's store at the header's end, on every iteration (cost 82 against 4).
#[test]
fn an_eviction_in_a_cold_successor_of_a_branch_is_stored_there_not_before_the_branch() {
    let (_, a) = spilled(
        "target generic v=3
func @f {
entry:
  %n:v1 = mov 0
  jump head
head:
  %i:v1 = phi [entry: %n], [latch: %i2]
  %c:v1 = add %i, 1
  branch uniform %c, cold, latch
cold freq=0.25:
  %a:v1 = mov 2
  %b:v1 = mov 3
  %d:v1 = add %a, %b
  jump latch
latch:
  %e:v1 = phi [head: %c], [cold: %d]
  %i2:v1 = add %i, %c, %e
  branch uniform %i2, head, exit
exit:
  ret %i2
}
",
        &[("v", 3)],
    );
    assert!(spill_code(&a, "head").is_empty(), "{}", print(&a));
    let stores = spill_code(&a, "cold").into_iter();
    let stores = stores.filter(|k| matches!(k, InstKind::Spill(_))).count();
    assert_eq!(stores, 1, "{}", print(&a));
}

/// `%x` is evicted in the outer loop, where the pressure peaks, and read after it; the
/// inner loop never reads it and leaves room for it. Taking it into the inner header's W
/// reloaded it on the inner loop's entering edge, on every outer iteration, and one
/// register more made that room: it stays in memory until its read in `exit`.
#[test]
fn a_value_the_inner_loop_does_not_read_is_not_reloaded_to_enter_it() {
    let (_, a) = spilled(
        "target generic v=8
func @f {
entry:
  %x:v1 = mov 1
  %n:v1 = mov 0
  jump outer
outer:
  %i:v1 = phi [entry: %n], [latch: %i2]
  %a:v1 = mov 2
  %b:v1 = mov 3
  %d:v1 = mov 4
  %c:v1 = add %a, %b, %d, %i
  jump inner
inner:
  %j:v1 = phi [outer: %c], [inner: %j2]
  %j2:v1 = add %j, %i
  branch uniform %j2, inner, latch
latch:
  %i2:v1 = add %i, %j2
  branch uniform %i2, outer, exit
exit:
  %y:v1 = add %x, %i2
  ret %y
}
",
        &[("v", 4)],
    );
    for block in ["outer", "inner", "latch"] {
        assert_eq!(reloads_of(&a, "x", block), 0, "{block}:\n{}", print(&a));
    }
    assert_eq!(reloads_of(&a, "x", "exit"), 1, "{}", print(&a));
}

/// `%x` leaves the registers in `left`, where the pressure peaks, and stays in them
/// through `right`; its next read is in `hot`, after the merge. Reloading it on the edge
/// from `left` (frequency 1) is cheaper than reloading it in `hot` (100), so `join`
/// takes it into its W: the rule compares the edge with the reload at the next read, not
/// with one in `join` itself, which reads nothing.
#[test]
fn a_merge_keeps_a_value_its_hot_successor_reads_by_reloading_it_on_a_cold_edge() {
    let (_, a) = spilled(
        "target generic v=8
func @f {
entry:
  %x:v1 = mov 1
  %c:v1 = mov 0
  branch uniform %c, left, right
left:
  %a:v1 = mov 2
  %b:v1 = mov 3
  %d:v1 = mov 4
  %s:v1 = add %a, %b, %d
  jump join
right:
  %t:v1 = mov 5
  jump join
join:
  %e:v1 = phi [left: %s], [right: %t]
  branch uniform %e, hot, exit
hot freq=100:
  %y:v1 = add %x, %e
  ret %y
exit:
  ret %e
}
",
        &[("v", 3)],
    );
    assert_eq!(reloads_of(&a, "x", "hot"), 0, "{}", print(&a));
    assert_eq!(reloads_of(&a, "x", "left"), 1, "{}", print(&a));
}

/// `%t` (three units, aligned to four), `%a` and `%b` reach `join` in registers from both
/// sides: with five registers they fit as packed (`%a` in the unit `%t`'s window leaves
/// free), though their sizes rounded up to alignment add up to six. The merge keeps all
/// three instead of leaving one out to be reloaded in `join` (seed 555, class `s`).
#[test]
fn a_merge_keeps_what_fits_as_packed_though_rounded_sizes_exceed_the_budget() {
    let (_, a) = spilled(
        "target generic v=8:aligned s=4
func @f {
entry:
  %t:v3 = mov 1
  %a:v1 = mov 2
  %b:v1 = mov 3
  %c:s1 = s_mov 0
  branch uniform %c, left, right
left:
  %l:s1 = s_mov 1
  jump join
right:
  %r:s1 = s_mov 2
  jump join
join:
  %s:v1 = add %t, %a, %b
  %p1:v1 = mov 1
  %p2:v1 = mov 2
  %p3:v1 = mov 3
  %p4:v1 = mov 4
  %p5:v1 = mov 5
  %p6:v1 = mov 6
  %z1:v1 = add %p1, %p2
  %z2:v1 = add %z1, %p3
  %z3:v1 = add %z2, %p4
  %z4:v1 = add %z3, %p5
  %z5:v1 = add %z4, %p6
  %z:v1 = add %z5, %s
  ret %z
}
",
        &[("v", 5)],
    );
    for value in ["t", "a", "b"] {
        assert_eq!(reloads_of(&a, value, "join"), 0, "{value}:\n{}", print(&a));
    }
}

/// `%x` and `%y` swap every iteration; `%y`, only carried around, is a memory phi. On the
/// back edge `%x` takes `%y`'s old value from memory while `%x` is still held, one
/// register more than the header's W leaves: spilling `%k` around the edge would cost a
/// store and a reload every iteration. `%k` leaves the header's W instead and is
/// reloaded where `use` reads it (seed 998, class `a`: a 16-unit value spilled around
/// three back edges, 10,056 -> 16,536 with one register more).
#[test]
fn a_live_in_a_back_edge_would_spill_around_leaves_the_loop_header_instead() {
    let (_, a) = spilled(
        "target generic v=8 s=4
func @f {
entry:
  %k:v1 = mov 9
  %m:v1 = mov 8
  %x0:v1 = mov 1
  %y0:v1 = mov 2
  %n:s1 = s_load reads
  jump loop
loop:
  %x:v1 = phi [entry: %x0], [latch: %y]
  %y:v1 = phi [entry: %y0], [latch: %x]
  %c:s1 = s_cmp %n, %x, %m
  branch uniform %c, use, latch
use:
  %w:s1 = s_add %k
  jump latch
latch:
  %d:s1 = s_cmp %c
  branch uniform %d, loop, exit
exit:
  %s:v1 = add %x, %y
  ret %s
}
",
        &[("v", 3)],
    );
    let k = value_named(&a, "k");
    let f = &a.functions[0];
    let stores_of_k: Vec<&str> = f
        .blocks
        .iter()
        .filter(|b| {
            b.insts
                .iter()
                .any(|i| matches!(&i.kind, InstKind::Spill(m) if m.value == k))
        })
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(stores_of_k, ["entry"], "{}", print(&a));
    assert_eq!(reloads_of(&a, "k", "use"), 1, "{}", print(&a));
}

/// The divergent branch in `entry` keeps `%k` and `%x` in registers through the
/// then-side for the else-arm, which reads them. The loop inside the then-side reads
/// neither, and its header needs one more register for its phi `%i` than the branch's
/// exit held: with both kept values forced into the header's W, `%i` is a memory phi,
/// stored and reloaded on every iteration. The loop's pressure leaves room for one of
/// them, so the other is demoted: stored once before the side and reloaded after it.
#[test]
fn a_value_kept_for_the_else_arm_leaves_a_loop_in_the_then_side_that_needs_its_register() {
    let (_, a) = spilled(
        "target generic s=8 v=8
func @f {
entry:
  %k:s4 = s_load reads
  %x:s1 = s_mov 1
  %b:s1 = s_mov 3
  %c:v1 = v_mov 0
  branch divergent %c, then, else
then:
  jump loop
loop:
  %i:s1 = phi [then: %b], [loop: %i2]
  %i2:s1 = s_add %i, %b
  branch uniform %i2, loop, tdone
tdone:
  s_store %i2 writes
  jump join
else:
  %e:s1 = s_add %k, %x
  s_store %e writes
  jump join
join:
  %r:s1 = s_add %b, %k, %x
  ret %r
}
",
        &[("s", 6)],
    );
    let in_loop: usize = a.functions[0]
        .blocks
        .iter()
        .filter(|b| b.name.starts_with("loop"))
        .map(|b| spill_code(&a, &b.name).len())
        .sum();
    assert_eq!(in_loop, 0, "{}", print(&a));
}

#[test]
fn a_rematerialisable_value_is_recomputed_instead_of_reloaded() {
    let (_, a) = spilled(
        "target generic s=4 v=8
func @f {
entry:
  %k:v1 = const 7 remat
  %a:v1 = mov 1
  %b:v1 = mov 2
  %c:v1 = add %a, %b
  %d:v1 = add %c, %k
  ret %d
}
",
        &[("v", 2)],
    );
    let k = value_named(&a, "k");
    let code = spill_code(&a, "entry");
    assert_eq!(code.len(), 1, "{}", print(&a));
    assert!(
        matches!(code[0], InstKind::Remat { value, .. } if *value == k),
        "{}",
        print(&a)
    );
}

/// A constant read in a fixed register that another live value holds, with the file full
/// and no swap: the copy before the read exchanges the two, and recomputes the constant at
/// its register after moving the other value out, instead of saving it in a scratch slot
/// (one more register used to cost a store and a reload where one less spilled nothing:
/// generated seed 565, class `p`, 4 → 17).
#[test]
fn a_copy_cycle_in_a_full_file_recomputes_a_constant_instead_of_a_scratch_slot() {
    let (_, a) = spilled(
        "target generic v=4:noswap
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = load 2 reads
  %k:v1 = const 7 remat
  store %k fixed(v0), %a, %b, %c writes
  ret %a, %b, %c
}
",
        &[("v", 4)],
    );
    let k = value_named(&a, "k");
    let code = spill_code(&a, "b");
    assert_eq!(code.len(), 1, "{}", print(&a));
    assert!(
        matches!(code[0], InstKind::Remat { value, .. } if *value == k),
        "{}",
        print(&a)
    );
}

/// The lane register sits at the top of the VGPRs that keep the kernel's occupancy (24 on
/// gfx9 for 10 waves), not at the top of the file, where it would cost all but one wave.
#[test]
fn a_uniform_value_spills_to_a_lane_of_a_reserved_vgpr() {
    let (p, a) = spilled(
        "target gfx9
func @f {
entry:
  %u:s1 = s_mov_b32 1
  %a:s1 = s_mov_b32 2
  %b:s1 = s_mov_b32 3
  %c:s1 = s_add_u32 %a, %b
  %d:s1 = s_add_u32 %c, %u
  ret %d
}
",
        &[("s", 2)],
    );
    let v = p.target.class_by_name("v").unwrap();
    let code = spill_code(&a, "entry");
    let to_lane = code.iter().any(|k| {
        matches!(k, InstKind::Spill(m) if matches!(m.dst, Location::Lane { class, reg: 23, .. } if class == v))
    });
    assert!(to_lane, "{}", print(&a));
    let to_memory = code
        .iter()
        .any(|k| matches!(k, InstKind::Spill(m) if matches!(m.dst, Location::Slot { .. })));
    assert!(!to_memory, "{}", print(&a));
}

#[test]
fn a_predicate_spills_into_a_general_register_not_memory() {
    let (p, a) = corpus_programs()
        .into_iter()
        .find(|(n, _)| n == "ptx_predicates.chr")
        .map(|(_, p)| {
            let (a, _) = allocate(&p, &AllocOptions::default()).unwrap();
            (p, a)
        })
        .unwrap();
    check(&p, Vec::new()).unwrap();
    let (r, pred) = (
        p.target.class_by_name("r").unwrap(),
        p.target.class_by_name("p").unwrap(),
    );
    let code = spill_code(&a, "entry");
    let into_r = |k: &&&InstKind| matches!(k, InstKind::Spill(m) if m.dst.reg_class() == Some(r) && m.src.reg_class() == Some(pred));
    assert_eq!(code.iter().filter(into_r).count(), 1, "{}", print(&a));
    let back = |k: &&&InstKind| matches!(k, InstKind::Reload(m) if m.src.reg_class() == Some(r) && m.dst.reg_class() == Some(pred));
    assert_eq!(code.iter().filter(back).count(), 1, "{}", print(&a));
}

/// With no VGPR to spare for lanes, a uniform value of a function with a divergent branch
/// goes to scratch: its store writes every lane, so the reload after the join is right
/// whichever side each lane took. It counts as a memory spill.
#[test]
fn a_uniform_value_with_no_spare_vgpr_spills_to_scratch_under_divergence() {
    let (p, a) = spilled(
        "target gfx9
func @f {
entry:
  %t:v1 = tid
  %u:s1 = s_mov_b32 1
  branch divergent %t, then, join
then:
  %a:s1 = s_mov_b32 2
  %b:s1 = s_mov_b32 3
  %c:s1 = s_add_u32 %a, %b
  %x:v1 = v_add %t, %c
  store %x writes
  jump join
join:
  %d:s1 = s_add_u32 %u, %u
  ret %d
}
",
        &[("s", 2), ("v", 1)],
    );
    let u = value_named(&a, "u");
    let slot = |l: Location| matches!(l, Location::Slot { .. });
    let to_memory = |k: &&&InstKind| matches!(k, InstKind::Spill(m) if m.value == u && slot(m.dst));
    assert_eq!(
        spill_code(&a, "entry").iter().filter(to_memory).count(),
        1,
        "{}",
        print(&a)
    );
    let from_memory =
        |k: &&&InstKind| matches!(k, InstKind::Reload(m) if m.value == u && slot(m.src));
    assert_eq!(
        spill_code(&a, "join").iter().filter(from_memory).count(),
        1,
        "{}",
        print(&a)
    );
    let opts = AllocOptions {
        budget: vec![("s".into(), 2), ("v".into(), 1)],
        ..AllocOptions::default()
    };
    let (_, stats) = allocate(&p, &opts).unwrap();
    let s = p.target.class_by_name("s").unwrap();
    let class = &stats[0].classes[s.index()];
    assert_eq!((class.spills, class.lane_spills, class.reloads), (1, 0, 1));
    assert!(class.spill_cost > 0.0);
}

/// A class that spills into another class's registers uses memory for a tuple size that
/// class does not have.
#[test]
fn a_tuple_the_target_class_cannot_hold_spills_to_memory() {
    let mut p = parse(
        "target generic q=4 r=8
func @f {
entry:
  %x:q2 = mov 1
  %a:q1 = mov 2
  %b:q1 = mov 3
  %c:q1 = add %a, %b
  %d:q2 = add %x, %c
  ret %d
}
",
    )
    .unwrap();
    let (q, r) = (
        p.target.class_by_name("q").unwrap(),
        p.target.class_by_name("r").unwrap(),
    );
    p.target.classes[q.index()].spill = vec![chromatic::SpillTarget::Class { class: r }];
    p.target.classes[r.index()].sizes = vec![1];
    check(&p, vec![("q".into(), 3)]).unwrap_or_else(|e| panic!("{e}"));
    let opts = AllocOptions {
        budget: vec![("q".into(), 3)],
        ..AllocOptions::default()
    };
    let (a, _) = allocate(&p, &opts).unwrap();
    let code = spill_code(&a, "entry");
    let to_memory = |k: &&&InstKind| matches!(k, InstKind::Spill(m) if matches!(m.dst, Location::Slot { len: 2, .. }));
    assert_eq!(code.iter().filter(to_memory).count(), 1, "{}", print(&a));
    assert!(!code
        .iter()
        .any(|k| matches!(k, InstKind::Spill(m) if m.dst.reg_class() == Some(r))));
}

/// Spilling SGPRs to VGPR lanes must not cost occupancy: nested_loops needs 4 VGPRs and one
/// lane register, so it keeps gfx9's 10 waves at every SGPR budget down to the lowest.
#[test]
fn lane_spills_keep_the_occupancy_of_the_vgprs_used() {
    let (_, p) = corpus_programs()
        .into_iter()
        .find(|(n, _)| n == "nested_loops.chr")
        .expect("corpus file");
    for k in [3, 2] {
        let opts = AllocOptions {
            budget: vec![("s".to_string(), k)],
            ..AllocOptions::default()
        };
        let (_, stats) = allocate(&p, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stats[0].lane_registers, 1, "s={k}");
        assert_eq!(stats[0].occupancy, Some(10), "s={k}");
    }
}

/// mma_accumulate_loop at r=12: the accumulator %d0 is stored after its definition into
/// the slot colouring shares with the memory phi %c0 it feeds, so the back edge copies
/// nothing from that slot onto itself (a reload and a store of one location back to back).
/// The latch reloads `%pb` before its branch for the header and the exit alike.
#[test]
fn a_memory_phi_argument_already_in_the_phi_slot_is_not_copied_onto_itself() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/mma_accumulate_loop.chr");
    let src = std::fs::read_to_string(path).expect("corpus file");
    let (_, a) = spilled(&src, &[("r", 12)]);
    let f = &a.functions[0];
    for b in &f.blocks {
        for pair in b.insts.windows(2) {
            let self_copy = matches!(
                (&pair[0].kind, &pair[1].kind),
                (InstKind::Reload(l), InstKind::Spill(s)) if l.src == s.dst && l.dst == s.src
            );
            assert!(!self_copy, "in {}: {}", b.name, print(&a));
        }
    }
    let spill_moves = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| matches!(i.kind, InstKind::Spill(_) | InstKind::Reload(_)));
    assert_eq!(spill_moves.count(), 13, "{}", print(&a));
}

/// mma_accumulate_loop at r=13: where the loaded fragments first exceed the budget by two
/// units, the furthest next use is the 1-unit counter %k, but evicting it would not make
/// the point fit; the 4-unit accumulator %c1, reloaded in the same loop, does alone. So %k
/// stays in a register through the loop and only the accumulators are spilled.
#[test]
fn a_small_value_is_not_spilled_when_a_larger_one_alone_makes_the_point_fit() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/mma_accumulate_loop.chr");
    let src = std::fs::read_to_string(path).expect("corpus file");
    let (_, a) = spilled(&src, &[("r", 13)]);
    let f = &a.functions[0];
    let k = value_named(&a, "k");
    let moves_k =
        f.blocks.iter().flat_map(|b| &b.insts).filter(
            |i| matches!(&i.kind, InstKind::Spill(m) | InstKind::Reload(m) if m.value == k),
        );
    assert_eq!(moves_k.count(), 0, "{}", print(&a));
}

/// The loop-header phi %i is read at the top of the loop and then only after it: spilled
/// where the loop's pressure peaks, it is stored once at the top of its block and stays a
/// register phi (a memory phi would also reload it inside the loop for `%a` and store
/// `%i2` on the back edge).
#[test]
fn a_phi_spilled_after_its_uses_is_stored_at_the_top_of_its_block() {
    let (_, a) = spilled(
        "target generic s=4 v=8
func @f {
entry:
  %i0:v1 = mov 0
  %n:s1 = s_mov 0
  jump head
head:
  %i:v1 = phi [entry: %i0], [head: %i2]
  %a:v1 = add %i, %i
  %p:v1 = mov 2
  %q:v1 = mov 3
  %b:v1 = add %p, %q
  %i2:v1 = add %a, %b
  %c:s1 = s_cmp %n
  branch uniform %c, head, exit
exit:
  %y:v1 = add %i, %i2
  ret %y
}
",
        &[("v", 3)],
    );
    let f = &a.functions[0];
    let head = f.blocks.iter().find(|b| b.name == "head").expect("head");
    assert!(
        matches!(head.phis[0].def.loc, Some(Location::Reg { .. })),
        "{}",
        print(&a)
    );
    assert!(
        matches!(head.insts[0].kind, InstKind::Spill(_)),
        "{}",
        print(&a)
    );
    assert_eq!(spill_code(&a, "head").len(), 1, "{}", print(&a));
    assert_eq!(spill_code(&a, "entry").len(), 0, "{}", print(&a));
    assert_eq!(spill_code(&a, "exit").len(), 1, "{}", print(&a));
}

/// The loop-header phi %d is dead and %x feeds only it: %x stays live through the loop
/// either way. %d stays a register phi; %x, read by nothing in the loop, is stored once
/// before it and reloaded on the back edge (8 + 80), which is cheaper than spilling the
/// loop counter %i, read and written every iteration (2 × 80).
#[test]
fn a_dead_phi_is_not_spilled_where_it_frees_nothing() {
    let (_, a) = spilled(
        "target generic s=4 v=8
func @f {
entry:
  %x:v1 = mov 1
  %i0:v1 = mov 0
  %n:s1 = s_mov 0
  jump head
head:
  %d:v1 = phi [entry: %x], [head: %x]
  %i:v1 = phi [entry: %i0], [head: %i2]
  %p:v1 = mov 2
  %q:v1 = mov 3
  %b:v1 = add %p, %q
  %i2:v1 = add %i, %b
  %c:s1 = s_cmp %n
  branch uniform %c, head, exit
exit:
  ret %i2
}
",
        &[("v", 3)],
    );
    let f = &a.functions[0];
    let head = f.blocks.iter().find(|b| b.name == "head").expect("head");
    assert!(
        matches!(head.phis[0].def.loc, Some(Location::Reg { .. })),
        "{}",
        print(&a)
    );
    let moved: Vec<Value> = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| match &i.kind {
            InstKind::Spill(m) | InstKind::Reload(m) => Some(m.value),
            _ => None,
        })
        .collect();
    let x = value_named(&a, "x");
    assert_eq!(moved, [x, x], "{}", print(&a));
    assert_eq!(spill_code(&a, "head.head").len(), 1, "{}", print(&a));
}

/// loop_multi_exit at r=5: where `%addr` is defined one unit over the budget, Belady's
/// furthest next use is the 2-unit `%ptr`, but both it and the 1-unit `%key` are
/// reloaded in the loop header every iteration; `%key` frees the point alone for half
/// the units, so it goes (88, the optimum, instead of 192).
#[test]
fn inside_a_loop_the_cheaper_of_two_values_reloaded_every_iteration_is_spilled() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/loop_multi_exit.chr");
    let src = std::fs::read_to_string(path).expect("corpus file");
    let (_, a) = spilled(&src, &[("r", 5)]);
    let f = &a.functions[0];
    let moves = |name: &str| {
        let v = value_named(&a, name);
        f.blocks
            .iter()
            .flat_map(|b| &b.insts)
            .filter(|i| matches!(&i.kind, InstKind::Spill(m) | InstKind::Reload(m) if m.value == v))
            .count()
    };
    assert_eq!(moves("ptr"), 0, "{}", print(&a));
    assert_eq!(moves("key"), 2, "{}", print(&a));
}

/// memory_phi_slots at v=34: `%v98 = phi [b4: %v78], [b7: %v78]` heads the loop b7 and
/// nothing reads it. As a memory phi it stored `%v78` on the back edge every iteration
/// while `%v78` kept its register through the loop; it stays a register phi, and `%v78`
/// is neither stored nor reloaded.
#[test]
fn a_dead_loop_phi_fed_a_value_live_through_the_loop_stores_nothing() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus/regressions/memory_phi_slots.chr");
    let src = std::fs::read_to_string(path).expect("corpus file");
    let (_, a) = spilled(&src, &[("v", 34)]);
    let f = &a.functions[0];
    let b7 = f.blocks.iter().find(|b| b.name == "b7").expect("b7");
    let v98 = value_named(&a, "v98");
    let phi = b7.phis.iter().find(|p| p.def.value == v98).expect("phi");
    assert!(
        matches!(phi.def.loc, Some(Location::Reg { .. })),
        "{}",
        print(&a)
    );
    let v78 = value_named(&a, "v78");
    let moves =
        f.blocks.iter().flat_map(|b| &b.insts).filter(
            |i| matches!(&i.kind, InstKind::Spill(m) | InstKind::Reload(m) if m.value == v78),
        );
    assert_eq!(moves.count(), 0, "{}", print(&a));
}

/// pinned_accumulator at its lowest legal budget (8): the pinned accumulator never moves
/// (no copy, spill or reload reads it) and keeps one location through the loop, while the
/// values around it are spilled.
#[test]
fn pinned_values_stay_in_place_while_the_rest_spills() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/pinned_accumulator.chr");
    let src = std::fs::read_to_string(path).expect("corpus file");
    let p = parse(&src).unwrap_or_else(|e| panic!("{e}"));
    let f = &p.functions[0];
    let c = p.target.class_by_name("v").expect("class v");
    assert_eq!(lowest_legal(f, &p.target)[c.index()].units, 8);
    let (_, a) = spilled(&src, &[("v", 8)]);
    let g = &a.functions[0];
    let pinned = [value_named(&a, "acc"), value_named(&a, "next")];
    let moved: Vec<Value> = g
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .flat_map(|i| match &i.kind {
            InstKind::Spill(m) | InstKind::Reload(m) => vec![m.value],
            InstKind::ParallelCopy(ms) => ms.iter().map(|m| m.value).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert!(!moved.is_empty(), "{}", print(&a));
    assert!(moved.iter().all(|v| !pinned.contains(v)), "{}", print(&a));
    let head = g.blocks.iter().find(|b| b.name == "head").expect("head");
    assert_eq!(
        head.phis[0].def.loc,
        head.insts.iter().find_map(|i| {
            i.op()
                .filter(|op| op.opcode == "mma.async")
                .and_then(|op| op.defs[0].loc)
        })
    );
}

/// A budget step at which one register more raises a class's spill cost.
#[derive(Debug)]
struct Rise {
    class: String,
    budget: u32,
    cost: f64,
    cost_above: f64,
}

impl std::fmt::Display for Rise {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let Rise {
            class,
            budget,
            cost,
            cost_above,
        } = self;
        write!(
            f,
            "{class}={budget}: {cost} -> {class}={}: {cost_above}",
            budget + 1
        )
    }
}

/// One class of a program swept from its lowest legal budget to its MaxLive.
struct Sweep {
    /// Steps from a budget to the next one up.
    steps: usize,
    /// The spill cost summed over every budget.
    cost: f64,
    /// The steps that raise the class's spill cost.
    rises: Vec<Rise>,
}

/// Sweeps one class of `p` from its lowest legal budget to its MaxLive.
fn cost_rises(p: &Program, class: chromatic::ClassId) -> Sweep {
    let (mut max_live, mut lowest) = (0, 1);
    for f in &p.functions {
        max_live = max_live.max(Analysis::new(f, &p.target).pressure.max_live(class));
        lowest = lowest.max(lowest_legal(f, &p.target)[class.index()].units);
    }
    let high = max_live.min(u32::from(p.target.class(class).units));
    let name = p.target.class(class).name.clone();
    let cost = |k: u32| -> f64 {
        let opts = AllocOptions {
            budget: vec![(name.clone(), k as u16)],
            ..AllocOptions::default()
        };
        let (_, stats) = allocate(p, &opts).unwrap_or_else(|e| panic!("{name}={k}: {e}"));
        stats
            .iter()
            .map(|s| s.classes[class.index()].spill_cost)
            .sum()
    };
    let costs: Vec<f64> = (lowest..=high).map(cost).collect();
    let rises = (lowest..)
        .zip(costs.windows(2))
        .filter(|(_, w)| w[1] > w[0] + 1e-9)
        .map(|(budget, w)| Rise {
            class: name.clone(),
            budget,
            cost: w[0],
            cost_above: w[1],
        })
        .collect();
    Sweep {
        steps: costs.len().saturating_sub(1),
        cost: costs.iter().sum(),
        rises,
    }
}

/// `chromatic gen` writes the generator's programs the ratchet above sweeps, and
/// `chromatic sweep` on them counts the same rising steps as [`cost_rises`]: the ratchet's
/// measurement replays from the command line.
#[test]
fn gen_then_sweep_counts_the_ratchets_rises() {
    let dir = std::env::temp_dir().join(format!("chromatic-gen-{}", std::process::id()));
    let dir_s = dir.to_str().expect("utf-8 path");
    let gen = common::chromatic(&["gen", "--seed", "553", "--count", "3", "-o", dir_s]);
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let (mut rises, mut steps) = (0, 0);
    for seed in 553..556 {
        let p = generate_from_seed(seed, &GenConfig::default());
        let text = std::fs::read_to_string(dir.join(format!("gen_{seed}.chr"))).expect("written");
        assert_eq!(
            print(&parse(&text).expect("parses")),
            print(&p),
            "seed {seed}"
        );
        for c in p.target.class_ids() {
            let sweep = cost_rises(&p, c);
            rises += sweep.rises.len();
            steps += sweep.steps;
        }
    }
    let sweep = common::chromatic(&["sweep", dir_s]);
    let out = String::from_utf8_lossy(&sweep.stdout);
    assert!(sweep.status.success(), "{out}");
    let line = format!("one register more costs more: {rises} of {steps} steps");
    assert!(steps > 0 && out.contains(&line), "no `{line}` in\n{out}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// An outer loop header `b3` swaps its phis `%v24` and `%v25` on its back edges; the
/// inner loop `b9`, entered holding `%v25`, does not read it. The inner header's region
/// of blocks holding `%v25` ran on around the outer back edge into `b3`, where `%v25` is
/// the phi, a new value: it left `b3`'s entry without becoming a memory phi, and its
/// reload in `b8` read a slot nothing had stored (fuzz `alloc_verify`, reduced; an
/// undefined value at `a=12`). Every budget of both classes verifies.
#[test]
fn a_phi_reached_around_a_back_edge_is_not_held_from_an_inner_loop() {
    let p = parse(PHI_AROUND_A_BACK_EDGE).expect("parses");
    check(&p, Vec::new()).unwrap_or_else(|e| panic!("default budget: {e}"));
    for (class, k) in swept_budgets(&p) {
        check(&p, vec![(class.clone(), k)]).unwrap_or_else(|e| panic!("{class}={k}: {e}"));
    }
}

const PHI_AROUND_A_BACK_EDGE: &str = "\
target generic a=12:aligned q=5:noswap
func @f1 {
b0:
  %v0:q1 = arg 0 early
  %v1:q2 fixed(q[2:3]) = arg 1
  %v3:q1 = load %v0 fixed(q3), 3926361176 reads
  %v5:a4 = split %v1, 15, 32
  %v6:q1, %v7:a2 = setprio %v5 control
  %v8:q1 fixed(q1), %v9:q1 = mma.sync 18 early(1)
  jump b1
b1:
  %v10:q1 = phi [b0: %v3], [b13: %v18]
  %v11:a2, %v12:a4 = add %v10
  %v13:a1, %v14:a2 = add.cc %v9, %v8 early(1) carry
  %v15:a1 = mad %v1, -25
  %v16:a1 = mad %v11, %v15 tied(1)
  %v17:q1, %v18:q1 = setprio %v13, -34, %v12 control
  jump b3
b2:
  %v19:a2 = phi [b13: %v7]
  %v20:a1 = phi [b13: %v70]
  %v21:q1 = store %v19, %v9, %v19 writes
  ret %v20, %v21, %v21
b3:
  %v24:a2 = phi [b1: %v14], [b6: %v25], [b11: %v25]
  %v25:a2 = phi [b1: %v14], [b6: %v24], [b11: %v24]
  %v27:a1 = phi [b1: %v16], [b6: %v28], [b11: %v28]
  %v28:a1 = phi [b1: %v15], [b6: %v27], [b11: %v27]
  %v30:q1 = const -33 remat
  %v31:a3, %v32:q1 = split early(1)
  %v33:q1, %v34:a1 = add.cc %v32, %v31, 19 tied(0) carry
  branch uniform %v30, b5, b6
b4:
  %v35:a1 = const -7 remat
  %v36:q1, %v37:a1 = fence %v35, %v16 barrier
  branch uniform %v18, b12, b13
b5:
  branch uniform %v33, b8, b7
b6:
  %v42:a1 = phi [b3: %v34], [b10: %v34]
  %v45:a3 = setprio %v32, %v9 control
  %v47:q1, %v48:a1 = split %v45, -17, %v10, %v42
  branch uniform %v30, b3, b11
b7:
  jump b8
b8 freq=1:
  %v57:a1, %v58:a1 = setprio %v30, %v33, %v25, %v30 control
  %v59:a1 = mad %v33, %v34 tied(1)
  jump b9
b9:
  %v60:a1 = phi [b8: %v59], [b9: %v61]
  %v61:a1 = phi [b8: %v13], [b9: %v60]
  mma.sync %v59, %v58
  %v63:a1, %v64:a1 = mma.sync 2815020923, %v57, %v18 early early(1)
  branch uniform %v63, b9, b10
b10:
  jump b6
b11:
  branch divergent %v48, b4, b3
b12:
  jump b13
b13:
  %v70:a1 = phi [b4: %v37], [b12: %v28]
  branch uniform %v0, b2, b1
}
";

/// Phis exchanging their values on a loop's back edge, in a class without a swap whose
/// spill target is another class (PTX predicates into `r`), with the loop header's W
/// filling the budget: the copy on the back edge found no free unit and went through a
/// scratch slot, a store and a reload on every iteration (generated seed 899 at `p=7`:
/// two memory spills, cost 360.5). The copy temporary is part of the spiller's demand: a
/// value live through the loop leaves the header's W instead (cost 41.5, no memory
/// spill).
#[test]
fn a_back_edge_exchanging_phis_leaves_a_unit_for_its_copy_in_a_class_without_swap() {
    let p = generate_from_seed(899, &GenConfig::default());
    let c = p.target.class_by_name("p").expect("predicates");
    assert!(!p.target.class(c).has_swap);
    let opts = AllocOptions {
        budget: vec![("p".into(), 7)],
        ..AllocOptions::default()
    };
    let (_, stats) = allocate(&p, &opts).unwrap();
    let spills: u32 = stats.iter().map(|s| s.classes[c.index()].spills).sum();
    let cost: f64 = stats.iter().map(|s| s.classes[c.index()].spill_cost).sum();
    assert_eq!(spills, 0, "cost {cost}");
    assert!(cost < 50.0, "cost {cost}");
}

/// The spill cost of class `class` of the generated program `seed` at budget `k`.
fn generated_cost(seed: u64, class: &str, k: u16) -> f64 {
    let p = generate_from_seed(seed, &GenConfig::default());
    let c = p.target.class_by_name(class).expect("the class");
    let opts = AllocOptions {
        budget: vec![(class.into(), k)],
        ..AllocOptions::default()
    };
    let (_, stats) = allocate(&p, &opts).unwrap();
    stats.iter().map(|s| s.classes[c.index()].spill_cost).sum()
}

/// In a class without a swap, the copy before an instruction that fixes a value to a
/// register breaks a cycle through a free unit within the budget; with W filling the
/// budget at such an instruction, the cycle went through a scratch slot, in a loop on
/// every iteration (generated seed 155, class `s`: 7,154 at `s=11`, 19,674 at `s=12`;
/// seed 333, Intel flags `f`: 21 at `f=2`, 29 at `f=3`). MIN now leaves that unit free
/// there.
#[test]
fn a_fixed_operand_leaves_a_unit_for_its_copy_in_a_class_without_swap() {
    let costs = (generated_cost(155, "s", 11), generated_cost(155, "s", 12));
    assert_eq!(costs, (6794.0, 6794.0));
    let costs = (generated_cost(333, "f", 2), generated_cost(333, "f", 3));
    assert_eq!(costs, (21.0, 14.0));
}

/// A value a loop header holds because the loop reads it, evicted by the loop's peak
/// past its read, is reloaded on every edge into the header whose end lacks it: with
/// nested loops, on the inner back edge and the outer one too. One register more let the
/// headers hold it (generated seed 878, class `v`: 26,848 at `v=26`, 27,008 at `v=27`;
/// seed 34: 1,632 at `v=45`, 1,952 at `v=46`); it now enters the loop in memory where a
/// reload at its first read costs less than those edges' reloads. (Seed 34 costs less
/// still since a loop header takes the values live through its loop by the cost of
/// leaving them out: 1,312 at `v=45`, 992 at `v=46`.)
#[test]
fn a_value_evicted_past_its_loop_read_enters_the_loop_in_memory() {
    let costs = (generated_cost(878, "v", 26), generated_cost(878, "v", 27));
    assert_eq!(costs, (26048.0, 26048.0));
    let costs = (generated_cost(34, "v", 45), generated_cost(34, "v", 46));
    assert_eq!(costs, (1312.0, 992.0));
}

/// A loop inside a divergent side whose back edge exchanges two register phis in a
/// class without a swap: the value live through the loop that could leave the header's
/// W for the copy's temporary was one the branch keeps for its join, so none left and
/// the cycle went through a scratch slot on every iteration (generated seed 164, class
/// `s`: 232 at `s=23`, 1,496 at `s=24`). That kept value is demoted instead: stored at
/// the branch, reloaded after the side.
#[test]
fn a_value_kept_for_a_join_leaves_a_loop_header_for_its_back_edge_copy() {
    let costs = (generated_cost(164, "s", 23), generated_cost(164, "s", 24));
    assert_eq!(costs, (232.0, 232.0));
}

/// MIN chooses victims one at a time; priced per useful unit alone, one unit of excess
/// less made a one-unit value the first victim where a value covering the excess had
/// gone, and more small ones followed it (generated seed 645, class `a`: 17,674 at
/// `a=32`, 18,336 at `a=33`). A value covering the excess alone now goes first when the
/// cheapest smaller values covering it together cost more.
#[test]
fn one_value_covering_the_excess_goes_before_small_ones_costing_more_together() {
    let costs = (generated_cost(645, "a", 32), generated_cost(645, "a", 33));
    assert_eq!(costs, (17674.0, 17344.0));
}

/// Before a loop whose header leaves a live-through value out for the loop's pressure,
/// MIN evicted the farthest value instead, and the header then left the other one out
/// anyway: one register more, one unit of excess less, and the small farthest value
/// alone covered it where at the lower budget the large one went and the small one came
/// back (generated seed 753, class `v`: 648 at `v=23`, 664 at `v=24`; seed 70, class
/// `p`: 256 at `p=55`, 272 at `p=56`; seed 754, class `p`: 384 at `p=57`, 400 at
/// `p=58`). A value the header leaves out anyway now goes first.
#[test]
fn a_value_the_next_loop_header_leaves_out_goes_before_the_farthest() {
    let costs = (generated_cost(753, "v", 23), generated_cost(753, "v", 24));
    assert_eq!(costs, (648.0, 648.0));
    let costs = (generated_cost(70, "p", 55), generated_cost(70, "p", 56));
    assert_eq!(costs, (256.0, 256.0));
    let costs = (generated_cost(754, "p", 57), generated_cost(754, "p", 58));
    assert_eq!(costs, (384.0, 384.0));
}

/// A loop header took the values live through its loop by next use while its room
/// lasted, the room counted as the budget less the loop's peak in sizes: one register
/// more let a nearer value take the room of values costing more to leave out (generated
/// seed 32, class `a`: a rematerialisable 8-unit value took a room of 8 from three values
/// then stored and reloaded, 2,208 at `a=49`, 2,992 at `a=50`; seed 742 `v`: 96 at `v=39`,
/// 120 at `v=40`; seed 753 `v`: 648 at `v=24`, 656 at `v=25`). The header now takes the
/// costliest to leave out per unit of room first, and counts the loop's peak in units
/// rounded up to alignment, as it counts the values it takes.
#[test]
fn a_loop_header_takes_the_values_costliest_to_leave_out_first() {
    let costs = (generated_cost(32, "a", 49), generated_cost(32, "a", 50));
    assert_eq!(costs, (2208.0, 2192.0));
    let costs = (generated_cost(742, "v", 39), generated_cost(742, "v", 40));
    assert_eq!(costs, (96.0, 96.0));
    let costs = (generated_cost(753, "v", 24), generated_cost(753, "v", 25));
    assert_eq!(costs, (648.0, 648.0));
}

/// The first victim is that of the cheapest way to cover the excess; summed cheapest per
/// unit first, the smaller values overshot it and priced a set dearer than one covering it
/// exactly, so a 3-unit value went where a 1-unit and a 2-unit one cost less together
/// (generated seed 802, class `q`: 102 at `q=15`, 105 at `q=16`). The cover is now exact.
#[test]
fn the_cheapest_cover_of_the_excess_is_exact() {
    let costs = (generated_cost(802, "q", 15), generated_cost(802, "q", 16));
    assert_eq!(costs, (102.0, 85.0));
}

/// Evicting a value a divergent branch keeps through its then-side demotes it: the
/// else-arm and the join reload it, beside the reload at its next read. Priced at its next
/// read alone, a one-unit kept value read again in the then-side went where a two-unit
/// value had (generated seed 441, class `a`: 2,657 at `a=43`, 2,801 at `a=44`; the same
/// at `a=39` and `a=41`); the eviction is now priced with those reloads.
#[test]
fn evicting_a_value_kept_for_a_divergent_side_is_priced_with_its_reloads_after_the_side() {
    let costs = (generated_cost(441, "a", 43), generated_cost(441, "a", 44));
    assert_eq!(costs, (2667.0, 2649.0));
    let costs = (generated_cost(441, "a", 39), generated_cost(441, "a", 40));
    assert_eq!(costs, (2751.0, 2743.0));
}

/// MIN's after-loop rule evicted the farthest value next read after the loop, taking it
/// to stay out for the rest of the loop, also when the value was defined in the loop: it
/// came back with every definition, was stored every iteration and reloaded on the exit
/// edges (generated seed 701, class `p`: a value read only by a phi after the loop went
/// before three cheaper ones, and the phi became a memory phi, 247 at `p=6`, 414 at
/// `p=7`; seed 60, class `p`: 128 at `p=61`, 176 at `p=62`). Such a value is now priced
/// like any other, unless its next-use path enters an inner loop first.
#[test]
fn a_value_defined_in_the_loop_is_not_evicted_as_if_it_stayed_out() {
    let costs = (generated_cost(701, "p", 6), generated_cost(701, "p", 7));
    assert_eq!(costs, (239.0, 216.0));
    let costs = (generated_cost(60, "p", 61), generated_cost(60, "p", 62));
    assert_eq!(costs, (128.0, 128.0));
}

/// A value evicted inside two loops whose headers held it was priced at the frequency of
/// the block entering the inner loop that reads it (1), while its reloads ran on the
/// headers' back edges, at frequencies 100 and 10 (generated seed 174, class `v`: 1,760
/// at `v=42` and `v=43`). Its reload is now priced at the back edges' frequency, or at
/// that of the block of its next read where that is lower.
#[test]
fn an_eviction_under_a_header_holding_the_value_is_priced_at_its_back_edges() {
    let costs = (generated_cost(174, "v", 42), generated_cost(174, "v", 43));
    assert_eq!(costs, (200.0, 200.0));
}

/// MIN's after-loop rule evicted the farthest value next read after the loop, whatever
/// it cost, and priced nothing by the units the rest of the loop needs: one register
/// more (one unit of excess less) let a one-unit value reloaded on an outer back edge go
/// where a two-unit value reloaded after the outer loop had (generated seed 173, class
/// `q`: 7,972 at `q=36`, 8,024 at `q=37`; seed 583 `q`: 16,776 at `q=64`, 16,872 at
/// `q=65`). Among values that stay out for the rest of the loop the farthest for its cost
/// now goes, its useful units counted against the loop's excess at its peak.
#[test]
fn a_value_staying_out_for_the_loop_is_the_farthest_for_its_cost_over_the_loop_excess() {
    let costs = (generated_cost(173, "q", 36), generated_cost(173, "q", 37));
    assert_eq!(costs, (7972.0, 7972.0));
    let costs = (generated_cost(583, "q", 64), generated_cost(583, "q", 65));
    assert_eq!(costs, (16680.0, 16680.0));
    let costs = (generated_cost(754, "p", 61), generated_cost(754, "p", 62));
    assert_eq!(costs, (384.0, 192.0));
}

/// A loop header's values that MIN evicts before reading them enter the loop in memory;
/// which values MIN evicts depends on which others the entry holds. With one register
/// more, an 8-unit value the header never reads made MIN evict a 1-unit value read in the
/// header too, and both entered in memory (generated seed 791, class `a`: 3,521 at `a=14`,
/// 3,787 at `a=15`, 3,609 at `a=16`). A value left out now comes back where the walk with
/// it evicts no value of the entry before its read.
#[test]
fn a_loop_header_takes_back_a_value_only_another_doomed_value_pushed_out() {
    let costs = (generated_cost(791, "a", 14), generated_cost(791, "a", 15));
    assert_eq!(costs, (3521.0, 3521.0));
    assert_eq!(generated_cost(791, "a", 16), 3521.0);
}

/// Left out of an inner loop header's W, a value that an enclosing loop's header holds
/// and reads in its next iteration is reloaded on each of the outer back edges, not once:
/// priced at one reload, four one-unit values read before the inner loop took the room of
/// an eight-unit value read once after it, and were reloaded on both outer back edges
/// (generated seed 308, class `v`: 1,245 at `v=98`, 1,557 at `v=99`).
#[test]
fn an_inner_loop_header_prices_a_value_left_out_at_the_outer_back_edges() {
    let costs = (generated_cost(308, "v", 98), generated_cost(308, "v", 99));
    assert_eq!(costs, (1245.0, 1245.0));
}

/// Issue-14 goal, met on the corpus, not yet on generated programs: the spill cost should
/// never rise when the budget grows by one. Belady's choices are greedy (a cheap eviction
/// at one budget can force a costlier one later that a tighter budget avoids; one register
/// more can leave a parallel copy without a free temporary), so it does on none of the
/// corpus's 123 steps and on 19 of 1,799 steps over 1,000 generated programs (every class,
/// every budget from the lowest legal one to MaxLive; their cost summed over every point,
/// 10,203,927.25, since an eviction in a cold block is stored there and an inner loop
/// header's leave-out price counts the outer back edges). This ratchet fails when either
/// count grows, and lists every rising step (program, class, budget, both costs).
#[test]
fn spill_cost_rises_with_one_more_register_no_more_often_than_measured() {
    let (mut rises, mut steps) = (Vec::new(), 0);
    for (name, p) in corpus_programs() {
        for c in p.target.class_ids() {
            let sweep = cost_rises(&p, c);
            rises.extend(sweep.rises.iter().map(|r| format!("{name} {r}")));
            steps += sweep.steps;
        }
    }
    assert!(
        rises.is_empty(),
        "corpus: {} of {steps} steps:\n{}",
        rises.len(),
        rises.join("\n")
    );
    let (mut rises, mut steps, mut cost) = (Vec::new(), 0, 0.0);
    for seed in 0..1000 {
        let p = generate_from_seed(seed, &GenConfig::default());
        for c in p.target.class_ids() {
            let sweep = cost_rises(&p, c);
            rises.extend(sweep.rises.iter().map(|r| format!("seed {seed} {r}")));
            steps += sweep.steps;
            cost += sweep.cost;
        }
    }
    let listed = rises.join("\n");
    eprintln!(
        "generated: {} of {steps} steps rise (cost over every point {cost}):\n{listed}",
        rises.len()
    );
    assert!(
        rises.len() <= 19,
        "generated: {} of {steps} steps:\n{listed}",
        rises.len()
    );
}
