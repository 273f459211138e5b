//! Security attacks: invitations (see mod.rs).
