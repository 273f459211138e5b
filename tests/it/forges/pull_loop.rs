//! The loop itself: a run's work becomes a pull request; a red check, a change request, a line comment
//! or a mention resumes the agent on the same branch within the connection's rounds; merged moves the
//! issue to done; work for a merged pull request goes to a new branch and a new pull request.

use muster::domain::*;
use muster_tests::Backend;
use muster_tests::engine::*;
use muster_tests::forge::{self as scripted, ScriptedForge};
use serde_json::json;

use super::*;

both_backends!(
    a_delivery_becomes_a_draft_pull_request_and_a_red_check_resumes_it_on_the_same_branch,
    reviews_and_comments_resume_the_agent_until_its_rounds_run_out,
    merged_is_done_and_later_work_goes_to_a_new_branch_and_pull_request,
    a_pull_request_is_opened_by_hand_from_a_run_and_from_an_issue,
    closed_unmerged_moves_the_issue_as_the_connection_says
);

/// Sends a signed delivery and expects it taken (202).
async fn deliver(
    env: &Env,
    kind: ForgeKind,
    conn: &str,
    secret: &str,
    what: &str,
    delivery: &str,
    body: &serde_json::Value,
) {
    let status = scripted::send_hook(
        kind,
        &hook_url(env, kind, conn),
        secret,
        scripted::event_for(kind, body),
        delivery,
        body,
    )
    .await
    .unwrap();
    assert_eq!(status, 202, "{what} delivery {delivery} was not taken");
}

/// The log the forge serves for the failing job: its failure in the middle.
const JOB_LOG: &str = "running 3 tests\ntest lexer ... ok\ntest parser ... FAILED\n\
    thread 'parser' panicked: assertion failed: left == right (left: 2, right: 3)\n\
    test result: FAILED. 2 passed; 1 failed\n";

async fn a_delivery_becomes_a_draft_pull_request_and_a_red_check_resumes_it_on_the_same_branch(
    backend: Backend,
) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let kind = ForgeKind::Github;
    let (forge, conn, secret) = connected(&env, kind, json!({ "auto_open": true })).await;
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let (issue, first) = env.assign_new("Fix the parser", &agent).await;
    let first = env.finished(first.id).await;
    assert_eq!(first.status, RunStatus::Succeeded, "{first:?}");
    let line = format!("muster/{}-coder", issue.key);

    // Delivered: pushed to the forge with the token, and a draft pull request opened on its branch.
    let prs = pulls_recorded(&env, &issue, 1).await;
    let pr = &prs[0];
    assert_eq!(
        (pr.branch.as_str(), pr.state, pr.draft),
        (line.as_str(), PrState::Open, true)
    );
    assert_eq!(
        forge_tip(&forge, &line).as_deref(),
        first.head_commit.as_deref()
    );
    let on_forge = forge.pulls();
    assert_eq!(on_forge.len(), 1, "{on_forge:?}");
    assert_eq!(on_forge[0].head, line);
    assert!(on_forge[0].draft);
    assert!(
        on_forge[0].title.contains(&issue.key.to_string()),
        "{:?}",
        on_forge[0]
    );
    assert!(
        on_forge[0].body.contains(&first.id.to_string()),
        "{:?}",
        on_forge[0]
    );
    // The issue says so (noted just after the pull request is recorded).
    let opened = format!("#{}", pr.number);
    poll("the issue's note of the pull request", || async {
        thread(&env, &issue).await.contains(&opened).then_some(())
    })
    .await;

    // A red check: the agent is resumed with the check's name and the failing part of its log.
    forge.set_job_log(4242, JOB_LOG);
    let failed = scripted::check_failed(kind, REPO, pr.number, &line, &pr.head_sha, "test", 4242);
    deliver(&env, kind, &conn, &secret, "check", "check-1", &failed).await;
    let runs = runs_ended(&env, &issue, 2).await;
    let second = &runs[1];
    assert_eq!(second.status, RunStatus::Succeeded, "{second:?}");
    assert_eq!(
        second.previous_run_id,
        Some(first.id),
        "it continues the first run"
    );
    assert_eq!(second.trigger, RunTrigger::Comment);
    let prompt = prompt_of(&env, second.id);
    assert!(prompt.contains("CI check `test` failed"), "{prompt}");
    assert!(
        prompt.contains("assertion failed: left == right"),
        "{prompt}"
    );

    // Its commit is on the same branch, after the first run's, and the same pull request shows it.
    let tip = poll("the follow-up's push", || async {
        forge_tip(&forge, &line).filter(|t| Some(t) != first.head_commit.as_ref())
    })
    .await;
    assert_eq!(Some(&tip), second.head_commit.as_ref());
    let parent = muster_tests::git(&forge.repo_dir(), &["rev-parse", &format!("{tip}^")]);
    assert_eq!(Some(parent.trim()), first.head_commit.as_deref());
    let now = poll("the pull request's new head", || async {
        let pr = env.store.get_pull_request(pr.id).await.unwrap();
        (pr.head_sha == tip).then_some(pr)
    })
    .await;
    assert_eq!(now.rounds, 1);
    assert_eq!(forge.pulls().len(), 1, "no second pull request");
    // The failed check was recorded against the first head; the new head starts without checks.
    assert!(now.checks.is_empty(), "{:?}", now.checks);

    // The token: sent to the forge's API and git only, never where the agent could read it.
    for run in [&first, second] {
        assert_token_unseen(&env, run.id);
        let events = serde_json::to_string(&env.events(run.id).await).unwrap();
        assert!(
            !events.contains(TOKEN),
            "the token is in run {}'s log",
            run.id
        );
    }
    assert!(!thread(&env, &issue).await.contains(TOKEN));
    assert!(
        forge
            .pushes()
            .iter()
            .all(|(r, _)| r == &format!("refs/heads/{line}"))
    );
}

async fn reviews_and_comments_resume_the_agent_until_its_rounds_run_out(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let kind = ForgeKind::Gitea;
    let (forge, conn, secret) =
        connected(&env, kind, json!({ "auto_open": true, "max_rounds": 2 })).await;
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let (issue, first) = env.assign_new("Tidy the config", &agent).await;
    env.finished(first.id).await;
    let pr = pulls_recorded(&env, &issue, 1).await.remove(0);
    let n = pr.number;

    // Round 1: changes requested and a line comment, back to back — the second folds into the first's
    // round (its queued run, or the follow-up of its live run), never lost.
    let review = scripted::review(
        kind,
        REPO,
        n,
        "ann",
        ReviewVerdict::ChangesRequested,
        "Please rename the setting.",
    );
    deliver(&env, kind, &conn, &secret, "review", "r-1", &review).await;
    let line = scripted::line_comment(
        kind,
        REPO,
        n,
        "bob",
        "src/config.rs",
        12,
        "Use a constant here.",
    );
    deliver(&env, kind, &conn, &secret, "line", "r-2", &line).await;
    let settled = poll("both comments to reach the agent", || async {
        let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
        if !runs.iter().all(|r| r.status.is_terminal()) {
            return None;
        }
        let prompts: String = runs[1..].iter().map(|r| prompt_of(&env, r.id)).collect();
        (prompts.contains("Please rename the setting.") && prompts.contains("Use a constant here."))
            .then_some((runs, prompts))
    })
    .await;
    let (runs, prompts) = settled;
    assert!(prompts.contains("ann requested changes"), "{prompts}");
    // Gitea's webhooks do not say which line a review comment is on: it arrives as bob's review.
    assert!(prompts.contains("bob reviewed"), "{prompts}");
    assert_eq!(env.store.get_pull_request(pr.id).await.unwrap().rounds, 1);

    // Round 2: a comment that mentions the agent.
    let before = runs.len();
    let mention = scripted::pr_comment(kind, REPO, n, "ann", "@coder also update the docs");
    deliver(&env, kind, &conn, &secret, "comment", "r-3", &mention).await;
    let runs = runs_ended(&env, &issue, before + 1).await;
    assert!(prompt_of(&env, runs[before].id).contains("also update the docs"));
    // A comment that mentions nobody starts nothing.
    let idle = scripted::pr_comment(kind, REPO, n, "ann", "looks better");
    deliver(&env, kind, &conn, &secret, "comment", "r-4", &idle).await;

    // Past the limit: nothing is queued; the limit is said once, on the issue, the PR and in the inbox.
    let again = scripted::pr_comment(kind, REPO, n, "ann", "@coder one more thing");
    deliver(&env, kind, &conn, &secret, "comment", "r-5", &again).await;
    let items = poll("the round-limit inbox item", || async {
        let inbox = env.inbox().await;
        let items: Vec<_> = inbox
            .into_iter()
            .filter(|i| i.kind == InboxKind::PullRequest)
            .collect();
        (!items.is_empty()).then_some(items)
    })
    .await;
    assert!(items[0].message.contains("2 automatic rounds"), "{items:?}");
    let said = poll("the limit said on the forge", || async {
        forge
            .pulls()
            .into_iter()
            .find(|p| p.number == n)
            .filter(|p| p.comments.iter().any(|c| c.contains("automatic rounds")))
    })
    .await;
    assert_eq!(
        said.comments
            .iter()
            .filter(|c| c.contains("automatic rounds"))
            .count(),
        1
    );
    let last = scripted::pr_comment(kind, REPO, n, "ann", "@coder and another");
    deliver(&env, kind, &conn, &secret, "comment", "r-6", &last).await;
    let runs = env.store.list_runs_for_issue(issue.id).await.unwrap();
    assert_eq!(runs.len(), before + 1, "no run past the limit");
    let pr = env.store.get_pull_request(pr.id).await.unwrap();
    assert_eq!(pr.rounds, 2);
    assert_eq!(
        env.inbox()
            .await
            .iter()
            .filter(|i| i.kind == InboxKind::PullRequest)
            .count(),
        1,
        "the limit is said once"
    );
    let review = |author: &str, verdict| PrReview {
        author: author.into(),
        verdict,
    };
    assert_eq!(
        pr.reviews,
        vec![
            review("ann", ReviewVerdict::ChangesRequested),
            review("bob", ReviewVerdict::Commented)
        ]
    );
}

async fn merged_is_done_and_later_work_goes_to_a_new_branch_and_pull_request(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let kind = ForgeKind::Gitlab;
    let (forge, conn, secret) = connected(&env, kind, json!({ "auto_open": true })).await;
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let (issue, first) = env.assign_new("Ship the feature", &agent).await;
    let first = env.finished(first.id).await;
    let old = pulls_recorded(&env, &issue, 1).await.remove(0);
    let line = old.branch.clone();

    forge.merge(old.number);
    let merged = scripted::closed(kind, REPO, old.number, true);
    deliver(&env, kind, &conn, &secret, "closed", "m-1", &merged).await;
    env.issue_reaches(&issue, IssueStatus::Done).await;
    assert_eq!(
        env.store.get_pull_request(old.id).await.unwrap().state,
        PrState::Merged
    );
    assert!(thread(&env, &issue).await.contains("was merged"));
    let pushes_before = forge.pushes().len();
    let line_tip = forge_tip(&forge, &line);

    // A late comment on the merged pull request: the agent works, but never on the merged branch.
    let late = scripted::pr_comment(kind, REPO, old.number, "ann", "@coder one follow-up please");
    deliver(&env, kind, &conn, &secret, "comment", "m-2", &late).await;
    let runs = runs_ended(&env, &issue, 2).await;
    assert_eq!(runs[1].status, RunStatus::Succeeded, "{:?}", runs[1]);
    assert!(prompt_of(&env, runs[1].id).contains("is already merged"));
    let prs = pulls_recorded(&env, &issue, 2).await;
    let new = &prs[0];
    assert_eq!(new.branch, format!("{line}-2"));
    assert_eq!(
        forge_tip(&forge, &line),
        line_tip,
        "the merged branch never moved"
    );
    let later: Vec<_> = forge.pushes()[pushes_before..].to_vec();
    assert!(
        later
            .iter()
            .all(|(r, _)| r == &format!("refs/heads/{line}-2")),
        "{later:?}"
    );
    // Recorded just after the new pull request (a step of its own): waited for, not raced.
    poll("the old pull request superseded by the new one", || async {
        let superseded = env
            .store
            .get_pull_request(old.id)
            .await
            .unwrap()
            .superseded_by;
        (superseded == Some(new.id)).then_some(())
    })
    .await;
    let link = format!("#{}", new.number);
    poll("the old pull request to link the new one", || async {
        forge
            .pulls()
            .into_iter()
            .find(|p| p.number == old.number)
            .filter(|p| p.comments.iter().any(|c| c.contains(&link)))
    })
    .await;
    // The issue is in review again, with the new pull request.
    env.issue_reaches(&issue, IssueStatus::InReview).await;
    assert_token_unseen(&env, first.id);
    assert_token_unseen(&env, runs[1].id);
}

async fn a_pull_request_is_opened_by_hand_from_a_run_and_from_an_issue(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let kind = ForgeKind::Github;
    let (forge, _conn, _secret) = connected(&env, kind, json!({})).await;
    let (issue, run) = env.assign_new("Document the API", &agent).await;
    let run = env.finished(run.id).await;
    // No draft on delivery unless asked.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(forge.pulls().is_empty());
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/runs/{}/pull-request", run.id),
            Some(json!({ "draft": false })),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let opened: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(opened["draft"], false);
    assert_eq!(opened["state"], "open");
    // Again, from the issue: the same pull request, not a second one.
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/pull-request", issue.key),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let again: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(again["id"], opened["id"]);
    assert_eq!(forge.pulls().len(), 1);
    let (status, text) = env
        .call(
            reqwest::Method::GET,
            &format!("/api/v1/pull-requests?issue={}", issue.key),
            None,
        )
        .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap()[0]["id"],
        opened["id"]
    );
    // A run that is not delivered work: refused with the reason.
    let other = env.issue("Nothing yet").await;
    let (status, text) = env
        .call(
            reqwest::Method::POST,
            &format!("/api/v1/issues/{}/pull-request", other.key),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("no run on"), "{text}");
    let _: &ScriptedForge = &forge;
}

async fn closed_unmerged_moves_the_issue_as_the_connection_says(backend: Backend) {
    let Some(env) = Env::start(backend).await else {
        return;
    };
    let kind = ForgeKind::Github;
    let (forge, conn, secret) = connected(
        &env,
        kind,
        json!({ "auto_open": true, "on_close": "cancelled" }),
    )
    .await;
    let agent = env.agent("coder", &probe_agent_script(&env)).await;
    let (issue, run) = env.assign_new("Try an idea", &agent).await;
    env.finished(run.id).await;
    let pr = pulls_recorded(&env, &issue, 1).await.remove(0);
    forge.close(pr.number);
    let closed = scripted::closed(kind, REPO, pr.number, false);
    deliver(&env, kind, &conn, &secret, "closed", "c-1", &closed).await;
    env.issue_reaches(&issue, IssueStatus::Cancelled).await;
    assert_eq!(
        env.store.get_pull_request(pr.id).await.unwrap().state,
        PrState::Closed
    );
    assert!(
        thread(&env, &issue)
            .await
            .contains("closed without merging")
    );
    // The same close delivered again under a new id changes nothing more.
    deliver(&env, kind, &conn, &secret, "closed", "c-2", &closed).await;
    let said = thread(&env, &issue)
        .await
        .matches("closed without merging")
        .count();
    assert_eq!(said, 1);
}
