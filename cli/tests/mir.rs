//! LLVM AMDGPU machine IR end to end: import, allocation, verification and the `mir`
//! comparison with LLVM 19, with the binary.

mod common;

use common::{chromatic, root};
use std::process::{Command, Output};

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-mir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path.display().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SAXPY: &str = "corpus/amd/ocl_saxpy-gfx942.mir";
const MANDELBROT: &str = "corpus/amd/ocl_mandelbrot-gfx1100.mir";

#[test]
fn check_reads_mir_with_its_target() {
    let out = chromatic(&["check", SAXPY, MANDELBROT]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("{SAXPY}: target gfx942\n  @saxpy: 3 blocks, ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{MANDELBROT}: target gfx11-w32\n")),
        "{text}"
    );
}

#[test]
fn allocation_of_mir_saves_and_verifies() {
    let out_path = temp_file("mandelbrot.alloc.chr", "");
    let out = chromatic(&["alloc", MANDELBROT, "-o", &out_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let verified = chromatic(&["verify", MANDELBROT, &out_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let run = chromatic(&["run", MANDELBROT, "--against", &out_path]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
}

const MATMUL: &str = "corpus/amd/t03_matmul_fp32_64x64x32_w4-gfx942.mir";

/// MIR is scheduled for pressure by default, within its fixed-register dependences: the
/// matmul's VGPR MaxLive drops, the allocation carries the `$scc` accesses, and the
/// verifier (which checks their order) and the interpreter accept it.
#[test]
fn mir_is_scheduled_within_its_fixed_register_order() {
    let out_path = temp_file("matmul.alloc.chr", "");
    let out = chromatic(&["alloc", MATMUL, "--stats", "-o", &out_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stats = stdout(&out);
    let line = stats
        .lines()
        .find(|l| l.contains("scheduled:"))
        .unwrap_or_else(|| panic!("{stats}"));
    let vgprs = line
        .split("v ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("{line}"));
    let (emitted, scheduled) = vgprs.split_once(" -> ").unwrap_or_else(|| panic!("{line}"));
    let number = |t: &str| {
        t.trim()
            .parse::<u32>()
            .unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    assert!(number(scheduled) < number(emitted), "{line}");
    let allocated = std::fs::read_to_string(&out_path).expect("allocation");
    assert!(
        allocated.contains(" implicit_def(scc)"),
        "no $scc write kept"
    );
    assert!(allocated.contains(" implicit(scc)"), "no $scc read kept");
    let verified = chromatic(&["verify", MATMUL, &out_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let run = chromatic(&["run", MATMUL, "--against", &out_path]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
}

/// Minimum-registers mode allocates at the least budget that needs no spill: the
/// matmul's VGPRs (with MFMA's even-aligned tuples) are exactly its scheduled MaxLive,
/// where the whole file as budget left gaps up to 84.
#[test]
fn minimum_registers_mode_reaches_maxlive_with_aligned_tuples() {
    allocated_in_vgprs(MATMUL, "matmul.least.chr", 65);
}

/// At LLVM's 16 AGPRs the matmul's accumulators rotate on the back edge with no AGPR free:
/// each goes through a free VGPR (`parallel_copy vN <- aM`), never through a slot, and the
/// verifier accepts the copies between the two files; the allocation runs like the input.
#[test]
fn agpr_copy_cycles_go_through_a_free_vgpr() {
    let out_path = temp_file("matmul.a16.chr", "");
    let out = chromatic(&["alloc", MATMUL, "--regs", "v=80,a=16", "-o", &out_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&out_path).expect("allocation written");
    let through_vgpr = text
        .lines()
        .filter(|l| l.trim_start().starts_with("parallel_copy v") && l.contains(" <- a"))
        .count();
    assert!(through_vgpr > 0, "no AGPR held in a VGPR:\n{text}");
    let agpr_slots = text
        .lines()
        .filter(|l| l.trim_start().starts_with("spill ") && l.contains(" <- a"))
        .count();
    assert_eq!(agpr_slots, 0, "an AGPR went to memory:\n{text}");
    let verified = chromatic(&["verify", MATMUL, &out_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let run = chromatic(&["run", MATMUL, "--against", &out_path]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
}

/// Allocates `kernel` in minimum-registers mode into `name`, insists that its VGPR
/// MaxLive and registers used are both `vgprs` and that the allocation verifies and runs
/// like the original; the allocated text.
fn allocated_in_vgprs(kernel: &str, name: &str, vgprs: u32) -> String {
    let out_path = temp_file(name, "");
    let out = chromatic(&["alloc", kernel, "--stats", "-o", &out_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stats = stdout(&out);
    let columns: Vec<&str> = stats
        .lines()
        .map(str::split_whitespace)
        .find_map(|mut words| (words.next() == Some("v")).then(|| words.take(2).collect()))
        .unwrap_or_else(|| panic!("{stats}"));
    let expected = vgprs.to_string();
    assert_eq!(
        columns,
        [&expected, &expected],
        "max_live and regs_used: {stats}"
    );
    let verified = chromatic(&["verify", kernel, &out_path]);
    assert_eq!(verified.status.code(), Some(0), "{}", stdout(&verified));
    let run = chromatic(&["run", kernel, "--against", &out_path]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
    std::fs::read_to_string(&out_path).expect("allocation written")
}

const CARRIED_PAIRS: &str = "corpus/amd/loop_carried_pairs-gfx942.mir";

/// A loop carrying four VGPR pairs as 32-bit PHIs regrouped by `REG_SEQUENCE`, whose
/// results go back as sub-register copies while the pairs are read whole after the loop:
/// the PHIs become pair PHIs and the copies go, so the back edge holds each pair once.
/// 11 VGPRs (LLVM 19: 12); 17 while the copies were values of their own.
#[test]
fn loop_carried_parts_are_one_tuple_phi() {
    let text = allocated_in_vgprs(CARRIED_PAIRS, "carried_pairs.chr", 11);
    let pair_phis = text
        .lines()
        .filter(|l| l.contains(":v2@") && l.contains(" = phi "))
        .count();
    assert_eq!(pair_phis, 4, "{text}");
    let compared = chromatic(&[
        "mir",
        CARRIED_PAIRS,
        "--manifest",
        "corpus/amd/manifest.tsv",
    ]);
    assert!(
        stdout(&compared)
            .contains("vgpr_file 11  occupancy 8  llvm s=14 v=12 a=0  vgpr_file 12  occupancy 8"),
        "{}",
        stdout(&compared)
    );
}

const UNPACK: &str = "corpus/amd/unpack_across_barrier-gfx1100.mir";

/// Sixteen bf16 values unpacked (`V_LSHLREV_B32`/`V_AND_B32`, reading `$exec`) from eight
/// packed registers, read before a barrier and again after it: the unpacks are
/// recomputed after the barrier from the packed registers, which the block never
/// overwrites `$exec` around, so eight registers cross it instead of sixteen. 12 VGPRs
/// (LLVM 19: 27); 19 while VALU operations were not recomputed. The export writes each
/// recomputation as the original instruction reading the packed register.
#[test]
fn valu_unpacks_are_recomputed_across_a_barrier() {
    let text = allocated_in_vgprs(UNPACK, "unpack.chr", 12);
    let recomputed = text
        .lines()
        .filter(|l| l.trim_start().starts_with("remat v") && l.contains(".sub"))
        .count();
    assert_eq!(recomputed, 16, "{text}");
    let mir_path = temp_file("unpack.mir", "");
    let out = chromatic(&["alloc", UNPACK, "--emit", "mir", "-o", &mir_path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let exported = std::fs::read_to_string(&mir_path).expect("export written");
    let unpacks = |mir: &str| {
        mir.lines()
            .filter(|l| {
                l.contains("V_LSHLREV_B32_e64 16, ") || l.contains("V_AND_B32_e64 -65536, ")
            })
            .count()
    };
    let source = std::fs::read_to_string(root().join(UNPACK)).expect("kernel");
    assert_eq!(unpacks(&source), 16, "{source}");
    assert_eq!(unpacks(&exported), 32, "{exported}");
}

#[test]
fn malformed_mir_is_a_positioned_error() {
    let text = std::fs::read_to_string(root().join(SAXPY)).expect("kernel");
    let bad = text.replacen("S_ENDPGM 0", "S_ENDPGM 0 ^", 1);
    let line = bad
        .lines()
        .position(|l| l.contains("S_ENDPGM 0 ^"))
        .expect("edited")
        + 1;
    let path = temp_file("bad.mir", &bad);
    for command in ["check", "alloc", "run"] {
        let out = chromatic(&[command, &path]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let err = stderr(&out);
        assert!(err.contains("unexpected character `^`"), "{command}: {err}");
        assert!(
            err.contains(&format!("bad.mir:{line}:16")),
            "{command}: {err}"
        );
    }
}

/// The comparison with LLVM 19 on the sample: every kernel allocated, verified and
/// interpreted; LLVM's figures are the manifest's; the run is deterministic.
#[test]
fn mir_command_compares_with_llvm() {
    let args = [
        "mir",
        "corpus/amd",
        "--manifest",
        "corpus/amd/manifest.tsv",
        "--at-llvm",
    ];
    let out = chromatic(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let kernels = std::fs::read_dir(root().join("corpus/amd"))
        .expect("corpus/amd")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "mir"))
        })
        .count();
    assert!(
        text.contains(&format!(
            "kernels: {kernels}  allocated, verified and interpreted: {kernels}  failed: 0"
        )),
        "{text}"
    );
    let saxpy = text
        .lines()
        .find(|l| l.starts_with(&format!("{SAXPY} @saxpy:")))
        .expect("saxpy line");
    assert!(
        saxpy.contains("llvm s=12 v=6 a=0  vgpr_file 6  occupancy 8"),
        "{saxpy}"
    );
    assert!(
        text.contains(&format!(
            "at llvm's occupancy: allocated {kernels}/{kernels}  spills chromatic v="
        )),
        "{text}"
    );
    assert!(
        saxpy.contains("at llvm's occupancy 8 v=64 a=0: spills chromatic v=0 s=0 llvm v=0 s=0"),
        "{saxpy}"
    );
    // At LLVM's 16 AGPRs the 16 MFMA accumulators fill the AGPR file on the loop's back
    // edge: their rotation holds one AGPR in a free VGPR (the AGPRs' copy temporary), not
    // in scratch (16 units were stored before).
    let matmul = text
        .lines()
        .find(|l| l.starts_with(&format!("{MATMUL} @matmul_kernel:")))
        .expect("matmul line");
    assert!(
        matmul.contains("at llvm's occupancy 5 v=80 a=16: spills chromatic v=0 s=0"),
        "{matmul}"
    );
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("VGPRs <= LLVM on ") && last.ends_with(&format!("/{kernels} kernels")),
        "{last}"
    );
    assert_eq!(stdout(&chromatic(&args)), text);
}

/// `llc-19` when it runs here (CI installs it); `None` after saying the test is skipped.
fn llc(test: &str) -> Option<&'static str> {
    let runs = Command::new("llc-19")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        eprintln!("{test}: SKIPPED: llc-19 is not on the PATH (apt-get install llvm-19)");
    }
    runs.then_some("llc-19")
}

/// The body of an exported function: every register physical, the control-flow pseudos
/// lowered, live-ins listed; the header without virtual registers.
#[test]
fn emit_mir_writes_physical_registers() {
    let out = chromatic(&["alloc", SAXPY, "--emit", "mir"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let body = text.split("body:").nth(1).expect("a body");
    let virtual_regs = body
        .lines()
        .filter(|l| !l.trim_start().starts_with("bb."))
        .filter(|l| {
            l.match_indices('%')
                .any(|(i, _)| l[i + 1..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    assert_eq!(virtual_regs, 0, "{body}");
    assert!(body.contains("S_AND_SAVEEXEC_B64"), "{body}");
    assert!(body.contains("$exec = S_OR_B64 $exec, "), "{body}");
    assert!(
        !body.contains("SI_IF") && !body.contains("SI_END_CF"),
        "{body}"
    );
    assert!(body.contains("    liveins: $"), "{body}");
    assert!(text.contains("registers:       []\n"), "{text}");
    assert!(!text.contains("virtual-reg: '%"), "{text}");
    assert_eq!(stdout(&chromatic(&["alloc", SAXPY, "--emit", "mir"])), text);
    let chr = chromatic(&["alloc", "corpus/tied_mac.chr", "--emit", "mir"]);
    assert_eq!(chr.status.code(), Some(2), "{}", stderr(&chr));
    assert!(stderr(&chr).contains("--emit mir needs a .mir input"));
}

/// Spills to scratch and SGPR spills to VGPR lanes are written as LLVM's pseudos and
/// lane instructions, and the spill-slot objects declared.
#[test]
fn emit_mir_writes_spill_code() {
    let out = chromatic(&[
        "alloc",
        "corpus/amd/tc_math_fp64-gfx942.mir",
        "--regs",
        "s=16,v=12",
        "--emit",
        "mir",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("SI_SPILL_V32_SAVE $vgpr"), "{text}");
    assert!(text.contains("= SI_SPILL_V32_RESTORE %stack."), "{text}");
    assert!(
        text.contains("type: spill-slot, offset: 0, size: 4"),
        "{text}"
    );
    assert!(text.contains("hasSpilledVGPRs: true"), "{text}");
    let lanes = chromatic(&[
        "alloc",
        "corpus/amd/ocl_mandelbrot-gfx942.mir",
        "--regs",
        "s=12",
        "--emit",
        "mir",
    ]);
    assert_eq!(lanes.status.code(), Some(0), "{}", stderr(&lanes));
    let lanes = stdout(&lanes);
    assert!(lanes.contains("= V_WRITELANE_B32 $sgpr"), "{lanes}");
    assert!(lanes.contains("= V_READLANE_B32 $vgpr"), "{lanes}");
}

/// Every exported kernel of the sample assembles with `llc-19`, at the minimum registers
/// and with spill code forced by a tight budget.
#[test]
fn exported_kernels_assemble_with_llc() {
    let Some(llc) = llc("exported_kernels_assemble_with_llc") else {
        return;
    };
    let out = chromatic(&["mir", "corpus/amd", "--export"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    let kernels = text.lines().filter(|l| l.contains(" @")).count();
    assert!(
        text.contains(&format!(
            "exported: {kernels}/{kernels} kernels assembled by llc"
        )),
        "{text}"
    );
    assert!(text.contains("exported: llc s="), "{text}");
    let spilled = [
        ("corpus/amd/tc_math_fp64-gfx942.mir", "s=16,v=12", "gfx942"),
        ("corpus/amd/ocl_mandelbrot-gfx942.mir", "s=12", "gfx942"),
        ("corpus/amd/ocl_nbody_step-gfx1100.mir", "v=16", "gfx1100"),
        (MATMUL, "v=80,a=16", "gfx942"),
    ];
    for (file, regs, cpu) in spilled {
        let path = temp_file("spilled.mir", "");
        let out = chromatic(&["alloc", file, "--regs", regs, "--emit", "mir", "-o", &path]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        let asm = Command::new(llc)
            .args(["-mtriple=amdgcn-amd-amdhsa", &format!("-mcpu={cpu}"), "-O3"])
            .args(["-start-after=virtregrewriter,1", &path, "-o", "-"])
            .output()
            .expect("llc runs");
        assert!(asm.status.success(), "{file} at {regs}: {}", stderr(&asm));
        assert!(stdout(&asm).contains("amdhsa.kernels"), "{file}");
    }
}

/// One kernel per register-file model that differs from gfx942's and gfx1100's, each the
/// IR of a corpus kernel through `llc-19 -mcpu=…`: the target comes from the processor,
/// and at LLVM's own occupancy the budget is what that file allows (gfx1030 and gfx1102
/// allocate 16 VGPRs at a time from 1024 and run at most 16 waves; gfx1201 has gfx1100's
/// 1536; gfx940 shares gfx942's unified VGPR/AGPR file; gfx908's AGPRs have a file of
/// their own, and occupancy reads the larger count).
#[test]
fn each_processor_takes_its_register_file() {
    let expect = [
        (
            "tc_trans2d_fp32_64x64_w4-gfx1030",
            "chromatic s=16 v=36 a=0  vgpr_file 36  occupancy 16  llvm s=15 v=67 a=0  vgpr_file 67  occupancy 12",
            "at llvm's occupancy 12 v=80 a=0: spills chromatic v=0 s=0",
        ),
        (
            "tc_trans2d_fp32_64x64_w4-gfx1102",
            "occupancy 16  llvm s=16 v=67 a=0  vgpr_file 67  occupancy 12",
            "at llvm's occupancy 12 v=80 a=0: spills chromatic v=0 s=0",
        ),
        (
            "tc_trans2d_fp32_64x64_w4-gfx1201",
            "occupancy 16  llvm s=13 v=73 a=0  vgpr_file 73  occupancy 16",
            "at llvm's occupancy 16 v=96 a=0: spills chromatic v=0 s=0",
        ),
        (
            "tc_dot_fp16_fp32_32x32x32_w4_add-matrix-gfx908",
            "chromatic s=12 v=29 a=16  vgpr_file 29  occupancy 8  llvm s=20 v=23 a=16  vgpr_file 23  occupancy 10",
            "at llvm's occupancy 10 v=24 a=16:",
        ),
        (
            "tc_dot_fp16_fp32_32x32x32_w4_add-matrix-gfx940",
            "chromatic s=12 v=13 a=16  vgpr_file 32  occupancy 8  llvm s=22 v=21 a=16",
            "at llvm's occupancy 8 v=48 a=16: spills chromatic v=0 s=0",
        ),
    ];
    let files: Vec<String> = expect
        .iter()
        .map(|(name, ..)| format!("corpus/amd/{name}.mir"))
        .collect();
    let mut args = vec!["mir", "--manifest", "corpus/amd/manifest.tsv", "--at-llvm"];
    args.extend(files.iter().map(String::as_str));
    let out = chromatic(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for ((_, figures, at_occupancy), file) in expect.iter().zip(&files) {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{file} @")))
            .unwrap_or_else(|| panic!("no line for {file}:\n{text}"));
        assert!(line.contains(figures), "{line}");
        assert!(line.contains(at_occupancy), "{line}");
    }
}
