//! Issue 13 with the real pinned CLIs, through the run engine, against the scripted model server: a first
//! run writes a file, a person replies, and the follow-up resumes the CLI's session — the first model
//! request of the second run carries the first session's messages (the earlier prompt and the earlier
//! answer) — in a worktree continuing the first run's branch. With the first run's session files gone,
//! the follow-up starts a fresh session, says so in its log, and its brief carries the thread.

use super::*;
use muster::domain::{IssueStatus, IssueTitle, NewIssue, RunEvent, RunStatus};
use muster_tests::git;
use serde_json::{Value, json};

/// What the first run is asked: the scripted model answers `CMD=` with a shell call (`#` ends the
/// command before the rest of the prompt's line).
const FIRST: &str = "CMD=touch first.txt && echo made-first #";
/// What the first run's shell call prints, and so its answer (`Tool said: …made-first`) says.
const ANSWER: &str = "made-first";
/// The reply: the follow-up's shell call.
const REPLY: &str = "Thanks. Now one more file.\nCMD=touch second.txt";

/// A git repository with one commit, as the workspace's repository.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("README.md"), "resume test\n").unwrap();
    git(dir.path(), &["add", "README.md"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@muster.test",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    );
    dir
}

/// Whether `body` holds a message of `role` whose text contains `needle`, at any depth (Claude's
/// `messages`, Codex's `input` items, OpenCode's chat `messages`).
pub(super) fn has_message(body: &Value, role: &str, needle: &str) -> bool {
    match body {
        Value::Object(map) => {
            (map.get("role").and_then(Value::as_str) == Some(role)
                && Value::Object(map.clone()).to_string().contains(needle))
                || map.values().any(|v| has_message(v, role, needle))
        }
        Value::Array(items) => items.iter().any(|v| has_message(v, role, needle)),
        _ => false,
    }
}

fn session_event(events: &[RunEvent]) -> Value {
    events
        .iter()
        .find(|e| e.kind == "session")
        .map(|e| e.payload.clone())
        .unwrap_or(Value::Null)
}

/// `fresh`: the first run's `HOME` is removed before the reply, so its session cannot be resumed.
async fn resume_scenario(cli: &Cli, binary: &Path, backend: muster_tests::Backend, fresh: bool) {
    let Some(engine) = Engine::start(backend, cli, binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    let repo = repository();
    engine
        .call(
            reqwest::Method::PATCH,
            "/api/v1/workspace",
            json!({ "repo_path": repo.path().display().to_string() }),
        )
        .await;
    let var = cli.key_var;
    let agent = engine
        .agent(cli, &server, &[(var, FAKE_KEY, true)], |_| {})
        .await;
    let mut new = NewIssue::new(IssueTitle::parse(FIRST).unwrap());
    new.status = IssueStatus::Todo;
    let issue = engine.store.create_issue(engine.ws.id, &new).await.unwrap();
    engine
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v1/issues/{}", issue.key),
            json!({ "assignee": agent.profile.name.as_str() }),
        )
        .await;
    let first = engine.ended(&issue, 0).await;
    let report = run_report(&first, &engine.events(&first).await);
    assert_eq!(first.status, RunStatus::Succeeded, "{backend:?}\n{report}");
    let (first_branch, first_session) = (first.branch.clone().unwrap(), first.session_id.clone());
    assert!(first_session.is_some(), "{report}");
    let first_tip = git(repo.path(), &["rev-parse", &first_branch]);
    assert!(
        git(repo.path(), &["ls-tree", "--name-only", &first_branch]).contains("first.txt"),
        "{report}"
    );
    if fresh {
        let home = engine.runs_dir.join(first.id.to_string()).join("home");
        std::fs::remove_dir_all(&home).unwrap();
    }

    let before = server.requests().len();
    engine
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/comments", issue.key),
            json!({ "body": REPLY }),
        )
        .await;
    let second = engine.ended(&issue, 1).await;
    let events = engine.events(&second).await;
    let report = run_report(&second, &events);
    assert_eq!(second.status, RunStatus::Succeeded, "{backend:?}\n{report}");
    assert_eq!(second.previous_run_id, Some(first.id), "{report}");
    let session = session_event(&events);
    assert_eq!(session["previous_run_id"], first.id.to_string(), "{report}");
    assert_eq!(session["from_branch"], first_branch.as_str(), "{report}");
    let requests = served(&server, cli, before);
    let opening = &requests
        .first()
        .unwrap_or_else(|| panic!("no model request\n{report}"))
        .body;
    if fresh {
        assert_eq!(session["resumed"], false, "{report}");
        assert!(
            session["reason"]
                .as_str()
                .is_some_and(|r| r.contains("not on this runner")),
            "{report}"
        );
        assert!(
            !has_message(opening, "assistant", ANSWER),
            "a fresh session has no earlier answer: {opening}"
        );
        // The brief carries the thread: the first run's summary (its answer) and the reply.
        let sent = opening.to_string();
        assert!(
            sent.contains(TOOL_SAID.trim()) && sent.contains("touch second.txt"),
            "{sent}"
        );
    } else {
        assert_eq!(session["resumed"], true, "{report}");
        assert_eq!(
            session["session_id"].as_str(),
            first_session.as_deref(),
            "{report}"
        );
        // The second run's first request carries the first session: its prompt and its answer.
        assert!(
            has_message(opening, "user", "touch first.txt"),
            "the earlier prompt is resent: {opening}"
        );
        assert!(
            has_message(opening, "assistant", ANSWER),
            "the earlier answer is resent: {opening}"
        );
        assert!(
            has_message(opening, "user", "touch second.txt"),
            "the reply is the new prompt: {opening}"
        );
    }
    // Either way the work advances the line's one branch, from the first run's commit.
    let branch = second.branch.clone().unwrap();
    assert_eq!(branch, first_branch, "one branch per line of work");
    assert_ne!(
        git(repo.path(), &["rev-parse", &branch]).trim(),
        first_tip.trim(),
        "the follow-up's commit is on the branch"
    );
    let files = git(repo.path(), &["ls-tree", "--name-only", &branch]);
    assert!(
        files.contains("first.txt") && files.contains("second.txt"),
        "{files}\n{report}"
    );
    let ancestor = std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", first_tip.trim(), &branch])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(
        ancestor.success(),
        "{branch} continues {first_branch}\n{report}"
    );
}

macro_rules! resume_tests {
    ($($name:ident: $cli:expr, $backend:ident, $fresh:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        #[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
        async fn $name() {
            let Some(binary) = locate(&$cli) else { return };
            resume_scenario(&$cli, &binary, muster_tests::Backend::$backend, $fresh).await;
        }
    )*};
}

resume_tests! {
    claude_code_resumes_its_session_on_a_reply: CLAUDE, Sqlite, false;
    claude_code_starts_fresh_with_the_thread_when_the_session_is_gone: CLAUDE, Postgres, true;
    codex_resumes_its_session_on_a_reply: CODEX, Postgres, false;
    codex_starts_fresh_with_the_thread_when_the_session_is_gone: CODEX, Sqlite, true;
    opencode_resumes_its_session_on_a_reply: OPENCODE, Sqlite, false;
    opencode_starts_fresh_with_the_thread_when_the_session_is_gone: OPENCODE, Postgres, true;
}
