//! Runs in a git worktree, with a run-scoped token: a stand-in agent (a shell script) that edits files,
//! calls the real `muster` binary to comment on and move its issue, and is refused on another issue.
//! Also: no survivors after a normal exit, and cancelling on unassignment.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use muster::domain::*;
use muster_tests::{Backend, git, git_commit_all};
use serde_json::json;
use support::*;

/// Runs git in `dir`, asserting success; returns stdout.
/// A repository with one commit (`README.md`, `src/lib.rs`) in `dir`.
fn repo_in(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# Demo\n").unwrap();
    std::fs::write(repo.join("src/lib.rs"), "pub fn one() -> u8 { 1 }\n").unwrap();
    git_commit_all(&repo, "first");
    repo
}

async fn worktree_run_with_its_own_token(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let repo = repo_in(env.scripts.path());
    env.store
        .set_workspace_repo(env.ws.id, Some(&repo.display().to_string()))
        .await
        .unwrap();
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let other = env.issue("Somebody else's").await;
    let out = env.scripts.path().join("out");
    let muster = env!("CARGO_BIN_EXE_muster");
    let script = env.script(
        "agent.sh",
        &format!(
            r#"cat >/dev/null
set -u
out='{out}'
echo "$MUSTER_TOKEN" > "$out.token"
echo "my token is $MUSTER_TOKEN"
git status --porcelain > "$out.status"
echo 'pub fn two() -> u8 {{ 2 }}' >> src/lib.rs
echo 'notes' > NOTES.md
rm README.md
'{muster}' issue comment "$MUSTER_ISSUE" "hello from the agent" > "$out.comment" 2>&1 || exit 3
'{muster}' issue status "$MUSTER_ISSUE" in_review > "$out.status-move" 2>&1 || exit 4
if '{muster}' issue comment {other} "sneaky" > "$out.refused" 2>&1; then exit 5; fi
if '{muster}' issue create --title "more work" >> "$out.refused" 2>&1; then exit 6; fi
exit 0"#,
            out = out.display(),
            other = other.key,
        ),
    );
    let agent = env.agent("gitter", &script).await;
    let issue = env.issue("Add two").await;
    env.assign(&issue, &agent).await;
    let run = env.the_run(&issue).await;
    let run = env.finished(run.id).await;
    let read =
        |ext: &str| std::fs::read_to_string(format!("{}.{ext}", out.display())).unwrap_or_default();
    assert_eq!(
        run.status,
        RunStatus::Succeeded,
        "{run:?} {}",
        read("refused")
    );

    // The worktree: its own branch from HEAD, the brief hidden from git, removed at the end.
    let branch = format!("muster/{}-r1", issue.key);
    assert_eq!(run.branch.as_deref(), Some(branch.as_str()));
    assert_eq!(read("status"), "", "the brief is not an untracked file");
    let worktree = Path::new(run.worktree.as_deref().unwrap());
    assert!(!worktree.exists(), "the worktree directory is removed");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", &branch]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["NOTES.md", "src/lib.rs"],
        "the agent's work is committed on its branch, without the brief"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "main"]).trim(),
        base,
        "main untouched"
    );
    let stat = run.diff_stat.as_deref().unwrap();
    assert!(stat.contains("3 files changed"), "{stat}");

    // The diff is the run's last event.
    let events = env.events(run.id).await;
    let diff = events.last().unwrap();
    assert_eq!(diff.kind, "diff", "{events:?}");
    assert_eq!(diff.payload["base"], base.as_str());
    assert_eq!(diff.payload["branch"], branch.as_str());
    assert_eq!(diff.payload["truncated"], false);
    assert_eq!(diff.payload["stat"], stat);
    let patch = diff.payload["patch"].as_str().unwrap();
    assert!(
        patch.contains("+pub fn two() -> u8 { 2 }") && patch.contains("-# Demo"),
        "{patch}"
    );
    assert!(!patch.contains("AGENTS.md"), "{patch}");

    // The token: acted as the agent on its issue, refused elsewhere, redacted, dead after the run.
    let comments = env.store.list_comments(issue.id).await.unwrap();
    let said = comments
        .iter()
        .find(|c| c.body == "hello from the agent")
        .unwrap_or_else(|| panic!("{comments:?} {}", read("comment")));
    assert_eq!(said.author, CommentAuthor::Agent(agent.id));
    assert_eq!(said.run_id, Some(run.id));
    let activity = env.store.list_activity(issue.id).await.unwrap();
    assert!(
        activity
            .iter()
            .any(|a| a.actor == CommentAuthor::Agent(agent.id)
                && a.detail.to_string().contains("in_review")),
        "the agent moved its issue itself: {activity:?}"
    );
    let refused = read("refused");
    let expected = format!(
        "this token belongs to run {} and may only act on issue {}",
        run.id, issue.key
    );
    assert_eq!(refused.matches(&expected).count(), 2, "{refused}");
    assert!(
        env.store.list_comments(other.id).await.unwrap().is_empty(),
        "nothing reached the other issue"
    );
    let token = read("token").trim().to_owned();
    assert!(token.starts_with("mst_"), "{token}");
    let log =
        serde_json::to_string(&events.iter().map(|e| &e.payload).collect::<Vec<_>>()).unwrap();
    assert!(!log.contains(&token), "the run's token leaked into its log");
    let after = reqwest::Client::new()
        .get(format!("http://{}/api/v1/issues/{}", env.addr, issue.key))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401, "the token dies with the run");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_run_with_its_own_token_sqlite() {
    worktree_run_with_its_own_token(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn worktree_run_with_its_own_token_postgres() {
    worktree_run_with_its_own_token(Backend::Postgres).await;
}

/// A run token may read its issue but nothing outside its scope: other issues, the issue list, other
/// fields than the status, tokens, pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_token_is_confined_to_its_issue() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let out = env.scripts.path().join("token");
    let script = env.script(
        "holder.sh",
        &format!(
            "cat >/dev/null\necho \"$MUSTER_URL $MUSTER_TOKEN $MUSTER_ISSUE\" > '{0}.tmp'\nmv '{0}.tmp' '{0}'\nwhile :; do echo tick; sleep 0.2; done",
            out.display()
        ),
    );
    let agent = env.agent("holder", &script).await;
    let other = env.issue("Not yours").await;
    let issue = env.issue("Yours").await;
    env.assign(&issue, &agent).await;
    let run = env.the_run(&issue).await;
    let line = poll("the token", || async { std::fs::read_to_string(&out).ok() }).await;
    let parts: Vec<&str> = line.split_whitespace().collect();
    let (url, token, key) = (parts[0], parts[1], parts[2]);
    assert_eq!(url, format!("http://{}", env.addr));
    assert_eq!(key, issue.key.to_string());
    let client = reqwest::Client::new();
    let call = |method: reqwest::Method, path: String, body: serde_json::Value| {
        let req = client
            .request(method, format!("{url}{path}"))
            .bearer_auth(token)
            .json(&body);
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            (
                status,
                resp.json::<serde_json::Value>().await.unwrap_or_default(),
            )
        }
    };
    use reqwest::Method;
    let (status, body) = call(Method::GET, format!("/api/v1/issues/{key}"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        call(Method::GET, "/api/v1/agents".into(), json!({}))
            .await
            .0,
        200
    );
    assert_eq!(
        call(Method::GET, "/api/v1/members".into(), json!({}))
            .await
            .0,
        200
    );
    let refusal = format!(
        "this token belongs to run {} and may only act on issue {}",
        run.id, issue.key
    );
    for (method, path, body) in [
        (
            Method::GET,
            format!("/api/v1/issues/{}", other.key),
            json!({}),
        ),
        (Method::GET, "/api/v1/issues".to_owned(), json!({})),
        (
            Method::POST,
            format!("/api/v1/issues/{}/move", other.key),
            json!({"status": "done"}),
        ),
        (Method::GET, "/api/v1/tokens".to_owned(), json!({})),
        (
            Method::POST,
            "/api/v1/tokens".to_owned(),
            json!({"name": "escape"}),
        ),
        (
            Method::PATCH,
            "/api/v1/workspace".to_owned(),
            json!({"repo_path": null}),
        ),
        (
            Method::POST,
            "/api/v1/agents".to_owned(),
            json!({"name": "x"}),
        ),
    ] {
        let (status, body) = call(method.clone(), path.clone(), body).await;
        assert_eq!(status, 403, "{method} {path}: {body}");
        assert_eq!(
            body["errors"]["token"][0],
            refusal.as_str(),
            "{method} {path}"
        );
    }
    let (status, body) = call(
        Method::PATCH,
        format!("/api/v1/issues/{key}"),
        json!({"assignee": ""}),
    )
    .await;
    assert_eq!(status, 403, "only the status may change: {body}");
    let page = client
        .get(format!("{url}/w/runs"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 403, "pages are for people");
    env.state.cancel(run.id).await.unwrap();
    env.finished(run.id).await;
    let (status, _) = call(Method::GET, format!("/api/v1/issues/{key}"), json!({})).await;
    assert_eq!(status, 401, "revoked with the run");
    env.stop().await;
}

/// The agent exits 0 but leaves `sleep 1000 &` behind: afterwards nothing of its group is alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_survivors_after_a_normal_exit() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let pids = env.scripts.path().join("pids");
    let script = env.script(
        "leaver.sh",
        &format!(
            "cat >/dev/null\nsleep 1000 &\necho \"$(cut -d' ' -f5 /proc/$$/stat) $!\" > '{0}.tmp'\nmv '{0}.tmp' '{0}'\necho done\nexit 0",
            pids.display()
        ),
    );
    let agent = env.agent("leaver", &script).await;
    let issue = env.issue("Leave a mess").await;
    env.assign(&issue, &agent).await;
    let run = env.the_run(&issue).await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let pids = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2);
    // The pids it wrote are its PID namespace's own; the run records the group the runner started.
    let pgid = u32::try_from(run.pid.expect("the run recorded its pid")).unwrap();
    let id = run.id.to_string();
    poll("the background child to be gone", || async {
        run_processes(&id).is_empty().then_some(())
    })
    .await;
    assert!(
        muster_agents::process::group_members(pgid).is_empty(),
        "no process of the group is alive"
    );
    env.stop().await;
}

/// Unassigning the agent, or a person moving the issue to done, cancels the agent's live run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unassigning_or_closing_cancels_the_live_run() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let script = env.script(
        "ticker.sh",
        "cat >/dev/null\nwhile :; do echo tick; sleep 0.2; done",
    );
    let agent = env.agent("ticker", &script).await;
    let running = |issue: Issue| {
        let env = &env;
        async move {
            let run = env.the_run(&issue).await;
            poll("the run to be running", || async {
                let r = env.store.get_run(run.id).await.unwrap();
                (r.status == RunStatus::Running).then_some(r)
            })
            .await
        }
    };
    let first = env.issue("Unassign me").await;
    env.assign(&first, &agent).await;
    let run = running(first.clone()).await;
    let path = format!("/api/v1/issues/{}", first.key);
    env.api(reqwest::Method::PATCH, &path, json!({ "assignee": "" }))
        .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");

    let second = env.issue("Close me").await;
    env.assign(&second, &agent).await;
    let run = running(second.clone()).await;
    let path = format!("/api/v1/issues/{}/move", second.key);
    env.api(reqwest::Method::POST, &path, json!({ "status": "done" }))
        .await;
    let run = env.finished(run.id).await;
    assert_eq!(run.status, RunStatus::Cancelled, "{run:?}");
    let second = env.store.get_issue_by_id(second.id).await.unwrap();
    assert_eq!(second.status, IssueStatus::Done, "the person's move stands");
    env.stop().await;
}
