//! cargo-fuzz target: see `chromatic_cli::fuzz_checks::ptx_import` (seeded with the
//! kernels of `corpus/ptx/` by `.ci/run`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chromatic_cli::fuzz_checks::ptx_import(data));
