use std::os::unix::fs::symlink;

use super::*;

async fn all<R: AsyncRead + Unpin>(lines: &mut Lines<R>) -> Vec<Line> {
    let mut out = Vec::new();
    while let Some(line) = lines.next().await.unwrap() {
        out.push(line);
    }
    out
}

#[tokio::test]
async fn a_line_over_the_cap_is_skipped_whole_and_reading_goes_on() {
    let long = "x".repeat(200_000);
    let input = format!("short\r\n{long}\nafter\nunfinished");
    let mut lines = Lines::new(input.as_bytes(), 1000, u64::MAX);
    assert_eq!(
        all(&mut lines).await,
        [
            Line::Text("short".into()),
            Line::TooLong(200_000),
            Line::Text("after".into())
        ]
    );
    // The unfinished line is kept, not buffered beyond the cap.
    assert!(lines.line.capacity() <= 1000);
}

#[tokio::test]
async fn an_unfinished_line_continues_when_the_file_grows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    std::fs::write(&path, "one\ntw").unwrap();
    let file = tokio::fs::File::open(&path).await.unwrap();
    let mut lines = Lines::new(file, 100, u64::MAX);
    assert_eq!(all(&mut lines).await, [Line::Text("one".into())]);
    std::fs::write(&path, "one\ntwo\n").unwrap();
    assert_eq!(all(&mut lines).await, [Line::Text("two".into())]);
}

#[tokio::test]
async fn nothing_is_read_past_the_total_cap() {
    let input = "a\n".repeat(100);
    let mut lines = Lines::new(input.as_bytes(), 100, 10);
    let got = all(&mut lines).await;
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(got.last(), Some(&Line::Exhausted(10)));
    assert_eq!(lines.next().await.unwrap(), None);
}

/// A two-gigabyte line (a sparse file, as `truncate -s +2G` makes) costs one chunk and one capped line.
#[tokio::test]
async fn a_sparse_gigabyte_line_is_skipped_without_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| io::Write::write_all(&mut f, b"\nlast\n"))
        .unwrap();
    let file = tokio::fs::File::from_std(open_regular(&path, None).unwrap());
    let mut lines = Lines::new(file, 1 << 20, u64::MAX);
    assert_eq!(
        all(&mut lines).await,
        [Line::TooLong(1 << 30), Line::Text("last".into())]
    );
    assert!(lines.line.capacity() <= 1 << 20);
}

#[test]
fn links_fifos_and_paths_out_of_the_folder_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "key").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = real_root(dir.path()).unwrap();
    std::fs::write(dir.path().join("plain"), "ok").unwrap();
    symlink(&secret, dir.path().join("link")).unwrap();
    symlink(outside.path(), dir.path().join("folder")).unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );

    assert_eq!(
        read_capped(&dir.path().join("plain"), Some(&root), 10).unwrap(),
        b"ok"
    );
    for (name, why) in [
        ("link", "is a symbolic link"),
        ("fifo", "is not a regular file"),
        ("folder/secret", "leads out of its folder"),
    ] {
        let e = read_capped(&dir.path().join(name), Some(&root), 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}");
        assert!(e.to_string().contains(why), "{name}: {e}");
    }
}

#[test]
fn a_file_over_the_limit_is_an_error_not_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "0123456789").unwrap();
    assert_eq!(read_capped(&path, None, 10).unwrap().len(), 10);
    let e = read_capped(&path, None, 9).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
}

#[test]
fn the_root_of_a_folder_not_made_yet_is_its_parents_real_path() {
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        real_root(&dir.path().join("a/b")).unwrap(),
        real.join("a/b")
    );
}
