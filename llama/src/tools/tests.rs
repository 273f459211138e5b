use std::os::unix::fs::symlink;

use super::*;

fn workspace(allow_write: bool) -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    symlink(outside.path(), dir.path().join("escape")).unwrap();
    symlink(
        outside.path().join("missing.txt"),
        dir.path().join("dangling"),
    )
    .unwrap();
    let ws = Workspace::new(dir.path(), allow_write, Duration::from_secs(5), Vec::new()).unwrap();
    (dir, outside, ws)
}

#[tokio::test]
async fn reads_lists_and_writes_inside_the_workdir() {
    let (dir, _outside, ws) = workspace(true);
    let listed = ws.call("list_dir", "{}").await;
    assert!(!listed.is_error, "{listed:?}");
    assert!(listed.output.contains("hello.txt") && listed.output.contains("src/"));
    assert_eq!(
        ws.call("read_file", r#"{"path":"hello.txt"}"#).await.output,
        "hello\n"
    );
    let wrote = ws
        .call(
            "write_file",
            r#"{"path":"src/new/a.rs","content":"fn a() {}"}"#,
        )
        .await;
    assert!(!wrote.is_error, "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/new/a.rs")).unwrap(),
        "fn a() {}"
    );
    assert_eq!(
        wrote.events,
        vec![AgentEvent::FileChange {
            path: "src/new/a.rs".into(),
            change: FileChangeKind::Add
        }]
    );
    let again = ws
        .call("write_file", r#"{"path":"src/new/a.rs","content":"x"}"#)
        .await;
    assert!(matches!(
        again.events[..],
        [AgentEvent::FileChange {
            change: FileChangeKind::Update,
            ..
        }]
    ));
}

#[tokio::test]
async fn paths_leaving_the_workdir_are_refused_as_error_results() {
    let (_dir, outside, ws) = workspace(true);
    let abs = outside.path().join("secret.txt").display().to_string();
    for (tool, args) in [
        ("read_file", json!({"path": abs})),
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": "src/../../x"})),
        ("read_file", json!({"path": "escape/secret.txt"})),
        ("list_dir", json!({"path": "escape"})),
        (
            "write_file",
            json!({"path": "escape/new.txt", "content": "x"}),
        ),
        ("write_file", json!({"path": "dangling", "content": "x"})),
        (
            "write_file",
            json!({"path": "/tmp/muster-x", "content": "x"}),
        ),
    ] {
        let out = ws.call(tool, &args.to_string()).await;
        assert!(out.is_error, "{tool} {args} was allowed: {out:?}");
        assert!(!out.output.contains("top secret"));
    }
    assert!(!outside.path().join("new.txt").exists());
    assert!(!outside.path().join("missing.txt").exists());
}

#[tokio::test]
async fn commands_run_in_the_workdir_with_exit_codes_and_timeouts() {
    let (dir, _outside, ws) = workspace(true);
    let out = ws
        .call("run_command", r#"{"command":"pwd; echo oops >&2; exit 3"}"#)
        .await;
    assert!(out.is_error);
    let real = dir.path().canonicalize().unwrap().display().to_string();
    assert!(
        out.output.contains(&real) && out.output.contains("oops"),
        "{out:?}"
    );
    assert!(matches!(
        &out.events[..],
        [AgentEvent::Command {
            exit_code: Some(3),
            ..
        }]
    ));
    let ws = Workspace::new(dir.path(), true, Duration::from_millis(300), Vec::new()).unwrap();
    let slow = ws.call("run_command", r#"{"command":"sleep 30"}"#).await;
    assert!(
        slow.is_error && slow.output.contains("did not finish"),
        "{slow:?}"
    );
}

#[tokio::test]
async fn read_only_offers_and_allows_no_writes_and_bad_arguments_are_results() {
    let (dir, _outside, ws) = workspace(false);
    let names: Vec<String> = ws
        .definitions()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["list_dir", "read_file"]);
    let refused = ws
        .call("write_file", r#"{"path":"x.txt","content":"x"}"#)
        .await;
    assert!(refused.is_error && refused.output.contains("read_only"));
    assert!(!dir.path().join("x.txt").exists());
    assert!(ws.call("read_file", "not json").await.is_error);
    assert!(ws.call("read_file", "{}").await.is_error);
    assert!(
        ws.call("delete_all", "{}")
            .await
            .output
            .contains("unknown tool")
    );
}
