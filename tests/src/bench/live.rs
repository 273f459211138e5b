//! The live-log measurement shared by the latency, fan-out and slow-viewer scenarios: `runs` runs of a
//! stand-in agent writing `lines` lines at `rate` per second, each watched by `viewers` viewers of one
//! kind, from the moment the agent writes a line to the moment a viewer has it.

use std::time::Duration;

use anyhow::Context as _;

use super::server::World;
use super::viewer::{Received, Viewer, read_all};
use super::writer::{self, now_micros};

/// Which live surface a viewer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The API's SSE event stream.
    Sse,
    /// The run page's WebSocket (htmx fragments).
    Ws,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Runs at once.
    pub runs: usize,
    /// Lines per second of each run's agent.
    pub rate: u32,
    /// Lines each agent writes.
    pub lines: u64,
    /// Viewers per run.
    pub viewers: usize,
    /// Their kind.
    pub surface: Surface,
    /// How long after the last line a viewer may still take (a hang guard, not a threshold).
    pub drain: Duration,
}

/// What happened.
pub struct Outcome {
    /// Per viewer, runs in order.
    pub received: Vec<Received>,
    /// Unix micros when the agents' first line was due.
    pub start_micros: u64,
    /// Unix micros when the agents' last line was due.
    pub last_due_micros: u64,
    /// Server CPU time spent from the first line to the last viewer's last line.
    pub cpu: Duration,
    /// Wall time of the same span.
    pub wall: Duration,
    /// Viewers that were not yet connected when the lines began (their first lines are replays).
    pub late_viewers: usize,
    /// Runs that did not succeed: `status (failure_reason)`.
    pub failed_runs: Vec<String>,
    /// Per run, in order, whether it succeeded (its viewers are `received[i * viewers..][..viewers]`).
    pub succeeded: Vec<bool>,
    viewers: usize,
}

impl Outcome {
    /// Fails unless every viewer of every run that succeeded received every line. A run the server
    /// gave up on (e.g. its runner's lease lapsing under load) is reported, not failed on: its viewers
    /// may lack lines the agent wrote after the run was interrupted ([`Outcome::failed_runs`]).
    pub fn check(&self, what: &str) -> anyhow::Result<()> {
        let mut failed = self.failed_runs.clone();
        failed.sort();
        failed.dedup();
        for end in failed {
            let runs = self.failed_runs.iter().filter(|f| **f == end).count();
            eprintln!("note: {what}: {runs} run(s) ended {end}");
        }
        let of_good_runs: Vec<Received> = self
            .received
            .chunks(self.viewers.max(1))
            .zip(&self.succeeded)
            .filter(|(_, ok)| **ok)
            .flat_map(|(viewers, _)| viewers.iter().cloned())
            .collect();
        super::viewer::check_complete(what, &of_good_runs)
    }

    /// All latencies, ms.
    pub fn latencies(&self) -> Vec<f64> {
        self.received
            .iter()
            .flat_map(|r| r.latencies_ms.iter().copied())
            .collect()
    }

    /// Seconds from the last line's due time to the moment the last viewer had it.
    pub fn last_behind_secs(&self) -> f64 {
        let last = self
            .received
            .iter()
            .map(|r| r.last_micros)
            .max()
            .unwrap_or(0);
        last.saturating_sub(self.last_due_micros) as f64 / 1e6
    }

    /// Lines per second the writers really wrote (from the times in the lines a viewer received): the
    /// stand-in agent keeps its rate when this is the plan's rate.
    pub fn writer_rate(&self) -> f64 {
        self.received
            .iter()
            .filter(|r| r.unique > 1)
            .filter_map(|r| {
                let (first, last) = r.written?;
                Some((r.unique - 1) as f64 / (last.saturating_sub(first).max(1) as f64 / 1e6))
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Lines delivered per second over the whole span (first line due → last viewer's last line).
    pub fn throughput(&self) -> f64 {
        let delivered: u64 = self.received.iter().map(|r| r.unique).sum();
        let last = self
            .received
            .iter()
            .map(|r| r.last_micros)
            .max()
            .unwrap_or(0);
        delivered as f64 / (last.saturating_sub(self.start_micros).max(1) as f64 / 1e6)
    }
}

/// Runs `plan` on `world`; `tag` makes its agents' names unique.
pub async fn run(world: &mut World, plan: &Plan, tag: &str) -> anyhow::Result<Outcome> {
    let exe = std::env::current_exe()?;
    // Time to create the runs and connect every viewer before the first line.
    let warmup_ms = 2_000 + 40 * plan.runs as u64 + 8 * (plan.runs * plan.viewers) as u64;
    let start_micros = now_micros() + warmup_ms * 1000;
    let command = writer::command(&exe, plan.rate, plan.lines, start_micros);
    let agents: Vec<String> = (0..plan.runs.div_ceil(32))
        .map(|i| format!("{tag}-{i}"))
        .collect();
    for agent in &agents {
        world.custom_agent(agent, &command, 32).await?;
    }
    let mut runs = Vec::with_capacity(plan.runs);
    for i in 0..plan.runs {
        let key = world
            .assign(&format!("{tag} run {i}"), &agents[i / 32])
            .await?;
        runs.push(key);
    }
    let mut ids = Vec::with_capacity(runs.len());
    for key in &runs {
        ids.push(world.run_of(key).await?);
    }
    let mut viewers = Vec::with_capacity(plan.runs * plan.viewers);
    for id in &ids {
        for chunk in (0..plan.viewers).collect::<Vec<_>>().chunks(50) {
            let opened = futures_util::future::try_join_all(chunk.iter().map(|_| async {
                match plan.surface {
                    Surface::Sse => Viewer::sse(world, id).await,
                    Surface::Ws => Viewer::ws(world, id).await,
                }
            }))
            .await
            .context("connect the viewers")?;
            viewers.extend(opened);
        }
    }
    let late_viewers = if now_micros() > start_micros {
        viewers.len()
    } else {
        0
    };
    // CPU from the first line on.
    let wait = start_micros.saturating_sub(now_micros());
    tokio::time::sleep(Duration::from_micros(wait)).await;
    let cpu0 = world.server.cpu()?;
    let wall0 = std::time::Instant::now();
    let writing = Duration::from_micros(plan.lines * 1_000_000 / u64::from(plan.rate.max(1)));
    let received = read_all(viewers, plan.lines, writing + plan.drain).await?;
    let cpu = world.server.cpu()?.saturating_sub(cpu0);
    let wall = wall0.elapsed();
    world.server.check_alive()?;
    let mut failed_runs = Vec::new();
    let mut succeeded = Vec::with_capacity(ids.len());
    for id in &ids {
        let view = world
            .wait_run_settled(id, plan.drain, Duration::from_millis(50))
            .await?;
        succeeded.push(view["status"] == "succeeded");
        if view["status"] != "succeeded" {
            failed_runs.push(format!("{} ({})", view["status"], view["failure_reason"]));
        }
    }
    Ok(Outcome {
        received,
        start_micros,
        last_due_micros: start_micros
            + plan.lines.saturating_sub(1) * 1_000_000 / u64::from(plan.rate.max(1)),
        cpu,
        wall,
        late_viewers,
        failed_runs,
        succeeded,
        viewers: plan.viewers,
    })
}
