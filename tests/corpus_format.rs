//! Every corpus program parses, validates, and prints canonically:
//! `print(parse(print(parse(x)))) == print(parse(x))`; the parser never panics on
//! arbitrary or damaged input.

use chromatic::analysis::ssa;
mod common;

use common::chr_files;
use quickcheck::{QuickCheck, TestResult};
use std::path::{Path, PathBuf};

fn corpus_files() -> Vec<PathBuf> {
    chr_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("readable corpus file")
}

#[test]
fn corpus_has_at_least_25_programs() {
    assert!(corpus_files().len() >= 25, "{} files", corpus_files().len());
}

#[test]
fn corpus_round_trips_canonically() {
    for path in corpus_files() {
        let program =
            chromatic::parse(&read(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let once = chromatic::print(&program);
        let reparsed =
            chromatic::parse(&once).unwrap_or_else(|e| panic!("{}: reprint: {e}", path.display()));
        assert_eq!(chromatic::print(&reparsed), once, "{}", path.display());
        assert_eq!(reparsed.functions.len(), program.functions.len());
        for (a, b) in reparsed.functions.iter().zip(&program.functions) {
            assert_eq!(a.values.len(), b.values.len(), "{}", path.display());
            assert_eq!(a.blocks.len(), b.blocks.len(), "{}", path.display());
        }
    }
}

#[test]
fn corpus_programs_are_valid_ssa() {
    for path in corpus_files() {
        let program = chromatic::parse(&read(&path)).unwrap();
        for f in &program.functions {
            if let Err(errors) = ssa::validate(f, &program.target) {
                panic!("{}: {errors:?}", path.display());
            }
        }
    }
}

fn parse_never_panics(text: String) -> TestResult {
    let _ = chromatic::parse(&text);
    TestResult::passed()
}

#[test]
fn parser_never_panics_on_arbitrary_text() {
    QuickCheck::new()
        .tests(2000)
        .quickcheck(parse_never_panics as fn(String) -> TestResult);
}

/// Damages a corpus file at positions chosen by `cuts`: truncation, deletion of a
/// character, and insertion of a character from a small alphabet of format punctuation.
fn damaged_corpus_never_panics(file: usize, cuts: Vec<(u16, u8)>) -> TestResult {
    let files = corpus_files();
    let mut text: Vec<char> = read(&files[file % files.len()]).chars().collect();
    const ALPHABET: &[char] = &[
        '%', '@', ':', '[', ']', '(', ')', '=', ',', '-', '<', '9', 'v', '\n', ' ', '{', '}',
    ];
    for (at, what) in cuts {
        if text.is_empty() {
            break;
        }
        let at = usize::from(at) % text.len();
        match what % 3 {
            0 => text.truncate(at),
            1 => {
                text.remove(at);
            }
            _ => text.insert(at, ALPHABET[usize::from(what) % ALPHABET.len()]),
        }
    }
    let text: String = text.into_iter().collect();
    if let Ok(p) = chromatic::parse(&text) {
        let printed = chromatic::print(&p);
        let again = chromatic::parse(&printed).expect("a parsed program reprints parseably");
        assert_eq!(chromatic::print(&again), printed);
        for f in &p.functions {
            let _ = ssa::validate(f, &p.target);
            let _ = chromatic::analysis::Analysis::new(f, &p.target);
        }
    }
    TestResult::passed()
}

#[test]
fn parser_never_panics_on_damaged_corpus() {
    QuickCheck::new()
        .tests(3000)
        .quickcheck(damaged_corpus_never_panics as fn(usize, Vec<(u16, u8)>) -> TestResult);
}
