//! Scenario `slow_viewer` (issue 16): one run at 1,000 lines/s watched by N run-page WebSocket viewers,
//! first alone, then with one more viewer that stalls (reads its first line, then stops reading, with a
//! 4 KiB receive buffer). Figures: the normal viewers' p99 without and with the stalled one, and what
//! became of the stalled viewer when it read again (every line, or dropped) and the server memory the
//! stall held (RSS sampled every 100 ms over the run, above the RSS before it).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use muster_tests::Backend;
use muster_tests::bench::live::{self, Plan, Surface};
use muster_tests::bench::server::SLUG;
use muster_tests::bench::viewer::{Received, Viewer};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};

const RATE: u32 = 1_000;

fn main() -> ExitCode {
    muster_tests::bench::main("slow_viewer", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let b = backend_name(backend);
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let mut world = prepared.serve(ServerOptions::default()).await?;
    let viewers = mode.pick(2, 10);
    let lines = mode.pick(1_000, 10_000);
    let plan = Plan {
        runs: 1,
        rate: RATE,
        lines,
        viewers,
        surface: Surface::Ws,
        drain: Duration::from_secs(60),
    };

    let alone = live::run(&mut world, &plan, "alone").await?;
    alone.check("the viewers alone")?;
    let alone = Stats::of(&mut alone.latencies());

    // The stalled viewer joins the next run as soon as it exists; the normal ones as before.
    let (rss_before, _) = world.server.rss()?;
    let stalled = tokio::spawn(stall(
        world.url(""),
        world.cookie.clone(),
        world.token.clone(),
        world.http.clone(),
        lines,
    ));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (pid, on) = (world.server.pid, sampling.clone());
        tokio::spawn(async move {
            let mut peak: f64 = 0.0;
            while on.load(Ordering::SeqCst) {
                if let Some(rss) = rss_of(pid) {
                    peak = peak.max(rss);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    };
    let with = live::run(&mut world, &plan, "with").await?;
    with.check("the viewers beside a stalled one")?;
    let with = Stats::of(&mut with.latencies());
    sampling.store(false, Ordering::SeqCst);
    let peak = sampler.await?;
    let got = stalled.await??;

    Ok(Some(vec![
        Figure::new(
            b,
            format!("{viewers} viewers alone: p99 lag"),
            alone.p99,
            "ms",
        ),
        Figure::new(
            b,
            format!("{viewers} viewers beside a stalled one: p99 lag"),
            with.p99,
            "ms",
        )
        .against("alone", alone.p99),
        Figure::new(
            b,
            "stalled viewer: lines it read in the end",
            got.unique as f64,
            "count",
        )
        .against("sent", lines as f64),
        Figure::new(
            b,
            "stalled viewer: dropped by the server (1 = yes)",
            f64::from(u8::from(got.ended_early)),
            "flag",
        ),
        Figure::new(
            b,
            "server RSS peak during the stall, above before",
            (peak - rss_before).max(0.0),
            "MiB",
        ),
    ]))
}

/// Waits for the `with` run (the second issue, BEN-2), connects a viewer with a tiny receive buffer,
/// reads one line, stalls until the run ended, then reads what is left: what it received in all.
async fn stall(
    base: String,
    cookie: String,
    token: String,
    http: reqwest::Client,
    lines: u64,
) -> anyhow::Result<Received> {
    let run = loop {
        let runs: serde_json::Value = http
            .get(format!("{base}/api/v1/issues/BEN-2/runs"))
            .bearer_auth(&token)
            .send()
            .await?
            .json()
            .await
            .unwrap_or_default();
        if let Some(id) = runs.get(0).and_then(|r| r["id"].as_str()) {
            break id.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let url = format!(
        "{}/w/{SLUG}/runs/{run}/live?after=0",
        base.replacen("http://", "ws://", 1)
    );
    let mut viewer = Viewer::ws_url(&url, Some(&cookie), Some(4096)).await?;
    let first = viewer.first_line(Duration::from_secs(60)).await?;
    // Stalled: not reading while the run goes on.
    loop {
        let view: serde_json::Value = http
            .get(format!("{base}/api/v1/runs/{run}"))
            .bearer_auth(&token)
            .send()
            .await?
            .json()
            .await?;
        if !matches!(
            view["status"].as_str(),
            Some("queued" | "claimed" | "running")
        ) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The first line was read before the stall; the rest arrive now, or the server dropped the viewer.
    viewer
        .read_after(lines, Duration::from_secs(60), &first)
        .await
}

/// A process's resident memory in MiB.
fn rss_of(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<f64>()
        .ok()
        .map(|kb| kb / 1024.0)
}
