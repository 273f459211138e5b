//! Security attacks: roles (see mod.rs).
