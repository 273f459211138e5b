//! Issue 11: every finding of the attack on Muster, reproduced as an attack that must now fail. One file
//! per boundary; each names the attack it repeats and what the honest user can still do.

mod headers;
mod invitations;
mod limits;
mod login;
mod repo_files;
mod roles;
mod runtimes;
mod sandbox;
mod secrets;
mod sessions;
mod tokens;
