//! Rematerialisation across blocks (`src/schedule/across.rs`) end to end: CUB's partial
//! tiles fit ptxas's register count without spilling and their predicates fit the 7
//! predicate registers, every allocation verified and run; the verifier accepts a
//! recomputation in another block only where its definition's block dominates it.

mod common;

use common::chromatic;
use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_file(name: &str, contents: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chromatic-across-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("temp file");
    path.display().to_string()
}

/// `chromatic ptx FILE --manifest corpus/ptx/manifest.tsv --at-ptxas --json`, the kernel
/// whose name contains `kernel`.
fn ptx_kernel(file: &str, kernel: &str) -> Value {
    let out = chromatic(&[
        "ptx",
        file,
        "--manifest",
        "corpus/ptx/manifest.tsv",
        "--at-ptxas",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let kernels: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    kernels
        .as_array()
        .expect("an array of kernels")
        .iter()
        .find(|k| k["kernel"].as_str().is_some_and(|n| n.contains(kernel)))
        .unwrap_or_else(|| panic!("no kernel {kernel} in {file}"))
        .clone()
}

fn spill_bytes(k: &Value) -> u64 {
    let chromatic = &k["budget"]["chromatic"];
    chromatic["store_bytes"].as_u64().expect("store bytes")
        + chromatic["load_bytes"].as_u64().expect("load bytes")
}

/// `DeviceRadixSortHistogramKernel` holds `tid + 640` … `tid + 1920` (and `tid` widened)
/// from the entry block across both loops for the bound checks of its partial tiles: 50
/// registers live at once in the emitted order, 13 of them those. ptxas uses 38.
#[test]
fn cub_radix_histogram_fits_ptxas_count_without_spilling() {
    let k = ptx_kernel(
        "corpus/ptx/cub_sample_sm_80.ptx",
        "DeviceRadixSortHistogramKernel",
    );
    let ptxas = k["ptxas"]["regs"].as_u64().expect("ptxas count");
    assert_eq!(ptxas, 38);
    assert_eq!(k["max_live_emitted"]["r"], 50, "{k}");
    let scheduled = k["max_live"]["r"].as_u64().expect("max_live r");
    assert!(scheduled <= 32, "max_live r 50 -> {scheduled}");
    assert!(k["regs"]["r"].as_u64().expect("regs r") <= ptxas, "{k}");
    assert_eq!(spill_bytes(&k), 0, "{k}");
}

/// `corpus/ptx/guarded_tile_sm_80.ptx`: 12 bound predicates computed in the load phase
/// and read again in the store phase, 12 live at the barrier in the emitted order.
#[test]
fn guarded_tile_predicates_fit_without_spilling() {
    let k = ptx_kernel("corpus/ptx/guarded_tile_sm_80.ptx", "guarded_tile");
    assert_eq!(k["max_live_emitted"]["p"], 12, "{k}");
    let p = k["max_live"]["p"].as_u64().expect("max_live p");
    assert!(p <= 2, "max_live p 12 -> {p}");
    assert!(k["regs"]["p"].as_u64().expect("regs p") <= 7, "{k}");
    assert_eq!(spill_bytes(&k), 0, "{k}");
}

/// The store phase's recomputations are `remat` instructions in other blocks than the
/// `setp`s they recompute; the allocation verifies and runs like the original.
#[test]
fn guarded_tile_recomputes_predicates_in_the_store_blocks() {
    let original = "corpus/ptx/guarded_tile_sm_80.ptx";
    let allocated = temp_file("guarded_tile.alloc.chr", "");
    let out = chromatic(&["alloc", original, "-o", &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&allocated).expect("allocation written");
    let setps = written
        .lines()
        .filter(|l| l.trim_start().starts_with("remat p") && l.contains("%p"))
        .count();
    assert!(setps >= 6, "{setps} predicates recomputed in\n{written}");
    let verify = chromatic(&["verify", original, &allocated]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    let run = chromatic(&["run", original, "--against", &allocated]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
}

/// A loop: `%y = %i + 1` in the body, `%i` the header's phi.
const LOOP: &str = "target sm_80
func @loop {
entry:
  %z:r1 = mov.u32 0 remat
  jump head
head:
  %i:r1 = phi [entry: %z], [latch: %j]
  %c:p1 = setp.lt.s32 %i, 10
  branch divergent %c, body, exit
body:
  %y:r1 = add.s32 %i, 1
  jump latch
latch:
  %j:r1 = add.s32 %y, 1
  jump head
exit:
  ret %i
}
";

/// An allocation of [`LOOP`] with `remat_latch` in the latch and `remat_exit` in the exit.
fn loop_allocated(remat_latch: &str, remat_exit: &str) -> String {
    format!(
        "target sm_80
func @loop {{
entry:
  %z:r1@r0 = mov.u32 0 remat
  jump head
head:
  %i:r1@r0 = phi [entry: %z], [latch: %j]
  %c:p1@p0 = setp.lt.s32 %i@r0, 10
  branch divergent %c@p0, body, exit
body:
  %y:r1@r1 = add.s32 %i@r0, 1
  jump latch
latch:
{remat_latch}  %j:r1@r0 = add.s32 %y@r2, 1
  jump head
exit:
{remat_exit}  ret %i@r0
}}
"
    )
}

#[test]
fn a_recomputation_where_its_definition_dominates_is_accepted() {
    let original = temp_file("loop.chr", LOOP);
    let remat = "  remat r2 <- %y (%i@r0)\n";
    let allocated = temp_file("loop_latch.alloc.chr", &loop_allocated(remat, ""));
    let out = chromatic(&["verify", &original, &allocated]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// In the exit, `%i` has been redefined by the header's phi since the body last ran: the
/// recomputation would compute another value than `%y`.
#[test]
fn a_recomputation_its_definition_does_not_dominate_is_refused() {
    let original = temp_file("loop.chr", LOOP);
    let latch = "  remat r2 <- %y (%i@r0)\n";
    let exit = "  remat r3 <- %y (%i@r0)\n";
    let allocated = temp_file("loop_exit.alloc.chr", &loop_allocated(latch, exit));
    let out = chromatic(&["verify", &original, &allocated]);
    let report = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("not-rematerialisable"), "{report}");
    assert!(report.contains("does not dominate"), "{report}");
}

/// A fixed register (AMD `$exec`) may hold another value in another block, so an
/// operation that reads one is recomputed only in its own block, even where its block
/// dominates.
#[test]
fn a_recomputation_in_another_block_of_an_operation_reading_a_fixed_register_is_refused() {
    let reads_exec = |s: &str| s.replace("add.s32 %i, 1\n", "add.s32 %i, 1 implicit(exec)\n");
    let original = temp_file("loop_exec.chr", &reads_exec(LOOP));
    let remat = "  remat r2 <- %y (%i@r0)\n";
    let allocated = loop_allocated(remat, "")
        .replace("add.s32 %i@r0, 1\n", "add.s32 %i@r0, 1 implicit(exec)\n");
    let allocated = temp_file("loop_exec_latch.alloc.chr", &allocated);
    let out = chromatic(&["verify", &original, &allocated]);
    let report = text(&out.stdout) + &text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("reads fixed registers"), "{report}");
}
