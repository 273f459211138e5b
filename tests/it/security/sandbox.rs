//! Security attacks: sandbox (see mod.rs).
