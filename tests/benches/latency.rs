//! Scenario `latency` (issue 16): line → viewer latency with 1 run and with 64 runs at once, each agent
//! writing 50 lines/s, one SSE viewer per run (the API's event stream). BENCHMARKS.md has the figures.

use std::process::ExitCode;
use std::time::Duration;

use muster_tests::Backend;
use muster_tests::bench::live::{self, Plan, Surface};
use muster_tests::bench::{Figure, Mode, Prepared, ServerOptions, Stats, backend_name};

fn main() -> ExitCode {
    muster_tests::bench::main("latency", scenario)
}

async fn scenario(mode: Mode, backend: Backend) -> anyhow::Result<Option<Vec<Figure>>> {
    let Some(prepared) = Prepared::new(backend).await? else {
        return Ok(None);
    };
    let mut world = prepared.serve(ServerOptions::default()).await?;
    let b = backend_name(backend);
    let seconds = mode.pick(2, 10);
    let mut figures = Vec::new();
    for runs in [1, mode.pick(4, 64)] {
        let plan = Plan {
            runs,
            rate: 50,
            lines: 50 * seconds,
            viewers: 1,
            surface: Surface::Sse,
            drain: Duration::from_secs(60),
        };
        let out = live::run(&mut world, &plan, &format!("lat{runs}")).await?;
        out.check(&format!("{runs} runs"))?;
        let s = Stats::of(&mut out.latencies());
        let what = format!("{runs} run(s) × 50 lines/s, SSE");
        figures.push(Figure::new(
            b,
            format!("{what}: p50 line → viewer"),
            s.p50,
            "ms",
        ));
        figures.push(
            Figure::new(b, format!("{what}: p99 line → viewer"), s.p99, "ms").against("goal", 50.0),
        );
        figures.push(Figure::new(
            b,
            format!("{what}: max line → viewer"),
            s.max,
            "ms",
        ));
        figures.push(Figure::new(
            b,
            format!("{what}: runs not succeeded (interrupted/failed)"),
            out.failed_runs.len() as f64,
            "count",
        ));
        figures.push(
            Figure::new(
                b,
                format!("{what}: slowest writer's rate"),
                out.writer_rate(),
                "lines/s",
            )
            .against("plan", 50.0),
        );
        figures.push(Figure::new(
            b,
            format!("{what}: lines received"),
            s.count as f64,
            "count",
        ));
        if out.late_viewers > 0 {
            eprintln!("note: viewers connected after the first line; its latencies include replay");
        }
    }
    Ok(Some(figures))
}
