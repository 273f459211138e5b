//! `muster issue list --sort … --dir … --group …` against a real server: the list view's order from
//! the command line, `--limit` smaller than the list, and a sort the server refuses (exit 1 with its
//! message); `muster view save|list|delete`.

use std::process::{Command, Stdio};

use muster::domain::*;
use muster_tests::seed;
use muster_tests::{Backend, TestDb, spawn_app};

#[tokio::test(flavor = "multi_thread")]
async fn issue_list_sorts_and_groups_and_views_are_saved_from_the_command_line() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let app = spawn_app(db.config()).await;
    let store = app.state.store.clone();
    let (user, ws) = seed::owner_of(
        &store,
        seed::person("ada@example.com", "Ada"),
        ("Alpha", "alpha", "ALP"),
    )
    .await;
    let token = muster_tests::mint_token(store.as_ref(), ws.id, user.id, "cli").await;
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
    let config = tempfile::tempdir().unwrap();
    let muster = |args: &[&str]| {
        let mut cmd = Command::new(muster_tests::muster_bin());
        cmd.env_clear()
            .env("HOME", config.path())
            .env("MUSTER_CONFIG_DIR", config.path())
            .env("MUSTER_URL", format!("http://{}", app.addr))
            .env("MUSTER_TOKEN", &token)
            .args(args)
            .stdin(Stdio::null());
        async move {
            tokio::task::spawn_blocking(move || cmd.output().unwrap())
                .await
                .unwrap()
        }
    };
    let keys = |out: &std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    // By title, descending: bytes, so lower case first.
    let out = muster(&["issue", "list", "--sort", "title", "--dir", "desc"]).await;
    assert_eq!(keys(&out), ["ALP-2", "ALP-1", "ALP-3", "ALP-4"]);
    // Grouped by status (todo, then done), urgent first within each.
    let out = muster(&[
        "issue", "list", "--group", "status", "--sort", "priority", "--all",
    ])
    .await;
    assert_eq!(keys(&out), ["ALP-3", "ALP-1", "ALP-2", "ALP-4"]);
    let out = muster(&["issue", "list", "--sort", "key", "--limit", "3"]).await;
    assert_eq!(keys(&out), ["ALP-1", "ALP-2", "ALP-3"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("more issues match"));
    let out = muster(&["issue", "list", "--sort", "size"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown sort \"size\""),
        "{out:?}"
    );

    // `muster view save|list|delete`.
    let out = muster(&["view", "save", "Urgent first", "sort=priority&group=status"]).await;
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("saved Urgent first: /w/alpha/list?sort=priority&group=status"),
        "{out:?}"
    );
    let out = muster(&["view", "save", "Urgent first", "sort=title"]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists already"),
        "{out:?}"
    );
    let out = muster(&["view", "list"]).await;
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.contains("Urgent first"), "{listed}");
    let out = muster(&["view", "delete", "Urgent first"]).await;
    assert!(out.status.success(), "{out:?}");
    let out = muster(&["view", "list", "--json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["views"], serde_json::json!([]));
}
