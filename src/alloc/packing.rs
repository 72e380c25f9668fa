//! Where things sit in one register class at one instruction: the packing problem that
//! both the spiller (does this fit?) and assignment (where does it go?) solve, so that
//! what the spiller lets through, assignment can always place.
//!
//! An instruction has two instants. At *early* it reads its operands and writes its
//! early-clobber definitions; at *late* it writes its other definitions. Every *item* of
//! the problem is a range of `size` units starting at a multiple of `align`, inside the
//! class's budget, occupying one instant or both:
//!
//! - a value live across the instruction (read or not) occupies both;
//! - an operand read for the last time occupies early only, a definition late only;
//! - a definition tied to an operand it overwrites shares one item with it (both);
//! - a fixed operand or definition is *pinned* to its register.
//!
//! Two items that share an instant may not share a unit there. This is the model of
//! regalloc2's operand constraints (early and late positions, fixed, reuse) with GPU tuple
//! alignment, and ACO's `get_reg` with its parallel copy before the instruction: an item
//! may move anywhere, the move is a copy before the instruction.
//!
//! [`canonical`] decides the problem from scratch: pinned items first, then the free ones
//! by decreasing alignment and size, each at the lowest position that fits (both-instant
//! items before single-instant ones of the same shape); when that greedy order fails, a
//! bounded depth-first search tries the other positions. The answer depends only on the
//! problem, so the spiller and assignment agree on it. [`near`] is what assignment calls:
//! it keeps every item that can stay where it is, places the others first-fit, then
//! displaces the fewest kept units for an item that finds no room, and falls back on the
//! canonical packing (with items matched to the canonical positions they already hold)
//! when that fails too. It succeeds exactly when [`canonical`] does. [`near_held`] gives
//! [`near`]'s answer for a problem where only definitions need places, on bit masks of
//! the units held at each instant, without the items of the values that stay. [`Tally`] is the
//! spiller's cheaper test for problems without pins: from the items' shapes alone, a
//! bound on where the greedy order ends that, within the budget, implies [`fits`].

use std::cmp::Reverse;
use std::collections::VecDeque;

/// Which instants of the instruction an item occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Span {
    /// Read by the instruction and not live after it.
    Early,
    /// Written by the instruction.
    Late,
    /// Live across the instruction, or read and overwritten in place (tied), or an
    /// early-clobber definition.
    Both,
}

impl Span {
    fn early(self) -> bool {
        self != Span::Late
    }

    fn late(self) -> bool {
        self != Span::Early
    }

    /// Both-instant items are placed before single-instant items of the same shape.
    fn rank(self) -> u8 {
        match self {
            Span::Both => 0,
            Span::Early => 1,
            Span::Late => 2,
        }
    }
}

/// One range of units to place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub size: u16,
    pub align: u16,
    pub span: Span,
    /// Fixed first unit (a fixed operand or definition).
    pub pinned: Option<u16>,
    /// Where the item's value sits now; assignment keeps it there when it can.
    pub current: Option<u16>,
    /// A soft wish (a `prefer` constraint), tried before first fit.
    pub prefer: Option<u16>,
}

impl Item {
    pub fn new(size: u16, align: u16, span: Span) -> Item {
        Item {
            size,
            align: align.max(1),
            span,
            pinned: None,
            current: None,
            prefer: None,
        }
    }
}

/// The items of one class at one instruction, and the units usable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problem {
    pub units: u16,
    pub items: Vec<Item>,
}

/// How assignment chooses among free positions for items that must move or are new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Lowest position first.
    Lowest,
    /// Positions from `start` up to `spread`, then from 0 (round-robin), then the rest.
    From { start: u16, spread: u16 },
}

/// Depth-first search nodes tried after the greedy order fails; the answer is the same
/// on every run.
const SEARCH_NODES: usize = 20_000;

/// Most units a class may have (`target`: 1 to 1024).
const MAX_UNITS: usize = 1024;
const WORDS: usize = MAX_UNITS / 64;

/// Occupancy of the units at the two instants, one bit per unit, on the stack.
#[derive(Clone, Debug)]
struct Grid {
    units: u16,
    early: [u64; WORDS],
    late: [u64; WORDS],
}

/// The bit masks of the units `start..end`, word by word: (word, mask).
fn masks(start: usize, end: usize) -> impl Iterator<Item = (usize, u64)> {
    let mut u = start;
    std::iter::from_fn(move || {
        if u >= end {
            return None;
        }
        let (word, bit) = (u / 64, u % 64);
        let n = (end - u).min(64 - bit);
        let mask = if n == 64 {
            !0
        } else {
            ((1u64 << n) - 1) << bit
        };
        u += n;
        Some((word, mask))
    })
}

impl Grid {
    fn new(units: u16) -> Grid {
        assert!(
            usize::from(units) <= MAX_UNITS,
            "a class has at most 1024 units"
        );
        Grid {
            units,
            early: [0; WORDS],
            late: [0; WORDS],
        }
    }

    fn units(&self) -> u16 {
        self.units
    }

    fn fits(&self, item: &Item, at: u16) -> bool {
        let (start, end) = (usize::from(at), usize::from(at) + usize::from(item.size));
        if end > usize::from(self.units) || !at.is_multiple_of(item.align) {
            return false;
        }
        let (early, late) = (item.span.early(), item.span.late());
        let free = |w: usize, m: u64| {
            (!early || self.early[w] & m == 0) && (!late || self.late[w] & m == 0)
        };
        if end > start && start / 64 == (end - 1) / 64 {
            return free(
                start / 64,
                ((!0u64) >> (64 - (end - start))) << (start % 64),
            );
        }
        masks(start, end).all(|(w, m)| free(w, m))
    }

    fn set(&mut self, item: &Item, at: u16, value: bool) {
        let end = usize::from(at) + usize::from(item.size);
        let (early, late) = (item.span.early(), item.span.late());
        for (w, m) in masks(usize::from(at), end) {
            for (row, on) in [(&mut self.early, early), (&mut self.late, late)] {
                if on {
                    row[w] = if value { row[w] | m } else { row[w] & !m };
                }
            }
        }
    }

    /// Units of the item's instants held by something else in the window at `at`.
    fn taken(&self, item: &Item, at: u16) -> usize {
        let end = usize::from(at) + usize::from(item.size);
        let (early, late) = (item.span.early(), item.span.late());
        masks(usize::from(at), end)
            .map(|(w, m)| {
                let e = if early { self.early[w] } else { 0 };
                let l = if late { self.late[w] } else { 0 };
                ((e | l) & m).count_ones() as usize
            })
            .sum()
    }

    /// Places the pinned items of `p`; false when two of them collide or one lies outside.
    fn pin(&mut self, p: &Problem) -> bool {
        for item in &p.items {
            if let Some(at) = item.pinned {
                if !self.fits(item, at) {
                    return false;
                }
                self.set(item, at, true);
            }
        }
        true
    }

    /// Holds the units `held` marks at each instant; false (with nothing changed) when
    /// one of them is held already or lies outside the units.
    fn hold(&mut self, held: Held) -> bool {
        if held.early.len() > WORDS || held.late.len() > WORDS {
            return false;
        }
        let inside = |w: usize| {
            let first = w * 64;
            let inside = usize::from(self.units).saturating_sub(first).min(64);
            if inside == 64 {
                !0
            } else {
                (1u64 << inside) - 1
            }
        };
        let fits = |row: &[u64; WORDS], bits: &[u64]| {
            bits.iter()
                .enumerate()
                .all(|(w, &b)| b & !inside(w) == 0 && row[w] & b == 0)
        };
        if !fits(&self.early, held.early) || !fits(&self.late, held.late) {
            return false;
        }
        for (w, &bits) in held.early.iter().enumerate() {
            self.early[w] |= bits;
        }
        for (w, &bits) in held.late.iter().enumerate() {
            self.late[w] |= bits;
        }
        true
    }

    /// The words that hold the units (no bit is ever set above them).
    fn words(&self) -> usize {
        usize::from(self.units).div_ceil(64)
    }

    /// Units free at both instants.
    fn free_at_both(&self) -> usize {
        let n = self.words();
        let taken: u32 = self.early[..n]
            .iter()
            .zip(&self.late[..n])
            .map(|(e, l)| (e | l).count_ones())
            .sum();
        usize::from(self.units) - taken as usize
    }

    fn free_units(&self, early: bool) -> usize {
        let row = if early { &self.early } else { &self.late };
        let taken: u32 = row[..self.words()].iter().map(|w| w.count_ones()).sum();
        usize::from(self.units) - taken as usize
    }

    /// Aligned start positions for `item` in `order`.
    fn positions(&self, item: &Item, order: Order) -> impl Iterator<Item = u16> + Clone {
        let units = self.units();
        let last = units.saturating_sub(item.size);
        let align = item.align;
        let room = if item.size > units { 0 } else { usize::MAX };
        let (start, spread) = match order {
            Order::Lowest => (0, 0),
            Order::From { start, spread } => {
                let spread = spread.min(units).max(1);
                (start % spread, spread)
            }
        };
        let aligned = move |p: &u16| p.is_multiple_of(align) && *p <= last;
        let head = (start..spread).filter(aligned);
        let wrap = (0..start).filter(aligned);
        let rest = (0..=last)
            .step_by(usize::from(align))
            .filter(move |&p| p >= spread);
        head.chain(wrap).chain(rest).take(room)
    }

    fn first_fit(&self, item: &Item, order: Order) -> Option<u16> {
        if let Some(p) = item.prefer.filter(|&p| self.fits(item, p)) {
            return Some(p);
        }
        if order == Order::Lowest && item.size == 1 && item.align == 1 {
            return self.lowest_free_unit(item.span);
        }
        self.positions(item, order).find(|&p| self.fits(item, p))
    }

    /// The lowest unit free at the instants of `span`, by scanning words.
    fn lowest_free_unit(&self, span: Span) -> Option<u16> {
        let units = usize::from(self.units);
        for w in 0..units.div_ceil(64) {
            let early = if span.early() { self.early[w] } else { 0 };
            let late = if span.late() { self.late[w] } else { 0 };
            let taken = early | late;
            if taken != !0 {
                let unit = w * 64 + taken.trailing_ones() as usize;
                return (unit < units).then_some(unit as u16);
            }
        }
        None
    }
}

/// Places the pinned items; `None` when two of them collide or one lies outside.
fn pinned_grid(p: &Problem) -> Option<Grid> {
    let mut grid = Grid::new(p.units);
    grid.pin(p).then_some(grid)
}

/// The free items in canonical order: decreasing alignment, then size, both-instant items
/// first, then by index.
fn canonical_order(p: &Problem) -> Vec<usize> {
    in_canonical_order(p, |i| p.items[i].pinned.is_none())
}

/// The items `keep` selects, in canonical order (the keys are distinct: the index is one).
fn in_canonical_order(p: &Problem, keep: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.items.len()).filter(|&i| keep(i)).collect();
    order.sort_unstable_by_key(|&i| canonical_key(p, i));
    order
}

/// The key of item `i` in canonical order.
fn canonical_key(p: &Problem, i: usize) -> (Reverse<u16>, Reverse<u16>, u8, usize) {
    let it = &p.items[i];
    (Reverse(it.align), Reverse(it.size), it.span.rank(), i)
}

/// A placement of every item, decided from the problem alone (positions of `current`
/// and `prefer` are ignored), or `None` when the items cannot all be placed.
pub fn canonical(p: &Problem) -> Option<Vec<u16>> {
    let mut grid = pinned_grid(p)?;
    let mut at: Vec<u16> = p.items.iter().map(|i| i.pinned.unwrap_or(0)).collect();
    let order = canonical_order(p);
    if greedy(p, &order, &mut grid, &mut at) {
        return Some(at);
    }
    let mut grid = pinned_grid(p)?;
    let mut search = Search {
        p,
        order: &order,
        nodes: 0,
    };
    search.place(0, &mut grid, &mut at).then_some(at)
}

/// Whether the items fit: [`canonical`] finds a placement.
pub fn fits(p: &Problem) -> bool {
    if p.items.iter().all(|it| it.size == 1 && it.align == 1) {
        return singles_fit(p);
    }
    canonical(p).is_some()
}

/// [`fits`] for items of one unit, by counting: each both-instant item needs a unit free
/// at both instants, and the single-instant ones any unit free at theirs. First fit in
/// canonical order (both-instant items first) succeeds exactly when the counts allow, so
/// this agrees with [`canonical`].
fn singles_fit(p: &Problem) -> bool {
    singles_fit_beside(p, Beside::default())
}

/// One-unit items left out of a problem, neither pinned nor placed anywhere in
/// particular (the values an instruction leaves alone), by their instants.
#[derive(Clone, Copy, Debug, Default)]
pub struct Beside {
    /// Items of both instants (values live across the instruction).
    pub both: usize,
    /// Items of the early instant (values that end there).
    pub early: usize,
}

/// [`fits`] for a problem of one-unit items with the items `beside` added, by the
/// counts of [`singles_fit`]. Every item of `p` must be of one unit.
pub fn singles_fit_beside(p: &Problem, beside: Beside) -> bool {
    singles_least_units(p, beside).is_some_and(|least| least <= p.units)
}

/// The least number of units at which a problem of one-unit items with the items
/// `beside` added fits ([`singles_fit_beside`] holds there and at every larger number),
/// or `None` when two pinned items collide or one lies outside `p.units`. The pinned
/// items take the same units in a file of any size, so each count of
/// [`singles_fit_beside`] is a lower bound on the units (the unpinned items at an
/// instant, plus the units pinned items take there), and so is the end of the highest
/// pinned item: the least number is the largest of them. Every item of `p` must be of one
/// unit.
pub fn singles_least_units(p: &Problem, beside: Beside) -> Option<u16> {
    debug_assert!(p.items.iter().all(|it| it.size == 1 && it.align == 1));
    let grid = pinned_grid(p)?;
    let (mut both, mut early, mut late) = (beside.both, beside.early, 0);
    let mut pinned_end = 0;
    for it in &p.items {
        match (it.pinned, it.span) {
            (Some(at), _) => pinned_end = pinned_end.max(usize::from(at) + 1),
            (None, Span::Both) => both += 1,
            (None, Span::Early) => early += 1,
            (None, Span::Late) => late += 1,
        }
    }
    let units = usize::from(p.units);
    let taken_at_either = units - grid.free_at_both();
    let taken_early = units - grid.free_units(true);
    let taken_late = units - grid.free_units(false);
    let least = pinned_end
        .max(both + taken_at_either)
        .max(both + early + taken_early)
        .max(both + late + taken_late);
    u16::try_from(least).ok()
}

/// Unpinned items counted by shape, for a test cheaper than [`fits`] that needs neither
/// the items nor their order. First fit in canonical order places items by decreasing
/// alignment; when every alignment is a power of two, each item's size rounded up to its
/// alignment is a multiple of every alignment still to come, so at each instant the
/// units taken stay below an *extent*: a single-instant item raises its instant's extent
/// by its rounded size, a both-instant item raises both to the higher one plus its
/// rounded size (the item fits at that aligned position, and first fit takes the lowest
/// that fits). When the extents end within the budget, [`greedy`] succeeds.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// (alignment, size, span) and how many items have that shape.
    shapes: Vec<((u16, u16, Span), u32)>,
}

impl Tally {
    /// Counts an unpinned item of `size` units aligned to `align`.
    pub fn add(&mut self, size: u16, align: u16, span: Span) {
        let shape = (align.max(1), size, span);
        match self.shapes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, count)) => *count += 1,
            None => self.shapes.push((shape, 1)),
        }
    }

    /// Whether the extents of first fit in canonical order end within `units`; `true`
    /// implies that [`fits`] holds for the problem of these items.
    pub fn surely_fits(&mut self, units: u16) -> bool {
        if !self.shapes.iter().all(|((a, _, _), _)| a.is_power_of_two()) {
            return false;
        }
        self.shapes
            .sort_by_key(|&((align, size, span), _)| (Reverse(align), Reverse(size), span.rank()));
        let (mut early, mut late) = (0u32, 0u32);
        for &((align, size, span), count) in &self.shapes {
            let units = u32::from(size.next_multiple_of(align)) * count;
            match span {
                Span::Early => early += units,
                Span::Late => late += units,
                Span::Both => {
                    early = early.max(late) + units;
                    late = early;
                }
            }
        }
        early.max(late) <= u32::from(units)
    }
}

/// First fit in canonical order. An item of the same shape as the one before it cannot
/// fit below where that one ended (the grid only fills), so its search starts there.
fn greedy(p: &Problem, order: &[usize], grid: &mut Grid, at: &mut [u16]) -> bool {
    let mut previous: Option<&Item> = None;
    let mut floor: u16 = 0;
    for &i in order {
        let item = &p.items[i];
        if !previous.is_some_and(|x| same_shape(x, item)) {
            floor = 0;
        }
        let last = grid.units().saturating_sub(item.size);
        let Some(pos) = (floor.next_multiple_of(item.align)..=last)
            .step_by(usize::from(item.align))
            .find(|&q| grid.fits(item, q))
        else {
            return false;
        };
        grid.set(item, pos, true);
        at[i] = pos;
        previous = Some(item);
        floor = pos + item.size;
    }
    true
}

/// Bounded depth-first search over positions in canonical order. Identical consecutive
/// items take increasing positions (their order does not matter).
struct Search<'a> {
    p: &'a Problem,
    order: &'a [usize],
    nodes: usize,
}

impl Search<'_> {
    fn place(&mut self, k: usize, grid: &mut Grid, at: &mut [u16]) -> bool {
        let Some(&i) = self.order.get(k) else {
            return true;
        };
        if !self.room_left(k, grid) {
            return false;
        }
        let item = self.p.items[i];
        let floor = match k.checked_sub(1).map(|j| self.order[j]) {
            Some(j) if same_shape(&self.p.items[j], &item) => at[j] + item.size,
            _ => 0,
        };
        let positions: Vec<u16> = grid.positions(&item, Order::Lowest).collect();
        for pos in positions {
            if pos < floor || !grid.fits(&item, pos) {
                continue;
            }
            self.nodes += 1;
            if self.nodes > SEARCH_NODES {
                return false;
            }
            grid.set(&item, pos, true);
            at[i] = pos;
            if self.place(k + 1, grid, at) {
                return true;
            }
            grid.set(&item, pos, false);
        }
        false
    }

    /// Whether the free units of each instant can hold what is left to place.
    fn room_left(&self, k: usize, grid: &Grid) -> bool {
        let need = |early: bool| {
            self.order[k..]
                .iter()
                .map(|&i| &self.p.items[i])
                .filter(|it| {
                    if early {
                        it.span.early()
                    } else {
                        it.span.late()
                    }
                })
                .map(|it| usize::from(it.size))
                .sum::<usize>()
        };
        need(true) <= grid.free_units(true) && need(false) <= grid.free_units(false)
    }
}

fn same_shape(a: &Item, b: &Item) -> bool {
    a.size == b.size && a.align == b.align && a.span == b.span
}

/// A placement that keeps items where they are (`current`) as far as it can; `None`
/// exactly when [`canonical`] finds none.
pub fn near(p: &Problem, order: Order) -> Option<Vec<u16>> {
    let mut grid = pinned_grid(p)?;
    let mut kept = Kept::new(p, &mut grid, Placement::default());
    if kept.place_movers(order, true) {
        return Some(kept.at);
    }
    let matched = canonical(p).map(|at| match_current(p, at))?;
    Some(matched)
}

/// [`near`] for a problem that leaves out values no constraint touches: `still` marks
/// their units (held at both instants, bit `u % 64` of word `u / 64` for unit `u`).
/// [`near`] would keep such a value where it is unless it lies under a pinned item or an
/// item finds no room without displacing it; so when no pinned item lies on `still` and
/// every item not kept finds room first fit, `out.at` gets [`near`]'s answer for the
/// problem with those values as items, at the cost of the few items the instruction
/// touches (and `out`'s buffers from the call before). False otherwise: then the caller
/// asks [`near`] with every item.
pub fn near_around(p: &Problem, still: &[u64], order: Order, out: &mut Placement) -> bool {
    let held = Held {
        early: still,
        late: still,
    };
    near_held(p, held, order, out)
}

/// The units held at each instant by values that stay where they are, one bit per unit
/// (bit `u % 64` of word `u / 64` for unit `u`).
#[derive(Clone, Copy, Debug)]
pub struct Held<'a> {
    /// Units read or held across the instruction.
    pub early: &'a [u64],
    /// Units held after it: every value but those read for the last time.
    pub late: &'a [u64],
}

/// [`near_around`] where the values left out hold different units at the two instants
/// (`held`: those read for the last time free theirs at the late one), for a problem
/// whose items are definitions (late items, or early clobbers of both instants, some
/// pinned): the pinned items take their units, which must be free, then in canonical
/// order each other item takes its `prefer`red position if that is free, else first fit
/// in `order`, where [`near`] puts them with those values as items. False when a pinned
/// item finds its units taken or another item finds no room (then [`near`] would have to
/// move a value left out, or fails).
pub fn near_held(p: &Problem, held: Held, order: Order, out: &mut Placement) -> bool {
    let mut grid = Grid::new(p.units);
    if !grid.pin(p) || !grid.hold(held) {
        return false;
    }
    let mut kept = Kept::new(p, &mut grid, std::mem::take(out));
    let placed = kept.place_movers(order, false);
    *out = Placement {
        at: kept.at,
        placed: kept.placed,
        queue: kept.queue,
    };
    placed
}

/// A placement's buffers: the position of each item, whether it has one yet, and the
/// items still to place.
#[derive(Debug, Default)]
pub struct Placement {
    pub at: Vec<u16>,
    placed: Vec<bool>,
    queue: VecDeque<usize>,
}

/// Assignment's placement in progress: which items keep their current position (the
/// grid is borrowed, not moved: it is a few hundred bytes).
struct Kept<'a> {
    p: &'a Problem,
    grid: &'a mut Grid,
    at: Vec<u16>,
    placed: Vec<bool>,
    /// The items to place, in canonical order ([`Kept::place_movers`]).
    queue: VecDeque<usize>,
}

impl<'a> Kept<'a> {
    /// Pinned items placed, then every item that can stay where it is.
    fn new(p: &'a Problem, grid: &'a mut Grid, buffers: Placement) -> Kept<'a> {
        let Placement {
            mut at,
            mut placed,
            queue,
        } = buffers;
        at.clear();
        at.extend(p.items.iter().map(|it| it.pinned.unwrap_or(0)));
        placed.clear();
        placed.extend(p.items.iter().map(|it| it.pinned.is_some()));
        for (i, item) in p.items.iter().enumerate() {
            if let (None, Some(pos)) = (item.pinned, item.current) {
                if grid.fits(item, pos) {
                    grid.set(item, pos, true);
                    at[i] = pos;
                    placed[i] = true;
                }
            }
        }
        Kept {
            p,
            grid,
            at,
            placed,
            queue,
        }
    }

    /// Places the items not placed yet, first fit in canonical order; an item that finds
    /// no room displaces the fewest units of movable placed items (when `displace`), which
    /// are placed again after it. False when some item stays unplaced.
    fn place_movers(&mut self, order: Order, displace: bool) -> bool {
        let p = self.p;
        let mut queue = std::mem::take(&mut self.queue);
        queue.clear();
        queue.extend((0..p.items.len()).filter(|&i| !self.placed[i]));
        queue
            .make_contiguous()
            .sort_unstable_by_key(|&i| canonical_key(p, i));
        let placed = self.place_queued(&mut queue, order, displace);
        self.queue = queue;
        placed
    }

    /// [`Kept::place_movers`] for the items in `queue`.
    fn place_queued(&mut self, queue: &mut VecDeque<usize>, order: Order, displace: bool) -> bool {
        let mut displacements = 0;
        while let Some(i) = queue.pop_front() {
            let item = self.p.items[i];
            if let Some(pos) = self.grid.first_fit(&item, order) {
                self.put(i, pos);
                continue;
            }
            displacements += 1;
            if !displace || displacements > self.p.items.len() {
                return false;
            }
            let Some((pos, victims)) = self.cheapest_window(&item) else {
                return false;
            };
            for &v in &victims {
                self.take(v);
            }
            self.put(i, pos);
            queue.extend(victims);
        }
        true
    }

    fn put(&mut self, i: usize, pos: u16) {
        self.grid.set(&self.p.items[i], pos, true);
        self.at[i] = pos;
        self.placed[i] = true;
    }

    fn take(&mut self, i: usize) {
        self.grid.set(&self.p.items[i], self.at[i], false);
        self.placed[i] = false;
    }

    /// The window for `item` whose occupants at its instants are all movable (placed,
    /// not pinned) and cover the fewest units; the occupants are returned.
    fn cheapest_window(&self, item: &Item) -> Option<(u16, Vec<usize>)> {
        let mut best: Option<(usize, u16, Vec<usize>)> = None;
        for pos in self.grid.positions(item, Order::Lowest) {
            let Some(victims) = self.occupants(item, pos) else {
                continue;
            };
            let cost = self.grid.taken(item, pos);
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, pos, victims));
            }
        }
        best.map(|(_, pos, victims)| (pos, victims))
    }

    /// The placed items overlapping `item` at `pos` on a shared instant; `None` when one
    /// of them is pinned.
    fn occupants(&self, item: &Item, pos: u16) -> Option<Vec<usize>> {
        let (lo, hi) = (pos, pos + item.size);
        let mut victims = Vec::new();
        for (j, other) in self.p.items.iter().enumerate() {
            let shares = (item.span.early() && other.span.early())
                || (item.span.late() && other.span.late());
            let overlaps = self.at[j] < hi && lo < self.at[j] + other.size;
            if !self.placed[j] || !shares || !overlaps {
                continue;
            }
            if other.pinned.is_some() {
                return None;
            }
            victims.push(j);
        }
        Some(victims)
    }
}

/// Among items of one shape, hands each canonical position to an item that already sits
/// there when there is one, so that fewer values move.
fn match_current(p: &Problem, mut at: Vec<u16>) -> Vec<u16> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in (0..p.items.len()).filter(|&i| p.items[i].pinned.is_none()) {
        match groups
            .iter_mut()
            .find(|g| same_shape(&p.items[g[0]], &p.items[i]))
        {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    for group in groups {
        let mut free: Vec<u16> = group.iter().map(|&i| at[i]).collect();
        let mut pending = Vec::new();
        for &i in &group {
            match p.items[i]
                .current
                .and_then(|c| free.iter().position(|&q| q == c))
            {
                Some(k) => at[i] = free.swap_remove(k),
                None => pending.push(i),
            }
        }
        free.sort_unstable();
        for (i, pos) in pending.into_iter().zip(free) {
            at[i] = pos;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(size: u16, align: u16, span: Span) -> Item {
        Item::new(size, align, span)
    }

    /// Every problem of four items (sizes 1 to 4, naturally aligned up to 4, any
    /// span) in 4 to 8 units: where the tally is sure, [`fits`] agrees, and it is sure of
    /// single-unit problems the sums allow.
    #[test]
    fn tally_is_sure_only_of_problems_that_fit() {
        let spans = [Span::Early, Span::Late, Span::Both];
        let shapes: Vec<(u16, Span)> = (1..=4u16)
            .flat_map(|size| spans.map(|span| (size, span)))
            .collect();
        let mut problems: Vec<Vec<(u16, Span)>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<(u16, Span)>> = problems
                .iter()
                .flat_map(|p| shapes.iter().map(move |&s| [p.clone(), vec![s]].concat()))
                .collect();
            problems = longer;
        }
        for units in 4..=8 {
            for shapes in &problems {
                let align = |size: u16| size.next_power_of_two().min(4);
                let mut tally = Tally::default();
                shapes
                    .iter()
                    .for_each(|&(s, span)| tally.add(s, align(s), span));
                let items = shapes.iter().map(|&(s, span)| item(s, align(s), span));
                let p = Problem {
                    units,
                    items: items.collect(),
                };
                let sure = tally.surely_fits(units);
                assert!(!sure || fits(&p), "{p:?}");
                let sum = |early: bool| {
                    let at = |s: Span| if early { s.early() } else { s.late() };
                    shapes.iter().filter(|&&(_, s)| at(s)).count()
                };
                let ones = shapes.iter().all(|&(s, _)| s == 1);
                let by_sums = sum(true).max(sum(false)) <= usize::from(units);
                assert!(!ones || sure == by_sums, "{p:?}");
            }
        }
    }

    fn pinned(size: u16, span: Span, at: u16) -> Item {
        Item {
            pinned: Some(at),
            ..Item::new(size, 1, span)
        }
    }

    /// Checks a placement: aligned, inside, pinned where pinned, no two items sharing a
    /// unit at a shared instant.
    fn valid(p: &Problem, at: &[u16]) -> bool {
        let mut grid = Grid::new(p.units);
        p.items.iter().zip(at).all(|(item, &pos)| {
            let ok = item.pinned.is_none_or(|q| q == pos) && grid.fits(item, pos);
            grid.set(item, pos, true);
            ok
        })
    }

    /// Every placement, tried exhaustively.
    fn brute_force(p: &Problem, k: usize, grid: &mut Grid) -> bool {
        let Some(item) = p.items.get(k) else {
            return true;
        };
        let positions: Vec<u16> = match item.pinned {
            Some(q) => vec![q],
            None => (0..p.units).collect(),
        };
        for pos in positions {
            if grid.fits(item, pos) {
                grid.set(item, pos, true);
                let found = brute_force(p, k + 1, grid);
                grid.set(item, pos, false);
                if found {
                    return true;
                }
            }
        }
        false
    }

    #[test]
    fn killed_operand_and_definition_share_units() {
        let p = Problem {
            units: 3,
            items: vec![
                item(1, 1, Span::Both),
                item(2, 2, Span::Early),
                item(2, 2, Span::Late),
            ],
        };
        let at = canonical(&p).expect("fits");
        assert!(valid(&p, &at));
        assert_eq!(at, [2, 0, 0]);
    }

    #[test]
    fn pinned_items_collide() {
        let p = Problem {
            units: 4,
            items: vec![pinned(2, Span::Early, 1), pinned(1, Span::Both, 2)],
        };
        assert_eq!(canonical(&p), None);
        let p = Problem {
            units: 4,
            items: vec![pinned(2, Span::Early, 1), pinned(1, Span::Late, 2)],
        };
        assert_eq!(canonical(&p), Some(vec![1, 2]));
    }

    #[test]
    fn a_pinned_unit_splits_the_file() {
        // v[0:3] free except unit 1 at both instants: a pair fits only at 2.
        let p = Problem {
            units: 4,
            items: vec![pinned(1, Span::Both, 1), item(2, 2, Span::Both)],
        };
        assert_eq!(canonical(&p), Some(vec![1, 2]));
        let p = Problem {
            units: 4,
            items: vec![
                pinned(1, Span::Both, 1),
                item(2, 2, Span::Both),
                item(2, 2, Span::Late),
            ],
        };
        assert_eq!(canonical(&p), None);
    }

    #[test]
    fn near_keeps_what_can_stay() {
        let mut stay = item(1, 1, Span::Both);
        stay.current = Some(5);
        let mut moved = item(1, 1, Span::Both);
        moved.current = Some(0);
        let p = Problem {
            units: 8,
            items: vec![
                stay,
                moved,
                pinned(1, Span::Early, 0),
                item(2, 2, Span::Late),
            ],
        };
        let at = near(&p, Order::Lowest).expect("fits");
        assert!(valid(&p, &at));
        assert_eq!(at[0], 5, "an item in no one's way stays");
        assert_ne!(at[1], 0, "the item on the pinned unit moves");
    }

    #[test]
    fn near_displaces_when_first_fit_fails() {
        // Singles at 0 and 2 leave no free pair; one of them moves to 3.
        let mut a = item(1, 1, Span::Both);
        a.current = Some(0);
        let mut b = item(1, 1, Span::Both);
        b.current = Some(2);
        let p = Problem {
            units: 4,
            items: vec![a, b, item(2, 2, Span::Late)],
        };
        let at = near(&p, Order::Lowest).expect("fits");
        assert!(valid(&p, &at));
        let moved = (0..2)
            .filter(|&i| Some(at[i]) != p.items[i].current)
            .count();
        assert_eq!(moved, 1);
    }

    /// A small deterministic generator of problems: shapes of AMD SGPRs (natural
    /// alignment up to 4) and VGPRs (stride 1), pinned and free items at random instants.
    fn random_problem(seed: &mut u64) -> Problem {
        let mut next = |n: u64| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*seed >> 33) % n
        };
        let units = 2 + next(7) as u16;
        let natural = next(2) == 0;
        let count = 1 + next(5) as usize;
        let items = (0..count)
            .map(|_| {
                let size: u16 = [1, 1, 1, 2, 2, 3, 4][next(7) as usize];
                let align = if natural {
                    size.next_power_of_two().min(4)
                } else {
                    1
                };
                let span = [Span::Early, Span::Late, Span::Both][next(3) as usize];
                let mut it = Item::new(size, align, span);
                if next(4) == 0 {
                    it.pinned = Some(next(u64::from(units)) as u16 / align * align);
                }
                it
            })
            .collect();
        Problem { units, items }
    }

    /// The word scan for one-unit items finds what trying every position finds.
    #[test]
    fn lowest_free_unit_is_the_first_position_that_fits() {
        let mut seed = 11u64;
        for units in [1u16, 5, 63, 64, 65, 130] {
            for _ in 0..200 {
                let mut grid = Grid::new(units);
                for u in 0..units {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let span = [Span::Early, Span::Late, Span::Both][(seed >> 33) as usize % 3];
                    if !(seed >> 40).is_multiple_of(4) {
                        grid.set(&item(1, 1, span), u, true);
                    }
                }
                for span in [Span::Early, Span::Late, Span::Both] {
                    let it = item(1, 1, span);
                    let scanned = grid
                        .positions(&it, Order::Lowest)
                        .find(|&p| grid.fits(&it, p));
                    assert_eq!(grid.lowest_free_unit(span), scanned);
                }
            }
        }
    }

    /// A register file of one-unit and two-unit values at disjoint places, some of which
    /// the instruction reads (the first ones) or ends, then pinned and free definitions:
    /// the problem with every value, and which items are values left alone.
    fn random_file(seed: &mut u64) -> (Problem, Vec<bool>) {
        let mut next = |n: u64| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*seed >> 33) % n
        };
        let units = 4 + next(9) as u16;
        let mut items = Vec::new();
        let mut alone = Vec::new();
        let mut u = 0;
        while u < units {
            let size = 1 + next(2) as u16;
            if next(3) != 0 && u + size <= units {
                let touched = next(3) == 0;
                let span = if touched && next(2) == 0 {
                    Span::Early
                } else {
                    Span::Both
                };
                let mut it = Item::new(size, 1, span);
                it.current = Some(u);
                if touched && next(3) == 0 {
                    it.pinned = Some(next(u64::from(units - size + 1)) as u16);
                }
                items.push(it);
                alone.push(!touched);
                u += size;
            } else {
                u += 1;
            }
        }
        for _ in 0..next(4) {
            let span = [Span::Late, Span::Both][next(2) as usize];
            let mut it = Item::new(1, 1, span);
            if next(2) == 0 {
                it.pinned = Some(next(u64::from(units)) as u16);
            }
            items.push(it);
            alone.push(false);
        }
        (Problem { units, items }, alone)
    }

    /// Where `near_around` answers for the problem without the values left alone, `near`
    /// gives the same places with those values where they are.
    #[test]
    fn near_around_is_near_when_the_values_left_alone_stay() {
        let mut seed = 5u64;
        let mut answered = 0;
        for _ in 0..20_000 {
            let (whole, alone) = random_file(&mut seed);
            let mut still = [0u64; WORDS];
            let mut small = Problem {
                units: whole.units,
                items: Vec::new(),
            };
            for (item, &left) in whole.items.iter().zip(&alone) {
                if left {
                    let at = item.current.expect("a value has a place");
                    for (w, m) in masks(usize::from(at), usize::from(at + item.size)) {
                        still[w] |= m;
                    }
                } else {
                    small.items.push(*item);
                }
            }
            let mut placement = Placement::default();
            if !near_around(&small, &still, Order::Lowest, &mut placement) {
                continue;
            }
            let at = placement.at;
            answered += 1;
            let full = near(&whole, Order::Lowest).expect("near answers where near_around does");
            let mut rest = at.iter();
            for ((item, &left), &pos) in whole.items.iter().zip(&alone).zip(&full) {
                let expected = if left {
                    item.current
                } else {
                    rest.next().copied()
                };
                assert_eq!(Some(pos), expected, "{whole:?} {alone:?}");
            }
        }
        assert!(answered > 5_000, "{answered}");
    }

    /// Where definitions are the only items without a place (some pinned, some early
    /// clobbers), `near_held` gives them the places `near` gives, wishes and round-robin
    /// included, or declines.
    #[test]
    fn near_held_is_near_for_definitions() {
        let mut seed = 17u64;
        let (mut answered, mut pinned, mut early) = (0, 0, 0);
        for round in 0..20_000u64 {
            let (mut whole, _) = random_file(&mut seed);
            let kept = |it: &Item| it.current.is_some() && it.pinned.is_none();
            if !whole
                .items
                .iter()
                .all(|it| kept(it) || it.current.is_none())
            {
                continue;
            }
            let mut held = [[0u64; WORDS]; 2];
            let mut defs = Vec::new();
            for (k, item) in whole.items.iter_mut().enumerate() {
                match item.current {
                    Some(at) => {
                        for (w, m) in masks(usize::from(at), usize::from(at + item.size)) {
                            held[0][w] |= m;
                            if item.span == Span::Both {
                                held[1][w] |= m;
                            }
                        }
                    }
                    None if item.pinned.is_some() => defs.push(*item),
                    None => {
                        item.size = 1 + (round + k as u64) as u16 % 2;
                        item.align = item.size;
                        item.prefer = (round + k as u64)
                            .is_multiple_of(3)
                            .then_some((round % 7) as u16);
                        defs.push(*item);
                    }
                }
            }
            let order = if round % 2 == 0 {
                Order::Lowest
            } else {
                Order::From {
                    start: (round % 5) as u16,
                    spread: whole.units - 1,
                }
            };
            let held = Held {
                early: &held[0],
                late: &held[1],
            };
            let only_defs = Problem {
                units: whole.units,
                items: defs,
            };
            let mut out = Placement::default();
            if !near_held(&only_defs, held, order, &mut out) {
                continue;
            }
            let (defs, at) = (only_defs.items, out.at);
            answered += 1;
            pinned += usize::from(defs.iter().any(|it| it.pinned.is_some()));
            early += usize::from(defs.iter().any(|it| it.span == Span::Both));
            let full = near(&whole, order).expect("near answers where near_held does");
            let new = whole.items.iter().zip(&full);
            let expected: Vec<u16> = new
                .filter(|(it, _)| it.current.is_none())
                .map(|(_, &pos)| pos)
                .collect();
            assert_eq!(at, expected, "{whole:?} {order:?}");
        }
        assert!(answered > 2_000, "{answered}");
        assert!(pinned > 500 && early > 500, "{pinned} {early}");
    }

    /// Counting the values left alone decides as placing them would.
    #[test]
    fn singles_beside_agree_with_the_whole_problem() {
        let mut seed = 3u64;
        for _ in 0..20_000 {
            let (whole, alone) = random_file(&mut seed);
            if whole.items.iter().any(|it| it.size != 1) {
                continue;
            }
            let mut beside = Beside::default();
            let mut small = Problem {
                units: whole.units,
                items: Vec::new(),
            };
            for (item, &left) in whole.items.iter().zip(&alone) {
                match (left, item.span) {
                    (true, Span::Both) => beside.both += 1,
                    (true, _) => beside.early += 1,
                    (false, _) => small.items.push(*item),
                }
            }
            assert_eq!(
                singles_fit_beside(&small, beside),
                fits(&whole),
                "{whole:?}"
            );
        }
    }

    /// The least units of a problem of one-unit items are the first number of units at
    /// which the problem fits, as first fit and the search place it.
    #[test]
    fn singles_least_units_is_the_first_size_that_fits() {
        let mut seed = 11u64;
        let mut raised = 0;
        for _ in 0..5_000 {
            let (whole, _) = random_file(&mut seed);
            if whole.items.iter().any(|it| it.size != 1) {
                continue;
            }
            let least = singles_least_units(&whole, Beside::default());
            for units in 0..=whole.units {
                let sized = Problem {
                    units,
                    items: whole.items.clone(),
                };
                let fits = canonical(&sized).is_some();
                assert_eq!(
                    fits,
                    least.is_some_and(|l| l <= units),
                    "{sized:?} {least:?}"
                );
            }
            raised += usize::from(least.is_some_and(|l| l > 0));
        }
        assert!(raised > 300, "{raised}");
    }

    #[test]
    fn canonical_and_near_agree_with_brute_force() {
        let mut seed = 7;
        let mut feasible = 0;
        for _ in 0..20_000 {
            let p = random_problem(&mut seed);
            let exists = brute_force(&p, 0, &mut Grid::new(p.units));
            let found = canonical(&p);
            assert_eq!(found.is_some(), exists, "{p:?}");
            assert_eq!(fits(&p), exists, "{p:?}");
            if let Some(at) = found {
                feasible += 1;
                assert!(valid(&p, &at), "{p:?} {at:?}");
                let at = near(&p, Order::Lowest).expect("near agrees with canonical");
                assert!(valid(&p, &at), "{p:?} {at:?}");
            }
        }
        assert!(feasible > 5_000, "{feasible}");
    }
}
