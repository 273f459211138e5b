use super::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

const TEST_TIMEOUT: Duration = Duration::from_secs(1);

/// Writes an executable `/bin/sh` script and returns its path.
fn script(dir: &tempfile::TempDir, name: &str, body: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn detect_script(kind: RuntimeKind, body: &str) -> Detection {
    let dir = tempfile::tempdir().unwrap();
    let path = script(&dir, "cli", body);
    let detection = detect_with_timeout(kind, Some(&path), TEST_TIMEOUT).await;
    assert_eq!(detection.kind, kind);
    assert_eq!(detection.path.as_deref(), Some(path.as_path()));
    detection
}

fn assert_broken(detection: &Detection, reason: &str) {
    assert_eq!(detection.status, DetectionStatus::Broken, "{detection:?}");
    assert_eq!(detection.version, None);
    assert_eq!(detection.reason.as_deref(), Some(reason));
}

#[test]
fn versions_parse_from_real_outputs() {
    assert_eq!(
        parse_version("2.1.197 (Claude Code)"),
        Some(Version(2, 1, 197))
    );
    assert_eq!(parse_version("codex-cli 0.171.0"), Some(Version(0, 171, 0)));
    assert_eq!(parse_version("1.18.33\n"), Some(Version(1, 18, 33)));
    assert_eq!(
        parse_version("ollama version is 0.14.0"),
        Some(Version(0, 14, 0))
    );
    assert_eq!(parse_version("v10.2.3-beta"), Some(Version(10, 2, 3)));
    assert_eq!(
        parse_version("ip 10.0.0.1 then 3.4.5"),
        Some(Version(3, 4, 5))
    );
    assert_eq!(parse_version("1.2"), None);
    assert_eq!(parse_version("99999999999999999999.1.1"), None);
    assert_eq!(parse_version(""), None);
    assert!(Version(2, 1, 332) > Version(2, 1, 197));
    assert!(Version(0, 99, 0) < Version(0, 171, 0));
}

#[test]
fn minimums_are_the_recorded_fixture_versions() {
    let recorded = include_str!("../../fixtures/versions.txt");
    let versions: Vec<Version> = recorded.lines().filter_map(parse_version).collect();
    assert_eq!(
        versions,
        [
            min_version(RuntimeKind::Claude).unwrap(),
            min_version(RuntimeKind::Codex).unwrap(),
            min_version(RuntimeKind::Opencode).unwrap(),
        ]
    );
    assert_eq!(min_version(RuntimeKind::Llama), None);
    assert_eq!(binary_names(RuntimeKind::Codex), ["codex"]);
}

#[tokio::test]
async fn a_good_version_is_found() {
    let detection = detect_script(RuntimeKind::Claude, "echo '2.1.332 (Claude Code)'").await;
    assert_eq!(detection.status, DetectionStatus::Found);
    assert_eq!(detection.version.as_deref(), Some("2.1.332"));
    assert_eq!(detection.reason, None);
    let json = serde_json::to_value(&detection).unwrap();
    assert_eq!(json["kind"], "claude");
    assert_eq!(json["status"], "found");
    assert_eq!(json["version"], "2.1.332");
}

#[tokio::test]
async fn a_version_on_stderr_counts() {
    let detection = detect_script(RuntimeKind::Codex, "echo 'codex-cli 0.171.0' >&2").await;
    assert_eq!(detection.status, DetectionStatus::Found);
    assert_eq!(detection.version.as_deref(), Some("0.171.0"));
}

#[tokio::test]
async fn an_old_version_is_too_old() {
    let detection = detect_script(RuntimeKind::Opencode, "echo 1.4.7").await;
    assert_eq!(detection.status, DetectionStatus::TooOld);
    assert_eq!(detection.version.as_deref(), Some("1.4.7"));
    assert_eq!(
        detection.reason.as_deref(),
        Some("version 1.4.7 is older than the minimum 1.18.33")
    );
}

#[tokio::test]
async fn garbage_is_broken() {
    let detection = detect_script(RuntimeKind::Claude, "echo 'Hello, World'").await;
    assert_broken(
        &detection,
        r#"no version number (x.y.z) in the --version output "Hello, World""#,
    );
}

#[tokio::test]
async fn silence_is_broken() {
    let detection = detect_script(RuntimeKind::Claude, "exit 0").await;
    assert_broken(&detection, "--version printed nothing");
}

#[tokio::test]
async fn a_failing_version_is_broken_with_its_stderr() {
    let detection = detect_script(RuntimeKind::Codex, "echo 'boom: no config' >&2; exit 1").await;
    assert_broken(
        &detection,
        r#"--version failed (exit status: 1) "boom: no config""#,
    );
}

#[tokio::test]
async fn a_five_megabyte_line_is_broken_quickly() {
    let started = Instant::now();
    let body = "head -c 5000000 /dev/zero | tr '\\0' 'a'; echo";
    let detection = detect_script(RuntimeKind::Claude, body).await;
    assert_broken(&detection, "--version printed more than 65536 bytes");
    assert!(started.elapsed() < TEST_TIMEOUT + Duration::from_secs(1));
}

#[tokio::test]
async fn a_hang_is_broken_within_the_timeout() {
    let started = Instant::now();
    let detection = detect_script(RuntimeKind::Opencode, "echo 1.18.33; sleep 30").await;
    let elapsed = started.elapsed();
    assert_broken(&detection, "--version did not finish within 1 s");
    assert!(elapsed >= TEST_TIMEOUT, "{elapsed:?}");
    assert!(
        elapsed < TEST_TIMEOUT + Duration::from_secs(2),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn a_missing_override_is_not_installed() {
    let detection = detect_with_timeout(
        RuntimeKind::Claude,
        Some(Path::new("/nonexistent/claude")),
        TEST_TIMEOUT,
    )
    .await;
    assert_eq!(
        detection,
        Detection {
            kind: RuntimeKind::Claude,
            path: None,
            version: None,
            status: DetectionStatus::NotInstalled,
            reason: Some("/nonexistent/claude does not exist or is not a file".into()),
        }
    );
}

#[tokio::test]
async fn a_file_that_cannot_run_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claude");
    std::fs::write(&path, "not a program").unwrap();
    let detection = detect_with_timeout(RuntimeKind::Claude, Some(&path), TEST_TIMEOUT).await;
    assert_eq!(detection.status, DetectionStatus::Broken);
    let reason = detection.reason.unwrap();
    assert!(reason.starts_with("could not run "), "{reason}");
}

#[tokio::test]
async fn custom_commands_are_located_but_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let path = script(&dir, "agent", &format!("touch {}", marker.display()));
    let detection = detect_with_timeout(RuntimeKind::Custom, Some(&path), TEST_TIMEOUT).await;
    assert_eq!(detection.status, DetectionStatus::Found);
    assert_eq!(detection.version, None);
    assert!(!marker.exists());
    let missing = detect(RuntimeKind::Custom, None).await;
    assert_eq!(missing.status, DetectionStatus::NotInstalled);
    assert_eq!(
        missing.reason.as_deref(),
        Some("custom needs an explicit command path")
    );
}

#[tokio::test]
async fn llama_builds_report_their_build_number() {
    let detection = detect_script(
        RuntimeKind::Llama,
        "echo 'version: 4567 (abc1234)'; echo 'built with cc'",
    )
    .await;
    assert_eq!(detection.status, DetectionStatus::Found);
    assert_eq!(detection.version.as_deref(), Some("b4567"));
    let ollama = detect_script(RuntimeKind::Llama, "echo 'ollama version is 0.14.0'").await;
    assert_eq!(ollama.version.as_deref(), Some("0.14.0"));
}
