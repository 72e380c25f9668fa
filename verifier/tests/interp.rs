//! The interpreter: a correct allocation runs like its original; a wrong one does not.

use chromatic_verifier::interp::{run, Config};

mod fixtures;

const DIAMOND: &str = include_str!("../../corpus/divergent_uniform_live_through_else.chr");

fn traces(
    allocated: &str,
    seed: u64,
) -> (
    chromatic_verifier::interp::Trace,
    chromatic_verifier::interp::Trace,
) {
    let o = chromatic::parse(DIAMOND).unwrap();
    let a = chromatic::parse(allocated).unwrap();
    let config = Config {
        seed,
        ..Config::default()
    };
    (
        run(&o.functions[0], &o.target, &config),
        run(&a.functions[0], &a.target, &config),
    )
}

#[test]
fn correct_divergent_allocation_agrees_on_every_seed() {
    for seed in 0..20 {
        let (o, a) = traces(&fixtures::diamond_allocated("s[8:9]"), seed);
        assert_eq!(o.first_divergence(&a), None, "seed {seed}");
        assert_eq!(o.digest(), a.digest());
        // entry: 4 ops + branch; then: 4 ops; else: 1 op; join: 2 ops + ret.
        let then_ran = o.events.iter().filter(|e| e.mask != 0xf).count() > 0;
        assert!(
            [9, 12, 13].contains(&o.events.len()),
            "seed {seed}: {then_ran}"
        );
    }
    assert_eq!(
        traces(&fixtures::diamond_allocated("s[8:9]"), 0)
            .0
            .events
            .len(),
        13
    );
}

#[test]
fn then_side_clobber_of_uniform_register_changes_behaviour() {
    let diverged = (0..20)
        .filter(|&seed| {
            let (o, a) = traces(&fixtures::diamond_allocated("s[0:1]"), seed);
            o.first_divergence(&a).is_some()
        })
        .count();
    assert!(diverged > 0);
}

/// The lanes that leave the loop early stop storing the counter under a per-lane exec
/// mask; only a whole-wave store (`docs/FORMAT.md`) leaves the last iteration's counter
/// in them, where the reload after the loop (first active lane: lane 0) reads it.
#[test]
fn a_uniform_spill_under_a_partial_exec_mask_writes_every_lane() {
    let o = chromatic::parse(fixtures::DIVERGENT_LOOP).unwrap();
    let a = chromatic::parse(fixtures::DIVERGENT_LOOP_SPILLED).unwrap();
    let mut lane_0_left_early = 0;
    for seed in 0..20 {
        let config = Config {
            seed,
            ..Config::default()
        };
        let x = run(&o.functions[0], &o.target, &config);
        let y = run(&a.functions[0], &a.target, &config);
        assert_eq!(x.first_divergence(&y), None, "seed {seed}");
        let partial_without_lane_0 = x.events.iter().any(|e| e.mask != 0xf && e.mask & 1 == 0);
        lane_0_left_early += usize::from(partial_without_lane_0);
    }
    assert!(
        lane_0_left_early > 0,
        "no seed exercises the whole-wave store"
    );
    let errors = chromatic_verifier::verify_program(&o, &a, None);
    assert!(errors.is_empty(), "{errors:?}");
}

/// A uniform value copied into a per-lane register inside a divergent loop reaches only
/// the lanes still looping: copied back after the loop, it is an older instance whenever
/// the first active lane left early (what `UniformInPerLane` rejects).
#[test]
fn a_uniform_value_through_a_per_lane_register_goes_stale() {
    let o = chromatic::parse(fixtures::DIVERGENT_LOOP).unwrap();
    let a = chromatic::parse(fixtures::DIVERGENT_LOOP_VIA_PER_LANE).unwrap();
    let diverged = (0..20)
        .filter(|&seed| {
            let config = Config {
                seed,
                ..Config::default()
            };
            let x = run(&o.functions[0], &o.target, &config);
            let y = run(&a.functions[0], &a.target, &config);
            x.first_divergence(&y).is_some()
        })
        .count();
    assert!(diverged > 0, "no seed reads a stale copy");
}
