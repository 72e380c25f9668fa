//! The properties the fuzz targets check, as functions of raw bytes, so that cargo-fuzz
//! (`fuzz/fuzz_targets/`) and the regression replay under `cargo test`
//! (`cli/tests/fuzz_regressions.rs`) run exactly the same code. Each panics when the
//! property fails; an input that does not decode into a case is ignored.

use arbitrary::Unstructured;
use chromatic::alloc::parallel_copy::sequentialise;
use chromatic::alloc::spill::minimum::lowest_legal;
use chromatic::alloc::{allocate, AllocError, AllocOptions, Allocator, Policy};
use chromatic::gen::{generate, GenConfig};
use chromatic::schedule::Schedule;
use chromatic::{ClassId, Function, InstKind, Location, Move, Program, Target, Value};
use chromatic_oracle::allocation::allocate as oracle_allocate;
use chromatic_oracle::minregs::Limits as MinRegsLimits;
use chromatic_oracle::residency;
use chromatic_oracle::spill::{min_spill, Limits};
use chromatic_oracle::OracleError;
use chromatic_verifier::interp::{run, run_allocation, Config};
use chromatic_verifier::mutate::{mutate, Rng};

/// Arbitrary bytes never panic the parser; what parses prints and re-parses to the same
/// canonical text.
pub fn parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = chromatic::parse(text) {
        let printed = chromatic::print(&p);
        let again = chromatic::parse(&printed)
            .unwrap_or_else(|e| panic!("reprint does not parse: {e}\n{printed}"));
        assert_eq!(chromatic::print(&again), printed);
    }
}

/// Bytes as PTX: the importer never panics; what it imports is valid SSA, prints and
/// re-parses to the same program, and — when the allocator takes it — allocates into an
/// allocation that verifies, behaves like the original, and exports back to PTX.
pub fn ptx_import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(imported) = chromatic::ptx::import(text) else {
        return;
    };
    let p = &imported.program;
    for f in &p.functions {
        if let Err(errors) = chromatic::analysis::ssa::validate(f, &p.target) {
            panic!("imported @{} is not valid SSA: {}", f.name, errors[0]);
        }
    }
    let printed = chromatic::print(p);
    let again = chromatic::parse(&printed)
        .unwrap_or_else(|e| panic!("the imported program does not parse back: {e}\n{printed}"));
    assert_eq!(chromatic::print(&again), printed);
    let opts = AllocOptions::default();
    let Ok((a, _)) = allocate(p, &opts) else {
        return;
    };
    check_allocation(p, &a, &opts);
    if let Err(e) = chromatic::ptx::export::export(text, &imported.module, p, &a) {
        panic!("{e}");
    }
}

/// Bytes as LLVM AMDGPU machine IR: the importer never panics; what it imports is valid
/// SSA, prints and re-parses to the same program, and — when the allocator takes it —
/// is scheduled for pressure (the default for `.mir`) and allocated into an allocation
/// that verifies and behaves like the original.
pub fn mir_import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = chromatic::mir::import(text) else {
        return;
    };
    for f in &p.functions {
        if let Err(errors) = chromatic::analysis::ssa::validate(f, &p.target) {
            panic!("imported @{} is not valid SSA: {}", f.name, errors[0]);
        }
    }
    let printed = chromatic::print(&p);
    let again = chromatic::parse(&printed)
        .unwrap_or_else(|e| panic!("the imported program does not parse back: {e}\n{printed}"));
    assert_eq!(chromatic::print(&again), printed);
    let opts = AllocOptions {
        schedule: Schedule::Pressure,
        ..AllocOptions::default()
    };
    if let Ok((a, _)) = allocate(&p, &opts) {
        check_allocation(&p, &a, &opts);
        if let Ok(mir) = chromatic::mir::export::export(text, &a) {
            check_export(&mir);
        }
    }
}

/// An exported function reads back with every operand a physical register.
fn check_export(mir: &str) {
    use chromatic::mir::ast::OperandKind;
    let module = chromatic::mir::parse::parse_module(mir)
        .unwrap_or_else(|e| panic!("the export does not read back: {e}\n{mir}"));
    let operands = module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.insts)
        .flat_map(|i| i.defs.iter().chain(&i.operands));
    for o in operands {
        assert!(
            !matches!(o.kind, OperandKind::VReg { .. }),
            "the export keeps a virtual register at {}\n{mir}",
            o.pos
        );
    }
}

/// A mutant of PTX (or MIR) text: a few edits chosen by `seed` — a line deleted, duplicated or
/// swapped with its neighbour, a character dropped, a digit changed, a punctuation mark
/// inserted — so that the importer sees nearly valid kernels.
pub fn ptx_mutant(text: &str, seed: u64) -> String {
    let random = chromatic::gen::splitmix_bytes(seed, 64);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for edit in random.chunks(8).take(1 + usize::from(random[0] % 3)) {
        let pick = u64::from_le_bytes(edit.try_into().unwrap_or([0; 8]));
        if lines.is_empty() {
            break;
        }
        let at = (pick >> 8) as usize % lines.len();
        match pick % 6 {
            0 => {
                lines.remove(at);
            }
            1 => lines.insert(at, lines[at].clone()),
            2 if at + 1 < lines.len() => lines.swap(at, at + 1),
            3 => drop_char(&mut lines[at], pick >> 32),
            4 => change_digit(&mut lines[at], pick >> 32),
            _ => {
                let marks = ['{', '}', ';', ',', '[', '%', '@', '|'];
                let mark = marks[(pick >> 40) as usize % marks.len()];
                let line = &mut lines[at];
                let i = char_boundary(line, (pick >> 48) as usize);
                line.insert(i, mark);
            }
        }
    }
    lines.join("\n") + "\n"
}

fn char_boundary(s: &str, at: usize) -> usize {
    let mut i = if s.is_empty() { 0 } else { at % (s.len() + 1) };
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn drop_char(line: &mut String, at: u64) {
    let i = char_boundary(line, at as usize);
    if i < line.len() {
        line.remove(i);
    }
}

fn change_digit(line: &mut String, at: u64) {
    let digits: Vec<usize> = line
        .char_indices()
        .filter(|(_, c)| c.is_ascii_digit())
        .map(|(i, _)| i)
        .collect();
    if let Some(&i) = digits.get(at as usize % digits.len().max(1)) {
        let d = char::from(b'0' + (at >> 8) as u8 % 10);
        line.replace_range(i..i + 1, &d.to_string());
    }
}

/// A random program, random budgets, policy and scheduling: the allocation verifies and
/// behaves like the original (reordered blocks included). The generator makes only structured divergent control flow (as GPU front
/// ends structurize), so the allocator must allocate every program at every budget from
/// its lowest legal one up; the only errors allowed are a budget below what an
/// instruction needs and, for programs made with conflicting fixed registers, the
/// validator's rejection. Any other error is a failure, like a wrong allocation.
pub fn alloc_verify(data: &[u8]) {
    alloc_verify_with(data, Allocator::Ssa);
}

/// [`alloc_verify`] for any allocator. A baseline may also decline a program
/// (`AllocError::NotHandled`: colouring never splits ranges, linear scan splits only
/// per-lane ones, so a low budget can be beyond them),
/// which is returned so that tests can count how often; a wrong allocation, a panic or
/// any other error fails as for the production allocator.
pub fn alloc_verify_with(data: &[u8], allocator: Allocator) -> Option<AllocError> {
    let mut u = Unstructured::new(data);
    let conflicting_fixed = u.ratio(1, 8).unwrap_or(false);
    let cfg = GenConfig {
        conflicting_fixed,
        ..fuzz_programs()
    };
    let Ok(p) = generate(&mut u, &cfg) else {
        return None;
    };
    let policy = if u.arbitrary().unwrap_or(false) {
        Policy::RoundRobin
    } else {
        Policy::Dense
    };
    let budget = match u.int_in_range(0..=7u8).unwrap_or(0) {
        0..=2 => Vec::new(),
        3 => random_budget(&mut u, &p.target),
        _ => legal_budget(&mut u, &p),
    };
    let schedule = if u.arbitrary().unwrap_or(false) {
        Schedule::Pressure
    } else {
        Schedule::None
    };
    let opts = AllocOptions {
        budget,
        policy,
        allocator,
        schedule,
        ..AllocOptions::default()
    };
    match allocate(&p, &opts) {
        Ok((a, _)) => check_allocation(&p, &a, &opts),
        Err(AllocError::BelowLowest { .. }) => {}
        Err(AllocError::Invalid { .. }) if conflicting_fixed => {}
        Err(e @ AllocError::NotHandled { .. }) if allocator != Allocator::Ssa => return Some(e),
        Err(e) => panic!(
            "an error at a legal budget: {e}\n{opts:?}\n{}",
            chromatic::print(&p)
        ),
    }
    None
}

/// regalloc2's fuzz-generator function of `data`, translated to `.chr`: `ssa` allocates
/// it at the whole register file (no error allowed) and `regalloc2-ion` and
/// `regalloc2-fast` allocations converted back verify and behave like the original;
/// regalloc2's own checker accepts its output. What the adapter declines
/// (`AllocError::NotHandled`, naming why) is returned so that tests can count it; any
/// other error, a wrong allocation or a panic fails.
pub fn alloc_verify_regalloc2(data: &[u8]) -> Vec<AllocError> {
    use chromatic::alloc::regalloc2_adapter::{self as ra2, fuzz_func};
    let Some(func) = fuzz_func::from_bytes(data, fuzz_func::Size::Default) else {
        return Vec::new();
    };
    let text = fuzz_func::to_chr(&func, "ra2", "fuzz input")
        .unwrap_or_else(|e| panic!("the generator wrote what the translation refuses: {e}"));
    let p = chromatic::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut declined = Vec::new();
    for allocator in [
        Allocator::Ssa,
        Allocator::Regalloc2Ion,
        Allocator::Regalloc2Fast,
    ] {
        let opts = AllocOptions {
            allocator,
            ..AllocOptions::default()
        };
        match allocate(&p, &opts) {
            Ok((a, _)) => check_allocation(&p, &a, &opts),
            Err(e @ AllocError::NotHandled { .. }) if allocator != Allocator::Ssa => {
                declined.push(e)
            }
            Err(e) => panic!("{allocator}: {e}\n{text}"),
        }
        if allocator != Allocator::Ssa {
            let budget = chromatic::alloc::budget_of(&p.target, &opts).expect("budget resolved");
            let input = ra2::lower(&p.functions[0], &p.target, &budget, allocator)
                .unwrap_or_else(|e| panic!("{e}"));
            let out = ra2::run(&input, allocator).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = ra2::check(&input, &out) {
                panic!("{allocator}: regalloc2's checker: {e}\n{text}");
            }
        }
    }
    declined
}

/// Per class, a budget between the lowest legal one and the class's file (MaxLive or
/// below half the time, where spilling happens).
fn legal_budget(u: &mut Unstructured, p: &Program) -> Vec<(String, u16)> {
    p.target
        .class_ids()
        .map(|c| {
            let (mut max_live, mut lowest) = (0, 1);
            for f in &p.functions {
                let a = chromatic::analysis::Analysis::new(f, &p.target);
                max_live = max_live.max(a.pressure.max_live(c));
                lowest = lowest.max(lowest_legal(f, &p.target)[c.index()].units);
            }
            let units = p.target.class(c).units;
            let low = u16::try_from(lowest).unwrap_or(units).min(units);
            let high = if u.arbitrary().unwrap_or(true) {
                u16::try_from(max_live).unwrap_or(units).clamp(low, units)
            } else {
                units
            };
            let k = u.int_in_range(low..=high).unwrap_or(high);
            (p.target.class(c).name.clone(), k)
        })
        .collect()
}

/// A random program with one class lowered to a random budget from its MaxLive down to
/// its lowest legal budget: the allocation verifies, the ILP oracle's allocation
/// (`chromatic_oracle::spill`) verifies, and the allocator's spill cost for that class is
/// never below the oracle's bound. A wrong cost model, a miscounted statistic or a model
/// that forbids what the allocator does shows up here. Functions the oracle does not
/// solve (over the size cap, outside the model, more forced registers at a point than
/// the budget, no assignment) are skipped.
pub fn oracle_bound(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(p) = generate(&mut u, &GenConfig::default()) else {
        return;
    };
    let Some((class, budget)) = class_budget(&mut u, &p) else {
        return;
    };
    let opts = AllocOptions {
        budget: vec![(p.target.class(class).name.clone(), budget)],
        ..AllocOptions::default()
    };
    let Ok((a, stats)) = allocate(&p, &opts) else {
        return;
    };
    check_allocation(&p, &a, &opts);
    let limits = Limits {
        residency: residency::Limits {
            nodes: Some(50),
            max_variables: ORACLE_MAX_VARIABLES,
            ..residency::Limits::default()
        },
        assignment: MinRegsLimits {
            nodes: Some(200),
            ..MinRegsLimits::default()
        },
    };
    let budgets = chromatic::alloc::budget_of(&p.target, &opts).expect("budget resolved");
    for (f, s) in p.functions.iter().zip(&stats) {
        let answer = match min_spill(f, &p.target, class, &budgets, limits) {
            Ok(answer) => answer,
            Err(
                OracleError::TooLarge { .. }
                | OracleError::OutsideModel(_)
                | OracleError::NoAssignment(_)
                | OracleError::NeedsSpilling { .. }
                | OracleError::BelowLowest { .. },
            ) => continue,
            Err(e) => panic!("oracle: {e}\n{}", chromatic::print(&p)),
        };
        let one = |g: &Function| Program {
            target: p.target.clone(),
            functions: vec![g.clone()],
        };
        let errors =
            chromatic_verifier::verify_program(&one(f), &one(&answer.function), Some(&budgets));
        assert!(
            errors.is_empty(),
            "the oracle's allocation does not verify: {}\n{}\n{}",
            errors[0],
            chromatic::print(&one(f)),
            chromatic::print(&one(&answer.function))
        );
        let cost = s.classes[class.index()].spill_cost;
        assert!(
            cost >= answer.bound - 1e-6 * answer.bound.max(1.0),
            "@{}: allocator cost {cost} below the oracle's bound {:?} at {}={budget}\n{}\n{}",
            f.name,
            answer,
            p.target.class(class).name,
            chromatic::print(&p),
            chromatic::print(&a)
        );
    }
}

/// A random program at the full register file: the ILP oracle's minimum-registers
/// allocation (`chromatic_oracle::allocation`) of every function that needs no spilling
/// verifies and runs like the original; per class it uses never fewer registers than
/// MaxLive, its bound is at most what it found, and it uses no more than the production
/// allocator wherever that allocation keeps one register per value (a solution of the
/// model). Functions outside the model (infeasible without splitting more live ranges,
/// or no solution in the node limit without a start) are skipped.
pub fn oracle_diff(data: &[u8]) {
    let mut u = Unstructured::new(data);
    if let Ok(p) = generate(&mut u, &oracle_programs()) {
        oracle_check(&p);
    }
}

/// The property of [`oracle_diff`] on one program.
pub fn oracle_check(p: &Program) {
    let opts = AllocOptions::default();
    let Ok((a, stats)) = allocate(p, &opts) else {
        return;
    };
    let budget = chromatic::alloc::budget_of(&p.target, &opts).expect("budget resolved");
    for ((f, g), s) in p.functions.iter().zip(&a.functions).zip(&stats) {
        let answer = match oracle_allocate(f, &p.target, &budget, Some(g), ORACLE_LIMITS) {
            Ok(answer) => answer,
            Err(
                OracleError::NeedsSpilling { .. }
                | OracleError::Infeasible
                | OracleError::NoSolution
                | OracleError::OutsideModel(_),
            ) => continue,
            Err(e) => panic!("oracle: {e}\n{}", chromatic::print(p)),
        };
        let one = |f: &Function| Program {
            target: p.target.clone(),
            functions: vec![f.clone()],
        };
        check_allocation(&one(f), &one(&answer.function), &opts);
        for c in &answer.classes {
            let heuristic = s.classes[c.class.index()].regs_used;
            let comparable = c.hint_fits;
            assert!(
                c.max_live <= c.bound && c.bound <= c.regs && (!comparable || c.regs <= heuristic),
                "@{}: class {}: max_live {} bound {} oracle {} heuristic {heuristic}\n{}",
                f.name,
                p.target.class(c.class).name,
                c.max_live,
                c.bound,
                c.regs,
                chromatic::print(p)
            );
        }
    }
}

/// Programs for the allocation fuzzers: the default generator, with half of the generic
/// classes without a swap breaking their copy cycles through another class (`copy_via`).
pub fn fuzz_programs() -> GenConfig {
    GenConfig {
        copy_via: 50,
        ..GenConfig::default()
    }
}

/// Small programs for `oracle_diff`: one function of a few blocks, a few dozen values;
/// the default generator otherwise.
pub fn oracle_programs() -> GenConfig {
    GenConfig {
        max_functions: 1,
        max_blocks: 10,
        max_depth: 3,
        max_insts_per_block: 5,
        max_values_live: 12,
        ..GenConfig::default()
    }
}

/// Deterministic limits for the oracle in fuzzing: nodes, not time, with a time limit
/// far above what a case takes, against a runaway.
pub const ORACLE_LIMITS: MinRegsLimits = MinRegsLimits {
    time: std::time::Duration::from_secs(60),
    nodes: Some(200),
    solver: chromatic_oracle::solver::Solver::Microlp,
};

/// Functions whose model is larger are skipped: microlp's simplex takes seconds on them,
/// and the fuzzer needs many cases a second.
const ORACLE_MAX_VARIABLES: usize = 1_500;

/// A class with live values and a budget between its lowest legal one and MaxLive, both
/// over every function.
fn class_budget(u: &mut Unstructured, p: &Program) -> Option<(ClassId, u16)> {
    let class = ClassId(
        u.int_in_range(0..=p.target.classes.len().checked_sub(1)?)
            .ok()? as u8,
    );
    let (mut max_live, mut lowest) = (0, 1);
    for f in &p.functions {
        let a = chromatic::analysis::Analysis::new(f, &p.target);
        max_live = max_live.max(a.pressure.max_live(class));
        lowest = lowest.max(lowest_legal(f, &p.target)[class.index()].units);
    }
    let high = u16::try_from(max_live)
        .ok()?
        .min(p.target.class(class).units);
    let low = u16::try_from(lowest).ok()?;
    (low <= high).then(|| (class, u.int_in_range(low..=high).unwrap_or(high)))
}

fn random_budget(u: &mut Unstructured, t: &Target) -> Vec<(String, u16)> {
    t.classes
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                u.int_in_range(1..=c.units).unwrap_or(c.units),
            )
        })
        .collect()
}

/// `a`, allocated from `p` with `opts`, verifies within the budget and runs like `p` on
/// the interpreter (two seeds); panics with both programs otherwise.
pub fn check_allocation(p: &Program, a: &Program, opts: &AllocOptions) {
    let budget = chromatic::alloc::budget_of(&p.target, opts).expect("budget resolved");
    let errors = chromatic_verifier::verify_program(p, a, Some(&budget));
    assert!(
        errors.is_empty(),
        "{}\n{opts:?}\n{}\n{}",
        errors[0],
        chromatic::print(p),
        chromatic::print(a)
    );
    for (f, g) in p.functions.iter().zip(&a.functions) {
        for seed in 0..2 {
            let config = Config {
                seed,
                ..Config::default()
            };
            let (x, y) = (
                run(f, &p.target, &config),
                run_allocation(g, f, &a.target, &config),
            );
            assert_eq!(
                x.first_divergence(&y),
                None,
                "traces differ, seed {seed}\n{}",
                chromatic::print(a)
            );
        }
    }
}

/// Random parallel copies (cycles, tuples, overlapping ranges) on a class with or without
/// swap, with or without recomputable values: the sequence has the parallel effect on
/// every unit it writes, and on every unit when all are busy (a unit the copy only reads
/// may serve as a temporary once read).
pub fn parallel_copy(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let swap = u.arbitrary().unwrap_or(true);
    let busy_all = u.arbitrary().unwrap_or(false);
    let recompute_odd = u.arbitrary().unwrap_or(false);
    let target = Target::generic(if swap { "v=16" } else { "v=16:noswap" }).expect("target");
    let moves = random_moves(&mut u);
    let busy = |_: ClassId, _: u16| busy_all;
    let recomputable = |v: Value| recompute_odd && v.0 % 2 == 1;
    let seq = sequentialise(&moves, &target, &busy, &recomputable, 0);
    let start: Vec<u32> = (100..116).collect();
    let (got, want) = (
        simulate(&seq, start.clone(), &moves),
        simulate(&[InstKind::ParallelCopy(moves.clone())], start, &moves),
    );
    for unit in 0..16u16 {
        let written = moves.iter().any(|m| covers(m.dst, unit));
        if busy_all || written {
            assert_eq!(
                got[usize::from(unit)],
                want[usize::from(unit)],
                "unit {unit}: {moves:?} -> {seq:?}"
            );
        }
    }
    assert!(seq
        .iter()
        .all(|i| !matches!(i, InstKind::ParallelCopy(m) if m.iter().any(|m| m.src == m.dst))));
}

fn random_moves(u: &mut Unstructured) -> Vec<Move> {
    let mut moves = Vec::new();
    let mut written = [false; 16];
    let count = u.int_in_range(0..=10).unwrap_or(0);
    for i in 0..count {
        let len: u16 = u.int_in_range(1..=4).unwrap_or(1);
        let d: u16 = u.int_in_range(0..=16 - len).unwrap_or(0);
        let s: u16 = u.int_in_range(0..=16 - len).unwrap_or(0);
        let range = usize::from(d)..usize::from(d + len);
        if written[range.clone()].iter().any(|&w| w) {
            continue;
        }
        written[range].iter_mut().for_each(|w| *w = true);
        let reg = |first| Location::Reg {
            class: ClassId(0),
            first,
            len,
        };
        moves.push(Move {
            dst: reg(d),
            src: reg(s),
            value: Value(i),
        });
    }
    moves
}

fn covers(l: Location, unit: u16) -> bool {
    matches!(l, Location::Reg { first, len, .. } if (first..first + len).contains(&unit))
}

/// Runs moves on a file of tokens (and memory slots).
/// Runs `insts` on a register file of tokens; a recomputation of a value writes what the
/// move of `moves` into its destination read from the file as it was at the start.
fn simulate(insts: &[InstKind], mut regs: Vec<u32>, moves: &[Move]) -> Vec<u32> {
    let start = regs.clone();
    let mut slots = std::collections::BTreeMap::new();
    let units = |l: Location| match l {
        Location::Reg { first, len, .. } => {
            (usize::from(first)..usize::from(first + len)).collect::<Vec<_>>()
        }
        _ => Vec::new(),
    };
    for inst in insts {
        match inst {
            InstKind::ParallelCopy(ms) => {
                let reads: Vec<Vec<u32>> = ms
                    .iter()
                    .map(|m| units(m.src).iter().map(|&k| regs[k]).collect())
                    .collect();
                for (m, r) in ms.iter().zip(reads) {
                    for (k, t) in units(m.dst).into_iter().zip(r) {
                        regs[k] = t;
                    }
                }
            }
            InstKind::Swap(a, b) => {
                for (x, y) in units(*a).into_iter().zip(units(*b)) {
                    regs.swap(x, y);
                }
            }
            InstKind::Spill(m) => {
                slots.insert(m.dst, regs[units(m.src)[0]]);
            }
            InstKind::Reload(m) => regs[units(m.dst)[0]] = slots[&m.src],
            InstKind::Remat { dst, value, .. } => {
                let m = moves
                    .iter()
                    .find(|m| m.value == *value && m.dst == *dst)
                    .unwrap_or_else(|| panic!("sequentialise recomputed {inst:?}"));
                for (k, s) in units(*dst).into_iter().zip(units(m.src)) {
                    regs[k] = start[s];
                }
            }
            InstKind::Op(_) => panic!("sequentialise emitted {inst:?}"),
        }
    }
    regs
}

/// A random mutation of a correct allocation: when the interpreter shows the behaviour
/// changed, the verifier must reject it.
pub fn verifier_mutants(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(p) = generate(&mut u, &fuzz_programs()) else {
        return;
    };
    let Ok((a, _)) = allocate(&p, &AllocOptions::default()) else {
        return;
    };
    let mut rng = Rng::new(u.arbitrary().unwrap_or(0));
    for (f, g) in p.functions.iter().zip(&a.functions) {
        let Some(m) = mutate(f, g, &p.target, &mut rng) else {
            continue;
        };
        let original = m.original.as_ref().unwrap_or(f);
        let changed = (0..2).any(|seed| {
            let config = Config {
                seed,
                ..Config::default()
            };
            run(original, &p.target, &config)
                .first_divergence(&run_allocation(&m.allocated, original, &p.target, &config))
                .is_some()
        });
        if changed {
            let errors = chromatic_verifier::verify(original, &m.allocated, &p.target, None);
            assert!(
                !errors.is_empty(),
                "{:?} mutant changes behaviour but verifies\n{}",
                m.kind,
                chromatic::print(&p)
            );
        }
    }
}
