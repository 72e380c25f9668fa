//! Opcodes, interned: each distinct opcode text is stored once, and an operation holds
//! an 8-byte handle to it.
//!
//! Every walk over a large function reads its operations whole, so the operation's size
//! bounds the memory traffic of the allocator's stages (`docs/ARCHITECTURE.md`). A
//! program names few distinct opcodes, each many times; an [`Opcode`] is 8 bytes where
//! the text inline took 24. This is symbol interning as compilers do it, by servo's
//! [`string_cache`]: a text of up to 7 bytes (`mov`, `v_add`) is held inline in the
//! handle itself; a longer one in a process-wide table, counted by reference and removed
//! when the last operation naming it is dropped, so a fuzzer feeding the parser new
//! names for hours does not grow the process.

use string_cache::DefaultAtom;

/// An operation's opcode: a handle to its interned text. Two are equal exactly when
/// their texts are.
#[derive(Clone, PartialEq, Eq)]
pub struct Opcode(DefaultAtom);

impl Opcode {
    /// The opcode `text`: the interned one when some opcode holds `text` already, else a
    /// new entry.
    pub fn new(text: &str) -> Opcode {
        Opcode(DefaultAtom::from(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Opcode {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::hash::Hash for Opcode {
    /// By the text, not the handle, which depends on where the table put the entry.
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

    /// Equal texts give equal opcodes, from any thread and whatever their length;
    /// different texts, different ones.
    #[test]
    fn equal_texts_give_equal_opcodes() {
        for text in ["v_mov", "ld.global.v4.f32"] {
            let opcode = Opcode::new(text);
            let copies: Vec<Opcode> = std::thread::scope(|s| {
                let threads: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| Opcode::new(&String::from(text))))
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("joins"))
                    .collect()
            });
            assert!(copies.iter().all(|c| *c == opcode));
            assert_eq!(opcode, Opcode::from(text.to_string()));
            assert_ne!(opcode, Opcode::new("v_add"));
            assert_eq!(opcode, text);
            assert_eq!(&*opcode, text);
            assert_eq!(format!("{opcode} {opcode:?}"), format!("{text} {text:?}"));
        }
        assert_eq!(std::mem::size_of::<Opcode>(), 8);
        assert_eq!(std::mem::size_of::<Option<Opcode>>(), 8);
    }

    /// Many distinct long texts read back as they were made, while they are held.
    #[test]
    fn long_texts_read_back() {
        let texts: Vec<String> = (0..100).map(|k| format!("operation_{k}")).collect();
        let opcodes: Vec<Opcode> = texts.iter().map(Opcode::from).collect();
        for (text, opcode) in texts.iter().zip(&opcodes) {
            assert_eq!(opcode.as_str(), text);
        }
    }
}
