//! Security attacks: repo_files (see mod.rs).
