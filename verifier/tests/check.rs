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
    assert_eq!(e.operand.as_deref(), Some(operand), "{e}");
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

fn allocated_diamond(t0: &str) -> String {
    format!(
        "target gfx9
func @divergent_uniform_live_through_else {{
entry:
  %desc:s4@s[0:3] = s_load_dwordx4 reads
  %scale:s1@s4 = s_load_dword reads
  %tid:v1@v0 = v_mbcnt_hi
  %mask:s2@s[6:7] = v_cmp_lt_u32 %tid@v0, %scale@s4
  branch divergent %mask@s[6:7], then, else
then:
  %t0:s2@{t0} = s_mov_b64 0
  %t1:s1@s5 = s_add_u32 %scale@s4, 4
  %a:v1@v1 = v_add_u32 %tid@v0, %t1@s5
  s_nop %t0@{t0}
  jump join
else:
  %b:v1@v1 = buffer_load_dword %desc@s[0:3], %tid@v0 reads
  jump join
join:
  %r:v1@v1 = phi [then: %a], [else: %b]
  %o:v1@v2 = v_mul_lo_u32 %r@v1, %scale@s4
  global_store_dword %tid@v0, %o@v2 writes
  ret
}}
"
    )
}

#[test]
fn divergent_diamond_uniform_live_through_else_correct() {
    assert_eq!(check(DIAMOND, &allocated_diamond("s[8:9]")), vec![]);
}

#[test]
fn then_side_clobber_of_uniform_live_into_else_rejected() {
    let errors = check(DIAMOND, &allocated_diamond("s[0:1]"));
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
