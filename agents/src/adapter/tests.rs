use super::*;

/// A run spec with every optional field set, shared by the adapters' tests.
pub(crate) fn sample_spec() -> RunSpec {
    RunSpec {
        binary: PathBuf::from("/opt/bin/agent"),
        prompt: "fix the bug".into(),
        model: Some("m1".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        api_key: Some("sk-secret-123".into()),
        extra_args: vec!["--extra".into()],
        permission_mode: PermissionMode::WorkspaceWrite,
        env: vec![("MUSTER_TOKEN".into(), "run-token-456".into())],
        workdir: PathBuf::from("/work/tree"),
        home_dir: PathBuf::from("/runs/r1/home"),
        resume_session: None,
        running_as_root: false,
    }
}

#[test]
fn runtime_kinds_round_trip_through_their_names() {
    for kind in RuntimeKind::ALL {
        assert_eq!(kind.to_string().parse::<RuntimeKind>().unwrap(), kind);
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
    }
    assert_eq!(
        RuntimeKind::ALL.map(RuntimeKind::as_str),
        ["claude", "codex", "opencode", "llama", "custom"]
    );
}

#[test]
fn unknown_runtime_kind_names_the_valid_ones() {
    let err = "gemini".parse::<RuntimeKind>().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"unknown kind "gemini"; expected one of: claude, codex, opencode, llama, custom"#
    );
    let err = serde_json::from_str::<RuntimeKind>(r#""gemini""#).unwrap_err();
    assert!(
        err.to_string().contains(r#"unknown kind "gemini""#),
        "{err}"
    );
    assert!(
        "Claude".parse::<RuntimeKind>().is_err(),
        "names are case-sensitive"
    );
}

#[test]
fn permission_modes_parse_and_reject_unknown() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.to_string().parse::<PermissionMode>().unwrap(), mode);
    }
    assert_eq!(PermissionMode::default(), PermissionMode::WorkspaceWrite);
    let err = "yolo".parse::<PermissionMode>().unwrap_err();
    assert!(
        err.to_string()
            .ends_with("expected one of: read_only, workspace_write, bypass"),
        "{err}"
    );
}

#[test]
fn debug_output_redacts_secrets() {
    let spec = sample_spec();
    let shown = format!("{spec:?}");
    assert!(!shown.contains("sk-secret-123"), "{shown}");
    assert!(!shown.contains("run-token-456"), "{shown}");
    assert!(shown.contains("MUSTER_TOKEN=<redacted>"), "{shown}");
    assert!(shown.contains("api_key: Some(\"<redacted>\")"), "{shown}");

    let launch = LaunchSpec {
        program: "/bin/x".into(),
        env: vec![("ANTHROPIC_API_KEY".into(), "sk-secret-123".into())],
        stdin: Some("prompt".into()),
        files: vec![("/h/config.toml".into(), "secret = 1".into())],
        ..LaunchSpec::default()
    };
    let shown = format!("{launch:?}");
    assert!(!shown.contains("sk-secret-123"), "{shown}");
    assert!(!shown.contains("secret = 1"), "{shown}");
    assert!(shown.contains("ANTHROPIC_API_KEY=<redacted>"), "{shown}");
    assert!(shown.contains("stdin_bytes: Some(6)"), "{shown}");
}

#[test]
fn adapters_report_their_kind_and_skills_place() {
    let expected = [
        (RuntimeKind::Claude, SkillsPlace::Workdir(".claude/skills")),
        (RuntimeKind::Codex, SkillsPlace::Home(".codex/skills")),
        (
            RuntimeKind::Opencode,
            SkillsPlace::Workdir(".opencode/skills"),
        ),
        (RuntimeKind::Llama, SkillsPlace::Brief),
        (RuntimeKind::Custom, SkillsPlace::Brief),
    ];
    for (kind, place) in expected {
        let adapter = adapter_for(kind);
        assert_eq!(adapter.kind(), kind);
        assert_eq!(adapter.skills_place(), place);
        if let SkillsPlace::Workdir(dir) | SkillsPlace::Home(dir) = place {
            assert!(Path::new(dir).is_relative(), "{dir}");
        }
    }
}

#[test]
fn run_env_is_applied_last_and_wins() {
    let mut spec = sample_spec();
    spec.env.push(("HOME".into(), "/override".into()));
    let launch = adapter_for(RuntimeKind::Claude).command(&spec).unwrap();
    assert_eq!(launch.env_value("HOME"), Some("/override"));
    assert_eq!(launch.env_value("PWD"), Some("/work/tree"));
    assert_eq!(launch.env_value("MUSTER_TOKEN"), Some("run-token-456"));
    assert_eq!(launch.env_value("NOPE"), None);
}

#[test]
fn every_kind_names_its_base_url_variables_and_finds_them_in_an_env() {
    for kind in RuntimeKind::ALL {
        assert!(!kind.base_url_vars().is_empty(), "{kind}");
    }
    let env = vec![
        (
            "ANTHROPIC_BASE_URL".to_owned(),
            "http://127.0.0.1:1".to_owned(),
        ),
        (
            "ANTHROPIC_BASE_URL".to_owned(),
            " http://127.0.0.1:2 ".to_owned(),
        ),
        ("OPENAI_BASE_URL".to_owned(), String::new()),
    ];
    assert_eq!(
        RuntimeKind::Claude.base_urls_in(&env),
        vec![("ANTHROPIC_BASE_URL", "http://127.0.0.1:2")]
    );
    assert!(RuntimeKind::Codex.base_urls_in(&env).is_empty());
    assert_eq!(RuntimeKind::Custom.base_urls_in(&env).len(), 1);
}

#[test]
fn the_vendor_cli_s_default_api_is_known() {
    assert_eq!(
        RuntimeKind::Claude.default_api_url(),
        Some("https://api.anthropic.com")
    );
    assert_eq!(
        RuntimeKind::Codex.default_api_url(),
        Some("https://api.openai.com")
    );
    assert_eq!(RuntimeKind::Custom.default_api_url(), None);
}
