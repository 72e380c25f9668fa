//! Opcodes, interned for the whole process: each distinct opcode text is stored once, and
//! an operation holds one pointer to it.
//!
//! Every walk over a large function reads its operations whole, so the operation's size
//! bounds the memory traffic of the allocator's stages (`docs/ARCHITECTURE.md`). A
//! program names few distinct opcodes, each many times; an [`Opcode`] is 8 bytes where
//! the text inline took 24, copying one is copying a pointer, and two are equal exactly
//! when they point to the same text. This is symbol interning as compilers do it (a
//! table of unique strings, each entry kept for the life of the process): the table only
//! grows, by one entry per distinct text, and is shared by every thread behind a lock that
//! only making an opcode takes; reading one takes none.

use rustc_hash::FxHashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

/// An operation's opcode: a pointer to its one interned text.
#[derive(Clone, Copy)]
pub struct Opcode(&'static &'static str);

/// Every opcode made so far, by its text.
static INTERNED: LazyLock<Mutex<FxHashMap<&'static str, Opcode>>> = LazyLock::new(Default::default);

impl Opcode {
    /// The opcode `text`: the interned one when `text` was made an opcode before, else a
    /// new entry.
    pub fn new(text: &str) -> Opcode {
        let mut interned = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&opcode) = interned.get(text) {
            return opcode;
        }
        let text: &'static str = Box::leak(text.into());
        let opcode = Opcode(Box::leak(Box::new(text)));
        interned.insert(text, opcode);
        opcode
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for Opcode {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl PartialEq for Opcode {
    /// Interned: equal texts are one entry.
    fn eq(&self, other: &Opcode) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Opcode {}

impl std::hash::Hash for Opcode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Opcode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Opcode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Opcode> for &str {
    fn eq(&self, other: &Opcode) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Opcode> for String {
    fn eq(&self, other: &Opcode) -> bool {
        self.as_str() == other.as_str()
    }
}

impl From<&str> for Opcode {
    fn from(text: &str) -> Opcode {
        Opcode::new(text)
    }
}

impl From<&String> for Opcode {
    fn from(text: &String) -> Opcode {
        Opcode::new(text)
    }
}

impl From<String> for Opcode {
    fn from(text: String) -> Opcode {
        Opcode::new(&text)
    }
}

impl std::fmt::Display for Opcode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

    /// Equal texts give one entry, from any thread; different texts, different ones.
    #[test]
    fn equal_texts_share_one_entry() {
        let mov = Opcode::new("v_mov");
        let copies: Vec<Opcode> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| s.spawn(|| Opcode::new(&String::from("v_mov"))))
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("joins"))
                .collect()
        });
        assert!(copies.iter().all(|c| std::ptr::eq(c.0, mov.0)));
        assert_eq!(mov, Opcode::from("v_mov".to_string()));
        assert_ne!(mov, Opcode::new("v_add"));
        assert_eq!(mov, "v_mov");
        assert_eq!(&*mov, "v_mov");
        assert_eq!(format!("{mov} {mov:?}"), "v_mov \"v_mov\"");
        assert_eq!(std::mem::size_of::<Opcode>(), 8);
    }
}
