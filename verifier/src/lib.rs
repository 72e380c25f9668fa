//! The independent verifier: checks an allocated program against its original by its own
//! dataflow, trusting nothing the allocator says. Uses only the root crate's program model
//! and parser.
