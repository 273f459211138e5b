#![forbid(unsafe_code)]
//! Muster: the board, the JSON API, the live-log hub and the embedded runner, as one library that the
//! `muster` binary (and the integration tests) link.

pub mod app;
pub mod auth;
pub mod cli;
pub mod client;
pub mod config;
pub mod confined;
pub mod domain;
pub mod egress;
pub mod engine;
pub mod forge;
pub mod host;
pub mod http;
pub mod hub;
pub mod live;
pub mod markdown;
pub mod metrics;
pub mod redact;
pub mod runner;
pub mod runtimes;
pub mod sandbox;
pub mod secrets;
pub mod service;
pub mod skills;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod throttle;
