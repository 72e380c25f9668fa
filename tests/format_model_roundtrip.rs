//! The printer and parser are inverse on the model: for every corpus program and every
//! hand-allocated fixture, `parse(print(p)) == p` up to source positions, and printing is
//! a fixed point. The corpus between its files exercises every feature of the format.

use chromatic::target::{Target, BUILTIN_TARGETS};
use chromatic::{
    parse, print, BranchKind, Effect, Function, InstKind, Location, Operand, Pos, Program,
    Terminator,
};
mod common;

use common::chr_files;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(path: &Path) -> Program {
    let text = std::fs::read_to_string(path).expect("readable file");
    parse(&text).unwrap_or_else(|e| panic!("{}:{e}", path.display()))
}

fn corpus() -> Vec<(PathBuf, Program)> {
    chr_files(&root().join("corpus"))
        .into_iter()
        .map(|p| (p.clone(), load(&p)))
        .collect()
}

fn allocated() -> Vec<(PathBuf, Program)> {
    chr_files(&root().join("tests/allocated"))
        .into_iter()
        .map(|p| (p.clone(), load(&p)))
        .collect()
}

/// Sets every source position of a function to 0:0 (what generated code carries).
fn clear_positions(f: &mut Function) {
    let zero = Pos::default();
    f.pos = zero;
    for b in &mut f.blocks {
        b.pos = zero;
        for phi in &mut b.phis {
            phi.pos = zero;
            phi.def.pos = zero;
            phi.args.iter_mut().for_each(|a| a.pos = zero);
        }
        for inst in &mut b.insts {
            inst.pos = zero;
            if let InstKind::Op(op) = &mut inst.kind {
                op.defs.iter_mut().for_each(|d| d.pos = zero);
                for operand in &mut op.operands {
                    if let Operand::Value(u) = operand {
                        u.pos = zero;
                    }
                }
            }
        }
        b.term.uses_mut().iter_mut().for_each(|u| u.pos = zero);
        match &mut b.term {
            Terminator::Jump { pos, .. }
            | Terminator::Branch { pos, .. }
            | Terminator::Ret { pos, .. } => *pos = zero,
        }
    }
    f.values.iter_mut().for_each(|v| v.pos = zero);
}

fn without_positions(p: &Program) -> Program {
    let mut p = p.clone();
    p.functions.iter_mut().for_each(clear_positions);
    p
}

fn assert_round_trips(path: &Path, p: &Program) {
    let printed = print(p);
    let again = parse(&printed).unwrap_or_else(|e| panic!("{}: reprint: {e}", path.display()));
    assert_eq!(
        without_positions(&again),
        without_positions(p),
        "{}",
        path.display()
    );
    assert_eq!(print(&again), printed, "{}", path.display());
}

#[test]
fn corpus_model_round_trips() {
    let files = corpus();
    assert!(files.len() >= 25, "{} corpus files", files.len());
    for (path, p) in &files {
        assert_round_trips(path, p);
    }
}

#[test]
fn allocated_fixtures_round_trip_and_are_allocated() {
    let files = allocated();
    assert!(files.len() >= 4, "{} allocated fixtures", files.len());
    for (path, p) in &files {
        assert_round_trips(path, p);
        assert!(
            p.functions.iter().all(Function::is_allocated),
            "{}",
            path.display()
        );
    }
}

#[test]
fn format_md_example_parses_and_prints_fixed_def_in_def_position() {
    let doc = std::fs::read_to_string(root().join("docs/FORMAT.md")).expect("FORMAT.md");
    let example = doc
        .split("```")
        .nth(1)
        .expect("a first code block in FORMAT.md");
    let p = parse(example).unwrap_or_else(|e| panic!("FORMAT.md example: {e}"));
    assert_round_trips(Path::new("docs/FORMAT.md"), &p);
    let printed = print(&p);
    assert!(
        printed.contains("  %base:s2 fixed(s[0:1]) = arg 0\n"),
        "{printed}"
    );
    assert!(printed.contains("else freq=0.5:\n"), "{printed}");
    assert!(printed.contains("  ret %y fixed(v0)\n"), "{printed}");
}

/// Names of the features a program uses, for the coverage test below.
fn features(p: &Program, out: &mut BTreeSet<String>) {
    out.insert(format!("target {}", p.target.name));
    for f in &p.functions {
        for b in &f.blocks {
            if b.freq.is_some() {
                out.insert("freq".into());
            }
            if !b.phis.is_empty() {
                out.insert("phi".into());
            }
            for phi in &b.phis {
                if phi.def.fixed.is_some() {
                    out.insert("fixed phi".into());
                }
            }
            for inst in &b.insts {
                inst_features(f, &inst.kind, out);
            }
            term_features(&b.term, out);
        }
    }
}

fn inst_features(f: &Function, kind: &InstKind, out: &mut BTreeSet<String>) {
    let InstKind::Op(op) = kind else {
        let name = match kind {
            InstKind::ParallelCopy(_) => "parallel_copy",
            InstKind::Swap(..) => "swap",
            InstKind::Spill(m) | InstKind::Reload(m) => location_kind(m.dst, m.src),
            _ => "remat",
        };
        out.insert(name.into());
        return;
    };
    for d in &op.defs {
        out.insert(format!("size {}", f.value(d.value).size));
        let flags = [
            (d.fixed.is_some(), "fixed def"),
            (d.tied.is_some(), "tied"),
            (d.prefer.is_some(), "prefer"),
            (d.early_clobber, "early"),
        ];
        out.extend(
            flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| n.to_string()),
        );
    }
    if op.defs.len() > 1 {
        out.insert("several defs".into());
    }
    if op.uses().any(|u| u.fixed.is_some()) {
        out.insert("fixed use".into());
    }
    if op.remat {
        out.insert("remat op".into());
    }
    if op.effect != Effect::None {
        out.insert(format!("{:?}", op.effect));
    }
}

fn location_kind(dst: Location, src: Location) -> &'static str {
    match (dst, src) {
        (Location::Slot { .. }, _) | (_, Location::Slot { .. }) => "memory spill",
        (Location::Lane { .. }, _) | (_, Location::Lane { .. }) => "lane spill",
        _ => "class spill",
    }
}

fn term_features(term: &Terminator, out: &mut BTreeSet<String>) {
    match term {
        Terminator::Branch { kind, .. } => {
            out.insert(format!("branch {kind:?}"));
        }
        Terminator::Ret { uses, .. } if uses.iter().any(|u| u.fixed.is_some()) => {
            out.insert("ret fixed".into());
        }
        _ => {}
    }
}

/// The built-in targets grouped by layout of register classes: the targets of a group
/// (`gfx942` and `gfx950`, `sm_70` to `sm_120` but `sm_90`, …) differ only in their
/// occupancy tables, which `src/target.rs` tests. Each group is one feature, `target A/B`.
fn layouts() -> Vec<Vec<&'static str>> {
    let classes = |name: &str| Target::builtin(name).expect("a built-in target").classes;
    let mut groups: Vec<Vec<&'static str>> = Vec::new();
    for name in BUILTIN_TARGETS {
        match groups.iter_mut().find(|g| classes(g[0]) == classes(name)) {
            Some(group) => group.push(name),
            None => groups.push(vec![name]),
        }
    }
    groups
}

#[test]
fn corpus_and_fixtures_use_every_feature() {
    let mut seen = BTreeSet::new();
    for (_, p) in corpus().iter().chain(&allocated()) {
        features(p, &mut seen);
    }
    for group in layouts() {
        if group.iter().any(|t| seen.contains(&format!("target {t}"))) {
            seen.insert(format!("target {}", group.join("/")));
        }
    }
    let mut wanted: Vec<String> = layouts()
        .iter()
        .map(|group| format!("target {}", group.join("/")))
        .collect();
    wanted.extend(
        [
            "target generic",
            "freq",
            "phi",
            "size 2",
            "size 3",
            "size 4",
            "size 8",
            "fixed def",
            "fixed use",
            "ret fixed",
            "tied",
            "prefer",
            "early",
            "several defs",
            "remat op",
            "ReadsMemory",
            "WritesMemory",
            "Barrier",
            "Control",
            "parallel_copy",
            "swap",
            "memory spill",
            "lane spill",
            "class spill",
            "remat",
        ]
        .map(String::from),
    );
    wanted.push(format!("branch {:?}", BranchKind::Uniform));
    wanted.push(format!("branch {:?}", BranchKind::Divergent));
    let missing: Vec<&String> = wanted.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "features no file uses: {missing:?}");
}
