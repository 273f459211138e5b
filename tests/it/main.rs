//! Muster's integration tests: one binary, one module per area.

// Test code: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used)]

mod agent_clis;
mod api;
mod browser_board;
mod browser_board_habits;
mod browser_board_paging;
mod browser_checks;
mod browser_ensemble;
mod browser_ensembles_page;
mod browser_forms;
mod browser_issue;
mod browser_mentions;
mod browser_runners;
mod browser_runs;
mod browser_smoke;
mod browser_thread;
mod browser_usage;
mod checks;
mod cli;
mod cli_client;
mod cli_runs;
mod deploy;
mod ensembles;
mod http_board;
mod http_board_paging;
mod http_ensembles;
mod http_forms;
mod http_health;
mod http_pages;
mod http_runs;
mod llama;
mod mentions;
mod metrics;
mod replicas;
mod run_follow;
mod run_outcomes;
mod runners;
mod runs;
mod runs_crash;
mod runs_real_cli;
mod runs_remote_repo;
mod runs_worktree;
mod security;
mod serve;
mod skills;
mod startup;
mod store_conformance;
mod triggers;
mod usage;
