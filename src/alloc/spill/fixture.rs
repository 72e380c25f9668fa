//! The set-up the tests of the spiller's per-class tables share: a program's first
//! function, its analysis, and the use positions and visit order of its first class,
//! from which next uses, reload frequencies and next reads are built.

use super::belady::visit_order;
use super::nextuse::{NextUse, Uses};
use crate::analysis::Analysis;
use crate::program::{Block, Function, Program};
use crate::target::ClassId;

pub struct Fixture {
    pub program: Program,
    pub analysis: Analysis,
    pub class: ClassId,
    pub uses: Uses,
    pub order: Vec<Block>,
}

impl Fixture {
    /// The first function of `src` and its first class.
    pub fn new(src: &str) -> Fixture {
        let program = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let f = &program.functions[0];
        let analysis = Analysis::new(f, &program.target);
        let class = ClassId(0);
        let uses = Uses::new(f, class);
        let order = visit_order(&analysis.cfg, &analysis.loops, f);
        Fixture {
            program,
            analysis,
            class,
            uses,
            order,
        }
    }

    pub fn f(&self) -> &Function {
        &self.program.functions[0]
    }

    /// Next-use distances over the logical CFG, no edge skipped.
    pub fn next_use(&self) -> NextUse {
        let a = &self.analysis;
        let graphs = (&*a.cfg, &*a.loops);
        let f = self.f();
        NextUse::new(
            f,
            self.class,
            &self.uses,
            graphs,
            &self.order,
            &a.liveness,
            &|_, _| false,
        )
    }
}
