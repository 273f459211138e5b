//! `muster issue search QUERY [--limit N]` against a real server: a table of KEY, STATUS, TITLE and
//! where each hit matched (with the snippet of a body or comment match), `--json`, an empty answer, and
//! a query the server refuses (exit 1 with its message).

use muster::domain::*;
use muster_tests::cli::Cli;
use muster_tests::{Backend, TestDb, spawn_app};

#[tokio::test(flavor = "multi_thread")]
async fn issue_search_from_the_command_line() {
    let db = TestDb::new(Backend::Sqlite).await.unwrap();
    let app = spawn_app(db.config()).await;
    let store = app.state.store.clone();
    let (user, ws, cli) = Cli::ada_on_alpha(&app).await;
    let parser = NewIssue::new(IssueTitle::parse("Parser crash").unwrap());
    store.create_issue(ws.id, &parser).await.unwrap();
    let quiet = NewIssue::new(IssueTitle::parse("Quiet build").unwrap())
        .with_body("the parser crashed once")
        .unwrap();
    let quiet = store.create_issue(ws.id, &quiet).await.unwrap();
    let note = NewComment::parse(CommentAuthor::User(user.id), "Parser crash again?").unwrap();
    let other = NewIssue::new(IssueTitle::parse("Docs").unwrap());
    let other = store.create_issue(ws.id, &other).await.unwrap();
    store.add_comment(other.id, &note).await.unwrap();
    let _ = quiet;

    let table = cli.run(&["issue", "search", "parser crash"]).await;
    assert_eq!(table.code, 0, "{table:?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "KEY    STATUS   TITLE         MATCHED",
            "ALP-1  backlog  Parser crash  title",
            "ALP-2  backlog  Quiet build   body: the parser crashed once",
            "ALP-3  backlog  Docs          comment: Parser crash again?",
        ],
        "{table:?}"
    );
    let json = cli
        .run(&["issue", "search", "ALP-3", "--limit", "1", "--json"])
        .await;
    assert_eq!(json.code, 0, "{json:?}");
    let found: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(found["hits"].as_array().unwrap().len(), 1);
    assert_eq!(found["hits"][0]["key"], "ALP-3");
    assert_eq!(found["hits"][0]["matched_in"], "key");

    let none = cli.run(&["issue", "search", "zebra"]).await;
    assert_eq!((none.code, none.stdout.as_str()), (0, ""), "{none:?}");
    assert!(
        none.stderr.contains("no issue matches \"zebra\""),
        "{none:?}"
    );
    let refused = cli.run(&["issue", "search", "\"*\""]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("must contain a letter or a digit to search for"),
        "{refused:?}"
    );
    let usage = cli.run(&["issue", "search", "x", "--limit", "0"]).await;
    assert_eq!(usage.code, 2, "{usage:?}");
    app.shutdown.cancel();
}
