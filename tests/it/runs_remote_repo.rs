//! Runs of a workspace whose repository is a git URL (a bare repository reached as `file://…`): the
//! runner's mirror is fetched before each run, the sandboxed agent commits in a worktree of that bare
//! mirror, the run's branch is pushed back (or the refusal logged, the run still succeeding), and an
//! unreachable remote fails the run with a clear message. Also the settings API for URLs.

use std::path::{Path, PathBuf};

use muster::domain::*;
use muster_tests::engine::*;
use muster_tests::{Backend, git, git_commit_all};
use serde_json::json;

/// A bare repository `<dir>/remote.git` whose `main` has one commit, and a clone of it
/// (`<dir>/someone`) that plays another person pushing; returns the remote's `file://` URL.
fn remote_in(dir: &Path) -> String {
    let someone = dir.join("someone");
    muster_tests::demo_repo(&someone);
    git(dir, &["clone", "-q", "--bare", "someone", "remote.git"]);
    git(&someone, &["remote", "add", "origin", "../remote.git"]);
    format!("file://{}", dir.join("remote.git").display())
}

/// An agent that records its base (the subject of HEAD's commit) in `<out>.base`, commits one file
/// itself (in the sandbox, in a worktree of the bare mirror) and leaves another for Muster to commit;
/// `<out>.remote` says whether it could list the remote's folder (the sandbox must say no).
fn committing_agent(env: &Env, out: &Path, remote: &Path) -> PathBuf {
    env.script(
        "agent.sh",
        &format!(
            r#"cat >/dev/null
out='{out}'
git log -1 --format=%s > "$out.base"
if ls '{remote}' >/dev/null 2>&1; then echo reachable; else echo unreachable; fi > "$out.remote"
echo 'mine' > MINE.md
git add MINE.md && git commit -qm 'agent commit' > "$out.commit" 2>&1 || exit 3
echo 'left' > LEFT.md
exit 0"#,
            out = out.display(),
            remote = remote.display(),
        ),
    )
}

/// Files `title` and assigns it to a [`committing_agent`] named `name` (writing to `<scripts>/out`, with
/// `remote` the folder it must not reach): the agent, the issue and its finished run.
async fn committing_run(env: &Env, name: &str, remote: &Path, title: &str) -> (Agent, Issue, Run) {
    let out = env.scripts.path().join("out");
    let agent = env.agent(name, &committing_agent(env, &out, remote)).await;
    let issue = env.issue(title).await;
    env.assign(&issue, &agent).await;
    let run = env.finished(env.the_run(&issue).await.id).await;
    (agent, issue, run)
}

/// Sets the workspace's repository through the settings API, as an admin would.
async fn set_repo(env: &Env, repo: &str) -> reqwest::Response {
    reqwest::Client::new()
        .patch(format!("http://{}/api/v1/workspace", env.addr))
        .bearer_auth(&env.token)
        .json(&json!({ "repo_path": repo }))
        .send()
        .await
        .unwrap()
}

async fn runs_fetch_their_base_and_push_their_branch(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let remotes = tempfile::tempdir().unwrap();
    let url = remote_in(remotes.path());
    let remote = remotes.path().join("remote.git");
    let resp = set_repo(&env, &url).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let saved: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        saved["repo_path"],
        url.as_str(),
        "a URL is stored as written"
    );
    let out = env.scripts.path().join("out");
    let read =
        |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap_or_default();
    let (agent, issue, run) = committing_run(&env, "pusher", &remote, "First").await;
    assert_eq!(
        run.status,
        RunStatus::Succeeded,
        "{run:?} {}",
        read("commit")
    );
    assert_eq!(
        read("base"),
        "first\n",
        "the worktree starts at the remote's HEAD"
    );
    let branch = format!("muster/{}-pusher", issue.key);
    assert_eq!(run.branch.as_deref(), Some(branch.as_str()));
    let log = git(&remote, &["log", "--format=%s", &branch]);
    let subjects: Vec<&str> = log.lines().collect();
    assert_eq!(subjects.len(), 3, "{log}");
    assert_eq!(subjects[1..], ["agent commit", "first"], "{log}");
    let files = git(&remote, &["ls-tree", "-r", "--name-only", &branch]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["LEFT.md", "MINE.md", "README.md"],
        "the pushed branch holds the agent's commit and Muster's, without the brief"
    );
    assert_eq!(
        read("remote"),
        "unreachable\n",
        "the sandbox hides the remote"
    );
    let events = env.events(run.id).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    // Sandboxed, with the run's private repository writable for the agent's commits, and of the
    // runner's mirror only its objects, read-only (the private repository's alternates).
    assert_eq!(kinds.first(), Some(&"sandbox"), "{kinds:?}");
    let mirror =
        muster::runner::executor::git::mirror_path(&env.state.config.runs_dir.join("repos"), &url);
    let mirror = std::fs::canonicalize(&mirror).unwrap();
    let rules = events[0].payload["paths"].as_array().unwrap();
    let private = format!("{}/repo/objects", run.id);
    assert!(
        rules
            .iter()
            .any(|r| r["path"].as_str().unwrap().ends_with(&private)),
        "{rules:?}"
    );
    let in_mirror: Vec<_> = rules
        .iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .unwrap()
                .starts_with(&*mirror.to_string_lossy())
        })
        .collect();
    assert_eq!(
        in_mirror,
        [&json!({"path": mirror.join("objects").display().to_string(), "access": "read"})],
        "{rules:?}"
    );
    let diff = events.iter().find(|e| e.kind == "diff").unwrap();
    let base = git(&remote, &["rev-parse", "main"]).trim().to_owned();
    assert_eq!(diff.payload["base"], base.as_str());
    assert_eq!(diff.payload["branch"], branch.as_str());
    let push = events.iter().find(|e| e.kind == "push");
    let push = push.unwrap_or_else(|| panic!("no push event: {kinds:?}"));
    let tip = git(&remote, &["rev-parse", &branch]).trim().to_owned();
    assert_eq!(run.head_commit.as_deref(), Some(tip.as_str()));
    assert_eq!(
        push.payload,
        json!({ "remote": url, "branch": branch, "commit": tip })
    );
    assert!(!kinds.contains(&"error"), "{events:?}");
    assert!(
        git(&remote, &["for-each-ref", "refs/heads"])
            .lines()
            .count()
            == 2,
        "only main and the run's branch"
    );

    // Someone else pushes; the next run starts from that commit (fetched before the run).
    let someone = remotes.path().join("someone");
    std::fs::write(someone.join("NEWS.md"), "news\n").unwrap();
    git_commit_all(&someone, "second");
    git(&someone, &["push", "-q", "origin", "main"]);
    let next = env.issue("Second").await;
    env.assign(&next, &agent).await;
    let run = env.finished(env.the_run(&next).await.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    assert_eq!(
        read("base"),
        "second\n",
        "the mirror was fetched before the run"
    );
    let next_branch = format!("muster/{}-pusher", next.key);
    let files = git(&remote, &["ls-tree", "-r", "--name-only", &next_branch]);
    assert!(
        files.contains("NEWS.md") && files.contains("MINE.md"),
        "{files}"
    );
    env.stop().await;
}

both_backends!(runs_fetch_their_base_and_push_their_branch,);

/// A remote that refuses the push (a pre-receive hook) leaves the run succeeded, with the diff and an
/// `error` event saying why; the branch is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_push_is_logged_and_the_run_still_succeeds() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let remotes = tempfile::tempdir().unwrap();
    let url = remote_in(remotes.path());
    let remote = remotes.path().join("remote.git");
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.store
        .set_workspace_repo(env.ws.id, Some(&url))
        .await
        .unwrap();
    let (_, issue, run) = committing_run(&env, "refused", &remote, "Refused").await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let events = env.events(run.id).await;
    let branch = format!("muster/{}-refused", issue.key);
    let diff = events.iter().find(|e| e.kind == "diff").unwrap();
    assert!(diff.payload["patch"].as_str().unwrap().contains("+mine"));
    assert!(events.iter().all(|e| e.kind != "push"), "{events:?}");
    let error = events.iter().find(|e| e.kind == "error").unwrap();
    let message = error.payload["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("cannot push {branch} to {url}: ")),
        "{message}"
    );
    assert!(
        message.contains("no pushes today") && message.contains("pre-receive hook declined"),
        "{message}"
    );
    assert_eq!(git(&remote, &["branch", "--list", &branch]), "");
    env.stop().await;
}

/// A runner that may not push keeps the branch to itself; the diff still reaches the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_may_not_push_sends_only_the_diff() {
    let db = muster_tests::TestDb::new(Backend::Sqlite).await.unwrap();
    let store = db.store().await;
    let (user, ws) = seed_workspace(&store).await;
    let remotes = tempfile::tempdir().unwrap();
    let url = remote_in(remotes.path());
    let remote = remotes.path().join("remote.git");
    store.set_workspace_repo(ws.id, Some(&url)).await.unwrap();
    let no_push = |c: &mut muster::config::Config| c.push_branches = false;
    let env = Env::boot_with(db, store, ws, user.id, no_push, test_timing()).await;
    let (_, _, run) = committing_run(&env, "keeper", &remote, "Kept").await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let events = env.events(run.id).await;
    assert_eq!(events.last().unwrap().kind, "diff", "{events:?}");
    assert!(events.iter().all(|e| e.kind != "push" && e.kind != "error"));
    let heads = git(
        &remote,
        &["for-each-ref", "--format=%(refname)", "refs/heads"],
    );
    assert_eq!(heads, "refs/heads/main\n");
    env.stop().await;
}

/// A remote that cannot be reached fails the run before the agent starts, saying which and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_remote_fails_the_run_with_a_clear_message() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let remotes = tempfile::tempdir().unwrap();
    let url = format!("file://{}/missing.git", remotes.path().display());
    let resp = set_repo(&env, &url).await;
    assert_eq!(
        resp.status(),
        200,
        "the server does not reach a URL to accept it"
    );
    let started = env.scripts.path().join("started");
    let script = env.script(
        "never.sh",
        &format!("touch '{}'\nexit 0", started.display()),
    );
    let agent = env.agent("stranded", &script).await;
    let issue = env.issue("Unreachable").await;
    env.assign(&issue, &agent).await;
    let run = env.finished(env.the_run(&issue).await.id).await;
    assert_eq!(run.status, RunStatus::Failed);
    // The workspace's repository, not the agent's configuration: reported as a git failure.
    assert_eq!(run.failure_reason, Some(FailureReason::Git));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.starts_with(&format!("cannot clone {url}: ")),
        "{summary}"
    );
    assert!(
        summary.contains("does not appear to be a git repository"),
        "{summary}"
    );
    assert!(!started.exists(), "the agent never started");
    env.stop().await;
}

/// The settings API takes every URL form and refuses credentials in one with a 422 that says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_accept_urls_and_refuse_credentials() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    for url in [
        "https://example.com/org/repo.git",
        "ssh://git@example.com/org/repo.git",
        "git@example.com:org/repo.git",
        "git://example.com/repo.git",
    ] {
        let resp = set_repo(&env, url).await;
        assert_eq!(resp.status(), 200, "{url}");
        let ws = env.store.get_workspace(env.ws.id).await.unwrap();
        assert_eq!(ws.repo_path.as_deref(), Some(url));
    }
    for (url, needle) in [
        (
            "https://user:pass@example.com/repo.git",
            "credential helper",
        ),
        ("ftp://example.com/repo.git", "`ftp://` is not supported"),
        ("relative/repo", "is not an absolute path or a git URL"),
    ] {
        let resp = set_repo(&env, url).await;
        assert_eq!(resp.status(), 422, "{url}");
        let body: serde_json::Value = resp.json().await.unwrap();
        let message = body["errors"]["repo_path"][0].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{url}: {body}");
        assert!(!body.to_string().contains("pass@"), "{body}");
    }
    let ws = env.store.get_workspace(env.ws.id).await.unwrap();
    assert_eq!(
        ws.repo_path.as_deref(),
        Some("git://example.com/repo.git"),
        "a refused setting changes nothing"
    );
    env.stop().await;
}
