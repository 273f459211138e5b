//! Issues (numbering, filters, updates, moves) and comments.

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases, user};

store_cases!(
    activity_trail,
    issues_are_numbered_per_workspace,
    concurrent_creates_get_distinct_numbers,
    issue_filters,
    issue_search_by_key,
    issue_updates,
    moves_reorder_columns,
    a_conditional_move_never_overwrites_a_move_made_meanwhile,
    comments,
    issue_list_pages,
    comment_pages,
);

/// Searching `ACM-1` finds that issue (and `ACM-1x`: a key prefix), case-insensitively, beside the title
/// and body matches; it never reaches into another workspace, and `_` stays literal.
async fn issue_search_by_key(store: Arc<dyn Store>) {
    let f = fixture(&store, "keys", "ACM").await;
    let other = fixture(&store, "others", "ACX").await;
    for n in 1..=12 {
        issue(
            &store,
            f.ws.id,
            &format!("Task number {n}"),
            IssueStatus::Todo,
        )
        .await;
    }
    issue(&store, other.ws.id, "Elsewhere", IssueStatus::Todo).await;
    let mut cited = NewIssue::new(IssueTitle::parse("Follow-up").unwrap())
        .with_body("see acm-2 for the background")
        .unwrap();
    cited.status = IssueStatus::Done;
    let cited = store.create_issue(f.ws.id, &cited).await.unwrap();
    let search = |ws: WorkspaceId, text: &str| {
        let store = store.clone();
        let filter = IssueFilter {
            text: Some(text.to_owned()),
            ..Default::default()
        };
        async move {
            let mut found: Vec<i64> = store
                .list_issues(ws, &filter)
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.key.number)
                .collect();
            found.sort_unstable();
            found
        }
    };
    assert_eq!(search(f.ws.id, "ACM-1").await, vec![1, 10, 11, 12, 13]);
    assert_eq!(search(f.ws.id, " acm-12 ").await, vec![12]);
    assert_eq!(search(f.ws.id, "ACM-13").await, vec![13], "the key itself");
    assert_eq!(cited.key.number, 13);
    assert_eq!(search(f.ws.id, "acm-2").await, vec![2, 13], "key or body");
    assert_eq!(search(f.ws.id, "ACM-").await.len(), 13);
    assert_eq!(search(f.ws.id, "ACM-99").await, Vec::<i64>::new());
    assert_eq!(search(f.ws.id, "ACM_1").await, Vec::<i64>::new());
    assert_eq!(search(f.ws.id, "number 1").await, vec![1, 10, 11, 12]);
    assert_eq!(search(other.ws.id, "ACM-1").await, Vec::<i64>::new());
    assert_eq!(search(other.ws.id, "acx-1").await, vec![1]);
}

async fn issues_are_numbered_per_workspace(store: Arc<dyn Store>) {
    let a = fixture(&store, "a", "AAA").await;
    let b = fixture(&store, "b", "BBB").await;
    let mut new = NewIssue::new(IssueTitle::parse("First").unwrap())
        .with_body("Body *md*")
        .unwrap();
    new.labels = Label::parse_list("bug,ui").unwrap();
    new.priority = Priority::High;
    new.created_by = Some(a.owner.id);
    let first = store.create_issue(a.ws.id, &new).await.unwrap();
    assert_eq!(first.key.to_string(), "AAA-1");
    assert_eq!(
        (first.status, first.priority, first.body.as_str()),
        (IssueStatus::Backlog, Priority::High, "Body *md*")
    );
    assert_eq!(first.labels, Label::parse_list("ui,bug").unwrap());
    let second = issue(&store, a.ws.id, "Second", IssueStatus::Backlog).await;
    assert_eq!(second.key.to_string(), "AAA-2");
    assert!(
        second.position > first.position,
        "new issues go to the bottom of the column"
    );
    assert_eq!(
        issue(&store, b.ws.id, "Other", IssueStatus::Todo)
            .await
            .key
            .to_string(),
        "BBB-1"
    );

    assert_eq!(
        store
            .get_issue(a.ws.id, &IssueKey::parse("aaa-1").unwrap())
            .await
            .unwrap(),
        first
    );
    assert_eq!(store.get_issue_by_id(first.id).await.unwrap(), first);
    // A key of another workspace, or a number that exists only there, is not found.
    assert_not_found(
        store
            .get_issue(a.ws.id, &IssueKey::parse("BBB-1").unwrap())
            .await,
    );
    assert_not_found(
        store
            .get_issue(b.ws.id, &IssueKey::parse("BBB-2").unwrap())
            .await,
    );
    assert_eq!(store.get_workspace(a.ws.id).await.unwrap().issue_counter, 2);
}

async fn concurrent_creates_get_distinct_numbers(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                issue(&store, f.ws.id, &format!("Issue {i}"), IssueStatus::Todo).await
            })
        })
        .collect();
    let mut numbers = Vec::new();
    for t in tasks {
        numbers.push(t.await.unwrap().key.number);
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=16).collect::<Vec<_>>());
}

async fn issue_filters(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let mut a = NewIssue::new(IssueTitle::parse("Fix 100% CPU in parser").unwrap());
    a.status = IssueStatus::Todo;
    a.labels = Label::parse_list("bug,perf").unwrap();
    a.assignee = Some(Assignee::Agent(coder.id));
    a.priority = Priority::Urgent;
    let a = store.create_issue(f.ws.id, &a).await.unwrap();
    let mut b = NewIssue::new(IssueTitle::parse("Write docs").unwrap())
        .with_body("mention the PARSER")
        .unwrap();
    b.assignee = Some(Assignee::User(f.owner.id));
    b.labels = Label::parse_list("docs").unwrap();
    let b = store.create_issue(f.ws.id, &b).await.unwrap();
    let c = issue(&store, f.ws.id, "Done thing", IssueStatus::Done).await;

    let keys = |v: Vec<Issue>| v.into_iter().map(|i| i.key.number).collect::<Vec<_>>();
    let all = store
        .list_issues(f.ws.id, &IssueFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 3);
    let by = |filter: IssueFilter| {
        let store = store.clone();
        async move { keys(store.list_issues(f.ws.id, &filter).await.unwrap()) }
    };
    assert_eq!(
        by(IssueFilter {
            statuses: vec![IssueStatus::Todo, IssueStatus::Done],
            ..Default::default()
        })
        .await
        .len(),
        2
    );
    assert_eq!(
        by(IssueFilter {
            statuses: vec![IssueStatus::Backlog],
            ..Default::default()
        })
        .await,
        vec![b.key.number]
    );
    assert_eq!(
        by(IssueFilter {
            assignee: Some(Assignee::Agent(coder.id)),
            ..Default::default()
        })
        .await,
        vec![a.key.number]
    );
    assert_eq!(
        by(IssueFilter {
            assignee: Some(Assignee::User(f.owner.id)),
            ..Default::default()
        })
        .await,
        vec![b.key.number]
    );
    assert_eq!(
        by(IssueFilter {
            label: Some(Label::parse("perf").unwrap()),
            ..Default::default()
        })
        .await,
        vec![a.key.number]
    );
    assert_eq!(
        by(IssueFilter {
            label: Some(Label::parse("nope").unwrap()),
            ..Default::default()
        })
        .await,
        Vec::<i64>::new()
    );
    assert_eq!(
        by(IssueFilter {
            priority: Some(Priority::Urgent),
            ..Default::default()
        })
        .await,
        vec![a.key.number]
    );
    // Text search: case-insensitive, in title or body, with LIKE wildcards taken literally.
    let mut found = by(IssueFilter {
        text: Some("parser".into()),
        ..Default::default()
    })
    .await;
    found.sort_unstable();
    assert_eq!(found, vec![a.key.number, b.key.number]);
    assert_eq!(
        by(IssueFilter {
            text: Some("100%".into()),
            ..Default::default()
        })
        .await,
        vec![a.key.number]
    );
    assert_eq!(
        by(IssueFilter {
            text: Some("1_0".into()),
            ..Default::default()
        })
        .await,
        Vec::<i64>::new()
    );
    assert_eq!(
        by(IssueFilter {
            text: Some("%".into()),
            statuses: vec![IssueStatus::Done],
            ..Default::default()
        })
        .await,
        Vec::<i64>::new()
    );
    let _ = c;
    // Another workspace sees none of them.
    let other = fixture(&store, "other", "OTH").await;
    assert!(
        store
            .list_issues(other.ws.id, &IssueFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

async fn issue_updates(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let i = issue(&store, f.ws.id, "Old title", IssueStatus::Todo).await;
    let patch = IssuePatch {
        title: Some(IssueTitle::parse("New title").unwrap()),
        assignee: Some(Some(Assignee::Agent(coder.id))),
        labels: Some(Label::parse_list("x").unwrap()),
        ..Default::default()
    };
    let u = store
        .update_issue(f.ws.id, &i.key, &patch, Actor::System)
        .await
        .unwrap();
    assert_eq!(u.title.as_str(), "New title");
    assert_eq!(u.assignee, Some(Assignee::Agent(coder.id)));
    assert_eq!(u.body, i.body, "unset fields stay");
    assert!(u.updated_at >= i.updated_at);
    // Leaving the assignee alone keeps it; Some(None) clears it; a user replaces an agent.
    let u = store
        .update_issue(
            f.ws.id,
            &i.key,
            &IssuePatch {
                body: Some("b".into()),
                ..Default::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!(
        (u.body.as_str(), u.assignee),
        ("b", Some(Assignee::Agent(coder.id)))
    );
    let u = store
        .update_issue(
            f.ws.id,
            &i.key,
            &IssuePatch {
                assignee: Some(Some(Assignee::User(f.owner.id))),
                ..Default::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!(u.assignee, Some(Assignee::User(f.owner.id)));
    let u = store
        .update_issue(
            f.ws.id,
            &i.key,
            &IssuePatch {
                assignee: Some(None),
                priority: Some(Priority::Low),
                ..Default::default()
            },
            Actor::System,
        )
        .await
        .unwrap();
    assert_eq!((u.assignee, u.priority), (None, Priority::Low));
    assert_not_found(
        store
            .update_issue(
                f.ws.id,
                &IssueKey::parse("MUS-99").unwrap(),
                &patch,
                Actor::System,
            )
            .await,
    );
}

async fn moves_reorder_columns(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let a = issue(&store, f.ws.id, "a", IssueStatus::Todo).await;
    let b = issue(&store, f.ws.id, "b", IssueStatus::Todo).await;
    let c = issue(&store, f.ws.id, "c", IssueStatus::Backlog).await;
    let column = |status| {
        let store = store.clone();
        async move {
            let filter = IssueFilter {
                statuses: vec![status],
                ..Default::default()
            };
            store
                .list_issues(f.ws.id, &filter)
                .await
                .unwrap()
                .into_iter()
                .map(|i| i.title.as_str().to_owned())
                .collect::<Vec<_>>()
        }
    };
    let moved = store
        .move_issue(f.ws.id, &c.key, IssueStatus::Todo, Some(0), Actor::System)
        .await
        .unwrap();
    assert_eq!(moved.status, IssueStatus::Todo);
    assert_eq!(column(IssueStatus::Todo).await, ["c", "a", "b"]);
    assert!(column(IssueStatus::Backlog).await.is_empty());
    // Within a column, and past the end.
    store
        .move_issue(f.ws.id, &a.key, IssueStatus::Todo, Some(99), Actor::System)
        .await
        .unwrap();
    assert_eq!(column(IssueStatus::Todo).await, ["c", "b", "a"]);
    store
        .move_issue(f.ws.id, &b.key, IssueStatus::Done, None, Actor::System)
        .await
        .unwrap();
    assert_eq!(column(IssueStatus::Todo).await, ["c", "a"]);
    assert_eq!(column(IssueStatus::Done).await, ["b"]);
    assert_not_found(
        store
            .move_issue(
                f.ws.id,
                &IssueKey::parse("MUS-42").unwrap(),
                IssueStatus::Done,
                None,
                Actor::System,
            )
            .await,
    );
}

async fn comments(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let bob = user(&store, "bob@example.com").await;
    let i = issue(&store, f.ws.id, "Talk", IssueStatus::Todo).await;
    let first = store
        .add_comment(
            i.id,
            &NewComment::parse(CommentAuthor::User(bob.id), "Looks **good**").unwrap(),
        )
        .await
        .unwrap();
    let second = store
        .add_comment(
            i.id,
            &NewComment::parse(CommentAuthor::Agent(coder.id), "Done").unwrap(),
        )
        .await
        .unwrap();
    let third = store
        .add_comment(
            i.id,
            &NewComment::parse(CommentAuthor::System, "Moved to done").unwrap(),
        )
        .await
        .unwrap();
    let listed = store.list_comments(i.id).await.unwrap();
    assert_eq!(listed, vec![first.clone(), second, third]);
    assert_eq!(first.author, CommentAuthor::User(bob.id));
    assert_eq!(listed[2].author, CommentAuthor::System);
    assert!(
        store
            .list_comments(IssueId::new())
            .await
            .unwrap()
            .is_empty()
    );
    let orphan = store
        .add_comment(
            IssueId::new(),
            &NewComment::parse(CommentAuthor::System, "x").unwrap(),
        )
        .await;
    assert_conflict(orphan, "foreign_key");
}

async fn activity_trail(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let mut new = NewIssue::new(IssueTitle::parse("Tracked").unwrap());
    new.created_by = Some(f.owner.id);
    let i = store.create_issue(f.ws.id, &new).await.unwrap();
    let by_owner = Actor::User(f.owner.id);
    // A patch that changes two fields and repeats a third records two lines.
    let patch = IssuePatch {
        title: Some(IssueTitle::parse("Tracked").unwrap()),
        priority: Some(Priority::High),
        assignee: Some(Some(Assignee::Agent(coder.id))),
        ..Default::default()
    };
    store
        .update_issue(f.ws.id, &i.key, &patch, by_owner)
        .await
        .unwrap();
    store
        .move_issue(
            f.ws.id,
            &i.key,
            IssueStatus::Todo,
            None,
            Actor::Agent(coder.id),
        )
        .await
        .unwrap();
    store
        .move_issue(f.ws.id, &i.key, IssueStatus::Todo, Some(0), by_owner)
        .await
        .unwrap();
    let trail = store.list_activity(i.id).await.unwrap();
    let lines: Vec<_> = trail
        .iter()
        .map(|a| (a.kind, a.actor, a.detail.clone()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                ActivityKind::Created,
                by_owner,
                serde_json::json!({ "status": "backlog" })
            ),
            (
                ActivityKind::Priority,
                by_owner,
                serde_json::json!({ "from": "none", "to": "high" })
            ),
            (
                ActivityKind::Assignee,
                by_owner,
                serde_json::json!({ "from": null, "to": { "type": "agent", "id": coder.id } })
            ),
            (
                ActivityKind::Status,
                Actor::Agent(coder.id),
                serde_json::json!({ "from": "backlog", "to": "todo" })
            ),
        ],
        "a reorder within a column is not a status change"
    );
    assert!(trail.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(
        store
            .list_activity(IssueId::new())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Paging the issue list: pages of `limit` after a cursor, in board order (column, position, number),
/// add up to the whole list with nothing twice, filters included.
async fn issue_list_pages(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let statuses = [
        IssueStatus::Done,
        IssueStatus::Todo,
        IssueStatus::Cancelled,
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::Blocked,
        IssueStatus::InReview,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::Backlog,
        IssueStatus::Todo,
    ];
    for (n, status) in statuses.iter().enumerate() {
        issue(&store, f.ws.id, &format!("i{n}"), *status).await;
    }
    // Position order differs from number order in one column.
    let last_todo = IssueKey::parse("MUS-11").unwrap();
    store
        .move_issue(
            f.ws.id,
            &last_todo,
            IssueStatus::Todo,
            Some(0),
            Actor::System,
        )
        .await
        .unwrap();
    let numbers = |v: &[Issue]| v.iter().map(|i| i.key.number).collect::<Vec<_>>();
    let page = |filter: IssueFilter| {
        let store = store.clone();
        async move { store.list_issues(f.ws.id, &filter).await.unwrap() }
    };
    let whole = page(IssueFilter::default()).await;
    assert_eq!(numbers(&whole), [4, 10, 11, 2, 5, 8, 9, 7, 1, 6, 3]);
    for (limit, statuses) in [
        (1, vec![]),
        (3, vec![]),
        (4, vec![IssueStatus::Todo, IssueStatus::Done]),
    ] {
        let wanted = page(IssueFilter {
            statuses: statuses.clone(),
            ..Default::default()
        })
        .await;
        let (mut read, mut after) = (Vec::new(), None);
        loop {
            let got = page(IssueFilter {
                statuses: statuses.clone(),
                after,
                limit: Some(limit),
                ..Default::default()
            })
            .await;
            assert!(got.len() <= usize::try_from(limit).unwrap());
            let Some(last) = got.last() else { break };
            after = Some(IssueCursor::after(last));
            read.extend(got);
        }
        assert_eq!(
            numbers(&read),
            numbers(&wanted),
            "limit {limit} {statuses:?}"
        );
    }
    // Cursors survive their text form.
    let cursor = IssueCursor::after(&whole[4]);
    assert_eq!(cursor.to_string().parse::<IssueCursor>().unwrap(), cursor);
    let rest = page(IssueFilter {
        after: Some(cursor),
        limit: Some(100),
        ..Default::default()
    })
    .await;
    assert_eq!(rest, whole[5..].to_vec());
    for bad in ["", "todo", "todo:1", "nope:1:2", "todo:x:2", "todo:1:2:3"] {
        assert!(bad.parse::<IssueCursor>().is_err(), "{bad:?}");
    }
}

/// Paging an issue's comments: oldest first, after a comment of that issue; any other cursor is
/// `NotFound`.
async fn comment_pages(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let i = issue(&store, f.ws.id, "Talk", IssueStatus::Todo).await;
    let other = issue(&store, f.ws.id, "Elsewhere", IssueStatus::Todo).await;
    let say = |issue: IssueId, body: String| {
        let store = store.clone();
        async move {
            let new = NewComment::parse(CommentAuthor::System, &body).unwrap();
            store.add_comment(issue, &new).await.unwrap()
        }
    };
    let mut all = Vec::new();
    for n in 0..7 {
        all.push(say(i.id, format!("c{n}")).await);
    }
    let foreign = say(other.id, "elsewhere".to_owned()).await;
    assert_eq!(store.list_comments(i.id).await.unwrap(), all);
    let page = |after: Option<CommentId>, limit: i64| {
        let store = store.clone();
        async move { store.list_comments_page(i.id, after, limit).await }
    };
    assert_eq!(page(None, 100).await.unwrap(), all);
    assert_eq!(page(None, 3).await.unwrap(), all[..3].to_vec());
    assert_eq!(page(Some(all[2].id), 3).await.unwrap(), all[3..6].to_vec());
    assert_eq!(page(Some(all[5].id), 3).await.unwrap(), all[6..].to_vec());
    assert!(page(Some(all[6].id), 3).await.unwrap().is_empty());
    assert_not_found(page(Some(foreign.id), 3).await);
    assert_not_found(page(Some(CommentId::new()), 3).await);
    assert!(
        store
            .list_comments_page(IssueId::new(), None, 3)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A move "only from todo" (a run starting marks its issue in progress) leaves an issue its agent already
/// moved to done as it is, writes nothing, and moves one still in todo.
async fn a_conditional_move_never_overwrites_a_move_made_meanwhile(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let done = issue(
        &store,
        f.ws.id,
        "Marked done by its agent",
        IssueStatus::Done,
    )
    .await;
    let todo = issue(&store, f.ws.id, "Still to do", IssueStatus::Todo).await;
    let before = store.list_activity(done.id).await.unwrap().len();
    let only_todo = [IssueStatus::Todo];
    let left = store
        .move_issue_when(
            f.ws.id,
            &done.key,
            Some(&only_todo),
            IssueStatus::InProgress,
            None,
            Actor::System,
        )
        .await
        .unwrap();
    assert!(left.is_none(), "{left:?}");
    let done_now = store.get_issue(f.ws.id, &done.key).await.unwrap();
    assert_eq!(done_now.status, IssueStatus::Done);
    assert_eq!(done_now.position, done.position);
    assert_eq!(store.list_activity(done.id).await.unwrap().len(), before);
    let moved = store
        .move_issue_when(
            f.ws.id,
            &todo.key,
            Some(&only_todo),
            IssueStatus::InProgress,
            None,
            Actor::System,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(moved.status, IssueStatus::InProgress);
    assert_not_found(
        store
            .move_issue_when(
                f.ws.id,
                &IssueKey::parse("ACM-99").unwrap(),
                None,
                IssueStatus::Done,
                None,
                Actor::System,
            )
            .await,
    );
}
