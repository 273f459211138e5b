#![forbid(unsafe_code)]
//! Muster: the board, the JSON API, the live-log hub and the embedded runner, as one library that the
//! `muster` binary (and the integration tests) link.

pub mod domain;
pub mod store;
