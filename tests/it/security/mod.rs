//! Issue 11: every finding of the attack on Muster, reproduced as an attack that must now fail. One file
//! per boundary; each names the attack it repeats and what the honest user can still do.

/// Emits a `sqlite::case` and a `postgres::case` test for each `async fn case(backend: Backend)`; each case
/// skips loudly itself when its backend is absent.
macro_rules! both_backends {
    ($($case:ident),+ $(,)?) => {
        mod sqlite {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(muster_tests::Backend::Sqlite).await;
            }
        )+}
        mod postgres {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
            async fn $case() {
                super::$case(muster_tests::Backend::Postgres).await;
            }
        )+}
    };
}

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
