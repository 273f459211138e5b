//! Scenario `footprint` (issue 16): time to ready (spawn of `muster serve` → `/readyz` answers 200) on
//! an already migrated database, and the idle server's RSS two seconds after it is ready.

use std::process::ExitCode;
use std::time::Duration;

use muster_tests::Backend;
use muster_tests::bench::{Figure, Mode, Prepared, Server, ServerOptions, Stats, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("footprint", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    prepared.store.close().await;
    let starts = mode.pick(2, 7);
    let mut ready = Vec::with_capacity(starts);
    let mut idle = Vec::with_capacity(starts);
    for _ in 0..starts {
        let mut server = Server::start(&prepared.db, &ServerOptions::default()).await?;
        ready.push(server.ready_in.as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        server.check_alive()?;
        idle.push(server.rss()?.0);
        server.stop();
    }
    let (r, m) = (Stats::of(&mut ready), Stats::of(&mut idle));
    let goal = match backend {
        Backend::Sqlite => 200.0,
        Backend::Postgres => 250.0,
    };
    Ok(Some(vec![
        Figure::new(b, format!("time to ready, p50 of {starts}"), r.p50, "ms")
            .against("goal", goal),
        Figure::new(b, format!("time to ready, max of {starts}"), r.max, "ms"),
        Figure::new(b, "idle RSS, p50", m.p50, "MiB").against("goal", 25.0),
    ]))
}
