//! Scenario `board` (issue 16): a workspace of 10,000 issues (made straight in the database by the
//! store's bulk fixture, spread over every status): the board page's p50/p99 and size, `GET /api/v1/issues` p50 and size, and the
//! server's RSS before, after 100 board views and three seconds later. The board is measured at its
//! URL as it stands, whatever it renders.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::ensure;
use muster::domain::{IssueStatus, IssueTitle, NewIssue};
use muster::store::{DatabaseUrl, testing};
use muster_tests::Backend;
use muster_tests::bench::server::SLUG;
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, World, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("board", scenario)
}

const STATUSES: [IssueStatus; 7] = [
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Done,
    IssueStatus::Blocked,
    IssueStatus::Cancelled,
];

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let issues = mode.pick(200, 10_000);
    let made = Instant::now();
    let mut fixture = Vec::with_capacity(issues);
    for i in 0..issues {
        let mut new = NewIssue::new(IssueTitle::parse(&format!(
            "Benchmark issue {i}: a title of a usual length for a board card"
        ))?);
        new.status = STATUSES[i % STATUSES.len()];
        new.body = "A body of a few words, as most issues have.".to_owned();
        new.created_by = Some(prepared.owner);
        fixture.push(new);
    }
    prepared.store.close().await;
    testing::create_issues_in_bulk(&prepared.db.url, prepared.workspace, &fixture).await?;
    eprintln!("{issues} issues made in {:?}", made.elapsed());
    let world = prepared
        .serve(ServerOptions {
            embedded_runner: false,
            ..ServerOptions::default()
        })
        .await?;
    let (rss_before, _) = world.server.rss()?;
    let views = mode.pick(5, 100);
    let (mut board, board_bytes) = timed_gets(&world, &format!("/w/{SLUG}"), views, true).await?;
    let (rss_after, rss_peak) = world.server.rss()?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (rss_later, _) = world.server.rss()?;
    let (mut api, api_bytes) =
        timed_gets(&world, "/api/v1/issues", mode.pick(3, 20), false).await?;
    let (board, api) = (Stats::of(&mut board), Stats::of(&mut api));
    let n = format!("{issues} issues");
    let mut figures = Vec::new();
    if let DatabaseUrl::Postgres(url) = &world.db.url {
        // Right after the bulk fill PostgreSQL has no statistics of the new rows and plans for an
        // almost empty table; autovacuum analyses it within a minute or so. Both are shown; the goal is
        // for the board as a team reads it every day.
        figures.push(Figure::new(
            b,
            format!("{n}, just filled (no planner statistics yet): board page p99"),
            board.p99,
            "ms",
        ));
        testing::analyze_postgres(url).await?;
        let (mut steady, _) = timed_gets(&world, &format!("/w/{SLUG}"), views, true).await?;
        let steady = Stats::of(&mut steady);
        figures.push(Figure::new(
            b,
            format!("{n}, analysed: board page p50"),
            steady.p50,
            "ms",
        ));
        figures.push(
            Figure::new(
                b,
                format!("{n}, analysed: board page p99"),
                steady.p99,
                "ms",
            )
            .against("goal", 30.0),
        );
    } else {
        figures.push(Figure::new(
            b,
            format!("{n}: board page p50"),
            board.p50,
            "ms",
        ));
        figures.push(
            Figure::new(b, format!("{n}: board page p99"), board.p99, "ms").against("goal", 30.0),
        );
    }
    figures.extend([
        Figure::new(
            b,
            format!("{n}: board page size"),
            board_bytes as f64 / 1024.0,
            "KiB",
        )
        .against("goal", 500.0),
        Figure::new(b, format!("{n}: GET /api/v1/issues p50"), api.p50, "ms"),
        Figure::new(
            b,
            format!("{n}: GET /api/v1/issues size"),
            api_bytes as f64 / 1024.0,
            "KiB",
        ),
        Figure::new(b, "server RSS before the views", rss_before, "MiB"),
        Figure::new(
            b,
            format!("server RSS after {views} board views"),
            rss_after,
            "MiB",
        )
        .against("goal", 60.0),
        Figure::new(b, "server RSS peak", rss_peak, "MiB"),
        Figure::new(b, "server RSS 3 s later", rss_later, "MiB").against("goal", 60.0),
    ]);
    Ok(Some(figures))
}

/// `times` sequential GETs of `path` (with the session cookie when `page`, else the API token): each
/// one's time in ms, and the last body's size.
async fn timed_gets(
    world: &World,
    path: &str,
    times: usize,
    page: bool,
) -> anyhow::Result<(Vec<f64>, usize)> {
    let mut took = Vec::with_capacity(times);
    let mut size = 0;
    for _ in 0..times {
        let started = Instant::now();
        let req = world.http.get(world.url(path));
        let req = if page {
            req.header("cookie", &world.cookie)
        } else {
            req.bearer_auth(&world.token)
        };
        let resp = req.send().await?;
        let status = resp.status();
        let body = resp.bytes().await?;
        took.push(started.elapsed().as_secs_f64() * 1000.0);
        ensure!(status.is_success(), "GET {path}: {status}");
        ensure!(
            String::from_utf8_lossy(&body).contains("Benchmark issue"),
            "GET {path} shows no issue"
        );
        size = body.len();
    }
    Ok((took, size))
}
