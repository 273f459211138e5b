//! The issue list: every sort, direction and grouping paged through a workspace full of ties gives the
//! order `IssueOrder::compare` gives in Rust, with nothing skipped or repeated; group counts; saved
//! views unique per workspace.

use std::sync::Arc;

use muster::domain::list::*;
use muster::domain::*;
use muster::store::Store;

use super::{agent, assert_conflict, assert_not_found, fixture, issue, store_cases, user};

store_cases!(
    every_order_pages_as_rust_sorts,
    group_counts_follow_list_order,
    saved_views_are_unique_per_workspace
);

/// A workspace of 37 issues with many ties (5 titles, 5 priorities, 7 statuses, 3 assignees, 2
/// parents), and a second workspace whose issues must never show.
async fn seeded(store: &Arc<dyn Store>) -> (WorkspaceId, Vec<Issue>) {
    let f = fixture(store, "team", "ACM").await;
    let other = fixture(store, "other", "OTH").await;
    issue(store, other.ws.id, "Elsewhere", IssueStatus::Todo).await;
    let ada = user(store, "ada@team.test").await;
    store
        .add_member(f.ws.id, ada.id, Role::Member)
        .await
        .unwrap();
    let bot = agent(store, f.ws.id, "bot", 1).await;
    let titles = ["Beta", "alpha", "Alpha", "beta: two", "Ünicode"];
    let mut parents = Vec::new();
    for n in 0..37_usize {
        let status = IssueStatus::ALL[n % IssueStatus::ALL.len()];
        let i = issue(store, f.ws.id, titles[n % titles.len()], status).await;
        let patch = IssuePatch {
            priority: Some(Priority::ALL[(n / 2) % Priority::ALL.len()]),
            assignee: Some(match n % 3 {
                0 => Some(Assignee::User(ada.id)),
                1 => Some(Assignee::Agent(bot.id)),
                _ => None,
            }),
            labels: Some(if n % 4 == 0 {
                vec![Label::parse("bug").unwrap()]
            } else {
                Vec::new()
            }),
            ..IssuePatch::default()
        };
        store
            .update_issue(f.ws.id, &i.key, &patch, Actor::System)
            .await
            .unwrap();
        if n < 2 {
            parents.push(i.id);
        } else if n % 5 == 0 {
            let parent = parents[n % 2];
            store
                .set_parent(f.ws.id, i.id, Some(parent), Actor::System)
                .await
                .unwrap()
                .unwrap();
        }
    }
    let all = store
        .list_issues(f.ws.id, &IssueFilter::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 37);
    (f.ws.id, all)
}

/// Every page of `order` under `filter`, `size` at a time, through the cursor of each page's last.
async fn pages(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    filter: &IssueFilter,
    order: &IssueOrder,
    size: i64,
) -> Vec<Issue> {
    let mut out: Vec<Issue> = Vec::new();
    let mut after: Option<ListCursor> = None;
    loop {
        let page = store
            .list_issue_page(ws, filter, order, after.as_ref(), size)
            .await
            .unwrap();
        assert!(page.len() as i64 <= size);
        let Some(last) = page.last() else { break };
        // The cursor goes through its string form, as clients hand it back.
        let raw = ListCursor::after(order, last).to_string();
        after = Some(ListCursor::parse(&raw, order).unwrap());
        let full = page.len() as i64 == size;
        out.extend(page);
        assert!(out.len() <= 100, "paging does not end for {order:?}");
        if !full {
            break;
        }
    }
    out
}

fn keys(issues: &[Issue]) -> Vec<String> {
    issues.iter().map(|i| i.key.to_string()).collect()
}

async fn every_order_pages_as_rust_sorts(store: Arc<dyn Store>) {
    let (ws, all) = seeded(&store).await;
    for &sort in IssueSort::ALL {
        for &dir in SortDir::ALL {
            for &group in IssueGrouping::ALL {
                let order = IssueOrder { sort, dir, group };
                let mut want = all.clone();
                want.sort_by(|a, b| order.compare(a, b));
                let got = pages(&store, ws, &IssueFilter::default(), &order, 7).await;
                assert_eq!(keys(&got), keys(&want), "{order:?}");
            }
        }
    }
    // Under a filter too: only the bug-labelled issues, grouped by status, by priority.
    let filter = IssueFilter {
        label: Some(Label::parse("bug").unwrap()),
        ..IssueFilter::default()
    };
    let order = IssueOrder {
        sort: IssueSort::Priority,
        dir: SortDir::Desc,
        group: IssueGrouping::Status,
    };
    let mut want: Vec<Issue> = all
        .iter()
        .filter(|i| i.labels.iter().any(|l| l.as_str() == "bug"))
        .cloned()
        .collect();
    want.sort_by(|a, b| order.compare(a, b));
    assert_eq!(want.len(), 10);
    let got = pages(&store, ws, &filter, &order, 3).await;
    assert_eq!(keys(&got), keys(&want));
}

async fn group_counts_follow_list_order(store: Arc<dyn Store>) {
    let (ws, all) = seeded(&store).await;
    for &group in IssueGrouping::ALL {
        let counts = store
            .count_issue_groups(ws, &IssueFilter::default(), group)
            .await
            .unwrap();
        // In Rust: the groups in list order, each counted.
        let order = IssueOrder {
            sort: IssueSort::Key,
            dir: SortDir::Asc,
            group,
        };
        let mut sorted = all.clone();
        sorted.sort_by(|a, b| order.compare(a, b));
        let mut want: Vec<(GroupKey, i64)> = Vec::new();
        for i in &sorted {
            let key = group.key_of(i);
            match want.last_mut() {
                Some((k, n)) if *k == key => *n += 1,
                _ => want.push((key, 1)),
            }
        }
        assert_eq!(counts, want, "{group:?}");
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<i64>(), 37);
    }
    let todo = IssueFilter {
        statuses: vec![IssueStatus::Todo],
        ..IssueFilter::default()
    };
    let counts = store
        .count_issue_groups(ws, &todo, IssueGrouping::Status)
        .await
        .unwrap();
    assert_eq!(counts, vec![(GroupKey::Status(IssueStatus::Todo), 6)]);
}

async fn saved_views_are_unique_per_workspace(store: Arc<dyn Store>) {
    let f = fixture(&store, "team", "ACM").await;
    let other = fixture(&store, "other", "OTH").await;
    let name = ViewName::parse("Urgent").unwrap();
    let saved = store
        .create_saved_view(f.ws.id, &name, "priority=urgent", Some(f.owner.id))
        .await
        .unwrap();
    assert_eq!(saved.query, "priority=urgent");
    assert_eq!(saved.created_by, Some(f.owner.id));
    assert_conflict(
        store
            .create_saved_view(f.ws.id, &name, "sort=title", None)
            .await,
        "saved_view_pkey",
    );
    // The same name in another workspace is another view.
    store
        .create_saved_view(other.ws.id, &name, "sort=title", None)
        .await
        .unwrap();
    let by_status = ViewName::parse("By status").unwrap();
    store
        .create_saved_view(f.ws.id, &by_status, "group=status", None)
        .await
        .unwrap();
    let names: Vec<String> = store
        .list_saved_views(f.ws.id)
        .await
        .unwrap()
        .iter()
        .map(|v| v.name.as_str().to_owned())
        .collect();
    assert_eq!(names, ["By status", "Urgent"]);
    store.delete_saved_view(f.ws.id, &name).await.unwrap();
    assert_not_found(store.delete_saved_view(f.ws.id, &name).await);
    assert_eq!(store.list_saved_views(f.ws.id).await.unwrap().len(), 1);
    assert_eq!(store.list_saved_views(other.ws.id).await.unwrap().len(), 1);
}
