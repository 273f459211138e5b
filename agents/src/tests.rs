//! Tests across every adapter: each recorded CLI stream parsed line by line, and no parser panicking
//! on any input.

mod fixtures;
mod parsers_never_panic;
mod support;
