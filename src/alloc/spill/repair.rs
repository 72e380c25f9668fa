//! SSA reconstruction after reloads: every use of a spilled value reads the definition
//! that reaches it — the value itself, a reload, or a phi placed where different ones
//! meet (Braun, Buchwald, Hack, Leißa, Mallon & Zwinkau, "Simple and Efficient
//! Construction of Static Single Assignment Form", CC 2013: on-demand lookup with
//! operandless phis that are filled afterwards, trivial phis removed).
//!
//! One walk over the function finds both the definitions of tracked values (a compressed
//! row per block, sorted by value, so a lookup is a binary search) and their reads, which
//! are resolved afterwards in the order of the walk. The same walk gathers the definition
//! and use sites that liveness of the repaired function starts from ([`Sites`]): every
//! site as it is, but the reads of tracked values, which are added once resolved, and the
//! phis placed, so the analysis that follows reads the function once less.
//!
//! Lookups follow the logical CFG. Uniform values follow the linear CFG, but the spiller
//! keeps the values reaching a divergent branch's else-arm and join unchanged through the
//! sides (`belady`), so wherever the two graphs differ the definitions agree and the phis
//! the logical CFG would place there are trivial.

use crate::analysis::cfg::Graph;
use crate::analysis::liveness::Sites;
use crate::analysis::rows::Rows;
use crate::program::*;
use rustc_hash::FxHashMap;

/// A definition no lookup may reach: the value is read where no definition reaches.
const UNDEFINED: Value = Value(u32::MAX);

/// Phis get placeholder values from here on until the trivial ones are known; the others
/// then become values of the function.
const PLACEHOLDERS: u32 = u32::MAX / 2;

/// A phi placed by the lookup.
#[derive(Clone, Debug)]
pub struct NewPhi {
    pub block: Block,
    pub value: Value,
    /// The value it stands for.
    pub of: Value,
    pub args: Vec<(Block, Value)>,
}

/// Where a use is, to write its reaching definition back.
#[derive(Clone, Copy, Debug)]
enum Site {
    Operand(Block, usize, usize),
    Term(Block, usize),
    PhiArg(Block, usize, usize),
}

/// Renames the uses of `tracked` values in `f` to their reaching definitions. `cfg` is
/// `f`'s logical CFG (the spiller changes no block or edge, so the analysis it was given
/// holds it). `defs` maps each definition made for a tracked value (a reload) to that
/// value; values that are no longer defined (memory phis) are in `removed`. `fresh` makes
/// a new value like a tracked one for a phi; the phis it places go into `f`. Returns the
/// definition and use sites of the repaired `f`; the error is the first value read where
/// nothing defines it.
pub fn repair(
    f: &mut Function,
    cfg: &Graph,
    tracked: &[Value],
    defs: &FxHashMap<Value, Value>,
    removed: &[Value],
    fresh: &mut dyn FnMut(&mut Function, Value) -> Value,
) -> Result<Sites, Value> {
    let mut r = Lookup::new(f, tracked, removed, cfg);
    let mut sites = Sites::new(f, &[]);
    let reads: Vec<(Site, Value)> = r
        .scan(f, defs, &mut sites)
        .into_iter()
        .map(|read| (read.site, r.reaching(read.value, read.block, read.before)))
        .collect();
    r.fill_pending();
    let mut replace = r.trivial_phis();
    let kept: Vec<bool> = r
        .phis
        .iter()
        .map(|p| !replace.contains_key(&p.value))
        .collect();
    for (phi, _) in r.phis.iter().zip(&kept).filter(|(_, &keep)| keep) {
        let value = fresh(f, phi.of);
        replace.insert(phi.value, value);
    }
    let resolve = |v: Value| resolve(&replace, v);
    for (site, def) in reads {
        let def = resolve(def);
        if def == UNDEFINED {
            return Err(original_of(f, &site));
        }
        sites.add_use(def, use_site(f, site));
        write(f, site, def);
    }
    for (mut phi, keep) in r.phis.into_iter().zip(kept) {
        if !keep {
            continue;
        }
        phi.value = resolve(phi.value);
        for arg in &mut phi.args {
            arg.1 = resolve(arg.1);
            if arg.1 == UNDEFINED {
                return Err(phi.of);
            }
        }
        let def = Def::new(phi.value, Pos::default());
        let args = phi
            .args
            .iter()
            .map(|&(block, value)| PhiArg {
                block,
                value,
                pos: Pos::default(),
            })
            .collect();
        sites.define(phi.value, phi.block);
        for &(block, value) in &phi.args {
            sites.add_use(value, (block, true));
        }
        let pos = f.block(phi.block).pos;
        f.blocks[phi.block.index()]
            .phis
            .push(Phi { def, args, pos });
    }
    Ok(sites)
}

/// A read of a tracked value: where it is, and the point whose reaching definition it
/// reads (`before` instruction `before` of `block`; `u32::MAX`: the block's end).
#[derive(Clone, Copy, Debug)]
struct Read {
    site: Site,
    value: Value,
    block: Block,
    before: u32,
}

fn original_of(f: &Function, site: &Site) -> Value {
    match *site {
        Site::Operand(b, k, o) => f.block(b).insts[k]
            .op()
            .and_then(|op| op.operands[o].as_use())
            .map_or(UNDEFINED, |u| u.value),
        Site::Term(b, t) => f.block(b).term.uses()[t].value,
        Site::PhiArg(b, p, a) => f.block(b).phis[p].args[a].value,
    }
}

/// Where liveness sees the read at `site`: its block, or for a phi argument the block it
/// comes from.
fn use_site(f: &Function, site: Site) -> (Block, bool) {
    match site {
        Site::Operand(b, ..) | Site::Term(b, _) => (b, false),
        Site::PhiArg(b, p, a) => (f.block(b).phis[p].args[a].block, true),
    }
}

fn write(f: &mut Function, site: Site, def: Value) {
    match site {
        Site::Operand(b, k, o) => {
            if let InstKind::Op(op) = &mut f.blocks[b.index()].insts[k].kind {
                if let Operand::Value(u) = &mut op.operands[o] {
                    u.value = def;
                }
            }
        }
        Site::Term(b, t) => f.blocks[b.index()].term.uses_mut()[t].value = def,
        Site::PhiArg(b, p, a) => f.blocks[b.index()].phis[p].args[a].value = def,
    }
}

fn resolve(replace: &FxHashMap<Value, Value>, mut v: Value) -> Value {
    while let Some(&w) = replace.get(&v) {
        v = w;
    }
    v
}

struct Lookup<'g> {
    cfg: &'g Graph,
    /// The next placeholder for a phi's value.
    next: u32,
    /// Per value of the function: whether it is tracked.
    tracked: Vec<bool>,
    /// Per block: the definitions of tracked values there, `(tracked value, instruction
    /// index, definition)`, sorted by value and then index.
    sites: Rows<(Value, u32, Value)>,
    /// Per (tracked value, block): the definition reaching the block's entry.
    entry: FxHashMap<(Value, Block), Value>,
    phis: Vec<NewPhi>,
    pending: Vec<usize>,
}

impl<'g> Lookup<'g> {
    /// The lookup before the walk: the tracked values' phis (those not `removed`) define
    /// them at their block's entry.
    fn new(f: &Function, tracked: &[Value], removed: &[Value], cfg: &'g Graph) -> Lookup<'g> {
        let mut is_tracked = vec![false; f.values.len()];
        for v in tracked {
            is_tracked[v.index()] = true;
        }
        let mut removed = removed.to_vec();
        removed.sort();
        let mut r = Lookup {
            cfg,
            next: PLACEHOLDERS,
            tracked: is_tracked,
            sites: Rows::default(),
            entry: FxHashMap::default(),
            phis: Vec::new(),
            pending: Vec::new(),
        };
        for b in f.block_ids() {
            for phi in &f.block(b).phis {
                let v = phi.def.value;
                if r.is_tracked(v) && removed.binary_search(&v).is_err() {
                    r.entry.insert((v, b), v);
                }
            }
        }
        r
    }

    fn is_tracked(&self, v: Value) -> bool {
        self.tracked.get(v.index()).copied().unwrap_or(false)
    }

    /// One walk over `f`: the definitions of tracked values go into `sites` (`defs` maps
    /// each definition made for a tracked value to it), every other site into `gathered`,
    /// and every read of a tracked value is returned, in block order (operands,
    /// terminator, phi arguments).
    fn scan(
        &mut self,
        f: &Function,
        defs: &FxHashMap<Value, Value>,
        gathered: &mut Sites,
    ) -> Vec<Read> {
        let mut reads = Vec::new();
        let mut row: Vec<(Value, u32, Value)> = Vec::new();
        for b in f.block_ids() {
            let block = f.block(b);
            gathered.push_except(block, |v| self.is_tracked(v));
            for (k, inst) in block.insts.iter().enumerate() {
                let InstKind::Op(op) = &inst.kind else {
                    continue;
                };
                for (o, operand) in op.operands.iter().enumerate() {
                    if let Operand::Value(u) = operand {
                        self.note_read(&mut reads, Site::Operand(b, k, o), u.value, (b, k as u32));
                    }
                }
                for d in &op.defs {
                    let of = defs.get(&d.value).copied().unwrap_or(d.value);
                    if self.is_tracked(of) {
                        row.push((of, k as u32, d.value));
                    }
                }
            }
            for (t, u) in block.term.uses().iter().enumerate() {
                self.note_read(&mut reads, Site::Term(b, t), u.value, (b, u32::MAX));
            }
            for (p, phi) in block.phis.iter().enumerate() {
                for (a, arg) in phi.args.iter().enumerate() {
                    let at = (arg.block, u32::MAX);
                    self.note_read(&mut reads, Site::PhiArg(b, p, a), arg.value, at);
                }
            }
            row.sort_by_key(|&(v, _, _)| v);
            self.sites.push_row(row.drain(..));
        }
        reads
    }

    /// Records a read of `value` at `site`, reading the definition reaching `at`, when
    /// `value` is tracked.
    fn note_read(&self, reads: &mut Vec<Read>, site: Site, value: Value, at: (Block, u32)) {
        if self.is_tracked(value) {
            let (block, before) = at;
            reads.push(Read {
                site,
                value,
                block,
                before,
            });
        }
    }

    /// The last definition of `v` in `b` before instruction `before` (`u32::MAX`: the
    /// block's end).
    fn last_def(&self, v: Value, b: Block, before: u32) -> Option<Value> {
        let row = self.sites.row(b);
        let start = row.partition_point(|&(w, _, _)| w < v);
        let of_v = &row[start..];
        let end = of_v.partition_point(|&(w, k, _)| w == v && k < before);
        end.checked_sub(1).map(|last| of_v[last].2)
    }

    /// The definition of `v` reaching instruction `before` of `b` (`u32::MAX`: the end).
    fn reaching(&mut self, v: Value, b: Block, before: u32) -> Value {
        match self.last_def(v, b, before) {
            Some(d) => d,
            None => self.at_entry(v, b),
        }
    }

    /// The definition reaching the entry of `b`: up a chain of single predecessors to a
    /// definition, a block already known, or a merge (where an operandless phi goes).
    fn at_entry(&mut self, v: Value, b: Block) -> Value {
        let mut chain = Vec::new();
        let mut cur = b;
        let found = loop {
            if let Some(&d) = self.entry.get(&(v, cur)) {
                break d;
            }
            chain.push(cur);
            match self.cfg.preds(cur) {
                [] => break UNDEFINED,
                [p] => {
                    let p = *p;
                    if let Some(d) = self.last_def(v, p, u32::MAX) {
                        break d;
                    }
                    if chain.contains(&p) {
                        break UNDEFINED;
                    }
                    cur = p;
                }
                preds => {
                    let value = Value(self.next);
                    self.next += 1;
                    let args = preds.iter().map(|&p| (p, UNDEFINED)).collect();
                    self.phis.push(NewPhi {
                        block: cur,
                        value,
                        of: v,
                        args,
                    });
                    self.pending.push(self.phis.len() - 1);
                    break value;
                }
            }
        };
        for c in chain {
            self.entry.insert((v, c), found);
        }
        found
    }

    /// Fills the arguments of the phis placed so far (placing more where needed).
    fn fill_pending(&mut self) {
        while let Some(i) = self.pending.pop() {
            let (v, preds): (Value, Vec<Block>) = {
                let phi = &self.phis[i];
                (phi.of, phi.args.iter().map(|&(p, _)| p).collect())
            };
            for (k, p) in preds.into_iter().enumerate() {
                let d = self.reaching(v, p, u32::MAX);
                self.phis[i].args[k].1 = d;
            }
        }
    }

    /// Phis whose arguments are all one value (or the phi itself) stand for that value.
    fn trivial_phis(&self) -> FxHashMap<Value, Value> {
        let mut replace: FxHashMap<Value, Value> = FxHashMap::default();
        let mut changed = true;
        while changed {
            changed = false;
            for phi in &self.phis {
                if replace.contains_key(&phi.value) {
                    continue;
                }
                let mut only = None;
                let mut trivial = true;
                for &(_, a) in &phi.args {
                    let a = resolve(&replace, a);
                    if a == phi.value || Some(a) == only {
                        continue;
                    }
                    if only.is_some() {
                        trivial = false;
                        break;
                    }
                    only = Some(a);
                }
                if trivial {
                    replace.insert(phi.value, only.unwrap_or(UNDEFINED));
                    changed = true;
                }
            }
        }
        replace
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::liveness::Liveness;

    /// `%r1` and `%r2` stand for two reloads of `%x` in block `a`, `%q` for one of `%y`;
    /// block `b` reloads nothing.
    const RELOADED: &str = "target gfx9
func @f {
entry:
  %x:v1 = v_mov_b32 0
  %y:v1 = v_mov_b32 1
  %c:s1 = s_cmp %x
  branch uniform %c, a, b
a:
  %r1:v1 = v_mov_b32 0
  %q:v1 = v_mov_b32 0
  %u:v1 = v_add_f32 %x, %y
  %r2:v1 = v_mov_b32 0
  %w:v1 = v_add_f32 %x, %u
  jump j
b:
  jump j
j:
  %p:v1 = phi [a: %x], [b: %x]
  ret %x, %y, %w, %p
}
";

    fn value(f: &Function, name: &str) -> Value {
        f.value_ids()
            .find(|&v| f.value(v).name == name)
            .unwrap_or_else(|| panic!("no value `{name}`"))
    }

    fn repaired() -> Function {
        repaired_with_sites().0
    }

    fn repaired_with_sites() -> (Function, Sites) {
        let mut f = crate::parse(RELOADED).expect("parses").functions.remove(0);
        let cfg = Graph::of_function(&f);
        let of = |name: &str| value(&f, name);
        let (x, y) = (of("x"), of("y"));
        let defs: FxHashMap<Value, Value> = [(of("r1"), x), (of("r2"), x), (of("q"), y)]
            .into_iter()
            .collect();
        let mut fresh = |f: &mut Function, like: Value| {
            let mut data = f.value(like).clone();
            data.name = compact_str::format_compact!("{}.p", data.name);
            f.values.push(data);
            Value(f.values.len() as u32 - 1)
        };
        let sites = repair(&mut f, &cfg, &[x, y], &defs, &[], &mut fresh);
        (f, sites.expect("every read reached"))
    }

    #[test]
    fn the_sites_gathered_give_the_liveness_of_the_repaired_function() {
        let target = crate::parse(RELOADED).expect("parses").target;
        let (f, sites) = repaired_with_sites();
        let cfg = Graph::of_function(&f);
        let gathered = Liveness::observed(&f, &target, (&cfg, &cfg), sites, |_, _, _| {});
        let walked = Liveness::new(&f, &target, &cfg, &cfg);
        for b in f.block_ids() {
            assert_eq!(gathered.live_in(b), walked.live_in(b), "live in {b:?}");
            assert_eq!(gathered.live_out(b), walked.live_out(b), "live out {b:?}");
        }
        for v in f.value_ids() {
            assert_eq!(gathered.is_dead(v), walked.is_dead(v), "{v:?} dead");
            assert_eq!(gathered.def_block(v), walked.def_block(v), "{v:?} defined");
        }
    }

    fn names(f: &Function, values: impl IntoIterator<Item = Value>) -> Vec<String> {
        values
            .into_iter()
            .map(|v| f.value(v).name.to_string())
            .collect()
    }

    #[test]
    fn a_read_takes_the_last_definition_before_it_in_its_block() {
        let f = repaired();
        let a = &f.blocks[1];
        let reads = |k: usize| names(&f, a.insts[k].op().expect("op").uses().map(|u| u.value));
        assert_eq!(reads(2), ["r1", "q"]);
        assert_eq!(reads(4), ["r2", "u"]);
    }

    #[test]
    fn reads_after_a_merge_take_new_phis_and_phi_arguments_their_edges_definition() {
        let f = repaired();
        let j = &f.blocks[3];
        let phi_args = |p: usize| names(&f, j.phis[p].args.iter().map(|arg| arg.value));
        assert_eq!(phi_args(0), ["r2", "x"]);
        assert_eq!(
            names(&f, [j.phis[1].def.value, j.phis[2].def.value]),
            ["x.p", "y.p"]
        );
        assert_eq!(phi_args(1), ["r2", "x"]);
        assert_eq!(phi_args(2), ["q", "y"]);
        let returned = names(&f, j.term.uses().iter().map(|u| u.value));
        assert_eq!(returned, ["x.p", "y.p", "w", "p"]);
    }
}
