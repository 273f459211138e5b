//! Issue 13: what queued a run, the run it follows, the comments it answers, comments kept pending for a
//! live run's end, and the loop guard's counts and settings.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, fixture, issue, store_cases};
use muster_tests::engine::bare_outcome;

store_cases!(
    a_follow_up_records_its_trigger_and_previous_run,
    comments_fold_into_a_queued_run_only,
    pending_comments_are_taken_once_oldest_first,
    agent_triggered_runs_are_counted_per_issue_since_a_time,
    loop_guard_limits_default_and_change,
);

async fn comment(
    store: &Arc<dyn Store>,
    issue: IssueId,
    author: CommentAuthor,
    body: &str,
) -> Comment {
    store
        .add_comment(issue, &NewComment::parse(author, body).unwrap())
        .await
        .unwrap()
}

async fn a_follow_up_records_its_trigger_and_previous_run(store: Arc<dyn Store>) {
    let f = fixture(&store, "trig", "TRG").await;
    let coder = agent(&store, f.ws.id, "coder", 2).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::InReview).await;
    assert!(
        store
            .last_run_of_agent(i.id, coder.id)
            .await
            .unwrap()
            .is_none()
    );
    let first = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    assert_eq!(first.trigger, RunTrigger::Assignment);
    assert_eq!(
        (first.trigger_comment_id, first.previous_run_id),
        (None, None)
    );
    assert!(store.list_run_comments(first.id).await.unwrap().is_empty());
    store
        .finish_run(first.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();

    let reply = comment(
        &store,
        i.id,
        CommentAuthor::User(f.owner.id),
        "also the empty file",
    )
    .await;
    let last = store
        .last_run_of_agent(i.id, coder.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.id, first.id);
    let new = NewRun {
        trigger: RunTrigger::Comment,
        trigger_comment_id: Some(reply.id),
        previous_run_id: Some(last.id),
        ..NewRun::assignment(f.ws.id, i.id, coder.id)
    };
    let follow = store.create_run(&new).await.unwrap();
    let read = store.get_run(follow.id).await.unwrap();
    for run in [&follow, &read] {
        assert_eq!(run.trigger, RunTrigger::Comment);
        assert_eq!(run.trigger_comment_id, Some(reply.id));
        assert_eq!(run.previous_run_id, Some(first.id));
    }
    // The trigger comment starts the run's set.
    assert_eq!(
        store.list_run_comments(follow.id).await.unwrap(),
        vec![reply.id]
    );
    assert_eq!(
        store
            .last_run_of_agent(i.id, coder.id)
            .await
            .unwrap()
            .unwrap()
            .id,
        follow.id
    );
    // Still one live run per agent per issue.
    assert_conflict(store.create_run(&new).await, "run_one_active_key");
    // A deleted trigger comment leaves the run, without the reference.
    store.delete_comment(i.id, reply.id).await.unwrap();
    let read = store.get_run(follow.id).await.unwrap();
    assert_eq!(read.trigger_comment_id, None);
    assert!(store.list_run_comments(follow.id).await.unwrap().is_empty());
}

async fn comments_fold_into_a_queued_run_only(store: Arc<dyn Store>) {
    let f = fixture(&store, "fold", "FLD").await;
    let coder = agent(&store, f.ws.id, "coder", 2).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, i.id, coder.id))
        .await
        .unwrap();
    let a = comment(&store, i.id, CommentAuthor::User(f.owner.id), "first").await;
    let b = comment(&store, i.id, CommentAuthor::User(f.owner.id), "second").await;
    assert!(store.add_run_comment(run.id, b.id).await.unwrap());
    assert!(store.add_run_comment(run.id, a.id).await.unwrap());
    // Twice the same comment: nothing added.
    assert!(!store.add_run_comment(run.id, a.id).await.unwrap());
    // Oldest first, whatever the order they were added in.
    assert_eq!(
        store.list_run_comments(run.id).await.unwrap(),
        vec![a.id, b.id]
    );
    store
        .finish_run(run.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    let c = comment(&store, i.id, CommentAuthor::User(f.owner.id), "too late").await;
    assert!(
        !store.add_run_comment(run.id, c.id).await.unwrap(),
        "a run no longer queued takes no comment (its order may be built)"
    );
    assert_eq!(
        store.list_run_comments(run.id).await.unwrap(),
        vec![a.id, b.id]
    );
}

async fn pending_comments_are_taken_once_oldest_first(store: Arc<dyn Store>) {
    let f = fixture(&store, "pend", "PND").await;
    let coder = agent(&store, f.ws.id, "coder", 2).await;
    let other = agent(&store, f.ws.id, "other", 2).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let a = comment(&store, i.id, CommentAuthor::User(f.owner.id), "first").await;
    let b = comment(
        &store,
        i.id,
        CommentAuthor::Agent(other.id),
        "@coder second",
    )
    .await;
    store
        .add_pending_comment(i.id, coder.id, b.id, 2)
        .await
        .unwrap();
    store
        .add_pending_comment(i.id, coder.id, a.id, 0)
        .await
        .unwrap();
    store
        .add_pending_comment(i.id, coder.id, a.id, 0)
        .await
        .unwrap();
    store
        .add_pending_comment(i.id, other.id, a.id, 0)
        .await
        .unwrap();
    assert_eq!(
        store.take_pending_comments(i.id, coder.id).await.unwrap(),
        vec![(a.id, 0), (b.id, 2)]
    );
    assert!(
        store
            .take_pending_comments(i.id, coder.id)
            .await
            .unwrap()
            .is_empty()
    );
    // Another agent's are its own.
    assert_eq!(
        store.take_pending_comments(i.id, other.id).await.unwrap(),
        vec![(a.id, 0)]
    );
}

async fn agent_triggered_runs_are_counted_per_issue_since_a_time(store: Arc<dyn Store>) {
    let f = fixture(&store, "cap", "CAP").await;
    let coder = agent(&store, f.ws.id, "coder", 5).await;
    let other = agent(&store, f.ws.id, "other", 5).await;
    let i = issue(&store, f.ws.id, "Do it", IssueStatus::Todo).await;
    let j = issue(&store, f.ws.id, "Elsewhere", IssueStatus::Todo).await;
    let before = Utc::now() - TimeDelta::seconds(1);
    // A person's (depth 0) run does not count; agents' (depth ≥ 1) do, on their issue only.
    for (issue, agent, depth) in [
        (i.id, coder.id, 0),
        (i.id, other.id, 1),
        (j.id, coder.id, 2),
    ] {
        let new = NewRun {
            trigger: RunTrigger::Mention,
            chain_depth: depth,
            ..NewRun::assignment(f.ws.id, issue, agent)
        };
        let run = store.create_run(&new).await.unwrap();
        store
            .finish_run(run.id, &bare_outcome(RunStatus::Cancelled))
            .await
            .unwrap();
    }
    let again = NewRun {
        trigger: RunTrigger::Mention,
        chain_depth: 3,
        ..NewRun::assignment(f.ws.id, i.id, coder.id)
    };
    store.create_run(&again).await.unwrap();
    assert_eq!(
        store
            .count_agent_triggered_runs(i.id, before)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .count_agent_triggered_runs(j.id, before)
            .await
            .unwrap(),
        1
    );
    let later = Utc::now() + TimeDelta::seconds(5);
    assert_eq!(
        store.count_agent_triggered_runs(i.id, later).await.unwrap(),
        0
    );
}

async fn loop_guard_limits_default_and_change(store: Arc<dyn Store>) {
    let f = fixture(&store, "lim", "LIM").await;
    assert_eq!(
        (f.ws.mention_depth_limit, f.ws.agent_runs_per_issue_per_hour),
        (3, 10)
    );
    let ws = store.set_workspace_limits(f.ws.id, 5, 200).await.unwrap();
    assert_eq!(
        (ws.mention_depth_limit, ws.agent_runs_per_issue_per_hour),
        (5, 200)
    );
    let read = store.get_workspace(f.ws.id).await.unwrap();
    assert_eq!(
        (read.mention_depth_limit, read.agent_runs_per_issue_per_hour),
        (5, 200)
    );
    // The repository setting is untouched by the limits and the other way round.
    let ws = store
        .set_workspace_repo(f.ws.id, Some("/src/x"))
        .await
        .unwrap();
    assert_eq!(
        (ws.mention_depth_limit, ws.repo_path.as_deref()),
        (5, Some("/src/x"))
    );
}
