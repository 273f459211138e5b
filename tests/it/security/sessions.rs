//! Security attacks: sessions (see mod.rs).
