//! `chromatic ra2-gen --seed S --count N --size SIZE -o DIR`: regalloc2's fuzz-generator
//! functions (`regalloc2::fuzzing::func`, with the options of its `ion` fuzz target) as
//! `.chr` files, one per seed, so that every chromatic command runs on regalloc2's own
//! test distribution. The translation is told in
//! `chromatic::alloc::regalloc2_adapter::fuzz_func`; a seed on which the generator gives
//! up (it does when no value of a parameter's class is at hand) is counted and skipped.

use crate::gen::Seeds;
use crate::Outcome;
use chromatic::alloc::regalloc2_adapter::fuzz_func::{generate, to_chr, Size};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Seeds and output directory (files `ra2_SIZE_SEED.chr`).
    #[command(flatten)]
    seeds: Seeds,
    /// `default` (regalloc2's: 1–100 blocks of 5–15 values), `1k`, `5k`, `25k` (about
    /// that many instructions), or `pressure` (few blocks of 150–250 values).
    #[arg(long, default_value_t = Size::Default)]
    size: Size,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let dir = Path::new(&args.seeds.output);
    let (mut written, mut given_up) = (0, 0);
    for seed in args.seeds.prepare()? {
        let Some(func) = generate(seed, args.size) else {
            given_up += 1;
            continue;
        };
        let name = format!("ra2_{}_{seed}", args.size);
        let origin = format!(
            "regalloc2 0.15 fuzzing::func::Func, ion fuzz options, size {}, seed {seed}",
            args.size
        );
        let text =
            to_chr(&func, &name, &origin).map_err(|e| anyhow::anyhow!("seed {seed}: {e}"))?;
        std::fs::write(dir.join(format!("{name}.chr")), text)?;
        written += 1;
    }
    outln!(
        "{written} functions written to {} ({given_up} seeds the generator gave up on)",
        args.seeds.output
    );
    Ok(Outcome::Ok)
}
