//! The baseline allocators (`coloring`, `linear`) through the `alloc_verify` fuzz check on
//! seeded generated programs: every allocation verifies and behaves like the original,
//! and a program a baseline declines is declined with `NotHandled`, never a panic.

use chromatic::alloc::Allocator;
use chromatic_cli::fuzz_checks::alloc_verify_with;

const SEEDS: u64 = 2_000;

/// Runs `seeds` inputs; returns why the allocator declined, per input it declined.
fn sweep(allocator: Allocator, seeds: std::ops::Range<u64>) -> Vec<String> {
    seeds
        .filter_map(|seed| {
            let data = chromatic::gen::splitmix_bytes(seed, 4096);
            alloc_verify_with(&data, allocator).map(|e| e.to_string())
        })
        .collect()
}

/// Declines by reason: the message with its names (but the first, the class) and numbers
/// left out.
fn reasons(declined: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for message in declined {
        let reason: String = message
            .split(": ")
            .skip(2)
            .collect::<Vec<_>>()
            .join(": ")
            .split('`')
            .enumerate()
            .map(|(i, part)| match i {
                1 => format!("`{part}`"),
                _ if i % 2 == 1 => "`…`".to_string(),
                _ => part.to_string(),
            })
            .collect::<String>()
            .split(|c: char| c.is_ascii_digit())
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("#");
        *counts.entry(reason).or_insert(0) += 1;
    }
    counts
}

#[test]
fn coloring_passes_alloc_verify_on_generated_programs() {
    let declined = sweep(Allocator::Coloring, 0..SEEDS).len();
    assert!(
        declined < SEEDS as usize / 10,
        "declined {declined} of {SEEDS}"
    );
}

#[test]
fn linear_passes_alloc_verify_on_generated_programs() {
    let declined = sweep(Allocator::Linear, 0..SEEDS).len();
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
        println!("{allocator}: 10000 seeds, declined {}", declined.len());
        for (reason, n) in reasons(&declined) {
            println!("  {n:5}  {reason}");
        }
    }
}

/// Shapes the fuzzer found wrong once, each allocated by both baselines with each class
/// at every budget from 8 (or its file) down to 1: whatever is allocated verifies and behaves like the
/// original; anything else is a budget below the lowest legal one or a decline.
const SHAPES: [&str; 3] = [
    // A value read twice by one instruction, once fixed to a register overlapping the
    // one it gets (`%c` keeps it out of v[1:2] at its definition): the copy into the
    // fixed register must not overwrite the value's own register, which the other
    // operand and later uses read.
    "target gfx9
func @fixed_and_free {
entry:
  %c:v1 fixed(v2) = v_load reads
  %a:v2 = v_load reads
  store %c writes
  %b:v2 = fence %a, %a fixed(v[1:2])
  store %a, %b writes
  ret
}
",
    // An early-clobber definition fixed to a register, with an operand that may be
    // reloaded: the reload must not land in the fixed register.
    "target generic v=8 a=6:uniform:noswap
func @early_fixed {
entry:
  %x:a2 = mk reads
  %y:a2 = mk reads
  %w:a2 = mk reads
  %z:a1 fixed(a1) = op %x early
  store %y, %z, %w writes
  ret
}
",
    // A tied operand whose value another operand reads too, where the definition cannot
    // take the value's register (`%e` is fixed into half of it) but could overlap it:
    // the copy into the definition's register must not overwrite what operand 0 reads.
    "target gfx9
func @tied_twice {
entry:
  %c:v1 fixed(v0) = v_load reads
  %x:v2 = v_load reads
  store %c writes
  %d:v2, %e:v1 fixed(v2) = op %x, %x tied(1)
  store %d, %e writes
  ret
}
",
];

#[test]
fn shapes_that_once_broke_a_baseline() {
    for text in SHAPES {
        let p = chromatic::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let class = p
            .target
            .classes
            .iter()
            .find(|c| c.sizes.contains(&2))
            .expect("a class");
        for allocator in [Allocator::Coloring, Allocator::Linear] {
            for k in (1..=class.units.min(8)).rev() {
                check(&p, allocator, vec![(class.name.clone(), k)]);
            }
        }
    }
}

fn check(p: &chromatic::Program, allocator: Allocator, budget: Vec<(String, u16)>) {
    use chromatic::alloc::{allocate, budget_of, AllocError, AllocOptions};
    use chromatic_verifier::interp::{run, Config};
    let opts = AllocOptions {
        budget,
        allocator,
        ..AllocOptions::default()
    };
    match allocate(p, &opts) {
        Ok((a, _)) => {
            let units = budget_of(&p.target, &opts).expect("budget");
            let errors = chromatic_verifier::verify_program(p, &a, Some(&units));
            assert!(
                errors.is_empty(),
                "{opts:?}: {}\n{}",
                errors[0],
                chromatic::print(&a)
            );
            let config = Config::default();
            let (x, y) = (
                run(&p.functions[0], &p.target, &config),
                run(&a.functions[0], &a.target, &config),
            );
            assert_eq!(
                x.first_divergence(&y),
                None,
                "{opts:?}\n{}",
                chromatic::print(&a)
            );
        }
        Err(AllocError::BelowLowest { .. } | AllocError::NotHandled { .. }) => {}
        Err(e) => panic!("{opts:?}: {e}"),
    }
}

/// Reloads of `linear`'s allocation at `regs`, per block name (after verifying it).
fn linear_reloads(text: &str, regs: &str) -> Vec<(String, usize)> {
    use chromatic::alloc::{allocate, AllocOptions};
    use chromatic::InstKind;
    let p = chromatic::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let (class, k) = regs.split_once('=').expect("CLASS=K");
    let budget = vec![(class.to_string(), k.parse().expect("a budget"))];
    check(&p, Allocator::Linear, budget.clone());
    let opts = AllocOptions {
        budget,
        allocator: Allocator::Linear,
        ..AllocOptions::default()
    };
    let (a, _) = allocate(&p, &opts).expect("allocated");
    a.functions[0]
        .blocks
        .iter()
        .map(|b| {
            let reloads = b
                .insts
                .iter()
                .filter(|i| matches!(i.kind, InstKind::Reload(_)))
                .count();
            (b.name.clone(), reloads)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `%x` must leave its register while five others are read; the part of its interval
/// after that is reloaded once and keeps a register for its three uses (spilling it
/// everywhere would reload it before each).
#[test]
fn linear_splits_an_interval_and_reloads_it_once() {
    let text = "target generic v=4
func @split_once {
entry:
  %x:v1 = load reads
  %a:v1 = load reads
  %b:v1 = load reads
  %c:v1 = load reads
  %d:v1 = load reads
  store %a, %b, %c, %d writes
  %y:v1 = add %x, %x
  %z:v1 = add %x, %y
  %w:v1 = add %x, %z
  store %w writes
  ret
}
";
    assert_eq!(linear_reloads(text, "v=4"), [("entry".to_string(), 1)]);
}

/// The value evicted before a loop and read inside it is reloaded at the end of the block
/// before the loop (the split position moves to the block of lowest loop depth), not in
/// the loop.
#[test]
fn linear_reloads_outside_the_loop() {
    let text = "target generic v=5
func @reload_before_loop {
entry:
  %x:v1 = load reads
  %a:v1 = load reads
  %b:v1 = load reads
  %c:v1 = load reads
  %d:v1 = load reads
  %e:v1 = load reads
  store %a, %b, %c, %d, %e writes
  %n:v1 = mov 0
  %m:v1 = mov 1
  jump loop
loop:
  %i:v1 = phi [entry: %n], [loop: %j]
  %j:v1 = add %i, %x
  branch uniform %j, loop, exit
exit:
  store %m writes
  ret
}
";
    assert_eq!(linear_reloads(text, "v=5"), [("entry".to_string(), 1)]);
}

/// A definition tied to an operand whose value dies there takes that operand's register
/// (`%d` takes `%c`'s); one tied to a value that stays live (`%e` to `%b`) receives a copy.
#[test]
fn linear_ties_without_a_copy_where_the_operand_dies() {
    use chromatic::alloc::{allocate, AllocOptions};
    use chromatic::InstKind;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../corpus/tied_mac.chr"
    ))
    .expect("corpus/tied_mac.chr");
    let p = chromatic::parse(&text).expect("parses");
    check(&p, Allocator::Linear, Vec::new());
    let opts = AllocOptions {
        allocator: Allocator::Linear,
        ..AllocOptions::default()
    };
    let (a, _) = allocate(&p, &opts).expect("allocated");
    let copied: Vec<String> = a.functions[0].blocks[0]
        .insts
        .iter()
        .filter_map(|i| match &i.kind {
            InstKind::ParallelCopy(moves) => Some(
                moves
                    .iter()
                    .map(|m| a.functions[0].value(m.value).name.to_string()),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(copied, ["b"]);
}
