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

/// The shortest password accepted when one is set (first-run setup, a new member's initial password, a
/// password change, `muster admin bootstrap`): 12 characters, what OWASP's ASVS 4 (V2.1.1) asks of a
/// password that is the only factor, as Muster's is. The server enforces it (`auth::check_password`) and
/// every form's hint is written from this one constant, so the rule and the hint cannot drift apart.
/// Existing accounts with shorter passwords still sign in; the rule applies to new passwords.
pub const MIN_PASSWORD_CHARS: usize = 12;

pub mod assets;
pub mod layout;
pub mod pages;
pub mod partials;
pub mod views;

#[cfg(test)]
mod samples;
