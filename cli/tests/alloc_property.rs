//! Property: random structured programs (nested uniform and divergent if/else, loops with
//! phis, tuples, tied and early-clobber operands) allocate, verify, and behave like the
//! original on the interpreter. Without tuples, the budget MaxLive always suffices and
//! the allocation uses exactly MaxLive registers per class (Hack & Goos).

use chromatic::alloc::{allocate, AllocOptions, FunctionStats, Policy};
use chromatic_verifier::interp::{run, Config};
use quickcheck::{QuickCheck, TestResult};

/// A tiny deterministic generator state (splitmix64).
struct Gen {
    state: u64,
    text: String,
    next_value: usize,
    next_block: usize,
    block: String,
    tuples: bool,
}

#[derive(Clone)]
struct Val {
    name: String,
    class: char,
    size: u16,
}

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }

    fn value(&mut self, class: char, size: u16) -> Val {
        self.next_value += 1;
        Val {
            name: format!("x{}", self.next_value),
            class,
            size,
        }
    }

    fn label(&mut self) -> String {
        self.next_block += 1;
        format!("b{}", self.next_block)
    }

    fn line(&mut self, s: &str) {
        self.text.push_str("  ");
        self.text.push_str(s);
        self.text.push('\n');
    }

    fn start(&mut self, label: &str) {
        self.text.push_str(&format!("{label}:\n"));
        self.block = label.to_string();
    }

    fn pick(&mut self, scope: &[Val]) -> Val {
        scope[self.below(scope.len())].clone()
    }

    fn op(&mut self, scope: &mut Vec<Val>) {
        let class = if self.below(3) == 0 { 's' } else { 'v' };
        let sizes: &[u16] = if !self.tuples {
            &[1]
        } else if class == 's' {
            &[1, 1, 2, 4]
        } else {
            &[1, 1, 1, 2, 3, 4]
        };
        let size = sizes[self.below(sizes.len())];
        let def = self.value(class, size);
        let operands: Vec<Val> = (0..1 + self.below(3)).map(|_| self.pick(scope)).collect();
        let list: Vec<String> = operands.iter().map(|v| format!("%{}", v.name)).collect();
        let tied = operands
            .iter()
            .position(|o| o.class == class && o.size == size)
            .filter(|_| self.below(4) == 0);
        let attr = match (tied, self.below(6)) {
            (Some(t), _) => format!(" tied({t})"),
            (None, 0) => " early".to_string(),
            _ => String::new(),
        };
        let line = format!("%{}:{class}{size} = op {}{attr}", def.name, list.join(", "));
        self.line(&line);
        scope.push(def);
    }

    fn seq(&mut self, scope: &mut Vec<Val>, depth: usize) {
        for _ in 0..1 + self.below(5) {
            match self.below(8) {
                0 if depth > 0 => self.diamond(scope, depth - 1),
                1 if depth > 0 => self.looped(scope, depth - 1),
                _ => self.op(scope),
            }
        }
    }

    fn diamond(&mut self, scope: &mut Vec<Val>, depth: usize) {
        let divergent = self.below(2) == 0;
        let cond = self.pick(scope);
        let (t, e, j) = (self.label(), self.label(), self.label());
        let kind = if divergent { "divergent" } else { "uniform" };
        self.line(&format!("branch {kind} %{}, {t}, {e}", cond.name));
        let mut arms = Vec::new();
        for label in [&t, &e] {
            self.start(label);
            let mut inner = scope.clone();
            self.seq(&mut inner, depth);
            let last = inner.last().cloned().unwrap_or_else(|| scope[0].clone());
            arms.push((self.block.clone(), last));
            self.line(&format!("jump {j}"));
        }
        self.start(&j);
        let ((ta, tv), (ea, ev)) = (arms[0].clone(), arms[1].clone());
        let uniform_phi = tv.class == 's' || ev.class == 's';
        if tv.class == ev.class && tv.size == ev.size && !(divergent && uniform_phi) {
            let phi = self.value(tv.class, tv.size);
            self.line(&format!(
                "%{}:{}{} = phi [{ta}: %{}], [{ea}: %{}]",
                phi.name, phi.class, phi.size, tv.name, ev.name
            ));
            scope.push(phi);
        }
    }

    fn looped(&mut self, scope: &mut Vec<Val>, depth: usize) {
        let (pre, head, exit) = (self.block.clone(), self.label(), self.label());
        let carried = self.pick(scope);
        self.line(&format!("jump {head}"));
        self.start(&head);
        let phi = self.value(carried.class, carried.size);
        let next = self.value(carried.class, carried.size);
        let mut inner = scope.clone();
        inner.push(phi.clone());
        let phi_at = self.text.len();
        self.seq(&mut inner, depth);
        let other = self.pick(&inner);
        self.line(&format!(
            "%{}:{}{} = op %{}, %{}",
            next.name, next.class, next.size, phi.name, other.name
        ));
        let cond = self.pick(&inner);
        let latch = self.block.clone();
        self.line(&format!("branch uniform %{}, {head}, {exit}", cond.name));
        let phi_line = format!(
            "  %{}:{}{} = phi [{pre}: %{}], [{latch}: %{}]\n",
            phi.name, phi.class, phi.size, carried.name, next.name
        );
        self.text.insert_str(phi_at, &phi_line);
        self.start(&exit);
        scope.push(next);
    }
}

fn program(seed: u64, tuples: bool) -> String {
    let mut g = Gen {
        state: seed,
        text: String::new(),
        next_value: 0,
        next_block: 0,
        block: String::new(),
        tuples,
    };
    g.start("entry");
    let mut scope = vec![g.value('v', 1), g.value('s', 1)];
    g.line("%x1:v1 = tid");
    g.line("%x2:s1 = s_load reads");
    g.seq(&mut scope, 3);
    let last = scope.last().map(|v| v.name.clone()).unwrap_or_default();
    g.line(&format!("ret %{last}"));
    format!(
        "target generic s=64:uniform:aligned v=64\nfunc @g {{\n{}}}\n",
        g.text
    )
}

/// Allocates, verifies and compares traces; returns the stats or a description of the failure.
fn pipeline(
    src: &str,
    budget: Vec<(String, u16)>,
    policy: Policy,
) -> Result<Vec<FunctionStats>, String> {
    let p = chromatic::parse(src)
        .map_err(|e| format!("generated program does not parse: {e}\n{src}"))?;
    let opts = AllocOptions {
        budget,
        policy,
        ..AllocOptions::default()
    };
    let (a, stats) = allocate(&p, &opts).map_err(|e| format!("allocation failed: {e}\n{src}"))?;
    let budget = chromatic::alloc::budget_of(&p.target, &opts).map_err(|e| e.to_string())?;
    let errors = chromatic_verifier::verify_program(&p, &a, Some(&budget));
    if let Some(e) = errors.first() {
        return Err(format!("verifier: {e}\n{src}\n{}", chromatic::print(&a)));
    }
    for seed in 0..3 {
        let config = Config {
            seed,
            ..Config::default()
        };
        let (x, y) = (
            run(&p.functions[0], &p.target, &config),
            run(&a.functions[0], &a.target, &config),
        );
        if let Some(i) = x.first_divergence(&y) {
            return Err(format!(
                "traces differ at event {i}\n{src}\n{}",
                chromatic::print(&a)
            ));
        }
    }
    Ok(stats)
}

fn full_budget_verifies(seed: u64, round_robin: bool) -> TestResult {
    let policy = if round_robin {
        Policy::RoundRobin
    } else {
        Policy::Dense
    };
    match pipeline(&program(seed, true), Vec::new(), policy) {
        Ok(_) => TestResult::passed(),
        Err(message) => TestResult::error(message),
    }
}

#[test]
fn random_programs_allocate_verify_and_agree() {
    QuickCheck::new()
        .tests(300)
        .quickcheck(full_budget_verifies as fn(u64, bool) -> TestResult);
}

fn max_live_budget_suffices(seed: u64) -> TestResult {
    let src = program(seed, false);
    let p = chromatic::parse(&src).expect("generated program parses");
    let a = chromatic::analysis::Analysis::new(&p.functions[0], &p.target);
    let budget: Vec<(String, u16)> = p
        .target
        .class_ids()
        .map(|c| {
            (
                p.target.class(c).name.clone(),
                a.pressure.max_live(c).max(1) as u16,
            )
        })
        .collect();
    match pipeline(&src, budget, Policy::Dense) {
        Ok(stats) => {
            let exact = stats[0]
                .classes
                .iter()
                .all(|c| u32::from(c.regs_used) == c.max_live);
            if exact {
                TestResult::passed()
            } else {
                TestResult::error(format!(
                    "regs_used != max_live: {:?}\n{src}",
                    stats[0].classes
                ))
            }
        }
        Err(message) => TestResult::error(message),
    }
}

#[test]
fn scalar_programs_fit_in_max_live_registers() {
    QuickCheck::new()
        .tests(300)
        .quickcheck(max_live_budget_suffices as fn(u64) -> TestResult);
}

/// A longer soak over 100,000 seeds and both policies: `cargo test --release -p
/// chromatic-cli --test alloc_property -- --ignored`.
#[test]
#[ignore]
fn soak_random_programs() {
    for i in 0..100_000u64 {
        let seed = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678;
        for policy in [Policy::Dense, Policy::RoundRobin] {
            if let Err(message) = pipeline(&program(seed, true), Vec::new(), policy) {
                panic!("seed {seed} {policy:?}: {message}");
            }
        }
    }
}
