//! The issue list page over real HTTP on both backends: the table, sorting by a header's link,
//! grouping with each group's count, "Load more" without JavaScript (a group split by the page break
//! shows its header again), the batch form (applied, refused with the ticks kept, delete only after
//! its confirm step), saved views, and the toggle between board and list.

use muster::domain::{IssueKey, IssueStatus, IssueTitle, NewIssue, Priority};
use muster_tests::seed::{self, PASSWORD};
use muster_tests::{Backend, TestDb, spawn_app};
use reqwest::StatusCode;

/// The keys of the rows of a page, in order.
fn row_keys(page: &str) -> Vec<String> {
    page.split(r#"<tr class="list-row" id="row-"#)
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_owned())
        .collect()
}

/// The next page's link.
fn more_link(page: &str) -> Option<String> {
    let at = page.find(r#"id="list-more" href=""#)?;
    let rest = &page[at + r#"id="list-more" href=""#.len()..];
    Some(rest.split('"').next().unwrap().replace("&amp;", "&"))
}

async fn the_list_sorts_groups_pages_and_changes_in_batches(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let app = spawn_app(db.config()).await;
    let (_, ws) = seed::acme(&app.store).await;
    let titles = ["Crash on start", "add login", "Billing page", "Dark mode"];
    for n in 0..55_usize {
        let mut new = NewIssue::new(IssueTitle::parse(titles[n % 4]).unwrap());
        new.status = [
            IssueStatus::Todo,
            IssueStatus::InProgress,
            IssueStatus::Done,
        ][n % 3];
        new.priority = Priority::ALL[n % Priority::ALL.len()];
        app.store.create_issue(ws.id, &new).await.unwrap();
    }
    let s = app.sign_in("ada@acme.test", PASSWORD, "acme").await;

    // The board and the list link to each other.
    let board = s.page(&app, "/w/acme").await;
    assert!(
        board.contains(r#"href="/w/acme/list""#),
        "no list toggle on the board"
    );
    let page = s.page(&app, "/w/acme/list").await;
    assert!(page.contains("55 matching"), "{page}");
    assert!(page.contains(r#"href="/w/acme?"#));
    // Newest first by default, 50 rows, then "Load more".
    let first = row_keys(&page);
    assert_eq!(first.len(), 50);
    assert_eq!(first[0], "ACM-55");
    let more = more_link(&page).expect("a Load more link");
    let next = s.page(&app, &more).await;
    let rest = row_keys(&next);
    assert_eq!(rest, ["ACM-5", "ACM-4", "ACM-3", "ACM-2", "ACM-1"]);
    assert!(more_link(&next).is_none());

    // The Title header sorts by title (bytes: capitals first), ties by key; clicking again flips it.
    let link = r#"href="/w/acme/list?sort=title&amp;dir=asc""#;
    assert!(page.contains(link), "no title sort link");
    let by_title = s.page(&app, "/w/acme/list?sort=title&dir=asc").await;
    let keys = row_keys(&by_title);
    assert_eq!(
        &keys[..3],
        ["ACM-3", "ACM-7", "ACM-11"],
        "Billing page first"
    );
    assert!(by_title.contains(r#"href="/w/acme/list?sort=title&amp;dir=desc""#));
    assert!(by_title.contains(r#"aria-sort="ascending""#));

    // Grouped by status: a header per group with its count, in board order; the group the page break
    // splits shows again, continued, on the next page.
    let grouped = s
        .page(&app, "/w/acme/list?group=status&sort=key&dir=asc")
        .await;
    let todo = grouped
        .find("list-group-label\">Todo")
        .expect("a Todo group");
    let doing = grouped
        .find("list-group-label\">In progress")
        .expect("an In progress group");
    assert!(todo < doing);
    assert!(
        grouped
            .contains(r#"Todo</span> <span class="count" title="Issues in this group">19</span>"#)
    );
    let keys = row_keys(&grouped);
    assert_eq!(&keys[..2], ["ACM-1", "ACM-4"]);
    let next = s.page(&app, &more_link(&grouped).unwrap()).await;
    assert!(next.contains("list-group-label\">Done"), "{next}");
    assert!(next.contains("(continued)"));
    assert_eq!(row_keys(&next).len(), 5);

    // A bad sort is said, the list still shows.
    let bad = s.page(&app, "/w/acme/list?sort=size").await;
    assert!(bad.contains("unknown sort"), "{bad}");

    // Batch: three issues to review, with a priority; back to the same list.
    let form = [
        ("_csrf", s.csrf.as_str()),
        ("key", "ACM-1"),
        ("key", "ACM-2"),
        ("key", "ACM-3"),
        ("status", "in_review"),
        ("priority", "urgent"),
        ("assignee", ""),
        ("back", "group=status"),
    ];
    let res = s.post(&app, "/w/acme/list/batch", &form).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/w/acme/list?group=status");
    for key in ["ACM-1", "ACM-2", "ACM-3"] {
        let issue = app
            .store
            .get_issue(ws.id, &IssueKey::parse(key).unwrap())
            .await
            .unwrap();
        assert_eq!(
            (issue.status, issue.priority),
            (IssueStatus::InReview, Priority::Urgent)
        );
    }
    // Refused: the page again with the message and the ticks kept; nothing changed.
    let form = [
        ("_csrf", s.csrf.as_str()),
        ("key", "ACM-54"),
        ("key", "ACM-99"),
        ("status", "done"),
    ];
    let res = s.post(&app, "/w/acme/list/batch", &form).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = res.text().await.unwrap();
    assert!(
        page.contains("ACM-99 is not an issue of this workspace"),
        "{page}"
    );
    assert!(page.contains(r#"name="key" value="ACM-54" checked"#));
    // Delete asks first; confirmed, it deletes.
    let form = [
        ("_csrf", s.csrf.as_str()),
        ("key", "ACM-5"),
        ("delete", "1"),
    ];
    let res = s.post(&app, "/w/acme/list/batch", &form).await;
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    assert!(page.contains("Delete 1 issues for good: ACM-5"), "{page}");
    app.store
        .get_issue(ws.id, &IssueKey::parse("ACM-5").unwrap())
        .await
        .unwrap();
    let form = [
        ("_csrf", s.csrf.as_str()),
        ("key", "ACM-5"),
        ("delete", "1"),
        ("confirm", "1"),
    ];
    let res = s.post(&app, "/w/acme/list/batch", &form).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        app.store
            .get_issue(ws.id, &IssueKey::parse("ACM-5").unwrap())
            .await
            .is_err()
    );

    // Save the view; it is listed as a link; a second of the same name is refused beside the name.
    let form = [
        ("_csrf", s.csrf.as_str()),
        ("name", "Review queue"),
        ("query", "status=in_review&group=priority"),
    ];
    let res = s.post(&app, "/w/acme/list/views", &form).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()["location"],
        "/w/acme/list?status=in_review&group=priority"
    );
    let page = s
        .page(&app, "/w/acme/list?status=in_review&group=priority")
        .await;
    assert!(page.contains(r#"<a href="/w/acme/list?status=in_review&amp;group=priority" aria-current="page">Review queue</a>"#), "{page}");
    assert_eq!(row_keys(&page), ["ACM-3", "ACM-2", "ACM-1"]);
    let res = s.post(&app, "/w/acme/list/views", &form).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.text().await.unwrap().contains("exists already"));
    let res = s
        .post(
            &app,
            "/w/acme/list/views/Review%20queue/delete",
            &[("_csrf", s.csrf.as_str())],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let page = s.page(&app, "/w/acme/list").await;
    assert!(page.contains("No saved views yet."));
}

both_backends!(the_list_sorts_groups_pages_and_changes_in_batches);
