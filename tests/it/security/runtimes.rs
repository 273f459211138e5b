//! Security attacks: runtimes (see mod.rs).
