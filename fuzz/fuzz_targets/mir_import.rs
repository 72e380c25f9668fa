//! cargo-fuzz target: see `chromatic_cli::fuzz_checks::mir_import` (seeded with the
//! kernels of `corpus/amd/` by `.ci/run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chromatic_cli::fuzz_checks::mir_import(data));
