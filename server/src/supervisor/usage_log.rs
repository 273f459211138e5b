//! Following a CLI's own usage log (Codex's session rollout under `CODEX_HOME/sessions`), for a CLI
//! whose stdout reports usage only at the end.
//!
//! A resumed session's rollout was copied in from the earlier run: what it held then was that run's
//! usage, counted already. So the log remembers the files and sizes present before the CLI starts and
//! follows only what is written after them.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt as _, AsyncSeekExt as _, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::watch::Line;

/// How often the usage log is polled for new lines.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// The folder of a run's usage log, and the `*.jsonl` files (with their sizes) it held before the CLI
/// started.
#[derive(Debug)]
pub(super) struct UsageLog {
    dir: PathBuf,
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
        Self { dir, known }
    }

    /// Follows the first `*.jsonl` file under the folder that is new or has grown, from where it ended
    /// before, sending each complete line as it is appended; after `done` (stdout closed: the CLI is
    /// gone) reads what is left and ends.
    pub(super) async fn tail(self, tx: mpsc::Sender<Line>, done: CancellationToken) {
        let mut reader = None;
        let mut partial = String::new();
        loop {
            let finished = done.is_cancelled();
            if reader.is_none()
                && let Some((path, from)) = self.written()
                && let Ok(mut file) = tokio::fs::File::open(&path).await
                && file.seek(std::io::SeekFrom::Start(from)).await.is_ok()
            {
                reader = Some(BufReader::new(file));
            }
            if let Some(file) = reader.as_mut() {
                // Whole lines only: a line still being written stays in `partial` until its newline.
                while let Ok(n) = file.read_line(&mut partial).await {
                    if n == 0 || !partial.ends_with('\n') {
                        break;
                    }
                    let line = std::mem::take(&mut partial);
                    if tx
                        .send(Line::UsageLog(line.trim_end().to_owned()))
                        .await
                        .is_err()
                    {
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
        let (tx, mut rx) = mpsc::channel(8);
        let done = CancellationToken::new();
        done.cancel();
        log.tail(tx, done).await;
        let mut got = Vec::new();
        while let Ok(Line::UsageLog(line)) = rx.try_recv() {
            got.push(line);
        }
        assert_eq!(got, ["new 1"]);
    }
}
