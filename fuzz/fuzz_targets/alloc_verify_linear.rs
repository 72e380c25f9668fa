//! cargo-fuzz target: `chromatic_cli::fuzz_checks::alloc_verify_with` for the `linear`
//! baseline (a decline is allowed; a wrong allocation, a panic or another error is not).
#![no_main]

use chromatic::alloc::Allocator;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    chromatic_cli::fuzz_checks::alloc_verify_with(data, Allocator::Linear);
});
