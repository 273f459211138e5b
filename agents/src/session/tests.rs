use std::path::Path;

use super::*;

fn place<'a>(home: &'a Path, workdir: &'a Path) -> SessionPlace<'a> {
    SessionPlace { home, workdir }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn claude_names_a_project_folder_after_the_working_directory() {
    assert_eq!(
        claude_project_dir(Path::new("/srv/runs/0a1b.c_d/work")),
        "-srv-runs-0a1b-c-d-work"
    );
}

#[test]
fn a_claude_session_moves_to_the_new_working_directory() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (old_work, new_work) = (old.path().join("work"), new.path().join("work"));
    let projects = old.path().join("home/.claude/projects");
    let dir = projects.join(claude_project_dir(&old_work));
    write(&dir.join("5810e3a2.jsonl"), "{\"hello\":1}\n");
    write(&dir.join("5810e3a2/tool-results/a.txt"), "side");
    write(&dir.join("other.jsonl"), "not this one");
    let (old_home, new_home) = (old.path().join("home"), new.path().join("home"));
    carry_claude(
        "5810e3a2",
        place(&old_home, &old_work),
        place(&new_home, &new_work),
    )
    .unwrap();
    let target = new_home
        .join(".claude/projects")
        .join(claude_project_dir(&new_work));
    assert_eq!(
        std::fs::read_to_string(target.join("5810e3a2.jsonl")).unwrap(),
        "{\"hello\":1}\n"
    );
    assert_eq!(
        std::fs::read_to_string(target.join("5810e3a2/tool-results/a.txt")).unwrap(),
        "side"
    );
    assert!(!target.join("other.jsonl").exists());
    let missing = carry_claude(
        "nope",
        place(&old_home, &old_work),
        place(&new_home, &new_work),
    );
    assert!(matches!(missing, Err(CarryError::Missing)), "{missing:?}");
}

#[test]
fn codex_rollouts_keep_their_place_under_sessions() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let rollout = "2026/12/03/rollout-2026-12-03T10-00-00-019a-thread.jsonl";
    write(&old.path().join(".codex/sessions").join(rollout), "line\n");
    write(
        &old.path()
            .join(".codex/sessions/2026/12/03/rollout-x-other.jsonl"),
        "no",
    );
    carry_codex(
        "019a-thread",
        place(old.path(), old.path()),
        place(new.path(), new.path()),
    )
    .unwrap();
    let sessions = new.path().join(".codex/sessions");
    assert_eq!(
        std::fs::read_to_string(sessions.join(rollout)).unwrap(),
        "line\n"
    );
    assert!(!sessions.join("2026/12/03/rollout-x-other.jsonl").exists());
}

/// An agent that left a link to a server file in its `HOME` must not get the file's text in the next
/// run: links are skipped, never followed, however deep.
#[test]
fn links_in_an_earlier_home_are_never_followed() {
    let (old, new, server) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let key = server.path().join("master.key");
    std::fs::write(&key, "SERVER-SECRET").unwrap();
    let data = old.path().join(".local/share/opencode");
    write(&data.join("storage/session.json"), "{}");
    std::os::unix::fs::symlink(&key, data.join("storage/stolen.json")).unwrap();
    std::os::unix::fs::symlink(server.path(), data.join("server")).unwrap();
    carry_folder(
        ".local/share/opencode",
        place(old.path(), old.path()),
        place(new.path(), new.path()),
    )
    .unwrap();
    let copied = new.path().join(".local/share/opencode");
    assert!(copied.join("storage/session.json").is_file());
    assert!(std::fs::symlink_metadata(copied.join("storage/stolen.json")).is_err());
    assert!(std::fs::symlink_metadata(copied.join("server")).is_err());
    // And a Claude transcript that is itself a link is not found at all.
    let projects = old.path().join(".claude/projects/p");
    std::fs::create_dir_all(&projects).unwrap();
    std::os::unix::fs::symlink(&key, projects.join("abc.jsonl")).unwrap();
    let carried = carry_claude(
        "abc",
        place(old.path(), old.path()),
        place(new.path(), new.path()),
    );
    assert!(matches!(carried, Err(CarryError::Missing)), "{carried:?}");
}

#[test]
fn a_session_over_the_budget_is_refused() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write(&old.path().join("a/big"), &"x".repeat(100));
    let mut budget = 99;
    let within = crate::bounded::real_root(old.path()).unwrap();
    let copied = copy_tree(
        &old.path().join("a"),
        &new.path().join("a"),
        &within,
        &mut budget,
    );
    assert!(matches!(copied, Err(CarryError::TooLarge)), "{copied:?}");
    let mut budget = 100;
    copy_tree(
        &old.path().join("a"),
        &new.path().join("a"),
        &within,
        &mut budget,
    )
    .unwrap();
    assert_eq!(budget, 0);
}

#[test]
fn nothing_to_carry_is_missing() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let from = place(old.path(), old.path());
    let to = place(new.path(), new.path());
    assert!(matches!(
        carry_folder(".local/share/opencode", from, to),
        Err(CarryError::Missing)
    ));
    assert!(matches!(
        carry_codex("t", from, to),
        Err(CarryError::Missing)
    ));
}

/// The attack: an agent replaced its `.codex/sessions` folder with a link to the server's data folder and
/// reported a session id that names the key file; the next run's carry copied the key into its `HOME`.
#[test]
fn a_linked_sessions_folder_carries_nothing_from_outside() {
    let (old, new, data) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    write(&data.path().join("secret.key"), "the server's key");
    std::fs::create_dir_all(old.path().join(".codex")).unwrap();
    std::os::unix::fs::symlink(data.path(), old.path().join(".codex/sessions")).unwrap();
    let carried = carry_codex(
        "secret.key",
        place(old.path(), old.path()),
        place(new.path(), new.path()),
    );
    assert!(carried.is_err(), "{carried:?}");
    assert!(
        !new.path().join(".codex/sessions/secret.key").exists(),
        "the key was copied into the next run's HOME"
    );
}
