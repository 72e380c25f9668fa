//! Phis of constants recomputed as selects (`src/schedule/select.rs`) end to end: the
//! reduced `erf` sample fits 7 registers only because its seven coefficient phis become
//! selects next to their `fma`s; the export writes them as `selp` with the then-side
//! constant first; the verifier refuses a select reading another predicate, and the
//! mutation engine's select mutants are all caught.

mod common;

use common::chromatic;
use serde_json::Value;

const SAMPLE: &str = "corpus/ptx/erf_select.ptx";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_file(name: &str, contents: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-select-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("temp file");
    path.display().to_string()
}

/// The sample allocated at `r` registers, as `.chr`.
fn allocated_at(r: &str) -> String {
    let out = chromatic(&["alloc", SAMPLE, "--regs", r]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The `remat` lines of `allocated` that recompute one of the coefficient phis
/// (`%r11`…`%r17` at the join) from `%p1`.
fn selects(allocated: &str) -> Vec<&str> {
    allocated
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("remat ") && l.contains("(%p1."))
        .collect()
}

/// Emitted order: 15 registers live at the join (four loaded values, seven coefficients,
/// `x²`, `x`, `|x|`, the address). With the coefficients selected where they are read the
/// kernel needs 7, and at 7 it spills nothing; every allocation is verified and run.
#[test]
fn erf_sample_fits_seven_registers_through_selects() {
    let out = chromatic(&["ptx", SAMPLE, "--regs", "r=7", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let kernels: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let k = &kernels[0];
    assert_eq!(k["max_live_emitted"]["r"], 15, "{k}");
    assert_eq!(k["regs"]["r"], 7, "{k}");
    let chromatic = &k["budget"]["chromatic"];
    assert_eq!(chromatic["store_bytes"], 0, "{k}");
    assert_eq!(chromatic["load_bytes"], 0, "{k}");
    let allocated = allocated_at("r=7");
    let phis: std::collections::BTreeSet<&str> = selects(&allocated)
        .iter()
        .filter_map(|l| l.split("<- ").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(phis.len(), 7, "{allocated}");
}

/// The export writes each select as `selp.b32` with the constant of the side where `%p1`
/// holds first: `@%p1 bra` jumps to the join from the entry, whose `%r11` is `0f3F20D842`;
/// the fall-through sets it to `0f3E0375D3`. At 8 registers the emitted order fits one
/// unit below the budget, so no block is reordered and the export (which writes
/// statements in text order) applies.
#[test]
fn exported_selects_put_the_taken_side_first() {
    let path = temp_file("erf_select.out.ptx", "");
    let out = chromatic(&[
        "alloc",
        SAMPLE,
        "--regs",
        "r=8",
        "--schedule",
        "pressure",
        "--emit",
        "ptx",
        "-o",
        &path,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported = std::fs::read_to_string(&path).expect("export");
    let selp: Vec<&str> = exported
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("selp.b32"))
        .collect();
    assert_eq!(selp.len(), 7, "{exported}");
    assert!(
        selp.iter()
            .any(|l| l.contains(", 0x3F20D842, 0x3E0375D3, %p")),
        "{exported}"
    );
    assert!(
        selp.iter()
            .any(|l| l.contains(", 0x3789CA3C, 0x38B1E96A, %p")),
        "{exported}"
    );
}

/// A select that reads `%p2` (the second branch's predicate) instead of `%p1` does not
/// recompute the phi. At 8 registers the emitted order stands, so `%p2` is defined
/// before the selects and the mutant still parses.
#[test]
fn a_select_reading_another_predicate_is_refused() {
    let allocated = allocated_at("r=8");
    let first = selects(&allocated)[0].to_string();
    let wrong = first.replace("(%p1.", "(%p2.");
    let mutated = allocated.replacen(&first, &wrong, 1);
    let original = temp_file("erf_select.chr", &text(&chromatic(&["fmt", SAMPLE]).stdout));
    let path = temp_file("erf_select.wrong.chr", &mutated);
    let out = chromatic(&["verify", &original, &path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout) + &text(&out.stderr);
    assert!(report.contains("not-rematerialisable"), "{report}");
    assert!(
        report.contains("condition of the branch that decides its incoming edge"),
        "{report}"
    );
    let accepted = chromatic(&["verify", &original, &temp_file("ok.chr", &allocated)]);
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        text(&accepted.stdout)
    );
}

/// The mutation engine's select mutants (another predicate, another phi's constants) are
/// made on the sample and every non-equivalent one is caught.
#[test]
fn select_mutants_are_caught() {
    let out = chromatic(&["mutate-check", SAMPLE, "--mutants", "300"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    for kind in ["select-wrong-predicate", "select-other-constants"] {
        let row = report
            .lines()
            .find(|l| l.starts_with(kind))
            .unwrap_or_else(|| panic!("no {kind} mutants: {report}"));
        let counts: Vec<u64> = row
            .split_whitespace()
            .skip(1)
            .map(|n| n.parse().expect("a count"))
            .collect();
        assert!(counts[0] > 0, "{row}");
        assert_eq!(
            counts[1], counts[2],
            "every non-equivalent one detected: {row}"
        );
        assert_eq!(counts[3], 0, "{row}");
    }
}

/// A phi of constants whose else-side predecessor is reached from both sides of the branch
/// on `%p` (the then-side branches into it too): `%p` does not tell which constant the
/// edge carried, so a select on it is refused, and the interpreter's traces differ. With
/// the then-side jumping straight to the join, the same select is accepted and runs equal.
#[test]
fn a_select_is_refused_where_an_edge_is_reached_from_both_sides() {
    let original = temp_file("both_sides.chr", BOTH_SIDES);
    let allocated = temp_file("both_sides.alloc.chr", BOTH_SIDES_ALLOCATED);
    let out = chromatic(&["verify", &original, &allocated]);
    let report = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("not-rematerialisable"), "{report}");
    let run = chromatic(&["run", &original, "--against", &allocated]);
    assert!(
        !text(&run.stdout).contains("traces agree"),
        "{}",
        text(&run.stdout)
    );
    let one_side = |s: &str| {
        s.replace("branch divergent %q, join, else", "jump join")
            .replace("branch divergent %q@p1, join, else", "jump join")
    };
    let original = temp_file("one_side.chr", &one_side(BOTH_SIDES));
    let allocated = temp_file("one_side.alloc.chr", &one_side(BOTH_SIDES_ALLOCATED));
    let out = chromatic(&["verify", &original, &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let run = chromatic(&["run", &original, "--against", &allocated]);
    assert!(
        text(&run.stdout).contains("traces agree"),
        "{}",
        text(&run.stdout)
    );
}

const BOTH_SIDES: &str = "target sm_90\n\
\n\
func @f {\n\
entry:\n\
  %p:p1 = cond\n\
  %q:p1 = cond2\n\
  branch divergent %p, t, else\n\
t:\n\
  %a:r1 = mov 1 remat\n\
  branch divergent %q, join, else\n\
else:\n\
  %b:r1 = mov 2 remat\n\
  jump join\n\
join:\n\
  %x:r1 = phi [t: %a], [else: %b]\n\
  %y:r1 = use %x\n\
  ret %y\n\
}\n\
";

const BOTH_SIDES_ALLOCATED: &str = "target sm_90\n\
\n\
func @f {\n\
entry:\n\
  %p:p1@p0 = cond\n\
  %q:p1@p1 = cond2\n\
  branch divergent %p@p0, t, else\n\
t:\n\
  %a:r1@r0 = mov 1 remat\n\
  branch divergent %q@p1, join, else\n\
else:\n\
  %b:r1@r0 = mov 2 remat\n\
  jump join\n\
join:\n\
  remat r0 <- %x:r1 (%p@p0)\n\
  %y:r1@r0 = use %x@r0\n\
  ret %y@r0\n\
}\n\
";
