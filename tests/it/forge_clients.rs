//! The forge clients (`muster::forge`) against the scripted forge, once per forge kind: what a token
//! may do, git pushes with the credentials `git_auth_header` makes, pull requests, job logs; and each
//! webhook builder through `send_hook` into `verify` and `parse`.

use std::path::Path;

use muster::domain::{ForgeKind, PrState};
use muster::forge::{self, Endpoint, Forge, ForgeError, LogRef, NewPull};
use muster_tests::forge::ScriptedForge;

const REPO: &str = "acme/app";
const TOKEN: &str = "forge-token-Zq8";
const BRANCH: &str = "muster/fix-1";

/// Emits one test per forge kind for each case: `github::case`, `gitlab::case`, `gitea::case`.
macro_rules! per_kind {
    ($($case:ident),+ $(,)?) => {
        per_kind!(@kind github, Github; $($case),+);
        per_kind!(@kind gitlab, Gitlab; $($case),+);
        per_kind!(@kind gitea, Gitea; $($case),+);
    };
    (@kind $module:ident, $kind:ident; $($case:ident),+) => {
        mod $module {$(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(muster::domain::ForgeKind::$kind).await
            }
        )+}
    };
}

per_kind!(
    access_reports_push_rights_and_the_clone_url,
    a_read_only_token_cannot_push_or_open_pulls,
    git_push_needs_the_token,
    pulls_open_read_and_close,
    check_log_returns_the_failing_part,
);

mod hooks;

async fn start(kind: ForgeKind) -> (ScriptedForge, Box<dyn Forge>) {
    let forge = ScriptedForge::start(kind, REPO, TOKEN).await.unwrap();
    let client = client(&forge, TOKEN);
    (forge, client)
}

fn client(forge: &ScriptedForge, token: &str) -> Box<dyn Forge> {
    let endpoint = Endpoint {
        kind: forge.kind(),
        api_url: forge.api_url(),
        repo: REPO.to_owned(),
        token: token.to_owned(),
    };
    forge::client(endpoint, reqwest::Client::new())
}

/// Runs git in `dir` off the runtime's threads (the forge answers it on them); never prompts.
async fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let (dir, args) = (
        dir.to_owned(),
        args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
    );
    tokio::task::spawn_blocking(move || {
        std::process::Command::new("git")
            .args([
                "-c",
                "credential.helper=",
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
            ])
            .args(&args)
            .current_dir(&dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("run git")
    })
    .await
    .unwrap()
}

/// Clones the forge's repository anonymously into `dir/work` and commits a change on `branch`.
async fn work_on(forge: &ScriptedForge, dir: &Path, branch: &str) -> std::path::PathBuf {
    let cloned = git(dir, &["clone", "--quiet", &forge.clone_url(), "work"]).await;
    assert!(cloned.status.success(), "{cloned:?}");
    let work = dir.join("work");
    let checkout = git(&work, &["checkout", "--quiet", "-b", branch]).await;
    assert!(checkout.status.success(), "{checkout:?}");
    std::fs::write(
        work.join(format!("{}.txt", branch.replace('/', "-"))),
        "work\n",
    )
    .unwrap();
    assert!(git(&work, &["add", "-A"]).await.status.success());
    assert!(
        git(&work, &["commit", "--quiet", "-m", "work"])
            .await
            .status
            .success()
    );
    work
}

/// Pushes `branch` from `work` with the token (or without credentials); returns git's output.
async fn push(
    forge: &ScriptedForge,
    work: &Path,
    branch: &str,
    with_token: bool,
) -> std::process::Output {
    let header = format!(
        "http.extraHeader=Authorization: {}",
        forge::git_auth_header(forge.kind(), TOKEN)
    );
    let refspec = format!("HEAD:refs/heads/{branch}");
    let mut args = Vec::new();
    if with_token {
        args.extend(["-c", header.as_str()]);
    }
    args.extend(["push", "--quiet", "origin", refspec.as_str()]);
    git(work, &args).await
}

/// Clones, commits and pushes `branch` with the token; returns its commit.
async fn pushed_branch(forge: &ScriptedForge, dir: &Path, branch: &str) -> String {
    let work = work_on(forge, dir, branch).await;
    let out = push(forge, &work, branch, true).await;
    assert!(out.status.success(), "{out:?}");
    muster_tests::git(&work, &["rev-parse", "HEAD"])
        .trim()
        .to_owned()
}

async fn access_reports_push_rights_and_the_clone_url(kind: ForgeKind) {
    let (forge, client) = start(kind).await;
    let access = client.access().await.unwrap();
    assert!(
        access.can_push && access.can_open_prs && access.can_comment && access.can_read_checks,
        "{access:?}"
    );
    assert_eq!(access.clone_url, forge.clone_url());
    assert_eq!(access.default_branch, "main");
    assert!(forge::same_repository(
        &access.clone_url,
        &format!("{}/", forge.clone_url().trim_end_matches(".git"))
    ));

    let wrong = client_with_wrong_token(&forge).access().await.unwrap_err();
    assert!(
        matches!(wrong, ForgeError::Unauthorized { status: 401, .. }),
        "{wrong:?}"
    );

    // The token went only in the header this forge reads, never into a URL.
    let header = match kind {
        ForgeKind::Gitlab => "private-token",
        ForgeKind::Github | ForgeKind::Gitea => "authorization",
    };
    for request in forge.requests() {
        assert!(!request.path.contains(TOKEN), "{request:?}");
        if request.status == 200 {
            assert!(
                request.header(header).is_some_and(|v| v.ends_with(TOKEN)),
                "{request:?}"
            );
            assert_eq!(request.header("user-agent"), Some("muster"));
        }
    }
}

fn client_with_wrong_token(forge: &ScriptedForge) -> Box<dyn Forge> {
    client(forge, "not-the-token")
}

async fn a_read_only_token_cannot_push_or_open_pulls(kind: ForgeKind) {
    let (forge, client) = start(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let work = work_on(&forge, dir.path(), BRANCH).await;
    forge.set_token_scopes(false);
    let access = client.access().await.unwrap();
    assert!(!access.can_push && !access.can_open_prs, "{access:?}");
    assert!(
        access.notes.iter().any(|n| n.contains("read-only")),
        "{access:?}"
    );

    let out = push(&forge, &work, BRANCH, true).await;
    assert!(!out.status.success(), "a read-only token pushed: {out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "{out:?}"
    );
    assert!(forge.pushes().is_empty());

    forge.set_token_scopes(true);
    assert!(push(&forge, &work, BRANCH, true).await.status.success());
    forge.set_token_scopes(false);
    let refused = client
        .open_pull(&new_pull(BRANCH, false))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ForgeError::Unauthorized { status: 403, .. }),
        "{refused:?}"
    );
    assert!(forge.pulls().is_empty());
}

async fn git_push_needs_the_token(kind: ForgeKind) {
    let (forge, client) = start(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let work = work_on(&forge, dir.path(), BRANCH).await;

    let refused = push(&forge, &work, BRANCH, false).await;
    assert!(
        !refused.status.success(),
        "pushed without credentials: {refused:?}"
    );
    assert!(forge.pushes().is_empty());
    assert_eq!(client.branch_head(BRANCH).await.unwrap(), None);

    let pushed = push(&forge, &work, BRANCH, true).await;
    assert!(pushed.status.success(), "{pushed:?}");
    let sha = muster_tests::git(&work, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    assert_eq!(
        forge.pushes(),
        vec![(format!("refs/heads/{BRANCH}"), sha.clone())]
    );
    assert_eq!(
        muster_tests::git(&forge.repo_dir(), &["rev-parse", BRANCH]).trim(),
        sha
    );
    assert_eq!(client.branch_head(BRANCH).await.unwrap(), Some(sha));
    let main = muster_tests::git(&forge.repo_dir(), &["rev-parse", "main"])
        .trim()
        .to_owned();
    assert_eq!(client.branch_head("main").await.unwrap(), Some(main));

    // The clone fetched anonymously; only the push carried the token, as git's Basic credentials.
    let requests = forge.requests();
    let git_requests = requests.iter().filter(|r| r.path.starts_with("/git/"));
    for request in git_requests {
        let sent = request.header("authorization");
        if request.path.contains("git-upload-pack") {
            assert_eq!(sent, None, "{request:?}");
        } else if request.status == 200 {
            assert_eq!(
                sent,
                Some(forge::git_auth_header(kind, TOKEN).as_str()),
                "{request:?}"
            );
        }
    }
    assert!(
        requests
            .iter()
            .any(|r| r.path.ends_with("/git-receive-pack") && r.status == 200)
    );
}

fn new_pull(head: &str, draft: bool) -> NewPull {
    NewPull {
        title: "Fix the widget".to_owned(),
        body: "Closes MUS-1.\n\nOpened by Muster.".to_owned(),
        head: head.to_owned(),
        base: "main".to_owned(),
        draft,
    }
}

async fn pulls_open_read_and_close(kind: ForgeKind) {
    let (forge, client) = start(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let sha = pushed_branch(&forge, dir.path(), BRANCH).await;

    let missing = client
        .open_pull(&new_pull("no-such-branch", false))
        .await
        .unwrap_err();
    assert!(
        matches!(missing, ForgeError::Refused { status: 422, .. }),
        "{missing:?}"
    );
    assert_eq!(client.pull_for_branch(BRANCH).await.unwrap(), None);

    let opened = client.open_pull(&new_pull(BRANCH, true)).await.unwrap();
    assert_eq!(
        (opened.number, opened.state, opened.draft),
        (1, PrState::Open, true)
    );
    assert_eq!(
        (opened.head.as_str(), opened.base.as_str()),
        (BRANCH, "main")
    );
    assert_eq!(opened.head_sha, sha);
    assert_eq!(opened.mergeable, Some(true));
    assert!(opened.url.ends_with('1'), "{}", opened.url);
    assert_eq!(client.pull(1).await.unwrap(), opened);
    assert_eq!(
        client.pull_for_branch(BRANCH).await.unwrap(),
        Some(opened.clone())
    );
    assert_eq!(client.pull_for_branch("other").await.unwrap(), None);

    let on_forge = &forge.pulls()[0];
    let expected_title = match kind {
        ForgeKind::Github => "Fix the widget",
        ForgeKind::Gitlab => "Draft: Fix the widget",
        ForgeKind::Gitea => "WIP: Fix the widget",
    };
    assert_eq!(
        (on_forge.title.as_str(), on_forge.draft),
        (expected_title, true)
    );
    assert_eq!(on_forge.body, "Closes MUS-1.\n\nOpened by Muster.");

    let second = client.open_pull(&new_pull(BRANCH, true)).await.unwrap_err();
    assert!(matches!(second, ForgeError::Refused { .. }), "{second:?}");

    client.comment(1, "CI is green.").await.unwrap();
    assert_eq!(forge.pulls()[0].comments, vec!["CI is green.".to_owned()]);
    assert!(matches!(
        client.pull(99).await.unwrap_err(),
        ForgeError::NotFound(_)
    ));

    forge.merge(1);
    let merged = client.pull(1).await.unwrap();
    assert_eq!(merged.state, PrState::Merged);
    assert_eq!(client.pull_for_branch(BRANCH).await.unwrap(), None);

    let other = tempfile::tempdir().unwrap();
    pushed_branch(&forge, other.path(), "muster/fix-2").await;
    let ready = client
        .open_pull(&new_pull("muster/fix-2", false))
        .await
        .unwrap();
    assert_eq!((ready.number, ready.draft), (2, false));
    forge.close(2);
    assert_eq!(client.pull(2).await.unwrap().state, PrState::Closed);
}

fn log_ref(kind: ForgeKind, job: i64) -> LogRef {
    match kind {
        ForgeKind::Github => LogRef::GithubJob(job),
        ForgeKind::Gitlab => LogRef::GitlabJob(job),
        ForgeKind::Gitea => LogRef::GiteaJob(job),
    }
}

async fn check_log_returns_the_failing_part(kind: ForgeKind) {
    let (forge, client) = start(kind).await;
    let mut lines: Vec<String> = (0..300).map(|i| format!("compiling crate {i}")).collect();
    lines[150] = "error[E0425]: cannot find value `widget` in this scope".to_owned();
    lines[299] = "Process completed with exit code 101.".to_owned();
    forge.set_job_log(17, &lines.join("\n"));

    let part = client.check_log(&log_ref(kind, 17)).await.unwrap();
    assert!(part.lines().count() <= 60, "{part}");
    assert!(
        part.contains("error[E0425]: cannot find value `widget`"),
        "{part}"
    );
    assert!(
        part.ends_with("Process completed with exit code 101."),
        "{part}"
    );
    assert!(!part.contains("compiling crate 20\n"), "{part}");

    assert_eq!(client.check_log(&log_ref(kind, 18)).await.unwrap(), "");
    assert_eq!(client.check_log(&LogRef::None).await.unwrap(), "");
    let other = if kind == ForgeKind::Github {
        ForgeKind::Gitlab
    } else {
        ForgeKind::Github
    };
    assert_eq!(client.check_log(&log_ref(other, 17)).await.unwrap(), "");
}
