//! Tests of the generator: validity by construction (checked here with a small,
//! independent dominator computation until the crate's SSA validator is used), feasibility
//! of constraints, determinism, coverage of every feature, and valid shrinks.

use super::shrink::shrinks;
use super::*;
use crate::program::*;

/// Immediate dominators (Cooper, Harvey & Kennedy) of the nodes reachable from `entry`.
fn idoms(succs: &[Vec<usize>], entry: usize) -> Vec<Option<usize>> {
    let n = succs.len();
    let mut order = Vec::new();
    let mut seen = vec![false; n];
    let mut stack = vec![(entry, 0)];
    seen[entry] = true;
    while let Some(top) = stack.last_mut() {
        let (b, i) = *top;
        top.1 += 1;
        match succs[b].get(i) {
            Some(&s) if !seen[s] => {
                seen[s] = true;
                stack.push((s, 0));
            }
            Some(_) => {}
            None => {
                order.push(b);
                stack.pop();
            }
        }
    }
    order.reverse();
    let mut rpo = vec![usize::MAX; n];
    order.iter().enumerate().for_each(|(i, &b)| rpo[b] = i);
    let mut preds = vec![Vec::new(); n];
    for (b, ss) in succs.iter().enumerate() {
        ss.iter().for_each(|&s| preds[s].push(b));
    }
    let mut idom = vec![None; n];
    idom[entry] = Some(entry);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in &order[1..] {
            let mut new: Option<usize> = None;
            for &p in preds[b].iter().filter(|&&p| idom[p].is_some()) {
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rpo[a] > rpo[c] {
                                a = idom[a].unwrap_or(entry);
                            }
                            while rpo[c] > rpo[a] {
                                c = idom[c].unwrap_or(entry);
                            }
                        }
                        a
                    }
                });
            }
            if new != idom[b] {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

fn dominates(idom: &[Option<usize>], a: usize, mut b: usize) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b] {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

/// Every rule of `docs/FORMAT.md` the generator promises, as messages.
fn check(f: &Function, t: &crate::Target) -> Vec<String> {
    let succs: Vec<Vec<usize>> = f
        .blocks
        .iter()
        .map(|b| b.term.successors().map(Block::index).collect())
        .collect();
    let idom = idoms(&succs, 0);
    let mut errors = Vec::new();
    let mut def_site = vec![None; f.values.len()];
    for (b, block) in f.blocks.iter().enumerate() {
        for p in &block.phis {
            errors.extend(define(&mut def_site, p.def.value, (b, 0)));
        }
        for (i, op) in block
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, x)| Some((i, x.op()?)))
        {
            for d in &op.defs {
                errors.extend(define(&mut def_site, d.value, (b, i + 1)));
            }
        }
    }
    if let Some(v) = def_site.iter().position(Option::is_none) {
        errors.push(format!("v{v} never defined"));
        return errors;
    }
    let dominated = |v: Value, b: usize, at: usize| {
        let (db, di) = def_site[v.index()].unwrap_or((0, 0));
        if db == b {
            di < at
        } else {
            dominates(&idom, db, b)
        }
    };
    for (b, block) in f
        .blocks
        .iter()
        .enumerate()
        .filter(|(b, _)| idom[*b].is_some())
    {
        for (i, op) in block
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, x)| Some((i, x.op()?)))
        {
            for u in op.uses().filter(|u| !dominated(u.value, b, i + 1)) {
                errors.push(format!("use of v{} in b{b} not dominated", u.value.0));
            }
            errors.extend(check_op(f, t, op));
        }
        for u in block
            .term
            .uses()
            .iter()
            .filter(|u| !dominated(u.value, b, usize::MAX))
        {
            errors.push(format!(
                "terminator use of v{} in b{b} not dominated",
                u.value.0
            ));
        }
    }
    errors.extend(check_phis(f, t, &succs, &idom, &dominated));
    errors.extend(check_sizes(f, t));
    errors
}

fn define(sites: &mut [Option<(usize, usize)>], v: Value, site: (usize, usize)) -> Option<String> {
    let old = sites[v.index()].replace(site);
    old.map(|_| format!("v{} defined twice", v.0))
}

fn check_phis(
    f: &Function,
    t: &crate::Target,
    succs: &[Vec<usize>],
    idom: &[Option<usize>],
    dominated: &dyn Fn(Value, usize, usize) -> bool,
) -> Vec<String> {
    let mut errors = Vec::new();
    let joins = divergent_joins(f, succs, idom);
    for (b, block) in f
        .blocks
        .iter()
        .enumerate()
        .filter(|(b, _)| idom[*b].is_some())
    {
        let mut preds: Vec<usize> = (0..succs.len())
            .filter(|&p| succs[p].contains(&b))
            .collect();
        preds.sort();
        for phi in &block.phis {
            let mut args: Vec<usize> = phi.args.iter().map(|a| a.block.index()).collect();
            args.sort();
            if args != preds {
                errors.push(format!(
                    "phi v{} in b{b}: args {args:?}, preds {preds:?}",
                    phi.def.value.0
                ));
            }
            for a in phi.args.iter().filter(|a| idom[a.block.index()].is_some()) {
                if !dominated(a.value, a.block.index(), usize::MAX) {
                    errors.push(format!(
                        "phi arg v{} from b{} not dominated",
                        a.value.0, a.block.0
                    ));
                }
                if (f.value(a.value).class, f.value(a.value).size)
                    != (f.value(phi.def.value).class, f.value(phi.def.value).size)
                {
                    errors.push(format!("phi arg v{} differs in type", a.value.0));
                }
            }
            if t.class(f.value(phi.def.value).class).uniform && joins.contains(&b) {
                errors.push(format!(
                    "uniform phi v{} at divergent join b{b}",
                    phi.def.value.0
                ));
            }
        }
    }
    errors
}

/// Immediate post-dominators of reachable divergent branches (a virtual exit after `ret`s).
fn divergent_joins(f: &Function, succs: &[Vec<usize>], idom: &[Option<usize>]) -> Vec<usize> {
    let n = succs.len();
    let mut reverse = vec![Vec::new(); n + 1];
    for (b, ss) in succs.iter().enumerate() {
        ss.iter().for_each(|&s| reverse[s].push(b));
        if ss.is_empty() {
            reverse[n].push(b);
        }
    }
    let ipdom = idoms(&reverse, n);
    (0..n)
        .filter(|&b| idom[b].is_some())
        .filter(|&b| {
            matches!(
                f.blocks[b].term,
                Terminator::Branch {
                    kind: BranchKind::Divergent,
                    ..
                }
            )
        })
        .filter_map(|b| ipdom[b].filter(|&j| j != n))
        .collect()
}

/// Constraints valid and feasible: fixed ranges aligned and in range, ties of one type,
/// distinct uses plus defs within every class.
fn check_op(f: &Function, t: &crate::Target, op: &Op) -> Vec<String> {
    let mut errors = Vec::new();
    let fixed = op
        .defs
        .iter()
        .map(|d| (d.value, d.fixed))
        .chain(op.uses().map(|u| (u.value, u.fixed)));
    for (v, loc) in fixed {
        let Some(Location::Reg { class, first, len }) = loc else {
            continue;
        };
        let data = f.value(v);
        let rc = t.class(class);
        if class != data.class
            || len != data.size
            || first % rc.align.alignment(len) != 0
            || first + len > rc.units
        {
            errors.push(format!("bad fixed location for v{}", v.0));
        }
    }
    for d in op.defs.iter().filter(|d| d.tied.is_some()) {
        let tied = d
            .tied
            .and_then(|i| op.operands.get(usize::from(i))?.as_use());
        let same = tied.is_some_and(|u| {
            (f.value(u.value).class, f.value(u.value).size)
                == (f.value(d.value).class, f.value(d.value).size)
        });
        if !same || d.fixed.is_some() || d.early_clobber {
            errors.push(format!("bad tie of v{}", d.value.0));
        }
    }
    let mut units = vec![0u32; t.classes.len()];
    let mut seen = Vec::new();
    for u in op.uses() {
        if seen.contains(&u.value) {
            continue;
        }
        seen.push(u.value);
        units[f.value(u.value).class.index()] += u32::from(f.value(u.value).size);
    }
    op.defs
        .iter()
        .for_each(|d| units[f.value(d.value).class.index()] += u32::from(f.value(d.value).size));
    for (c, &used) in units.iter().enumerate() {
        if used > u32::from(t.classes[c].units) {
            errors.push(format!("`{}` needs {used} units of class {c}", op.opcode));
        }
    }
    errors
}

fn check_sizes(f: &Function, t: &crate::Target) -> Vec<String> {
    f.values
        .iter()
        .filter(|v| !t.class(v.class).allows_size(v.size))
        .map(|v| format!("{} has a size its class forbids", v.name))
        .collect()
}

fn problems(p: &Program) -> Vec<String> {
    p.functions
        .iter()
        .flat_map(|f| check(f, &p.target))
        .collect()
}

#[test]
fn gen_programs_are_valid_by_construction() {
    for seed in 0..2_000 {
        let p = generate_from_seed(seed, &GenConfig::default());
        assert_eq!(problems(&p), Vec::<String>::new(), "seed {seed}: {p:#?}");
        assert_eq!(
            features(&p).count(Feature::ConflictingFixed),
            0,
            "seed {seed}"
        );
    }
}

#[test]
fn gen_is_deterministic_per_seed() {
    let cfg = GenConfig::default();
    assert_eq!(generate_from_seed(42, &cfg), generate_from_seed(42, &cfg));
    assert_ne!(generate_from_seed(42, &cfg), generate_from_seed(43, &cfg));
}

#[test]
fn gen_respects_size_knobs() {
    let cfg = GenConfig {
        max_blocks: 6,
        max_functions: 1,
        tuples: false,
        ..GenConfig::default()
    };
    for seed in 0..500 {
        let p = generate_from_seed(seed, &cfg);
        assert_eq!(p.functions.len(), 1);
        assert!(p.functions[0].blocks.len() <= 6, "seed {seed}");
        assert!(
            p.functions[0].values.iter().all(|v| v.size == 1),
            "seed {seed}"
        );
    }
}

/// Features only `conflicting_fixed` produces.
const KNOB_ONLY: &[Feature] = &[Feature::ConflictingFixed];

#[test]
fn gen_coverage_hits_every_feature() {
    let cfg = GenConfig::default();
    let mut total = FeatureSet::default();
    for seed in 0..10_000 {
        total.merge(&features(&generate_from_seed(seed, &cfg)));
    }
    println!("features over 10,000 programs:\n{total}");
    let wanted: Vec<Feature> = Feature::ALL
        .iter()
        .copied()
        .filter(|f| !KNOB_ONLY.contains(f))
        .collect();
    assert_eq!(total.missing(&wanted), Vec::<Feature>::new());
}

#[test]
fn gen_conflicting_fixed_knob_produces_conflicts() {
    let cfg = GenConfig {
        conflicting_fixed: true,
        ..GenConfig::default()
    };
    let conflicting = (0..200)
        .filter(|&seed| features(&generate_from_seed(seed, &cfg)).hits(Feature::ConflictingFixed))
        .count();
    assert!(
        conflicting > 20,
        "only {conflicting} of 200 programs conflict"
    );
}

#[test]
fn gen_shrinks_stay_valid_and_get_smaller() {
    for seed in 0..40 {
        let p = generate_from_seed(seed, &GenConfig::default());
        let size = |q: &Program| {
            q.functions
                .iter()
                .map(|f| f.values.len() + f.blocks.len() + f.op_count())
                .sum::<usize>()
        };
        for q in shrinks(&p) {
            assert_eq!(problems(&q), Vec::<String>::new(), "seed {seed}");
            assert!(size(&q) <= size(&p) && q != p, "seed {seed}: a shrink grew");
        }
    }
}

/// Greedy shrinking through `Arbitrary::shrink`, as quickcheck does it.
fn shrink_while(mut p: GenProgram, fails: impl Fn(&GenProgram) -> bool) -> GenProgram {
    use quickcheck::Arbitrary;
    while let Some(smaller) = p.shrink().find(|q| fails(q)) {
        p = smaller;
    }
    p
}

#[test]
fn gen_shrinking_a_loop_finds_the_smallest_loop() {
    let has_loop = |p: &GenProgram| features(&p.0).hits(Feature::Loop);
    let seed = (0..).find(|&s| has_loop(&GenProgram(generate_from_seed(s, &GenConfig::default()))));
    let start = GenProgram(generate_from_seed(seed.unwrap_or(0), &GenConfig::default()));
    let small = shrink_while(start, has_loop);
    assert_eq!(problems(&small.0), Vec::<String>::new());
    let f = &small.0.functions[..];
    assert_eq!(f.len(), 1);
    let sizes = (
        f[0].blocks.len(),
        f[0].op_count(),
        f[0].block(Block(1)).phis.len(),
    );
    assert_eq!(
        sizes,
        (3, 1, 0),
        "entry, self-loop, exit; one op for the condition (its only values), no phi"
    );
    let op = f[0]
        .blocks
        .iter()
        .flat_map(|b| b.insts.iter())
        .find_map(Inst::op);
    assert_eq!(f[0].values.len(), op.map_or(0, |op| op.defs.len()));
}

/// `p` with every source position reset, as generated code has them.
fn without_positions(mut p: Program) -> Program {
    let clear = |u: &mut Use| u.pos = Pos::default();
    for f in &mut p.functions {
        f.pos = Pos::default();
        f.values.iter_mut().for_each(|v| v.pos = Pos::default());
        for block in &mut f.blocks {
            block.pos = Pos::default();
            for phi in &mut block.phis {
                phi.pos = Pos::default();
                phi.def.pos = Pos::default();
                phi.args.iter_mut().for_each(|a| a.pos = Pos::default());
            }
            for inst in &mut block.insts {
                inst.pos = Pos::default();
                if let InstKind::Op(op) = &mut inst.kind {
                    op.defs.iter_mut().for_each(|d| d.pos = Pos::default());
                    op.operands.iter_mut().for_each(|o| {
                        if let Operand::Value(u) = o {
                            clear(u);
                        }
                    });
                }
            }
            block.term.uses_mut().iter_mut().for_each(clear);
            match &mut block.term {
                Terminator::Jump { pos, .. }
                | Terminator::Branch { pos, .. }
                | Terminator::Ret { pos, .. } => *pos = Pos::default(),
            }
        }
    }
    p
}

#[test]
fn gen_programs_print_parse_back_equal_and_validate() {
    for seed in 0..2_000 {
        let p = generate_from_seed(seed, &GenConfig::default());
        let text = crate::print(&p);
        let parsed = crate::parse(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert_eq!(without_positions(parsed), p, "seed {seed}:\n{text}");
        for f in &p.functions {
            let result = crate::analysis::ssa::validate(f, &p.target);
            assert_eq!(result, Ok(()), "seed {seed}:\n{text}");
        }
    }
}
