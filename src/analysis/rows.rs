//! Per-block (or per-node) tables as compressed rows: one array of entries and one of
//! offsets, the entries of row `i` being `entries[offsets[i]..offsets[i + 1]]` — the
//! compressed sparse row layout regalloc2 uses for its per-block tables. A table of n rows
//! costs two allocations instead of n vectors, and neighbouring rows sit next to each
//! other in memory, so a walk over the blocks reads its side tables in order.

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
    /// `pairs` (a stable counting sort by row). The pairs are read twice: once to count
    /// each row's entries (`offsets[k]` becomes the end of row `k`), once backwards to
    /// place each entry just below its row's end (which leaves `offsets[k]` at the row's
    /// start), so that large tables cost two passes over the pairs and one over the entries.
    pub fn grouped<K: RowKey>(rows: usize, pairs: Vec<(K, T)>) -> Rows<T> {
        let Some(&(_, filler)) = pairs.first() else {
            return Rows {
                offsets: vec![0; rows + 1],
                entries: Vec::new(),
            };
        };
        let mut offsets = vec![0u32; rows + 1];
        for &(k, _) in &pairs {
            offsets[k.row()] += 1;
        }
        for i in 1..rows {
            offsets[i] += offsets[i - 1];
        }
        offsets[rows] = pairs.len() as u32;
        let mut entries = vec![filler; pairs.len()];
        for &(k, entry) in pairs.iter().rev() {
            let end = &mut offsets[k.row()];
            *end -= 1;
            entries[*end as usize] = entry;
        }
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
    pub fn iter(&self) -> impl Iterator<Item = &[T]> + '_ {
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
