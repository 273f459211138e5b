//! Issue 13, end to end: a real server in-process with its embedded runner and `custom` stand-in agents
//! (shell scripts, real processes) that use the real `muster` CLI with their run's token. A person's reply
//! queues a follow-up continuing the agent's last run, comments arriving while it is queued fold into it
//! (and reach the agent's prompt), an agent's own comments never trigger itself, and agents mentioning
//! each other stop at the loop guard's depth limit or hourly cap with a Muster comment and an inbox item.

use std::path::{Path, PathBuf};

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use serde_json::json;

/// Posts a comment through the real CLI as the owner: `muster issue comment KEY BODY`.
async fn comment_cli(env: &Env, issue: &Issue, body: &str) {
    let key = issue.key.to_string();
    env.muster(&["issue", "comment", &key, body]).await;
}

/// A stand-in agent that appends its prompt (stdin) to `<scripts>/<name>.prompts`, runs `then` (shell,
/// may use the CLI as `$MUSTER`), and replays a real Claude stream.
fn stand_in(env: &Env, name: &str, then: &str) -> (PathBuf, PathBuf) {
    let replay = env.fixture("text.jsonl");
    let prompts = env.scripts.path().join(format!("{name}.prompts"));
    let script = env.script(
        &format!("{name}.sh"),
        &format!(
            "MUSTER='{bin}'\ncat >> '{prompts}'\necho '=== end of prompt' >> '{prompts}'\n{then}\ncat '{replay}'",
            prompts = prompts.display(),
            replay = replay.display(),
            bin = muster_tests::muster_bin().display(),
        ),
    );
    (script, prompts)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

async fn runs_of(env: &Env, issue: &Issue) -> Vec<Run> {
    env.store.list_runs_for_issue(issue.id).await.unwrap()
}

async fn reply_queues_a_follow_up_that_folds_comments(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    // The agent comments on its own issue, mentioning itself: neither triggers it.
    let (script, prompts) = stand_in(
        &env,
        "coder",
        r#"if [ ! -e "$0.once" ]; then touch "$0.once"; "$MUSTER" issue comment "$MUSTER_ISSUE" "note to self, @coder: done" || exit 3; fi"#,
    );
    let agent = env.agent("coder", &script).await;
    let issue = env.issue("Make it work").await;
    env.assign(&issue, &agent).await;
    let first = env.finished(env.the_run(&issue).await.id).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{first:?}");
    assert_eq!(first.trigger, RunTrigger::Assignment);
    let issue = env.issue_reaches(&issue, IssueStatus::InReview).await;
    let comments = env.store.list_comments(issue.id).await.unwrap();
    assert!(
        comments
            .iter()
            .any(|c| c.author == CommentAuthor::Agent(agent.id) && c.body.contains("note to self")),
        "{comments:?}"
    );
    assert_eq!(
        runs_of(&env, &issue).await.len(),
        1,
        "an agent's own comment (even mentioning itself) does not trigger it"
    );

    // Hold the follow-up in the queue: the agent may run only on a runner that does not exist.
    let agent = env
        .tweak(&agent, |p| p.runners = vec!["elsewhere".to_owned()])
        .await;
    comment_cli(&env, &issue, "Good, now also handle the empty file case.").await;
    let follow = poll("the follow-up to be queued", || async {
        runs_of(&env, &issue)
            .await
            .into_iter()
            .find(|r| r.id != first.id)
    })
    .await;
    assert_eq!(follow.status, RunStatus::Queued);
    assert_eq!(follow.trigger, RunTrigger::Comment);
    assert_eq!(follow.previous_run_id, Some(first.id));
    assert_eq!(follow.chain_depth, 0);
    let reply = env
        .store
        .list_comments(issue.id)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.body.contains("empty file"))
        .unwrap();
    assert_eq!(follow.trigger_comment_id, Some(reply.id));
    let second = env
        .comment(&issue, "And keep the error message short.")
        .await;
    let second_id: CommentId = second["id"].as_str().unwrap().parse().unwrap();
    let runs = runs_of(&env, &issue).await;
    assert_eq!(runs.len(), 2, "folded, not a second queued run: {runs:?}");
    assert_eq!(
        env.store.list_run_comments(follow.id).await.unwrap(),
        vec![reply.id, second_id]
    );

    // The run API shows what triggered it.
    let run_json = env.get(&format!("/api/v1/runs/{}", follow.id)).await;
    assert_eq!(run_json["trigger"], "comment", "{run_json}");
    assert_eq!(run_json["trigger_comment_id"], reply.id.to_string());
    assert_eq!(run_json["previous_run_id"], first.id.to_string());

    // Let it run: its prompt carries both comments, with their author.
    env.tweak(&agent, |p| p.runners = Vec::new()).await;
    env.state.runs.wake();
    let follow = env.finished(follow.id).await;
    assert_eq!(follow.status, RunStatus::Succeeded, "{follow:?}");
    // It continued the first run's session: a custom command gets the earlier HOME and the session id.
    let events = env.events(follow.id).await;
    let session = events
        .iter()
        .find(|e| e.kind == "session")
        .map(|e| e.payload.clone())
        .unwrap_or_default();
    assert_eq!(session["resumed"], true, "{session}");
    assert_eq!(
        session["previous_run_id"],
        first.id.to_string(),
        "{session}"
    );
    assert_eq!(session["session_id"].as_str(), first.session_id.as_deref());
    let all = read(&prompts);
    let last = all
        .split("=== end of prompt")
        .filter(|p| !p.trim().is_empty())
        .last()
        .unwrap();
    assert!(last.contains("New comments since your last run:"), "{last}");
    let (a, b) = (
        last.find("Good, now also handle the empty file case.")
            .expect(last),
        last.find("And keep the error message short.").expect(last),
    );
    assert!(a < b, "oldest first: {last}");
    assert!(last.contains("owner:"), "the author is named: {last}");
    let first_prompt = all.split("=== end of prompt").next().unwrap();
    assert!(
        !first_prompt.contains("New comments"),
        "an assignment's prompt has no new comments: {first_prompt}"
    );
    assert_eq!(runs_of(&env, &issue).await.len(), 2);
    env.stop().await;
}

both_backends!(
    reply_queues_a_follow_up_that_folds_comments,
    mention_loop_stops_at_the_depth_limit,
    mention_loop_stops_at_the_hourly_cap,
    loop_guard_settings_are_validated,
    issue_body_mentions_queue_and_parked_issues_take_no_replies,
    a_comment_during_a_live_run_waits_for_its_end,
);

/// Two stand-in agents that mention each other forever, through the CLI with their run's token.
async fn ping_pong(env: &Env) -> Issue {
    for (me, other) in [("ping", "pong"), ("pong", "ping")] {
        let (script, _) = stand_in(
            env,
            me,
            &format!(r#""$MUSTER" issue comment "$MUSTER_ISSUE" "@{other} your turn" || exit 3"#),
        );
        env.agent(me, &script).await;
    }
    let issue = env.issue("Play forever").await;
    comment_cli(env, &issue, "@ping start the game").await;
    issue
}

/// The Muster comment saying the loop guard stopped the chain, once it exists.
async fn guard_comment(env: &Env, issue: &Issue) -> Comment {
    poll("the loop guard's comment", || async {
        env.store
            .list_comments(issue.id)
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.author == CommentAuthor::System && c.body.contains("Loop guard"))
    })
    .await
}

async fn settled(env: &Env, issue: &Issue) -> Vec<Run> {
    poll("every run to end", || async {
        let runs = runs_of(env, issue).await;
        runs.iter().all(|r| r.status.is_terminal()).then_some(runs)
    })
    .await
}

async fn mention_loop_stops_at_the_depth_limit(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let issue = ping_pong(&env).await;
    let note = guard_comment(&env, &issue).await;
    assert!(
        note.body.contains("depth 4") && note.body.contains("limit of 3"),
        "{}",
        note.body
    );
    let runs = settled(&env, &issue).await;
    let mut depths: Vec<i32> = runs.iter().map(|r| r.chain_depth).collect();
    depths.sort_unstable();
    assert_eq!(depths, vec![0, 1, 2, 3], "{runs:?}");
    assert!(runs.iter().all(|r| r.trigger == RunTrigger::Mention));
    assert!(
        runs.iter().all(|r| r.status == RunStatus::Succeeded),
        "{runs:?}"
    );
    let inbox = env.inbox().await;
    let item = inbox
        .iter()
        .find(|i| i.kind == InboxKind::LoopGuard)
        .unwrap_or_else(|| panic!("{inbox:?}"));
    assert_eq!(item.issue_id, Some(issue.id));
    assert_eq!(item.message, note.body);
    // Nothing more is queued afterwards.
    assert_eq!(runs_of(&env, &issue).await.len(), 4);
    env.stop().await;
}

async fn mention_loop_stops_at_the_hourly_cap(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    env.api(
        reqwest::Method::PATCH,
        "/api/v1/workspace",
        json!({ "mention_depth_limit": 20, "agent_runs_per_issue_per_hour": 2 }),
    )
    .await;
    let issue = ping_pong(&env).await;
    let note = guard_comment(&env, &issue).await;
    assert!(note.body.contains("cap of 2"), "{}", note.body);
    let runs = settled(&env, &issue).await;
    let mut depths: Vec<i32> = runs.iter().map(|r| r.chain_depth).collect();
    depths.sort_unstable();
    assert_eq!(
        depths,
        vec![0, 1, 2],
        "a person's run is not counted: {runs:?}"
    );
    assert!(
        env.inbox()
            .await
            .iter()
            .any(|i| i.kind == InboxKind::LoopGuard && i.issue_id == Some(issue.id))
    );
    env.stop().await;
}

async fn loop_guard_settings_are_validated(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let patch =
        |body: serde_json::Value| env.call(reqwest::Method::PATCH, "/api/v1/workspace", Some(body));
    let (status, body) = patch(json!({ "mention_depth_limit": 0 })).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("mention_depth_limit") && body.contains("from 1 to 20, got 0"),
        "{body}"
    );
    let (status, body) =
        patch(json!({ "mention_depth_limit": "three", "agent_runs_per_issue_per_hour": 1001 }))
            .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains(r#"got \"three\""#), "{body}");
    assert!(body.contains("from 1 to 1000, got 1001"), "{body}");
    let ws = env.store.get_workspace(env.ws.id).await.unwrap();
    assert_eq!(
        (ws.mention_depth_limit, ws.agent_runs_per_issue_per_hour),
        (3, 10),
        "nothing changed"
    );
    let (status, body) = patch(json!({ "agent_runs_per_issue_per_hour": 1000 })).await;
    assert_eq!(status, 200, "{body}");
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(view["agent_runs_per_issue_per_hour"], 1000);
    assert_eq!(view["mention_depth_limit"], 3, "a field left out is kept");
    env.stop().await;
}

async fn issue_body_mentions_queue_and_parked_issues_take_no_replies(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    // Both agents run only on a runner that does not exist: their runs stay queued to be looked at.
    let (script, _) = stand_in(&env, "held", "");
    for name in ["helper", "coder"] {
        let a = env.agent(name, &script).await;
        env.tweak(&a, |p| p.runners = vec!["elsewhere".to_owned()])
            .await;
    }
    let created = |body: serde_json::Value| {
        let env = &env;
        async move {
            let (status, text) = env
                .call(reqwest::Method::POST, "/api/v1/issues", Some(body))
                .await;
            assert_eq!(status, 201, "{text}");
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let key = IssueKey::parse(v["key"].as_str().unwrap()).unwrap();
            env.store.get_issue(env.ws.id, &key).await.unwrap()
        }
    };
    let issue =
        created(json!({ "title": "Look at this", "body": "@helper please look, not @nobody" }))
            .await;
    let runs = runs_of(&env, &issue).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].trigger, RunTrigger::Mention);
    assert_eq!((runs[0].chain_depth, runs[0].previous_run_id), (0, None));
    assert_eq!(issue.assignee, None, "a mention does not assign");

    let parked =
        created(json!({ "title": "Later", "assignee": "coder", "status": "backlog" })).await;
    env.comment(&parked, "Any thoughts?").await;
    assert!(
        runs_of(&env, &parked).await.is_empty(),
        "a reply on a backlog issue queues nothing"
    );
    env.stop().await;
}

async fn a_comment_during_a_live_run_waits_for_its_end(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let go = env.scripts.path().join("go");
    let (script, prompts) = stand_in(
        &env,
        "coder",
        &format!(
            r#"if [ ! -e "$0.once" ]; then touch "$0.once" "$0.live"; while [ ! -e '{}' ]; do sleep 0.05; done; fi"#,
            go.display()
        ),
    );
    let agent = env.agent("coder", &script).await;
    let (issue, first) = env.assign_new("Long job", &agent).await;
    let live = PathBuf::from(format!("{}.live", script.display()));
    poll("the first run to be live", || async {
        live.exists().then_some(())
    })
    .await;
    env.comment(&issue, "While you are at it, rename the flag.")
        .await;
    assert_eq!(
        runs_of(&env, &issue).await.len(),
        1,
        "kept for the live run's end, not queued beside it"
    );
    std::fs::write(&go, "").unwrap();
    let first = env.finished(first.id).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{first:?}");
    let follow = poll("the follow-up after the live run", || async {
        runs_of(&env, &issue)
            .await
            .into_iter()
            .find(|r| r.id != first.id)
    })
    .await;
    assert_eq!(follow.trigger, RunTrigger::Comment);
    assert_eq!(follow.previous_run_id, Some(first.id));
    let follow = env.finished(follow.id).await;
    assert_eq!(follow.status, RunStatus::Succeeded, "{follow:?}");
    let all = read(&prompts);
    assert!(
        all.contains("New comments since your last run:")
            && all.contains("While you are at it, rename the flag."),
        "{all}"
    );
    env.stop().await;
}
