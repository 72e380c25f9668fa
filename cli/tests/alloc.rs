//! The production allocator, feature by feature, on corpus programs: exact locations and
//! copy counts, every allocation checked by the independent verifier and the interpreter.

use chromatic::alloc::{allocate, AllocError, AllocOptions, ClassStats, Policy};
use chromatic::{parse, print, Program};
use chromatic_verifier::interp::{run, Config};
use std::path::PathBuf;

fn corpus(name: &str) -> Program {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(name);
    parse(&std::fs::read_to_string(&path).expect("corpus file")).expect("corpus parses")
}

fn corpus_names() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".chr"))
        .collect();
    names.sort();
    names
}

/// Allocates and insists on a verified, trace-equivalent result.
fn allocate_verified(
    p: &Program,
    opts: &AllocOptions,
) -> (Program, Vec<chromatic::alloc::FunctionStats>) {
    let (a, stats) = allocate(p, opts).unwrap_or_else(|e| panic!("{e}"));
    let budget = chromatic::alloc::budget_of(&p.target, opts).unwrap();
    let errors = chromatic_verifier::verify_program(p, &a, Some(&budget));
    assert!(errors.is_empty(), "{}\n{}", errors[0], print(&a));
    for (f, g) in p.functions.iter().zip(&a.functions) {
        for seed in 0..4 {
            let config = Config {
                seed,
                ..Config::default()
            };
            let (x, y) = (run(f, &p.target, &config), run(g, &a.target, &config));
            assert_eq!(x.first_divergence(&y), None, "seed {seed}\n{}", print(&a));
        }
    }
    (a, stats)
}

fn class<'s>(stats: &'s [ClassStats], name: &str) -> &'s ClassStats {
    stats
        .iter()
        .find(|c| c.class == name)
        .expect("class in stats")
}

fn line_with<'t>(text: &'t str, needle: &str) -> &'t str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle}:\n{text}"))
}

#[test]
fn three_phi_cycle_lowers_to_two_swaps() {
    let (a, stats) = allocate_verified(&corpus("swap_cycle3.chr"), &AllocOptions::default());
    let v = class(&stats[0].classes, "v");
    assert_eq!((v.copies, v.swaps, v.regs_used), (0, 2, 3));
    assert_eq!(print(&a).matches("  swap ").count(), 2);
}

/// Minimum-registers mode on `r`, a class without a swap: the least budget at which the
/// packing model fits, plus one unit that lets every copy cycle break through a register.
/// With the whole file as budget, the quads of vector loads found no aligned window below
/// the split parts that outlive them; at the least budget the parts move instead.
#[test]
fn least_budget_on_a_class_without_swap_keeps_quads_within_max_live() {
    let p = corpus("ptx_split_quads.chr");
    let (_, stats) = allocate_verified(&p, &AllocOptions::default());
    let r = class(&stats[0].classes, "r");
    assert!(u32::from(r.regs_used) <= r.max_live + 1, "{r:?}");
    assert_eq!(
        (r.spills, r.reloads, stats[0].spill_slots),
        (0, 0, 0),
        "{r:?}"
    );
    let whole_file = AllocOptions {
        budget: vec![("r".into(), 255)],
        ..AllocOptions::default()
    };
    let (_, stats) = allocate_verified(&p, &whole_file);
    let r = class(&stats[0].classes, "r");
    assert!(
        u32::from(r.regs_used) > r.max_live + 1,
        "the case needs the least budget: {r:?}"
    );
}

#[test]
fn cycle_without_swap_goes_through_a_free_register() {
    let (_, stats) = allocate_verified(&corpus("swap_cycle3_noswap.chr"), &AllocOptions::default());
    let v = class(&stats[0].classes, "v");
    assert_eq!(
        (v.copies, v.swaps, v.regs_used),
        (4, 0, 4),
        "3 moves + 1 save of the cycle"
    );
}

/// A cycle of AGPRs (gfx942 has no AGPR swap) exchanged by fixed operands while every
/// AGPR of the budget is taken: its temporary is a VGPR, which must be one no live value
/// holds, although no VGPR is moved at that instruction (it took `v0`, holding `%tid`).
#[test]
fn an_agpr_cycle_goes_through_a_vgpr_no_live_value_holds() {
    let src = "target gfx942
func @agpr_cycle {
entry:
  %tid:v1 fixed(v0) = COPY
  %v1:v1 = V_MOV_B32 1
  %v2:v1 = V_MOV_B32 2
  %v3:v1 = V_MOV_B32 3
  %p:a1 fixed(a0) = V_ACCVGPR_WRITE 0
  %q:a1 fixed(a1) = V_ACCVGPR_WRITE 1
  %r:a1 = V_INTRINSIC %p fixed(a1), %q fixed(a0)
  %w:v1 = V_ADD %v1, %v2
  %z:v1 = V_ADD %w, %v3
  %s:v1 = V_ADD %z, %tid
  %out:v1 = COPY %r
  %o2:v1 = V_ADD %out, %s
  GLOBAL_STORE_DWORD %tid, %o2 writes
  ret
}
";
    let p = parse(src).unwrap_or_else(|e| panic!("{e}"));
    for v in [4, 5, 8] {
        let opts = AllocOptions {
            budget: vec![("v".into(), v), ("a".into(), 2)],
            ..AllocOptions::default()
        };
        let (_, stats) = allocate_verified(&p, &opts);
        let a = class(&stats[0].classes, "a");
        // At v=4 all four VGPRs hold live values, so the cycle goes through a slot.
        let through_memory = u32::from(v == 4);
        assert_eq!((a.spills, a.regs_used), (through_memory, 2), "v={v}");
    }
}

#[test]
fn fragmented_tuple_exchanges_with_dying_operands() {
    let (a, stats) = allocate_verified(&corpus("fragmentation.chr"), &AllocOptions::default());
    let text = print(&a);
    assert!(
        line_with(&text, "load.v4").starts_with("  %q:v4@v[0:3] = load.v4"),
        "{text}"
    );
    let v = class(&stats[0].classes, "v");
    assert_eq!((v.swaps, v.copies, v.regs_used, v.max_live), (2, 0, 8, 8));
}

#[test]
fn full_fragmented_file_is_compacted_for_a_tuple() {
    let (a, stats) = allocate_verified(&corpus("compaction.chr"), &AllocOptions::default());
    let text = print(&a);
    assert_eq!(
        line_with(&text, "parallel_copy"),
        "  parallel_copy v[2:3] <- v[3:4] %c",
        "{text}"
    );
    let v = class(&stats[0].classes, "v");
    assert_eq!((v.copies, v.regs_used, v.max_live), (1, 6, 6));
}

#[test]
fn fixed_register_conflict_moves_the_occupant() {
    let (a, stats) = allocate_verified(&corpus("fixed_conflict.chr"), &AllocOptions::default());
    let text = print(&a);
    assert!(
        line_with(&text, "v_intrinsic").starts_with("  %c:v1 fixed(v0)@v0"),
        "{text}"
    );
    assert!(
        line_with(&text, "v_call").contains("%d@v0")
            || text.contains("<- v")
            || text.contains("swap v"),
        "{text}"
    );
    assert!(
        line_with(&text, "ret").contains("%e fixed(v0)@v0"),
        "{text}"
    );
    let v = class(&stats[0].classes, "v");
    assert!(v.copies + v.swaps >= 1);
}

#[test]
fn tied_operand_still_live_is_copied_first() {
    let (a, stats) = allocate_verified(&corpus("tied_still_live.chr"), &AllocOptions::default());
    let text = print(&a);
    let inc = line_with(&text, "= inc");
    let copy = text
        .lines()
        .take_while(|l| !l.contains("= inc"))
        .last()
        .unwrap_or_default();
    assert!(
        copy.starts_with("  parallel_copy") && copy.ends_with("%x"),
        "{copy}"
    );
    let tied_at = inc
        .split('@')
        .nth(1)
        .unwrap_or_default()
        .split(' ')
        .next()
        .unwrap_or_default();
    assert!(
        inc.contains(&format!("%x@{tied_at} tied(0)")),
        "def and tied use share {tied_at}: {inc}"
    );
    assert_eq!(class(&stats[0].classes, "v").copies, 2);
}

#[test]
fn uniform_value_live_through_divergent_then_side_is_kept_apart() {
    let (a, stats) = allocate_verified(
        &corpus("divergent_uniform_live_through_else.chr"),
        &AllocOptions::default(),
    );
    let s = class(&stats[0].classes, "s");
    assert_eq!((s.max_live, s.regs_used, s.copies), (8, 8, 0));
    let text = print(&a);
    let desc = line_with(&text, "%desc:s4@");
    assert!(desc.contains("@s[0:3]"), "{desc}");
    for def in ["%t0:s2@", "%t1:s1@"] {
        let l = line_with(&text, def);
        assert!(
            !l.contains("@s0 ") && !l.contains("@s[0:1]") && !l.contains("@s[2:3]"),
            "{l}"
        );
    }
}

#[test]
fn budget_below_pressure_spills_and_below_the_lowest_legal_is_a_positioned_error() {
    let p = corpus("high_pressure_block.chr");
    let at = |k: u16| AllocOptions {
        budget: vec![("v".into(), k)],
        policy: Policy::Dense,
        ..AllocOptions::default()
    };
    let (a, stats) = allocate_verified(&p, &at(40));
    let v = stats[0].classes.iter().find(|c| c.class == "v").unwrap();
    assert!(v.regs_used <= 40, "{}", v.regs_used);
    let spills = a.functions[0]
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| matches!(i.kind, chromatic::InstKind::Spill(_)))
        .count();
    assert!(spills > 0, "{}", print(&a));
    let lowest = chromatic::alloc::spill::minimum::lowest_legal(&p.functions[0], &p.target);
    let needed = lowest[p.target.class_by_name("v").unwrap().index()];
    let err = allocate(&p, &at(needed.units as u16 - 1)).unwrap_err();
    assert!(
        matches!(err, AllocError::BelowLowest { needed: n, .. } if n == needed.units),
        "{err}"
    );
    assert_eq!(err.pos(), Some(needed.pos));
    assert!(
        err.to_string().contains("the lowest legal budget is"),
        "{err}"
    );
}

#[test]
fn unknown_budget_class_is_an_error() {
    let opts = AllocOptions {
        budget: vec![("q".into(), 4)],
        policy: Policy::Dense,
        ..AllocOptions::default()
    };
    let err = allocate(&corpus("straight_line.chr"), &opts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the budget names class `q`, which the target does not have"
    );
}

/// Classes whose values are all single units and carry no fixed register reach the SSA
/// optimum: registers used == MaxLive. Other classes are reported, never hidden.
#[test]
fn scalar_classes_use_exactly_max_live_registers() {
    let mut exceptions = Vec::new();
    for name in corpus_names() {
        let p = corpus(&name);
        let Ok((_, stats)) = allocate(&p, &AllocOptions::default()) else {
            continue;
        };
        for (f, s) in p.functions.iter().zip(&stats) {
            let spilled = s.classes.iter().any(|c| {
                let id = p.target.class_by_name(&c.class).unwrap();
                c.max_live > u32::from(p.target.class(id).units)
            });
            for c in &s.classes {
                let id = p.target.class_by_name(&c.class).unwrap();
                let constrained = f.values.iter().any(|v| v.class == id && v.size > 1)
                    || has_fixed(f, id)
                    || spilled;
                if constrained {
                    if u32::from(c.regs_used) != c.max_live {
                        exceptions.push(format!(
                            "{name} {} {}: {} > {}",
                            f.name, c.class, c.regs_used, c.max_live
                        ));
                    }
                } else {
                    assert_eq!(
                        u32::from(c.regs_used),
                        c.max_live,
                        "{name} @{} class {}",
                        f.name,
                        c.class
                    );
                }
            }
        }
    }
    println!("tuple/fixed exceptions: {exceptions:#?}");
}

fn has_fixed(f: &chromatic::Function, class: chromatic::ClassId) -> bool {
    f.blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.op())
        .any(|op| {
            op.defs
                .iter()
                .any(|d| d.fixed.is_some() && f.value(d.value).class == class)
                || op
                    .uses()
                    .any(|u| u.fixed.is_some() && f.value(u.value).class == class)
        })
        || f.blocks
            .iter()
            .flat_map(|b| b.term.uses())
            .any(|u| u.fixed.is_some() && f.value(u.value).class == class)
}

#[test]
fn whole_corpus_verifies_under_both_policies() {
    for policy in [Policy::Dense, Policy::RoundRobin] {
        let opts = AllocOptions {
            budget: Vec::new(),
            policy,
            ..AllocOptions::default()
        };
        for name in corpus_names() {
            let p = corpus(&name);
            match allocate(&p, &opts) {
                Ok(_) => {
                    allocate_verified(&p, &opts);
                }
                Err(AllocError::Pressure { class, .. }) => {
                    assert!(
                        ["ptx_predicates.chr", "gen9_flags.chr"].contains(&name.as_str()),
                        "{name}: {class}"
                    );
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
    }
}

#[test]
fn every_corpus_program_fits_its_max_live_budget_or_reports_why() {
    for name in corpus_names() {
        let p = corpus(&name);
        let f = &p.functions[0];
        let a = chromatic::analysis::Analysis::new(f, &p.target);
        let budget: Vec<(String, u16)> = p
            .target
            .class_ids()
            .map(|c| {
                (
                    p.target.class(c).name.clone(),
                    (a.pressure.max_live(c) as u16).clamp(1, p.target.class(c).units),
                )
            })
            .collect();
        let opts = AllocOptions {
            budget,
            policy: Policy::Dense,
            ..AllocOptions::default()
        };
        match allocate(&p, &opts) {
            Ok(_) => {
                allocate_verified(&p, &opts);
            }
            Err(e) => {
                let message = e.to_string();
                let explained = matches!(
                    e,
                    AllocError::Pressure { .. }
                        | AllocError::Constraint { .. }
                        | AllocError::BelowLowest { .. }
                );
                assert!(explained, "{name}: {message}");
                println!("{name}: at budget = MaxLive: {message}");
            }
        }
    }
}

#[test]
fn fixed_operands_that_trade_registers_swap_once() {
    let src = "target gfx9\nfunc @f {\nentry:\n  %a:v1 fixed(v0) = mov 1\n  %b:v1 fixed(v1) = mov 2\n  %c:v1 = call %a fixed(v1), %b fixed(v0)\n  ret %c, %a, %b\n}\n";
    let (a, stats) = allocate_verified(&parse(src).unwrap(), &AllocOptions::default());
    let text = print(&a);
    assert!(
        text.contains("  swap v1, v0\n  %c:v1@v2 = call %a fixed(v1)@v1, %b fixed(v0)@v0\n"),
        "{text}"
    );
    assert_eq!(class(&stats[0].classes, "v").swaps, 1);
}

#[test]
fn two_defs_tied_to_one_dying_value_get_a_copy() {
    let (a, stats) = allocate_verified(
        &corpus("tied_twice_same_value.chr"),
        &AllocOptions::default(),
    );
    let text = print(&a);
    assert_eq!(
        line_with(&text, "= load"),
        "  %x:v1@v0, %y:v1@v1 = load %a@v0, %a@v1 tied(0) tied(1=1) reads",
        "{text}"
    );
    assert_eq!(
        line_with(&text, "parallel_copy"),
        "  parallel_copy v1 <- v0 %a"
    );
    let v = class(&stats[0].classes, "v");
    assert_eq!((v.copies, v.regs_used, v.max_live), (1, 2, 2));
}

#[test]
fn fixed_use_overwritten_by_a_fixed_def_reads_a_copy() {
    let (a, _) = allocate_verified(
        &corpus("fixed_use_overwritten.chr"),
        &AllocOptions::default(),
    );
    let text = print(&a);
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("entry:"))
        .collect();
    let want = [
        "entry:",
        "  %a:v1@v0 = arg 0",
        "  %b:v1 fixed(v2)@v2 = arg 1",
        "  parallel_copy v1 <- v2 %b",
        "  parallel_copy v2 <- v0 %a",
        "  %c:v1 fixed(v2)@v2 = mul %a fixed(v2)@v2, %b@v1",
        "  parallel_copy v3 <- v2 %c",
        "  %d:v1 fixed(v3)@v3 = mul %c fixed(v3)@v3, %a@v0",
        "  %e:v1@v0 = add %a@v0, %c@v2, %d@v3",
    ];
    assert_eq!(body[..want.len()], want, "{text}");
}

#[test]
fn value_fixed_to_two_registers_reaches_the_second_as_a_copy() {
    let (a, _) = allocate_verified(
        &corpus("value_fixed_to_two_registers.chr"),
        &AllocOptions::default(),
    );
    let text = print(&a);
    assert!(
        line_with(&text, "= mul").contains("%a fixed(v3)@v3, %b@v1, %a fixed(v5)@v5"),
        "{text}"
    );
}

#[test]
fn uniform_copies_go_before_a_divergent_branch_to_its_join() {
    let (a, _) = allocate_verified(
        &corpus("uniform_copies_before_divergent_branch.chr"),
        &AllocOptions::default(),
    );
    let f = &a.functions[0];
    assert_eq!(f.blocks.len(), 4, "no edge split:\n{}", print(&a));
}

/// Programs the allocator must reject with an error naming the problem, never allocate.
fn rejected(src: &str, why: &str) {
    match allocate(&parse(src).unwrap(), &AllocOptions::default()) {
        Err(e @ (AllocError::Constraint { .. } | AllocError::Invalid { .. })) => {
            let message = e.to_string();
            assert!(message.contains(why), "{message}")
        }
        other => panic!("expected a rejection ({why}), got {other:?}"),
    }
}

#[test]
fn then_side_looping_back_past_a_pending_else_side_is_rejected() {
    // Every iteration of `head` leaves lanes pending in `other`; they run back to back
    // after the loop, an order the linear CFG has no edge for.
    let src = "target gfx10-w32\nfunc @f {\nentry:\n  %u:s1 = arg 0\n  %p:v1 = arg 1\n  jump head\nhead:\n  %c:s1 = mul %u\n  branch divergent %p, again, other\nagain:\n  branch uniform %c, exit, head\nother:\n  %d:s1 = mul %c, %u\n  jump exit\nexit:\n  ret\n}\n";
    rejected(
        src,
        "the then-side starting at `again` loops back to the branch",
    );
}

#[test]
fn uniform_value_bypassed_on_the_linear_cfg_is_rejected() {
    // `x` lies in the then-region of `b` but is also entered from `entry`, so the linear
    // edge `x → e` reaches the use of `%s` around its definition.
    let src = "target generic s=8 v=8\nfunc @f {\nentry:\n  %q:s1 = arg 0\n  %p:v1 = arg 1\n  branch uniform %q, b, x\nb:\n  %s:s1 = mul %q\n  branch divergent %p, t, e\nt:\n  jump x\nx:\n  jump j\ne:\n  %y:s1 = mul %s\n  jump j\nj:\n  ret\n}\n";
    rejected(
        src,
        "uniform `%s` is not defined on every path of the linear CFG",
    );
}

#[test]
fn two_values_fixed_to_overlapping_registers_are_rejected() {
    let src = "target generic q=12\nfunc @f {\nentry:\n  %a:q1 = arg 0\n  %b:q1 = arg 1\n  %c:q1 = mma.sync %a fixed(q5), %b fixed(q5)\n  ret %a\n}\n";
    rejected(src, "`%a` and `%b` are fixed to overlapping registers");
}

/// The spiller counts what assignment needs at an instruction — fixed registers, copies
/// read by fixed uses, late definitions — so a full file spills around the instruction
/// instead of failing: each of these needs one more unit than the values it keeps alive.
fn spills_around(src: &str, class: &str) {
    let p = parse(src).unwrap();
    let (a, stats) = allocate_verified(&p, &AllocOptions::default());
    let c = class_named(&stats[0].classes, class);
    assert!(c.spills + c.reloads > 0, "{}", print(&a));
    assert_eq!(stats[0].retries, 0);
}

fn class_named<'s>(stats: &'s [ClassStats], name: &str) -> &'s ClassStats {
    class(stats, name)
}

#[test]
fn operand_read_from_a_fixed_register_beside_a_full_file_spills_around() {
    // %e is defined in f3 while %a, %c, %d live on and %b is read from f1: five units.
    spills_around("target gen9\nfunc @f {\nentry:\n  %a:f1 = cmp 0\n  %b:f1 = cmp 1\n  %c:f1 = cmp 2\n  %d:f1 = cmp 3\n  %e:f1 fixed(f3) = store %b, %b fixed(f1) writes\n  ret %a, %c, %d, %e\n}\n", "f");
}

#[test]
fn operand_read_in_place_and_overwritten_spills_around() {
    // %a is read from p0, which the def overwrites, and lives on: four units in three.
    spills_around("target generic p=3\nfunc @f {\nb0:\n  %a:p1 = arg 0\n  %b:p1 = arg 1\n  %c:p1 = arg 2\n  %d:p1 fixed(p0) = mma.sync %a fixed(p0), %b\n  ret %a, %c, %d\n}\n", "p");
}

#[test]
fn a_copy_read_for_a_second_fixed_register_spills_around() {
    // %y is read at q2 and through a copy at q0 while %z and %w live on and %d lands in q3.
    spills_around("target generic q=4:uniform\nfunc @f {\nentry:\n  %x:q1 = mul 1\n  %y:q1 = mul 2\n  %z:q1 = mul 3\n  %w:q1 = mul 4\n  store %x writes\n  %d:q1 fixed(q3) = split %y, %y fixed(q2), %y fixed(q0)\n  %e:q1 = add %z, %d, %w\n  ret %e\n}\n", "q");
}

#[test]
fn a_branch_sharing_its_join_returns_uniform_values_where_the_enclosing_branch_left_them() {
    // `side` shares its join with the branch in `entry`. When no lane takes `side`'s
    // else-side the wave goes on to `join` from `side`'s then-side, and `join` expects
    // %u and %w where `entry` left them: the fixed uses of `mul` trade them, and they
    // trade back before `side`'s branch.
    let opts = AllocOptions {
        budget: vec![("s".into(), 2)],
        ..AllocOptions::default()
    };
    let p = corpus("uniform_copies_before_divergent_branch.chr");
    let (a, _) = allocate_verified(&p, &opts);
    let text = print(&a);
    let side: Vec<&str> = text.lines().skip_while(|l| *l != "side:").take(5).collect();
    assert_eq!(
        side[1..],
        [
            "  swap s1, s0",
            "  %x:v1@v0 = mul %u fixed(s1)@s1, %w fixed(s0)@s0",
            "  swap s1, s0",
            "  branch divergent %x@v0, tail, join",
        ],
        "{text}"
    );
}

/// A latch whose divergent branch exits the loop through a then-side `b3` and loops back
/// on its else-edge to `b1`, whose uniform phi takes `%w` from the latch. On the linear
/// CFG `b3` falls into `b1` carrying the latch's phi arguments, so the phi's location must
/// hold `%w` through `b3`.
const ELSE_ARM_PHI: &str = "target generic a=4:uniform v=4\nfunc @f {\nb0:\n  %k:a1 = arg 0\n  %x:a1 = arg 1\n  %c:v1 = arg 2\n  jump b1\nb1:\n  %ph:a1 = phi [b0: %x], [b2: %w]\n  %w:a1 = add %ph, %k\n  %y:a1 = add %w\nTHEN_LOOP\n  branch divergent %c, b4, b2\nb2:\n  branch divergent %c, b3, b1\nb3:\nTHEN_SIDE\n  jump b4\nb4:\n  ret\n}\n";

/// The latch's arguments reach `b1` on the linear CFG through `b3` (the then-side falls
/// into the else-arm, a block splitting `b2 → b1` that holds the phi copies), so they are
/// live through `b3` and nothing there overwrites them.
#[test]
fn then_side_moving_a_value_the_else_arm_needs_back_allocates() {
    // %k moves to a1 for its fixed use and lives on there into b3, where it is read.
    let src = ELSE_ARM_PHI
        .replace("THEN_LOOP", "  add %k fixed(a1)")
        .replace("THEN_SIDE", "  add %k");
    allocate_verified(&parse(&src).unwrap(), &AllocOptions::default());
}

#[test]
fn then_side_definitions_leave_the_else_arm_phi_arguments_alone() {
    let src = ELSE_ARM_PHI
        .replace("THEN_LOOP", "")
        .replace("THEN_SIDE", "  %z:a1 = const 5\n  add %z, %k");
    allocate_verified(&parse(&src).unwrap(), &AllocOptions::default());
}

#[test]
fn then_side_of_a_latch_with_a_moved_per_lane_value_allocates() {
    let src = ELSE_ARM_PHI
        .replace("%c:v1 = arg 2", "%c:v1 = arg 2\n  %m:v1 = arg 3")
        .replace("THEN_LOOP", "  add %k fixed(a1)\n  add %m fixed(v2)")
        .replace("THEN_SIDE", "  add %k");
    allocate_verified(&parse(&src).unwrap(), &AllocOptions::default());
}

#[test]
fn then_side_leaving_an_else_arm_phi_alone_allocates() {
    let src = ELSE_ARM_PHI
        .replace("THEN_LOOP", "")
        .replace("THEN_SIDE", "  add %k");
    allocate_verified(&parse(&src).unwrap(), &AllocOptions::default());
}

/// In a region nothing branches to, an operand that lives on into the next block must
/// still leave the registers after an instruction whose late definitions need them all:
/// next-use distances cover unreachable regions too (they were `never` there, so the
/// operand looked dead, was kept, and the spiller found nothing to evict).
#[test]
fn unreachable_regions_are_spilled_like_any_other() {
    let p = parse(
        "target generic v=16:aligned
func @f {
b0:
  %x:v1 = load 0 reads
  ret %x
b1:
  %a:v1 = load 1 reads
  %b:v2 = load 2 reads
  %c:v16 = mul %b, %a
  store %c writes
  jump b2
b2:
  %d:v1 = add %a, %b
  ret %d
}
",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let opts = AllocOptions {
        budget: vec![("v".to_string(), 16)],
        ..AllocOptions::default()
    };
    allocate_verified(&p, &opts);
}

/// Where `v` is defined in the first function of `a`.
fn def_location(a: &Program, name: &str) -> chromatic::Location {
    let f = &a.functions[0];
    let ops = f
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter_map(|i| i.op());
    let defs = ops.flat_map(|op| &op.defs);
    let d = defs.into_iter().find(|d| f.value(d.value).name == name);
    d.and_then(|d| d.loc).expect("defined and placed")
}

/// A pinned value may never move, so it is placed away from the register a later fixed
/// operand needs while it lives (here `v1`), at every budget down to the lowest legal.
#[test]
fn pinned_value_leaves_free_the_registers_fixed_operands_claim_while_it_lives() {
    let src = "target generic v=8\nfunc @f {\nentry:\n  %a:v2 = start 0 pinned\n  %x:v1 = load 0 reads\n  %y:v1 = use %x fixed(v1)\n  %d:v2 = wait %a barrier\n  store %y, %d writes\n  ret\n}\n";
    let p = parse(src).unwrap();
    for budget in [None, Some(8), Some(4)] {
        let opts = AllocOptions {
            budget: budget.map(|k| vec![("v".into(), k)]).unwrap_or_default(),
            ..AllocOptions::default()
        };
        let (a, _) = allocate_verified(&p, &opts);
        let chromatic::Location::Reg { first, len, .. } = def_location(&a, "a") else {
            panic!("%a in a register:\n{}", print(&a));
        };
        assert!(!(first..first + len).contains(&1), "{}", print(&a));
    }
}

/// A pinned value read by a fixed use in another block is defined in that register,
/// also when its definition is itself a constrained instruction.
#[test]
fn pinned_value_is_defined_where_its_own_fixed_use_reads_it() {
    let src = "target generic v=8\nfunc @f {\nentry:\n  %x:v1 = load 0 reads\n  %a:v2 = start %x fixed(v0) pinned\n  %y:v1 = load 1 reads\n  jump loop\nloop:\n  %i:v1 = phi [entry: %y], [loop: %j]\n  %j:v1 = use %i fixed(v2)\n  %c:v1 = load 2 reads\n  branch uniform %c, loop, exit\nexit:\n  %d:v2 = wait %a fixed(v[4:5]) barrier\n  store %d writes\n  ret\n}\n";
    let (a, _) = allocate_verified(&parse(src).unwrap(), &AllocOptions::default());
    let at = chromatic::print::location(&a.target, def_location(&a, "a"));
    assert_eq!(at, "v[4:5]", "{}", print(&a));
}

/// Where a pinned value is needed in a register another fixed operand claims while it
/// lives, no allocation exists: the program is refused, naming the value.
#[test]
fn pinned_value_needed_in_a_claimed_register_is_rejected() {
    let src = "target generic v=8\nfunc @f {\nentry:\n  %a:v2 = start 0 pinned\n  %x:v1 = load 0 reads\n  %y:v1 = use %x fixed(v4)\n  %d:v2 = wait %a fixed(v[4:5]) barrier\n  store %y, %d writes\n  ret\n}\n";
    rejected(src, "`%a` is pinned in v[0:1]");
}
