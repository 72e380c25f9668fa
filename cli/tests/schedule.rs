//! Pressure scheduling end to end: `alloc --schedule`, the verifier and the interpreter on
//! the reordered allocation, and `schedule-gap` against the exact optimum.

mod common;

use common::chromatic;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_file(name: &str, contents: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-schedule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("temp file");
    path.display().to_string()
}

/// Three loads issued first, each consumed later: three values live at once in the
/// emitted order, two when each load sits next to its use.
const LOADS_FIRST: &str = "target generic s=8 v=8
func @loads_first {
entry:
  %a:v1 = load 0 reads
  %b:v1 = load 4 reads
  %c:v1 = load 8 reads
  %x:v1 = mul %a, %a
  %y:v1 = mul %b, %b
  %z:v1 = mul %c, %c
  %s:v1 = add %x, %y
  %t:v1 = add %s, %z
  ret %t
}
";

#[test]
fn pressure_schedule_lowers_max_live_and_verifies() {
    let original = temp_file("loads_first.chr", LOADS_FIRST);
    let allocated = temp_file("loads_first.alloc.chr", "");
    let out = chromatic(&[
        "alloc",
        &original,
        "--schedule",
        "pressure",
        "--stats",
        "-o",
        &allocated,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stats = text(&out.stdout);
    assert!(
        stats.contains("scheduled: 1 blocks reordered; max_live emitted -> scheduled: v 3 -> 2"),
        "{stats}"
    );
    let out = chromatic(&["verify", &original, &allocated]);
    assert_eq!(text(&out.stdout), format!("{allocated}: valid\n"));
    let out = chromatic(&["run", &original, "--against", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = chromatic(&["alloc", &original, "--schedule", "none", "--stats"]);
    let stats = text(&out.stderr);
    assert!(!stats.contains("scheduled:"), "{stats}");
    assert!(stats.contains("  v             3"), "{stats}");
}

/// At a budget equal to the emitted MaxLive, a class with a swap keeps the emitted order;
/// a class without one is scheduled one unit lower, the unit its copy cycles break
/// through (else through memory).
#[test]
fn a_class_without_a_swap_is_scheduled_below_its_budget() {
    let reordered = |target: &str| {
        let program = LOADS_FIRST.replace("target generic s=8 v=8", target);
        let original = temp_file(&format!("loads_first_{}.chr", target.len()), &program);
        let args = [
            "alloc",
            &original,
            "--schedule",
            "pressure",
            "--regs",
            "v=3",
            "--stats",
        ];
        let out = chromatic(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stderr).contains("scheduled: 1 blocks reordered")
    };
    assert!(!reordered("target generic s=8 v=8"));
    assert!(reordered("target generic s=8 v=8:noswap"));
}

#[test]
fn schedule_flag_rejects_other_values() {
    let out = chromatic(&["alloc", "corpus/straight_line.chr", "--schedule", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected pressure or none"));
}

/// On the shipped corpus every block is solved, the scheduler is never worse than the
/// emitted order, and it is within a few percent of the optimum on average.
#[test]
fn schedule_gap_on_the_corpus() {
    let out = chromatic(&["schedule-gap", "corpus"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].ends_with("unsolved: 0"), "{}", lines[0]);
    let mean: f64 = lines[1]
        .strip_prefix("heuristic / optimum: mean ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|m| m.parse().ok())
        .expect("the mean");
    assert!((1.0..1.05).contains(&mean), "{}", lines[1]);
    assert_eq!(lines[2], "scheduled worse than emitted: 0");
}

/// The softmax shape by hand: eight packed `b32` loaded and unpacked into sixteen halves,
/// each converted to `f32`, reduced to a maximum across the warp (`shfl`), then each
/// converted value used again after it. Holding the packed values and recomputing unpack
/// and conversion after the reduction lowers the peak; reordering alone cannot (every
/// converted value is live across the `shfl`), which `alloc --schedule pressure` shows as
/// MaxLive emitted → scheduled.
fn softmax_shape_ptx() -> String {
    let pairs = 8;
    let mut s = String::from(
        ".version 8.0\n.target sm_80\n.address_size 64\n\n\
         .visible .entry softmax_shape(.param .u64 p_in, .param .u64 p_out)\n{\n\
         \t.reg .b16 %rs<20>;\n\t.reg .b32 %r<40>;\n\t.reg .f32 %f<500>;\n\t.reg .b64 %rd<4>;\n\
         \tld.param.u64 %rd1, [p_in];\n\tld.param.u64 %rd2, [p_out];\n",
    );
    for k in 0..pairs {
        s += &format!("\tld.global.b32 %r{}, [%rd1+{}];\n", k + 1, 4 * k);
        s += &format!(
            "\tmov.b32 {{%rs{}, %rs{}}}, %r{};\n",
            2 * k + 1,
            2 * k + 2,
            k + 1
        );
    }
    for k in 1..=2 * pairs {
        s += &format!("\tcvt.f32.f16 %f{k}, %rs{k};\n");
    }
    s += "\tmax.f32 %f102, %f1, %f2;\n";
    for k in 3..=2 * pairs {
        s += &format!("\tmax.f32 %f{}, %f{}, %f{k};\n", 100 + k, 99 + k);
    }
    s += &format!(
        "\tmov.b32 %r30, %f{};\n\tshfl.sync.bfly.b32 %r31, %r30, 16, 31, -1;\n\tmov.b32 %f200, %r31;\n",
        100 + 2 * pairs
    );
    s += "\tsub.f32 %f402, %f1, %f200;\n";
    for k in 2..=2 * pairs {
        s += &format!("\tsub.f32 %f{}, %f{k}, %f200;\n", 300 + k);
        s += &format!("\tadd.f32 %f{}, %f{}, %f{};\n", 403 + k, 401 + k, 300 + k);
    }
    s += &format!(
        "\tst.global.f32 [%rd2], %f{};\n\tret;\n}}\n",
        403 + 2 * pairs
    );
    s
}

/// `max_live emitted -> scheduled: r A -> B` from `alloc --stats`.
fn max_live_r(stats: &str) -> (u32, u32) {
    let line = stats
        .lines()
        .find(|l| l.contains("max_live emitted -> scheduled"))
        .unwrap_or_else(|| panic!("no scheduling line in {stats}"));
    let r = line.split("r ").nth(1).expect("class r");
    let mut numbers = r
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u32>().expect("a number"));
    (
        numbers.next().expect("emitted"),
        numbers.next().expect("scheduled"),
    )
}

#[test]
fn remat_lowers_the_softmax_peak_and_is_verified() {
    let original = temp_file("softmax_shape.ptx", &softmax_shape_ptx());
    let allocated = temp_file("softmax_shape.alloc.chr", "");
    let out = chromatic(&["alloc", &original, "--stats", "-o", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (emitted, scheduled) = max_live_r(&text(&out.stdout));
    // Reordering alone stays at 17: the sixteen converted values and the maximum are live
    // across the `shfl` in any order.
    assert_eq!(emitted, 17);
    assert!(scheduled <= 12, "max_live r {emitted} -> {scheduled}");
    let written = std::fs::read_to_string(&allocated).expect("allocation written");
    let recomputed = written
        .lines()
        .filter(|l| l.trim_start().starts_with("remat ") && l.contains('('))
        .count();
    assert!(recomputed >= 8, "{recomputed} recomputations in\n{written}");
    let verify = chromatic(&["verify", &original, &allocated]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    let run = chromatic(&["run", &original, "--against", &allocated]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
}

#[test]
fn broken_remats_are_caught() {
    let original = temp_file("softmax_mutants.ptx", &softmax_shape_ptx());
    let out = chromatic(&["mutate-check", &original, "--mutants", "300"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("break-remat"))
        .unwrap_or_else(|| panic!("no break-remat mutants in\n{stdout}"));
    let numbers: Vec<usize> = row
        .split_whitespace()
        .skip(1)
        .map(|t| t.parse().expect("a count"))
        .collect();
    assert!(
        numbers[1] > 0,
        "some change what the kernel computes: {row}"
    );
    assert!(numbers[2] >= numbers[1], "{row}");
    assert_eq!(numbers[3], 0, "none missed: {row}");
}

/// The max-pool-with-indices shape by hand: six `v4` loads (a 6-wide window over four
/// elements), a running maximum per element stored to shared memory before a `bar.sync`
/// region (`ld.shared`, `st.global`), and a second chain over the same loaded values — a
/// running maximum and its window index — stored after it. Built from the bottom, the
/// index chain lands below the region and all 24 loaded values cross it; placing the
/// ordered operations first (or scheduling from the top) builds it beside the maximum.
fn pool_shape_ptx() -> String {
    let window = 6;
    let raw = |k: usize, e: usize| format!("%r{}", 4 * k + e + 1);
    let mut s = String::from(
        ".version 8.0\n.target sm_80\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n\n\
         .visible .entry pool_shape(.param .u64 p_in, .param .u64 p_out, .param .u64 p_idx)\n{\n\
         \t.reg .pred %p<200>;\n\t.reg .b32 %r<400>;\n\t.reg .b64 %rd<10>;\n\
         \tld.param.u64 %rd1, [p_in];\n\tld.param.u64 %rd2, [p_out];\n\tld.param.u64 %rd3, [p_idx];\n",
    );
    for k in 0..window {
        let regs: Vec<String> = (0..4).map(|e| raw(k, e)).collect();
        s += &format!(
            "\tld.global.v4.b32 {{{}}}, [%rd1+{}];\n",
            regs.join(", "),
            16 * k
        );
    }
    let (mut r, mut p) = (100, 1);
    let mut max: Vec<String> = (0..4).map(|e| raw(0, e)).collect();
    for k in 1..window {
        for (e, m) in max.iter_mut().enumerate() {
            s += &format!("\tsetp.gt.f32 %p{p}, {}, {m};\n", raw(k, e));
            s += &format!("\tselp.b32 %r{r}, {}, {m}, %p{p};\n", raw(k, e));
            *m = format!("%r{r}");
            (r, p) = (r + 1, p + 1);
        }
    }
    s += &format!(
        "\tmov.u32 %r300, smem;\n\tst.shared.v4.b32 [%r300], {{{}}};\n\tbar.sync 0;\n\
         \tld.shared.v4.b32 {{%r301, %r302, %r303, %r304}}, [%r300];\n\
         \tst.global.v4.b32 [%rd2], {{%r301, %r302, %r303, %r304}};\n",
        max.join(", ")
    );
    let mut current: Vec<String> = (0..4).map(|e| raw(0, e)).collect();
    let mut index: Vec<String> = Vec::new();
    for _ in 0..4 {
        s += &format!("\tmov.b32 %r{r}, 0;\n");
        index.push(format!("%r{r}"));
        r += 1;
    }
    for k in 1..window {
        for e in 0..4 {
            s += &format!("\tsetp.ge.f32 %p{p}, {}, {};\n", raw(k, e), current[e]);
            s += &format!("\tselp.b32 %r{r}, {}, {}, %p{p};\n", raw(k, e), current[e]);
            s += &format!("\tselp.b32 %r{}, {k}, {}, %p{p};\n", r + 1, index[e]);
            current[e] = format!("%r{r}");
            index[e] = format!("%r{}", r + 1);
            (r, p) = (r + 2, p + 1);
        }
    }
    s += &format!(
        "\tst.global.v4.b32 [%rd3], {{{}}};\n\tret;\n}}\n",
        index.join(", ")
    );
    s
}

#[test]
fn a_computation_read_after_a_barrier_region_is_built_above_it() {
    let original = temp_file("pool_shape.ptx", &pool_shape_ptx());
    let allocated = temp_file("pool_shape.alloc.chr", "");
    let out = chromatic(&["alloc", &original, "--stats", "-o", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (emitted, scheduled) = max_live_r(&text(&out.stdout));
    assert_eq!(emitted, 30);
    assert!(scheduled <= 18, "max_live r {emitted} -> {scheduled}");
    let verify = chromatic(&["verify", &original, &allocated]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    let run = chromatic(&["run", &original, "--against", &allocated]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
}
