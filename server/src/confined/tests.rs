use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

#[test]
fn writes_inside_and_refuses_links_on_the_way_and_at_the_end() {
    let base = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let b = base.path();
    let created = ensure_dir(b, Path::new(".claude/skills")).unwrap();
    assert_eq!(created, [b.join(".claude"), b.join(".claude/skills")]);
    assert!(
        ensure_dir(b, Path::new(".claude/skills"))
            .unwrap()
            .is_empty()
    );
    write_new(b, Path::new(".claude/skills/a.md"), b"one").unwrap();
    assert_eq!(
        std::fs::read(b.join(".claude/skills/a.md")).unwrap(),
        b"one"
    );
    assert!(matches!(
        write_new(b, Path::new(".claude/skills/a.md"), b"two"),
        Err(Error::Io { .. })
    ));

    // A link as a folder on the way.
    symlink(outside.path(), b.join("linked")).unwrap();
    let e = ensure_dir(b, Path::new("linked/skills")).unwrap_err();
    assert!(
        matches!(&e, Error::Link { path } if path == &b.join("linked")),
        "{e}"
    );
    assert!(matches!(
        write_new(b, Path::new("linked/x"), b"x"),
        Err(Error::Link { .. })
    ));
    // A link at the end, dangling or not.
    let target = outside.path().join("target.txt");
    std::fs::write(&target, "precious").unwrap();
    symlink(&target, b.join("AGENTS.md")).unwrap();
    symlink(outside.path().join("nothing"), b.join("dangling")).unwrap();
    assert!(write_new(b, Path::new("AGENTS.md"), b"brief").is_err());
    assert!(write_new(b, Path::new("dangling"), b"brief").is_err());
    assert!(matches!(
        read_regular(&b.join("AGENTS.md"), 100),
        Err(Error::Link { .. })
    ));
    // Replacing unlinks the link itself and writes a regular file in its place.
    replace(b, Path::new("AGENTS.md"), b"brief").unwrap();
    assert!(
        std::fs::symlink_metadata(b.join("AGENTS.md"))
            .unwrap()
            .is_file()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    assert!(!outside.path().join("nothing").exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    // Plain relative paths only.
    assert!(matches!(
        write_new(b, Path::new("../escape"), b"x"),
        Err(Error::NotPlain { .. })
    ));
    assert!(matches!(
        ensure_dir(b, Path::new("/tmp")),
        Err(Error::NotPlain { .. })
    ));
}

#[test]
fn reads_regular_files_only_and_never_waits_on_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let e = read_regular(&fifo, 100).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} is a FIFO (named pipe), not a regular file",
            fifo.display()
        )
    );
    let e = read_regular(Path::new("/dev/zero"), 100).unwrap_err();
    assert!(
        e.to_string().ends_with("is a device, not a regular file"),
        "{e}"
    );
    std::fs::write(dir.path().join("f"), "12345").unwrap();
    assert_eq!(read_regular(&dir.path().join("f"), 5).unwrap(), b"12345");
    assert!(read_regular(&dir.path().join("f"), 4).is_err());
}
