//! Issue 13, mentions of people and what a follow-up run shows, end to end: a real server in-process
//! with its embedded runner and `custom` stand-in agents using the real `muster` CLI with their run's
//! token. Mentioning a person (by an agent or a person, never oneself) gives them an inbox item linking
//! the comment; a follow-up that delivers to an issue already in review notifies like a first
//! delivery; the run page and `muster run show` say what started a run and which run it continues.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use serde_json::json;

/// Posts a comment through the JSON API with `token`; returns its id.
async fn comment(env: &Env, token: &str, issue: &Issue, body: &str) -> CommentId {
    let resp = reqwest::Client::new()
        .post(format!(
            "http://{}/api/v1/issues/{}/comments",
            env.addr, issue.key
        ))
        .bearer_auth(token)
        .json(&json!({ "body": body }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let v: serde_json::Value = resp.json().await.unwrap();
    v["id"].as_str().unwrap().parse().unwrap()
}

/// A stand-in agent that runs `then` (shell, may use the CLI as `$MUSTER`) and replays a real Claude
/// stream.
async fn stand_in(env: &Env, name: &str, then: &str) -> Agent {
    let replay = env.fixture("text.jsonl");
    let script = env.script(
        &format!("{name}.sh"),
        &format!(
            "MUSTER='{bin}'\ncat > /dev/null\n{then}\ncat '{}'",
            replay.display(),
            bin = muster_tests::muster_bin().display(),
        ),
    );
    env.agent(name, &script).await
}

/// Bob, a member of the workspace (handle `bob`), with an API token.
async fn bob(env: &Env) -> (UserId, String) {
    let user = env
        .store
        .create_user(&NewUser {
            email: Email::parse("Bob+muster@runs.test").unwrap(),
            display_name: "Bob Builder".to_owned(),
            password_hash: "unused".to_owned(),
        })
        .await
        .unwrap();
    env.store
        .add_member(env.ws.id, user.id, Role::Member)
        .await
        .unwrap();
    let token = muster_tests::mint_token(env.store.as_ref(), env.ws.id, user.id, "bob").await;
    (user.id, token)
}

async fn mentions_of(env: &Env, user: UserId) -> Vec<InboxItem> {
    env.store
        .list_inbox(env.ws.id, user)
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.kind == InboxKind::Mentioned)
        .collect()
}

async fn people_mentioned_get_an_inbox_item(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let (bob, bob_token) = bob(&env).await;
    let coder = stand_in(
        &env,
        "coder",
        r#""$MUSTER" issue comment "$MUSTER_ISSUE" "Hey @BOB, have a look.
It is done. Ask @nobody." || exit 3"#,
    )
    .await;
    let issue = env.issue("Mention people").await;

    // A person: Bob by his handle, themselves (nothing), and an agent's name (a run, no inbox item).
    let by_owner = comment(&env, &env.token, &issue, "cc @bob; note to @owner.").await;
    let items = mentions_of(&env, bob).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        items[0].message,
        "owner mentioned you on RUN-1: cc @bob; note to @owner."
    );
    assert_eq!(items[0].comment_id, Some(by_owner));
    assert_eq!(items[0].issue_id, Some(issue.id));
    assert!(
        mentions_of(&env, env.owner).await.is_empty(),
        "no item for oneself"
    );
    comment(&env, &bob_token, &issue, "Thanks @owner, and @bob is me.").await;
    let owners = mentions_of(&env, env.owner).await;
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(
        owners[0].message,
        "Bob Builder mentioned you on RUN-1: Thanks @owner, and @bob is me."
    );
    assert_eq!(
        mentions_of(&env, bob).await.len(),
        1,
        "Bob mentioning Bob: nothing"
    );

    // An agent, through the CLI with its run's token.
    env.assign(&issue, &coder).await;
    let run = env.finished(env.the_run(&issue).await.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}");
    let items = poll("the agent's mention to reach Bob", || async {
        let items = mentions_of(&env, bob).await;
        (items.len() == 2).then_some(items)
    })
    .await;
    let by_agent = env
        .store
        .list_comments(issue.id)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.author == CommentAuthor::Agent(coder.id))
        .unwrap();
    let item = items
        .iter()
        .find(|i| i.comment_id == Some(by_agent.id))
        .unwrap();
    assert_eq!(
        item.message,
        "coder mentioned you on RUN-1: Hey @BOB, have a look."
    );

    // Bob's inbox links the comment; the issue page marks the mentions it knows.
    let inbox = env.page_as(&bob_token, "/w/runs/inbox").await;
    assert!(
        inbox.contains(&format!(
            r##"href="/w/runs/issues/RUN-1#comment-{}">Open comment</a>"##,
            by_agent.id
        )),
        "{inbox}"
    );
    let html = env.page_as(&bob_token, "/w/runs/issues/RUN-1").await;
    assert!(
        html.contains(r#"<span class="mention mention-person" title="Bob Builder">@BOB</span>"#),
        "{html}"
    );
    assert!(
        html.contains("Ask @nobody."),
        "an unknown name is text: {html}"
    );
    // The comment box completes the agents, then the people.
    assert!(
        html.contains(r#"data-mentions="[{&quot;name&quot;:&quot;coder&quot;,&quot;label&quot;:&quot;custom&quot;,&quot;kind&quot;:&quot;agent&quot;},{"#),
        "{html}"
    );
    assert!(
        html.contains(r#"{&quot;name&quot;:&quot;bob&quot;,&quot;label&quot;:&quot;Bob Builder&quot;,&quot;kind&quot;:&quot;person&quot;}"#),
        "{html}"
    );
    env.stop().await;
}

both_backends!(
    people_mentioned_get_an_inbox_item,
    a_follow_up_is_ready_for_review_and_says_what_started_it,
    people_only_comments_wake_no_agent_and_helpers_leave_the_status,
);

async fn a_follow_up_is_ready_for_review_and_says_what_started_it(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let coder = stand_in(&env, "coder", "").await;
    let issue = env.issue("Follow up").await;
    env.assign(&issue, &coder).await;
    let first = env.finished(env.the_run(&issue).await.id).await;
    env.issue_reaches(&issue, IssueStatus::InReview).await;
    env.inbox_with(InboxKind::AwaitingReview, first.id).await;

    // A reply on the issue in review: the follow-up's delivery is announced too.
    let reply = comment(&env, &env.token, &issue, "Now the empty file, @coder.").await;
    let follow = poll("the follow-up", || async {
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        runs.into_iter().find(|r| r.id != first.id)
    })
    .await;
    let follow = env.finished(follow.id).await;
    assert_eq!(follow.status, RunStatus::Succeeded, "{follow:?}");
    env.inbox_with(InboxKind::AwaitingReview, follow.id).await;

    let html = env.page(&format!("/w/runs/runs/{}", follow.id)).await;
    let short: String = first.id.to_string().chars().take(8).collect();
    assert!(
        html.contains(&format!(
            r##"Triggered by <a href="/w/runs/issues/RUN-1#comment-{reply}">owner’s comment</a>"##
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            r#"Continues run <a href="/w/runs/runs/{}"><code>{short}</code></a>"#,
            first.id
        )),
        "{html}"
    );
    // The follow-up is the issue's second run (not "attempt 1" again), on the embedded runner.
    assert!(
        html.contains(r#"<span class="run-number">Run 2</span>"#),
        "{html}"
    );
    let runner = env
        .store
        .get_runner(follow.runner_id.unwrap())
        .await
        .unwrap();
    assert!(
        html.contains(&format!("on runner <strong>{}</strong>", runner.name)),
        "{html}"
    );
    let html = env.page(&format!("/w/runs/runs/{}", first.id)).await;
    assert!(
        html.contains(r#"<span class="run-number">Run 1</span>"#),
        "{html}"
    );
    assert!(
        html.contains("Triggered by <strong>assignment</strong>"),
        "{html}"
    );
    assert!(!html.contains("Continues run"), "{html}");
    let shown = env.muster(&["run", "show", &follow.id.to_string()]).await;
    assert!(
        shown.contains(&format!("trigger:  comment (comment {reply})\n")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("follows:  run {}\n", first.id)),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("runner:   {}\n", runner.name)),
        "{shown}"
    );
    let api = env.get(&format!("/api/v1/runs/{}", follow.id)).await;
    assert_eq!(api["runner"], runner.name.as_str(), "{api}");
    assert_eq!(api["runner_id"], runner.id.to_string().as_str(), "{api}");

    // An agent's mention carries the chain depth.
    let reviewer = stand_in(
        &env,
        "reviewer",
        r#""$MUSTER" issue comment "$MUSTER_ISSUE" "@coder fix the nit" || exit 3"#,
    )
    .await;
    let other = env.issue("Review it").await;
    comment(&env, &env.token, &other, "@reviewer have a look").await;
    let mentioned = poll("the mention of coder", || async {
        let runs = env.store.list_runs_for_issue(other.id).await.unwrap();
        runs.into_iter().find(|r| r.agent_id == coder.id)
    })
    .await;
    let mentioned = env.finished(mentioned.id).await;
    assert_eq!(
        (mentioned.trigger, mentioned.chain_depth),
        (RunTrigger::Mention, 1)
    );
    let html = env.page(&format!("/w/runs/runs/{}", mentioned.id)).await;
    assert!(
        html.contains("Triggered by <a href=\"/w/runs/issues/RUN-2#comment-"),
        "{html}"
    );
    assert!(
        html.contains(">mention by reviewer (chain depth 1)</a>"),
        "{html}"
    );
    let by_reviewer = env.store.list_runs_for_issue(other.id).await.unwrap();
    let by_reviewer = by_reviewer
        .iter()
        .find(|r| r.agent_id == reviewer.id)
        .unwrap();
    let shown = env
        .muster(&["run", "show", &mentioned.id.to_string()])
        .await;
    assert!(shown.contains("trigger:  mention (comment "), "{shown}");
    assert!(shown.contains(", chain depth 1)\n"), "{shown}");
    assert!(!shown.contains("follows:"), "{shown}");
    assert_eq!(by_reviewer.trigger, RunTrigger::Mention);
    env.stop().await;
}

/// Issue 27: a comment addressed only to people wakes no agent (no tokens spent on "@bob, can you
/// confirm?"), while a plain reply still continues the assignee's work; a helper brought in by a
/// mention answers in the thread but leaves the issue's status and review to its owner.
async fn people_only_comments_wake_no_agent_and_helpers_leave_the_status(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let (_bob, _) = bob(&env).await;
    let coder = stand_in(&env, "coder", "").await;
    let helper = stand_in(&env, "helper", "").await;
    let issue = env.issue("Owned by coder").await;
    env.assign(&issue, &coder).await;
    let first = env.finished(env.the_run(&issue).await.id).await;
    env.issue_reaches(&issue, IssueStatus::InReview).await;

    // The comment box knows whom a plain comment wakes.
    let html = env.page("/w/runs/issues/RUN-1").await;
    assert!(
        html.contains(r#"<p class="hint comment-wakes" data-assignee="coder" aria-live="polite">A comment that mentions nobody continues coder's work"#),
        "{html}"
    );
    // Comment handling is done when the API answers: what it queued is there already.
    comment(&env, &env.token, &issue, "@bob can you confirm the spec?").await;
    let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(
        runs.len(),
        1,
        "a comment to a person woke an agent: {runs:?}"
    );
    comment(
        &env,
        &env.token,
        &issue,
        "Please also cover the empty file.",
    )
    .await;
    let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(
        runs.len(),
        2,
        "a plain reply answers the assignee: {runs:?}"
    );
    let reply = runs.iter().find(|r| r.id != first.id).unwrap();
    assert_eq!(
        (reply.agent_id, reply.trigger),
        (coder.id, RunTrigger::Comment)
    );
    env.finished(reply.id).await;

    // A helper on an issue nobody assigned: it answers, the issue stays in Todo, nobody is asked to
    // review its chatter.
    let other = env.issue("Nobody's yet").await;
    comment(&env, &env.token, &other, "@helper what do you think?").await;
    let helped = env.finished(env.the_run(&other).await.id).await;
    assert_eq!(
        (helped.agent_id, helped.status),
        (helper.id, RunStatus::Succeeded)
    );
    let summary = poll("the helper's answer in the thread", || async {
        let comments = env.store.list_comments(other.id).await.unwrap();
        comments
            .into_iter()
            .find(|c| c.author == CommentAuthor::Agent(helper.id))
    })
    .await;
    assert_eq!(summary.run_id, Some(helped.id));
    let now = env.store.get_issue_by_id(other.id).await.unwrap();
    assert_eq!(now.status, IssueStatus::Todo, "a helper moved the issue");
    let activity = env.store.list_activity(other.id).await.unwrap();
    assert!(
        activity.iter().all(|a| a.kind != ActivityKind::Status),
        "{activity:?}"
    );
    assert!(
        !env.inbox()
            .await
            .iter()
            .any(|i| i.kind == InboxKind::AwaitingReview && i.run_id == Some(helped.id)),
        "a helper's answer is not work awaiting review"
    );
    env.stop().await;
}
