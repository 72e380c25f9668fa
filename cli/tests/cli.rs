//! The `chromatic` binary end to end: exit codes, positioned errors, canonical output.

mod common;

use common::{chromatic, root};
use std::process::Output;

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path.display().to_string()
}

/// s=8 comes from the linear CFG: %desc (4 units), live into the else-side, is live
/// through the then-side next to %scale, %t0 and %t1 (1 + 2 + 1).
#[test]
fn check_summarises_a_corpus_file() {
    let out = chromatic(&["check", "corpus/divergent_uniform_live_through_else.chr"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "corpus/divergent_uniform_live_through_else.chr: target gfx9\n  @divergent_uniform_live_through_else: 4 blocks, 11 instructions, 10 values, max_live s=8 v=2\n"
    );
}

#[test]
fn check_points_at_the_error_and_exits_1() {
    let path = temp_file(
        "bad.chr",
        "target gfx9\nfunc @f {\nb:\n  %x:v1 = foo %y\n  ret\n}\n",
    );
    let out = chromatic(&["check", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: undefined value `%y`"), "{stderr}");
    assert!(stderr.contains(&format!("{path}:4:15")), "{stderr}");
}

#[test]
fn check_reports_ssa_errors_with_positions() {
    let src = "target gfx9\nfunc @f {\na:\n  %c:s1 = c\n  branch uniform %c, b, d\nb:\n  %x:v1 = x\n  jump d\nd:\n  ret %x\n}\n";
    let path = temp_file("ssa.chr", src);
    let out = chromatic(&["check", &path]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the definition of `%x` does not dominate this use"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("{path}:10:7")), "{stderr}");
}

#[test]
fn unreadable_input_exits_2() {
    let out = chromatic(&["check", "does/not/exist.chr"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn fmt_prints_the_canonical_form() {
    let path = temp_file(
        "messy.chr",
        "target  gfx9 ; t\nfunc @f {\nb:   ; entry\n  %x:v1=foo   1,2\n    ret %x\n}\n",
    );
    let out = chromatic(&["fmt", &path]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "target gfx9 ; t\n\nfunc @f {\nb: ; entry\n  %x:v1 = foo 1, 2\n  ret %x\n}\n"
    );
}

/// Comments on lines of their own stay before the statement they preceded, indented like
/// it; comments after a statement stay after it; formatting twice changes nothing.
#[test]
fn fmt_keeps_comments() {
    let path = temp_file(
        "commented.chr",
        "; a program\ntarget gfx9\n; the function\nfunc @f {  ; opens\nb:\n; first\n  %x:v1 = foo 1 ; one\n    ret %x\n; last\n}\n; the end\n",
    );
    let out = chromatic(&["fmt", &path]);
    assert_eq!(out.status.code(), Some(0));
    let once = stdout(&out);
    assert_eq!(
        once,
        "; a program\ntarget gfx9\n\n; the function\nfunc @f { ; opens\nb:\n  ; first\n  %x:v1 = foo 1 ; one\n  ret %x\n; last\n} \n; the end\n".replace("} \n", "}\n")
    );
    let again = chromatic(&["fmt", &temp_file("commented2.chr", &once)]);
    assert_eq!(stdout(&again), once);
}

/// Every corpus file keeps its comments through `fmt`, and `fmt` of that is the same text.
#[test]
fn fmt_of_the_corpus_keeps_every_comment_and_is_idempotent() {
    for entry in std::fs::read_dir(root().join("corpus")).expect("corpus") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "chr") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("readable");
        let out = chromatic(&["fmt", &path.display().to_string()]);
        let once = stdout(&out);
        let comments = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| l.find(';').map(|k| l[k..].trim_end().to_string()))
                .collect()
        };
        assert_eq!(comments(&once), comments(&source), "{}", path.display());
        let again = chromatic(&["fmt", &temp_file("fmt_again.chr", &once)]);
        assert_eq!(stdout(&again), once, "{}", path.display());
    }
}

#[test]
fn corpus_job_runs_every_file() {
    let out = chromatic(&["corpus", "corpus"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("files: ") && last.ends_with("failed: 0"),
        "{last}"
    );
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn alloc_then_verify_round_trip_through_files() {
    let allocated = temp_file("tied.alloc.chr", "");
    let out = chromatic(&[
        "alloc",
        "corpus/tied_mac.chr",
        "--regs",
        "v=4",
        "-o",
        &allocated,
        "--stats=json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stats are JSON");
    assert_eq!(stats[0]["classes"][1]["regs_used"], 4);
    assert_eq!(stats[0]["occupancy"], 10);
    let out = chromatic(&["verify", "corpus/tied_mac.chr", &allocated, "--regs", "v=4"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).ends_with("valid\n"));
}

#[test]
fn verify_rejects_a_broken_allocation_with_exit_1() {
    let allocated = temp_file("broken.alloc.chr", "");
    assert_eq!(
        chromatic(&["alloc", "corpus/straight_line.chr", "-o", &allocated])
            .status
            .code(),
        Some(0)
    );
    let text = std::fs::read_to_string(&allocated).unwrap();
    let good = "%m1:v1@v1 = v_mul_f32 %y@v1, %w@v3";
    assert!(text.contains(good), "{text}");
    let broken_path = temp_file(
        "broken2.alloc.chr",
        &text.replace(good, "%m1:v1@v1 = v_mul_f32 %y@v2, %w@v3"),
    );
    let out = chromatic(&["verify", "corpus/straight_line.chr", &broken_path, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("errors are JSON");
    assert_eq!(report["valid"], false, "{report}");
    let e = &report["errors"][0];
    assert_eq!(e["kind"], "wrong-value", "{report}");
    assert_eq!(e["expected"], "%y", "{report}");
    assert_eq!(e["file"], broken_path.as_str(), "{report}");
    assert_eq!(
        e["message"],
        "`%y` (use 0) is read from v2, which holds `%z` here"
    );
    let out = chromatic(&["verify", "corpus/straight_line.chr", &broken_path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = text.lines().position(|l| l.contains(good)).unwrap_or(0) + 1;
    assert!(
        stderr.contains("error[wrong-value]: `%y` (use 0) is read from v2")
            && stderr.contains(&format!("{broken_path}:{line}:"))
            && stderr.contains("%y@v2")
            && stderr.contains("^^^^^"),
        "{stderr}"
    );
}

#[test]
fn verify_json_of_a_valid_allocation_is_an_object() {
    let allocated = temp_file("valid.alloc.chr", "");
    chromatic(&["alloc", "corpus/straight_line.chr", "-o", &allocated]);
    let out = chromatic(&["verify", "corpus/straight_line.chr", &allocated, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(report, serde_json::json!({"valid": true, "errors": []}));
}

/// The original passed as the allocation: one error, not one per operand.
#[test]
fn verify_of_a_program_without_locations_is_one_error() {
    let out = chromatic(&[
        "verify",
        "corpus/straight_line.chr",
        "corpus/straight_line.chr",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("error[").count(), 1, "{stderr}");
    assert!(
        stderr.contains("error[not-allocated]: not allocated"),
        "{stderr}"
    );
}

/// What the allocation lacks is shown in the original, under the original's name.
#[test]
fn verify_places_a_missing_operation_in_the_original() {
    let allocated = temp_file("dropped.alloc.chr", "");
    chromatic(&["alloc", "corpus/effects_memory.chr", "-o", &allocated]);
    let text = std::fs::read_to_string(&allocated).unwrap();
    let is_store = |l: &&str| l.trim_start().starts_with("global_store");
    let store = text.lines().find(is_store).expect("a store").to_string();
    let dropped = temp_file(
        "dropped2.alloc.chr",
        &text.replacen(&format!("{store}\n"), "", 1),
    );
    let out = chromatic(&["verify", "corpus/effects_memory.chr", &dropped]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let original = std::fs::read_to_string(root().join("corpus/effects_memory.chr")).unwrap();
    let line = original.lines().position(|l| is_store(&l)).unwrap() + 1;
    assert!(
        stderr.contains("error[missing-op]")
            && stderr.contains(&format!("corpus/effects_memory.chr:{line}:")),
        "{stderr}"
    );
}

#[test]
fn verify_of_unparsable_input_exits_2() {
    let bad = temp_file("unparsable.chr", "target gfx9\nfunc @f {\n");
    let out = chromatic(&["verify", "corpus/straight_line.chr", &bad]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn alloc_below_the_lowest_legal_budget_is_a_positioned_error() {
    let out = chromatic(&["alloc", "corpus/tied_mac.chr", "--regs", "v=3"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("spill m"), "{}", stdout(&out));
    let out = chromatic(&["alloc", "corpus/tied_mac.chr", "--regs", "v=2"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs 3 `v` registers but the budget is 2 (the lowest legal budget is 3)"),
        "{stderr}"
    );
    assert!(stderr.contains("corpus/tied_mac.chr:10:3"), "{stderr}");
}

/// Every allocator takes a program of operations only: an allocation fed back in is
/// refused at its first copy, with its position, never a panic.
#[test]
fn allocating_an_allocated_program_is_a_positioned_error_for_every_allocator() {
    let first = chromatic(&["alloc", "corpus/fixed_use_overwritten.chr"]);
    assert_eq!(first.status.code(), Some(0));
    let allocated = stdout(&first);
    let line = allocated
        .lines()
        .position(|l| l.trim_start().starts_with("parallel_copy"))
        .expect("the allocation copies")
        + 1;
    let path = temp_file("allocated_twice.chr", &allocated);
    for allocator in [
        "ssa",
        "coloring",
        "linear",
        "regalloc2-ion",
        "regalloc2-fast",
    ] {
        for schedule in ["none", "pressure"] {
            let out = chromatic(&[
                "alloc",
                &path,
                "--allocator",
                allocator,
                "--schedule",
                schedule,
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{allocator}: {stderr}");
            assert!(
                stderr.contains("the input is already allocated")
                    && stderr.contains(&format!("allocated_twice.chr:{line}:")),
                "{allocator}, schedule {schedule}: {stderr}"
            );
        }
    }
}

#[test]
fn bad_budget_arguments_are_rejected_without_panic() {
    for regs in ["v=x", "v", "q=4"] {
        let out = chromatic(&["alloc", "corpus/tied_mac.chr", "--regs", regs]);
        assert!(
            matches!(out.status.code(), Some(1 | 2)),
            "{regs}: {:?}",
            out.status
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{regs}"
        );
    }
}

#[test]
fn original_and_allocated_programs_run_alike() {
    let allocated = temp_file("loop.alloc.chr", "");
    assert_eq!(
        chromatic(&["alloc", "corpus/divergent_loop.chr", "-o", &allocated])
            .status
            .code(),
        Some(0)
    );
    for seed in ["0", "7"] {
        let a = stdout(&chromatic(&[
            "run",
            "corpus/divergent_loop.chr",
            "--seed",
            seed,
            "--lanes",
            "8",
        ]));
        let b = stdout(&chromatic(&[
            "run", &allocated, "--seed", seed, "--lanes", "8",
        ]));
        assert!(a.starts_with("@divergent_loop: digest "), "{a}");
        assert_eq!(a, b);
    }
}

#[test]
fn mutate_check_prints_the_summary_line_last() {
    let out = chromatic(&[
        "mutate-check",
        "corpus/swap_cycle3.chr",
        "corpus/ptx_predicates.chr",
        "--mutants",
        "50",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(
        text.contains("corpus/ptx_predicates.chr @ptx_predicates: 50 mutants"),
        "{text}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(last.starts_with("mutants: 100  non-equivalent: "), "{last}");
    assert!(last.ends_with("missed: 0"), "{last}");
}

/// The mutation kinds of overlapping moves and of a uniform branch turned divergent (on
/// the corpus programs whose uniform branches become unstructured divergence) produce
/// wrong allocations, and the verifier catches every one.
#[test]
fn mutate_check_reports_each_kind_and_catches_the_new_ones() {
    let out = chromatic(&[
        "mutate-check",
        "corpus/swap_cycle3.chr",
        "corpus/swap_cycle3_noswap.chr",
        "corpus/uniform_branch_into_else.chr",
        "corpus/uniform_loop_back_past_else.chr",
        "--mutants",
        "200",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    for kind in [
        "overlapping-copy",
        "overlapping-swap",
        "branch-turned-divergent",
    ] {
        let row = text
            .lines()
            .find(|l| l.starts_with(kind))
            .unwrap_or_else(|| panic!("no {kind} row\n{text}"));
        let n: Vec<usize> = row
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().expect("a count"))
            .collect();
        let [mutants, non_equivalent, detected, missed] = n[..] else {
            panic!("{row}");
        };
        assert!(non_equivalent > 0 && mutants >= non_equivalent, "{row}");
        assert!(detected >= non_equivalent && missed == 0, "{row}");
    }
}

/// `high_pressure_block` on gfx9 needs 41 VGPRs: 6 waves allow 40 (⌊256/6⌋ rounded down to
/// the granule of 4), so it spills; 5 waves allow 48; `--regs` overrides the derived budget
/// of its class.
#[test]
fn alloc_budget_from_occupancy() {
    let text = std::fs::read_to_string(root().join("corpus/high_pressure_block.chr")).unwrap();
    let original = temp_file(
        "pressure_gfx9.chr",
        &text.replace("target generic s=16 v=64", "target gfx9"),
    );
    let spilled = temp_file("pressure_gfx9.spilled.chr", "");
    let args = [
        "alloc",
        &original,
        "-o",
        &spilled,
        "--occupancy",
        "6",
        "--stats=json",
    ];
    let out = chromatic(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    assert_eq!(stats[0]["occupancy"], 6);
    let v = &stats[0]["classes"][1];
    assert_eq!(v["class"], "v");
    assert!(v["spills"].as_u64().unwrap() > 0, "{v}");
    assert!(v["regs_used"].as_u64().unwrap() <= 40, "{v}");
    let allocated = temp_file("pressure_gfx9.alloc.chr", "");
    let budgets: [&[&str]; 2] = [
        &["--occupancy", "5"],
        &["--occupancy", "6", "--regs", "v=44"],
    ];
    for args in budgets {
        let mut command = vec!["alloc", &original, "-o", &allocated, "--stats=json"];
        command.extend(args);
        let out = chromatic(&command);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let stats: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        assert_eq!(stats[0]["occupancy"], 5, "{args:?}");
    }
    let verify = |n: &str| chromatic(&["verify", &original, &allocated, "--occupancy", n]);
    assert_eq!(verify("5").status.code(), Some(0));
    let out = verify("6");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[over-budget]: v40 (def 0) is beyond the register budget"),
        "{stderr}"
    );
}

#[test]
fn unreachable_occupancy_exits_2_with_the_reason() {
    let cases = [
        (
            "corpus/tied_mac.chr",
            "11",
            "target `gfx9` runs at most 10 waves; occupancy 11 cannot be reached",
        ),
        (
            "corpus/ptx_predicates.chr",
            "65",
            "target `sm_80` runs at most 64 warps; occupancy 65 cannot be reached",
        ),
        (
            "corpus/tied_mac.chr",
            "0",
            "occupancy must be at least 1 wave",
        ),
        (
            "corpus/gen9_flags.chr",
            "1",
            "target `gen9` has no occupancy model",
        ),
    ];
    for (file, n, message) in cases {
        for command in ["alloc", "verify"] {
            let mut args = vec![command, file];
            if command == "verify" {
                args.push(file);
            }
            args.extend(["--occupancy", n]);
            let out = chromatic(&args);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(message), "{args:?}: {stderr}");
        }
    }
}

/// The occupancy applies per file: gfx9 files cannot reach 11 waves and fail with the
/// reason, sm_80 files can, and files of targets without a model keep their whole file.
#[test]
fn corpus_occupancy_applies_per_target() {
    let out = chromatic(&["corpus", "corpus", "--occupancy", "11"]);
    assert_eq!(out.status.code(), Some(1));
    let (text, stderr) = (stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(
        stderr.contains("corpus/tied_mac.chr: allocation failed: target `gfx9` runs at most 10 waves; occupancy 11 cannot be reached"),
        "{stderr}"
    );
    assert!(
        text.contains("corpus/ptx_pairs_quads.chr @ptx_pairs_quads: max_live r=14 p=0  regs r=16 p=0  copies 0  swaps 0  occupancy 64  verified"),
        "{text}"
    );
    assert!(
        text.contains("corpus/high_pressure_block.chr @high_pressure_block:"),
        "{text}"
    );
}

/// high_pressure_block has MaxLive v=44 and needs 3 registers at its widest instruction:
/// 42 budgets, each spilling one more value than the last until the end of the block.
#[test]
fn sweep_prints_the_spill_curve_of_a_class() {
    let out = chromatic(&["sweep", "corpus/high_pressure_block.chr", "--class", "v"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 44, "{text}");
    assert!(lines[0].starts_with("corpus/high_pressure_block.chr v=44  spills 0  reloads 0"));
    assert!(
        lines[4].starts_with("corpus/high_pressure_block.chr v=40  spills 4  reloads 4"),
        "{}",
        lines[4]
    );
    assert!(lines[41].contains(" v=3 "), "{}", lines[41]);
    assert!(lines[..42].iter().all(|l| l.ends_with("verified")));
    assert!(
        lines[42].starts_with("points: 42  verified: 42  failed: 0"),
        "{}",
        lines[42]
    );
    assert_eq!(lines[43], "one register more costs more: 0 of 41 steps");
}

/// `--svg` draws one curve per file and class: a dot per verified budget (42 for `v`,
/// from MaxLive 44 down to 3), the allocator's line and, with `--oracle`, the oracle's.
#[test]
fn sweep_svg_draws_one_curve_per_class() {
    let dir = std::env::temp_dir().join(format!("chromatic-curves-{}", std::process::id()));
    let dir_name = dir.display().to_string();
    let out = chromatic(&[
        "sweep",
        "corpus/high_pressure_block.chr",
        "corpus/mma_accumulate_loop.chr",
        "--class",
        "v",
        "--svg",
        &dir_name,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .expect("the directory was made")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, ["high_pressure_block.v.svg"]);
    let svg = std::fs::read_to_string(dir.join(&written[0])).expect("svg");
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
    assert_eq!(svg.matches("<circle").count(), 42);
    assert_eq!(svg.matches("<polyline").count(), 1);
    let out = chromatic(&[
        "sweep",
        "corpus/swap_cycle3.chr",
        "--oracle",
        "--svg",
        &dir_name,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(dir.join("swap_cycle3.v.svg")).expect("svg");
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn sweep_json_has_one_verified_point_per_budget() {
    let out = chromatic(&[
        "sweep",
        "corpus/ptx_predicates.chr",
        "--class",
        "p",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let points: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let points = points.as_array().expect("an array of points");
    let budgets: Vec<u64> = points
        .iter()
        .map(|p| p["budget"].as_u64().expect("budget"))
        .collect();
    assert_eq!(budgets, [7, 6, 5, 4, 3, 2, 1]);
    for p in points {
        assert!(p["error"].is_null(), "{p}");
        let class_spills: u64 = p["stats"][0]["classes"]
            .as_array()
            .expect("classes")
            .iter()
            .map(|c| c["class_spills"].as_u64().expect("class_spills"))
            .sum();
        assert!(class_spills >= 1, "predicates go to r registers: {p}");
    }
}

#[test]
fn sweep_of_an_unknown_class_exits_2() {
    let out = chromatic(&["sweep", "corpus/straight_line.chr", "--class", "zz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("has a class `zz`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sweep_of_a_missing_file_exits_2() {
    let out = chromatic(&["sweep", "does/not/exist.chr"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn alloc_refuses_to_write_over_its_input() {
    let source = std::fs::read_to_string(root().join("corpus/tied_mac.chr")).unwrap();
    let path = temp_file("overwrite.chr", &source);
    let dir = std::path::Path::new(&path)
        .parent()
        .unwrap()
        .display()
        .to_string();
    let spelled_otherwise = format!("{dir}/./overwrite.chr");
    let out = chromatic(&["alloc", &path, "-o", &spelled_otherwise]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("that is the input file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), source);
}

/// A program that does not fit `--target` is an error at its own line, in its own file.
#[test]
fn alloc_target_errors_point_into_the_input() {
    let out = chromatic(&["alloc", "corpus/tied_mac.chr", "--target", "sm_80"]);
    assert_eq!(out.status.code(), Some(1));
    let source = std::fs::read_to_string(root().join("corpus/tied_mac.chr")).unwrap();
    let line = source.lines().position(|l| l.contains("%a:v1 =")).unwrap() + 1;
    let text = stderr(&out);
    assert!(
        text.contains("unknown class `v` for target sm_80 (with --target sm_80)")
            && text.contains(&format!("corpus/tied_mac.chr:{line}:6")),
        "{text}"
    );
}

#[test]
fn run_trace_prints_every_event_where_it_ran() {
    let out = chromatic(&["run", "corpus/tied_mac.chr", "--trace"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let events: usize = text
        .lines()
        .next()
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|n| n.trim_end_matches(" events").parse().ok())
        .expect("the digest line");
    assert_eq!(text.lines().count(), events + 1, "{text}");
    assert!(
        text.contains("#3 corpus/tied_mac.chr:10:11  block entry, instruction 3 `v_mac_f32`  lanes 0 1 2 3  inputs lane 0: "),
        "{text}"
    );
}

/// The first differing event names the block, the instruction in each program, the lanes,
/// and the operand whose input differs.
#[test]
fn run_against_an_allocation_prints_the_first_difference() {
    let allocated = temp_file("against.alloc.chr", "");
    chromatic(&["alloc", "corpus/tied_mac.chr", "-o", &allocated]);
    let same = chromatic(&["run", "corpus/tied_mac.chr", "--against", &allocated]);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(stdout(&same), "@tied_mac: traces agree (8 events)\n");
    let text = std::fs::read_to_string(&allocated).unwrap();
    let mac = text
        .lines()
        .find(|l| l.contains("%d:v1@"))
        .expect("the first mac");
    let use_c = mac.split(", ").last().expect("operand %c").to_string();
    let wrong = use_c.replace("%c@v2", "%c@v1");
    assert_ne!(use_c, wrong, "{mac}");
    let broken = temp_file("against2.alloc.chr", &text.replace(&use_c, &wrong));
    let out = chromatic(&["run", "corpus/tied_mac.chr", "--against", &broken]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    assert!(
        report.starts_with("@tied_mac: first difference at event 3 (seed 0, 4 lanes)\n  original:  corpus/tied_mac.chr:10:11  block entry, instruction 3 `v_mac_f32`  lanes 0 1 2 3")
            && report.contains(&format!("  allocated: {broken}:"))
            && report.ends_with("differs in: the inputs of lane 0 (%c), lane 1 (%c), lane 2 (%c), lane 3 (%c)\n"),
        "{report}"
    );
}

#[test]
fn sweep_reports_a_bad_file_with_its_position_and_exits_1() {
    let path = temp_file(
        "sweep_bad.chr",
        "target gfx9\nfunc @f {\nb:\n  %x:v1 = foo %y\n  ret\n}\n",
    );
    let out = chromatic(&["sweep", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{path}:4:15")),
        "{}",
        stderr(&out)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A reader that leaves early (`chromatic alloc big.chr | head -1`) ends the command
/// quietly with status 0; `println!` would panic on the closed pipe.
#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let path = temp_file("big.chr", &chromatic::synth::synthetic(20_000));
    let mut child = Command::new(env!("CARGO_BIN_EXE_chromatic"))
        .args(["alloc", &path])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut first = [0u8; 16];
    let mut stdout = child.stdout.take().expect("piped");
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let out = child.wait_with_output().expect("the binary ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// A seed range past the last seed is an error naming the flags, for both generators,
/// and writes nothing (it wrapped around to an empty range before).
#[test]
fn a_seed_range_past_the_last_seed_is_an_error() {
    let dir = std::env::temp_dir().join(format!("chromatic-seeds-{}", std::process::id()));
    let dir_s = dir.to_str().expect("utf-8 path");
    for command in ["gen", "ra2-gen"] {
        let args = [
            command,
            "--seed",
            "18446744073709551615",
            "--count",
            "2",
            "-o",
            dir_s,
        ];
        let out = chromatic(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("--seed 18446744073709551615 --count 2 runs past the last seed"),
            "{command}: {stderr}"
        );
        assert!(!dir.exists(), "{command} wrote {dir_s}");
    }
}
