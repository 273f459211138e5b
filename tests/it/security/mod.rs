//! Issue 11: every finding of the attack on Muster, reproduced as an attack that must now fail. One file
//! per boundary; each names the attack it repeats and what the honest user can still do.

// Each `async fn case(backend: Backend)` is a test per backend through `both_backends!`; each case skips
// loudly itself when its backend is absent.

mod bounds;
mod egress;
mod headers;
mod invitations;
mod limits;
mod login;
mod process_view;
mod repo_files;
mod revocation;
mod roles;
mod run_tokens;
mod runtimes;
mod sandbox;
mod secrets;
mod sessions;
mod tokens;
