#![forbid(unsafe_code)]
//! Muster's server-rendered pages: functions returning `maud::Markup` over this crate's own view structs,
//! plus the embedded assets (htmx, app.css). The `muster` server maps store rows to these views; this crate
//! never sees the database.
//!
//! - [`layout::page`] wraps every page (head, assets, top bar);
//! - [`pages`] has one function per full page;
//! - [`partials`] has the fragments the server also sends alone: board cards and columns, including the
//!   out-of-band column swaps pushed over the board WebSocket;
//! - [`assets`] serves the embedded files under a content-versioned URL.
//!
//! Escaping: every user or agent string is spliced with maud's `(…)`, which escapes it. `PreEscaped` is
//! used only for our own constants and for the server-sanitised `*_html` fields, each with a comment.

pub mod assets;
pub mod layout;
pub mod pages;
pub mod partials;
pub mod views;

#[cfg(test)]
mod samples;
