//! cargo-fuzz target: `chromatic_cli::fuzz_checks::alloc_verify_regalloc2` — regalloc2's
//! fuzz-generator function of the input, translated to `.chr`: `ssa` allocates it, and
//! regalloc2's allocations converted back verify (a decline naming its reason is allowed).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chromatic_cli::fuzz_checks::alloc_verify_regalloc2(data);
});
