//! One register class of one function as an assignment problem: which values must share
//! a register, which must be apart, and where some must or must not be.
//!
//! Live-range splitting allowed: **one register per value for its whole SSA live range**.
//! A phi may take another register than its arguments (parallel copies on the incoming
//! edges, as an out-of-SSA pass places them), and an operand may be read through a copy
//! made just before its instruction where a constraint asks for it (below). Nothing else
//! moves. This is the model of Appel & George's and Goodwin & Wilken's 0-1 allocators
//! with SSA live ranges in place of virtual registers.
//!
//! Every instruction has two instants, as the production allocator's packing model defines
//! them: at *early* it reads its operands and writes its early-clobber definitions, at
//! *late* it writes its other definitions; a value live across it occupies both. The
//! values of one instant (plus block entries: live-ins and phis; and the end of a block
//! whose phi copies run while the linear CFG's other successors still need their values)
//! must sit in disjoint units. Operand constraints:
//!
//! - a fixed use is read through a copy into its register unless the value is there
//!   already, so no other value of that early instant may cover it; a fixed definition is
//!   written in its register and copied right after the instruction to the value's own
//!   register unless that is the same, so no other value of the late instant may cover it;
//! - a definition tied to an operand whose value dies here (and that no other tied
//!   definition took) shares the value's register; otherwise the instruction reads a copy
//!   made in the definition's register, which is then taken at both instants; a tied
//!   definition or operand with a fixed register is written there, as a fixed definition
//!   read through a copy there;
//! - a pinned value is never read by a copy: its fixed uses pin it, and a phi takes a
//!   pinned argument in its own register.
//!
//! Values that must share a register are merged into one [`Group`].

use crate::flow::Flow;
use crate::live::{Liveness, Set};
use crate::OracleError;
use chromatic::analysis::cfg::Graph;
use chromatic::program::{Block, Def, Function, Location, Op, Terminator, Use, Value};
use chromatic::target::{ClassId, Target};

/// Values that share one register range for their whole lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub members: Vec<Value>,
    pub size: u16,
    pub align: u16,
    /// The first unit, where a fixed definition or a pinned fixed use decides it.
    pub fixed: Option<u16>,
    /// Unit ranges the group may not overlap: copies into fixed registers made while it
    /// is live.
    pub forbidden: Vec<Forbidden>,
}

/// A range of units a group may not overlap, except, where `unless_at`, by sitting
/// exactly on it (the value a copy into a fixed register moves needs no copy when it is
/// there already, but any other overlap would clobber it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forbidden {
    pub first: u16,
    pub len: u16,
    pub unless_at: bool,
}

impl Group {
    /// Whether the group may start at `first`.
    pub fn allows(&self, first: u16) -> bool {
        first.is_multiple_of(self.align)
            && self.fixed.is_none_or(|f| f == first)
            && self.forbidden.iter().all(|b| {
                let apart = first + self.size <= b.first || b.first + b.len <= first;
                apart || (b.unless_at && b.first == first && b.len == self.size)
            })
    }
}

/// The problem of one class in one function.
#[derive(Clone, Debug)]
pub struct ClassProblem {
    pub class: ClassId,
    /// Units in the class's register file.
    pub units: u16,
    pub groups: Vec<Group>,
    /// Per value of the function, its group (values of other classes: `None`).
    pub group_of: Vec<Option<usize>>,
    /// Sets of groups that must occupy disjoint units, each sorted, none a duplicate;
    /// every group is in one at least. Groups are numbered in definition order (reverse
    /// post-order of the class's flow).
    pub instants: Vec<Vec<usize>>,
    /// The most units live at one instant: the trivial bound every allocator meets.
    pub max_live: u16,
    /// A lower bound on the registers of any solution of this model: the most units of
    /// one instant's groups, and every fixed register and copy destination.
    pub floor: u16,
    /// Registers taken whatever the assignment: the highest fixed register or copy
    /// destination, plus one.
    pub reserved: u16,
}

/// Builds the problem of `class` in `f`.
pub fn build(f: &Function, target: &Target, class: ClassId) -> Result<ClassProblem, OracleError> {
    let of_class = |v: Value| f.value(v).class == class;
    let flow = Flow::new(f, target.class(class).uniform);
    let live = Liveness::new(f, &flow, &of_class);
    let mut walk = Walk::new(f, class);
    for b in f.block_ids() {
        walk.block(b, &live.live_out[b.index()])?;
        walk.entry(b, &live.live_in[b.index()]);
        walk.edge(b, &flow, &live);
    }
    walk.pinned_phis();
    walk.finish(target, &flow)
}

/// A copy into a fixed register before the instruction (early) or out of one after it
/// (late): every value of that instant but `exempt` stays off `(first, len)`, and
/// `exempt` may sit exactly there.
#[derive(Clone, Copy, Debug)]
struct Blocked {
    first: u16,
    len: u16,
    exempt: Value,
}

/// The backward walk that collects instants and constraints, by value.
struct Walk<'f> {
    f: &'f Function,
    class: ClassId,
    instants: Vec<(Vec<Value>, Vec<Blocked>)>,
    /// Union-find parent per value: values that share a register.
    parent: Vec<usize>,
    /// Per value, the first unit it must take (pinned values at fixed operands).
    fixed: Vec<Option<u16>>,
    pinned: Vec<bool>,
}

impl<'f> Walk<'f> {
    fn new(f: &'f Function, class: ClassId) -> Walk<'f> {
        let mut pinned = vec![false; f.values.len()];
        f.pinned_values()
            .iter()
            .for_each(|v| pinned[v.index()] = true);
        Walk {
            f,
            class,
            instants: Vec::new(),
            parent: (0..f.values.len()).collect(),
            fixed: vec![None; f.values.len()],
            pinned,
        }
    }

    fn of_class(&self, v: Value) -> bool {
        self.f.value(v).class == self.class
    }

    fn first_of(&self, loc: Option<Location>) -> Option<u16> {
        match loc? {
            Location::Reg { class, first, .. } if class == self.class => Some(first),
            _ => None,
        }
    }

    fn find(&mut self, v: usize) -> usize {
        let mut r = v;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        self.parent[v] = r;
        r
    }

    fn union(&mut self, a: Value, b: Value) {
        let (ra, rb) = (self.find(a.index()), self.find(b.index()));
        self.parent[ra.max(rb)] = ra.min(rb);
    }

    fn fix(&mut self, v: Value, first: u16) -> Result<(), OracleError> {
        match self.fixed[v.index()] {
            Some(other) if other != first => Err(self.unsupported(
                v,
                "is fixed to two registers and may not be copied (pinned)",
            )),
            _ => {
                self.fixed[v.index()] = Some(first);
                Ok(())
            }
        }
    }

    fn unsupported(&self, v: Value, why: &str) -> OracleError {
        OracleError::OutsideModel(format!("`%{}` {why}", self.f.value(v).name))
    }

    fn push(&mut self, values: Vec<Value>, blocked: Vec<Blocked>) {
        if !values.is_empty() {
            self.instants.push((values, blocked));
        }
    }

    /// The instants of block `b`, from its end to its first instruction.
    fn block(&mut self, b: Block, live_out: &Set) -> Result<(), OracleError> {
        let block = self.f.block(b);
        let mut live = live_out.clone();
        let uses: Vec<Use> = block.term.uses().to_vec();
        uses.iter()
            .filter(|u| self.of_class(u.value))
            .for_each(|u| live.insert(u.value));
        let blocked = self.fixed_uses(&uses)?;
        self.push(live.iter().collect(), blocked);
        for op in block.insts.iter().rev().filter_map(|i| i.op()) {
            live = self.instruction(op, live)?;
        }
        Ok(())
    }

    /// The late and early instants of `op` given what is live after it; what is live
    /// before it.
    fn instruction(&mut self, op: &Op, after: Set) -> Result<Set, OracleError> {
        let mut before = after.clone();
        op.defs.iter().for_each(|d| before.remove(d.value));
        op.uses()
            .filter(|u| self.of_class(u.value))
            .for_each(|u| before.insert(u.value));
        let mut late = after.clone();
        let mut early = before.clone();
        let mut late_blocked = Vec::new();
        let mut early_blocked = Vec::new();
        let mut claimed: Vec<Value> = Vec::new();
        let class = self.class;
        for d in op
            .defs
            .iter()
            .filter(|d| self.f.value(d.value).class == class)
        {
            late.insert(d.value);
            let tied = self.tied_use(op, d);
            let size = self.f.value(d.value).size;
            if tied.is_some_and(|u| self.f.value(u.value).size != size) {
                return Err(self.unsupported(d.value, "is tied to an operand of another size"));
            }
            let written = self
                .first_of(d.fixed)
                .or_else(|| tied.and_then(|u| self.first_of(u.fixed)));
            if let Some(first) = written {
                if self.pinned[d.value.index()] {
                    self.fix(d.value, first)?;
                }
                let at = |exempt| Blocked {
                    first,
                    len: size,
                    exempt,
                };
                late_blocked.push(at(d.value));
                if let Some(u) = tied {
                    early_blocked.push(at(u.value));
                } else if d.early_clobber {
                    early.insert(d.value);
                    early_blocked.push(at(d.value));
                }
                continue;
            }
            match tied {
                Some(u) => self.tie(d, u, &after, &mut claimed, &mut early)?,
                None if d.early_clobber => early.insert(d.value),
                None => {}
            }
        }
        let uses: Vec<Use> = op.uses().copied().collect();
        early_blocked.extend(self.fixed_uses(&uses)?);
        self.push(late.iter().collect(), late_blocked);
        self.push(early.iter().collect(), early_blocked);
        Ok(before)
    }

    /// The use of the class `d` is tied to.
    fn tied_use(&self, op: &Op, d: &Def) -> Option<Use> {
        let u = *op.operands.get(usize::from(d.tied?))?.as_use()?;
        self.of_class(u.value).then_some(u)
    }

    /// A tied definition without a fixed register: sharing the register of an operand that
    /// dies here, else written over a copy at both instants.
    fn tie(
        &mut self,
        d: &Def,
        u: Use,
        after: &Set,
        claimed: &mut Vec<Value>,
        early: &mut Set,
    ) -> Result<(), OracleError> {
        if !after.contains(u.value) && !claimed.contains(&u.value) {
            claimed.push(u.value);
            self.union(d.value, u.value);
            return Ok(());
        }
        if self.pinned[u.value.index()] {
            return Err(self.unsupported(u.value, "is pinned but its tied copy lives on"));
        }
        early.insert(d.value);
        Ok(())
    }

    /// Copies into fixed registers before an instruction; a pinned value is pinned there.
    fn fixed_uses(&mut self, uses: &[Use]) -> Result<Vec<Blocked>, OracleError> {
        let mut blocked = Vec::new();
        let class = self.class;
        for u in uses.iter().filter(|u| self.f.value(u.value).class == class) {
            let Some(first) = self.first_of(u.fixed) else {
                continue;
            };
            if self.pinned[u.value.index()] {
                self.fix(u.value, first)?;
            }
            blocked.push(Blocked {
                first,
                len: self.f.value(u.value).size,
                exempt: u.value,
            });
        }
        Ok(blocked)
    }

    /// Block entry: the live-ins and every phi, written on the incoming edges.
    fn entry(&mut self, b: Block, live_in: &Set) {
        let mut values: Vec<Value> = live_in.iter().collect();
        let phis = self.f.block(b).phis.iter().map(|p| p.def.value);
        values.extend(phis.filter(|&v| self.of_class(v)));
        self.push(values, Vec::new());
    }

    /// The end of a block that jumps to a block with phis: the copies write the phis while
    /// the values of every successor in the class's flow are live (on the linear CFG, the
    /// else-side's too).
    fn edge(&mut self, b: Block, flow: &Flow, live: &Liveness) {
        let Terminator::Jump { target, .. } = self.f.block(b).term else {
            return;
        };
        let mut values = Set::new(self.f.values.len());
        for &s in &flow.succs[b.index()] {
            values.union(&live.live_in[s.index()]);
        }
        let phis = self.f.block(target).phis.iter().map(|p| p.def.value);
        phis.filter(|&v| self.of_class(v))
            .for_each(|v| values.insert(v));
        self.push(values.iter().collect(), Vec::new());
    }

    /// A pinned argument reaches its phi in the phi's own register.
    fn pinned_phis(&mut self) {
        let f = self.f;
        for phi in f.blocks.iter().flat_map(|b| &b.phis) {
            for a in &phi.args {
                if self.pinned[a.value.index()] && self.of_class(phi.def.value) {
                    self.union(phi.def.value, a.value);
                }
            }
        }
    }

    fn finish(mut self, target: &Target, flow: &Flow) -> Result<ClassProblem, OracleError> {
        let class = target.class(self.class);
        let order = self.definition_order(flow);
        let mut group_of: Vec<Option<usize>> = vec![None; self.f.values.len()];
        let mut groups: Vec<Group> = Vec::new();
        for &v in &order {
            let root = self.find(v.index());
            let g = match group_of[root] {
                Some(g) => g,
                None => {
                    let size = self.f.value(v).size;
                    groups.push(Group {
                        members: Vec::new(),
                        size,
                        align: class.align.alignment(size).max(1),
                        fixed: None,
                        forbidden: Vec::new(),
                    });
                    group_of[root] = Some(groups.len() - 1);
                    groups.len() - 1
                }
            };
            group_of[v.index()] = Some(g);
            groups[g].members.push(v);
            if let Some(first) = self.fixed[v.index()] {
                if groups[g].fixed.is_some_and(|other| other != first) {
                    return Err(
                        self.unsupported(v, "shares a register with a value fixed elsewhere")
                    );
                }
                groups[g].fixed = Some(first);
            }
        }
        let mut p = ClassProblem {
            class: self.class,
            units: class.units,
            groups,
            group_of,
            instants: Vec::new(),
            max_live: 0,
            floor: 0,
            reserved: 0,
        };
        self.convert_instants(&mut p);
        Ok(p)
    }

    /// Values of the class in definition order: blocks in reverse post-order of the flow
    /// (then unreachable ones), phis then instruction definitions.
    fn definition_order(&self, flow: &Flow) -> Vec<Value> {
        let graph = Graph::from_succs(flow.succs.clone(), Block(0));
        let mut seen = vec![false; self.f.values.len()];
        let mut order = Vec::new();
        for b in graph.rpo_all() {
            let block = self.f.block(b);
            let phis = block.phis.iter().map(|p| p.def.value);
            let defs = block
                .insts
                .iter()
                .filter_map(|i| i.op())
                .flat_map(|op| op.defs.iter().map(|d| d.value));
            for v in phis.chain(defs).filter(|&v| self.of_class(v)) {
                if !std::mem::replace(&mut seen[v.index()], true) {
                    order.push(v);
                }
            }
        }
        order
    }

    /// Instants by value → by group; forbidden ranges; the bounds.
    fn convert_instants(&self, p: &mut ClassProblem) {
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for (values, blocked) in &self.instants {
            let units: u16 = values.iter().map(|&v| self.f.value(v).size).sum();
            p.max_live = p.max_live.max(units);
            let mut set: Vec<usize> = values
                .iter()
                .filter_map(|v| p.group_of[v.index()])
                .collect();
            set.sort_unstable();
            set.dedup();
            let group_units: u16 = set.iter().map(|&g| p.groups[g].size).sum();
            p.floor = p.floor.max(group_units);
            for bl in blocked {
                p.reserved = p.reserved.max(bl.first + bl.len);
                let exempt = p.group_of[bl.exempt.index()];
                for &g in &set {
                    let range = Forbidden {
                        first: bl.first,
                        len: bl.len,
                        unless_at: Some(g) == exempt,
                    };
                    if !p.groups[g].forbidden.contains(&range) {
                        p.groups[g].forbidden.push(range);
                    }
                }
            }
            push_maximal(&mut sets, set);
        }
        for g in &p.groups {
            if let Some(first) = g.fixed {
                p.reserved = p.reserved.max(first + g.size);
            }
        }
        p.floor = p.floor.max(p.reserved);
        sets.sort();
        sets.dedup();
        p.instants = sets;
    }
}

/// Appends `set` unless the last set holds it; replaces the last set when `set` holds it.
fn push_maximal(sets: &mut Vec<Vec<usize>>, set: Vec<usize>) {
    if let Some(last) = sets.last_mut() {
        if subset(&set, last) {
            return;
        }
        if subset(last, &set) {
            *last = set;
            return;
        }
    }
    sets.push(set);
}

/// Whether sorted `a` is contained in sorted `b`.
fn subset(a: &[usize], b: &[usize]) -> bool {
    let mut j = 0;
    for x in a {
        while j < b.len() && b[j] < *x {
            j += 1;
        }
        if j == b.len() || b[j] != *x {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (Function, ClassProblem) {
        let p = chromatic::parse(text).expect("parses");
        let v = p.target.class_by_name("v").expect("class v");
        let f = p.functions[0].clone();
        let problem = build(&f, &p.target, v).expect("builds");
        (f, problem)
    }

    fn group(f: &Function, p: &ClassProblem, name: &str) -> usize {
        let v = f
            .value_ids()
            .find(|&v| f.value(v).name == name)
            .expect("value");
        p.group_of[v.index()].expect("a group")
    }

    fn apart(p: &ClassProblem, a: usize, b: usize) -> bool {
        p.instants.iter().any(|s| s.contains(&a) && s.contains(&b))
    }

    #[test]
    fn a_definition_tied_to_a_dying_operand_shares_its_register() {
        let (f, p) = problem(
            "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = mac %a, %b tied(0)
  ret %c
}",
        );
        assert_eq!(group(&f, &p, "a"), group(&f, &p, "c"));
        assert_eq!(p.groups.len(), 2);
    }

    #[test]
    fn a_definition_tied_to_an_operand_that_lives_on_is_apart_from_it_at_both_instants() {
        let (f, p) = problem(
            "target generic v=8
func @f {
b:
  %a:v1 = load 0 reads
  %c:v1 = mac %a tied(0)
  %d:v1 = add %c, %a
  ret %d
}",
        );
        let (a, c) = (group(&f, &p, "a"), group(&f, &p, "c"));
        assert_ne!(a, c);
        assert!(apart(&p, a, c));
    }

    /// A fixed use is read through a copy: the other operand may not sit in its register,
    /// the copied value may sit exactly there but not across it.
    #[test]
    fn a_fixed_use_keeps_other_values_off_its_register() {
        let (f, p) = problem(
            "target generic v=8
func @f {
b:
  %a:v2 = load 0 reads
  %b:v1 = load 1 reads
  %c:v1 = mul %a fixed(v[2:3]), %b
  ret %c, %a
}",
        );
        let (a, b) = (group(&f, &p, "a"), group(&f, &p, "b"));
        assert!(!p.groups[b].allows(2) && !p.groups[b].allows(3));
        assert!(p.groups[a].allows(2) && !p.groups[a].allows(3) && p.groups[a].allows(4));
        assert_eq!(p.reserved, 4);
    }
}
