//! The checker on hand-written allocations: correct ones accepted, one wrong allocation per
//! error kind rejected with the exact kind, place and operand.

use chromatic_verifier::{verify, verify_program, ErrorKind, Point, VerifyError};

fn check(original: &str, allocated: &str) -> Vec<VerifyError> {
    let o = chromatic::parse(original).expect("original parses");
    let a = chromatic::parse(allocated).expect("allocated parses");
    verify_program(&o, &a, None)
}

fn check_budget(original: &str, allocated: &str, budget: &[u16]) -> Vec<VerifyError> {
    let o = chromatic::parse(original).expect("original parses");
    let a = chromatic::parse(allocated).expect("allocated parses");
    verify_program(&o, &a, Some(budget))
}

/// Asserts exactly one error, of `kind`, at `block`/`point`, on `operand`.
fn assert_one(errors: &[VerifyError], kind: ErrorKind, block: &str, point: Point, operand: &str) {
    assert_eq!(errors.len(), 1, "errors: {errors:#?}");
    let e = &errors[0];
    assert_eq!(
        (e.kind, e.block.as_str(), e.point),
        (kind, block, point),
        "{e}"
    );
    assert_eq!(e.operand.as_deref().unwrap_or(""), operand, "{e}");
}

const STRAIGHT: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = v_mov 1
  %b:v1 = v_mov 2
  %c:v1 = v_add %a, %b
  ret %c
}
";

#[test]
fn straight_line_correct() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v1
  ret %c@v0
}
";
    assert_eq!(check(STRAIGHT, a), vec![]);
}

#[test]
fn use_of_wrong_register_is_wrong_value() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@v1, %b@v1
  ret %c@v0
}
";
    let errors = check(STRAIGHT, a);
    assert_one(
        &errors,
        ErrorKind::WrongValue,
        "entry",
        Point::Inst(2),
        "use 0",
    );
    assert_eq!(errors[0].expected.as_deref(), Some("%a"));
    assert_eq!(errors[0].found.as_deref(), Some("%b"));
    assert_eq!(errors[0].location.as_deref(), Some("v1"));
    assert_eq!(
        errors[0].to_string(),
        "6:20: `%a` (use 0) is read from v1, which holds `%b` here [wrong-value] (@f, block entry, instruction 2)"
    );
}

#[test]
fn register_beyond_budget_is_over_budget() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v2 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v2
  ret %c@v0
}
";
    assert_eq!(check_budget(STRAIGHT, a, &[8, 3]), vec![]);
    let errors = check_budget(STRAIGHT, a, &[8, 2]);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(
        (errors[0].kind, errors[0].point),
        (ErrorKind::OverBudget, Point::Inst(1))
    );
    assert_eq!(errors[0].operand.as_deref(), Some("def 0"));
    assert_eq!(
        (errors[1].kind, errors[1].point),
        (ErrorKind::OverBudget, Point::Inst(2))
    );
    assert_eq!(errors[1].operand.as_deref(), Some("use 1"));
}

const DIAMOND: &str = include_str!("../../corpus/divergent_uniform_live_through_else.chr");

#[test]
fn divergent_diamond_uniform_live_through_else_correct() {
    assert_eq!(
        check(DIAMOND, &fixtures::diamond_allocated("s[8:9]")),
        vec![]
    );
}

#[test]
fn then_side_clobber_of_uniform_live_into_else_rejected() {
    let errors = check(DIAMOND, &fixtures::diamond_allocated("s[0:1]"));
    assert_one(
        &errors,
        ErrorKind::UndefinedValue,
        "else",
        Point::Inst(0),
        "use 0",
    );
    assert_eq!(errors[0].expected.as_deref(), Some("%desc[0]"));
    assert_eq!(errors[0].found.as_deref(),
        Some("holds different values on different paths of the linear CFG (the order the wave runs blocks) to here"));
}

mod fixtures;
use fixtures::{rich_with, RICH, RICH_ALLOCATED};

#[test]
fn rich_allocation_correct() {
    assert_eq!(check(RICH, RICH_ALLOCATED), vec![]);
}

/// One wrong allocation per error kind: (replace, by, kind, block, point, operand).
#[test]
fn each_error_kind_at_its_place() {
    let cases: &[(&str, &str, ErrorKind, &str, Point, &str)] = &[
        (
            "%x@v[8:11], %y",
            "%x@v[4:7], %y",
            ErrorKind::UndefinedValue,
            "join",
            Point::Inst(1),
            "use 0",
        ),
        (
            "parallel_copy v0 <- v4 %e",
            "parallel_copy v0 <- v2 %e",
            ErrorKind::WrongValue,
            "then",
            Point::Edge(6),
            "phi %y",
        ),
        (
            "fixed(s[0:1])@s[0:1] = arg 0",
            "fixed(s[0:1])@s[8:9] = arg 0",
            ErrorKind::FixedViolated,
            "entry",
            Point::Inst(1),
            "def 0",
        ),
        (
            "%acc2:v1@v2 = mad",
            "%acc2:v1@v5 = mad",
            ErrorKind::TiedViolated,
            "body",
            Point::Inst(0),
            "def 0",
        ),
        (
            "%e:v1@v4 = mul",
            "%e:v1@v2 = mul",
            ErrorKind::EarlyClobberOverlap,
            "then",
            Point::Inst(0),
            "def 0",
        ),
        (
            "%m:s2@s[4:5] = v_cmp",
            "%m:s2@s[5:6] = v_cmp",
            ErrorKind::Misaligned,
            "exit",
            Point::Inst(0),
            "def 0",
        ),
        (
            "%lo:v1@v2, %hi:v1@v3",
            "%lo:v1@v2, %hi:v1@v2",
            ErrorKind::DefsOverlap,
            "entry",
            Point::Inst(5),
            "def 1",
        ),
        (
            "%c:s1@s3 = s_cmp",
            "%c:v1@s3 = s_cmp",
            ErrorKind::UnexpectedOp,
            "loop",
            Point::Inst(0),
            "",
        ),
        (
            "remat s2 <- %k",
            "remat s2 <- %c",
            ErrorKind::NotRematerialisable,
            "body",
            Point::Inst(1),
            "remat",
        ),
        (
            "reload v[8:11] <- m[0:3] %x",
            "reload v[8:11] <- m[0:2] %x",
            ErrorKind::LengthMismatch,
            "join",
            Point::Inst(0),
            "move 0",
        ),
        (
            "parallel_copy v0 <- v2 %acc",
            "parallel_copy s6 <- v2 %acc",
            ErrorKind::PerLaneInUniform,
            "exit_join",
            Point::Inst(0),
            "move 0",
        ),
    ];
    for (from, to, kind, block, point, operand) in cases {
        let errors = check(RICH, &rich_with(from, to));
        let hit = errors.iter().find(|e| e.kind == *kind);
        let e = hit.unwrap_or_else(|| panic!("{kind:?} not in {errors:#?}"));
        assert_eq!((e.block.as_str(), e.point), (*block, *point), "{e}");
        assert_eq!(e.operand.as_deref().unwrap_or(""), *operand, "{e}");
    }
}

#[test]
fn independent_ops_may_be_reordered() {
    let a = rich_with(
        "  %x:v4@v[4:7] = load.v4 %base@s[0:1], %tid@v1 reads\n  spill m[0:3] <- v[4:7] %x\n  %lo:v1@v2, %hi:v1@v3 = split %base@s[0:1]\n",
        "  %lo:v1@v2, %hi:v1@v3 = split %base@s[0:1]\n  %x:v4@v[4:7] = load.v4 %base@s[0:1], %tid@v1 reads\n  spill m[0:3] <- v[4:7] %x\n",
    );
    assert_eq!(check(RICH, &a), vec![]);
}

const MEMORY: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = tid
  %lo:v1 = add.cc %a carry
  %b:v1 = load %a reads
  store %a writes
  %c:v1 = load %a reads
  %d:v1 = load %a reads
  %hi:v1 = addc %a carry
  ret %b, %c, %d, %lo, %hi
}
";

/// `MEMORY` allocated with its operations in `order` (indices into its body).
fn memory_in_order(order: [usize; 7]) -> String {
    let body = [
        "%a:v1@v0 = tid",
        "%lo:v1@v1 = add.cc %a@v0 carry",
        "%b:v1@v2 = load %a@v0 reads",
        "store %a@v0 writes",
        "%c:v1@v3 = load %a@v0 reads",
        "%d:v1@v4 = load %a@v0 reads",
        "%hi:v1@v5 = addc %a@v0 carry",
    ];
    let ops: String = order.iter().map(|&k| format!("  {}\n", body[k])).collect();
    format!("target generic s=8 v=8\nfunc @f {{\nentry:\n{ops}  ret %b@v2, %c@v3, %d@v4, %lo@v1, %hi@v5\n}}\n")
}

#[test]
fn reads_move_among_reads_and_past_unrelated_ops() {
    assert_eq!(
        check(MEMORY, &memory_in_order([0, 1, 2, 3, 4, 5, 6])),
        vec![]
    );
    assert_eq!(
        check(MEMORY, &memory_in_order([0, 2, 3, 5, 4, 1, 6])),
        vec![]
    );
}

#[test]
fn a_broken_dependence_is_an_order_error() {
    let cases = [
        ([0, 1, 3, 2, 4, 5, 6], 3, "between the same writes"),
        ([0, 1, 2, 4, 3, 5, 6], 3, "between the same writes"),
        ([0, 6, 1, 2, 3, 4, 5], 1, "among the carry ops"),
    ];
    for (order, at, rule) in cases {
        let errors = check(MEMORY, &memory_in_order(order));
        assert_one(&errors, ErrorKind::OpOrder, "entry", Point::Inst(at), "");
        assert!(errors[0].to_string().contains(rule), "{}", errors[0]);
    }
}

const FIXED_REGS: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = tid
  %b:v1 = add %a clobber(scc)
  cmp %a implicit_def(scc)
  %c:v1 = select %a implicit(scc)
  %d:v1 = select %a implicit(scc)
  %e:v1 = add %a clobber(scc)
  %f:v1 = add %a clobber(scc)
  ret %b, %c, %d, %e, %f
}
";

/// `FIXED_REGS` allocated with its operations in `order` (indices into its body).
fn fixed_regs_in_order(order: [usize; 7]) -> String {
    let body = [
        "%a:v1@v0 = tid",
        "%b:v1@v1 = add %a@v0 clobber(scc)",
        "cmp %a@v0 implicit_def(scc)",
        "%c:v1@v2 = select %a@v0 implicit(scc)",
        "%d:v1@v3 = select %a@v0 implicit(scc)",
        "%e:v1@v4 = add %a@v0 clobber(scc)",
        "%f:v1@v5 = add %a@v0 clobber(scc)",
    ];
    let ops: String = order.iter().map(|&k| format!("  {}\n", body[k])).collect();
    format!("target generic s=8 v=8\nfunc @f {{\nentry:\n{ops}  ret %b@v1, %c@v2, %d@v3, %e@v4, %f@v5\n}}\n")
}

#[test]
fn fixed_register_reads_and_clobbers_move_among_their_kind() {
    for order in [[0, 1, 2, 4, 3, 6, 5], [0, 1, 2, 3, 4, 5, 6]] {
        assert_eq!(check(FIXED_REGS, &fixed_regs_in_order(order)), vec![]);
    }
}

#[test]
fn a_fixed_register_moved_across_a_write_is_an_order_error() {
    let cases = [
        ([0, 2, 1, 3, 4, 5, 6], 1, "`scc`"),
        ([0, 1, 3, 2, 4, 5, 6], 2, "`scc`"),
        ([0, 1, 2, 3, 5, 4, 6], 4, "`scc`"),
    ];
    for (order, at, reg) in cases {
        let errors = check(FIXED_REGS, &fixed_regs_in_order(order));
        assert_one(&errors, ErrorKind::OpOrder, "entry", Point::Inst(at), "");
        assert!(errors[0].to_string().contains(reg), "{}", errors[0]);
    }
}

#[test]
fn a_remat_read_moves_across_writes_and_barriers() {
    let original = "target generic s=8 v=8\nfunc @f {\nentry:\n  %a:v1 = tid\n  store %a writes\n  bar barrier\n  %k:v1 = ld.param remat reads\n  %b:v1 = add %a, %k\n  ret %b\n}\n";
    let allocated = "target generic s=8 v=8\nfunc @f {\nentry:\n  %k:v1@v1 = ld.param remat reads\n  %a:v1@v0 = tid\n  store %a@v0 writes\n  bar barrier\n  %b:v1@v0 = add %a@v0, %k@v1\n  ret %b@v0\n}\n";
    assert_eq!(check(original, allocated), vec![]);
    let plain_read = original.replace(" remat reads", " reads");
    let errors = check(&plain_read, &allocated.replace(" remat reads", " reads"));
    assert_one(&errors, ErrorKind::OpOrder, "entry", Point::Inst(0), "");
}

/// The first function of each text, checked by [`verify`] on the original's target.
fn check_fn(original: &str, allocated: &str) -> Vec<VerifyError> {
    let o = chromatic::parse(original).expect("original parses");
    let a = chromatic::parse(allocated).expect("allocated parses");
    verify(&o.functions[0], &a.functions[0], &o.target, None)
}

/// Asserts exactly these errors, in order: (kind, block, point, operand).
fn assert_all(errors: &[VerifyError], expected: &[(ErrorKind, &str, Point, &str)]) {
    let found: Vec<(ErrorKind, &str, Point, &str)> = errors
        .iter()
        .map(|e| {
            (
                e.kind,
                e.block.as_str(),
                e.point,
                e.operand.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(found, expected, "errors: {errors:#?}");
}

#[test]
fn function_absent_from_allocation_is_missing_function() {
    let original = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = v_mov 1
  ret %a
}
func @g {
entry:
  %b:v1 = v_mov 2
  ret %b
}
";
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  ret %a@v0
}
";
    let errors = check(original, a);
    assert_one(&errors, ErrorKind::MissingFunction, "", Point::Block, "");
    assert_eq!(errors[0].function, "g");
    // The place is in the original's text: the allocation has no such function.
    assert_eq!((errors[0].line, errors[0].col), (7, 6));
}

const TWO_BLOCKS: &str = "target generic s=8 v=8
func @f {
entry:
  %a:v1 = v_mov 1
  jump exit
exit:
  ret %a
}
";

#[test]
fn merged_block_is_missing_block() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  ret %a@v0
}
";
    assert_all(
        &check_fn(TWO_BLOCKS, a),
        &[
            (ErrorKind::MissingBlock, "exit", Point::Block, ""),
            (ErrorKind::TerminatorMismatch, "entry", Point::Term, ""),
        ],
    );
}

#[test]
fn split_edge_block_with_an_op_is_extra_block() {
    let ok = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  jump mid
mid:
  parallel_copy v1 <- v0 %a
  jump exit
exit:
  ret %a@v1
}
";
    assert_eq!(check_fn(TWO_BLOCKS, ok), vec![]);
    let a = ok.replace(
        "  parallel_copy v1 <- v0 %a\n",
        "  parallel_copy v1 <- v0 %a\n  s_nop %a@v1\n",
    );
    let errors = check_fn(TWO_BLOCKS, &a);
    assert_one(&errors, ErrorKind::ExtraBlock, "mid", Point::Block, "");
}

#[test]
fn returning_another_value_is_terminator_mismatch() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v1
  ret %b@v1
}
";
    let errors = check_fn(STRAIGHT, a);
    assert_one(
        &errors,
        ErrorKind::TerminatorMismatch,
        "entry",
        Point::Term,
        "",
    );
    assert_eq!((errors[0].line, errors[0].col), (7, 3));
}

const PHI_JOIN: &str = "target generic s=8 v=8
func @f {
entry:
  %p:v1 = v_mov 1
  %q:v1 = v_mov 2
  %c:s1 = s_mov 0
  branch uniform %c, left, right
left:
  jump join
right:
  jump join
join:
  %y:v1 = phi [left: %p], [right: %q]
  ret %y
}
";

#[test]
fn phi_arguments_exchanged_is_phi_mismatch() {
    let ok = "target generic s=8 v=8
func @f {
entry:
  %p:v1@v0 = v_mov 1
  %q:v1@v1 = v_mov 2
  %c:s1@s0 = s_mov 0
  branch uniform %c@s0, left, right
left:
  parallel_copy v2 <- v0 %p
  jump join
right:
  parallel_copy v2 <- v1 %q
  jump join
join:
  %y:v1@v2 = phi [left: %p], [right: %q]
  ret %y@v2
}
";
    assert_eq!(check_fn(PHI_JOIN, ok), vec![]);
    // Consistent with itself (the moves follow the exchanged arguments), so only the
    // structural rule sees it.
    let a = ok
        .replace("v2 <- v0 %p", "v2 <- v1 %q")
        .replace(
            "v2 <- v1 %q\n  jump join\njoin",
            "v2 <- v0 %p\n  jump join\njoin",
        )
        .replace("[left: %p], [right: %q]", "[left: %q], [right: %p]");
    let errors = check_fn(PHI_JOIN, &a);
    assert_one(&errors, ErrorKind::PhiMismatch, "join", Point::Phi(0), "");
}

#[test]
fn dropped_store_is_missing_op() {
    let a = rich_with("  store %x@v[8:11], %y@v0, %base@s[0:1] writes\n", "");
    let errors = check(RICH, &a);
    assert_one(&errors, ErrorKind::MissingOp, "join", Point::Block, "");
    assert_eq!(errors[0].expected.as_deref(), Some("`store`"));
}

#[test]
fn renamed_value_is_unknown_value() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c.1:v1@v0 = v_add %a@v0, %b@v1
  ret %c.1@v0
}
";
    let errors = check_fn(STRAIGHT, a);
    assert_all(
        &errors,
        &[
            (ErrorKind::TerminatorMismatch, "entry", Point::Term, ""),
            (ErrorKind::MissingOp, "entry", Point::Block, ""),
            (ErrorKind::UnexpectedOp, "entry", Point::Inst(2), ""),
            (ErrorKind::UnknownValue, "", Point::Block, ""),
            // An unknown value's def writes nothing known, so its use reads nothing known.
            (ErrorKind::UndefinedValue, "entry", Point::Term, "use 0"),
        ],
    );
    assert_eq!(errors[3].found.as_deref(), Some("%c.1"));
}

#[test]
fn use_without_location_is_missing_location() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v1
  ret %c@v0
}
";
    let o = chromatic::parse(STRAIGHT).expect("original parses");
    let mut a = chromatic::parse(a).expect("allocated parses");
    let f = &mut a.functions[0];
    let chromatic::InstKind::Op(op) = &mut f.blocks[0].insts[2].kind else {
        panic!("inst 2 is v_add");
    };
    let chromatic::Operand::Value(u) = &mut op.operands[1] else {
        panic!("operand 1 is %b");
    };
    u.loc = None;
    let errors = verify(&o.functions[0], f, &o.target, None);
    assert_one(
        &errors,
        ErrorKind::MissingLocation,
        "entry",
        Point::Inst(2),
        "use 1",
    );
    assert_eq!(errors[0].expected.as_deref(), Some("%b"));
    assert_eq!(errors[0].location, None);
}

#[test]
fn operand_read_from_spill_slot_is_not_a_register() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  spill m0 <- v0 %a
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@m0, %b@v1
  ret %c@v0
}
";
    let errors = check_fn(STRAIGHT, a);
    assert_one(
        &errors,
        ErrorKind::NotARegister,
        "entry",
        Point::Inst(3),
        "use 0",
    );
    assert_eq!(errors[0].location.as_deref(), Some("m0"));
}

#[test]
fn operand_in_register_of_other_class_is_wrong_class() {
    // Two per-lane classes, so that moving between them breaks no other rule.
    let original = "target generic a=8 b=8
func @f {
entry:
  %x:a1 = mov 1
  %y:a1 = add %x, %x
  ret %y
}
";
    let a = "target generic a=8 b=8
func @f {
entry:
  %x:a1@a0 = mov 1
  parallel_copy b0 <- a0 %x
  %y:a1@a1 = add %x@a0, %x@b0
  ret %y@a1
}
";
    let errors = check_fn(original, a);
    assert_all(
        &errors,
        &[
            (ErrorKind::CrossClassMove, "entry", Point::Inst(1), "move 0"),
            (ErrorKind::WrongClass, "entry", Point::Inst(2), "use 1"),
        ],
    );
    assert_eq!(errors[1].location.as_deref(), Some("b0"));
}

#[test]
fn def_location_longer_than_value_is_wrong_size() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v[0:1] = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v1
  ret %c@v0
}
";
    let errors = check_fn(STRAIGHT, a);
    assert_one(
        &errors,
        ErrorKind::WrongSize,
        "entry",
        Point::Inst(0),
        "def 0",
    );
    assert_eq!(errors[0].location.as_deref(), Some("v[0:1]"));
}

#[test]
fn register_beyond_class_is_out_of_range() {
    let a = "target generic s=8 v=8
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v8 = v_mov 2
  %c:v1@v0 = v_add %a@v0, %b@v8
  ret %c@v0
}
";
    let errors = check_fn(STRAIGHT, a);
    assert_all(
        &errors,
        &[
            (ErrorKind::OutOfRange, "entry", Point::Inst(1), "def 0"),
            (ErrorKind::OutOfRange, "entry", Point::Inst(2), "use 1"),
        ],
    );
    assert_eq!(errors[0].location.as_deref(), Some("v8"));
}

#[test]
fn swap_in_noswap_class_is_swap_unsupported() {
    let original = STRAIGHT.replace("v=8", "v=8:noswap");
    let a = "target generic s=8 v=8:noswap
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  swap v0, v1
  %c:v1@v0 = v_add %a@v1, %b@v0
  ret %c@v0
}
";
    let swapping = a.replace(":noswap", "");
    assert_eq!(check_fn(STRAIGHT, &swapping), vec![]);
    let errors = check_fn(&original, a);
    assert_one(
        &errors,
        ErrorKind::SwapUnsupported,
        "entry",
        Point::Inst(2),
        "swap",
    );
    assert_eq!(errors[0].location.as_deref(), Some("v0"));
}

const LANE_SPILL: &str = "target gfx9
func @f {
entry:
  %k:s1 = s_mov 5
  %t:v1 = v_mov 1
  %u:v1 = v_add %t, %k
  ret %u
}
";

const LANE_SPILLED: &str = "target gfx9
func @f {
entry:
  %k:s1@s0 = s_mov 5
  spill v1.l0 <- s0 %k
  %t:v1@v2 = v_mov 1
  reload s0 <- v1.l0 %k
  %u:v1@v0 = v_add %t@v2, %k@s0
  ret %u@v0
}
";

/// A lane of a register is one lane of that register's storage: `%t` written to `v1`
/// overwrites the lane holding `%k`.
#[test]
fn register_written_whole_over_a_live_lane_spill_rejected() {
    assert_eq!(check_fn(LANE_SPILL, LANE_SPILLED), vec![]);
    let a = LANE_SPILLED.replace("@v2", "@v1");
    let errors = check_fn(LANE_SPILL, &a);
    assert_one(
        &errors,
        ErrorKind::UndefinedValue,
        "entry",
        Point::Inst(4),
        "use 1",
    );
    assert_eq!(
        errors[0].found.as_deref(),
        Some("was overwritten through its register or one of its lanes (they share storage)")
    );
}

/// False alarm the verifier used to raise: once the lane spill in `v1` is dead, `v1` may
/// hold a value as a whole register.
#[test]
fn register_reused_whole_after_its_lane_spill_died_accepted() {
    let a = LANE_SPILLED
        .replace("%u:v1@v0", "%u:v1@v1")
        .replace("ret %u@v0", "ret %u@v1");
    assert_eq!(check_fn(LANE_SPILL, &a), vec![]);
    // A lane write while `%u` lives in `v1` changes `%u` in that lane.
    let lane_write = a.replace("  ret %u@v1", "  spill v1.l1 <- s0 %k\n  ret %u@v1");
    let errors = check_fn(LANE_SPILL, &lane_write);
    assert_one(
        &errors,
        ErrorKind::UndefinedValue,
        "entry",
        Point::Term,
        "use 0",
    );
}

/// A then-side that returns still falls into the else-side on the linear CFG (lanes that
/// return stop, the wave goes on): a uniform register written there must not hold a value
/// live into the else-side.
#[test]
fn returning_then_side_clobber_of_uniform_live_into_else_rejected() {
    let original = "target gfx9\nfunc @f {\nentry:\n  %u:s1 = s_mov 1\n  %p:s2 = v_cmp\n  branch divergent %p, t, e\nt:\n  %x:s1 = s_mov 2\n  ret %x\ne:\n  %y:s1 = s_add %u\n  ret %y\n}\n";
    let good = "target gfx9\nfunc @f {\nentry:\n  %u:s1@s0 = s_mov 1\n  %p:s2@s[2:3] = v_cmp\n  branch divergent %p@s[2:3], t, e\nt:\n  %x:s1@s1 = s_mov 2\n  ret %x@s1\ne:\n  %y:s1@s1 = s_add %u@s0\n  ret %y@s1\n}\n";
    assert!(
        check(original, good).is_empty(),
        "{:?}",
        check(original, good)
    );
    let clobbered = good.replace(
        "%x:s1@s1 = s_mov 2\n  ret %x@s1",
        "%x:s1@s0 = s_mov 2\n  ret %x@s0",
    );
    assert_one(
        &check(original, &clobbered),
        ErrorKind::UndefinedValue,
        "e",
        Point::Inst(0),
        "use 0",
    );
}

/// A uniform value live across a divergent branch whose then-side reuses its register.
const UNIFORM_ACROSS_BRANCH: &str = "target generic s=4 v=4
func @f {
entry:
  %u:s1 = s_mov 1
  %p:v1 = v_mov 2
  branch divergent %p, then, join
then:
  %w:s1 = s_mov 3
  jump join
join:
  ret %u
}
";

/// `%u` stored from its register: a whole-wave store, which every lane can reload after the
/// join whichever side it took.
const UNIFORM_SPILLED_ACROSS_BRANCH: &str = "target generic s=4 v=4
func @f {
entry:
  %u:s1@s0 = s_mov 1
  spill m0 <- s0 %u
  %p:v1@v0 = v_mov 2
  branch divergent %p@v0, then, join
then:
  %w:s1@s0 = s_mov 3
  jump join
join:
  reload s1 <- m0 %u
  ret %u@s1
}
";

#[test]
fn whole_wave_spill_across_divergent_branch_accepted() {
    let errors = check(UNIFORM_ACROSS_BRANCH, UNIFORM_SPILLED_ACROSS_BRANCH);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The then-side stores `%u` into `m0` again, but per lane (a copy from another slot): the
/// lanes that skipped it keep the whole-wave store, the others the per-lane one, and the
/// slot counts as written per lane.
#[test]
fn uniform_reload_of_slot_written_per_lane_under_divergence_rejected() {
    let allocated = UNIFORM_SPILLED_ACROSS_BRANCH.replace(
        "  %w:s1@s0 = s_mov 3\n",
        "  %w:s1@s0 = s_mov 3\n  parallel_copy m0 <- m1 %u\n",
    );
    let allocated = allocated.replace(
        "  spill m0 <- s0 %u\n",
        "  spill m0 <- s0 %u\n  spill m1 <- s0 %u\n",
    );
    assert_all(
        &check(UNIFORM_ACROSS_BRANCH, &allocated),
        &[
            (
                ErrorKind::UniformFromScratch,
                "join",
                Point::Inst(0),
                "move 0",
            ),
            (ErrorKind::UndefinedValue, "join", Point::Term, "use 0"),
        ],
    );
}

/// A slot no whole-wave store writes is a lane slot: a uniform register may not load it
/// in a function with a divergent branch, even where every lane wrote it.
#[test]
fn uniform_reload_of_lane_slot_under_divergence_rejected() {
    let allocated = UNIFORM_SPILLED_ACROSS_BRANCH.replace(
        "  spill m0 <- s0 %u\n",
        "  spill m1 <- s0 %u\n  parallel_copy m0 <- m1 %u\n",
    );
    let errors = check(UNIFORM_ACROSS_BRANCH, &allocated);
    assert_one(
        &errors,
        ErrorKind::UniformFromScratch,
        "join",
        Point::Inst(0),
        "move 0",
    );
}

/// Lanes hold one value per wave too: loading them from a lane slot is rejected alike.
#[test]
fn lanes_loaded_from_lane_slot_under_divergence_rejected() {
    let original = "target gfx9\nfunc @f {\nentry:\n  %u:s1 = s_mov 1\n  %p:s2 = v_cmp\n  branch divergent %p, t, j\nt:\n  %w:s1 = s_mov 3\n  jump j\nj:\n  ret %u\n}\n";
    let allocated = "target gfx9\nfunc @f {\nentry:\n  %u:s1@s0 = s_mov 1\n  spill m1 <- s0 %u\n  parallel_copy m0 <- m1 %u\n  %p:s2@s[2:3] = v_cmp\n  branch divergent %p@s[2:3], t, j\nt:\n  %w:s1@s0 = s_mov 3\n  jump j\nj:\n  reload v23.l0 <- m0 %u\n  reload s1 <- v23.l0 %u\n  ret %u@s1\n}\n";
    assert_one(
        &check(original, allocated),
        ErrorKind::UniformFromScratch,
        "j",
        Point::Inst(0),
        "move 0",
    );
}

/// The stale copy of `fixtures::DIVERGENT_LOOP_VIA_PER_LANE`: both copies cross classes,
/// and the first puts a uniform value in a per-lane register; the value it carries is lost.
#[test]
fn uniform_value_through_per_lane_register_in_divergent_loop_rejected() {
    let errors = check(
        fixtures::DIVERGENT_LOOP,
        fixtures::DIVERGENT_LOOP_VIA_PER_LANE,
    );
    assert_all(
        &errors,
        &[
            (ErrorKind::CrossClassMove, "head", Point::Inst(1), "move 0"),
            (ErrorKind::CrossClassMove, "exit", Point::Inst(0), "move 0"),
            (
                ErrorKind::UniformInPerLane,
                "head",
                Point::Inst(1),
                "move 0",
            ),
            (ErrorKind::UndefinedValue, "exit", Point::Inst(1), "use 1"),
        ],
    );
    assert_eq!(errors[2].found.as_deref(), Some("%i2"));
}

/// A reload of a uniform value into a per-lane register has a legal shape (slot to
/// register of the destination's class) and is still rejected.
#[test]
fn uniform_value_reloaded_into_per_lane_register_rejected() {
    let allocated = fixtures::DIVERGENT_LOOP_SPILLED.replace(
        "  reload s1 <- m0 %i2\n",
        "  reload s1 <- m0 %i2\n  reload v2 <- m0 %i2\n",
    );
    assert_one(
        &check(fixtures::DIVERGENT_LOOP, &allocated),
        ErrorKind::UniformInPerLane,
        "exit",
        Point::Inst(1),
        "move 0",
    );
}

/// A predicate held in a general register across a point where predicates are short: the
/// class spill (`selp`) and reload (`setp`) the allocator emits on PTX targets.
const PREDICATE: &str = "target sm_80
func @f {
entry:
  %p:p1 = setp 1
  %q:p1 = setp 2
  %x:r1 = mov 3
  %y:r1 = selp %q, %x
  %z:r1 = selp %p, %y
  ret %z
}
";

const PREDICATE_CLASS_SPILLED: &str = "target sm_80
func @f {
entry:
  %p:p1@p0 = setp 1
  spill r1 <- p0 %p
  %q:p1@p0 = setp 2
  %x:r1@r0 = mov 3
  %y:r1@r0 = selp %q@p0, %x@r0
  reload p0 <- r1 %p
  %z:r1@r0 = selp %p@p0, %y@r0
  ret %z@r0
}
";

#[test]
fn predicate_class_spill_accepted() {
    assert_eq!(check(PREDICATE, PREDICATE_CLASS_SPILLED), vec![]);
}

/// A reload from a predicate into a general register, and a parallel copy or a swap
/// between the two classes, are not class spills.
#[test]
fn moves_between_classes_other_than_class_spills_rejected() {
    let cases = [
        ("reload p0 <- r1 %p", "reload r1 <- p0 %p", "move 0"),
        ("spill r1 <- p0 %p", "parallel_copy r1 <- p0 %p", "move 0"),
        ("spill r1 <- p0 %p", "swap r1, p0", "swap"),
    ];
    for (from, to, operand) in cases {
        let allocated = PREDICATE_CLASS_SPILLED.replace(from, to);
        let errors = check(PREDICATE, &allocated);
        let hit = errors.iter().find(|e| e.kind == ErrorKind::CrossClassMove);
        let e = hit.unwrap_or_else(|| panic!("{to}: {errors:#?}"));
        assert_eq!(e.operand.as_deref(), Some(operand), "{e}");
    }
}

/// A class spill converts one whole predicate: a reload of a general register holding
/// another class's value, or a spill of two predicates at once, is rejected.
#[test]
fn class_spill_of_other_than_one_whole_value_rejected() {
    let wrong_value = PREDICATE_CLASS_SPILLED.replace("reload p0 <- r1 %p", "reload p0 <- r0 %p");
    let errors = check(PREDICATE, &wrong_value);
    assert_all(
        &errors,
        &[
            (
                ErrorKind::ClassSpillMismatch,
                "entry",
                Point::Inst(5),
                "move 0",
            ),
            (ErrorKind::WrongValue, "entry", Point::Inst(6), "use 0"),
        ],
    );
    assert_eq!(errors[0].expected.as_deref(), Some("a whole p1 value"));
    assert_eq!(errors[0].found.as_deref(), Some("%y"));
    let two_wide = PREDICATE_CLASS_SPILLED
        .replace("%q:p1@p0 = setp 2", "%q:p1@p1 = setp 2")
        .replace("%q@p0", "%q@p1")
        .replace(
            "  %x:r1@r0 = mov 3\n",
            "  %x:r1@r0 = mov 3\n  spill r[2:3] <- p[0:1] %p\n",
        );
    let errors = check(PREDICATE, &two_wide);
    let hit = errors
        .iter()
        .find(|e| e.kind == ErrorKind::ClassSpillMismatch);
    let e = hit.unwrap_or_else(|| panic!("{errors:#?}"));
    assert_eq!(e.found.as_deref(), Some("%p, %q"), "{e}");
}

/// Whether the interpreter runs `allocated` like `original` on a few seeds and lane counts.
fn behaves_alike(original: &str, allocated: &str) -> bool {
    use chromatic_verifier::interp::{run, Config};
    let o = chromatic::parse(original).expect("original parses");
    let a = chromatic::parse(allocated).expect("allocated parses");
    (0..8).all(|seed| {
        [4, 8].iter().all(|&lanes| {
            let config = Config {
                seed,
                lanes,
                ..Config::default()
            };
            run(&o.functions[0], &o.target, &config) == run(&a.functions[0], &a.target, &config)
        })
    })
}

const SLOT_REUSE: &str = "target gfx9
func @f {
entry:
  %u:s1 = s_mov 1
  %p:s2 = v_cmp
  branch divergent %p, t, j
t:
  %w:s1 = s_mov 3
  jump j
j:
  %x:v1 = v_mov 2
  %y:v1 = v_add %x, %u
  %z:v1 = v_add %y, %x
  ret %z
}
";

/// False alarm the verifier used to raise: `m0` holds the uniform `%u` (a whole-wave
/// store), then, once `%u` is reloaded, the per-lane `%x`.
#[test]
fn slot_reused_per_lane_after_a_whole_wave_store_accepted() {
    let allocated = "target gfx9
func @f {
entry:
  %u:s1@s0 = s_mov 1
  spill m0 <- s0 %u
  %p:s2@s[2:3] = v_cmp
  branch divergent %p@s[2:3], t, j
t:
  %w:s1@s0 = s_mov 3
  jump j
j:
  reload s1 <- m0 %u
  %x:v1@v0 = v_mov 2
  spill m0 <- v0 %x
  %y:v1@v0 = v_add %x@v0, %u@s1
  reload v1 <- m0 %x
  %z:v1@v0 = v_add %y@v0, %x@v1
  ret %z@v0
}
";
    assert_eq!(check(SLOT_REUSE, allocated), vec![]);
    assert!(behaves_alike(SLOT_REUSE, allocated));
}

const ELSE_READS_SLOT: &str = "target gfx9
func @f {
entry:
  %x:v1 = v_mov 2
  %u:s1 = s_mov 1
  %p:s2 = v_cmp
  branch divergent %p, t, e
t:
  %a:v1 = v_add %u
  jump j
e:
  %b:v1 = v_add %x
  jump j
j:
  %r:v1 = phi [t: %a], [e: %b]
  ret %r
}
";

/// The then-side stores `%u` whole-wave into the slot that holds `%x` for the else-lanes,
/// which wait for it: they read `%u`.
#[test]
fn whole_wave_store_over_a_slot_pending_else_lanes_read_rejected() {
    let allocated = "target gfx9
func @f {
entry:
  %x:v1@v0 = v_mov 2
  spill m0 <- v0 %x
  %u:s1@s0 = s_mov 1
  %p:s2@s[2:3] = v_cmp
  branch divergent %p@s[2:3], t, e
t:
  spill m1 <- s0 %u
  reload s1 <- m1 %u
  %a:v1@v1 = v_add %u@s1
  jump j
e:
  reload v2 <- m0 %x
  %b:v1@v1 = v_add %x@v2
  jump j
j:
  %r:v1@v1 = phi [t: %a], [e: %b]
  ret %r@v1
}
";
    assert_eq!(check(ELSE_READS_SLOT, allocated), vec![]);
    assert!(behaves_alike(ELSE_READS_SLOT, allocated));
    let clobbered = allocated.replace("m1", "m0");
    let errors = check(ELSE_READS_SLOT, &clobbered);
    assert_one(
        &errors,
        ErrorKind::UndefinedValue,
        "e",
        Point::Inst(1),
        "use 0",
    );
    assert_eq!(
        errors[0].found.as_deref(),
        Some("was overwritten by a whole-wave store or a lane write while these lanes waited for a side of a divergent branch")
    );
    assert!(!behaves_alike(ELSE_READS_SLOT, &clobbered));
}

const TWIN_PHIS: &str = "target generic s=4 v=4
func @f {
entry:
  %a:v1 = v_mov 1
  %b:v1 = v_mov 2
  %c:s1 = s_mov 0
  branch uniform %c, l, r
l:
  jump j
r:
  jump j
j:
  %p:v1 = phi [l: %a], [r: %b]
  %q:v1 = phi [l: %a], [r: %b]
  %s:v1 = v_add %p, %q
  ret %s
}
";

const TWIN_PHIS_SHARED: &str = "target generic s=4 v=4
func @f {
entry:
  %a:v1@v0 = v_mov 1
  %b:v1@v1 = v_mov 2
  %c:s1@s0 = s_mov 0
  branch uniform %c@s0, l, r
l:
  parallel_copy v2 <- v0 %a
  jump j
r:
  parallel_copy v2 <- v1 %b
  jump j
j:
  %p:v1@v2 = phi [l: %a], [r: %b]
  %q:v1@v2 = phi [l: %a], [r: %b]
  %s:v1@v0 = v_add %p@v2, %q@v2
  ret %s@v0
}
";

/// False alarm the verifier used to raise: two phis with the same arguments on every edge
/// are one value and may share a register.
#[test]
fn phis_with_identical_arguments_sharing_a_register_accepted() {
    assert_eq!(check(TWIN_PHIS, TWIN_PHIS_SHARED), vec![]);
    assert!(behaves_alike(TWIN_PHIS, TWIN_PHIS_SHARED));
}

/// Phis with different arguments cannot share one: the edge from `l` brings `%a` where
/// `%q` needs `%b`.
#[test]
fn phis_with_different_arguments_sharing_a_register_rejected() {
    let original = TWIN_PHIS.replace(
        "%q:v1 = phi [l: %a], [r: %b]",
        "%q:v1 = phi [l: %b], [r: %a]",
    );
    let allocated = TWIN_PHIS_SHARED.replace(
        "%q:v1@v2 = phi [l: %a], [r: %b]",
        "%q:v1@v2 = phi [l: %b], [r: %a]",
    );
    let errors = check(&original, &allocated);
    assert!(
        errors.iter().any(|e| e.kind == ErrorKind::WrongValue
            && e.block == "l"
            && e.operand.as_deref() == Some("phi %q")),
        "{errors:#?}"
    );
}

/// A parallel copy writes each unit at most once; a swap exchanges disjoint locations.
#[test]
fn overlapping_copy_destinations_and_swaps_rejected() {
    let ok = "target generic s=8 v=8
func @f {
entry:
  %a:v2 = v_mov 1
  %b:v1 = v_mov 2
  %c:v1 = v_add %a, %b
  ret %c
}
";
    let allocated = "target generic s=8 v=8
func @f {
entry:
  %a:v2@v[0:1] = v_mov 1
  %b:v1@v2 = v_mov 2
  parallel_copy v[4:5] <- v[0:1] %a, v6 <- v2 %b
  %c:v1@v0 = v_add %a@v[4:5], %b@v6
  ret %c@v0
}
";
    assert_eq!(check(ok, allocated), vec![]);
    let cases = [
        (
            "v6 <- v2 %b",
            "v5 <- v2 %b",
            ErrorKind::OverlappingDestinations,
            "move 1",
        ),
        (
            "v6 <- v2 %b",
            "v4 <- v2 %b",
            ErrorKind::OverlappingDestinations,
            "move 1",
        ),
        (
            "  parallel_copy v[4:5] <- v[0:1] %a, v6 <- v2 %b\n",
            "  parallel_copy v[4:5] <- v[0:1] %a, v6 <- v2 %b\n  swap v[4:5], v[5:6]\n",
            ErrorKind::OverlappingSwap,
            "swap",
        ),
    ];
    for (from, to, kind, operand) in cases {
        let errors = check(ok, &allocated.replace(from, to));
        let hit = errors.iter().find(|e| e.kind == kind);
        let e = hit.unwrap_or_else(|| panic!("{to}: {errors:#?}"));
        assert_eq!(e.operand.as_deref(), Some(operand), "{e}");
    }
}

/// A register and one of its lanes are one storage: a parallel copy writing both writes a
/// unit twice.
#[test]
fn copy_writing_a_register_and_its_lane_rejected() {
    let allocated = LANE_SPILLED.replace(
        "  spill v1.l0 <- s0 %k\n",
        "  parallel_copy v1.l0 <- s0 %k, v1 <- v0 %k\n",
    );
    let errors = check_fn(LANE_SPILL, &allocated);
    assert!(
        errors
            .iter()
            .any(|e| e.kind == ErrorKind::OverlappingDestinations),
        "{errors:#?}"
    );
}

/// A divergent branch whose then-side jumps into its else-side: the then-lanes run `e`,
/// then the else-lanes run it again, so `%a` must survive `e` (the verifier used to
/// stop the then-region at `e` and accept `%w` reusing `%a`'s register).
const INTO_ELSE: &str = "target gfx9
func @f {
entry:
  %a:s1 = s_load reads
  %c:s2 = v_cmp
  %v:v1 = v_mov 1
  branch divergent %c, t, e
t:
  %d:s2 = v_cmp %v
  branch divergent %d, e, j
e:
  %x:v1 = v_add %v, %a
  %w:s1 = s_mov 3
  %y:v1 = v_add %x, %w
  jump j
j:
  %r:v1 = phi [t: %v], [e: %y]
  ret %r
}
";

const INTO_ELSE_ALLOCATED: &str = "target gfx9
func @f {
entry:
  %a:s1@s0 = s_load reads
  %c:s2@s[2:3] = v_cmp
  %v:v1@v0 = v_mov 1
  branch divergent %c@s[2:3], t, e
t:
  %d:s2@s[4:5] = v_cmp %v@v0
  parallel_copy v1 <- v0 %v
  branch divergent %d@s[4:5], e, j
e:
  %x:v1@v1 = v_add %v@v0, %a@s0
  %w:s1@s1 = s_mov 3
  %y:v1@v1 = v_add %x@v1, %w@s1
  jump j
j:
  %r:v1@v1 = phi [t: %v], [e: %y]
  ret %r@v1
}
";

#[test]
fn then_side_entering_the_else_side_reusing_a_uniform_register_rejected() {
    assert_eq!(check(INTO_ELSE, INTO_ELSE_ALLOCATED), vec![]);
    assert!(behaves_alike(INTO_ELSE, INTO_ELSE_ALLOCATED));
    let reused = INTO_ELSE_ALLOCATED.replace("@s1", "@s0");
    let errors = check(INTO_ELSE, &reused);
    assert_one(
        &errors,
        ErrorKind::UndefinedValue,
        "e",
        Point::Inst(0),
        "use 1",
    );
    assert!(!behaves_alike(INTO_ELSE, &reused));
}

/// The original given as the allocation: one error, not one per operand.
#[test]
fn input_without_locations_is_one_not_allocated_error() {
    let errors = check(STRAIGHT, STRAIGHT);
    assert_one(&errors, ErrorKind::NotAllocated, "", Point::Block, "");
    assert_eq!(errors[0].kind.code(), "not-allocated");
}

/// What the allocation lacks is placed in the original.
#[test]
fn positions_of_what_the_allocation_lacks_are_in_the_original() {
    let a = rich_with("  store %x@v[8:11], %y@v0, %base@s[0:1] writes\n", "");
    let errors = check(RICH, &a);
    assert_one(&errors, ErrorKind::MissingOp, "join", Point::Block, "");
    assert_eq!(errors[0].side, chromatic_verifier::Side::Original);
    let line = RICH
        .lines()
        .nth(errors[0].line as usize - 1)
        .unwrap_or_default();
    assert!(line.trim_start().starts_with("store"), "{line}");
}

/// An asynchronous accumulator (`pinned`) carried around a loop and retired after it.
const PINNED_LOOP: &str = "target sm_90
func @mma {
entry:
  %z:r4 = mov.b128 0
  jump head
head:
  %acc:r4 = phi [entry: %z], [head: %next] pinned
  %next:r4 = wgmma %acc tied(0) pinned
  %p:p1 = setp
  branch divergent %p, head, exit
exit:
  %done:r4 = wait %next tied(0)
  st %done writes
  ret
}
";

#[test]
fn pinned_value_kept_in_place_is_correct() {
    let a = "target sm_90
func @mma {
entry:
  %z:r4@r[0:3] = mov.b128 0
  jump head
head:
  %acc:r4@r[0:3] = phi [entry: %z], [head: %next] pinned
  %next:r4@r[0:3] = wgmma %acc@r[0:3] tied(0) pinned
  %p:p1@p0 = setp
  branch divergent %p@p0, head, exit
exit:
  %done:r4@r[0:3] = wait %next@r[0:3] tied(0)
  st %done@r[0:3] writes
  ret
}
";
    assert_eq!(check(PINNED_LOOP, a), vec![]);
}

#[test]
fn moving_a_pinned_value_is_an_error() {
    let a = "target sm_90
func @mma {
entry:
  %z:r4@r[0:3] = mov.b128 0
  jump head
head:
  %acc:r4@r[0:3] = phi [entry: %z], [head.head: %next] pinned
  %next:r4@r[4:7] = wgmma %acc@r[4:7] tied(0) pinned
  %p:p1@p0 = setp
  branch divergent %p@p0, head.head, exit
head.head:
  parallel_copy r[0:3] <- r[4:7] %next
  jump head
exit:
  %done:r4@r[4:7] = wait %next@r[4:7] tied(0)
  st %done@r[4:7] writes
  ret
}
";
    let errors = check(PINNED_LOOP, a);
    let kinds: Vec<ErrorKind> = errors.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&ErrorKind::PinnedMoved), "{errors:#?}");
    let moved = errors
        .iter()
        .find(|e| e.kind == ErrorKind::PinnedMoved)
        .unwrap();
    assert_eq!(moved.block, "head.head");
    assert_eq!(moved.found.as_deref(), Some("%next[0]"));
}

#[test]
fn phi_of_a_pinned_value_must_be_pinned() {
    let original = PINNED_LOOP.replace("[head: %next] pinned", "[head: %next]");
    let allocated = "target sm_90
func @mma {
entry:
  %z:r4@r[0:3] = mov.b128 0
  jump head
head:
  %acc:r4@r[0:3] = phi [entry: %z], [head: %next]
  %next:r4@r[0:3] = wgmma %acc@r[0:3] tied(0) pinned
  %p:p1@p0 = setp
  branch divergent %p@p0, head, exit
exit:
  %done:r4@r[0:3] = wait %next@r[0:3] tied(0)
  st %done@r[0:3] writes
  ret
}
";
    let errors = check(&original, allocated);
    assert_one(&errors, ErrorKind::PinnedPhi, "head", Point::Phi(0), "");
}

/// Parts of a wide tuple (a `wgmma` accumulator of 32 registers) are told apart from the
/// values defined after it: part 16 of `%t` is not `%u`.
#[test]
fn parts_of_wide_tuples_are_distinct_labels() {
    let original = "target sm_90
func @wide {
entry:
  %t:r32 = ld reads
  %u:r1 = mov 7
  st %u, %t writes
  ret
}
";
    let allocated = "target sm_90
func @wide {
entry:
  %t:r32@r[0:31] = ld reads
  %u:r1@r32 = mov 7
  st %u@r16, %t@r[0:31] writes
  ret
}
";
    let errors = check(original, allocated);
    assert_one(
        &errors,
        ErrorKind::WrongValue,
        "entry",
        Point::Inst(2),
        "use 0",
    );
    assert_eq!(errors[0].found.as_deref(), Some("%t[16]"));
}

/// A pure operation reading `$exec` (`shl`, one read of a fixed register) recomputed
/// later in its block, the block writing `$exec` (a `cmp`) or not.
fn recomputed_under_exec(exec_write: &str) -> (String, String) {
    let original = format!(
        "target generic s=8 v=8\nfunc @f {{\nentry:\n  %a:v1 = tid\n  %b:v1 = shl %a implicit(exec)\n  %c:v1 = add %b, %a\n{exec_write}  ret %b, %c\n}}\n"
    );
    let exec_write = exec_write.replace("%a", "%a@v0");
    let allocated = format!(
        "target generic s=8 v=8\nfunc @f {{\nentry:\n  %a:v1@v0 = tid\n  %b:v1@v1 = shl %a@v0 implicit(exec)\n  %c:v1@v2 = add %b@v1, %a@v0\n{exec_write}  remat v3 <- %b (%a@v0)\n  ret %b@v3, %c@v2\n}}\n"
    );
    (original, allocated)
}

#[test]
fn a_read_of_a_register_its_block_never_writes_leaves_an_operation_pure() {
    let (original, allocated) = recomputed_under_exec("");
    assert_eq!(check(&original, &allocated), vec![]);
    let (original, allocated) = recomputed_under_exec("  cmp %a implicit_def(exec)\n");
    let errors = check(&original, &allocated);
    let e = errors
        .iter()
        .find(|e| e.kind == ErrorKind::NotRematerialisable)
        .unwrap_or_else(|| panic!("{errors:#?}"));
    assert_eq!(
        (e.block.as_str(), e.point),
        ("entry", Point::Inst(4)),
        "{e}"
    );
}
