//! PTX end to end: import, allocation, verification, export, the `ptx` command and its
//! report, with the binary and the library. What needs `ptxas` runs in CI (`.ci/run`).

mod common;

use common::{chromatic, root};
use std::process::Output;

const HEAD: &str = ".version 9.0\n.target sm_90a\n.address_size 64\n";

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path.display().to_string()
}

const SMALL: &str = "corpus/ptx/0c81e53e18c5_triton_poi_fused_clone_transpose_view_7.ptx";
const ZEROS: &str = "corpus/ptx/831abf1c2d6a_triton_poi_fused_embedding_dense_backward_11.ptx";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn check_reads_ptx() {
    let out = chromatic(&["check", SMALL]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{SMALL}: target sm_90\n  @triton_poi_fused_clone_transpose_view_7: 1 blocks, 39 instructions, 38 values, max_live r=7 p=0\n")
    );
}

#[test]
fn malformed_ptx_is_a_positioned_error() {
    let path = temp_file(
        "bad.ptx",
        &format!("{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tadd.s32 %r1, %r7, 1;\n\tret;\n}}\n"),
    );
    for command in ["check", "alloc", "run", "fmt"] {
        let out = chromatic(&[command, &path]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let err = stderr(&out);
        assert!(
            err.contains("error: undeclared register `%r7`"),
            "{command}: {err}"
        );
        assert!(err.contains(&format!("{path}:7:15")), "{command}: {err}");
    }
}

/// The allocated program verifies against the PTX it came from and runs like it.
#[test]
fn alloc_verify_and_run_a_kernel() {
    let allocated =
        std::env::temp_dir().join(format!("chromatic-ptx-{}-a.chr", std::process::id()));
    let allocated = allocated.display().to_string();
    let out = chromatic(&["alloc", SMALL, "-o", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = chromatic(&["verify", SMALL, &allocated]);
    assert_eq!(stdout(&out), format!("{allocated}: valid\n"));
    let (a, b) = (chromatic(&["run", SMALL]), chromatic(&["run", &allocated]));
    assert_eq!(stdout(&a), stdout(&b));
    assert!(stdout(&a).starts_with("@triton_poi_fused_clone_transpose_view_7: digest "));
}

/// `--emit ptx`: the same kernel, its `.reg` declarations replaced by the allocated
/// registers, every statement kept (the constants read without a register too), and the
/// debug sections untouched.
#[test]
fn alloc_emits_ptx() {
    let out = chromatic(&["alloc", SMALL, "--emit", "ptx"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let original = std::fs::read_to_string(root().join(SMALL)).unwrap();
    assert!(!text.contains(".reg .b32 \t%r<36>;") && original.contains(".reg .b32 \t%r<36>;"));
    assert!(text.contains("\t.reg .b32 %r<"), "{text}");
    let tail = |t: &str| t[t.find("\t.file").unwrap()..].to_string();
    assert_eq!(tail(&text), tail(&original));
    let count = |t: &str, s: &str| t.matches(s).count();
    for op in [
        "shl.b32",
        "mad.wide.s32",
        "ld.global.v2.b32",
        "st.global.v2.b32",
        "ld.param.b64",
        "ret;",
    ] {
        assert_eq!(count(&text, op), count(&original, op), "{op}");
    }
    let out = chromatic(&["alloc", "corpus/straight_line.chr", "--emit", "ptx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--emit ptx needs a .ptx input"));
}

/// `chromatic ptx`: per kernel the counts beside ptxas's from the manifest, and the totals.
#[test]
fn ptx_report_against_the_manifest() {
    let out = chromatic(&[
        "ptx",
        SMALL,
        ZEROS,
        "--manifest",
        "corpus/ptx/manifest.tsv",
        "--at-ptxas",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(
        lines[0].starts_with(&format!(
            "{SMALL} @triton_poi_fused_clone_transpose_view_7: insts 39  max_live r=7 p=0  scheduled r=5 p=0  regs r="
        )),
        "{text}"
    );
    assert!(
        lines[0].ends_with("ptxas 11  at r=11: spill bytes 0+0 ptxas 0+0"),
        "{text}"
    );
    assert!(lines[1].contains("ptxas 6  at r=6: spill bytes "), "{text}");
    assert!(
        lines[2].starts_with("kernels: 2  instructions: 49  regs r: "),
        "{text}"
    );
    assert!(
        lines[2].ends_with("(ptxas 17)  predicates over 7: 0  failed: 0"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("at the budget: spill+reload bytes "),
        "{text}"
    );
    assert!(
        lines[5].starts_with("registers <= ptxas on ") && lines[5].ends_with("/2 kernels"),
        "{text}"
    );
    let json = chromatic(&[
        "ptx",
        SMALL,
        "--manifest",
        "corpus/ptx/manifest.tsv",
        "--json",
    ]);
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(rows[0]["kernel"], "triton_poi_fused_clone_transpose_view_7");
    assert_eq!(rows[0]["ptxas"]["regs"], 11);
    assert_eq!(rows[0]["max_live_emitted"]["r"], 7);
    assert_eq!(rows[0]["max_live"]["r"], 5);
    assert_eq!(rows[0]["blocks_scheduled"], 1);
}

/// `--times` adds each allocation at the budget's time to its kernel's line, their total
/// and the slowest of them; the JSON has it only then.
#[test]
fn ptx_times_the_allocation_at_the_budget() {
    let args = [
        "ptx",
        SMALL,
        ZEROS,
        "--manifest",
        "corpus/ptx/manifest.tsv",
        "--at-ptxas",
    ];
    let out = chromatic(&[&args[..], &["--times"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines[..2] {
        let at = line.split("at r=").nth(1).unwrap_or_default();
        let us = at.split(" in ").nth(1).and_then(|t| t.split(" µs").next());
        assert!(us.is_some_and(|n| n.parse::<u64>().is_ok()), "{line}");
    }
    let total = lines
        .iter()
        .filter(|l| l.starts_with("time at the budget: allocation "));
    assert_eq!(total.count(), 1, "{text}");
    let slowest: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("slowest at the budget: "))
        .collect();
    assert_eq!(slowest.len(), 2, "{text}");
    assert!(
        slowest.iter().all(|l| l.contains(" insts): allocation ")),
        "{text}"
    );
    let json = chromatic(&[&args[..], &["--json", "--times"]].concat());
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert!(rows[0]["budget"]["alloc_us"].is_u64(), "{}", rows[0]);
    let json = chromatic(&[&args[..], &["--json"]].concat());
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert!(rows[0]["budget"].get("alloc_us").is_none(), "{}", rows[0]);
}

/// `chromatic ptx KERNEL --at-ptxas --json` with the sample's manifest: one row per kernel.
fn at_ptxas_count(kernel: &str) -> serde_json::Value {
    let out = chromatic(&[
        "ptx",
        kernel,
        "--manifest",
        "corpus/ptx/manifest.tsv",
        "--at-ptxas",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Triton's softmax keeps each exponential both for an `fma` sum before a barrier and for
/// a product divided after it. At ptxas's own count (128) nothing spills once each product
/// is hoisted to where its operands die (`src/schedule/hoist.rs`); with the products sunk
/// to their divisions, both operands of each crossed the reduction and 216 bytes spilled.
#[test]
fn softmax_fits_ptxas_count_once_products_are_hoisted() {
    let kernel =
        "corpus/ptx/036cbd0dc727_triton_per_fused__softmax_exp_prepare_softmax_online_sub_2.ptx";
    let row = &at_ptxas_count(kernel)[0];
    assert_eq!(row["budget"]["regs"], 128, "{row}");
    assert_eq!(row["budget"]["chromatic"]["store_bytes"], 0, "{row}");
    assert_eq!(row["budget"]["chromatic"]["load_bytes"], 0, "{row}");
    assert!(
        row["max_live"]["r"].as_u64().is_some_and(|r| r <= 128),
        "{row}"
    );
    assert!(row["error"].is_null(), "{row}");
}

/// Triton's max_pool2d with indices: two chains of compares per window read every loaded
/// value, and their predicates outnumber the 7 registers. At ptxas's own count (63)
/// nothing spills once each load's values are consumed by both chains before the next load
/// is opened (`Heuristic::Staged`, `src/schedule/list.rs`): 120 bytes were spilled and
/// reloaded before predicates were recomputed while `r` was over its budget, 32 before
/// the staged order, none after.
#[test]
fn max_pool_fits_ptxas_count_once_each_load_is_consumed_before_the_next() {
    let kernel = "corpus/ptx/5db2e524a152_triton_poi_fused_max_pool2d_with_indices_12.ptx";
    let row = &at_ptxas_count(kernel)[0];
    assert_eq!(row["budget"]["regs"], 63, "{row}");
    assert_eq!(row["budget"]["chromatic"]["store_bytes"], 0, "{row}");
    assert_eq!(row["budget"]["chromatic"]["load_bytes"], 0, "{row}");
    assert!(row["error"].is_null(), "{row}");
}

/// `corpus/ptx/window_argmax_sm_90.ptx`, the max-pool shape in small (written for
/// chromatic): eight guarded `v4` loads, each value read by a running maximum stored before
/// a barrier and by a running index stored after it. Every classic and extended order
/// keeps most of the 32 loaded values live at once (MaxLive 38 as emitted); the staged
/// order consumes each load before the next, so at 24 registers nothing spills.
#[test]
fn window_argmax_fits_24_registers_once_each_load_is_consumed_before_the_next() {
    let out = chromatic(&[
        "ptx",
        "corpus/ptx/window_argmax_sm_90.ptx",
        "--regs",
        "r=24",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let row = &rows[0];
    assert_eq!(row["max_live_emitted"]["r"], 38, "{row}");
    assert!(
        row["max_live"]["r"].as_u64().is_some_and(|r| r < 24),
        "{row}"
    );
    assert_eq!(row["budget"]["chromatic"]["store_bytes"], 0, "{row}");
    assert_eq!(row["budget"]["chromatic"]["load_bytes"], 0, "{row}");
    assert!(row["error"].is_null(), "{row}");
}

/// Minimum-registers mode on the sample: wherever the predicates fit their 7 registers
/// (so nothing spills), `r` takes at most one unit more than MaxLive after scheduling (the
/// least budget, and a unit for copy cycles: `r` has no swap), never the whole file's
/// greedy placement.
#[test]
fn ptx_sample_registers_stay_within_max_live_plus_one() {
    let out = chromatic(&["ptx", "corpus/ptx", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), 24);
    let mut checked = 0;
    for row in rows
        .iter()
        .filter(|row| row["max_live"]["p"].as_u64() <= Some(7))
    {
        let (regs, max_live) = (&row["regs"]["r"], &row["max_live"]["r"]);
        let (regs, max_live) = (
            regs.as_u64().expect("regs"),
            max_live.as_u64().expect("max_live"),
        );
        assert!(
            regs <= max_live + 1,
            "{}: {regs} > {max_live} + 1",
            row["kernel"]
        );
        checked += 1;
    }
    assert_eq!(
        checked, 24,
        "every kernel's predicates fit their 7 registers"
    );
}

/// The main job walks `.ptx` files too; every sample kernel allocates, verifies and runs.
#[test]
fn corpus_covers_the_ptx_sample() {
    let out = chromatic(&["corpus", "corpus/ptx"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("files: 17  functions: 24  instructions: "),
        "{last}"
    );
    assert!(last.ends_with("over-budget: 0  failed: 0"), "{last}");
    assert_eq!(text.matches("verified").count(), 24);
}

/// A kernel swept from MaxLive down: every point verifies.
#[test]
fn sweep_a_kernel() {
    let out = chromatic(&["sweep", SMALL, "--class", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let totals = text.lines().find(|l| l.starts_with("points: "));
    assert!(totals.is_some_and(|l| l.contains("failed: 0")), "{text}");
    let rises = text.lines().last().unwrap_or_default();
    assert!(
        rises.starts_with("one register more costs more: "),
        "{rises}"
    );
}

const MOVES: &str = ".visible .entry m()
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	mov.u32 %r1, %tid.x;
	cvt.u64.u32 %rd1, %r1;
	mul.wide.u32 %rd2, %r1, 8;
	setp.eq.s32 %p1, %r1, 0;
	@%p1 bra $L__skip;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u64 [%rd3], %rd1;
$L__skip:
	st.global.u64 [%rd2], %rd1;
	ret;
}
";

/// A hand-written allocation with the artefacts an allocator may add: a copy cycle of two
/// 64-bit values broken through one 32-bit unit, a predicate spilled into a 32-bit
/// register, a 64-bit spill to an odd slot, and a split edge with copies of its own.
const MOVES_ALLOCATED: &str = "target sm_90

func @m {
bb0:
  %r1.1:r1@r0 = mov.u32 remat
  %rd1.1:r2@r[2:3] = cvt.u64.u32 %r1.1@r0
  %rd2.1:r2@r[4:5] = mul.wide.u32 %r1.1@r0, 8
  %p1.1:p1@p0 = setp.eq.s32 %r1.1@r0, 0
  parallel_copy r6 <- r2 %rd1.1
  parallel_copy r2 <- r4 %rd2.1
  parallel_copy r4 <- r6 %rd1.1
  parallel_copy r6 <- r3 %rd1.1
  parallel_copy r3 <- r5 %rd2.1
  parallel_copy r5 <- r6 %rd1.1
  spill r7 <- p0 %p1.1
  spill m[1:2] <- r[4:5] %rd1.1
  reload p0 <- r7 %p1.1
  reload r[8:9] <- m[1:2] %rd1.1
  branch divergent %p1.1@p0, bb0.L__skip, bb1
bb1:
  %rd3.1:r2@r[4:5] = add.s64 %rd1.1@r[8:9], %rd2.1@r[2:3]
  st.global.u64 %rd3.1@r[4:5], %rd1.1@r[8:9] writes
  jump L__skip
L__skip:
  st.global.u64 %rd2.1@r[2:3], %rd1.1@r[8:9] writes
  ret
bb0.L__skip:
  jump L__skip
}
";

#[test]
fn export_writes_the_allocations_artefacts() {
    let src = format!("{HEAD}{MOVES}");
    let imported = chromatic::ptx::import(&src).unwrap();
    let allocated = chromatic::parse(MOVES_ALLOCATED).unwrap();
    let errors = chromatic_verifier::verify_program(&imported.program, &allocated, None);
    assert_eq!(errors, vec![], "the hand-written allocation is correct");
    let out = chromatic::ptx::export::export(&src, &imported.module, &imported.program, &allocated)
        .unwrap();
    let body = out.split_once("{\n").map(|x| x.1).unwrap_or_default();
    assert_eq!(
        body,
        "\t.reg .pred %p<1>;
\t.reg .b32 %r<8>;
\t.reg .b64 %rd<9>;
\t.reg .b32 %chr_t0;
\t.reg .b32 %chr_t1;
\t.reg .b32 %chr_t2;
\t.reg .b32 %chr_t3;
\t.reg .b32 %chr_t4;
\t.reg .b32 %chr_t5;
\t.reg .b32 %chr_t6;
\t.reg .b32 %chr_t7;
\t.local .align 16 .b8 __chromatic_spill[12];

\tmov.u32 %r0, %tid.x;
\tcvt.u64.u32 %rd2, %r0;
\tmul.wide.u32 %rd4, %r0, 8;
\tsetp.eq.s32 %p0, %r0, 0;
\tmov.b64 {%chr_t0, %chr_t1}, %rd4;
\tmov.b64 {%chr_t2, %chr_t3}, %rd2;
\tmov.b64 %rd2, {%chr_t0, %chr_t1};
\tmov.b64 %rd4, {%chr_t2, %chr_t3};
\tmov.b32 %r6, %chr_t3;
\tselp.u32 %r7, 1, 0, %p0;
\tmov.b64 {%chr_t4, %chr_t5}, %rd4;
\tst.local.b32 [__chromatic_spill+4], %chr_t4;
\tst.local.b32 [__chromatic_spill+8], %chr_t5;
\tsetp.ne.u32 %p0, %r7, 0;
\tld.local.b32 %chr_t6, [__chromatic_spill+4];
\tld.local.b32 %chr_t7, [__chromatic_spill+8];
\tmov.b64 %rd8, {%chr_t6, %chr_t7};
\t@%p0 bra $L__chr_bb0_L__skip;
\tadd.s64 %rd4, %rd8, %rd2;
\tst.global.u64 [%rd4], %rd8;
$L__skip:
\tst.global.u64 [%rd2], %rd8;
\tret;
$L__chr_bb0_L__skip:
\tbra.uni $L__skip;
}
"
    );
}
