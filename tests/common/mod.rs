//! Helpers shared by the root crate's integration tests.

use std::path::{Path, PathBuf};

/// Every `.chr` file under `dir`, recursively, sorted.
pub fn chr_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "chr") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
