//! cargo-fuzz target: see `chromatic_cli::fuzz_checks::alloc_verify`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chromatic_cli::fuzz_checks::alloc_verify(data);
});
