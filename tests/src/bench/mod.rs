//! The benchmark harness behind `cargo bench -p muster-tests` (issue 16): one `harness = false` binary
//! per scenario under `tests/benches/`, each calling [`main`].
//!
//! Muster runs for real, as a process of its own, so that its CPU time and memory are its own: the bench
//! executable doubles as the server (`<bench> serve …`, through [`muster::cli::main`]) and as the agents'
//! `sandbox-exec` step and stand-in agent ([`writer`]). Modes: `cargo bench` passes `--bench` and gets
//! the FULL sizes; `cargo test` (no `--bench`) runs a SHORT pass with tiny sizes that proves the scenario
//! works. Nothing here compares a time with a threshold: a run fails on real errors only (a server that
//! does not start, a lost event, a wrong count).

use std::ffi::OsString;
use std::future::Future;
use std::process::ExitCode;

pub mod bare;
pub mod live;
pub mod report;
pub mod server;
pub mod stats;
pub mod viewer;
pub mod writer;

pub use report::{Figure, Report};
pub use server::{Prepared, Server, ServerOptions, World};
pub use stats::Stats;

use crate::{Backend, Part};

/// How big a pass is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `cargo test`: tiny sizes, a few seconds; proves the scenario works.
    Short,
    /// `cargo bench`: the sizes the figures are quoted at.
    Full,
}

impl Mode {
    /// `short` in short mode, else `full`.
    pub fn pick<T>(self, short: T, full: T) -> T {
        match self {
            Mode::Short => short,
            Mode::Full => full,
        }
    }

    fn as_str(self) -> &'static str {
        self.pick("short", "full")
    }
}

/// Restricts a pass to the backends it names (comma-separated).
const BACKENDS_VAR: &str = "MUSTER_BENCH_BACKENDS";

/// The backend's name in tables and JSON.
pub fn backend_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// The whole bench binary: acts as the server or a stand-in agent when asked to, else runs `scenario`
/// on SQLite, then on PostgreSQL (skipped or required as the tests are: [`crate::TestDb`]), prints the
/// table and writes `target/bench/<name>.json`.
pub fn main<F, Fut>(name: &str, scenario: F) -> ExitCode
where
    F: Fn(Mode, Backend) -> Fut,
    Fut: Future<Output = anyhow::Result<Option<Vec<Figure>>>>,
{
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(1).and_then(|a| a.to_str()) {
        Some("serve" | "sandbox-exec") => return muster::cli::main(),
        Some(writer::SUBCOMMAND) => return writer::main(&args[2..]),
        _ => {}
    }
    let flags: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    // libtest's listing (`cargo test -- --list`, and `crate::needs` asking this executable): a bench
    // binary names no tests.
    if flags.contains(&"--list") {
        return ExitCode::SUCCESS;
    }
    let filters: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| !f.starts_with('-'))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|f| name.contains(f)) {
        return ExitCode::SUCCESS;
    }
    let mode = if flags.contains(&"--bench") {
        Mode::Full
    } else {
        Mode::Short
    };
    // Short passes treat PostgreSQL like the #[ignore]d tests: only with --include-ignored / --ignored
    // (what CI passes), or when MUSTER_REQUIRE_PG=1.
    let with_pg = mode == Mode::Full
        || flags.contains(&"--include-ignored")
        || flags.contains(&"--ignored")
        || Part::Postgres.required();
    crate::init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut report = Report::new(name, mode.as_str());
    let mut backends = vec![Backend::Sqlite];
    if with_pg {
        backends.push(Backend::Postgres);
    } else {
        eprintln!(
            "bench {name}: PostgreSQL part ignored in short mode ({})",
            Part::Postgres.reason()
        );
    }
    // `MUSTER_BENCH_BACKENDS=postgres` (or `sqlite`): one backend only, while working on it.
    if let Some(only) = crate::env_setting(BACKENDS_VAR) {
        let names: Vec<&str> = only.split(',').map(str::trim).collect();
        if let Some(bad) = names.iter().find(|n| !["sqlite", "postgres"].contains(n)) {
            eprintln!("error: {BACKENDS_VAR}: unknown backend {bad:?} (sqlite, postgres)");
            return ExitCode::FAILURE;
        }
        backends.retain(|b| names.contains(&backend_name(*b)));
    }
    for backend in backends {
        eprintln!(
            "bench {name} ({}) on {} …",
            mode.as_str(),
            backend_name(backend)
        );
        match runtime.block_on(scenario(mode, backend)) {
            Ok(Some(figures)) => report.extend(figures),
            Ok(None) => eprintln!("bench {name}: {} skipped", backend_name(backend)),
            Err(e) => {
                eprintln!("bench {name} FAILED on {}: {e:#}", backend_name(backend));
                return ExitCode::FAILURE;
            }
        }
    }
    report.print();
    if let Err(e) = report.write() {
        eprintln!("bench {name}: cannot write the JSON report: {e:#}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
