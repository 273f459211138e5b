//! Security attacks: secrets (see mod.rs).
