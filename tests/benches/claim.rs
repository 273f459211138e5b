//! Scenario `claim` (issue 16): from assigning an issue to an agent (the API call that files it) to the
//! agent's process running — the stand-in agent prints its start time first — over many runs, one at a
//! time (each run ends before the next is assigned).

use std::process::ExitCode;
use std::time::Duration;

use muster_tests::Backend;
use muster_tests::bench::server::writer_start;
use muster_tests::bench::writer::{self, now_micros};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("claim", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let world = prepared.serve(ServerOptions::default()).await?;
    let exe = std::env::current_exe()?;
    // No lines: the agent prints its start and exits.
    world
        .custom_agent("claim", &writer::command(&exe, 1, 0, 0), 1)
        .await?;
    let runs = mode.pick(3, 40);
    let mut claims = Vec::with_capacity(runs);
    for i in 0..runs {
        let assigned = now_micros();
        let key = world.assign(&format!("claim {i}"), "claim").await?;
        let run = world.run_of(&key).await?;
        world
            .wait_run_end(&run, Duration::from_secs(60), Duration::from_millis(20))
            .await?;
        let started = writer_start(&world, &run).await?;
        claims.push(started.saturating_sub(assigned) as f64 / 1000.0);
    }
    let s = Stats::of(&mut claims);
    Ok(Some(vec![
        Figure::new(
            b,
            format!("assign → agent started, p50 ({runs} runs)"),
            s.p50,
            "ms",
        ),
        Figure::new(
            b,
            format!("assign → agent started, p99 ({runs} runs)"),
            s.p99,
            "ms",
        ),
        Figure::new(
            b,
            format!("assign → agent started, max ({runs} runs)"),
            s.max,
            "ms",
        ),
    ]))
}
