//! A small ordered set of values kept as a sorted vector: W, the values MIN holds in
//! registers ([`super::belady`]). W has tens to a few hundred members and is scanned at
//! every instruction, so contiguous memory beats a tree; the iteration order is the
//! values' order, as a `BTreeSet` would give, so decisions do not depend on the
//! representation.

use crate::program::Value;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortedSet {
    items: Vec<Value>,
}

impl SortedSet {
    /// Adds `v`; false when it was already there.
    pub fn insert(&mut self, v: Value) -> bool {
        match self.items.binary_search(&v) {
            Ok(_) => false,
            Err(at) => {
                self.items.insert(at, v);
                true
            }
        }
    }

    /// Removes `v`; false when it was not there.
    pub fn remove(&mut self, v: &Value) -> bool {
        match self.items.binary_search(v) {
            Ok(at) => {
                self.items.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub fn contains(&self, v: &Value) -> bool {
        self.items.binary_search(v).is_ok()
    }

    pub fn retain(&mut self, keep: impl FnMut(&Value) -> bool) {
        self.items.retain(keep);
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Value> {
        self.items.iter()
    }
}

impl Extend<Value> for SortedSet {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, values: I) {
        self.items.extend(values);
        self.items.sort_unstable();
        self.items.dedup();
    }
}

impl FromIterator<Value> for SortedSet {
    fn from_iter<I: IntoIterator<Item = Value>>(values: I) -> SortedSet {
        let mut set = SortedSet::default();
        set.extend(values);
        set
    }
}

impl IntoIterator for SortedSet {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a SortedSet {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

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
