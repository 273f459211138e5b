//! Scenario `search` (issue 30): a workspace of 100,000 issues (made straight in the database by the
//! store's bulk fixture, titles and bodies drawn from a vocabulary where a few words are common and most
//! are rare) and 5,000 comments; then about 200 varied searches through `GET /api/v1/issues/search` —
//! common and rare words, two and three words, word prefixes, keys and key prefixes, words found nowhere
//! — and their p50/p95 against the goals (≤ 100 ms PostgreSQL, ≤ 200 ms SQLite). Short mode (`cargo
//! test`): 300 issues and 20 queries.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::ensure;
use muster::domain::{CommentAuthor, IssueKey, IssueTitle, NewComment, NewIssue};
use muster::store::{DatabaseUrl, testing};
use muster_tests::Backend;
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("search", scenario)
}

/// Words a title or body is made of; the first ones are drawn far more often than the last.
const WORDS: &[&str] = &[
    "the",
    "issue",
    "agent",
    "board",
    "run",
    "fix",
    "test",
    "error",
    "parser",
    "login",
    "deploy",
    "cache",
    "schema",
    "retry",
    "budget",
    "timeout",
    "websocket",
    "migration",
    "review",
    "branch",
    "token",
    "runner",
    "comment",
    "label",
    "status",
    "column",
    "palette",
    "search",
    "index",
    "query",
    "worker",
    "queue",
    "lease",
    "sandbox",
    "egress",
    "forge",
    "webhook",
    "pull",
    "merge",
    "check",
    "pipeline",
    "release",
    "invoice",
    "tenant",
    "latency",
    "memory",
    "thread",
    "socket",
    "cursor",
    "session",
    "cookie",
    "header",
    "render",
    "template",
    "snapshot",
    "fixture",
    "benchmark",
    "profile",
    "kettle",
    "samovar",
    "zeppelin",
    "quasar",
    "nebula",
    "glacier",
    "tundra",
    "fjord",
    "mesa",
];

/// A small deterministic generator (xorshift), so both backends get the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// An index below `n`, skewed towards 0 (the square of a uniform draw).
    fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next() % 10_000) as f64 / 10_000.0;
        ((u * u) * n as f64) as usize
    }

    /// A word: mostly from the vocabulary, sometimes a rare made-up one (`w12345`).
    fn word(&mut self) -> String {
        if self.next().is_multiple_of(10) {
            format!("w{}", self.next() % 50_000)
        } else {
            WORDS[self.skewed(WORDS.len())].to_owned()
        }
    }

    fn words(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

/// The queries: a mix of what people and agents type.
fn queries(count: usize, issues: usize, rng: &mut Rng) -> Vec<String> {
    (0..count)
        .map(|i| match i % 10 {
            0 => WORDS[rng.skewed(8)].to_owned(),
            1 => WORDS[20 + rng.skewed(WORDS.len() - 20)].to_owned(),
            2 | 3 => format!("{} {}", rng.word(), rng.word()),
            4 => format!("{} {} {}", rng.word(), rng.word(), rng.word()),
            5 => {
                let w = WORDS[rng.skewed(WORDS.len())];
                w[..w.len().min(4)].to_owned()
            }
            6 => format!("BEN-{}", 1 + rng.next() % issues as u64),
            7 => format!("ben-{}", 1 + rng.next() % 99),
            8 => format!("w{}", rng.next() % 50_000),
            _ => format!("{} nowhere{}", rng.word(), i),
        })
        .collect()
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let issues = mode.pick(300, 100_000);
    let mut rng = Rng(0x5eed_cafe_f00d);
    let made = Instant::now();
    let mut fixture = Vec::with_capacity(issues);
    for _ in 0..issues {
        let mut new = NewIssue::new(IssueTitle::parse(&rng.words(6))?);
        new.body = rng.words(24);
        new.created_by = Some(prepared.owner);
        fixture.push(new);
    }
    testing::create_issues_in_bulk(&prepared.db.url, prepared.workspace, &fixture).await?;
    drop(fixture);
    let comments = mode.pick(20, 5_000);
    for _ in 0..comments {
        let number = 1 + i64::try_from(rng.next() % issues as u64)?;
        let key = IssueKey::parse(&format!("BEN-{number}"))?;
        let issue = prepared.store.get_issue(prepared.workspace, &key).await?;
        let note = NewComment::parse(CommentAuthor::User(prepared.owner), &rng.words(16))?;
        prepared.store.add_comment(issue.id, &note).await?;
    }
    eprintln!(
        "{issues} issues and {comments} comments made in {:?}",
        made.elapsed()
    );
    if let DatabaseUrl::Postgres(url) = &prepared.db.url {
        testing::analyze_postgres(url).await?;
    }
    let world = prepared
        .serve(ServerOptions {
            embedded_runner: false,
            ..ServerOptions::default()
        })
        .await?;
    let asked = queries(mode.pick(20, 200), issues, &mut rng);
    let (mut took, mut found) = (Vec::with_capacity(asked.len()), 0);
    for q in &asked {
        // Queries are letters, digits, `-` and spaces.
        let path = format!("/api/v1/issues/search?q={}", q.replace(' ', "%20"));
        let started = Instant::now();
        let answer = world.api(reqwest::Method::GET, &path, None, 200).await?;
        took.push(started.elapsed().as_secs_f64() * 1000.0);
        let hits = answer["hits"].as_array().map_or(0, Vec::len);
        ensure!(hits <= 20, "{q}: {hits} hits, more than the default limit");
        found += usize::from(hits > 0);
    }
    ensure!(found > 0, "no query found anything");
    let mut slowest: Vec<(f64, &String)> = took.iter().copied().zip(&asked).collect();
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ms, q) in slowest.iter().take(5) {
        eprintln!("slow on {b}: {q:?} {ms:.1} ms");
    }
    let p95 = percentile(&mut took, 0.95);
    let stats = Stats::of(&mut took);
    let goal = match backend {
        Backend::Postgres => 100.0,
        Backend::Sqlite => 200.0,
    };
    let n = format!("{issues} issues, {} queries", asked.len());
    Ok(Some(vec![
        Figure::new(b, format!("{n}: search p50"), stats.p50, "ms"),
        Figure::new(b, format!("{n}: search p95"), p95, "ms").against("goal", goal),
        Figure::new(b, format!("{n}: search max"), stats.max, "ms"),
        Figure::new(
            b,
            format!("{n}: queries with a hit"),
            found as f64,
            "queries",
        ),
    ]))
}

/// The `q` percentile of `values` (nearest rank).
fn percentile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let i = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[i - 1]
}
