//! `muster forge …` and `muster pr …` against a real server with a connection and a pull request
//! seeded in the store (no forge is ever called): the list and show commands in text and `--json`, and
//! `forge connect`'s refusal to go without a token it can read from the environment or a file.

use std::process::{Command, Stdio};
use std::time::Duration;

use muster::domain::*;
use muster_tests::{Backend, TestApp, TestDb, seed, spawn_app};
use serde_json::Value;

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    #[track_caller]
    fn ok(self) -> Self {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    #[track_caller]
    fn fails(self, needle: &str) -> Self {
        assert_eq!(self.code, 1, "{self:?}");
        assert!(self.stderr.contains(needle), "{needle:?} not in {self:?}");
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// Runs `muster ARGS` with the server and token (and `extra_env`) in an otherwise empty environment.
async fn muster(app: &TestApp, token: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Out {
    let config = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(muster_tests::muster_bin());
    cmd.env_clear()
        .env("HOME", config.path())
        .env("MUSTER_CONFIG_DIR", config.path())
        .env("MUSTER_URL", format!("http://{}", app.addr))
        .env("MUSTER_TOKEN", token)
        .envs(extra_env.iter().copied())
        .args(args)
        .stdin(Stdio::null());
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || cmd.output().unwrap()),
    )
    .await
    .expect("muster finished")
    .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn forge_and_pr_commands_list_and_show_seeded_pull_requests() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let app = spawn_app(db.config()).await;
    let (ada, ws) = seed::owner_of(
        &app.store,
        seed::person("ada@example.com", "Ada"),
        ("Alpha", "alpha", "ALP"),
    )
    .await;
    let token = muster_tests::mint_token(app.store.as_ref(), ws.id, ada.id, "cli").await;
    let agent = seed::agent(&app.store, ws.id, "coder", RuntimeKind::Custom).await;
    let issue = app
        .store
        .create_issue(
            ws.id,
            &NewIssue::new(IssueTitle::parse("Add a cache").unwrap()),
        )
        .await
        .unwrap();
    let other = app
        .store
        .create_issue(ws.id, &NewIssue::new(IssueTitle::parse("Other").unwrap()))
        .await
        .unwrap();
    let run = app
        .store
        .create_run(&NewRun::assignment(ws.id, issue.id, agent.id))
        .await
        .unwrap();
    let conn = seed::forge_connection(&app.store, ws.id, ada.id).await;
    let pr = seed::pull_request(&app.store, &conn, &run, 7).await;
    for update in [
        PrUpdate {
            check: Some(PrCheck {
                name: "ci/test".into(),
                state: CheckState::Failure,
                url: Some("https://ci.example/1".into()),
            }),
            ..PrUpdate::default()
        },
        PrUpdate {
            review: Some(PrReview {
                author: "grace".into(),
                verdict: ReviewVerdict::ChangesRequested,
            }),
            ..PrUpdate::default()
        },
    ] {
        app.store.update_pull_request(pr.id, &update).await.unwrap();
    }
    let run = async |args: &[&str]| muster(&app, &token, args, &[]).await;

    let list = run(&["forge", "list"]).await.ok();
    let mut lines = list.stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("KIND") && header.contains("PROJECT"),
        "{header}"
    );
    let row = lines.next().unwrap();
    for part in [
        "github",
        "acme/app",
        "https://api.github.com",
        &conn.id.to_string(),
    ] {
        assert!(row.contains(part), "{part:?} not in {row:?}");
    }
    let json = run(&["forge", "list", "--json"]).await.ok().json();
    assert_eq!(json[0]["id"], conn.id.to_string());
    assert_eq!(
        json[0]["webhook_path"],
        format!("/hooks/github/{}", conn.id)
    );

    let list = run(&["pr", "list"]).await.ok();
    let row = list.stdout.lines().nth(1).unwrap_or_default().to_owned();
    for part in ["#7", "draft", "1 failing", "muster/7", &pr.id.to_string()] {
        assert!(row.contains(part), "{part:?} not in {row:?}");
    }
    let mine = run(&["pr", "list", "--issue", &issue.key.to_string(), "--json"])
        .await
        .ok()
        .json();
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["number"], 7);
    let none = run(&["pr", "list", "--issue", &other.key.to_string(), "--json"])
        .await
        .ok()
        .json();
    assert_eq!(none, serde_json::json!([]));
    run(&["pr", "list", "--issue", "ALP-99"])
        .await
        .fails("issue ALP-99 not found");

    let show = run(&["pr", "show", &pr.id.to_string()]).await.ok();
    for part in [
        "pull request #7: https://github.com/acme/app/pull/7",
        "state:     draft",
        "mergeable: unknown",
        "check:     ci/test failure https://ci.example/1",
        "review:    grace changes requested",
    ] {
        assert!(
            show.stdout.contains(part),
            "{part:?} not in {}",
            show.stdout
        );
    }
    let unknown = uuid::Uuid::now_v7().to_string();
    run(&["pr", "show", &unknown])
        .await
        .fails(&format!("pull request {unknown} not found"));

    // Opening one says the API's reason (nothing was pushed here), and a run that is not the workspace's
    // is not found.
    run(&["pr", "open", &issue.key.to_string()])
        .await
        .fails("no run on ALP-1 has delivered pushed work yet");
    run(&["pr", "open", "--run", &unknown, "--ready"])
        .await
        .fails(&format!("run {unknown} not found"));

    // connect never takes a token on the command line, and says where to put it.
    let connect = ["forge", "connect", "--kind", "github", "--repo", "acme/app"];
    run(&connect)
        .await
        .fails("no forge token: pass --token-env VAR");
    let with_env = [&connect[..], &["--token-env", "ACME_FORGE_TOKEN"]].concat();
    run(&with_env)
        .await
        .fails("ACME_FORGE_TOKEN is not set (or is empty); it must hold the forge token");
    let empty = muster(&app, &token, &with_env, &[("ACME_FORGE_TOKEN", " ")]).await;
    empty.fails("ACME_FORGE_TOKEN is not set (or is empty)");
    let flag = [&connect[..], &["--token", "ghp_secret"]].concat();
    // `--token` is the API token of every command, never the forge's: still no forge token.
    run(&flag).await.fails("no forge token");
    // With the token set, the API's own validation speaks (the project here is refused before any forge).
    let bad = [
        "forge",
        "connect",
        "--kind",
        "github",
        "--repo",
        "nope",
        "--token-env",
        "T",
    ];
    muster(&app, &token, &bad, &[("T", "ghp_x")])
        .await
        .fails("repo: nope is not a project path");
    app.shutdown.cancel();
}
