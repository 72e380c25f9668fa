//! The checker on hand-written allocations: correct ones accepted, one wrong allocation per
//! error kind rejected with the exact kind, place and operand.

use chromatic_verifier::{verify_program, ErrorKind, Point, VerifyError};

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
    assert_eq!(errors[0].expected.as_deref(), Some("%a[0]"));
    assert_eq!(errors[0].found.as_deref(), Some("%b[0]"));
    assert_eq!(errors[0].location.as_deref(), Some("v1"));
    assert_eq!(
        errors[0].to_string(),
        "@f entry inst 2 (6:20): WrongValue use 0 at v1: expected %a[0], found %b[0]"
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
    assert_eq!(errors[0].found.as_deref(), Some("conflict"));
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
fn swapped_op_order_is_its_own_rule() {
    let a = rich_with(
        "  %x:v4@v[4:7] = load.v4 %base@s[0:1], %tid@v1 reads\n  spill m[0:3] <- v[4:7] %x\n  %lo:v1@v2, %hi:v1@v3 = split %base@s[0:1]\n",
        "  %lo:v1@v2, %hi:v1@v3 = split %base@s[0:1]\n  %x:v4@v[4:7] = load.v4 %base@s[0:1], %tid@v1 reads\n  spill m[0:3] <- v[4:7] %x\n",
    );
    let errors = check(RICH, &a);
    assert_one(&errors, ErrorKind::OpOrder, "entry", Point::Inst(3), "");
}
