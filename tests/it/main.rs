//! Muster's integration tests: one binary, one module per area.

// Test code: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used)]

/// Emits one test per backend for each case: `sqlite::case`, and `postgres::case`, which is marked as
/// needing PostgreSQL (see [`muster_tests::Part`]); the test names in the summary show that both halves
/// ran. Attributes before a case (`#[ignore = …]`) apply to both.
///
/// - `both_backends!(a, b)`: each case is `async fn case(backend: Backend)`.
/// - `both_backends!(with = setup; a, b)`: each test runs `setup(backend, super::case)`, an area's own
///   setup around its cases (a fresh store, a server with people, a CLI, …).
/// - `runtime (…)` first, before `with` or the cases: the arguments of the tests' `#[tokio::test(…)]`
///   (by default two worker threads).
macro_rules! both_backends {
    (@emit $runtime:tt $setup:path; $($(#[$meta:meta])* $case:ident),+ $(,)?) => {
        mod sqlite {$(
            $(#[$meta])*
            #[tokio::test $runtime]
            async fn $case() {
                $setup(muster_tests::Backend::Sqlite, super::$case).await
            }
        )+}
        mod postgres {$(
            $(#[$meta])*
            #[tokio::test $runtime]
            #[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
            async fn $case() {
                $setup(muster_tests::Backend::Postgres, super::$case).await
            }
        )+}
    };
    (runtime $runtime:tt, with = $setup:path; $($cases:tt)+) => {
        both_backends!(@emit $runtime $setup; $($cases)+);
    };
    (runtime $runtime:tt; $($cases:tt)+) => {
        both_backends!(@emit $runtime crate::on_backend; $($cases)+);
    };
    (with = $setup:path; $($cases:tt)+) => {
        both_backends!(@emit (flavor = "multi_thread", worker_threads = 2) $setup; $($cases)+);
    };
    ($($cases:tt)+) => {
        both_backends!(@emit (flavor = "multi_thread", worker_threads = 2) crate::on_backend; $($cases)+);
    };
}

/// The setup of [`both_backends!`] for cases that take their backend.
async fn on_backend(backend: muster_tests::Backend, case: impl AsyncFnOnce(muster_tests::Backend)) {
    case(backend).await;
}

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
mod browser_list;
mod browser_mentions;
mod browser_plan;
mod browser_planner;
mod browser_projects;
mod browser_pulls;
mod browser_runners;
mod browser_runs;
mod browser_smoke;
mod browser_thread;
mod browser_usage;
mod checks;
mod cli;
mod cli_client;
mod cli_forge;
mod cli_list;
mod cli_plan;
mod cli_runs;
mod cli_search;
mod deploy;
mod ensembles;
mod forge_clients;
mod forges;
mod http_board;
mod http_board_paging;
mod http_board_search;
mod http_ensembles;
mod http_forge_pages;
mod http_forms;
mod http_health;
mod http_list;
mod http_pages;
mod http_plan_pages;
mod http_runs;
mod http_typed_forms;
mod llama;
mod mentions;
mod metrics;
mod planner;
mod plans;
mod projects;
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

/// The harness starts agents' `sandbox-exec` step and the CLI tests with [`muster_tests::muster_bin`];
/// that must be the binary cargo built for this test run, not one left from an earlier build.
#[test]
fn the_harness_runs_the_binary_cargo_built_for_these_tests() {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_muster"));
    assert_eq!(muster_tests::muster_bin(), built);
    assert!(built.is_file(), "{} is missing", built.display());
}
