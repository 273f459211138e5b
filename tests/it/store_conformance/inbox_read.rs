//! Inbox read state per person, and the latest run of each issue (the board's run indicators).

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_not_found, fixture, issue, store_cases, user};
use muster_tests::engine::bare_outcome;

store_cases!(
    inbox_read_state_is_per_person,
    a_new_member_sees_workspace_items_made_since_they_joined,
    a_mention_item_links_its_comment_while_it_exists,
    the_latest_delivery_is_the_one_awaiting_review,
    latest_runs_are_one_per_issue
);

async fn item(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    user: Option<UserId>,
    message: &str,
) -> InboxItem {
    store
        .create_inbox_item(&NewInboxItem {
            workspace_id: ws,
            user_id: user,
            kind: InboxKind::RunFailed,
            issue_id: None,
            run_id: None,
            comment_id: None,
            message: message.into(),
        })
        .await
        .unwrap()
}

async fn unread_ids(store: &Arc<dyn Store>, ws: WorkspaceId, user: UserId) -> Vec<InboxItemId> {
    store
        .list_inbox_with_read(ws, user, true)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.item.id)
        .collect()
}

async fn inbox_read_state_is_per_person(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let bob = user(&store, "bob@team.test").await;
    store
        .add_member(f.ws.id, bob.id, Role::Member)
        .await
        .unwrap();
    let everyone = item(&store, f.ws.id, None, "for everyone").await;
    let mine = item(&store, f.ws.id, Some(f.owner.id), "for the owner").await;
    let bobs = item(&store, f.ws.id, Some(bob.id), "for bob").await;
    let elsewhere = item(&store, other.ws.id, None, "another workspace").await;

    assert_eq!(
        store.count_unread_inbox(f.ws.id, f.owner.id).await.unwrap(),
        2
    );
    assert_eq!(store.count_unread_inbox(f.ws.id, bob.id).await.unwrap(), 2);
    let at = Utc::now();
    store
        .mark_inbox_read(f.ws.id, f.owner.id, everyone.id, at)
        .await
        .unwrap();
    // Again is a no-op, and the first read time stays.
    store
        .mark_inbox_read(f.ws.id, f.owner.id, everyone.id, at + TimeDelta::hours(1))
        .await
        .unwrap();
    assert_eq!(
        store.count_unread_inbox(f.ws.id, f.owner.id).await.unwrap(),
        1
    );
    assert_eq!(
        store.count_unread_inbox(f.ws.id, bob.id).await.unwrap(),
        2,
        "reading an item for everyone reads it only for the reader"
    );
    let all = store
        .list_inbox_with_read(f.ws.id, f.owner.id, false)
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|e| e.item.id).collect::<Vec<_>>(),
        vec![mine.id, everyone.id],
        "newest first, only what the owner may see"
    );
    let read_at = all[1].read_at.expect("read");
    assert!(
        (read_at - at).num_milliseconds().abs() < 1,
        "{read_at} vs {at}"
    );
    assert_eq!(all[0].read_at, None);
    assert_eq!(unread_ids(&store, f.ws.id, f.owner.id).await, vec![mine.id]);

    // Items the reader cannot see are not found: someone else's, another workspace's, unknown ones.
    assert_not_found(
        store
            .mark_inbox_read(f.ws.id, f.owner.id, bobs.id, at)
            .await,
    );
    assert_not_found(
        store
            .mark_inbox_read(f.ws.id, f.owner.id, elsewhere.id, at)
            .await,
    );
    assert_not_found(
        store
            .mark_inbox_read(other.ws.id, f.owner.id, bobs.id, at)
            .await,
    );
    assert_not_found(
        store
            .mark_inbox_read(f.ws.id, f.owner.id, InboxItemId::new(), at)
            .await,
    );

    assert_eq!(
        store
            .mark_all_inbox_read(f.ws.id, bob.id, at)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .mark_all_inbox_read(f.ws.id, bob.id, at)
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.count_unread_inbox(f.ws.id, bob.id).await.unwrap(), 0);
    assert!(unread_ids(&store, f.ws.id, bob.id).await.is_empty());
    assert_eq!(
        store.count_unread_inbox(f.ws.id, f.owner.id).await.unwrap(),
        1
    );
    assert_eq!(
        store
            .count_unread_inbox(other.ws.id, other.owner.id)
            .await
            .unwrap(),
        1
    );
}

async fn the_latest_delivery_is_the_one_awaiting_review(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let bob = user(&store, "bob@team.test").await;
    store
        .add_member(f.ws.id, bob.id, Role::Member)
        .await
        .unwrap();
    let a = issue(&store, f.ws.id, "A", IssueStatus::InReview).await;
    let b = issue(&store, f.ws.id, "B", IssueStatus::InReview).await;
    let new = |kind: InboxKind, user: Option<UserId>, issue: Option<IssueId>, message: &str| {
        NewInboxItem {
            workspace_id: f.ws.id,
            user_id: user,
            kind,
            issue_id: issue,
            run_id: None,
            comment_id: None,
            message: message.into(),
        }
    };
    let create = |item: NewInboxItem| {
        let store = store.clone();
        async move { store.create_inbox_item(&item).await.unwrap() }
    };
    let review = InboxKind::AwaitingReview;
    let owner = Some(f.owner.id);
    create(new(review, owner, Some(a.id), "first hop")).await;
    let failed = create(new(InboxKind::RunFailed, owner, Some(a.id), "a failure")).await;
    let bobs = create(new(review, Some(bob.id), Some(a.id), "for bob")).await;
    let everyone = create(new(review, None, Some(a.id), "for everyone")).await;
    let other_issue = create(new(review, owner, Some(b.id), "issue B")).await;
    create(new(review, owner, Some(a.id), "second hop")).await;
    let latest = create(new(review, owner, Some(a.id), "third hop")).await;

    let messages = |user: UserId| {
        let store = store.clone();
        async move {
            store
                .list_inbox(f.ws.id, user)
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.message)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        messages(f.owner.id).await,
        vec![
            latest.message.clone(),
            other_issue.message.clone(),
            everyone.message.clone(),
            failed.message.clone()
        ],
        "one review item per issue and addressee, the latest; other kinds and issues stay"
    );
    assert_eq!(
        messages(bob.id).await,
        vec![everyone.message.clone(), bobs.message.clone()],
        "another addressee's item is not replaced by the owner's"
    );
    assert_eq!(
        store.count_unread_inbox(f.ws.id, f.owner.id).await.unwrap(),
        4
    );
}

async fn latest_runs_are_one_per_issue(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let reviewer = agent(&store, f.ws.id, "reviewer", 1).await;
    let stranger = agent(&store, other.ws.id, "coder", 1).await;
    let a = issue(&store, f.ws.id, "A", IssueStatus::Todo).await;
    let b = issue(&store, f.ws.id, "B", IssueStatus::Todo).await;
    let _no_runs = issue(&store, f.ws.id, "C", IssueStatus::Todo).await;
    let o = issue(&store, other.ws.id, "O", IssueStatus::Todo).await;
    let run = |issue: IssueId, agent: AgentId, ws: WorkspaceId, attempt: i32| NewRun {
        attempt,
        ..NewRun::assignment(ws, issue, agent)
    };
    let a1 = store
        .create_run(&run(a.id, coder.id, f.ws.id, 1))
        .await
        .unwrap();
    store
        .finish_run(a1.id, &bare_outcome(RunStatus::Cancelled))
        .await
        .unwrap();
    let a2 = store
        .create_run(&run(a.id, coder.id, f.ws.id, 2))
        .await
        .unwrap();
    let b1 = store
        .create_run(&run(b.id, reviewer.id, f.ws.id, 1))
        .await
        .unwrap();
    store
        .create_run(&run(o.id, stranger.id, other.ws.id, 1))
        .await
        .unwrap();

    let mut latest: Vec<(IssueId, RunId)> = store
        .latest_runs(f.ws.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.issue_id, r.id))
        .collect();
    latest.sort();
    let mut expected = vec![(a.id, a2.id), (b.id, b1.id)];
    expected.sort();
    assert_eq!(latest, expected);
}

async fn a_mention_item_links_its_comment_while_it_exists(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let i = issue(&store, f.ws.id, "Mentions", IssueStatus::Todo).await;
    let note = NewComment::parse(CommentAuthor::User(f.owner.id), "cc @owner").unwrap();
    let c = store.add_comment(i.id, &note).await.unwrap();
    let created = store
        .create_inbox_item(&NewInboxItem {
            workspace_id: f.ws.id,
            user_id: Some(f.owner.id),
            kind: InboxKind::Mentioned,
            issue_id: Some(i.id),
            run_id: None,
            comment_id: Some(c.id),
            message: "owner mentioned you".into(),
        })
        .await
        .unwrap();
    assert_eq!(created.comment_id, Some(c.id));
    let listed = store.list_inbox(f.ws.id, f.owner.id).await.unwrap();
    assert_eq!(listed, vec![created.clone()]);
    let entries = store
        .list_inbox_with_read(f.ws.id, f.owner.id, false)
        .await
        .unwrap();
    assert_eq!(entries[0].item.comment_id, Some(c.id));
    // The comment goes; the item stays, without its link.
    store.delete_comment(i.id, c.id).await.unwrap();
    let listed = store.list_inbox(f.ws.id, f.owner.id).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].comment_id, None);
}

/// Issue 27: a new member's inbox does not open with the workspace's past (seven unread items, cap
/// notices among them, from before they joined): workspace-wide items count from their joining; items
/// addressed to them always.
async fn a_new_member_sees_workspace_items_made_since_they_joined(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let before = item(&store, f.ws.id, None, "from before").await;
    // Joined strictly later than the item was made, whatever the clock's resolution.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let grace = user(&store, "grace@team.test").await;
    store
        .add_member(f.ws.id, grace.id, Role::Member)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let after = item(&store, f.ws.id, None, "since").await;
    let hers = item(&store, f.ws.id, Some(grace.id), "for grace").await;
    let mut seen = unread_ids(&store, f.ws.id, grace.id).await;
    seen.sort();
    let mut expected = vec![after.id, hers.id];
    expected.sort();
    assert_eq!(seen, expected);
    assert_eq!(
        store.count_unread_inbox(f.ws.id, grace.id).await.unwrap(),
        2
    );
    assert_eq!(store.list_inbox(f.ws.id, grace.id).await.unwrap().len(), 2);
    assert_not_found(
        store
            .mark_inbox_read(f.ws.id, grace.id, before.id, Utc::now())
            .await,
    );
    assert_eq!(
        store
            .mark_all_inbox_read(f.ws.id, grace.id, Utc::now())
            .await
            .unwrap(),
        2
    );
    // The owner, there from the start, sees both workspace items and none of Grace's.
    assert_eq!(
        store.list_inbox(f.ws.id, f.owner.id).await.unwrap().len(),
        2
    );
}
