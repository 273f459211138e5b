//! Security attacks: tokens (see mod.rs).
