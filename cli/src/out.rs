//! Standard output for every command. `println!` panics when the reader has gone
//! (`chromatic ptx DIR | head -1` closes the pipe after one line); here a write to a
//! closed pipe ends the process quietly with status 0, as Unix filters do, and any other
//! write error ends it with status 2 and a message.

use std::io::{ErrorKind, Write};

/// Writes `args` to standard output.
pub fn write(args: std::fmt::Arguments) {
    if let Err(err) = std::io::stdout().lock().write_fmt(args) {
        if err.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to standard output: {err}");
        std::process::exit(2);
    }
}

/// `print!` that ends the process quietly when the reader has gone ([`write`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// `println!` that ends the process quietly when the reader has gone ([`write`]).
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
