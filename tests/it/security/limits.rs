//! Security attacks: limits (see mod.rs).
