//! The `muster` binary as a test drives it: one person's API token against a running server, with a
//! private config folder and nothing else from the test's environment.

use std::process::{Command, Stdio};

use muster::domain::{User, Workspace};

use crate::{TestApp, seed};

/// What one run of the binary printed, and how it exited.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `muster …` as one person on one server.
pub struct Cli {
    url: String,
    token: String,
    config: tempfile::TempDir,
}

impl Cli {
    /// The binary talking to `app` with `token`.
    pub fn new(app: &TestApp, token: &str) -> Cli {
        Cli {
            url: format!("http://{}", app.addr),
            token: token.to_owned(),
            config: tempfile::tempdir().expect("create a config folder"),
        }
    }

    /// Ada, owner of the workspace `alpha` (prefix ALP) on `app`, with her token; and the binary as her.
    pub async fn ada_on_alpha(app: &TestApp) -> (User, Workspace, Cli) {
        let store = app.state.store.clone();
        let (user, ws) = seed::owner_of(
            &store,
            seed::person("ada@example.com", "Ada"),
            ("Alpha", "alpha", "ALP"),
        )
        .await;
        let token = crate::mint_token(store.as_ref(), ws.id, user.id, "cli").await;
        (user, ws, Cli::new(app, &token))
    }

    /// Runs `muster ARGS` (stdin empty) and waits for it.
    pub async fn run(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new(crate::muster_bin());
        cmd.env_clear()
            .env("HOME", self.config.path())
            .env("MUSTER_CONFIG_DIR", self.config.path())
            .env("MUSTER_URL", &self.url)
            .env("MUSTER_TOKEN", &self.token)
            .args(args)
            .stdin(Stdio::null());
        let out = tokio::task::spawn_blocking(move || cmd.output().expect("run muster"))
            .await
            .expect("join the muster process");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}
