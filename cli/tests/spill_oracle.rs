//! The spill oracle (`chromatic_oracle::spill`) on programs whose optimum is derived by
//! hand: each answer is an allocation that the verifier accepts and that runs like the
//! original, and its cost is the allocator's count of its spill code.

use chromatic::alloc::stats::collect;
use chromatic::analysis::Analysis;
use chromatic::Program;
use chromatic_oracle::minregs::Status;
use chromatic_oracle::spill::{min_spill, Limits, SpillAllocation};
use chromatic_verifier::interp::{run, Config};

/// The oracle's answer for the only function of `text` with `class` at `budget` (other
/// classes at their whole file), checked.
fn spill(text: &str, class: &str, budget: u16) -> SpillAllocation {
    let p = chromatic::parse(text).unwrap_or_else(|e| panic!("{e}"));
    let c = p.target.class_by_name(class).expect("class");
    let mut budgets: Vec<u16> = p.target.classes.iter().map(|k| k.units).collect();
    budgets[c.index()] = budget;
    let f = &p.functions[0];
    let answer = min_spill(f, &p.target, c, &budgets, Limits::default()).expect("solved");
    let one = |g: &chromatic::Function| Program {
        target: p.target.clone(),
        functions: vec![g.clone()],
    };
    let errors =
        chromatic_verifier::verify_program(&one(f), &one(&answer.function), Some(&budgets));
    assert!(
        errors.is_empty(),
        "{}\n{}",
        errors[0],
        chromatic::print(&one(&answer.function))
    );
    for seed in 0..3 {
        let config = Config {
            seed,
            ..Default::default()
        };
        let a = run(f, &p.target, &config);
        let b = run(&answer.function, &p.target, &config);
        assert_eq!(a.first_divergence(&b), None);
    }
    let analysis = Analysis::new(f, &p.target);
    let stats = collect(f, &answer.function, &p.target, &analysis, 0);
    assert_eq!(stats.classes[c.index()].spill_cost, answer.cost);
    answer
}

const STRAIGHT: &str = "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = load 2 reads
  %d:v1 = add %b, %c
  %e:v1 = add %d, %a
  ret %e
}";

#[test]
fn a_budget_at_max_live_costs_nothing() {
    let answer = spill(STRAIGHT, "v", 3);
    assert_eq!((answer.cost, answer.status), (0.0, Status::Optimal));
}

/// At 2 registers %a must leave while %b and %c are live: one store and one reload at
/// the generic target's 8 each.
#[test]
fn one_value_out_for_one_point_costs_a_store_and_a_reload() {
    let answer = spill(STRAIGHT, "v", 2);
    assert_eq!((answer.cost, answer.status), (16.0, Status::Optimal));
    assert_eq!(answer.destination, "memory");
}

/// A rematerialisable value needs no store; its reload is a recomputation at cost 1.
#[test]
fn remat_beats_a_reload() {
    let text = "target generic v=8
func @f {
b:
  %k:v1 = mov 7 remat
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = add %a, %b
  %d:v1 = add %c, %k
  ret %d
}";
    let answer = spill(text, "v", 2);
    assert_eq!((answer.cost, answer.status), (1.0, Status::Optimal));
    let printed = chromatic::print(&Program {
        target: chromatic::parse(text).expect("parses").target,
        functions: vec![answer.function],
    });
    assert!(printed.contains("remat v"), "{printed}");
}

/// Three SGPRs live at two: one goes to a lane of a VGPR (a write and a read, 1 each on
/// GFX9) rather than to scratch (8 + 8).
#[test]
fn an_sgpr_spills_to_a_vgpr_lane_not_to_scratch() {
    let text = "target gfx9
func @f {
b:
  %a:s1 = s_load 0 reads
  %b:s1 = s_load 1 reads
  %c:s1 = s_load 2 reads
  %d:s1 = s_add %b, %c
  %e:s1 = s_add %d, %a
  store %e writes
  ret
}";
    let answer = spill(text, "s", 2);
    let costs = chromatic::parse(text).expect("parses").target.costs;
    assert_eq!(answer.destination, "lanes of v");
    assert_eq!(answer.cost, costs.lane_write + costs.lane_read);
    assert!(answer.cost < costs.mem_store + costs.mem_load);
    assert_eq!(answer.status, Status::Optimal);
}

/// A predicate beyond the 7 of sm_80 moves into an `r` register and back (1 + 1).
#[test]
fn a_predicate_spills_into_a_32_bit_register() {
    let text = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/ptx_predicates.chr"),
    )
    .expect("corpus");
    let answer = spill(&text, "p", 7);
    assert_eq!(answer.destination, "registers of r");
    assert_eq!((answer.cost, answer.status), (2.0, Status::Optimal));
}

/// %far is live through a loop (frequency 10) that needs both registers: stored once
/// before the loop and reloaded once after it (16), never inside (88 and more).
#[test]
fn spill_code_stays_out_of_the_loop_where_it_can() {
    let text = "target generic v=8
func @f {
entry:
  %far:v1 = load 0 reads
  %x0:v1 = load 1 reads
  jump loop
loop:
  %x:v1 = phi [entry: %x0], [loop: %x1]
  %t:v1 = load 2 reads
  %x1:v1 = add %x, %t
  %c:v1 = cmp %x1
  branch uniform %c, loop, exit
exit:
  %y:v1 = add %x1, %far
  ret %y
}";
    let answer = spill(text, "v", 2);
    assert_eq!((answer.cost, answer.status), (16.0, Status::Optimal));
}

/// An operand tied to a definition and live afterwards is copied: two values are live
/// across the instruction and the copy takes a third register, so at 2 registers %a
/// must be out of registers there (a store and a reload), at 3 nothing is spilled.
#[test]
fn a_tied_operand_that_lives_on_takes_a_register_for_its_copy() {
    let text = "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = mac %a, %b tied(0)
  %d:v1 = add %c, %a
  ret %d
}";
    assert_eq!(spill(text, "v", 3).cost, 0.0);
    assert_eq!(spill(text, "v", 2).cost, 16.0);
}

/// %x, pushed out of registers by the latch, enters the loop header both as a live-in
/// and as the argument of %p: reloaded once at the end of the latch (frequency 10) for
/// both, after one store: 8 + 80.
#[test]
fn a_value_feeding_a_live_in_and_a_phi_on_one_edge_is_reloaded_once() {
    let text = "target generic v=8
func @f {
entry:
  %x:v1 = load 0 reads
  jump head
head:
  %p:v1 = phi [entry: %x], [latch: %x]
  %u:v1 = add %x, %p
  %c:v1 = cmp %u
  branch uniform %c, latch, exit
latch:
  %a:v1 = load 1 reads
  %b:v1 = load 2 reads
  %d:v1 = add %a, %b
  store %d writes
  jump head
exit:
  ret %x
}";
    let answer = spill(text, "v", 2);
    assert_eq!((answer.cost, answer.status), (88.0, Status::Optimal));
}
