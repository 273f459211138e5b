#![forbid(unsafe_code)]
//! Muster's server-rendered pages: functions returning `maud::Markup` over this crate's own view structs,
//! plus the embedded assets (htmx, app.css). The `muster` server maps store rows to these views; this crate
//! never sees the database.
