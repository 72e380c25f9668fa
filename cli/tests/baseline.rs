//! The baseline allocators (`coloring`, `linear`) through the `alloc_verify` fuzz check on
//! seeded generated programs: every allocation verifies and behaves like the original,
//! and a program a baseline declines is declined with `NotHandled`, never a panic.

use chromatic::alloc::Allocator;
use chromatic_cli::fuzz_checks::alloc_verify_with;

const SEEDS: u64 = 2_000;

/// Runs `seeds` inputs; returns how many the allocator declined.
fn sweep(allocator: Allocator, seeds: std::ops::Range<u64>) -> usize {
    seeds
        .filter(|&seed| {
            let data = chromatic::gen::splitmix_bytes(seed, 4096);
            alloc_verify_with(&data, allocator).is_some()
        })
        .count()
}

#[test]
fn coloring_passes_alloc_verify_on_generated_programs() {
    let declined = sweep(Allocator::Coloring, 0..SEEDS);
    assert!(
        declined < SEEDS as usize / 10,
        "declined {declined} of {SEEDS}"
    );
}

#[test]
fn linear_passes_alloc_verify_on_generated_programs() {
    let declined = sweep(Allocator::Linear, 0..SEEDS);
    assert!(
        declined < SEEDS as usize / 10,
        "declined {declined} of {SEEDS}"
    );
}

/// The 10,000 seeds per baseline: `cargo test --release -p chromatic-cli --test
/// baseline -- --ignored --nocapture`.
#[test]
#[ignore]
fn ten_thousand_seeds_per_baseline() {
    for allocator in [Allocator::Coloring, Allocator::Linear] {
        let declined = sweep(allocator, 0..10_000);
        println!("{allocator}: 10000 seeds, declined {declined}");
    }
}
