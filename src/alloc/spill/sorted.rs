//! A small ordered set kept as a sorted vector: W, the values MIN holds in registers
//! ([`super::belady`]), the values a block's coupling code holds ([`super::edges`]), the
//! spill locations live across a block ([`super::slots`]). Such sets have a few to a few
//! hundred members and are scanned often, so contiguous memory beats a tree (one heap
//! block, none per node); the iteration order is the members' order, as a `BTreeSet`
//! would give, so decisions do not depend on the representation.

use crate::program::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedSet<T = Value> {
    items: Vec<T>,
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet { items: Vec::new() }
    }
}

impl<T> SortedSet<T> {
    /// An empty set with room for `n` members, so that growing to them moves none.
    pub fn with_capacity(n: usize) -> Self {
        SortedSet {
            items: Vec::with_capacity(n),
        }
    }
}

impl<T: Ord + Copy> SortedSet<T> {
    /// Adds `v`; false when it was already there.
    pub fn insert(&mut self, v: T) -> bool {
        match self.items.binary_search(&v) {
            Ok(_) => false,
            Err(at) => {
                self.items.insert(at, v);
                true
            }
        }
    }

    /// Removes `v`; false when it was not there.
    pub fn remove(&mut self, v: &T) -> bool {
        match self.items.binary_search(v) {
            Ok(at) => {
                self.items.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub fn contains(&self, v: &T) -> bool {
        self.items.binary_search(v).is_ok()
    }

    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<T: Ord + Copy> Extend<T> for SortedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        self.items.extend(values);
        self.items.sort_unstable();
        self.items.dedup();
    }
}

impl<T: Ord + Copy> FromIterator<T> for SortedSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> SortedSet<T> {
        let mut set = SortedSet::default();
        set.extend(values);
        set
    }
}

impl<T> IntoIterator for SortedSet<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a SortedSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_as_an_ordered_set() {
        let mut set = SortedSet::default();
        let mut model = BTreeSet::new();
        for k in [5u32, 3, 9, 3, 1, 9, 7, 2] {
            assert_eq!(set.insert(Value(k)), model.insert(Value(k)));
        }
        for k in [3u32, 4, 9] {
            assert_eq!(set.remove(&Value(k)), model.remove(&Value(k)));
        }
        set.retain(|v| v.0 != 7);
        model.retain(|v| v.0 != 7);
        set.extend([Value(8), Value(1)]);
        model.extend([Value(8), Value(1)]);
        assert!(set.iter().eq(model.iter()));
        assert!((0..10).all(|k| set.contains(&Value(k)) == model.contains(&Value(k))));
    }
}
