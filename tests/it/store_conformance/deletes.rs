//! Editing and deleting comments, and deleting issues with what hangs off them.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::{RunFilter, Store};
use muster_tests::engine::{bare_outcome, claim_next};

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases, user};

store_cases!(
    comment_edits_and_deletes,
    issue_deletes_take_everything_along
);

async fn comment_edits_and_deletes(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let bob = user(&store, "bob@example.com").await;
    let i = issue(&store, f.ws.id, "Talk", IssueStatus::Todo).await;
    let other = issue(&store, f.ws.id, "Elsewhere", IssueStatus::Todo).await;
    let say = |body: &str| NewComment::parse(CommentAuthor::User(bob.id), body).unwrap();
    let first = store.add_comment(i.id, &say("Frist")).await.unwrap();
    let second = store.add_comment(i.id, &say("Second")).await.unwrap();
    assert_eq!(first.edited_at, None, "a new comment is not edited");
    assert_eq!(store.get_comment(i.id, first.id).await.unwrap(), first);
    assert_not_found(store.get_comment(other.id, first.id).await);
    assert_not_found(store.get_comment(i.id, CommentId::new()).await);

    let before = Utc::now() - TimeDelta::seconds(1);
    let edited = store.edit_comment(i.id, first.id, "First").await.unwrap();
    assert_eq!(
        (
            edited.id,
            edited.body.as_str(),
            edited.author,
            edited.created_at
        ),
        (first.id, "First", first.author, first.created_at),
        "only the text changes"
    );
    assert!(edited.edited_at.is_some_and(|at| at > before), "{edited:?}");
    assert_eq!(store.get_comment(i.id, first.id).await.unwrap(), edited);
    assert_eq!(
        store.list_comments(i.id).await.unwrap(),
        vec![edited.clone(), second.clone()],
        "an edit keeps the comment's place"
    );
    assert_not_found(store.edit_comment(other.id, first.id, "x").await);

    assert_not_found(store.delete_comment(other.id, first.id).await);
    store.delete_comment(i.id, first.id).await.unwrap();
    assert_eq!(store.list_comments(i.id).await.unwrap(), vec![second]);
    assert_not_found(store.delete_comment(i.id, first.id).await);
    assert_not_found(store.edit_comment(i.id, first.id, "again").await);
    assert_not_found(store.get_comment(i.id, first.id).await);
}

async fn issue_deletes_take_everything_along(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let doomed = issue(&store, f.ws.id, "Doomed", IssueStatus::Todo).await;
    let kept = issue(&store, f.ws.id, "Kept", IssueStatus::Todo).await;
    let mut child = NewIssue::new(IssueTitle::parse("Child").unwrap());
    child.parent = Some(doomed.id);
    let child = store.create_issue(f.ws.id, &child).await.unwrap();
    store
        .add_comment(
            doomed.id,
            &NewComment::parse(CommentAuthor::User(f.owner.id), "bye").unwrap(),
        )
        .await
        .unwrap();
    let kept_comment = store
        .add_comment(
            kept.id,
            &NewComment::parse(CommentAuthor::User(f.owner.id), "stay").unwrap(),
        )
        .await
        .unwrap();
    let run = store
        .create_run(&NewRun::assignment(f.ws.id, doomed.id, coder.id))
        .await
        .unwrap();
    store
        .append_run_events(
            run.id,
            &[NewRunEvent {
                seq: 1,
                at: Utc::now(),
                kind: "text".into(),
                payload: serde_json::json!({"text": "working"}),
            }],
        )
        .await
        .unwrap();
    let kept_run = store
        .create_run(&NewRun::assignment(f.ws.id, kept.id, coder.id))
        .await
        .unwrap();
    store
        .create_inbox_item(&NewInboxItem {
            workspace_id: f.ws.id,
            user_id: None,
            kind: InboxKind::RunFailed,
            issue_id: Some(doomed.id),
            run_id: Some(run.id),
            comment_id: None,
            message: "it failed".into(),
        })
        .await
        .unwrap();

    // A claimed (live) run blocks the delete: its process must be stopped first.
    let claimed = claim_next(store.as_ref(), "embedded", TimeDelta::seconds(30))
        .await
        .expect("a queued run");
    assert_eq!(claimed.id, run.id, "the oldest queued run");
    assert_conflict(store.delete_issue(f.ws.id, &doomed.key).await, "run_live");
    assert_eq!(
        store.get_issue(f.ws.id, &doomed.key).await.unwrap().id,
        doomed.id
    );

    store
        .finish_run(run.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    let other = fixture(&store, "other", "OTH").await;
    assert_not_found(store.delete_issue(other.ws.id, &doomed.key).await);
    let deleted = store.delete_issue(f.ws.id, &doomed.key).await.unwrap();
    assert_eq!((deleted.id, deleted.title.as_str()), (doomed.id, "Doomed"));

    assert_not_found(store.get_issue(f.ws.id, &doomed.key).await);
    assert_not_found(store.get_run(run.id).await);
    assert!(store.list_comments(doomed.id).await.unwrap().is_empty());
    assert!(store.list_activity(doomed.id).await.unwrap().is_empty());
    assert!(
        store
            .run_events_since(run.id, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .list_inbox(f.ws.id, f.owner.id)
            .await
            .unwrap()
            .is_empty(),
        "its inbox items go too"
    );
    assert_eq!(
        store.get_issue_by_id(child.id).await.unwrap().parent,
        None,
        "a sub-issue stays, without its parent"
    );
    // Nothing else is touched.
    assert_eq!(
        store.list_comments(kept.id).await.unwrap(),
        vec![kept_comment]
    );
    let runs = store
        .list_runs(f.ws.id, &RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [kept_run.id]);
    assert_not_found(store.delete_issue(f.ws.id, &doomed.key).await);
    // The number is not reused.
    let next = issue(&store, f.ws.id, "Next", IssueStatus::Todo).await;
    assert_eq!(next.key.number, 4);
}
