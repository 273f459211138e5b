//! `muster issue list --sort … --dir … --group …` against a real server: the list view's order from
//! the command line, `--limit` smaller than the list, and a sort the server refuses (exit 1 with its
//! message); `muster view save|list|delete`.

use muster::domain::*;
use muster_tests::cli::{Cli, Out};
use muster_tests::{Backend, TestDb, spawn_app};

#[tokio::test(flavor = "multi_thread")]
async fn issue_list_sorts_and_groups_and_views_are_saved_from_the_command_line() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let app = spawn_app(db.config()).await;
    let store = app.state.store.clone();
    let (_, ws, cli) = Cli::ada_on_alpha(&app).await;
    for (title, priority, status) in [
        ("Zebra", Priority::Low, IssueStatus::Todo),
        ("apple", Priority::Urgent, IssueStatus::Done),
        ("Mango", Priority::Urgent, IssueStatus::Todo),
        ("Kiwi", Priority::None, IssueStatus::Done),
    ] {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.priority = priority;
        new.status = status;
        store.create_issue(ws.id, &new).await.unwrap();
    }
    let keys = |out: &Out| -> Vec<String> {
        assert_eq!(out.code, 0, "{out:?}");
        out.stdout
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    // By title, descending: bytes, so lower case first.
    let out = cli
        .run(&["issue", "list", "--sort", "title", "--dir", "desc"])
        .await;
    assert_eq!(keys(&out), ["ALP-2", "ALP-1", "ALP-3", "ALP-4"]);
    // Grouped by status (todo, then done), urgent first within each.
    let out = cli
        .run(&[
            "issue", "list", "--group", "status", "--sort", "priority", "--all",
        ])
        .await;
    assert_eq!(keys(&out), ["ALP-3", "ALP-1", "ALP-2", "ALP-4"]);
    let out = cli
        .run(&["issue", "list", "--sort", "key", "--limit", "3"])
        .await;
    assert_eq!(keys(&out), ["ALP-1", "ALP-2", "ALP-3"]);
    assert!(out.stderr.contains("more issues match"));
    let out = cli.run(&["issue", "list", "--sort", "size"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("unknown sort \"size\""), "{out:?}");

    // `muster view save|list|delete`.
    let out = cli
        .run(&["view", "save", "Urgent first", "sort=priority&group=status"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("saved Urgent first: /w/alpha/list?sort=priority&group=status"),
        "{out:?}"
    );
    let out = cli
        .run(&["view", "save", "Urgent first", "sort=title"])
        .await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("exists already"), "{out:?}");
    let out = cli.run(&["view", "list"]).await;
    let listed = out.stdout.clone();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.contains("Urgent first"), "{listed}");
    let out = cli.run(&["view", "delete", "Urgent first"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    let out = cli.run(&["view", "list", "--json"]).await;
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["views"], serde_json::json!([]));
}
