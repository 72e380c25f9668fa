//! `chromatic gen --seed S --count N -o DIR`: chromatic's own generator
//! (`chromatic::gen::generate_from_seed` with the default `GenConfig`) as `.chr` files, one
//! per seed (`gen_SEED.chr`). These are the programs the property tests, the fuzz targets' seeds and the
//! monotone-cost ratchet draw, so `chromatic sweep DIR` replays that ratchet's
//! measurement from the command line, and any one seed can be read, allocated or drawn.

use crate::Outcome;
use chromatic::gen::{generate_from_seed, GenConfig};
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    seeds: Seeds,
}

/// Which seeds to write, and where: shared with `ra2-gen`.
#[derive(Debug, clap::Args)]
pub struct Seeds {
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many seeds, from `--seed` on.
    #[arg(long, default_value_t = 100)]
    pub count: u64,
    /// The directory to write the `.chr` files into, one per seed (created if missing).
    #[arg(short, long)]
    pub output: String,
}

impl Seeds {
    /// The seeds, after creating the output directory; an error where the last seed is
    /// past `u64::MAX`.
    pub fn prepare(&self) -> anyhow::Result<std::ops::Range<u64>> {
        let end = (self.seed.checked_add(self.count)).ok_or_else(|| {
            anyhow::anyhow!(
                "--seed {} --count {} runs past the last seed, {}",
                self.seed,
                self.count,
                u64::MAX
            )
        })?;
        std::fs::create_dir_all(&self.output)?;
        Ok(self.seed..end)
    }
}

pub fn run(args: &Args) -> anyhow::Result<Outcome> {
    let Seeds { count, output, .. } = &args.seeds;
    let dir = Path::new(output);
    let cfg = GenConfig::default();
    for seed in args.seeds.prepare()? {
        let text = format!(
            "; chromatic::gen::generate_from_seed({seed}, &GenConfig::default())\n{}",
            chromatic::print(&generate_from_seed(seed, &cfg))
        );
        std::fs::write(dir.join(format!("gen_{seed}.chr")), text)?;
    }
    outln!("{count} programs written to {output}");
    Ok(Outcome::Ok)
}
