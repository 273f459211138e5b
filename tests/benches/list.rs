//! Scenario `list` (issue 30, part 7): a workspace of 100,000 issues (made straight in the database by
//! the store's bulk fixture, over every status and priority, all with the same timestamps: ties
//! everywhere but the number). The issue list page `GET /w/{slug}/list`, its first page and a page deep
//! in the list (99,000 issues in), sorted two ways (most recently updated first: a column index;
//! priority: an expression index), p50/p95, next to the board page measured in the same run as the
//! ceiling. The keyset query alone (`list_issue_page`) is timed too, first and deep page, so the page's
//! own work (counts, labels, people) is told apart from the paging. Short mode (`cargo test`): 300
//! issues, a few requests.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::ensure;
use muster::domain::list::{IssueGrouping, IssueOrder, IssueSort, ListCursor, SortDir};
use muster::domain::{IssueFilter, IssueStatus, IssueTitle, NewIssue, Priority};
use muster::store::{DatabaseUrl, testing};
use muster_tests::Backend;
use muster_tests::bench::server::SLUG;
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, World, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("list", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let issues = mode.pick(300, 100_000);
    let deep = mode.pick(200, 99_000);
    let reps = mode.pick(3, 40);
    let made = Instant::now();
    let mut fixture = Vec::with_capacity(issues);
    for i in 0..issues {
        let mut new = NewIssue::new(IssueTitle::parse(&format!(
            "Benchmark issue {i}: a title of a usual length for a list row"
        ))?);
        new.status = IssueStatus::ALL[i % IssueStatus::ALL.len()];
        new.priority = Priority::ALL[(i / 7) % Priority::ALL.len()];
        new.body = "A body of a few words, as most issues have.".to_owned();
        new.created_by = Some(prepared.owner);
        fixture.push(new);
    }
    testing::create_issues_in_bulk(&prepared.db.url, prepared.workspace, &fixture).await?;
    drop(fixture);
    eprintln!("{issues} issues made in {:?}", made.elapsed());
    if let DatabaseUrl::Postgres(url) = &prepared.db.url {
        testing::analyze_postgres(url).await?;
    }
    let store = prepared.store.clone();
    let ws = prepared.workspace;
    let filter = IssueFilter::default();
    let orders = [
        (
            "updated",
            IssueOrder {
                sort: IssueSort::Updated,
                dir: SortDir::Desc,
                group: IssueGrouping::None,
            },
        ),
        (
            "priority",
            IssueOrder {
                sort: IssueSort::Priority,
                dir: SortDir::Asc,
                group: IssueGrouping::None,
            },
        ),
    ];
    // Where the deep page starts: `deep` issues in, found from the other end (the reversed order's
    // first `issues - deep`), never by paging through.
    let mut deep_cursors = Vec::new();
    for (_, order) in &orders {
        let reversed = IssueOrder {
            dir: match order.dir {
                SortDir::Asc => SortDir::Desc,
                SortDir::Desc => SortDir::Asc,
            },
            ..*order
        };
        let tail = i64::try_from(issues - deep)?;
        let from_end = store
            .list_issue_page(ws, &filter, &reversed, None, tail + 1)
            .await?;
        let at = from_end.last().expect("issues");
        deep_cursors.push(ListCursor::after(order, at));
    }
    let mut figures = Vec::new();
    let n = format!("{issues} issues");
    // The keyset query alone.
    for ((name, order), cursor) in orders.iter().zip(&deep_cursors) {
        for (label, after) in [("first page", None), ("deep page", Some(cursor))] {
            let mut took = Vec::with_capacity(reps);
            for _ in 0..reps {
                let started = Instant::now();
                let page = store.list_issue_page(ws, &filter, order, after, 51).await?;
                took.push(started.elapsed().as_secs_f64() * 1000.0);
                ensure!(page.len() == 51, "{name} {label}: {} issues", page.len());
            }
            let (p50, p95) = (percentile(&mut took, 0.50), percentile(&mut took, 0.95));
            figures.push(Figure::new(
                b,
                format!("{n}: store list_issue_page by {name}, {label} p50"),
                p50,
                "ms",
            ));
            figures.push(Figure::new(
                b,
                format!("{n}: store list_issue_page by {name}, {label} p95"),
                p95,
                "ms",
            ));
        }
    }
    prepared.store.close().await;
    let world = prepared
        .serve(ServerOptions {
            embedded_runner: false,
            ..ServerOptions::default()
        })
        .await?;
    // The ceiling: the board's first page, as a team opens it every day.
    let mut board = timed_gets(&world, &format!("/w/{SLUG}"), reps).await?;
    let board_p50 = percentile(&mut board, 0.50);
    let board_p95 = percentile(&mut board, 0.95);
    figures.push(Figure::new(
        b,
        format!("{n}: board page p50 (ceiling)"),
        board_p50,
        "ms",
    ));
    figures.push(Figure::new(
        b,
        format!("{n}: board page p95 (ceiling)"),
        board_p95,
        "ms",
    ));
    for ((name, order), cursor) in orders.iter().zip(&deep_cursors) {
        let query = format!("sort={}&dir={}", order.sort, order.dir);
        // These sorts' cursors are digits, `:`, `-`, `.`, `T` and `Z`: nothing to escape in a query.
        let after = format!("after={cursor}");
        for (label, path) in [
            ("first page", format!("/w/{SLUG}/list?{query}")),
            ("deep page", format!("/w/{SLUG}/list?{query}&{after}")),
        ] {
            let mut took = timed_gets(&world, &path, reps).await?;
            let (p50, p95) = (percentile(&mut took, 0.50), percentile(&mut took, 0.95));
            figures.push(Figure::new(
                b,
                format!("{n}: list page by {name}, {label} p50"),
                p50,
                "ms",
            ));
            figures.push(
                Figure::new(
                    b,
                    format!("{n}: list page by {name}, {label} p95"),
                    p95,
                    "ms",
                )
                .against("board p95", board_p95),
            );
        }
    }
    Ok(Some(figures))
}

/// `times` sequential GETs of the page `path` with the session cookie: each one's time in ms.
async fn timed_gets(world: &World, path: &str, times: usize) -> anyhow::Result<Vec<f64>> {
    let mut took = Vec::with_capacity(times);
    for _ in 0..times {
        let started = Instant::now();
        let resp = world
            .http
            .get(world.url(path))
            .header("cookie", &world.cookie)
            .send()
            .await?;
        let status = resp.status();
        let body = resp.text().await?;
        took.push(started.elapsed().as_secs_f64() * 1000.0);
        ensure!(status.is_success(), "GET {path}: {status}");
        ensure!(
            body.contains("Benchmark issue"),
            "GET {path} shows no issue"
        );
    }
    Ok(took)
}

/// The `q` percentile of `values` (nearest rank).
fn percentile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[i - 1]
}
