//! Per-block (or per-node) tables as compressed rows: one array of entries and one of
//! offsets, the entries of row `i` being `entries[offsets[i]..offsets[i + 1]]` — the
//! compressed sparse row layout regalloc2 uses for its per-block tables. A table of n rows
//! costs two allocations instead of n vectors, and neighbouring rows sit next to each
//! other in memory, so a walk over the blocks reads its side tables in order.
//!
//! A table whose entries are found in another order (per value, per edge) is built from
//! `(row, entry)` pairs by a stable counting sort ([`Rows::grouped`]); when their number is
//! learnt only while finding them, they are gathered in fixed-size chunks ([`Pairs`]).

use crate::program::{Block, Value};

/// What indexes the rows: blocks, or values.
pub trait RowKey: Copy {
    fn row(self) -> usize;
}

impl RowKey for Block {
    fn row(self) -> usize {
        self.index()
    }
}

impl RowKey for Value {
    fn row(self) -> usize {
        self.index()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rows<T> {
    offsets: Vec<u32>,
    entries: Vec<T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Rows<T> {
        Rows {
            offsets: vec![0],
            entries: Vec::new(),
        }
    }
}

impl<T: Copy> Rows<T> {
    /// An empty table with room for `rows` rows of `entries` entries in all, for
    /// [`Rows::push_row`].
    pub fn with_capacity(rows: usize, entries: usize) -> Rows<T> {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Rows {
            offsets,
            entries: Vec::with_capacity(entries),
        }
    }

    /// `rows` rows from `(row, entry)` pairs; within a row, entries keep the order of
    /// `pairs` (a stable counting sort by row).
    pub fn grouped<K: RowKey>(rows: usize, pairs: Vec<(K, T)>) -> Rows<T> {
        Rows::grouped_chunks(rows, std::slice::from_ref(&pairs))
    }

    /// As [`Rows::grouped`], from pairs held in consecutive chunks. The pairs are read
    /// twice: once to count each row's entries (`offsets[k]` becomes the end of row `k`),
    /// once backwards to place each entry just below its row's end (which leaves
    /// `offsets[k]` at the row's start), so that large tables cost two passes over the
    /// pairs and one over the entries.
    fn grouped_chunks<K: RowKey>(rows: usize, chunks: &[Vec<(K, T)>]) -> Rows<T> {
        let Some(&(_, filler)) = chunks.iter().find_map(|chunk| chunk.first()) else {
            return Rows {
                offsets: vec![0; rows + 1],
                entries: Vec::new(),
            };
        };
        let mut offsets = vec![0u32; rows + 1];
        for chunk in chunks {
            for &(k, _) in chunk {
                offsets[k.row()] += 1;
            }
        }
        for i in 1..rows {
            offsets[i] += offsets[i - 1];
        }
        let total: usize = chunks.iter().map(Vec::len).sum();
        offsets[rows] = total as u32;
        let mut entries = vec![filler; total];
        for chunk in chunks.iter().rev() {
            for &(k, entry) in chunk.iter().rev() {
                let end = &mut offsets[k.row()];
                *end -= 1;
                entries[*end as usize] = entry;
            }
        }
        Rows { offsets, entries }
    }

    /// `rows` rows from `(row, entry)` pairs that can be read twice from where they come
    /// from (a graph's edges, say), so that no vector of them is made: one pass counts each
    /// row's entries, the second places each entry at its row's next free place. Within a
    /// row, entries keep the order of `pairs`, as [`Rows::grouped`] keeps it.
    pub fn grouped_from<K: RowKey>(
        rows: usize,
        pairs: impl Iterator<Item = (K, T)> + Clone,
    ) -> Rows<T> {
        let Some((_, filler)) = pairs.clone().next() else {
            return Rows {
                offsets: vec![0; rows + 1],
                entries: Vec::new(),
            };
        };
        // Row `k`'s count at `k + 2`, then its start at `k + 1`, then, once placed, its
        // end there, which is where row `k + 1` starts.
        let mut offsets = vec![0u32; rows + 2];
        for (k, _) in pairs.clone() {
            offsets[k.row() + 2] += 1;
        }
        for i in 2..rows + 2 {
            offsets[i] += offsets[i - 1];
        }
        let mut entries = vec![filler; offsets[rows + 1] as usize];
        for (k, entry) in pairs {
            let next = &mut offsets[k.row() + 1];
            entries[*next as usize] = entry;
            *next += 1;
        }
        offsets.pop();
        Rows { offsets, entries }
    }

    /// Appends the next row.
    pub fn push_row(&mut self, row: impl IntoIterator<Item = T>) {
        self.entries.extend(row);
        self.offsets.push(self.entries.len() as u32);
    }

    /// Row `k`.
    pub fn row(&self, k: impl RowKey) -> &[T] {
        let i = k.row();
        &self.entries[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Row `k`, to change its entries in place (the row keeps its length).
    pub fn row_mut(&mut self, k: impl RowKey) -> &mut [T] {
        let i = k.row();
        &mut self.entries[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The number of entries over all rows.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every row in order.
    pub fn iter(&self) -> impl Iterator<Item = &[T]> + Clone + '_ {
        self.offsets
            .windows(2)
            .map(|w| &self.entries[w[0] as usize..w[1] as usize])
    }
}

impl<T: Copy> FromIterator<Vec<T>> for Rows<T> {
    fn from_iter<I: IntoIterator<Item = Vec<T>>>(rows: I) -> Rows<T> {
        let mut table = Rows::default();
        for row in rows {
            table.push_row(row);
        }
        table
    }
}

/// Entries per chunk of [`Pairs`]: 48 KiB of `(Value, (Block, bool))` pairs.
const CHUNK: usize = 1 << 12;

/// `(row, entry)` pairs gathered for [`Rows::grouped`] when their number is not known
/// beforehand, in chunks of fixed size: gathering never copies what it holds beyond the
/// first chunk, where a vector grown by doubling copies its contents at every growth and,
/// for a table larger than the cache, misses on both the old and the new copy. The first
/// chunk grows by doubling up to that size, so a small function's table takes a small
/// heap block, not a chunk's 48 KiB (a request that large also makes the heap consolidate
/// its free blocks); where the caller can foresee about how many pairs come, the first
/// chunk starts at that size, taken at the first push (a table left empty takes none).
#[derive(Debug)]
pub struct Pairs<K, T> {
    full: Vec<Vec<(K, T)>>,
    last: Vec<(K, T)>,
    /// The room the first chunk takes at the first push.
    expected: usize,
}

/// The smallest room a chunk grows to (a vector's own first step for small entries).
const FIRST_ROOM: usize = 4;

impl<K: RowKey, T: Copy> Pairs<K, T> {
    pub fn new() -> Pairs<K, T> {
        Pairs::expecting(0)
    }

    /// No pairs yet; the first push makes room for about `expected` of them (at most a
    /// chunk).
    pub fn expecting(expected: usize) -> Pairs<K, T> {
        Pairs {
            full: Vec::new(),
            last: Vec::new(),
            expected,
        }
    }

    #[inline]
    pub fn push(&mut self, row: K, entry: T) {
        if self.last.len() == self.last.capacity() {
            self.make_room();
        }
        self.last.push((row, entry));
    }

    /// Room for the next pair: a new chunk when the last one is full, else the last one
    /// doubled (or, empty, given the expected room), never beyond a chunk.
    #[cold]
    fn make_room(&mut self) {
        let len = self.last.len();
        if len == CHUNK {
            let full = std::mem::replace(&mut self.last, Vec::with_capacity(CHUNK));
            self.full.push(full);
            return;
        }
        let room = if len == 0 { self.expected } else { len };
        self.last
            .reserve_exact(room.clamp(FIRST_ROOM, CHUNK).min(CHUNK - len));
    }

    /// The table of `rows` rows, entries in the order they were pushed within each row.
    pub fn grouped(mut self, rows: usize) -> Rows<T> {
        if self.full.is_empty() {
            return Rows::grouped_chunks(rows, std::slice::from_ref(&self.last));
        }
        self.full.push(self.last);
        Rows::grouped_chunks(rows, &self.full)
    }
}

impl<K: RowKey, T: Copy> Default for Pairs<K, T> {
    fn default() -> Pairs<K, T> {
        Pairs::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_rows_keep_pair_order_within_a_row() {
        let pairs = vec![
            (Block(2), 'a'),
            (Block(0), 'b'),
            (Block(2), 'c'),
            (Block(0), 'd'),
        ];
        let rows = Rows::grouped(4, pairs);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows.row(Block(0)), ['b', 'd']);
        assert_eq!(rows.row(Block(1)), [] as [char; 0]);
        assert_eq!(rows.row(Block(2)), ['a', 'c']);
        assert_eq!(rows.row(Block(3)), [] as [char; 0]);
    }

    #[test]
    fn pairs_over_several_chunks_group_as_one_vector_would() {
        let pairs: Vec<(Value, u32)> = (0..3 * CHUNK as u32 + 5)
            .map(|i| (Value(i * 7 % 11), i))
            .collect();
        let mut chunked = Pairs::new();
        for &(row, entry) in &pairs {
            chunked.push(row, entry);
        }
        assert!(chunked.full.iter().all(|chunk| chunk.len() == CHUNK));
        assert_eq!(chunked.grouped(12), Rows::grouped(12, pairs));
    }

    #[test]
    fn a_few_pairs_take_a_small_block() {
        let mut pairs = Pairs::new();
        pairs.push(Value(3), 1u32);
        assert!(pairs.last.capacity() < CHUNK, "{}", pairs.last.capacity());
    }

    #[test]
    fn rows_grouped_from_an_iterator_are_those_of_a_vector() {
        let pairs = [
            (Block(2), 'a'),
            (Block(0), 'b'),
            (Block(2), 'c'),
            (Block(4), 'd'),
        ];
        let from_iter = Rows::grouped_from(5, pairs.iter().copied());
        assert_eq!(from_iter, Rows::grouped(5, pairs.to_vec()));
        let none = Rows::<char>::grouped_from(3, std::iter::empty::<(Block, char)>());
        assert_eq!(none, Rows::grouped(3, Vec::<(Block, char)>::new()));
    }

    #[test]
    fn an_expected_size_is_taken_at_the_first_push() {
        let mut pairs = Pairs::expecting(100);
        assert_eq!(pairs.last.capacity(), 0, "an empty table takes no room");
        pairs.push(Value(3), 1u32);
        assert_eq!(pairs.last.capacity(), 100);
        (0..CHUNK as u32).for_each(|i| pairs.push(Value(i % 5), i));
        assert!(pairs.full.iter().all(|chunk| chunk.len() == CHUNK));
    }

    #[test]
    fn pushed_rows_read_back() {
        let rows: Rows<u8> = [vec![1, 2], vec![], vec![3]].into_iter().collect();
        assert_eq!(rows.iter().collect::<Vec<_>>(), [&[1, 2][..], &[], &[3]]);
        assert_eq!(rows.row(Block(2)), [3]);
    }

    #[test]
    fn a_row_changed_in_place_leaves_its_neighbours() {
        let mut rows: Rows<u8> = [vec![1, 2], vec![3], vec![4]].into_iter().collect();
        rows.row_mut(Block(1))[0] = 9;
        assert_eq!(rows.iter().collect::<Vec<_>>(), [&[1, 2][..], &[9], &[4]]);
    }
}
