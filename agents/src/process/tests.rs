use super::*;
use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, BufReader};

const SHORT_GRACE: Duration = Duration::from_millis(300);

fn spec(program: &str, args: &[&str], cwd: &Path) -> LaunchSpec {
    LaunchSpec {
        program: program.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        cwd: cwd.to_path_buf(),
        ..LaunchSpec::default()
    }
}

async fn stdout_of(mut child: Child) -> String {
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(child.wait().await.unwrap().success());
    out
}

#[tokio::test]
async fn children_get_only_path_and_the_spec_env() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec("env", &[], dir.path());
    launch.env = vec![("FOO".into(), "bar baz".into())];
    let out = stdout_of(to_command(&launch).spawn().unwrap()).await;
    let keys: BTreeSet<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
    assert_eq!(keys, BTreeSet::from(["FOO", "PATH"]), "{out}");
    assert!(out.lines().any(|l| l == "FOO=bar baz"));
}

#[tokio::test]
async fn cwd_is_the_spec_cwd_and_no_prompt_means_empty_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = stdout_of(
        spawn(&spec("sh", &["-c", "pwd; cat"], dir.path()))
            .await
            .unwrap(),
    )
    .await;
    let expected = format!("{}\n", dir.path().canonicalize().unwrap().display());
    assert_eq!(out, expected, "cat must see EOF at once");
}

#[tokio::test]
async fn the_prompt_is_written_and_stdin_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec("cat", &[], dir.path());
    let prompt = "line one\nline two ".repeat(20_000); // Larger than a pipe buffer.
    launch.stdin = Some(prompt.clone());
    let out = stdout_of(spawn(&launch).await.unwrap()).await;
    assert_eq!(out, prompt);
}

#[tokio::test]
async fn spawn_writes_the_spec_files_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("home/.codex/config.toml");
    let mut launch = spec("cat", &[config.to_str().unwrap()], dir.path());
    launch.files = vec![(config.clone(), "model = \"m\"\n".into())];
    let out = stdout_of(spawn(&launch).await.unwrap()).await;
    assert_eq!(out, "model = \"m\"\n");
}

#[tokio::test]
async fn a_missing_binary_is_not_installed() {
    let dir = tempfile::tempdir().unwrap();
    let err = spawn(&spec("/nonexistent/claude", &[], dir.path()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotInstalled { cli } if cli == "/nonexistent/claude"),
        "{err:?}"
    );
    let bad_cwd = spec("cat", &[], Path::new("/nonexistent-dir"));
    assert!(matches!(
        spawn(&bad_cwd).await.unwrap_err(),
        Error::Spawn(_)
    ));
}

#[tokio::test]
async fn sigint_stops_a_cooperative_child() {
    let dir = tempfile::tempdir().unwrap();
    let script = "trap 'exit 7' INT; echo ready; while :; do sleep 0.05; done";
    let mut child = spawn(&spec("sh", &["-c", script], dir.path()))
        .await
        .unwrap();
    wait_for_ready(&mut child).await;
    let status = stop_group_with(&mut child, Duration::from_secs(5), SHORT_GRACE)
        .await
        .unwrap();
    assert_eq!(status.code(), Some(7), "{status:?}");
}

#[tokio::test]
async fn a_child_ignoring_int_and_term_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let script = format!(
        "trap '' INT TERM; sleep 30 & echo $! > {}; echo ready; wait",
        pid_file.display()
    );
    let mut child = spawn(&spec("sh", &["-c", &script], dir.path()))
        .await
        .unwrap();
    wait_for_ready(&mut child).await;
    let started = std::time::Instant::now();
    let status = stop_group_with(&mut child, SHORT_GRACE, SHORT_GRACE)
        .await
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let grandchild: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILL is delivered asynchronously: give the grandchild a moment to die.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while is_running(grandchild) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !is_running(grandchild),
        "the grandchild {grandchild} survived"
    );
    // Stopping again is harmless and returns the same status.
    assert_eq!(stop_group(&mut child).await.unwrap().signal(), Some(9));
}

async fn wait_for_ready(child: &mut Child) {
    let stdout = child.stdout.take().unwrap();
    let mut lines = CappedLines::new(BufReader::new(stdout));
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
}

/// Whether `pid` exists and is not a zombie waiting for a reaper.
fn is_running(pid: u32) -> bool {
    let path = PathBuf::from(format!("/proc/{pid}/stat"));
    std::fs::read_to_string(path).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

#[tokio::test]
async fn lines_are_split_and_line_endings_dropped() {
    let input: &[u8] = b"a\nbb\r\n\nlast";
    let mut lines = CappedLines::new(input);
    for expected in ["a", "bb", "", "last"] {
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some(expected));
    }
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn long_lines_are_truncated_with_a_marker_across_buffer_refills() {
    let input = b"abcdefgh\nxy\n\xff\xfe ok\n";
    let reader = BufReader::with_capacity(3, &input[..]);
    let mut lines = CappedLines::with_cap(reader, 4);
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("abcd… [truncated 4 bytes]")
    );
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("xy"));
    assert_eq!(
        lines.next_line().await.unwrap().as_deref(),
        Some("\u{fffd}\u{fffd} o… [truncated 1 bytes]")
    );
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn the_default_cap_is_one_mebibyte() {
    let mut input = vec![b'x'; 5 * 1024 * 1024];
    input.push(b'\n');
    let mut lines = CappedLines::new(&input[..]);
    let line = lines.next_line().await.unwrap().unwrap();
    assert!(line.starts_with(&"x".repeat(MAX_LINE_BYTES)));
    assert!(line.ends_with(&format!("… [truncated {} bytes]", 4 * 1024 * 1024)));
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test]
async fn helper_commands_are_captured_and_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("GREETING".to_owned(), "hi there".to_owned())];
    let args = |s: &str| vec!["-c".to_owned(), s.to_owned()];
    let out = run_captured(
        "sh",
        &args("echo \"$GREETING\"; echo oops >&2; exit 3"),
        dir.path(),
        &env,
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi there\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "oops\n");
    let slow = run_captured("sh", &args("sleep 30"), dir.path(), &[], SHORT_GRACE).await;
    assert_eq!(slow.unwrap_err().kind(), io::ErrorKind::TimedOut);
}

#[tokio::test]
async fn leftovers_of_a_group_are_found_by_env_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec("sh", &["-c", "sleep 30 & echo $!; exit 0"], dir.path());
    launch.env = vec![("MUSTER_RUN_ID".into(), "run-42".into())];
    let mut child = spawn(&launch).await.unwrap();
    let pgid = child.id().unwrap();
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 64];
    let n = stdout.read(&mut buf).await.unwrap();
    out.push_str(&String::from_utf8_lossy(&buf[..n]));
    assert!(child.wait().await.unwrap().success());
    let sleeper: u32 = out.trim().parse().unwrap();
    assert_eq!(
        group_members(pgid),
        vec![sleeper],
        "the leader is gone, its child is not"
    );
    assert!(group_has_env(pgid, "MUSTER_RUN_ID", "run-42"));
    assert!(
        !group_has_env(pgid, "MUSTER_RUN_ID", "run-43"),
        "another run's group is left alone"
    );
    assert!(kill_leftovers(pgid));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !group_members(pgid).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the leftover survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
