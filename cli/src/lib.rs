//! Library side of the `chromatic` CLI crate: checks shared by the cargo-fuzz targets and
//! the regression replay tests.

pub mod fuzz_checks;
