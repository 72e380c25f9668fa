//! Analyses of the program model, one module each: CFG, dominators, the linear CFG of
//! divergent code, loops and frequencies, liveness, register pressure, SSA validation.
//! [`Analysis`] computes them all for callers that want everything.

pub mod cfg;
pub mod divergence;
pub mod dom;
pub mod liveness;
pub mod loops;
pub mod pressure;
pub mod rows;
pub mod ssa;

use crate::program::{Block, Function};
use crate::target::Target;
use std::sync::Arc;

/// Every analysis of one function. The analyses that read only the blocks and edges are
/// shared ([`Arc`]) with the analysis of a function that changed only its instructions
/// ([`Analysis::same_blocks`]), not copied: a large function's copies would miss the
/// cache on every byte.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub cfg: Arc<cfg::Graph>,
    pub dom: Arc<dom::DomTree>,
    /// See [`ControlFlow::pdom`].
    pub pdom: Option<Arc<dom::PostDomTree>>,
    pub divergence: Arc<divergence::Divergence>,
    pub loops: Arc<loops::Loops>,
    pub freq: Vec<f64>,
    pub liveness: liveness::Liveness,
    pub pressure: pressure::Pressure,
}

/// The analyses that read only a function's blocks, edges and terminators' kinds: what
/// validation needs, and what [`Analysis`] builds on.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlFlow {
    pub cfg: cfg::Graph,
    pub dom: dom::DomTree,
    /// The post-dominators, for a function with a divergent branch only: what is asked of
    /// them is the join of a divergent branch ([`ControlFlow::join`]), and without one the
    /// linear CFG is the logical one.
    pub pdom: Option<dom::PostDomTree>,
    pub divergence: divergence::Divergence,
}

impl ControlFlow {
    pub fn new(f: &Function) -> ControlFlow {
        let cfg = cfg::Graph::of_function(f);
        let dom = dom::DomTree::new(&cfg);
        let (pdom, divergence) = if f.blocks.iter().any(|b| b.term.is_divergent()) {
            let pdom = dom::PostDomTree::new(f, &cfg);
            let divergence = divergence::Divergence::new(f, &cfg, &pdom);
            (Some(pdom), divergence)
        } else {
            (None, divergence::Divergence::convergent(&cfg))
        };
        ControlFlow {
            cfg,
            dom,
            pdom,
            divergence,
        }
    }

    /// The join of the divergent branch in block `b`: its immediate post-dominator, `None`
    /// when only the exit post-dominates it.
    pub fn join(&self, b: Block) -> Option<Block> {
        join(self.pdom.as_ref(), b)
    }
}

/// The immediate post-dominator of divergent branch block `b` in `pdom` (present in every
/// function with a divergent branch).
fn join(pdom: Option<&dom::PostDomTree>, b: Block) -> Option<Block> {
    pdom.expect("post-dominators of a function with a divergent branch")
        .ipdom(b)
}

impl Analysis {
    pub fn new(f: &Function, target: &Target) -> Analysis {
        Analysis::with_control_flow(f, target, ControlFlow::new(f))
    }

    /// [`ControlFlow::join`].
    pub fn join(&self, b: Block) -> Option<Block> {
        join(self.pdom.as_deref(), b)
    }

    /// The analyses of `f` from its control-flow analyses `flow` (computed for `f`, or
    /// for a function with the same blocks, edges and terminators' kinds).
    pub fn with_control_flow(f: &Function, target: &Target, flow: ControlFlow) -> Analysis {
        Analysis::with_sites(f, target, flow, liveness::Sites::of(f))
    }

    /// [`Analysis::with_control_flow`], with the definition and use sites of `f`'s values
    /// already gathered ([`liveness::Sites`], for `f`).
    pub fn with_sites(
        f: &Function,
        target: &Target,
        flow: ControlFlow,
        sites: liveness::Sites,
    ) -> Analysis {
        let ControlFlow {
            cfg,
            dom,
            pdom,
            divergence,
        } = flow;
        let loops = loops::Loops::new(&cfg, &dom);
        let freq = loops::frequencies(f, &loops);
        let (liveness, pressure) = Self::values(f, target, (&cfg, &divergence), sites);
        Analysis {
            cfg: Arc::new(cfg),
            dom: Arc::new(dom),
            pdom: pdom.map(Arc::new),
            divergence: Arc::new(divergence),
            loops: Arc::new(loops),
            freq,
            liveness,
            pressure,
        }
    }

    /// The analyses of `f` where only instructions and phis changed since `earlier` was
    /// computed — its blocks, terminators' kinds, edges and frequency annotations are as
    /// they were (what the spiller does): the control-flow analyses, which read nothing
    /// else, are shared with `earlier`; liveness and pressure are computed again.
    pub fn same_blocks(f: &Function, target: &Target, earlier: &Analysis) -> Analysis {
        Self::same_blocks_with_sites(f, target, earlier, liveness::Sites::of(f))
    }

    /// [`Analysis::same_blocks`] from the definition and use sites of `f`, gathered by a
    /// walk that read `f` anyway (the spiller's SSA repair).
    pub fn same_blocks_with_sites(
        f: &Function,
        target: &Target,
        earlier: &Analysis,
        sites: liveness::Sites,
    ) -> Analysis {
        let flow = (&*earlier.cfg, &*earlier.divergence);
        let (liveness, pressure) = Self::values(f, target, flow, sites);
        Analysis {
            cfg: Arc::clone(&earlier.cfg),
            dom: Arc::clone(&earlier.dom),
            pdom: earlier.pdom.clone(),
            divergence: Arc::clone(&earlier.divergence),
            loops: Arc::clone(&earlier.loops),
            freq: earlier.freq.clone(),
            liveness,
            pressure,
        }
    }

    /// Liveness from the sites of `f`'s values, and pressure built during its walk.
    fn values(
        f: &Function,
        target: &Target,
        (cfg, divergence): (&cfg::Graph, &divergence::Divergence),
        sites: liveness::Sites,
    ) -> (liveness::Liveness, pressure::Pressure) {
        let mut pressure = pressure::Builder::new(f, target);
        let graphs = (cfg, &divergence.linear);
        let liveness = liveness::Liveness::observed(f, target, graphs, sites, |b, at, live| {
            pressure.visit(b, at, live)
        });
        (liveness, pressure.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Block, Value};

    fn analyse(src: &str) -> (crate::Program, Analysis) {
        let p = crate::parse(src).unwrap_or_else(|e| panic!("{e}"));
        let a = Analysis::new(&p.functions[0], &p.target);
        (p, a)
    }

    fn names(p: &crate::Program, values: &[Value]) -> Vec<String> {
        values
            .iter()
            .map(|v| p.functions[0].value(*v).name.to_string())
            .collect()
    }

    /// `%u` (uniform) and `%w` (per-lane) are defined before a divergent branch and used only
    /// on the else-side; `%k` (uniform) is used after the join, through both sides.
    const DIVERGENT: &str = "target gfx9
func @f {
entry:
  %u:s1 = s_mov 1
  %w:v1 = v_mov 2
  %k:s1 = s_mov 3
  %p:s2 = v_cmp %w
  branch divergent %p, then, else
then:
  %a:v1 = v_add %w, %w
  jump join
else:
  %b:v1 = v_mul %u, %w
  jump join
join:
  %y:v1 = phi [then: %a], [else: %b]
  ret %y, %k
}
";

    #[test]
    fn uniform_value_used_on_else_side_is_live_through_then_side() {
        let (p, a) = analyse(DIVERGENT);
        let (then, else_) = (Block(1), Block(2));
        assert_eq!(names(&p, a.liveness.live_in(then)), ["u", "w", "k"]);
        assert_eq!(names(&p, a.liveness.live_out(then)), ["u", "k", "a"]);
        assert_eq!(names(&p, a.liveness.live_in(else_)), ["u", "w", "k"]);
        assert_eq!(names(&p, a.liveness.live_out(else_)), ["k", "b"]);
        let w = Value(1);
        assert!(
            a.liveness.is_killed_at(then, 0, w),
            "per-lane %w dies in then"
        );
        assert!(
            a.liveness.is_killed_at(else_, 0, Value(0)),
            "%u dies in else"
        );
    }

    #[test]
    fn pressure_built_in_the_kill_walk_equals_a_walk_of_its_own() {
        for src in [DIVERGENT, crate::synth::synthetic(400).as_str()] {
            let (p, a) = analyse(src);
            let f = &p.functions[0];
            let own = pressure::Pressure::new(f, &p.target, &a.liveness);
            assert_eq!(a.pressure, own);
            assert!(p.target.class_ids().any(|c| own.max_live(c) > 0));
        }
    }

    #[test]
    fn pressure_counts_linear_liveness_for_uniform_classes() {
        let (p, a) = analyse(DIVERGENT);
        let s = p.target.class_by_name("s").unwrap();
        let v = p.target.class_by_name("v").unwrap();
        // entry: %u %k (s1 each) + %p (s2) live at the branch.
        assert_eq!(a.pressure.at(Block(0), Some(4), s), 4);
        // then: %u and %k are live across it (uniform), %w dies at the add.
        assert_eq!(a.pressure.block_max(&p.functions[0], Block(1), s), 2);
        assert_eq!(a.pressure.at(Block(1), Some(0), v), 1);
        assert_eq!(a.pressure.max_live(s), 4);
        assert_eq!(a.pressure.max_live(v), 1);
    }

    #[test]
    fn values_live_through_a_loop_are_live_in_every_loop_block() {
        let src = "target gfx9
func @f {
entry:
  %x:v2 = v_load
  %n:s1 = s_mov 0
  jump head
head:
  %i:s1 = phi [entry: %n], [latch: %j]
  %c:s1 = s_cmp %i
  branch uniform %c, body, exit
body:
  %t:v1 = v_work %i
  jump latch
latch:
  %j:s1 = s_add %i
  jump head
exit:
  ret %x
}
";
        let (p, a) = analyse(src);
        for b in 1..=3 {
            assert!(
                names(&p, a.liveness.live_in(Block(b))).contains(&"x".to_string()),
                "block {b}"
            );
        }
        assert_eq!(names(&p, a.liveness.live_out(Block(3))), ["x", "j"]);
        assert!(a.liveness.is_dead(Value(4)), "%t is never used");
        let v = p.target.class_by_name("v").unwrap();
        // %x (2 units) plus the dead %t (1) at its definition.
        assert_eq!(a.pressure.max_live(v), 3);
        assert_eq!(a.freq, [1.0, 10.0, 10.0, 10.0, 1.0]);
    }

    #[test]
    fn early_clobber_defs_add_to_the_operands() {
        let src = "target gfx9\nfunc @f {\nb:\n  %a:v1 = x\n  %b:v1 = y\n  %c:v2 = z %a, %b early\n  %d:v2 = z2 %c, %c\n  ret %d\n}\n";
        let (p, a) = analyse(src);
        let v = p.target.class_by_name("v").unwrap();
        assert_eq!(a.pressure.at(Block(0), Some(2), v), 4);
        assert_eq!(a.pressure.at(Block(0), Some(3), v), 2);
        assert!(a.liveness.is_killed_at(Block(0), 3, Value(2)));
        assert_eq!(
            a.liveness.kills_at(Block(0), 3).count(),
            1,
            "used twice, killed once"
        );
    }

    #[test]
    fn ssa_errors() {
        let src = "target gfx9
func @f {
entry:
  %p:s2 = c
  branch divergent %p, t, e
t:
  %a:v1 = x
  %s:s1 = s_mov 1
  jump j
e:
  %r:v1 = y %a
  %s2:s1 = s_mov 2
  jump j
j:
  %m:s1 = phi [t: %s], [e: %s2]
  ret %r
}
";
        let p = crate::parse(src).unwrap();
        let errors = ssa::validate(&p.functions[0], &p.target).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "11:13: the definition of `%a` does not dominate this use",
                "15:3: `%m` is a uniform phi at `j`, the join of a divergent branch",
                "16:7: the definition of `%r` does not dominate this use",
            ]
        );
    }

    #[test]
    fn valid_program_passes() {
        let p = crate::parse(DIVERGENT).unwrap();
        assert_eq!(ssa::validate(&p.functions[0], &p.target), Ok(()));
    }
}
