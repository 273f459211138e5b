//! Runners: the executor side of the run engine and its transports (in-process for the embedded runner,
//! WebSocket for `muster runner`).

pub mod remote;
