//! Planning with real runs: a chain of fourteen blocked issues runs in order with nobody touching it,
//! each agent started exactly once; a parent's agent is woken once, with a digest, when every child
//! has ended; a blocked run's brief names its blocker's work and a stacked edge starts it from the
//! blocker's commit; and a run's token cannot rewire the plan.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use serde_json::json;

both_backends!(
    a_chain_of_fourteen_runs_in_order_with_nobody_touching_it,
    a_parent_is_woken_once_with_a_digest_when_every_child_has_ended
);

/// An agent that records `<issue> start` and `<issue> end` lines in `<scripts>/order`, writes one file
/// into its worktree, saves its prompt and brief (`<scripts>/prompt-<run>`, `brief-<run>`), reports a
/// summary, and moves its own issue to done with its run's token.
pub(crate) fn finisher(env: &Env) -> std::path::PathBuf {
    let out = env.scripts.path().display().to_string();
    env.script(
        "finisher.sh",
        &format!(
            r#"out='{out}'
cat > "$out/prompt-$MUSTER_RUN_ID"
cat AGENTS.md CLAUDE.md > "$out/brief-$MUSTER_RUN_ID" 2>/dev/null
echo "$MUSTER_ISSUE start" >> "$out/order"
echo "work of $MUSTER_ISSUE" > "work-$MUSTER_ISSUE.txt"
code=$(curl -s -o /dev/null -w '%{{http_code}}' -X POST -H "Authorization: Bearer $MUSTER_TOKEN" \
  -H 'content-type: application/json' -d '{{"status": "done"}}' "$MUSTER_URL/api/v1/issues/$MUSTER_ISSUE/move")
echo "$MUSTER_ISSUE end $code" >> "$out/order"
echo '{}'
exit 0"#,
            muster_tests::ensemble::result_line(10, 0.001, "Did the part.")
        ),
    )
}

/// A coordinator that saves each run's prompt (`<scripts>/lead-prompt-<run>`) and reports it coordinated.
pub(crate) fn lead(env: &Env) -> std::path::PathBuf {
    env.script(
        "lead.sh",
        &format!(
            "cat > \"{out}/lead-prompt-$MUSTER_RUN_ID\"\necho '{}'\nexit 0",
            muster_tests::ensemble::result_line(5, 0.001, "Coordinated."),
            out = env.scripts.path().display()
        ),
    )
}

pub(crate) fn order_lines(env: &Env) -> Vec<String> {
    std::fs::read_to_string(env.scripts.path().join("order"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) async fn create(env: &Env, body: serde_json::Value) -> String {
    let (status, text) = env
        .call(reqwest::Method::POST, "/api/v1/issues", Some(body))
        .await;
    assert_eq!(status, 201, "{text}");
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn relate(env: &Env, key: &str, kind: &str, other: &str, stacked: bool) {
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{key}/relations"),
            Some(json!({ "kind": kind, "issue": other, "stacked": stacked })),
        )
        .await;
    assert_eq!(status, 201, "{text}");
}

async fn a_chain_of_fourteen_runs_in_order_with_nobody_touching_it(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    env.use_repo(&muster_tests::ensemble::repo_with_check(env.scripts.path()))
        .await;
    env.agent("night", &finisher(&env)).await;
    // Laid out first (backlog, unassigned), wired, then all assigned at once, as a team would.
    let mut keys = Vec::new();
    for n in 1..=14 {
        keys.push(
            create(
                &env,
                json!({ "title": format!("Step {n}"), "status": "backlog" }),
            )
            .await,
        );
    }
    for pair in keys.windows(2) {
        // Stacked: each step starts from the one before's work.
        relate(&env, &pair[1], "blocked_by", &pair[0], true).await;
    }
    for key in keys.iter().rev() {
        let (status, text) = env
            .call(
                reqwest::Method::PATCH,
                &format!("/api/v1/issues/{key}"),
                Some(json!({ "assignee": "night", "status": "todo" })),
            )
            .await;
        assert_eq!(status, 200, "{text}");
    }
    // Every step queued at once, and only the first may start.
    let plan = env.get(&format!("/api/v1/issues/{}/plan", keys[13])).await;
    assert_eq!(plan["waiting_on"], json!([keys[12]]));

    let last = IssueKey::parse(&keys[13]).unwrap();
    poll_for(
        std::time::Duration::from_secs(240),
        "the fourteenth step done and its run ended",
        || async {
            let issue = env.store.get_issue(env.ws.id, &last).await.unwrap();
            let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
            (issue.status == IssueStatus::Done
                && !runs.is_empty()
                && runs.iter().all(|r| r.status.is_terminal()))
            .then_some(())
        },
    )
    .await;
    // Each started after the one before ended (it moved its issue to done), exactly once.
    let lines = order_lines(&env);
    let mut expected = Vec::new();
    for key in &keys {
        expected.push(format!("{key} start"));
        expected.push(format!("{key} end 200"));
    }
    assert_eq!(lines, expected);
    let mut previous: Option<Run> = None;
    for key in &keys {
        let issue = env
            .store
            .get_issue(env.ws.id, &IssueKey::parse(key).unwrap())
            .await
            .unwrap();
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        assert_eq!(runs.len(), 1, "{key}: {runs:?}");
        assert_eq!(runs[0].status, RunStatus::Succeeded, "{key}");
        // Stacked: it started from the step before's commit.
        if let Some(before) = &previous {
            assert!(before.head_commit.is_some(), "{key}: {before:?}");
            assert_eq!(runs[0].base_commit, before.head_commit, "{key}");
        }
        previous = Some(runs[0].clone());
    }
    // The last branch holds every step's work.
    let tip = previous.and_then(|r| r.head_commit).unwrap();
    let files = muster_tests::git(
        &env.scripts.path().join("repo"),
        &["ls-tree", "--name-only", &tip],
    );
    for key in &keys {
        assert!(files.contains(&format!("work-{key}.txt")), "{key}: {files}");
    }
    // The second step's brief named the first's branch and summary.
    let second = env
        .store
        .get_issue(env.ws.id, &IssueKey::parse(&keys[1]).unwrap())
        .await
        .unwrap();
    let run = &env.store.list_runs_for_issue(second.id).await.unwrap()[0];
    let brief = std::fs::read_to_string(env.scripts.path().join(format!("brief-{}", run.id)))
        .unwrap_or_default();
    assert!(brief.contains("## Blocked by"), "{brief}");
    assert!(brief.contains(&keys[0]), "{brief}");
    assert!(
        brief.contains(&format!("muster/{}-night", keys[0])),
        "{brief}"
    );
    assert!(brief.contains("Did the part."), "{brief}");
}

async fn a_parent_is_woken_once_with_a_digest_when_every_child_has_ended(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    env.agent("worker", &finisher(&env)).await;
    env.agent("lead", &lead(&env)).await;
    let parent = create(
        &env,
        json!({ "title": "Ship the release", "assignee": "lead", "wake_on_children": true }),
    )
    .await;
    let parent_issue = env
        .store
        .get_issue(env.ws.id, &IssueKey::parse(&parent).unwrap())
        .await
        .unwrap();
    // The lead's first run (its assignment) ends before the children start.
    let first = env.the_run(&parent_issue).await;
    env.finished(first.id).await;
    let mut children = Vec::new();
    for title in ["Changelog", "Tag"] {
        children.push(
            create(
                &env,
                json!({ "title": title, "parent": parent, "assignee": "worker" }),
            )
            .await,
        );
    }
    children.push(
        create(
            &env,
            json!({ "title": "Announce", "parent": parent, "status": "backlog" }),
        )
        .await,
    );
    // Two finish on their own; a person cancels the third.
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/move", children[2]),
            Some(json!({ "status": "cancelled" })),
        )
        .await;
    assert_eq!(status, 200, "{text}");

    let woken = poll("the lead's wake-up run", || async {
        let runs = env
            .store
            .list_runs_for_issue(parent_issue.id)
            .await
            .unwrap();
        (runs.len() >= 2 && runs.iter().all(|r| r.status.is_terminal())).then_some(runs)
    })
    .await;
    let prompt = std::fs::read_to_string(
        env.scripts
            .path()
            .join(format!("lead-prompt-{}", woken[1].id)),
    )
    .unwrap();
    assert!(
        prompt.contains(&format!("Every sub-issue of {parent} has ended")),
        "{prompt}"
    );
    for key in &children {
        assert!(prompt.contains(key.as_str()), "{key} missing: {prompt}");
    }
    assert!(prompt.contains("Did the part."), "{prompt}");
    assert!(prompt.contains("Announce — cancelled"), "{prompt}");
    assert!(prompt.contains("(2 done, 1 cancelled"), "{prompt}");
    assert_eq!(
        woken[1].previous_run_id,
        Some(first.id),
        "it continues the lead's line"
    );
    // Once: nothing is left for the sweep (which looks for untaken fan-ins) to wake.
    assert!(env.store.fan_ins_due(10).await.unwrap().is_empty());
    assert!(!env.store.take_fan_in(parent_issue.id).await.unwrap());
    assert_eq!(
        env.store
            .list_runs_for_issue(parent_issue.id)
            .await
            .unwrap()
            .len(),
        2,
        "woken exactly once"
    );
    let thread = env.store.list_comments(parent_issue.id).await.unwrap();
    assert_eq!(
        thread
            .iter()
            .filter(|c| c.body.contains("Every sub-issue of"))
            .count(),
        1
    );
}

/// A run's token files unassigned sub-issues of its own issue and reads plans; it cannot file elsewhere,
/// assign, turn on a fan-in, rewire relations or move its issue under another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_token_files_sub_issues_of_its_own_issue_and_rewires_nothing() {
    let env = Env::start(Backend::Sqlite).await.unwrap();
    let other = env.issue("Not yours").await;
    let held = env.hold_run("holder", "Yours").await;
    let (issue, run, key) = (&held.issue, &held.run, held.key.as_str());
    let call = |method: reqwest::Method, path: String, body: serde_json::Value| {
        let held = &held;
        async move { held.call(method, &path, body).await }
    };
    use reqwest::Method;
    let refused = [
        (
            Method::POST,
            "/api/v1/issues".to_owned(),
            json!({ "title": "Top level" }),
        ),
        (
            Method::POST,
            "/api/v1/issues".to_owned(),
            json!({ "title": "Elsewhere", "parent": other.key.to_string() }),
        ),
        (
            Method::POST,
            "/api/v1/issues".to_owned(),
            json!({ "title": "Assigned", "parent": key, "assignee": "holder" }),
        ),
        (
            Method::POST,
            "/api/v1/issues".to_owned(),
            json!({ "title": "Fan", "parent": key, "wake_on_children": true }),
        ),
        (
            Method::POST,
            format!("/api/v1/issues/{key}/relations"),
            json!({ "kind": "blocked_by", "issue": other.key.to_string() }),
        ),
        (
            Method::DELETE,
            format!("/api/v1/issues/{key}/relations/blocked_by/{}", other.key),
            json!({}),
        ),
        (
            Method::PATCH,
            format!("/api/v1/issues/{key}"),
            json!({ "parent": other.key.to_string() }),
        ),
        (
            Method::PATCH,
            format!("/api/v1/issues/{key}"),
            json!({ "wake_on_children": true }),
        ),
    ];
    for (method, path, body) in refused {
        let (status, text) = call(method.clone(), path.clone(), body.clone()).await;
        assert_eq!(status, 403, "{method} {path} {body}: {text}");
    }
    let (status, text) = call(
        Method::POST,
        "/api/v1/issues".to_owned(),
        json!({ "title": "A part of mine", "parent": key }),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    let (status, text) = call(Method::GET, format!("/api/v1/issues/{key}/plan"), json!({})).await;
    assert_eq!(status, 200, "{text}");
    let plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(plan["children"][0]["title"], "A part of mine");
    assert_eq!(plan["children"][0]["assignee"], serde_json::Value::Null);
    // Nothing else changed: no relation, no other parent, no fan-in, one issue more.
    assert!(env.store.list_links(issue.id).await.unwrap().is_empty());
    assert_eq!(
        env.store.get_issue_by_id(issue.id).await.unwrap().parent,
        None
    );
    assert!(!env.store.fan_in(issue.id).await.unwrap());
    assert!(env.store.list_children(other.id).await.unwrap().is_empty());
    env.state.cancel(run.id).await.unwrap();
}
