//! A lower bound on the peak demand of a block's operations, per class, over every order
//! and every rematerialisation: once an order reaches it, no other order can do better,
//! so the scheduler stops looking.
//!
//! Whatever the order, under the pressure rule of [`super::peak`]:
//!
//! - the values live after the last operation (`live_end`) are live after whichever
//!   operation comes last, so the demand there is at least their units;
//! - the values live before the first operation — those of `live_end` the block does not
//!   define and those it reads without defining them — are live before whichever comes
//!   first;
//! - the values of `live_end` the block does not define (*live-through*) are live at every
//!   operation, so the demand at operation `k` is at least their units together with `k`'s
//!   operands (live before it), and at least their units plus `k`'s definitions (present
//!   after it, dead ones too).
//!
//! The bound is the maximum of the live-in, live-out and per-operation demands; it is
//! exact for a block whose best order reaches it, which many do. Rematerialisation
//! ([`super::remat`]) keeps every operation of the block and its operands' sizes (a use
//! renamed to a copy reads a value of the same size), adds copies only of values the block
//! defines and leaves the values around the block as they were; so the bound holds for
//! a rematerialised block too, and a block that reaches it is as good as any attempt
//! could make it.

use super::peak::Live;
use crate::program::{Op, Value};

/// The least peak demand per class any order of `ops` can have, with `live_end` live after
/// the last (`live` is a scratch set of the same function).
pub fn lower_bound(ops: &[&Op], live_end: &[Value], live: &mut Live) -> Vec<u32> {
    let mut defined: Vec<Value> = ops
        .iter()
        .flat_map(|op| op.defs.iter().map(|d| d.value))
        .collect();
    defined.sort_unstable();
    let is_defined = |v: Value| defined.binary_search(&v).is_ok();
    live.reset(live_end);
    let mut bound = live.units.clone();
    let through: Vec<Value> = live_end
        .iter()
        .copied()
        .filter(|&v| !is_defined(v))
        .collect();
    live.reset(&through);
    let through_units = live.units.clone();
    let mut added: Vec<Value> = Vec::new();
    for op in ops {
        added.clear();
        for u in op.uses() {
            if !live.contains(u.value) {
                live.insert(u.value);
                added.push(u.value);
            }
        }
        raise(&mut bound, &live.units);
        added.iter().for_each(|&v| live.remove(v));
        let mut with_defs = through_units.clone();
        for d in &op.defs {
            with_defs[live.class(d.value)] += live.size(d.value);
        }
        raise(&mut bound, &with_defs);
    }
    let read_before_defined = ops.iter().flat_map(|op| op.uses()).map(|u| u.value);
    read_before_defined
        .filter(|&v| !is_defined(v))
        .for_each(|v| live.insert(v));
    raise(&mut bound, &live.units);
    bound
}

/// Raises each class of `bound` to at least `units`.
fn raise(bound: &mut [u32], units: &[u32]) {
    bound
        .iter_mut()
        .zip(units)
        .for_each(|(b, &u)| *b = (*b).max(u));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::deps::Deps;
    use crate::schedule::list::{self, Heuristic, Problem};
    use crate::schedule::peak::peak;
    use crate::schedule::top_down::tests::{program, TWO_READERS};

    /// The bound of the block's operations, and the least peak of the orders the list
    /// scheduler and the emitted order give.
    fn bound_and_peaks(body: &str, live_end: &[Value]) -> (Vec<u32>, Vec<Vec<u32>>) {
        let p = program(body);
        let f = &p.functions[0];
        let ops: Vec<&Op> = f.blocks[0].insts.iter().filter_map(|i| i.op()).collect();
        let deps = Deps::of_ops(&ops);
        let problem = Problem::new(ops.clone(), deps, live_end);
        let mut live = Live::new(f, &p.target);
        let weights = vec![1; p.target.classes.len()];
        let mut orders: Vec<Vec<u32>> = Heuristic::CLASSIC
            .into_iter()
            .map(|h| list::schedule(&problem, h, &weights, &mut live))
            .collect();
        orders.push((0..ops.len() as u32).collect());
        let peaks = orders
            .iter()
            .map(|order| peak(&ops, order, live_end, &mut live))
            .collect();
        (lower_bound(&ops, live_end, &mut live), peaks)
    }

    #[test]
    fn no_order_goes_below_the_bound() {
        let (bound, peaks) = bound_and_peaks(TWO_READERS, &[]);
        for peak in peaks {
            assert!(
                bound.iter().zip(&peak).all(|(b, p)| b <= p),
                "{bound:?} {peak:?}"
            );
        }
    }

    /// Four values read by one operation need four units wherever it goes, and an order
    /// reaches that; a fifth value live after the block adds to the last operation.
    #[test]
    fn the_widest_operation_and_what_lives_after_set_the_bound() {
        let body = "  %a:r1 = mov 1\n  %b:r1 = mov 2\n  %c:r1 = mov 3\n  %d:r1 = mov 4\n  st %a, %b, %c, %d writes\n  %x:r2 = mov.b64 5\n  %y:r2 = mov.b64 6\n  %z:r2 = mov.b64 7\n";
        let p = program(body);
        let f = &p.functions[0];
        let value = |name: &str| {
            let k = f
                .values
                .iter()
                .position(|v| v.name == name)
                .expect("named value");
            Value(k as u32)
        };
        let r = p.target.class_by_name("r").expect("class r").index();
        let (alone, peaks) = bound_and_peaks(body, &[]);
        assert_eq!(alone[r], 4);
        assert!(peaks.iter().any(|peak| peak[r] == 4));
        let (after, peaks) = bound_and_peaks(body, &[value("x"), value("y"), value("z")]);
        assert_eq!(after[r], 6);
        assert!(peaks.iter().all(|peak| peak[r] >= 6));
    }
}
