use std::path::Path;
use std::time::Duration;

use super::*;

fn url(raw: &str) -> RepoSource {
    RepoSource::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
}

fn refused(raw: &str, needle: &str) {
    match RepoSource::parse(raw) {
        Ok(found) => panic!("{raw} was accepted as {found:?}"),
        Err(e) => assert!(
            e.to_string().contains(needle),
            "{raw}: {e:?} lacks {needle:?}"
        ),
    }
}

#[test]
fn every_url_form_is_accepted_as_written() {
    for raw in [
        "file:///srv/git/remote.git",
        "https://example.com/org/repo.git",
        "http://example.com:8080/repo",
        "HTTPS://example.com/org/repo.git",
        "ssh://git@example.com/org/repo.git",
        "ssh://example.com:2222/repo.git",
        "git://example.com/repo.git",
        "git@github.com:org/repo.git",
        "example.com:repo.git",
    ] {
        assert_eq!(url(raw), RepoSource::Url(raw.to_owned()));
    }
    assert_eq!(
        url("  https://example.com/r.git \n"),
        RepoSource::Url("https://example.com/r.git".to_owned()),
        "surrounding blanks are trimmed"
    );
}

#[test]
fn an_absolute_path_is_a_path() {
    assert_eq!(
        url(" /home/me/project "),
        RepoSource::Path("/home/me/project".into())
    );
    assert_eq!(url("/a:b"), RepoSource::Path("/a:b".into()), "not scp-like");
}

#[test]
fn every_bad_setting_is_refused_with_its_reason() {
    for (raw, needle) in [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("relative/path", "is not an absolute path or a git URL"),
        ("./repo", "is not an absolute path or a git URL"),
        ("repo", "is not an absolute path or a git URL"),
        ("ftp://example.com/repo.git", "`ftp://` is not supported"),
        ("https://user:pass@example.com/r.git", "credential helper"),
        ("https://ghp_token@example.com/r.git", "credential helper"),
        ("http://u:p@example.com/r.git", "must not carry credentials"),
        (
            "ssh://git:secret@example.com/r.git",
            "must not carry credentials",
        ),
        ("file://server/srv/repo.git", "file:///absolute/path"),
        ("file://", "names no folder"),
        ("https:///repo.git", "names no host"),
        ("https://example.com", "names no repository"),
        ("https://example.com/", "names no repository"),
        ("ssh://-oProxyCommand=x/repo", "cannot start with `-`"),
        ("-oProxyCommand=touch:repo", "cannot start with `-`"),
        ("@example.com:repo", "names no host"),
        ("git@example.com:", "names no repository"),
        ("ext::sh -c touch% /tmp/x", "remote-helper"),
        ("https://example.com/my repo.git", "contains spaces"),
        ("https://example.com/r\u{7}.git", "control characters"),
    ] {
        refused(raw, needle);
    }
}

/// Runs git in `dir`, asserting success; returns stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
    git(dir, &[&who[..], &["commit", "-qm", message]].concat());
}

/// A bare repository in `dir` with one commit on `main`; returns its `file://` URL.
fn remote_in(dir: &Path) -> String {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    commit_all(&src, "one");
    let remote = dir.join("remote.git");
    let target = remote.display().to_string();
    git(dir, &["clone", "-q", "--bare", "src", &target]);
    format!("file://{target}")
}

#[tokio::test]
async fn a_mirror_is_cloned_once_then_fetched_and_never_holds_run_branches_of_the_remote() {
    let dir = tempfile::tempdir().unwrap();
    let url = remote_in(dir.path());
    let cache = dir.path().join("cache");
    let (a, b) = tokio::join!(mirror(&cache, &url), mirror(&cache, &url));
    let path = a.unwrap();
    assert_eq!(b.unwrap(), path, "two runs at once share one mirror");
    assert_eq!(path, mirror_path(&cache, &url));
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 16 + ".git".len(), "{name}");
    let names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no partial clone left: {names:?}");
    let head = |repo: &Path, rev: &str| git(repo, &["rev-parse", rev]);
    let src = dir.path().join("src");
    assert_eq!(head(&path, REMOTE_HEAD), head(&src, "HEAD"));
    assert!(
        git(&path, &["for-each-ref", "refs/heads"]).is_empty(),
        "the remote's branches stay out of refs/heads"
    );

    // A run's branch in the mirror survives a fetch with prune; a new remote commit arrives.
    git(&path, &["branch", "muster/X-1-r1", REMOTE_HEAD]);
    std::fs::write(src.join("b.txt"), "b\n").unwrap();
    commit_all(&src, "two");
    git(&src, &["push", "-q", "../remote.git", "main"]);
    mirror(&cache, &url).await.unwrap();
    assert_eq!(head(&path, REMOTE_HEAD), head(&src, "HEAD"));
    assert_eq!(head(&path, "refs/remotes/origin/main"), head(&src, "HEAD"));
    assert!(!git(&path, &["branch", "--list", "muster/X-1-r1"]).is_empty());
}

#[tokio::test]
async fn an_unreachable_or_empty_remote_leaves_no_mirror_behind() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let missing = format!("file://{}/nowhere.git", dir.path().display());
    let e = mirror(&cache, &missing).await.unwrap_err().to_string();
    assert!(e.starts_with(&format!("cannot clone {missing}: ")), "{e}");
    assert!(e.contains("does not appear to be a git repository"), "{e}");
    let empty = dir.path().join("empty.git");
    git(dir.path(), &["init", "-q", "--bare", "empty.git"]);
    let e = mirror(&cache, &format!("file://{}", empty.display()))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no commit yet"), "{e}");
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);
}

#[tokio::test]
async fn a_remote_that_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts and holds every connection without a byte in reply.
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("git://127.0.0.1:{port}/repo.git");
    let started = std::time::Instant::now();
    let e = mirror_with_timeout(dir.path(), &url, None, Duration::from_secs(2))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("cannot clone {url}: the remote did not answer within 2 s")
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    held.abort();
}
