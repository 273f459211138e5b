//! Security attacks: login (see mod.rs).
