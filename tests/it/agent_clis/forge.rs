//! Issue 29 with the real pinned Claude Code: a run's work becomes a pull request on a scripted forge,
//! a red check resumes the same session on the same branch — the follow-up's first model request carries
//! the first session and the check's log — and its commit lands on the same pull request's branch.

use super::*;
use muster::domain::{ForgeKind, IssueStatus, IssueTitle, NewIssue, RunStatus};
use muster_tests::forge::{self as scripted, ScriptedForge};
use serde_json::{Value, json};

use super::resume::has_message;
use muster_tests::git;

const TOKEN: &str = "forge-token-claude-0123456789abcdef";
/// The first run's work: one file, and an answer that says so.
const FIRST: &str = "CMD=touch first.txt && echo made-first #";
/// The failing job's log, whose last `CMD=` is what the resumed session is asked to run.
const JOB_LOG: &str =
    "test parser ... FAILED\nerror: expected 3, got 2\nCMD=touch fixed.txt && echo fixed-it #\n";

async fn red_check_scenario(backend: muster_tests::Backend, binary: &Path) {
    let Some(engine) = Engine::start(backend, &CLAUDE, binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    let forge = ScriptedForge::start(ForgeKind::Github, "acme/app", TOKEN)
        .await
        .unwrap();
    let made = engine
        .call(
            reqwest::Method::POST,
            "/api/v1/forges",
            json!({ "kind": "github", "api_url": forge.api_url(), "repo": "acme/app", "token": TOKEN,
                    "auto_open": true }),
        )
        .await;
    let (conn, secret) = (
        made["connection"]["id"].as_str().unwrap().to_owned(),
        made["webhook_secret"].as_str().unwrap().to_owned(),
    );
    let agent = engine
        .agent(
            &CLAUDE,
            &server,
            &[(CLAUDE.key_var, FAKE_KEY, true)],
            |_| {},
        )
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
    let started = Instant::now();
    let pr = loop {
        let prs = engine
            .store
            .list_pull_requests(engine.ws.id, Some(issue.id))
            .await
            .unwrap();
        if let Some(pr) = prs.into_iter().next() {
            break pr;
        }
        assert!(
            started.elapsed() < RUN_DEADLINE,
            "no pull request\n{report}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    forge.set_job_log(7, JOB_LOG);
    let before = server.requests().len();
    let failed = scripted::check_failed(
        ForgeKind::Github,
        "acme/app",
        pr.number,
        &pr.branch,
        &pr.head_sha,
        "test",
        7,
    );
    let url = format!("http://{}/hooks/github/{conn}", engine.addr);
    let status = scripted::send_hook(
        ForgeKind::Github,
        &url,
        &secret,
        "check_run",
        "c-1",
        &failed,
    )
    .await
    .unwrap();
    assert_eq!(status, 202);
    let second = engine.ended(&issue, 1).await;
    let report = run_report(&second, &engine.events(&second).await);
    assert_eq!(second.status, RunStatus::Succeeded, "{backend:?}\n{report}");
    assert_eq!(
        second.session_id, first.session_id,
        "the same session\n{report}"
    );
    let requests = served(&server, &CLAUDE, before);
    let opening: &Value = &requests
        .first()
        .unwrap_or_else(|| panic!("no model request\n{report}"))
        .body;
    assert!(
        has_message(opening, "user", "touch first.txt"),
        "the first session is resent: {opening}"
    );
    assert!(
        has_message(opening, "assistant", "made-first"),
        "its answer too: {opening}"
    );
    assert!(
        has_message(opening, "user", "expected 3, got 2"),
        "the check's log: {opening}"
    );
    // The fix is on the pull request's branch, on the forge, after the first run's commit.
    let tip = git(&forge.repo_dir(), &["rev-parse", &pr.branch]);
    assert_eq!(Some(tip.trim()), second.head_commit.as_deref(), "{report}");
    let files = git(&forge.repo_dir(), &["ls-tree", "--name-only", &pr.branch]);
    assert!(
        files.contains("first.txt") && files.contains("fixed.txt"),
        "{files}"
    );
    assert_eq!(forge.pulls().len(), 1, "the same pull request");
    for run in [&first, &second] {
        let events = serde_json::to_string(&engine.events(run).await).unwrap();
        assert!(!events.contains(TOKEN), "the forge token is in a run's log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn claude_code_fixes_a_red_check_in_its_own_session_on_the_pull_request_branch_sqlite() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    red_check_scenario(muster_tests::Backend::Sqlite, &binary).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn claude_code_fixes_a_red_check_in_its_own_session_on_the_pull_request_branch_postgres() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    red_check_scenario(muster_tests::Backend::Postgres, &binary).await;
}
