//! Interned opcodes: an operation names its opcode by a 4-byte id, and the name lives once
//! in a table, so that the name does not widen every instruction (an instruction is read
//! whole by every walk over a function, and large functions' walks are bound by memory
//! traffic). String interning as compilers do it for identifiers (LLVM's `StringMap`-backed
//! names, rustc's `Symbol`).
//!
//! The table is the process's: names are leaked, once each, so that [`Opcode::as_str`]
//! hands out `&'static str` and two ids are equal exactly when their names are. Each thread
//! keeps its own copy of the part of the table it has seen, so reading a name or interning
//! one already seen takes no lock; the shared table is locked only for a name this thread
//! meets for the first time. Ids depend on the order names are met, which may vary between
//! runs of a parallel program, so nothing observable follows them: ordering and hashing go
//! by the name.

use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// An operation's opcode: an id into the process's table of names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Opcode(u32);

/// Every name interned so far, and the id of each.
struct Table {
    names: Vec<&'static str>,
    ids: BTreeMap<&'static str, u32>,
}

static SHARED: Mutex<Table> = Mutex::new(Table {
    names: Vec::new(),
    ids: BTreeMap::new(),
});

/// A thread's copy of the first `names.len()` entries of the shared table.
#[derive(Default)]
struct Local {
    names: Vec<&'static str>,
    ids: FxHashMap<&'static str, Opcode>,
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::default();
}

impl Local {
    /// Copies the entries the shared table gained since this thread last looked.
    fn catch_up(&mut self, shared: &Table) {
        for (id, &name) in shared.names.iter().enumerate().skip(self.names.len()) {
            self.names.push(name);
            self.ids.insert(name, Opcode(id as u32));
        }
    }
}

impl Opcode {
    /// The opcode named `name`, interned on first sight.
    pub fn new(name: &str) -> Opcode {
        LOCAL.with_borrow_mut(|local| {
            if let Some(&opcode) = local.ids.get(name) {
                return opcode;
            }
            let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
            if !shared.ids.contains_key(name) {
                let leaked: &'static str = Box::leak(name.into());
                let id = shared.names.len() as u32;
                shared.names.push(leaked);
                shared.ids.insert(leaked, id);
            }
            local.catch_up(&shared);
            local.ids[name]
        })
    }

    /// The opcode's name.
    pub fn as_str(self) -> &'static str {
        LOCAL.with_borrow_mut(|local| {
            if let Some(&name) = local.names.get(self.0 as usize) {
                return name;
            }
            local.catch_up(&SHARED.lock().unwrap_or_else(PoisonError::into_inner));
            local.names[self.0 as usize]
        })
    }
}

impl std::ops::Deref for Opcode {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Opcode {
    fn from(name: &str) -> Opcode {
        Opcode::new(name)
    }
}

impl From<String> for Opcode {
    fn from(name: String) -> Opcode {
        Opcode::new(&name)
    }
}

impl PartialEq<str> for Opcode {
    fn eq(&self, name: &str) -> bool {
        self.as_str() == name
    }
}

impl PartialEq<&str> for Opcode {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl PartialOrd for Opcode {
    fn partial_cmp(&self, other: &Opcode) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Opcode {
    fn cmp(&self, other: &Opcode) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Opcode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::fmt::Debug for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_intern_to_one_id_on_every_thread() {
        let here = Opcode::new("v_fma_f32");
        let there = std::thread::spawn(|| Opcode::new("v_fma_f32"))
            .join()
            .expect("thread runs");
        assert_eq!(here, there);
        assert_ne!(here, Opcode::new("v_fma_f16"));
        assert_eq!(there.as_str(), "v_fma_f32");
    }

    #[test]
    fn a_name_interned_on_another_thread_reads_here() {
        let there = std::thread::spawn(|| Opcode::new("opcode_met_on_another_thread"))
            .join()
            .expect("thread runs");
        assert_eq!(there.as_str(), "opcode_met_on_another_thread");
        assert_eq!(
            format!("{there} {there:?}"),
            "opcode_met_on_another_thread \"opcode_met_on_another_thread\""
        );
    }

    #[test]
    fn opcodes_order_by_name() {
        let (b, a) = (Opcode::new("order_b"), Opcode::new("order_a"));
        assert!(a < b);
    }
}
