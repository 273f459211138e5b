//! Security attacks: headers (see mod.rs).
