//! Scenario `fanout` (issue 16): one run at 1,000 lines/s watched by 1, 100 and 500 run-page WebSocket
//! viewers: lag per delivered line, how far behind the last viewer ends, lines lost (must be 0), the
//! server's CPU and peak RSS; next to a bare axum WebSocket broadcast of the same lines at the same rate
//! to as many clients (throughput ratio). Each viewer count gets a fresh server, so CPU and peak RSS are
//! that count's own. The baseline does not depend on the backend: it is measured once and reused.

use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::ensure;
use muster_tests::Backend;
use muster_tests::bench::bare::Bare;
use muster_tests::bench::live::{self, Plan, Surface};
use muster_tests::bench::viewer::{Viewer, check_complete, read_all};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};

const RATE: u32 = 1_000;
/// A hang guard after the last line, not a threshold.
const DRAIN: Duration = Duration::from_secs(120);

/// The baseline's throughput per viewer count (measured on the first backend).
static BARE: Mutex<Vec<(usize, f64, Stats)>> = Mutex::new(Vec::new());

fn main() -> ExitCode {
    muster_tests::bench::main("fanout", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let lines = mode.pick(500, 5_000);
    let mut figures = Vec::new();
    for viewers in mode.pick(vec![1, 10], vec![1, 100, 500]) {
        let Some(prepared) = Prepared::new(backend).await? else {
            return Ok(None);
        };
        let mut world = prepared.serve(ServerOptions::default()).await?;
        let plan = Plan {
            runs: 1,
            rate: RATE,
            lines,
            viewers,
            surface: Surface::Ws,
            drain: DRAIN,
        };
        let out = live::run(&mut world, &plan, &format!("fan{viewers}")).await?;
        let lost: u64 = out
            .received
            .iter()
            .filter(|r| r.ended_early)
            .map(|r| r.missing())
            .sum();
        out.check(&format!("{viewers} viewers"))?;
        let s = Stats::of(&mut out.latencies());
        let (_, peak_rss) = world.server.rss()?;
        let throughput = out.throughput();
        let (bare_throughput, bare_stats) = bare(viewers, lines).await?;
        let what = format!("{viewers} viewer(s)");
        figures.extend([
            Figure::new(b, format!("{what}: p50 lag"), s.p50, "ms").against("bare", bare_stats.p50),
            Figure::new(b, format!("{what}: p99 lag"), s.p99, "ms").against("bare", bare_stats.p99),
            Figure::new(b, format!("{what}: max lag"), s.max, "ms").against("bare", bare_stats.max),
            Figure::new(
                b,
                format!("{what}: last viewer's last line, behind"),
                out.last_behind_secs(),
                "s",
            ),
            Figure::new(b, format!("{what}: lines lost"), lost as f64, "count"),
            Figure::new(
                b,
                format!("{what}: writer's rate"),
                out.writer_rate(),
                "lines/s",
            )
            .against("plan", f64::from(RATE)),
            Figure::new(
                b,
                format!("{what}: run not succeeded (1 = interrupted/failed)"),
                out.failed_runs.len() as f64,
                "count",
            ),
            Figure::new(b, format!("{what}: throughput"), throughput, "lines/s")
                .against("bare", bare_throughput),
            Figure::new(
                b,
                format!("{what}: server CPU"),
                100.0 * out.cpu.as_secs_f64() / out.wall.as_secs_f64(),
                "%",
            ),
            Figure::new(
                b,
                format!("{what}: server CPU per delivered line"),
                1e6 * out.cpu.as_secs_f64() / (viewers as f64 * lines as f64),
                "µs",
            ),
            Figure::new(b, format!("{what}: server peak RSS"), peak_rss, "MiB"),
        ]);
    }
    Ok(Some(figures))
}

/// The bare baseline for `viewers` clients: throughput and lag (measured once per count).
async fn bare(viewers: usize, lines: u64) -> anyhow::Result<(f64, Stats)> {
    if let Some((_, t, s)) = BARE
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .iter()
        .find(|(n, _, _)| *n == viewers)
    {
        return Ok((*t, *s));
    }
    let server = Bare::start().await?;
    let mut clients = Vec::with_capacity(viewers);
    for _ in 0..viewers {
        clients.push(Viewer::ws_url(&server.url, None, None).await?);
    }
    server
        .wait_connected(viewers, Duration::from_secs(30))
        .await?;
    let start = muster_tests::bench::writer::now_micros();
    let reading = tokio::spawn(read_all(
        clients,
        lines,
        Duration::from_secs(lines / u64::from(RATE)) + DRAIN,
    ));
    server.publish(u64::from(RATE), lines).await;
    let got = reading.await??;
    check_complete("bare baseline", &got)?;
    ensure!(server.lagged() == 0, "the baseline dropped lines for lag");
    let delivered: u64 = got.iter().map(|r| r.unique).sum();
    let last = got.iter().map(|r| r.last_micros).max().unwrap_or(start);
    let throughput = delivered as f64 / (last.saturating_sub(start).max(1) as f64 / 1e6);
    let stats = Stats::of(
        &mut got
            .iter()
            .flat_map(|r| r.latencies_ms.iter().copied())
            .collect::<Vec<_>>(),
    );
    BARE.lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .push((viewers, throughput, stats));
    Ok((throughput, stats))
}
