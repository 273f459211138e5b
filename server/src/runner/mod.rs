//! Runners: the executor's long-lived side ([`core`]: the runs it executes, its [`outbox`]), the
//! [`protocol`] it speaks with the server, and its two transports — in process for the embedded runner
//! ([`local`]) and WebSocket for `muster runner` on any machine ([`remote`]). The per-run work is in
//! `crate::runner::executor`; the server's side of the protocol in `crate::engine::session`.

pub mod core;
pub mod executor;
pub mod local;
pub mod outbox;
pub mod protocol;
pub mod remote;
