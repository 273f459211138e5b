//! Issue 14 with the real pinned CLIs: an ensemble of Claude Code and Codex, both through the run engine
//! against the scripted model server, takes one issue on its own branches from one base commit. The
//! script gives each model its own shell command (`CMD@<model part>=`): Claude writes the right answer,
//! Codex a wrong one, into `answer.txt` inside its sandboxed worktree; the ensemble's check (`sh
//! check.sh`) decides between them, with no review, and the comparison shows what the CLIs reported.

use super::*;
use muster::domain::{IssueStatus, IssueTitle, NewIssue, RunStatus};
use muster_tests::engine::candidate;
use muster_tests::git;
use serde_json::{Value, json};

/// The issue's title, and so the prompt of both candidates: a command per model; each `#` makes the
/// rest of the line (the other model's marker, then the prompt's next sentence) a shell comment.
const TITLE: &str =
    "Find the answer CMD@claude=echo 42 > answer.txt # CMD@gpt=echo 41 > answer.txt #";
/// The ensemble's token budget: far more than the two runs use.
const BUDGET_TOKENS: i64 = 100_000;

async fn ensemble_scenario(claude: &Path, codex: &Path, backend: muster_tests::Backend) {
    let runtimes = vec![
        (CLAUDE.kind, claude.to_path_buf()),
        (CODEX.kind, codex.to_path_buf()),
    ];
    let Some(engine) = Engine::start_with(backend, runtimes).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let repo = muster_tests::ensemble::repo_with_check(dir.path());
    let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    engine
        .call(
            reqwest::Method::PATCH,
            "/api/v1/workspace",
            json!({ "repo_path": repo.display().to_string() }),
        )
        .await;
    let claude_agent = engine
        .agent(
            &CLAUDE,
            &server,
            &[("ANTHROPIC_API_KEY", FAKE_KEY, true)],
            |_| {},
        )
        .await;
    let codex_agent = engine
        .agent(
            &CODEX,
            &server,
            &[("OPENAI_API_KEY", FAKE_KEY, true)],
            |_| {},
        )
        .await;
    let (claude_name, codex_name) = (
        claude_agent.profile.name.as_str(),
        codex_agent.profile.name.as_str(),
    );
    engine
        .call(
            reqwest::Method::POST,
            "/api/v1/ensembles",
            json!({"name": "real-clis", "members": [claude_name, codex_name], "check": "sh check.sh",
                   "check_timeout_secs": 60, "early_stop": "all", "budget_tokens": BUDGET_TOKENS}),
        )
        .await;
    let mut new = NewIssue::new(IssueTitle::parse(TITLE).unwrap());
    new.status = IssueStatus::Todo;
    let issue = engine.store.create_issue(engine.ws.id, &new).await.unwrap();
    let path = format!("/api/v1/issues/{}/ensemble", issue.key);
    let assigned = engine
        .call(
            reqwest::Method::POST,
            &path,
            json!({"ensemble": "real-clis"}),
        )
        .await;
    assert_eq!(assigned["base_commit"], base.as_str(), "{backend:?}");

    // Decided: both candidates ended and were checked.
    let started = Instant::now();
    let c = loop {
        let c = engine.call(reqwest::Method::GET, &path, Value::Null).await;
        if matches!(c["status"].as_str(), Some("decided" | "chosen")) {
            break c;
        }
        assert!(
            started.elapsed() < RUN_DEADLINE * 2,
            "{backend:?}: the ensemble was not decided: {c:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut reports = String::new();
    let mut logs = Vec::new();
    for run in engine.store.list_runs_for_issue(issue.id).await.unwrap() {
        let events = engine.events(&run).await;
        reports.push_str(&run_report(&run, &events));
        logs.push((run.id.0, events));
    }
    let report = format!("{backend:?}\n{c:#}\n{reports}");
    let (cl, cx) = (candidate(&c, claude_name), candidate(&c, codex_name));
    assert_eq!(
        (cl["runtime"].as_str(), cx["runtime"].as_str()),
        (Some("claude"), Some("codex")),
        "{report}"
    );

    // Both ran as real processes: each CLI asked the model server (on its own protocol, tools offered)
    // for the shell call and then for its answer, and succeeded.
    for (cli, v) in [(&CLAUDE, cl), (&CODEX, cx)] {
        assert_eq!(v["status"], RunStatus::Succeeded.to_string(), "{report}");
        let served = served(&server, cli, 0);
        assert_eq!(served.len(), 2, "{}: {report}", cli.binary);
        // The tokens are what the CLI reported for those two replies.
        assert_eq!(
            v["tokens"].as_i64(),
            Some(turn_tokens(cli) * 2),
            "{}: {report}",
            cli.binary
        );
    }
    // Each was started in the sandbox, and its log shows the shell call its model asked for.
    for (v, command) in [(cl, "echo 42 > answer.txt"), (cx, "echo 41 > answer.txt")] {
        let id = v["run_id"].as_str().unwrap();
        let (_, events) = logs
            .iter()
            .find(|(run, _)| run.to_string() == id)
            .unwrap_or_else(|| panic!("no run {id}: {report}"));
        assert!(
            events.iter().any(|e| e.kind == "sandbox"
                && e.payload["mode"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("sandboxed"))),
            "{id}: {report}"
        );
        assert!(
            events
                .iter()
                .any(|e| e.kind == "tool_call" && e.payload["input"].to_string().contains(command)),
            "{id}: {report}"
        );
    }
    // Their shell calls wrote the file in their worktrees, kept on their branches from the base.
    for (v, answer) in [(cl, "42"), (cx, "41")] {
        let branch = v["branch"].as_str().unwrap();
        assert_eq!(
            git(&repo, &["show", &format!("{branch}:answer.txt")]).trim(),
            answer,
            "{branch}: {report}"
        );
        assert_eq!(
            git(&repo, &["merge-base", branch, "main"]).trim(),
            base,
            "{branch}: {report}"
        );
    }

    // The check decided: Claude green with 3 of 3, Codex red.
    assert_eq!(cl["green"], true, "{report}");
    assert_eq!(
        (
            cl["check"]["exit_code"].as_i64(),
            cl["check"]["passed"].as_u64(),
            cl["check"]["failed"].as_u64(),
            cl["check"]["total"].as_u64()
        ),
        (Some(0), Some(3), Some(0), Some(3)),
        "{report}"
    );
    assert_eq!(cx["green"], false, "{report}");
    assert_eq!(
        (
            cx["check"]["exit_code"].as_i64(),
            cx["check"]["passed"].as_u64(),
            cx["check"]["failed"].as_u64()
        ),
        (Some(1), Some(2), Some(1)),
        "{report}"
    );
    assert_eq!(c["green"], 1, "{report}");
    assert_eq!(c["review"], "none", "{report}");
    assert_eq!(c["recommendation"]["agent"], claude_name, "{report}");
    assert_eq!(c["recommendation"]["by_opinion_only"], false, "{report}");

    // The spend is what the CLIs reported: both runs' tokens, inside the budget; Claude priced its own.
    assert_eq!(c["budget_tokens"], BUDGET_TOKENS, "{report}");
    let spent = c["spent_tokens"].as_i64().unwrap();
    assert_eq!(
        spent,
        turn_tokens(&CLAUDE) * 2 + turn_tokens(&CODEX) * 2,
        "{report}"
    );
    assert!(spent > 0 && spent < BUDGET_TOKENS, "{report}");
    assert!(
        cl["cost_usd"].as_f64().is_some_and(|usd| usd > 0.0),
        "{report}"
    );
    assert!(
        c["spent_usd"].as_f64().unwrap() >= cl["cost_usd"].as_f64().unwrap(),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn an_ensemble_of_claude_code_and_codex_is_decided_by_the_check() {
    let (Some(claude), Some(codex)) = (locate(&CLAUDE), locate(&CODEX)) else {
        return;
    };
    ensemble_scenario(&claude, &codex, muster_tests::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn an_ensemble_of_claude_code_and_codex_is_decided_by_the_check_on_postgres() {
    let (Some(claude), Some(codex)) = (locate(&CLAUDE), locate(&CODEX)) else {
        return;
    };
    ensemble_scenario(&claude, &codex, muster_tests::Backend::Postgres).await;
}
