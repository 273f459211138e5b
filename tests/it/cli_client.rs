//! The `muster` command-line client against a real server: `admin bootstrap` on the server's own database,
//! `login` into an isolated config folder, then issues and agents through the API, with human and `--json`
//! output and the error cases (exit 1 with one `error:` line, exit 2 for usage).
//!
//! The server runs in-process (`spawn_app` binds before returning, so no waiting); the binary runs as a
//! child process with a cleared environment, off the async threads via `spawn_blocking`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use serde_json::Value;

const EMAIL: &str = "ada@example.com";
const PASSWORD: &str = "correct horse battery";

/// A running server, its database, and a private config folder for the client.
struct Harness {
    app: TestApp,
    db: TestDb,
    config: tempfile::TempDir,
}

/// What one run of the binary printed.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Fails unless the command ended with exit code `code` and its stderr says `text`.
    fn fails(self, code: i32, text: &str) -> Self {
        assert_eq!(self.code, code, "stderr: {}", self.stderr);
        assert!(self.stderr.contains(text), "{}", self.stderr);
        self
    }

    /// Fails unless the command ended with exit code 1 and an error line starting `start`.
    fn error(self, start: &str) -> Self {
        assert_eq!(self.code, 1, "stderr: {}", self.stderr);
        assert!(self.stderr.starts_with(start), "{}", self.stderr);
        self
    }

    fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

impl Harness {
    async fn start() -> Harness {
        let db = TestDb::new(Backend::Sqlite).await.unwrap();
        let app = spawn_app(db.config()).await;
        Harness {
            app,
            db,
            config: tempfile::tempdir().unwrap(),
        }
    }

    fn server(&self) -> String {
        format!("http://{}", self.app.addr)
    }

    fn config_file(&self) -> PathBuf {
        self.config.path().join("config.json")
    }

    /// Runs `muster ARGS` with `MUSTER_CONFIG_DIR` set, `stdin` as standard input, and no inherited environment.
    async fn muster_with(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let config = self.config.path().to_path_buf();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let stdin = stdin.map(str::to_owned);
        tokio::task::spawn_blocking(move || run_binary(&config, &args, stdin.as_deref()))
            .await
            .unwrap()
    }

    async fn muster(&self, args: &[&str]) -> Run {
        self.muster_with(args, None).await
    }

    /// `muster ARGS`, which must succeed.
    async fn ok(&self, args: &[&str]) -> Run {
        self.muster(args).await.ok()
    }

    /// `muster ARGS`, which must succeed and print JSON: the JSON.
    async fn json(&self, args: &[&str]) -> Value {
        self.ok(args).await.json()
    }

    /// `muster admin bootstrap` on the server's own database; returns the token from the last line.
    async fn bootstrap(&self, extra: &[&str]) -> Run {
        let data_dir = self.app.data_dir.display().to_string();
        let url = self.db.url.redacted();
        let mut args = vec![
            "admin",
            "bootstrap",
            "--data-dir",
            &data_dir,
            "--database-url",
            &url,
        ];
        args.extend_from_slice(extra);
        self.muster(&args).await
    }

    /// Bootstraps `EMAIL` and logs in with the token; returns the token.
    async fn logged_in(&self) -> String {
        let token = last_line(
            &self
                .bootstrap(&["--email", EMAIL, "--password", PASSWORD])
                .await
                .ok(),
        );
        let server = self.server();
        self.ok(&["login", "--server", &server, "--token", &token])
            .await;
        token
    }
}

fn run_binary(config: &Path, args: &[String], stdin: Option<&str>) -> Run {
    let mut child = Command::new(muster_tests::muster_bin())
        .env_clear()
        .env("HOME", config)
        .env("MUSTER_CONFIG_DIR", config)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap().into()
}

fn last_line(run: &Run) -> String {
    run.stdout.lines().last().unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_and_login_store_a_private_config_without_printing_the_token() {
    let h = Harness::start().await;
    let boot = h
        .bootstrap(&[
            "--email",
            EMAIL,
            "--password",
            PASSWORD,
            "--workspace",
            "Acme Robots",
            "--name",
            "Ada",
        ])
        .await
        .ok();
    let token = last_line(&boot);
    assert!(
        token.starts_with("mst_") && token.len() == 68,
        "{}",
        boot.stdout
    );
    assert!(
        boot.stdout.contains("created user ada@example.com"),
        "{}",
        boot.stdout
    );
    assert!(boot.stdout.contains("acme-robots"), "{}", boot.stdout);

    let server = h.server();
    let dir = h.config.path().display().to_string();
    let login = h
        .ok(&[
            "login",
            "--server",
            &server,
            "--token",
            &token,
            "--config-dir",
            &dir,
        ])
        .await;
    assert!(
        login
            .stdout
            .contains("as Ada <ada@example.com> in workspace Acme Robots"),
        "{}",
        login.stdout
    );
    assert!(!login.stdout.contains(&token) && !login.stderr.contains(&token));

    let file = h.config_file();
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["server"], server.as_str());
    assert_eq!(stored["token"], token.as_str());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    // The stored settings are enough from now on; --json gives the caller.
    let me = h.json(&["login", "--token", &token, "--json"]).await;
    assert_eq!(me["workspace"], "acme-robots");
    assert_eq!(me["issue_prefix"], "ACM");

    let out = h.ok(&["logout"]).await;
    assert!(out.stdout.contains("logged out"));
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(!stored.contains(&token) && stored.contains(&server));
    h.muster(&["issue", "list"])
        .await
        .error("error: not logged in");
}

#[tokio::test(flavor = "multi_thread")]
async fn issues_round_trip_through_the_cli() {
    let h = Harness::start().await;
    h.logged_in().await;
    let created = h
        .ok(&[
            "issue",
            "create",
            "--title",
            "Fix login",
            "--priority",
            "high",
            "--label",
            "bug",
            "--label",
            "ui",
        ])
        .await;
    assert_eq!(created.stdout, "MUS-1\n");
    let second = h
        .muster_with(
            &["issue", "create", "--title", "Write docs", "--body", "-"],
            Some("From *stdin*\n"),
        )
        .await
        .ok();
    assert_eq!(second.stdout.trim(), "MUS-2");

    let table = h.ok(&["issue", "list"]).await.stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "KEY    STATUS  PRIORITY  ASSIGNEE  TITLE");
    assert!(
        lines.contains(&"MUS-1  todo    high      -         Fix login"),
        "{table}"
    );
    assert_eq!(lines.len(), 3, "{table}");
    let listed = h.json(&["issue", "list", "--label", "bug", "--json"]).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["key"], "MUS-1");
    let searched = h
        .json(&["issue", "list", "--search", "docs", "--json"])
        .await;
    assert_eq!(searched[0]["body"], "From *stdin*\n");

    h.ok(&["issue", "comment", "MUS-1", "Looking into it"])
        .await;
    h.muster_with(&["issue", "comment", "MUS-1", "-"], Some("Second thought"))
        .await
        .ok();
    let moved = h.ok(&["issue", "status", "MUS-1", "in_progress"]).await;
    assert_eq!(moved.stdout.trim(), "MUS-1 is now in_progress");
    let assigned = h.ok(&["issue", "assign", "MUS-1", "ada"]).await;
    assert_eq!(assigned.stdout.trim(), "MUS-1 is assigned to ada");
    h.ok(&["issue", "edit", "MUS-1", "--title", "Fix the login page"])
        .await;
    let listed = h
        .muster(&[
            "issue",
            "list",
            "--status",
            "in_progress",
            "--assignee",
            "ada",
            "--json",
        ])
        .await;
    assert_eq!(listed.ok().json()[0]["title"], "Fix the login page");

    let show = h.ok(&["issue", "show", "MUS-1"]).await.stdout;
    for expected in [
        "MUS-1  Fix the login page",
        "status:   in_progress",
        "priority: high",
        "assignee: ada",
        "labels:   bug, ui",
        "comments (2):",
        "    Looking into it",
        "    Second thought",
        "moved it todo → in_progress",
    ] {
        assert!(show.contains(expected), "missing {expected:?} in:\n{show}");
    }
    let detail = h.json(&["issue", "show", "MUS-1", "--json"]).await;
    assert_eq!(detail["comments"].as_array().unwrap().len(), 2);
    assert_eq!(detail["assignee"]["name"], "ada");
    assert!(!detail["activity"].as_array().unwrap().is_empty());

    let unassigned = h
        .json(&["issue", "assign", "MUS-1", "none", "--json"])
        .await;
    assert!(unassigned["assignee"].is_null());
}

/// Long lists come a page at a time from the server: `issue list` shows the first 50 and says more match,
/// `--limit` and `--all` read on across pages, and `issue show` prints every comment.
#[tokio::test(flavor = "multi_thread")]
async fn long_issue_and_comment_lists_are_read_page_by_page() {
    use muster::domain::{CommentAuthor, Email, IssueTitle, NewComment, NewIssue};
    let h = Harness::start().await;
    h.logged_in().await;
    let store = &h.app.store;
    let user = store
        .get_user_by_email(&Email::parse(EMAIL).unwrap())
        .await
        .unwrap();
    let (ws, _) = store
        .list_workspaces_for_user(user.id)
        .await
        .unwrap()
        .remove(0);
    for n in 1..=230 {
        let title = IssueTitle::parse(&format!("Issue {n}")).unwrap();
        store
            .create_issue(ws.id, &NewIssue::new(title))
            .await
            .unwrap();
    }
    let first = store
        .get_issue(ws.id, &muster::domain::IssueKey::parse("MUS-1").unwrap())
        .await
        .unwrap();
    for n in 1..=230 {
        let body = format!("Comment {n}");
        let comment = NewComment::parse(CommentAuthor::User(user.id), &body).unwrap();
        store.add_comment(first.id, &comment).await.unwrap();
    }

    let page = h.ok(&["issue", "list", "--json"]).await;
    assert_eq!(page.json().as_array().unwrap().len(), 50);
    assert_eq!(
        page.stderr,
        "… more issues match than the 50 shown; use --all to list them all, or a larger --limit\n"
    );
    let table = h.ok(&["issue", "list"]).await;
    assert_eq!(table.stdout.lines().count(), 51, "a header and 50 rows");
    let two_pages = h.ok(&["issue", "list", "--limit", "210", "--json"]).await;
    let keys: Vec<String> = two_pages
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (1..=210).map(|n| format!("MUS-{n}")).collect();
    assert_eq!(keys, expected, "one column, in board order, nothing twice");
    let all = h.ok(&["issue", "list", "--all", "--json"]).await;
    assert_eq!(all.json().as_array().unwrap().len(), 230);
    assert_eq!(all.stderr, "", "nothing more to say");
    for bad in [&["--limit", "0"][..], &["--all", "--limit", "5"]] {
        let args: Vec<&str> = ["issue", "list"].iter().chain(bad).copied().collect();
        assert_eq!(h.muster(&args).await.code, 2, "{bad:?} is a usage error");
    }

    let shown = h.ok(&["issue", "show", "MUS-1"]).await.stdout;
    assert!(shown.contains("comments (230):"), "{shown}");
    assert!(shown.contains("    Comment 1\n") && shown.contains("    Comment 230\n"));
    let detail = h.json(&["issue", "show", "MUS-1", "--json"]).await;
    let bodies: Vec<&str> = detail["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (1..=230).map(|n| format!("Comment {n}")).collect();
    assert_eq!(bodies, expected, "every comment once, oldest first");
    assert!(detail["comments_next_after"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_errors_are_one_line_with_the_right_exit_code() {
    let h = Harness::start().await;
    h.logged_in().await;
    let empty = h.muster(&["issue", "create", "--title", ""]).await;
    assert_eq!(empty.code, 1);
    assert_eq!(empty.stderr, "error: title: must not be empty\n");
    assert!(empty.stdout.is_empty());

    h.ok(&["issue", "create", "--title", "A"]).await;
    let bad = h
        .muster(&["issue", "status", "MUS-1", "shipped"])
        .await
        .error("error: status: unknown status \"shipped\"");
    assert!(
        bad.stderr
            .contains("backlog, todo, in_progress, in_review, done"),
        "{}",
        bad.stderr
    );
    assert_eq!(bad.stderr.lines().count(), 1);

    let missing = h.muster(&["issue", "show", "MUS-99"]).await;
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (1, "error: issue MUS-99 not found\n")
    );
    let nobody = h.muster(&["issue", "assign", "MUS-1", "zed"]).await;
    assert!(
        nobody
            .stderr
            .contains("assignee: no agent or member called \"zed\""),
        "{}",
        nobody.stderr
    );
    let usage = h.muster(&["issue", "create"]).await;
    assert_eq!(usage.code, 2, "{}", usage.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_keep_their_secrets_across_edits_and_never_print_them() {
    let h = Harness::start().await;
    h.logged_in().await;
    let created = h
        .ok(&[
            "agent",
            "create",
            "--name",
            "coder",
            "--kind",
            "claude",
            "--model",
            "sonnet",
            "--env",
            "RUST_LOG=debug",
            "--secret",
            "API_KEY=hunter2-secret",
            "--max-concurrent-runs",
            "2",
            "--arg",
            "--verbose",
            "--budget-usd",
            "1.5",
        ])
        .await;
    assert_eq!(created.stdout.trim(), "created agent coder");

    let list = h.ok(&["agent", "list"]).await.stdout;
    assert!(
        list.starts_with("NAME   KIND    MODEL   PERMISSION"),
        "{list}"
    );
    assert!(list.contains("coder  claude  sonnet"), "{list}");
    let show = h.ok(&["agent", "show", "coder"]).await.stdout;
    assert!(
        show.contains("RUST_LOG=debug") && show.contains("API_KEY=<secret>"),
        "{show}"
    );
    assert!(
        show.contains("extra args:          --verbose") && show.contains("$1.50"),
        "{show}"
    );
    assert!(!show.contains("hunter2"));

    let edited = h
        .json(&[
            "agent",
            "edit",
            "coder",
            "--env",
            "EXTRA=1",
            "--unset-env",
            "RUST_LOG",
            "--model",
            "opus",
            "--json",
        ])
        .await;
    assert_eq!(edited["model"], "opus");
    assert_eq!(
        edited["env"],
        serde_json::json!([
            { "key": "API_KEY", "value": null, "secret": true },
            { "key": "EXTRA", "value": "1", "secret": false },
        ])
    );
    assert_eq!(edited["max_concurrent_runs"], 2, "unchanged fields stay");

    // The sealed value is still stored, and still never sent out.
    let ws = h
        .app
        .store
        .list_agents(first_workspace(&h).await)
        .await
        .unwrap();
    let secret = ws[0]
        .profile
        .env
        .iter()
        .find(|v| v.key == "API_KEY")
        .unwrap();
    assert!(secret.secret && !secret.value.is_empty() && !secret.value.contains("hunter2"));
    let shown = h.ok(&["agent", "show", "coder", "--json"]).await;
    assert!(!shown.stdout.contains("hunter2"));
    assert_eq!(shown.json()["env"][0]["key"], "API_KEY");

    h.muster(&["agent", "edit", "coder", "--env", "NOEQUALS"])
        .await
        .fails(
            2,
            "invalid value 'NOEQUALS' for '--env <KEY=VALUE>': expected KEY=VALUE",
        );
    let bad_kind = h
        .muster(&["agent", "create", "--name", "x", "--kind", "gpt"])
        .await;
    assert_eq!(bad_kind.code, 2);
    let dup = h
        .muster(&["agent", "create", "--name", "coder", "--kind", "codex"])
        .await;
    assert_eq!(
        dup.stderr,
        "error: name: another agent already has this name\n"
    );
    let nothing = h.muster(&["agent", "edit", "coder"]).await;
    assert_eq!(nothing.code, 1);
    assert!(nothing.stderr.starts_with("error: nothing to change"));
}

async fn first_workspace(h: &Harness) -> muster::domain::WorkspaceId {
    let email = muster::domain::Email::parse(EMAIL).unwrap();
    let user = h.app.store.get_user_by_email(&email).await.unwrap();
    h.app.store.list_workspaces_for_user(user.id).await.unwrap()[0]
        .0
        .id
}

#[tokio::test(flavor = "multi_thread")]
async fn revoked_and_garbage_tokens_fail_with_an_authentication_message() {
    let h = Harness::start().await;
    let token = h.logged_in().await;
    let server = h.server();
    let garbage = h
        .muster(&["issue", "list", "--token", "mst_garbage"])
        .await
        .error("error: authentication failed");
    assert!(!garbage.stderr.contains("mst_garbage"));

    // Revoke the stored token through the API, then use it again.
    let tokens: Value = muster_tests::json_of(
        h.app
            .client
            .get(h.app.url("/api/v1/tokens"))
            .bearer_auth(&token),
    )
    .await;
    let id = tokens[0]["id"].as_str().unwrap().to_owned();
    let revoked = h
        .app
        .client
        .delete(h.app.url(&format!("/api/v1/tokens/{id}")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 204);
    h.muster(&["agent", "list"])
        .await
        .error("error: authentication failed");
    let login = h
        .muster(&["login", "--server", &server, "--token", &token])
        .await;
    assert_eq!(login.code, 1);
    assert!(!login.stderr.contains(&token) && !login.stdout.contains(&token));

    h.muster(&[
        "login",
        "--server",
        "https://muster.example.com",
        "--token",
        "x",
    ])
    .await
    .fails(1, "https:// servers are not supported");
    h.muster(&[
        "issue",
        "list",
        "--server",
        "http://127.0.0.1:9",
        "--token",
        "x",
    ])
    .await
    .error("error: cannot reach the Muster server at http://127.0.0.1:9");
}

/// The 12-character rule is for new passwords: an owner whose password was set under the old 8-character
/// rule still bootstraps again with it (a new account with a short password is still refused).
#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_again_accepts_an_existing_shorter_password() {
    let h = Harness::start().await;
    h.bootstrap(&["--email", EMAIL, "--password", PASSWORD])
        .await
        .ok();
    let store = &h.app.store;
    let user = store
        .get_user_by_email(&muster::domain::Email::parse(EMAIL).unwrap())
        .await
        .unwrap();
    let old = "eight-ch";
    store
        .change_password(user.id, &muster::auth::hash_password(old).unwrap(), None)
        .await
        .unwrap();
    let again = h
        .bootstrap(&["--email", EMAIL, "--password", old, "--json"])
        .await
        .ok()
        .json();
    assert!(
        again["token"].as_str().is_some_and(|t| !t.is_empty()),
        "{again}"
    );
    let short = h
        .bootstrap(&["--email", "new@example.com", "--password", old])
        .await;
    assert_eq!(
        (short.code, short.stderr.as_str()),
        (1, "error: password: must be at least 12 characters\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_again_mints_another_token_only_with_the_right_password() {
    let h = Harness::start().await;
    let first = last_line(
        &h.bootstrap(&["--email", EMAIL, "--password", PASSWORD])
            .await
            .ok(),
    );
    let again = h
        .bootstrap(&["--email", EMAIL, "--password", PASSWORD, "--json"])
        .await
        .ok()
        .json();
    let second = again["token"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(
        (again["user_created"].as_bool(), again["workspace"].as_str()),
        (Some(false), Some("muster"))
    );
    for token in [&first, &second] {
        let key = h
            .muster(&[
                "issue",
                "create",
                "--title",
                "T",
                "--server",
                &h.server(),
                "--token",
                token,
            ])
            .await;
        assert!(key.ok().stdout.starts_with("MUS-"));
    }

    let wrong = h
        .bootstrap(&["--email", EMAIL, "--password", "not the password"])
        .await;
    assert_eq!(wrong.code, 1);
    assert_eq!(
        wrong.stderr.lines().last().unwrap(),
        "error: password: does not match the existing account ada@example.com"
    );
    assert!(wrong.stdout.is_empty());
    let short = h
        .bootstrap(&["--email", "new@example.com", "--password", "short"])
        .await;
    assert_eq!(
        (short.code, short.stderr.as_str()),
        (1, "error: password: must be at least 12 characters\n")
    );
    h.bootstrap(&["--email", "not-an-email", "--password", PASSWORD])
        .await
        .error("error: email: ");
    h.bootstrap(&[
        "--email",
        EMAIL,
        "--password",
        PASSWORD,
        "--workspace",
        "Elsewhere",
    ])
    .await
    .fails(
        1,
        "is not a member of \"Elsewhere\"; their workspaces: Muster",
    );
}

#[tokio::test]
async fn members_tokens_and_runtimes_from_the_command_line() {
    let h = Harness::start().await;
    h.logged_in().await;
    let added = h
        .ok(&[
            "member",
            "add",
            "--email",
            "grace@example.com",
            "--name",
            "Grace",
            "--password",
            "cobol-forever",
            "--role",
            "admin",
        ])
        .await;
    assert_eq!(added.stdout.trim(), "grace@example.com is admin");
    h.muster(&[
        "member",
        "add",
        "--email",
        "x@example.com",
        "--password",
        "short",
    ])
    .await
    .fails(1, "password: must be at least 12 characters");
    let listed = h.json(&["member", "list", "--json"]).await;
    let emails: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["email"].as_str())
        .collect();
    assert_eq!(emails, [EMAIL, "grace@example.com"]);
    let table = h.ok(&["member", "list"]).await;
    assert!(
        table.stdout.starts_with("EMAIL") && table.stdout.contains("grace@example.com"),
        "{}",
        table.stdout
    );
    h.ok(&["member", "role", "grace@example.com", "member"])
        .await;
    h.muster(&["member", "role", EMAIL, "admin"])
        .await
        .fails(1, "role: a workspace needs at least one owner");
    assert_eq!(
        h.muster(&["member", "remove", "nobody@example.com"])
            .await
            .code,
        1
    );
    let removed = h.ok(&["member", "remove", "grace@example.com"]).await;
    assert_eq!(removed.stdout.trim(), "removed grace@example.com");
    // Grace has an account now: adding her again is an invitation she must accept.
    let invited = h
        .ok(&["member", "add", "--email", "grace@example.com"])
        .await;
    assert!(
        invited
            .stdout
            .starts_with("invited grace@example.com as member: they join when they accept"),
        "{}",
        invited.stdout
    );
    let pending = h.json(&["member", "invitations", "--json"]).await;
    assert_eq!(pending[0]["email"], "grace@example.com");
    let table = h.ok(&["member", "invitations"]).await;
    assert!(table.stdout.starts_with("EMAIL") && table.stdout.contains("grace@example.com"));
    let id = pending[0]["id"].as_str().unwrap();
    let revoked = h.ok(&["member", "revoke", id]).await;
    assert_eq!(revoked.stdout.trim(), format!("revoked invitation {id}"));
    let mine = h.ok(&["invitation", "list"]).await;
    assert!(mine.stdout.starts_with("WORKSPACE"), "{}", mine.stdout);
    let unknown = h.muster(&["invitation", "accept", id]).await;
    assert_eq!(unknown.code, 1, "a revoked invitation cannot be accepted");

    // A token made here works, shows up in the list, and stops working once revoked.
    let created = h.ok(&["token", "create", "ci"]).await;
    let secret = created.stdout.trim().to_owned();
    assert!(secret.starts_with("mst_"), "{}", created.stdout);
    let server = h.server();
    let with_new = h
        .muster(&["issue", "list", "--server", &server, "--token", &secret])
        .await;
    assert_eq!(with_new.code, 0, "{}", with_new.stderr);
    let tokens = h.json(&["token", "list", "--json"]).await;
    let ci = tokens
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci")
        .unwrap()
        .clone();
    assert!(
        !tokens.to_string().contains(&secret),
        "secrets are never listed"
    );
    let id = ci["id"].as_str().unwrap();
    h.ok(&["token", "revoke", id]).await;
    let revoked = h
        .muster(&["issue", "list", "--server", &server, "--token", &secret])
        .await;
    assert_eq!(revoked.code, 1);

    // Agents can be deleted from the command line too (by an owner; the run history rule is tested in the API).
    h.ok(&[
        "agent",
        "create",
        "--name",
        "scratch",
        "--kind",
        "custom",
        "--command",
        "true",
    ])
    .await;
    let deleted = h.ok(&["agent", "delete", "scratch"]).await;
    assert_eq!(deleted.stdout.trim(), "deleted agent scratch");
    let again = h.muster(&["agent", "delete", "scratch"]).await;
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("scratch"), "{}", again.stderr);

    // Runtime detection runs locally and reports every kind, plus the local model servers it probed.
    let detected = h.json(&["runtime", "detect", "--json"]).await;
    assert!(detected["model_servers"].is_array(), "{detected}");
    assert!(detected["local_binaries"].is_array(), "{detected}");
    let found = &detected["runtimes"];
    let kinds: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["claude", "codex", "opencode", "llama"]);
    for d in found.as_array().unwrap() {
        let status = d["status"].as_str().unwrap();
        assert!(
            ["found", "too_old", "not_installed", "broken"].contains(&status),
            "{d}"
        );
        assert!(
            status == "found" || d["reason"].is_string(),
            "a reason whenever it is not usable: {d}"
        );
    }
    // Explicit binary paths win over PATH.
    let bin = tempfile::tempdir().unwrap();
    let fake = bin.path().join("my-claude");
    std::fs::write(&fake, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let fake = fake.display().to_string();
    let pinned = h
        .json(&[
            "runtime",
            "detect",
            "--json",
            "--claude-path",
            &fake,
            "--codex-path",
            "/nonexistent/codex",
        ])
        .await["runtimes"]
        .clone();
    assert_eq!(pinned[0]["status"], "found", "{pinned}");
    assert_eq!(
        (pinned[0]["version"].as_str(), pinned[0]["path"].as_str()),
        (Some("2.1.197"), Some(fake.as_str()))
    );
    assert_eq!(pinned[1]["status"], "not_installed");
    assert!(
        pinned[1]["reason"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/codex"),
        "{pinned}"
    );
    let table = h.ok(&["runtime", "detect"]).await;
    assert!(
        table.stdout.starts_with("Agent sandbox: ")
            && table.stdout.contains("\n\nRUNTIME ")
            && table.stdout.contains("Claude Code"),
        "{}",
        table.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn comments_are_edited_and_deleted_and_issues_deleted_from_the_cli() {
    let h = Harness::start().await;
    h.logged_in().await;
    h.ok(&["issue", "create", "--title", "Doomed"]).await;
    let comment = h
        .json(&["issue", "comment", "MUS-1", "Frist", "--json"])
        .await;
    let id = comment["id"].as_str().unwrap().to_owned();
    let edited = h
        .ok(&["issue", "comment-edit", "MUS-1", &id, "First"])
        .await;
    assert_eq!(edited.stdout, format!("edited comment {id} on MUS-1\n"));
    let shown = h.json(&["issue", "show", "MUS-1", "--json"]).await;
    assert_eq!(shown["comments"][0]["body"], "First");
    assert!(shown["comments"][0]["edited_at"].is_string());
    h.ok(&["issue", "comment-delete", "MUS-1", &id]).await;
    let again = h.muster(&["issue", "comment-delete", "MUS-1", &id]).await;
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(
        again
            .stderr
            .contains(&format!("comment {id} on MUS-1 not found")),
        "{}",
        again.stderr
    );

    h.muster(&["issue", "delete", "MUS-1"])
        .await
        .fails(1, "add --yes to confirm");
    let deleted = h.ok(&["issue", "delete", "MUS-1", "--yes"]).await;
    assert_eq!(deleted.stdout, "deleted MUS-1\n");
    h.muster(&["issue", "show", "MUS-1"])
        .await
        .fails(1, "issue MUS-1 not found");
}

#[tokio::test(flavor = "multi_thread")]
async fn runner_tokens_runners_and_agent_binding_from_the_command_line() {
    let h = Harness::start().await;
    h.logged_in().await;
    let ws = first_workspace(&h).await;

    // A runner token is printed alone, once; the list shows it without the secret.
    let created = h.ok(&["runner-token", "create", "gpu box"]).await;
    let secret = created.stdout.trim().to_owned();
    assert!(secret.starts_with("mrt_"), "{}", created.stdout);
    let listed = h.ok(&["runner-token", "list"]).await;
    assert!(listed.stdout.starts_with("NAME"), "{}", listed.stdout);
    assert!(listed.stdout.contains("gpu box") && listed.stdout.contains("active"));
    assert!(!listed.stdout.contains(&secret), "secrets are never listed");
    let tokens = h.json(&["runner-token", "list", "--json"]).await;
    let id = tokens[0]["id"].as_str().unwrap().to_owned();

    // A runner that registered with it is listed with its CLIs.
    let token = h.app.store.list_runner_tokens(ws).await.unwrap()[0].clone();
    let detected = serde_json::json!({"runtimes": [{"kind": "codex", "version": "0.98.0"}]});
    let runner = h
        .app
        .store
        .register_remote_runner(
            &token,
            &muster::domain::RunnerName::parse("gpu-box").unwrap(),
            "0.9.0",
            &detected,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    h.app
        .store
        .runner_heartbeat(runner.id, chrono::Utc::now())
        .await
        .unwrap();
    let runners = h.ok(&["runners"]).await;
    let row = runners
        .stdout
        .lines()
        .find(|l| l.starts_with("gpu-box"))
        .unwrap_or_else(|| panic!("{}", runners.stdout));
    assert!(
        row.contains("online") && row.contains("codex 0.98.0") && row.contains("0.9.0"),
        "{row}"
    );

    let revoked = h.ok(&["runner-token", "revoke", &id]).await;
    assert_eq!(revoked.stdout.trim(), format!("revoked {id}"));
    let runners = h.json(&["runners", "--json"]).await;
    assert_eq!(runners[0]["revoked"], true);
    let unknown = h.muster(&["runner-token", "revoke", "nope"]).await;
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);

    // An agent bound to runners, shown, rebound, refused precisely, and unbound.
    h.ok(&[
        "agent",
        "create",
        "--name",
        "gpu-coder",
        "--kind",
        "codex",
        "--runner",
        "gpu-box",
        "--runner",
        "mac",
    ])
    .await;
    let shown = h.ok(&["agent", "show", "gpu-coder"]).await;
    assert!(
        shown.stdout.contains("runs on:             gpu-box, mac"),
        "{}",
        shown.stdout
    );
    h.muster(&["agent", "edit", "gpu-coder", "--runner", "bad/name"])
        .await
        .fails(1, "runners: runner name \"bad/name\" may contain only");
    h.ok(&["agent", "edit", "gpu-coder", "--any-runner"]).await;
    let shown = h.json(&["agent", "show", "gpu-coder", "--json"]).await;
    assert_eq!(shown["runners"], serde_json::json!([]));
}
