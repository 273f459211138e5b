use super::*;

#[test]
fn an_endpoint_never_prints_its_token() {
    let endpoint = Endpoint {
        kind: ForgeKind::Github,
        api_url: "https://api.github.com".to_owned(),
        repo: "acme/app".to_owned(),
        token: "ghp_secret123".to_owned(),
    };
    let printed = format!("{endpoint:?}");
    assert!(!printed.contains("ghp_secret123"), "{printed}");
    assert!(printed.contains("acme/app"));
}

#[test]
fn git_credentials_name_the_user_each_forge_expects() {
    use base64::Engine as _;
    let decode = |header: String| {
        let pair = header
            .strip_prefix("Basic ")
            .expect("a Basic header")
            .to_owned();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(pair)
            .expect("base64");
        String::from_utf8(bytes).expect("utf-8")
    };
    assert_eq!(
        decode(git_auth_header(ForgeKind::Github, "t1")),
        "x-access-token:t1"
    );
    assert_eq!(
        decode(git_auth_header(ForgeKind::Gitlab, "t2")),
        "oauth2:t2"
    );
    assert_eq!(decode(git_auth_header(ForgeKind::Gitea, "t3")), "muster:t3");
}

#[test]
fn the_same_repository_is_recognised_across_url_shapes() {
    let same = [
        (
            "https://github.com/Acme/App.git",
            "https://github.com/Acme/App",
        ),
        (
            "https://GitHub.com/acme/app/",
            "http://github.com/acme/app.git",
        ),
        (
            "https://x-access-token:tok@github.com/acme/app.git",
            "https://github.com/acme/app",
        ),
        ("git@github.com:acme/app.git", "https://github.com/acme/app"),
        (
            "ssh://git@gitlab.example:22/group/sub/app.git",
            "https://gitlab.example/group/sub/app",
        ),
        (
            "https://gitea.example:443/a/b",
            "https://gitea.example/a/b.git",
        ),
    ];
    for (a, b) in same {
        assert!(same_repository(a, b), "{a} vs {b}");
    }
    let different = [
        (
            "https://github.com/acme/app",
            "https://github.com/acme/app2",
        ),
        ("https://github.com/acme/app", "https://gitlab.com/acme/app"),
        (
            "https://github.com/acme/app",
            "https://github.com/other/app",
        ),
        ("", ""),
    ];
    for (a, b) in different {
        assert!(!same_repository(a, b), "{a} vs {b}");
    }
}

#[test]
fn encoding_keeps_only_unreserved_characters() {
    assert_eq!(encode("group/sub/app"), "group%2Fsub%2Fapp");
    assert_eq!(encode("feat/a b+c"), "feat%2Fa%20b%2Bc");
    assert_eq!(encode_path("muster/fix-1"), "muster/fix-1");
}

#[test]
fn draft_titles_are_read_the_way_gitlab_and_gitea_read_them() {
    for title in ["Draft: x", "WIP: x", "[WIP] x", "draft: x", "[Draft] x"] {
        assert!(is_draft_title(title), "{title}");
    }
    assert!(!is_draft_title("Fix the drafting table"));
}

#[test]
fn error_messages_come_from_the_forges_error_bodies() {
    let github = br#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and x"}]}"#;
    assert_eq!(
        error_message(github, StatusCode::UNPROCESSABLE_ENTITY),
        "Validation Failed; No commits between main and x"
    );
    let gitlab =
        br#"{"message":["Another open merge request already exists for this source branch: !1"]}"#;
    assert!(error_message(gitlab, StatusCode::CONFLICT).contains("Another open merge request"));
    assert_eq!(
        error_message(b"<html>", StatusCode::BAD_GATEWAY),
        "Bad Gateway"
    );
    let long = format!(r#"{{"message":"{}"}}"#, "é".repeat(400));
    assert!(error_message(long.as_bytes(), StatusCode::BAD_REQUEST).len() <= MESSAGE_LIMIT + 3);
}

#[test]
fn a_short_log_is_kept_whole_without_colours_or_timestamps() {
    let log = "2024-05-01T10:00:00.1234567Z \u{1b}[31merror\u{1b}[0m: boom\r\nnext line  ";
    assert_eq!(failing_part(log), "error: boom\nnext line");
}

#[test]
fn a_long_log_keeps_the_first_error_and_the_end() {
    let mut lines: Vec<String> = (0..500).map(|i| format!("step {i}")).collect();
    lines[200] = "thread 'main' panicked at src/lib.rs:3".to_owned();
    lines[499] = "Process completed with exit code 101.".to_owned();
    let part = failing_part(&lines.join("\n"));
    let kept: Vec<&str> = part.lines().collect();
    assert!(kept.len() <= log::MAX_LINES, "{}", kept.len());
    assert!(part.len() <= log::MAX_BYTES);
    assert_eq!(kept[0], log::ELIDED);
    assert_eq!(kept[1], "step 195");
    assert!(kept.contains(&"thread 'main' panicked at src/lib.rs:3"));
    assert_eq!(kept.last(), Some(&"Process completed with exit code 101."));
    assert!(!kept.contains(&"step 100"));
}

#[test]
fn a_log_of_long_lines_is_cut_to_size() {
    let log = format!("{}\n", "x".repeat(2000)).repeat(100);
    let part = failing_part(&log);
    assert!(part.len() <= log::MAX_BYTES, "{}", part.len());
    assert!(part.lines().count() <= log::MAX_LINES);
}

#[test]
fn a_merge_request_still_being_checked_has_no_mergeability_yet() {
    let mr = |merge_status: &str| {
        let json = serde_json::json!({
            "iid": 4, "web_url": "https://gitlab.example/acme/app/-/merge_requests/4",
            "state": "opened", "title": "Draft: fix", "source_branch": "muster/fix-1",
            "target_branch": "main", "sha": "abc", "has_conflicts": false,
            "merge_status": merge_status
        });
        gitlab::pull_from_json(&json.to_string()).expect("a merge request")
    };
    assert_eq!(mr("checking").mergeable, None);
    let ready = mr("can_be_merged");
    assert_eq!(
        (ready.mergeable, ready.draft, ready.state),
        (Some(true), true, PrState::Open)
    );
}
