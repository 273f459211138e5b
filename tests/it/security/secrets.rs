//! Secrets never leave (issue 11, "Members read other people's secrets"). The attack: an owner's agent
//! with a secret variable `API_KEY` runs a command that prints the secret plainly, reversed, base64'd (both
//! alphabets, and inside a longer line), as hex, writes it into a file of its worktree, prints its run
//! token, posts it all as a comment with `muster issue comment` and its run token, and puts it in its
//! final summary; a second agent fails with the secret in its error. Before, the summary, the comment, the
//! issue page and every encoding showed it. Now the secret, each encoding and the run token appear
//! nowhere: not in the events (API), the run, the summary comment, the agent's comment, the issue page,
//! the run page, the inbox — while the honest parts of the same output are all there.
//!
//! Real server, real run engine, real `custom` agent processes, the real `muster` CLI; both backends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use muster::domain::*;
use muster_tests::engine::{Env, quick_stops};
use muster_tests::seed;
use muster_tests::{Backend, TestDb, muster_bin};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The owner's secret: long enough for every encoding to be looked for.
const SECRET: &str = "sk-live-Q7f3x9KpL2mZ8vW4";
/// The longest a run may take here.
const DEADLINE: Duration = Duration::from_secs(60);

both_backends!(an_agent_cannot_leak_its_secret_through_its_output,);

/// Every form of the secret the attack prints, as the shell commands compute them.
fn forms() -> Vec<(&'static str, String)> {
    let reversed: String = SECRET.chars().rev().collect();
    vec![
        ("plain", SECRET.to_owned()),
        ("reversed", reversed),
        ("base64", STANDARD.encode(SECRET)),
        (
            "base64 inside a line",
            // `echo "API_KEY=$API_KEY" | base64`: the secret starts 8 bytes in (alignment 2).
            STANDARD.encode(format!("API_KEY={SECRET}\n"))[11..40].to_owned(),
        ),
        ("url-safe base64", URL_SAFE_NO_PAD.encode(SECRET)),
        ("hex", muster::auth::hex(SECRET.as_bytes())),
    ]
}

/// Asserts that no form of the secret and no run token is in `text` (`what` names where).
fn assert_clean(what: &str, text: &str) {
    for (name, form) in forms() {
        assert!(
            !text.contains(&form),
            "the {name} secret is in {what}: {text}"
        );
    }
    // Run tokens are `mst_` and 64 hex digits; none may show (the owner's own token never does either).
    let kind = format!("{}_", muster::auth::API_TOKEN_KIND);
    for (i, _) in text.match_indices(&kind) {
        let rest = &text[i + kind.len()..];
        let hex = rest.chars().take_while(char::is_ascii_hexdigit).count();
        assert!(hex < 64, "a token is in {what}: {text}");
    }
}

/// The run engine's [`Env`] on a workspace whose repository has one commit.
async fn start(backend: Backend) -> Option<Env> {
    let db = TestDb::new(backend).await?;
    let store = db.store().await;
    let owner = seed::person("owner@secrets.test", "owner");
    let (owner, ws) = seed::owner_of(&store, owner, ("Secrets", "secrets", "SEC")).await;
    let repo = db.dir.path().join("repo");
    muster_tests::demo_repo(&repo);
    store
        .set_workspace_repo(ws.id, Some(&repo.display().to_string()))
        .await
        .unwrap();
    Some(Env::boot_with(db, store, ws, owner.id, |_| {}, quick_stops()).await)
}

/// The owner creates a `custom` agent running `script`, with the secret `API_KEY`, which the answer
/// does not show.
async fn agent(w: &Env, name: &str, script: &Path) {
    let text = w
        .create_agent(json!({
            "name": name,
            "kind": "custom",
            "command": script.display().to_string(),
            "max_retries": 0,
            "env": [{ "key": "API_KEY", "value": SECRET, "secret": true }],
        }))
        .await;
    assert!(!text.contains(SECRET), "{text}");
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn an_agent_cannot_leak_its_secret_through_its_output(backend: Backend) {
    let Some(w) = start(backend).await else {
        return;
    };
    let muster = muster_bin();
    let leaker = script(
        w.scripts.path(),
        "leak.sh",
        &format!(
            r#"cat >/dev/null
k="$API_KEY"
echo "plain: $k"
echo "reversed: $(printf %s "$k" | rev)"
echo "base64: $(printf %s "$k" | base64 -w0)"
echo "line: $(echo "API_KEY=$k" | base64 -w0)"
echo "url-safe: $(printf %s "$k" | base64 -w0 | tr '+/' '-_' | tr -d '=')"
echo "hex: $(printf %s "$k" | od -An -tx1 | tr -d ' \n')"
echo "digest: $(printf %s "$k" | sha256sum | cut -d' ' -f1)"
echo "my token: $MUSTER_TOKEN" >&2
echo "$k" > leaked.txt
echo "honest work" > notes.md
'{muster}' issue comment "$MUSTER_ISSUE" "agent says $k and $(printf %s "$k" | rev) and $(printf %s "$k" | base64 -w0) with $MUSTER_TOKEN" || exit 3
printf '{{"type":"result","subtype":"success","is_error":false,"result":"summary: %s %s done"}}\n' "$k" "$(printf %s "$k" | base64 -w0)"
"#,
            muster = muster.display()
        ),
    );
    let failer = script(
        w.scripts.path(),
        "fail.sh",
        r#"cat >/dev/null
printf '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"cannot use key %s (%s)"}\n' "$API_KEY" "$(printf %s "$API_KEY" | rev)"
exit 1"#,
    );
    agent(&w, "leaker", &leaker).await;
    agent(&w, "failer", &failer).await;
    let leaked_key = w.file_assigned("Leak it", "", "leaker").await;
    let failed_key = w.file_assigned("Fail with it", "", "failer").await;
    let run = w
        .settled(&leaked_key, IssueStatus::InReview, DEADLINE)
        .await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let failed = w.settled(&failed_key, IssueStatus::Todo, DEADLINE).await;
    assert_eq!(failed.status, RunStatus::Failed, "{failed:?}");
    w.inbox_about(failed.id).await;
    let inbox = w.inbox().await;

    // Everything the owner can read about both runs.
    let slug = w.ws.slug.as_str().to_owned();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (key, run) in [(&leaked_key, &run), (&failed_key, &failed)] {
        for path in [
            format!("/api/v1/runs/{}/events", run.id),
            format!("/api/v1/runs/{}", run.id),
            format!("/api/v1/issues/{key}/comments"),
            format!("/api/v1/issues/{key}"),
            format!("/w/{slug}/issues/{key}"),
            format!("/w/{slug}/runs/{}", run.id),
        ] {
            let text = w.page(&path).await;
            seen.push((path, text));
        }
    }
    seen.push((
        format!("/w/{slug}/inbox"),
        w.page(&format!("/w/{slug}/inbox")).await,
    ));
    seen.push(("the inbox".into(), format!("{inbox:?}")));
    for (what, text) in &seen {
        assert_clean(what, text);
    }

    // The honest parts are all there: each line (with the secret replaced), proof that the agent had
    // the secret (a digest is not an encoding the redactor can undo), its comment, its work, its summary.
    let events = &seen[0].1;
    for line in [
        "plain: [redacted]",
        "reversed: [redacted]",
        "base64: [redacted]",
        "url-safe: [redacted]",
        "hex: [redacted]",
        "my token: [redacted]",
    ] {
        assert!(events.contains(line), "{line:?} not in {events}");
    }
    let digest = muster::auth::hash_secret(SECRET);
    assert!(events.contains(&format!("digest: {digest}")), "{events}");
    let diff: Vec<Value> = serde_json::from_str::<Value>(events).unwrap()["events"]
        .as_array()
        .map(|e| e.iter().filter(|e| e["kind"] == "diff").cloned().collect())
        .unwrap_or_default();
    let patch = diff
        .first()
        .and_then(|d| d["payload"]["patch"].as_str())
        .unwrap_or_else(|| panic!("no diff event in {events}"));
    assert!(patch.contains("+honest work"), "{patch}");
    assert!(patch.contains("+[redacted]"), "{patch}");
    let comments = &seen[2].1;
    assert!(
        comments.contains("agent says [redacted] and [redacted] and [redacted] with [redacted]"),
        "{comments}"
    );
    assert!(
        comments.contains("summary: [redacted] [redacted] done"),
        "{comments}"
    );
    let run_json: Value = serde_json::from_str(&seen[1].1).unwrap();
    assert_eq!(run_json["summary"], "summary: [redacted] [redacted] done");
    let failed_events = &seen[6].1;
    assert!(
        failed_events.contains("cannot use key [redacted] ([redacted])"),
        "{failed_events}"
    );
    let item = inbox
        .iter()
        .find(|i| i.run_id == Some(failed.id))
        .unwrap_or_else(|| panic!("no inbox item for the failed run: {inbox:?}"));
    // The inbox says what happened in words; the raw error it came from is the run's failure detail,
    // redacted like every other line the agent wrote.
    assert!(!item.message.contains(SECRET), "{}", item.message);
    let (status, text) = w
        .call(
            reqwest::Method::GET,
            &format!("/api/v1/runs/{}", failed.id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK.as_u16(), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    let detail = serde_json::from_str::<Value>(&text).unwrap()["failure_detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        detail.contains("cannot use key [redacted] ([redacted])"),
        "{text}"
    );
    // The agent's comment is the agent's, and a person's comment is kept as written.
    let (status, text) = w
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{leaked_key}/comments"),
            Some(json!({ "body": format!("my own note mentions {SECRET}") })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED.as_u16(), "{text}");
    assert!(
        text.contains(SECRET),
        "a person's own words are not rewritten: {text}"
    );
    w.stop().await;
}
