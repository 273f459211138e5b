//! A scenario's figures: printed as a table (figure, value, baseline, ratio) and written as JSON to
//! `<cargo target dir>/bench/<scenario>.json` (`<scenario>-short.json` for a short pass).

use std::path::PathBuf;

use anyhow::Context as _;
use serde::Serialize;

/// What a figure is compared with: a bare implementation measured in the same run, or the goal.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// What it is (`bare WebSocket broadcast`, `goal`).
    pub label: String,
    /// Its value, in the figure's unit.
    pub value: f64,
}

/// One measured number.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// `sqlite` or `postgres` (or `bare` for a baseline-only row).
    pub backend: String,
    /// What was measured (`64 runs: p99 line → viewer`).
    pub name: String,
    /// The value.
    pub value: f64,
    /// Its unit (`ms`, `MB`, `events/s`, `bytes`, `count`).
    pub unit: String,
    /// What it is compared with, if anything.
    pub baseline: Option<Baseline>,
    /// `value / baseline`, when there is a baseline.
    pub ratio: Option<f64>,
}

impl Figure {
    /// A figure with no baseline.
    pub fn new(backend: &str, name: impl Into<String>, value: f64, unit: &str) -> Self {
        Self {
            backend: backend.to_owned(),
            name: name.into(),
            value,
            unit: unit.to_owned(),
            baseline: None,
            ratio: None,
        }
    }

    /// The same figure compared with `value` of `label`.
    pub fn against(mut self, label: impl Into<String>, value: f64) -> Self {
        self.ratio = (value != 0.0).then(|| self.value / value);
        self.baseline = Some(Baseline {
            label: label.into(),
            value,
        });
        self
    }
}

/// The machine a report was measured on.
#[derive(Debug, Serialize)]
struct Machine {
    cpus: usize,
    memory: String,
    kernel: String,
    rustc: String,
    /// `/proc/loadavg` when the scenario ended: the machine is shared, so read the ratios.
    load: String,
}

/// All figures of one scenario run.
#[derive(Debug, Serialize)]
pub struct Report {
    scenario: String,
    mode: String,
    unix_time: u64,
    machine: Machine,
    figures: Vec<Figure>,
}

impl Report {
    /// An empty report.
    pub fn new(scenario: &str, mode: &str) -> Self {
        Self {
            scenario: scenario.to_owned(),
            mode: mode.to_owned(),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            machine: Machine {
                cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
                memory: first_line("/proc/meminfo"),
                kernel: first_line("/proc/sys/kernel/osrelease"),
                rustc: command_line("rustc", &["--version"]),
                load: String::new(),
            },
            figures: Vec::new(),
        }
    }

    /// Adds figures.
    pub fn extend(&mut self, figures: Vec<Figure>) {
        self.figures.extend(figures);
    }

    /// Prints the table.
    pub fn print(&mut self) {
        self.machine.load = first_line("/proc/loadavg");
        println!(
            "\n{} ({}; load average {})",
            self.scenario, self.mode, self.machine.load
        );
        println!(
            "{:<9} {:<52} {:>14} {:<8} {:>30} {:>8}",
            "backend", "figure", "value", "unit", "baseline", "ratio"
        );
        for f in &self.figures {
            let baseline = f.baseline.as_ref().map_or(String::new(), |b| {
                format!("{} {}", b.label, number(b.value))
            });
            let ratio = f.ratio.map_or(String::new(), |r| format!("{r:.2}×"));
            println!(
                "{:<9} {:<52} {:>14} {:<8} {:>30} {:>8}",
                f.backend,
                f.name,
                number(f.value),
                f.unit,
                baseline,
                ratio
            );
        }
    }

    /// Writes `<target>/bench/<scenario>.json` (`<scenario>-short.json` in the short mode); returns its
    /// path.
    pub fn write(&self) -> anyhow::Result<PathBuf> {
        let dir = target_dir()?.join("bench");
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        // A short pass (`cargo test`) does not overwrite the full figures.
        let name = match self.mode.as_str() {
            "full" => format!("{}.json", self.scenario),
            mode => format!("{}-{mode}.json", self.scenario),
        };
        let path = dir.join(name);
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, json).with_context(|| format!("write {}", path.display()))?;
        println!("written to {}", path.display());
        Ok(path)
    }
}

/// Cargo's target dir: the bench executable is `<target>/<profile>/deps/<name>-<hash>`.
fn target_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("the bench executable's path")?;
    exe.ancestors()
        .nth(3)
        .map(PathBuf::from)
        .context("the bench executable is not in <target>/<profile>/deps")
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn first_line(path: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .unwrap_or_default()
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
