//! The pull-request loop against a scripted forge on loopback (GitHub-, GitLab- and Gitea-shaped APIs,
//! the repository over real smart HTTP, signed webhooks): connecting, a run's work becoming a pull
//! request, checks, reviews and comments resuming the agent within its rounds, merges and closes moving
//! the issue, work for a merged pull request going to a new branch, refused deliveries, and the forge
//! token out of every agent's reach.

mod api;
mod hooks;
mod pull_loop;

use std::path::PathBuf;

use muster::domain::*;
use muster_tests::engine::*;
use muster_tests::forge::ScriptedForge;
use serde_json::{Value, json};

/// The only token the scripted forges accept.
pub const TOKEN: &str = "forge-token-s3cr3t-0123456789abcdef";
/// The project every scripted forge serves.
pub const REPO: &str = "acme/app";

/// A scripted forge of `kind` and a connection of the workspace to it (made through the API as the
/// owner, with `settings` merged into the body): the forge, the connection's id and its webhook secret.
pub async fn connected(
    env: &Env,
    kind: ForgeKind,
    settings: Value,
) -> (ScriptedForge, String, String) {
    let forge = ScriptedForge::start(kind, REPO, TOKEN).await.unwrap();
    let mut body = json!({
        "kind": kind.as_str(),
        "api_url": forge.api_url(),
        "repo": REPO,
        "token": TOKEN,
    });
    for (k, v) in settings.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (status, text) = env
        .call(reqwest::Method::POST, "/api/v1/forges", Some(body))
        .await;
    assert_eq!(status, 201, "{text}");
    let made: Value = serde_json::from_str(&text).unwrap();
    let id = made["connection"]["id"].as_str().unwrap().to_owned();
    let secret = made["webhook_secret"].as_str().unwrap().to_owned();
    (forge, id, secret)
}

/// The webhook URL of connection `id` of `kind` on the test server.
pub fn hook_url(env: &Env, kind: ForgeKind, id: &str) -> String {
    env.url(&format!("/hooks/{kind}/{id}"))
}

/// An agent whose every run saves its prompt (stdin) as `<scripts>/prompt-<run id>`, writes one new file
/// into the worktree (so every run has work to push), and dumps everything it can read that might hold a
/// credential — its environment, git's config, the files under its HOME and worktree, other processes'
/// environments — into `<scripts>/seen-<run id>`, which the tests search for the forge's token.
pub fn probe_agent_script(env: &Env) -> PathBuf {
    let out = env.scripts.path().display().to_string();
    env.script(
        "probe.sh",
        &format!(
            r#"out='{out}'
cat > "$out/prompt-$MUSTER_RUN_ID"
{{
  env
  git config --list --show-origin 2>&1
  find "$HOME" . -type f -size -256k 2>/dev/null | while read -r f; do echo "== $f"; cat "$f" 2>/dev/null; done
  for p in /proc/[0-9]*/environ; do tr '\0' '\n' < "$p" 2>/dev/null; done
  ps -eo args 2>/dev/null
}} > "$out/seen-$MUSTER_RUN_ID" 2>&1
echo "work of $MUSTER_RUN_ID" > "work-$MUSTER_RUN_ID.txt"
exit 0"#
        ),
    )
}

/// The prompt run `run` was given.
pub fn prompt_of(env: &Env, run: RunId) -> String {
    std::fs::read_to_string(env.scripts.path().join(format!("prompt-{run}"))).unwrap_or_default()
}

/// Asserts that nothing run `run`'s agent could read held the forge's token.
pub fn assert_token_unseen(env: &Env, run: RunId) {
    let path = env.scripts.path().join(format!("seen-{run}"));
    let seen = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(seen.len() > 100, "the probe saw nothing at all: {seen}");
    assert!(
        !seen.contains(TOKEN),
        "the forge token reached the agent of run {run}"
    );
}

/// The tip of `branch` in the forge's repository (`None`: no such branch).
pub fn forge_tip(forge: &ScriptedForge, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .current_dir(forge.repo_dir())
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Every run on `issue`, oldest first, once there are `n` and all have ended.
pub async fn runs_ended(env: &Env, issue: &Issue, n: usize) -> Vec<Run> {
    poll(&format!("{n} runs on {} to end", issue.key), || async {
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        (runs.len() == n && runs.iter().all(|r| r.status.is_terminal())).then_some(runs)
    })
    .await
}

/// The issue's pull requests once there are `n`, newest first.
pub async fn pulls_recorded(env: &Env, issue: &Issue, n: usize) -> Vec<PullRequest> {
    poll(&format!("{n} pull requests on {}", issue.key), || async {
        let all = env
            .store
            .list_pull_requests(env.ws.id, Some(issue.id))
            .await
            .unwrap();
        (all.len() == n).then_some(all)
    })
    .await
}

/// The issue's comments' bodies.
pub async fn thread(env: &Env, issue: &Issue) -> String {
    env.store
        .list_comments(issue.id)
        .await
        .unwrap()
        .iter()
        .map(|c| c.body.clone())
        .collect::<Vec<_>>()
        .join("\n---\n")
}
