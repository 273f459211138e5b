//! The stand-in agent: the bench executable run as `<bench> bench-writer RATE COUNT START_AT` by a
//! custom agent (under the agent sandbox, through Muster's `sandbox-exec` step). It prints
//! `MBS <micros>` at once (its start time: the claim scenario's figure), waits until `START_AT` (unix
//! micros; lets the viewers connect first), then `COUNT` lines `MBL <seq> <micros>` at `RATE` lines per
//! second, or as fast as it can when `RATE` is 0. A viewer's latency is its receive time minus `<micros>`.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The first argument that selects this mode.
pub const SUBCOMMAND: &str = "bench-writer";

/// Wall-clock microseconds since the Unix epoch (what the lines carry; viewers compare against it).
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The custom agent's command line that runs this writer from `exe`.
pub fn command(exe: &std::path::Path, rate: u32, count: u64, start_at: u64) -> String {
    format!("{} {SUBCOMMAND} {rate} {count} {start_at}", exe.display())
}

/// Runs the writer with `args` (after the subcommand).
pub fn main(args: &[OsString]) -> ExitCode {
    let started = now_micros();
    let parsed: Option<Vec<u64>> = args
        .iter()
        .map(|a| a.to_str().and_then(|s| s.parse().ok()))
        .collect();
    let Some([rate, count, start_at]) = parsed
        .as_deref()
        .map(<[u64]>::to_vec)
        .and_then(|v| <[u64; 3]>::try_from(v).ok())
    else {
        eprintln!(
            "usage: {SUBCOMMAND} RATE COUNT START_AT (whole numbers; RATE 0 = as fast as possible)"
        );
        return ExitCode::from(2);
    };
    match write(started, rate, count, start_at) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{SUBCOMMAND}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write(started: u64, rate: u64, count: u64, start_at: u64) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    writeln!(out, "MBS {started}")?;
    out.flush()?;
    let now = now_micros();
    if start_at > now {
        std::thread::sleep(Duration::from_micros(start_at - now));
    }
    let begin = now_micros();
    // Line `seq` is due `(seq - 1) / rate` seconds after the start; at rate 0 lines are not paced.
    let due = |seq: u64| ((seq - 1) * 1_000_000).checked_div(rate).map(|d| begin + d);
    let mut seq = 1;
    while seq <= count {
        let Some(at) = due(seq) else {
            writeln!(out, "MBL {seq} {}", now_micros())?;
            seq += 1;
            continue;
        };
        let now = now_micros();
        if at > now {
            std::thread::sleep(Duration::from_micros(at - now));
        }
        // Every line that is due by now, then one flush.
        let until = now_micros();
        while seq <= count && due(seq).is_some_and(|at| at <= until) {
            writeln!(out, "MBL {seq} {}", now_micros())?;
            seq += 1;
        }
        out.flush()?;
    }
    out.flush()
}
