//! Spill statistics read from allocated programs: exact counts and frequency-weighted costs
//! on hand-written allocations (the fixtures of `tests/allocated/` and one below), each
//! checked by the verifier first so the numbers describe real allocations.

use chromatic::alloc::stats::collect;
use chromatic::alloc::{allocate, budget_of, AllocOptions, Allocator, ClassStats, FunctionStats};
use chromatic::analysis::Analysis;
use chromatic::{parse, Program};
use chromatic_verifier::verify_program;
use std::path::PathBuf;

fn read(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Stats of the first function of a verified allocation.
fn stats_of(original: &str, allocated: &str) -> FunctionStats {
    let (p, a): (Program, Program) = (parse(original).unwrap(), parse(allocated).unwrap());
    let budget = budget_of(&p.target, &AllocOptions::default()).unwrap();
    let errors = verify_program(&p, &a, Some(&budget));
    assert!(errors.is_empty(), "{}", errors[0]);
    let analysis = Analysis::new(&p.functions[0], &p.target);
    collect(&p.functions[0], &a.functions[0], &p.target, &analysis, 0)
}

fn class<'s>(stats: &'s FunctionStats, name: &str) -> &'s ClassStats {
    stats.classes.iter().find(|c| c.class == name).unwrap()
}

/// (spills, lane_spills, class_spills, reloads, remats, spill_cost)
fn spill_code(c: &ClassStats) -> (u32, u32, u32, u32, u32, f64) {
    (
        c.spills,
        c.lane_spills,
        c.class_spills,
        c.reloads,
        c.remats,
        c.spill_cost,
    )
}

/// gfx9 costs 16 per unit for memory, 1 for lanes and remat. %one: stored in entry (16),
/// reloaded in the loop (16 × 10); %big: to a lane and back (1 + 1); %mask: a 2-unit
/// remat (2). The lane register v9 counts as a VGPR used.
#[test]
fn remat_constants_fixture() {
    let s = stats_of(
        &read("corpus/remat_constants.chr"),
        &read("tests/allocated/remat_constants.chr"),
    );
    assert_eq!(spill_code(class(&s, "v")), (1, 0, 0, 1, 0, 176.0));
    assert_eq!(spill_code(class(&s, "s")), (0, 1, 0, 1, 1, 4.0));
    assert_eq!((s.spill_slots, s.lane_registers), (1, 1));
    assert_eq!(class(&s, "v").regs_used, 10);
    assert_eq!(s.occupancy, Some(10));
}

/// A predicate spilled into a 32-bit register and back: class moves, cost 1 each.
#[test]
fn ptx_predicates_fixture() {
    let s = stats_of(
        &read("corpus/ptx_predicates.chr"),
        &read("tests/allocated/ptx_predicates.chr"),
    );
    assert_eq!(spill_code(class(&s, "p")), (0, 0, 1, 1, 0, 2.0));
    assert_eq!(spill_code(class(&s, "r")), (0, 0, 0, 0, 0, 0.0));
    assert_eq!((s.spill_slots, s.lane_registers), (0, 0));
    assert_eq!(class(&s, "r").regs_used, 3);
}

const MIX: &str = "target gfx9

func @spill_mix {
entry:
  %a:v2 = global_load_dwordx2 reads
  %k:s1 = s_mov_b32 7 remat
  %u:s1 = s_load_dword reads
  %w:s1 = s_load_dword reads
  jump body
body freq=50:
  %t:v1 = v_mov_b32 0
  %x:v1 = v_add_f32 %t, %t
  jump exit
exit freq=2:
  %y:v1 = v_mul_f32 %x, %a
  %z:s1 = s_add_u32 %u, %w
  %q:s1 = s_add_u32 %z, %k
  exp %y, %q, %a writes
  ret
}
";

const MIX_ALLOCATED: &str = "target gfx9

func @spill_mix {
entry:
  %a:v2@v[0:1] = global_load_dwordx2 reads
  %k:s1@s0 = s_mov_b32 7 remat
  %u:s1@s1 = s_load_dword reads
  %w:s1@s2 = s_load_dword reads
  spill m[2:3] <- v[0:1] %a
  spill v9.l0 <- s1 %u
  spill v10.l3 <- s2 %w
  jump body
body freq=50:
  %t:v1@v0 = v_mov_b32 0
  parallel_copy m5 <- v0 %t
  parallel_copy v1 <- m5 %t
  %x:v1@v2 = v_add_f32 %t@v0, %t@v1
  jump exit
exit freq=2:
  reload v[0:1] <- m[2:3] %a
  reload s1 <- v9.l0 %u
  reload s2 <- v10.l3 %w
  remat s3 <- %k
  %y:v1@v3 = v_mul_f32 %x@v2, %a@v[0:1]
  %z:s1@s1 = s_add_u32 %u@s1, %w@s2
  %q:s1@s1 = s_add_u32 %z@s1, %k@s3
  exp %y@v3, %q@s1, %a@v[0:1] writes
  ret
}
";

/// A 2-unit memory spill costs 16 × 2 in entry and its reload 16 × 2 × 2 in `exit`
/// (freq=2); two SGPRs go to lanes of two registers (1 each way, reloads × 2) and one is
/// rematerialised (1 × 2). Slots m2, m3 (the spill) and m5 (a copy through memory) are
/// three; the copy back from m5 is a VGPR copy weighted by `body`'s freq=50.
#[test]
fn mixed_spill_code_with_block_frequencies() {
    let s = stats_of(MIX, MIX_ALLOCATED);
    assert_eq!(spill_code(class(&s, "v")), (1, 0, 0, 1, 0, 96.0));
    assert_eq!(spill_code(class(&s, "s")), (0, 2, 0, 2, 1, 8.0));
    assert_eq!((s.spill_slots, s.lane_registers), (3, 2));
    let v = class(&s, "v");
    assert_eq!((v.copies, v.weighted_copies, v.regs_used), (1, 50.0, 11));
    assert_eq!(class(&s, "s").regs_used, 4);
}

/// Allocation reads the input's operation count from its blocks' lengths (every allocator
/// refuses an input that holds allocation's own instructions): each of ours reports
/// `Function::op_count` of the input, on a corpus program and a synthetic one.
#[test]
fn every_allocator_reports_the_inputs_operation_count() {
    let synthetic = chromatic::synth::synthetic(1_000);
    for text in [read("corpus/divergent_loop.chr"), synthetic] {
        let p = parse(&text).unwrap();
        for allocator in Allocator::OURS {
            let opts = AllocOptions {
                allocator,
                ..AllocOptions::default()
            };
            let (_, stats) = allocate(&p, &opts).unwrap();
            for (f, s) in p.functions.iter().zip(&stats) {
                assert_eq!(s.instructions, f.op_count(), "{allocator}: @{}", f.name);
            }
        }
    }
}
