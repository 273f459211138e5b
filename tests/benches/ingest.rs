//! Scenario `ingest` (issue 16): one stand-in agent printing 200,000 lines as fast as it can; events
//! stored per second (from the agent's start to the run's end, every line checked in the store), next
//! to a bare insert of the very same rows into the real `run_event` table of a fresh, migrated database:
//! multi-row inserts in batches of 32 and of 1,000 (one transaction each), and on PostgreSQL `COPY`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use muster::domain::{
    AgentName, IssueTitle, NewAgent, NewIssue, NewRun, NewRunEvent, RunId, RuntimeKind,
};
use muster::store::testing;
use muster_tests::Backend;
use muster_tests::bench::server::writer_start;
use muster_tests::bench::writer::{self, now_micros};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("ingest", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let lines = mode.pick(2_000, 200_000);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let world = prepared.serve(ServerOptions::default()).await?;
    let exe = std::env::current_exe()?;
    world
        .custom_agent("ingest", &writer::command(&exe, 0, lines, 0), 1)
        .await?;
    let key = world.assign("ingest", "ingest").await?;
    let run = world.run_of(&key).await?;
    let view = world
        .wait_run_settled(&run, Duration::from_secs(300), Duration::from_millis(10))
        .await?;
    let ended = now_micros();
    let started = writer_start(&world, &run).await?;

    // The lines in the store, each once; its rows are the baseline's rows.
    let store = world.db.store().await;
    let run_id: RunId = run.parse().context("a run id")?;
    let mut rows: Vec<NewRunEvent> = Vec::with_capacity(lines as usize);
    let mut after = 0;
    loop {
        let page = store.run_events_since(run_id, after, 10_000).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        rows.extend(
            page.into_iter()
                .filter(|e| e.payload.to_string().contains("MBL "))
                .map(|e| NewRunEvent {
                    seq: e.seq,
                    at: e.at,
                    kind: e.kind,
                    payload: e.payload,
                }),
        );
    }
    store.close().await;
    let stored = rows.len() as u64;
    // A run the server gave up on (its runner's lease lapsing under the load) is a finding, reported
    // with what it stored by then; a run that succeeded must have stored every line.
    let succeeded = view["status"] == "succeeded";
    if !succeeded {
        eprintln!(
            "note: the ingest run ended {} ({}) after storing {stored} of {lines} lines",
            view["status"], view["failure_reason"]
        );
    }
    ensure!(
        stored <= lines && (!succeeded || stored == lines),
        "the store holds {stored} of the {lines} lines"
    );
    // An interrupted run is timed to its last stored line (its time of reading), not to the interruption.
    let end = match rows.last() {
        Some(last) if !succeeded => u64::try_from(last.at.timestamp_micros()).unwrap_or(ended),
        _ => ended,
    };
    let stored_per_sec = stored as f64 / (end.saturating_sub(started) as f64 / 1e6);
    drop(world);

    let mut figures = vec![Figure::new(
        b,
        "muster: events stored",
        stored_per_sec,
        "events/s",
    )];
    let per_sec = |took: Duration| lines as f64 / took.as_secs_f64();
    for batch in [32, 1_000] {
        let (bare, run) = bare_run(backend).await?;
        let took = testing::bare_insert_run_events(&bare.db.url, run, &rows, batch).await?;
        figures.push(
            Figure::new(
                b,
                format!("muster vs bare batches of {batch}"),
                stored_per_sec,
                "events/s",
            )
            .against(format!("bare {batch}"), per_sec(took)),
        );
    }
    if backend == Backend::Postgres {
        let (bare, run) = bare_run(backend).await?;
        let took = testing::bare_copy_run_events(&bare.db.url, run, &rows).await?;
        figures.push(
            Figure::new(b, "muster vs bare COPY", stored_per_sec, "events/s")
                .against("bare COPY", per_sec(took)),
        );
    }
    Ok(Some(figures))
}

/// A fresh, migrated database holding one run to hang the baseline's rows on.
async fn bare_run(backend: Backend) -> anyhow::Result<(Prepared, RunId)> {
    let prepared = Prepared::new(backend)
        .await?
        .context("the database went away")?;
    let store = prepared.store.clone();
    let agent = store
        .create_agent(
            prepared.workspace,
            &NewAgent::new(AgentName::parse("bare")?, RuntimeKind::Custom),
        )
        .await?;
    let issue = store
        .create_issue(
            prepared.workspace,
            &NewIssue::new(IssueTitle::parse("bare")?),
        )
        .await?;
    let run = store
        .create_run(&NewRun::assignment(prepared.workspace, issue.id, agent.id))
        .await?;
    store.close().await;
    Ok((prepared, run.id))
}
