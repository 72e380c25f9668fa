//! Opcodes, interned for the whole process: each distinct opcode text is stored once, and
//! an operation holds its index.
//!
//! Every walk over a large function reads its operations whole, so the operation's size
//! bounds the memory traffic of the allocator's stages (`docs/ARCHITECTURE.md`). A
//! program names few distinct opcodes, each many times; an [`Opcode`] is 4 bytes where
//! the text inline took 24, and two are equal exactly when their indices are. This is
//! symbol interning as compilers do it (a table of unique strings, each entry kept for the
//! life of the process). The table only grows, by one entry per distinct text, so a
//! process that parses arbitrary text, as a fuzz target does, keeps every name it met.
//! Making an opcode takes a lock, reading one takes none: the texts sit in chunks that
//! double in size (chunk `k` holds indices `2^k - 1` to `2^(k+1) - 2`), each made once
//! and never moved, so an index always finds its text where it was put.

use rustc_hash::FxHashMap;
use std::sync::{LazyLock, Mutex, OnceLock, PoisonError};

/// An operation's opcode: the index of its text among the interned ones.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Opcode(u32);

/// How many chunks of texts there are: enough for every `u32` index.
const CHUNKS: usize = 33;

/// The interned texts by index, chunk by chunk.
static TEXTS: [OnceLock<Box<[OnceLock<&'static str>]>>; CHUNKS] =
    [const { OnceLock::new() }; CHUNKS];

/// Every opcode made so far, by its text.
static INTERNED: LazyLock<Mutex<FxHashMap<&'static str, Opcode>>> = LazyLock::new(Default::default);

/// The chunk that holds `index`, and its place there.
fn chunk_of(index: u32) -> (usize, usize) {
    let n = u64::from(index) + 1;
    let chunk = n.ilog2();
    (chunk as usize, (n - (1 << chunk)) as usize)
}

impl Opcode {
    /// The opcode `text`: the interned one when `text` was made an opcode before, else a
    /// new entry.
    pub fn new(text: &str) -> Opcode {
        let mut interned = INTERNED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&opcode) = interned.get(text) {
            return opcode;
        }
        let index = u32::try_from(interned.len()).expect("fewer than 2^32 distinct opcodes");
        let (chunk, at) = chunk_of(index);
        let slots =
            TEXTS[chunk].get_or_init(|| (0..1usize << chunk).map(|_| OnceLock::new()).collect());
        let text: &'static str = Box::leak(text.into());
        slots[at].get_or_init(|| text);
        let opcode = Opcode(index);
        interned.insert(text, opcode);
        opcode
    }

    pub fn as_str(self) -> &'static str {
        let (chunk, at) = chunk_of(self.0);
        TEXTS[chunk]
            .get()
            .and_then(|slots| slots[at].get())
            .expect("an opcode's text is stored before the opcode is made")
    }
}

impl std::ops::Deref for Opcode {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::hash::Hash for Opcode {
    /// By the text, not the index, which depends on the order in which threads made them.
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
        assert!(copies.iter().all(|&c| c == mov));
        assert!(std::ptr::eq(copies[0].as_str(), mov.as_str()));
        assert_eq!(mov, Opcode::from("v_mov".to_string()));
        assert_ne!(mov, Opcode::new("v_add"));
        assert_eq!(mov, "v_mov");
        assert_eq!(&*mov, "v_mov");
        assert_eq!(format!("{mov} {mov:?}"), "v_mov \"v_mov\"");
        assert_eq!(std::mem::size_of::<Opcode>(), 4);
    }

    /// Each index has a place of its own, chunks doubling; texts across chunk boundaries
    /// read back.
    #[test]
    fn every_index_has_its_own_place() {
        let places: Vec<(usize, usize)> = (0..7).map(chunk_of).collect();
        assert_eq!(
            places,
            [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (2, 3)]
        );
        assert_eq!(chunk_of(u32::MAX), (CHUNKS - 1, 0));
        let texts: Vec<String> = (0..100).map(|k| format!("op_{k}")).collect();
        let opcodes: Vec<Opcode> = texts.iter().map(Opcode::from).collect();
        for (text, opcode) in texts.iter().zip(&opcodes) {
            assert_eq!(opcode.as_str(), text);
        }
    }
}
