//! `chromatic gen --seed S --count N -o DIR`: chromatic's own generator
//! (`chromatic::gen::generate_from_seed` with the default `GenConfig`) as `.chr` files, one
//! per seed. These are the programs the property tests, the fuzz targets' seeds and the
//! monotone-cost ratchet draw, so `chromatic sweep DIR` replays that ratchet's
//! measurement from the command line, and any one seed can be read, allocated or drawn.

use crate::Outcome;
use chromatic::gen::{generate_from_seed, GenConfig};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How many seeds, from `--seed` on.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// The directory to write `gen_SEED.chr` files into (created if missing).
    #[arg(short, long)]
    output: String,
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let dir = Path::new(&args.output);
    std::fs::create_dir_all(dir)?;
    let cfg = GenConfig::default();
    for seed in args.seed..args.seed + args.count {
        let text = format!(
            "; chromatic::gen::generate_from_seed({seed}, &GenConfig::default())\n{}",
            chromatic::print(&generate_from_seed(seed, &cfg))
        );
        std::fs::write(dir.join(format!("gen_{seed}.chr")), text)?;
    }
    outln!("{} programs written to {}", args.count, args.output);
    Ok(Outcome::Ok)
}
