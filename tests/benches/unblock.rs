//! Scenario `unblock` (issue 30): from the last blocker of an issue reaching done (the API call that
//! moves it) to the blocked issue's waiting agent running — the stand-in agent prints its start time
//! first — over many blocked issues, one at a time. Compared, in the same run, with an unblocked
//! assignment's "assign → agent started" (the floor: the claim itself). Goal: p99 ≤ 2 s.

use std::process::ExitCode;
use std::time::Duration;

use muster_tests::Backend;
use muster_tests::bench::server::writer_start;
use muster_tests::bench::writer::{self, now_micros};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};
use serde_json::json;

fn main() -> ExitCode {
    muster_tests::bench::main("unblock", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let world = prepared.serve(ServerOptions::default()).await?;
    let exe = std::env::current_exe()?;
    world
        .custom_agent("waiter", &writer::command(&exe, 1, 0, 0), 1)
        .await?;
    let n = mode.pick(3, 40);
    let (mut unblocked, mut plain) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // The floor: an issue without blockers, assigned.
        let assigned = now_micros();
        let key = world.assign(&format!("plain {i}"), "waiter").await?;
        let run = world.run_of(&key).await?;
        world
            .wait_run_end(&run, Duration::from_secs(60), Duration::from_millis(20))
            .await?;
        plain.push(writer_start(&world, &run).await?.saturating_sub(assigned) as f64 / 1000.0);

        // A blocker (nobody's work) and the issue it blocks, assigned: its run waits.
        let blocker = world
            .api(
                reqwest::Method::POST,
                "/api/v1/issues",
                Some(json!({ "title": format!("blocker {i}"), "status": "todo" })),
                201,
            )
            .await?["key"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let blocked = world
            .api(
                reqwest::Method::POST,
                "/api/v1/issues",
                Some(json!({ "title": format!("blocked {i}"), "status": "backlog", "assignee": "waiter" })),
                201,
            )
            .await?["key"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        world
            .api(
                reqwest::Method::POST,
                &format!("/api/v1/issues/{blocked}/relations"),
                Some(json!({ "kind": "blocked_by", "issue": blocker })),
                201,
            )
            .await?;
        world
            .api(
                reqwest::Method::POST,
                &format!("/api/v1/issues/{blocked}/move"),
                Some(json!({ "status": "todo" })),
                200,
            )
            .await?;
        let run = world.run_of(&blocked).await?;
        let done = now_micros();
        world
            .api(
                reqwest::Method::POST,
                &format!("/api/v1/issues/{blocker}/move"),
                Some(json!({ "status": "done" })),
                200,
            )
            .await?;
        world
            .wait_run_end(&run, Duration::from_secs(60), Duration::from_millis(20))
            .await?;
        unblocked.push(writer_start(&world, &run).await?.saturating_sub(done) as f64 / 1000.0);
    }
    let floor = Stats::of(&mut plain);
    let s = Stats::of(&mut unblocked);
    Ok(Some(vec![
        Figure::new(
            b,
            format!("last blocker done → agent started, p50 ({n} issues)"),
            s.p50,
            "ms",
        )
        .against("assign → agent started, p50", floor.p50),
        Figure::new(
            b,
            format!("last blocker done → agent started, p99 ({n} issues; goal ≤ 2000 ms)"),
            s.p99,
            "ms",
        )
        .against("assign → agent started, p99", floor.p99),
        Figure::new(
            b,
            format!("last blocker done → agent started, max ({n} issues)"),
            s.max,
            "ms",
        ),
    ]))
}
