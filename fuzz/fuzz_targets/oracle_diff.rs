//! cargo-fuzz target: see `chromatic_cli::fuzz_checks::oracle_diff`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chromatic_cli::fuzz_checks::oracle_diff(data);
});
