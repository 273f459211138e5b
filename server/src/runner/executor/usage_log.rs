//! Following a CLI's own usage log (Codex's session rollout under `CODEX_HOME/sessions`), for a CLI
//! whose stdout reports usage only at the end.
//!
//! A resumed session's rollout was copied in from the earlier run: what it held then was that run's
//! usage, counted already. So the log remembers the files and sizes present before the CLI starts and
//! follows only what is written after them.
//!
//! The folder is the agent's to write: the file is opened through `muster_agents::bounded` (no link, no
//! FIFO, nothing outside the folder as it was before the CLI started) and read in capped lines, so a
//! two-gigabyte line or a link to the server's own files costs nothing and reveals nothing.

use std::path::{Path, PathBuf};

use muster_agents::bounded::{self, Line as Read};
use tokio::io::AsyncSeekExt as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::watch::Line;

/// How often the usage log is polled for new lines.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);
/// Longest usage-log line read; a longer one (a huge tool output, or an attack) is skipped. The lines
/// that count, `token_count` events, are a few hundred bytes.
const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Most bytes of the usage log read in one run; past it the log is no longer followed.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The folder of a run's usage log, and the `*.jsonl` files (with their sizes) it held before the CLI
/// started.
#[derive(Debug)]
pub(super) struct UsageLog {
    dir: PathBuf,
    /// The folder's real path before the CLI started: files are read only under it.
    root: Option<PathBuf>,
    known: Vec<(PathBuf, u64)>,
}

impl UsageLog {
    /// The usage log under `dir`, as it is now (call it before the CLI starts).
    pub(super) fn at(dir: PathBuf) -> Self {
        let mut known = Vec::new();
        for path in jsonl_files(&dir) {
            if let Ok(meta) = std::fs::metadata(&path) {
                known.push((path, meta.len()));
            }
        }
        let root = bounded::real_root(&dir).ok();
        Self { dir, root, known }
    }

    /// Follows the first `*.jsonl` file under the folder that is new or has grown, from where it ended
    /// before, sending each complete line as it is appended; after `done` (stdout closed: the CLI is
    /// gone) reads what is left and ends.
    pub(super) async fn tail(self, tx: mpsc::Sender<Line>, done: CancellationToken) {
        let Some(root) = self.root.clone() else {
            return;
        };
        let mut lines = None;
        loop {
            let finished = done.is_cancelled();
            if lines.is_none()
                && let Some((path, from)) = self.written()
            {
                match bounded::open_regular(&path, Some(&root)) {
                    Ok(file) => {
                        let mut file = tokio::fs::File::from_std(file);
                        if file.seek(std::io::SeekFrom::Start(from)).await.is_ok() {
                            lines = Some(bounded::Lines::new(file, MAX_LINE_BYTES, MAX_BYTES));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "not following the usage log");
                        return;
                    }
                }
            }
            if let Some(file) = lines.as_mut() {
                // Whole lines only: a line still being written is kept until its newline.
                while let Ok(Some(line)) = file.next().await {
                    let text = match line {
                        Read::Text(text) => text,
                        Read::TooLong(bytes) => {
                            tracing::warn!(bytes, "skipping an over-long usage-log line");
                            continue;
                        }
                        Read::Exhausted(bytes) => {
                            tracing::warn!(
                                bytes,
                                "the usage log is too large; no longer following it"
                            );
                            return;
                        }
                    };
                    if tx.send(Line::UsageLog(text)).await.is_err() {
                        return;
                    }
                }
            }
            if finished {
                return;
            }
            tokio::select! {
                () = done.cancelled() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }

    /// The first file written since [`UsageLog::at`], and where its new part begins.
    fn written(&self) -> Option<(PathBuf, u64)> {
        jsonl_files(&self.dir).into_iter().find_map(|path| {
            let len = std::fs::metadata(&path).ok()?.len();
            let before = self.known.iter().find(|(p, _)| *p == path).map(|(_, n)| *n);
            match before {
                Some(n) if len <= n => None,
                before => Some((path, before.unwrap_or(0))),
            }
        })
    }
}

/// The `*.jsonl` files under `dir`, depth first in name order (`sessions/YYYY/MM/DD/rollout-….jsonl`),
/// links skipped.
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    muster_agents::session::find_files(dir, &|p| p.extension().is_some_and(|e| e == "jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What tailing `log` to its end hands on, line by line.
    async fn tailed(log: UsageLog) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel(8);
        let done = CancellationToken::new();
        done.cancel();
        log.tail(tx, done).await;
        let mut got = Vec::new();
        while let Ok(Line::UsageLog(line)) = rx.try_recv() {
            got.push(line);
        }
        got
    }

    /// A resumed session's copied rollout is not counted again; what the CLI appends to it, or a new
    /// rollout, is.
    #[tokio::test]
    async fn only_what_is_written_after_the_start_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("2026/12/01/rollout-a.jsonl");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::fs::write(&old, "earlier 1\nearlier 2\n").unwrap();
        let log = UsageLog::at(dir.path().to_path_buf());
        assert_eq!(log.written(), None);
        std::fs::write(&old, "earlier 1\nearlier 2\nnew 1\n").unwrap();
        let got = tailed(log).await;
        assert_eq!(got, ["new 1"]);
    }

    /// A rollout grown by a line far over the cap (an agent's `truncate -s +…`): the line is skipped
    /// and what follows it is still read.
    #[tokio::test]
    async fn an_over_long_line_is_skipped_and_the_next_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let log = UsageLog::at(dir.path().to_path_buf());
        let file = dir.path().join("rollout-b.jsonl");
        let f = std::fs::File::create(&file).unwrap();
        f.set_len(3 * MAX_LINE_BYTES as u64).unwrap();
        drop(f);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        std::io::Write::write_all(&mut f, b"\nafter\n").unwrap();
        let got = tailed(log).await;
        assert_eq!(got, ["after"]);
    }
}
