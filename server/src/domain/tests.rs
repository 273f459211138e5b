use super::*;

#[test]
fn titles_are_trimmed_and_bounded() {
    assert_eq!(IssueTitle::parse("  Fix it  ").unwrap().as_str(), "Fix it");
    let empty = IssueTitle::parse("   ").unwrap_err();
    assert_eq!(
        (empty.field, empty.message.as_str()),
        ("title", "must not be empty")
    );
    assert!(
        IssueTitle::parse(&"é".repeat(500)).is_ok(),
        "500 characters, not bytes"
    );
    let long = IssueTitle::parse(&"x".repeat(501)).unwrap_err();
    assert_eq!(long.message, "must be at most 500 characters (got 501)");
}

#[test]
fn slugs_accept_only_lowercase_digits_and_dashes() {
    assert_eq!(Slug::parse("team-a1").unwrap().as_str(), "team-a1");
    for bad in ["", "Team", "a b", "a_b", "-a", "a-", "ü"] {
        let e = Slug::parse(bad).unwrap_err();
        assert_eq!(e.field, "slug", "{bad:?}");
    }
    assert!(Slug::parse(&"a".repeat(65)).is_err());
}

#[test]
fn enums_round_trip_and_name_the_accepted_values() {
    for s in IssueStatus::ALL {
        assert_eq!(s.as_str().parse::<IssueStatus>().unwrap(), *s);
    }
    let e = "doing".parse::<IssueStatus>().unwrap_err();
    assert_eq!(e.field, "status");
    assert_eq!(
        e.message,
        "unknown status \"doing\"; expected one of: backlog, todo, in_progress, in_review, done, blocked, cancelled"
    );
    assert_eq!(serde_json::to_string(&Priority::High).unwrap(), "\"high\"");
    assert!(serde_json::from_str::<Priority>("\"highest\"").is_err());
}

#[test]
fn issue_keys_parse_and_print() {
    let k = IssueKey::parse("mus-42").unwrap();
    assert_eq!(k.to_string(), "MUS-42");
    for bad in ["MUS", "MUS-", "MUS-0", "MUS--1", "42", "M-1", "MUS-x"] {
        assert_eq!(IssueKey::parse(bad).unwrap_err().field, "key", "{bad:?}");
    }
}

#[test]
fn labels_are_deduplicated_and_sorted() {
    let l = Label::parse_list("ui, bug,,bug ").unwrap();
    assert_eq!(
        l.iter().map(Label::as_str).collect::<Vec<_>>(),
        ["bug", "ui"]
    );
    assert!(Label::parse(&"x".repeat(51)).is_err());
}

#[test]
fn emails_need_one_at_sign() {
    assert_eq!(
        Email::parse(" Ada@Example.COM ").unwrap().as_str(),
        "ada@example.com"
    );
    for bad in ["ada", "@x", "ada@", "a@b@c", "a b@c"] {
        assert!(Email::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn agent_profiles_report_every_bad_field() {
    let mut a = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Custom);
    a.color = "red".into();
    a.max_concurrent_runs = 0;
    a.budget.usd = Some(-1.0);
    a.env.push(EnvVar {
        key: "1BAD".into(),
        value: String::new(),
        secret: false,
    });
    let fields: Vec<_> = a.validate().unwrap_err().iter().map(|e| e.field).collect();
    assert_eq!(
        fields,
        [
            "color",
            "max_concurrent_runs",
            "budget_usd",
            "command",
            "env"
        ]
    );
    assert!(AgentName::parse("has space").is_err());
    assert!(
        NewAgent::new(AgentName::parse("ok").unwrap(), RuntimeKind::Claude)
            .validate()
            .is_ok()
    );
}

#[test]
fn agent_env_may_not_choose_the_runs_folders() {
    let mut a = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Codex);
    for key in [
        "CODEX_HOME",
        "HOME",
        "TMPDIR",
        "MUSTER_TOKEN",
        "OPENAI_API_KEY",
    ] {
        a.env.push(EnvVar {
            key: key.into(),
            value: "/elsewhere".into(),
            secret: false,
        });
    }
    let errors: Vec<String> = a
        .validate()
        .unwrap_err()
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect();
    assert_eq!(
        errors,
        [
            "env: CODEX_HOME: is set by Muster for each run (the run's own folder) and cannot be changed",
            "env: HOME: is set by Muster for each run (the run's own folder) and cannot be changed",
            "env: TMPDIR: is set by Muster for each run (the run's own folder) and cannot be changed",
            "env: MUSTER_TOKEN: MUSTER_* variables are set by Muster for each run and cannot be changed",
        ]
    );
}

#[test]
fn failure_reasons_know_what_to_retry() {
    assert!(FailureReason::RateLimit.retryable());
    assert!(!FailureReason::Auth.retryable());
    assert!(!FailureReason::Config.retryable());
    assert!(RunStatus::Running.is_active() && !RunStatus::Queued.is_active());
    assert!(RunStatus::Interrupted.is_terminal() && !RunStatus::Claimed.is_terminal());
}

#[test]
fn runner_names_are_checked_with_precise_messages() {
    for ok in [
        "gpu-box",
        "embedded-0a1b2c3d4e5f",
        "a",
        "build_1.local",
        &"x".repeat(64),
    ] {
        assert_eq!(RunnerName::parse(ok).unwrap().as_str(), ok);
    }
    let message = |raw: &str| RunnerName::parse(raw).unwrap_err().to_string();
    assert_eq!(message(""), "name: a runner name must not be empty");
    assert_eq!(
        message(&"x".repeat(65)),
        format!(
            "name: runner name {:?} is longer than 64 characters (65)",
            "x".repeat(65)
        )
    );
    assert_eq!(
        message("gpu box"),
        "name: runner name \"gpu box\" may contain only letters, digits, '-', '_' and '.' (found ' ')"
    );
    assert!(RunnerName::parse(" gpu").is_err(), "never trimmed silently");
}

#[test]
fn an_agents_runner_binding_lists_valid_names_once() {
    let mut a = NewAgent::new(AgentName::parse("coder").unwrap(), RuntimeKind::Codex);
    assert!(a.runners.is_empty(), "any runner by default");
    a.runners = vec!["gpu".into(), "bad/name".into(), "gpu".into(), "mac".into()];
    let errors: Vec<String> = a
        .validate()
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "runners: runner name \"bad/name\" may contain only letters, digits, '-', '_' and '.' (found '/')",
            "runners: runner \"gpu\" is listed twice",
        ]
    );
    a.runners = vec!["gpu".into(), "mac".into()];
    assert!(a.validate().is_ok());
}
