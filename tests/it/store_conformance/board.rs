//! What the paged board reads: one column a page at a time, the grouped counts under a filter (which
//! must agree with the list), and the labels in use.

use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;

use super::{agent, fixture, issue, store_cases};

store_cases!(column_pages, counts_follow_the_filter, labels_in_use);

fn numbers(v: &[Issue]) -> Vec<i64> {
    v.iter().map(|i| i.key.number).collect()
}

/// One column read a page at a time, by cursor, gives the column in board order (position, then
/// number), with each issue once, also after a move reorders it.
async fn column_pages(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    for n in 0..9 {
        let status = if n % 3 == 0 {
            IssueStatus::Done
        } else {
            IssueStatus::Todo
        };
        issue(&store, f.ws.id, &format!("i{n}"), status).await;
    }
    // MUS-9 (todo, last) to the top; MUS-2 to the bottom.
    for (key, index) in [("MUS-9", 0), ("MUS-2", 99)] {
        store
            .move_issue(
                f.ws.id,
                &IssueKey::parse(key).unwrap(),
                IssueStatus::Todo,
                Some(index),
                Actor::System,
            )
            .await
            .unwrap();
    }
    let todo = |after: Option<IssueCursor>, limit: Option<i64>| {
        let store = store.clone();
        let filter = IssueFilter {
            statuses: vec![IssueStatus::Todo],
            after,
            limit,
            ..Default::default()
        };
        async move { store.list_issues(f.ws.id, &filter).await.unwrap() }
    };
    let whole = todo(None, None).await;
    assert_eq!(numbers(&whole), [9, 3, 5, 6, 8, 2]);
    let (mut read, mut after, mut pages) = (Vec::new(), None, 0);
    loop {
        let page = todo(after, Some(4)).await;
        assert!(page.len() <= 4);
        let Some(last) = page.last() else { break };
        after = Some(IssueCursor::after(last));
        read.extend(page);
        pages += 1;
    }
    assert_eq!(numbers(&read), numbers(&whole));
    assert_eq!(pages, 2);
    // A cursor past the column's end reads nothing; one of another column reads by list order.
    assert!(
        todo(Some(IssueCursor::after(&whole[5])), Some(4))
            .await
            .is_empty()
    );
    let done = store
        .list_issues(
            f.ws.id,
            &IssueFilter {
                statuses: vec![IssueStatus::Done],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(numbers(&done), [1, 4, 7]);
    let from_done = todo(Some(IssueCursor::after(&done[0])), None).await;
    assert!(from_done.is_empty(), "todo comes before done in list order");
}

/// `count_issues` counts per status exactly what `list_issues` lists, under every filter the board
/// offers (status, assignee, label, priority, text) and from a cursor on; statuses with none are left out.
async fn counts_follow_the_filter(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let coder = agent(&store, f.ws.id, "coder", 1).await;
    let statuses = [
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::Done,
        IssueStatus::Todo,
    ];
    for n in 0..20usize {
        let mut new = NewIssue::new(IssueTitle::parse(&format!("Task {n} parser")).unwrap());
        new.status = statuses[n % statuses.len()];
        if n % 2 == 0 {
            new.labels = Label::parse_list("bug,perf").unwrap();
        }
        if n % 3 == 0 {
            new.assignee = Some(Assignee::Agent(coder.id));
        }
        if n % 4 == 0 {
            new.priority = Priority::Urgent;
        }
        if n == 7 {
            new.title = IssueTitle::parse("Write the 100% guide").unwrap();
        }
        store.create_issue(f.ws.id, &new).await.unwrap();
    }
    let filters = [
        IssueFilter::default(),
        IssueFilter {
            statuses: vec![IssueStatus::Todo, IssueStatus::Done],
            ..Default::default()
        },
        IssueFilter {
            assignee: Some(Assignee::Agent(coder.id)),
            ..Default::default()
        },
        IssueFilter {
            label: Some(Label::parse("perf").unwrap()),
            ..Default::default()
        },
        IssueFilter {
            priority: Some(Priority::Urgent),
            label: Some(Label::parse("bug").unwrap()),
            ..Default::default()
        },
        IssueFilter {
            text: Some("PARSER".into()),
            ..Default::default()
        },
        IssueFilter {
            text: Some("100%".into()),
            ..Default::default()
        },
        IssueFilter {
            text: Some("mus-1".into()),
            statuses: vec![IssueStatus::Todo],
            ..Default::default()
        },
        IssueFilter {
            label: Some(Label::parse("nope").unwrap()),
            ..Default::default()
        },
    ];
    for filter in filters {
        let listed = store.list_issues(f.ws.id, &filter).await.unwrap();
        let mut expected: Vec<(IssueStatus, i64)> = Vec::new();
        for status in IssueStatus::ALL {
            let n = listed.iter().filter(|i| i.status == *status).count();
            if n > 0 {
                expected.push((*status, i64::try_from(n).unwrap()));
            }
        }
        let counted = store.count_issues(f.ws.id, &filter).await.unwrap();
        assert_eq!(counted, expected, "{filter:?}");
        // From a cursor in the middle of the todo column: what is left of it.
        let todo = IssueFilter {
            statuses: vec![IssueStatus::Todo],
            ..filter.clone()
        };
        let column = store.list_issues(f.ws.id, &todo).await.unwrap();
        if let Some(first) = column.first() {
            let rest = IssueFilter {
                after: Some(IssueCursor::after(first)),
                ..todo
            };
            let counted = store.count_issues(f.ws.id, &rest).await.unwrap();
            let left = i64::try_from(column.len() - 1).unwrap();
            let expected: Vec<_> = (left > 0)
                .then_some((IssueStatus::Todo, left))
                .into_iter()
                .collect();
            assert_eq!(counted, expected, "{filter:?} after the first");
        }
    }
    // The counts stay in the workspace.
    let other = fixture(&store, "other", "OTH").await;
    assert!(
        store
            .count_issues(other.ws.id, &IssueFilter::default())
            .await
            .unwrap()
            .is_empty()
    );
}

/// The labels in use in a workspace, once each and sorted, whatever the backend; none from another.
async fn labels_in_use(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "MUS").await;
    let other = fixture(&store, "other", "OTH").await;
    assert!(store.list_issue_labels(f.ws.id).await.unwrap().is_empty());
    for (ws, labels) in [
        (f.ws.id, "perf,bug"),
        (f.ws.id, "bug,UI,api"),
        (f.ws.id, ""),
        (other.ws.id, "secret"),
    ] {
        let mut new = NewIssue::new(IssueTitle::parse("x").unwrap());
        new.labels = if labels.is_empty() {
            Vec::new()
        } else {
            Label::parse_list(labels).unwrap()
        };
        store.create_issue(ws, &new).await.unwrap();
    }
    let labels: Vec<String> = store
        .list_issue_labels(f.ws.id)
        .await
        .unwrap()
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
    assert_eq!(labels, ["UI", "api", "bug", "perf"]);
}
