//! Issue 11, items 6 and 5 (files): what the server writes into a repository's worktree or a run's HOME
//! never follows a symbolic link out of it; an agent's env cannot choose where the server writes; a skill
//! folder import reads regular files only; the data dir, the database and the key are private; remote
//! images in markdown are links. Real server, real git repositories, real runs through the embedded
//! runner with a stand-in agent (a shell script that prints what it was handed), on both backends.

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use muster::domain::*;
use muster_agents::RuntimeKind;
use muster_tests::seed;
use muster_tests::{Backend, TestApp, TestDb, git, git_commit_all, mint_token, spawn_app};
use serde_json::{Value, json};

/// The longest a poll waits.
const DEADLINE: Duration = Duration::from_secs(30);

/// The stand-in agent: prints its brief and the skills it was handed, optionally swaps its skills
/// folder for a link to `$SWAP`, waits for a `release` file when `$PAUSE` is set, and ends with a
/// Claude-style result line.
const AGENT: &str = r#"#!/bin/sh
cat >/dev/null
for f in AGENTS.md CLAUDE.md; do
  if [ -f "$f" ]; then echo "== brief $f"; cat "$f"; echo; fi
done
echo "== codex-home ${CODEX_HOME:-none}"
for d in .claude/skills "${CODEX_HOME:-/nonexistent}/skills"; do
  [ -d "$d" ] && find "$d" -name SKILL.md | sort | sed 's/^/== skill file /'
done
if [ -n "${SWAP:-}" ]; then mv .claude/skills .claude/moved && ln -s "$SWAP" .claude/skills; fi
if [ -n "${PAUSE:-}" ]; then
  echo "== waiting for release"
  while [ ! -e release ]; do sleep 0.05; done
  rm release
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
"#;

/// A skill's SKILL.md, with a marker the agent prints when it can read it.
const SKILL: &str = "---\nname: demo\ndescription: A demo playbook for the symlink tests.\n---\n\nSay skill-marker-7.\n";

struct World {
    _db: TestDb,
    app: TestApp,
    ws: Workspace,
    token: String,
    tmp: tempfile::TempDir,
}

async fn world(backend: Backend) -> Option<World> {
    let db = TestDb::new(backend).await?;
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = db.config();
    config.embedded_runner = true;
    config.runtime_paths = vec![
        (RuntimeKind::Claude, agent.clone()),
        (RuntimeKind::Codex, agent),
    ];
    let app = spawn_app(config).await;
    let (owner, ws) = seed::owner_of(
        &app.store,
        seed::person("ada@acme.test", "Ada"),
        ("Acme", "acme", "ACM"),
    )
    .await;
    let token = mint_token(app.store.as_ref(), ws.id, owner.id, "test").await;
    Some(World {
        _db: db,
        app,
        ws,
        token,
        tmp,
    })
}

impl World {
    async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .request(method, self.app.url(path))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(15));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("the server answers in time");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or_default())
    }

    /// A committed repository in `tmp/<name>`, shaped by `build`, and made the workspace's repository.
    async fn repo(&self, name: &str, build: impl FnOnce(&Path)) -> PathBuf {
        let repo = self.tmp.path().join(name);
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "# Demo\n").unwrap();
        build(&repo);
        git_commit_all(&repo, "first");
        self.app
            .store
            .set_workspace_repo(self.ws.id, Some(&repo.display().to_string()))
            .await
            .unwrap();
        repo
    }

    /// An agent of `kind` (a custom one runs the stand-in), stored as is: no validation, as an agent
    /// saved before today's rules would be.
    async fn agent(&self, name: &str, kind: RuntimeKind, env: &[(&str, &str)]) -> Agent {
        let mut new = NewAgent::new(AgentName::parse(name).unwrap(), kind);
        new.max_retries = 0;
        if kind == RuntimeKind::Custom {
            new.command = Some(self.tmp.path().join("agent.sh").display().to_string());
        }
        new.env = env
            .iter()
            .map(|(k, v)| EnvVar {
                key: (*k).into(),
                value: (*v).into(),
                secret: false,
            })
            .collect();
        self.app.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// Imports the demo skill from a folder (the honest import) and attaches it to `agent`.
    async fn attach_demo_skill(&self, agent: &Agent) {
        let dir = self.tmp.path().join("skill-src/demo");
        if !dir.exists() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
            let (status, body) = self
                .api(
                    reqwest::Method::POST,
                    "/api/v1/skills/import-path",
                    Some(json!({ "path": dir.display().to_string() })),
                )
                .await;
            assert_eq!(status, 201, "{body}");
        }
        let path = format!("/api/v1/agents/{}/skills/demo", agent.profile.name.as_str());
        let (status, body) = self
            .api(
                reqwest::Method::PUT,
                &path,
                Some(json!({ "enabled": true })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// A todo issue with `body`, assigned to `agent` through the API; returns it and its run.
    async fn assign(&self, title: &str, body: &str, agent: &Agent) -> (Issue, Run) {
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap())
            .with_body(body)
            .unwrap();
        new.status = IssueStatus::Todo;
        let issue = self.app.store.create_issue(self.ws.id, &new).await.unwrap();
        let (status, resp) = self
            .api(
                reqwest::Method::PATCH,
                &format!("/api/v1/issues/{}", issue.key),
                Some(json!({ "assignee": agent.profile.name.as_str() })),
            )
            .await;
        assert_eq!(status, 200, "{resp}");
        let run = poll("a run", || async {
            self.app
                .store
                .list_runs_for_issue(issue.id)
                .await
                .unwrap()
                .pop()
        })
        .await;
        (issue, run)
    }

    async fn finished(&self, run: &Run) -> Run {
        poll("the run to end", || async {
            let run = self.app.store.get_run(run.id).await.unwrap();
            run.status.is_terminal().then_some(run)
        })
        .await
    }

    /// `run` once it has ended, which must be a success, and its log.
    async fn succeeded(&self, run: &Run) -> (Run, String) {
        let run = self.finished(run).await;
        let log = self.log(&run).await;
        assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{log}");
        (run, log)
    }

    /// Everything the run logged, as one text.
    async fn log(&self, run: &Run) -> String {
        let events = self
            .app
            .store
            .run_events_since(run.id, 0, 10_000)
            .await
            .unwrap();
        events
            .iter()
            .map(|e| format!("{} {}", e.kind, e.payload))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stops the server and waits for its runner (and so every run's clean-up) to end.
    async fn stop(self) -> tempfile::TempDir {
        self.app.shutdown.cancel();
        self.app.handle.await.unwrap().unwrap();
        self.tmp
    }
}

async fn poll<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Every path under `dir` (relative, sorted), with each file's bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.push((rel, Vec::new()));
                walk(root, &path, out);
            } else {
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The attack: a repository commits `AGENTS.md` as a link to a file outside it. Muster wrote the brief
/// (with the issue's body) into that file, and read that file into the brief. Now the link in the
/// worktree is replaced by the brief, the outside file is neither written nor read, and git restores the
/// link before the work is committed. The honest case: `AGENTS.md -> CLAUDE.md` inside the repository
/// gives the agent the repository's own text plus the brief, and `CLAUDE.md` is not touched.
async fn a_linked_brief_is_never_written_through(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let outside = w.tmp.path().join("outside-notes.md");
    std::fs::write(&outside, "precious-outside-text\n").unwrap();
    let target = outside.clone();
    let repo = w
        .repo("linked", move |r| {
            symlink(&target, r.join("AGENTS.md")).unwrap()
        })
        .await;
    let agent = w.agent("linker", RuntimeKind::Custom, &[]).await;
    let (_, run) = w
        .assign("Rotate", "Please rotate-the-keys-now.", &agent)
        .await;
    let (run, log) = w.succeeded(&run).await;
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "precious-outside-text\n",
        "the brief was written through the link"
    );
    assert!(
        log.contains("rotate-the-keys-now"),
        "the agent got its brief: {log}"
    );
    assert!(
        !log.contains("precious-outside-text"),
        "the outside file was read: {log}"
    );
    assert!(
        log.contains("is a link to a file outside the repository; Muster did not read it"),
        "{log}"
    );
    let branch = run.branch.clone().unwrap();
    assert_eq!(
        git(&repo, &["ls-tree", &branch, "AGENTS.md"]),
        git(&repo, &["ls-tree", "main", "AGENTS.md"]),
        "the link is restored before the work is committed"
    );

    // Honest: a link inside the repository.
    let repo = w
        .repo("honest", |r| {
            std::fs::write(r.join("CLAUDE.md"), "house-rules-text\n").unwrap();
            symlink("CLAUDE.md", r.join("AGENTS.md")).unwrap();
        })
        .await;
    let (_, run) = w.assign("Tidy", "Please tidy-the-docs.", &agent).await;
    let (run, log) = w.succeeded(&run).await;
    assert!(
        log.contains("house-rules-text") && log.contains("tidy-the-docs"),
        "{log}"
    );
    let branch = run.branch.clone().unwrap();
    assert_eq!(
        git(&repo, &["diff", "--stat", "main", &branch]),
        "",
        "neither CLAUDE.md nor the link changed on the run's branch"
    );
    w.stop().await;
}

both_backends!(
    a_linked_brief_is_never_written_through,
    skills_never_go_through_a_linked_skills_folder,
    skill_cleanup_never_follows_a_planted_link,
    an_agents_env_cannot_choose_where_the_server_writes,
    folder_import_reads_regular_files_only,
    data_dir_database_and_key_are_private,
    remote_images_in_an_issue_become_links,
);

/// The attack: a repository commits `.claude/skills` as a link to a folder outside it; Muster wrote the
/// run's skill folders through it. Now nothing is written there: the skills reach the agent in its
/// brief. The honest case: a plain repository gets `.claude/skills/demo/SKILL.md`.
async fn skills_never_go_through_a_linked_skills_folder(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let outside = w.tmp.path().join("outside-skills");
    std::fs::create_dir_all(outside.join("theirs")).unwrap();
    std::fs::write(outside.join("theirs/SKILL.md"), "theirs\n").unwrap();
    let before = snapshot(&outside);
    let target = outside.clone();
    w.repo("linked-skills", move |r| {
        std::fs::create_dir_all(r.join(".claude")).unwrap();
        symlink(&target, r.join(".claude/skills")).unwrap();
    })
    .await;
    let agent = w
        .agent("skilled", RuntimeKind::Claude, &[("PAUSE", "1")])
        .await;
    w.attach_demo_skill(&agent).await;
    let (_, run) = w.assign("Use skills", "Use the demo skill.", &agent).await;
    // While the run is live (Muster removes its skill folders when the run ends).
    let worktree = poll("the agent to wait", || async {
        let run = w.app.store.get_run(run.id).await.unwrap();
        let log = w.log(&run).await;
        (log.contains("waiting for release")).then_some(run.worktree?)
    })
    .await;
    assert_eq!(
        snapshot(&outside),
        before,
        "skill folders were written through the link"
    );
    std::fs::write(Path::new(&worktree).join("release"), "").unwrap();
    let (_, log) = w.succeeded(&run).await;
    assert!(
        log.contains("### Skill: demo") && log.contains("skill-marker-7"),
        "{log}"
    );
    assert_eq!(snapshot(&outside), before);

    // Honest: a plain repository.
    w.repo("plain", |_| {}).await;
    let honest = w.agent("plain", RuntimeKind::Claude, &[]).await;
    w.attach_demo_skill(&honest).await;
    let (_, run) = w.assign("Plain", "Use the demo skill.", &honest).await;
    let (_, log) = w.succeeded(&run).await;
    assert!(
        log.contains("== skill file .claude/skills/demo/SKILL.md"),
        "{log}"
    );
    assert!(!log.contains("### Skill: demo"), "{log}");
    w.stop().await;
}

/// The attack: during its run, the agent swaps the skills folder Muster wrote for a link to a folder
/// outside, holding a folder of the same name; removing "its" skill folder at the end deleted that one.
/// Now a folder whose path passes through a link is left alone.
async fn skill_cleanup_never_follows_a_planted_link(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let outside = w.tmp.path().join("precious");
    std::fs::create_dir_all(outside.join("demo")).unwrap();
    std::fs::write(outside.join("demo/keep.txt"), "keep me\n").unwrap();
    let before = snapshot(&outside);
    let swap = outside.display().to_string();
    let agent = w
        .agent("swapper", RuntimeKind::Claude, &[("SWAP", &swap)])
        .await;
    w.attach_demo_skill(&agent).await;
    let (_, run) = w.assign("Swap", "Swap the folder.", &agent).await;
    let (_, log) = w.succeeded(&run).await;
    assert!(
        log.contains("== skill file .claude/skills/demo/SKILL.md"),
        "{log}"
    );
    let tmp = w.stop().await;
    assert_eq!(snapshot(&tmp.path().join("precious")), before);
}

/// The attack: an agent whose env sets `CODEX_HOME` chose the folder Muster writes the run's skills into.
/// Now such a variable (and `HOME`, `TMPDIR`, `MUSTER_*`) is refused when the agent is saved, and one
/// stored before that rule is ignored: the skills go to the run's own home. An ordinary variable still
/// saves.
async fn an_agents_env_cannot_choose_where_the_server_writes(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    for (key, message) in [
        (
            "CODEX_HOME",
            "CODEX_HOME: is set by Muster for each run (the run's own folder) and cannot be changed",
        ),
        (
            "HOME",
            "HOME: is set by Muster for each run (the run's own folder) and cannot be changed",
        ),
        (
            "TMPDIR",
            "TMPDIR: is set by Muster for each run (the run's own folder) and cannot be changed",
        ),
        (
            "MUSTER_URL",
            "MUSTER_URL: MUSTER_* variables are set by Muster for each run and cannot be changed",
        ),
    ] {
        let (status, body) = w
            .api(
                reqwest::Method::POST,
                "/api/v1/agents",
                Some(json!({ "name": "codexer", "kind": "codex", "env": [{ "key": key, "value": "/tmp/x" }] })),
            )
            .await;
        assert_eq!(status, 422, "{key}: {body}");
        assert_eq!(body, json!({ "errors": { "env": [message] } }), "{key}");
    }
    let (status, body) = w
        .api(
            reqwest::Method::POST,
            "/api/v1/agents",
            Some(json!({ "name": "codexer", "kind": "codex", "env": [{ "key": "RUST_LOG", "value": "info" }] })),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let chosen = w.tmp.path().join("chosen-codex-home");
    std::fs::create_dir_all(&chosen).unwrap();
    let value = chosen.display().to_string();
    let agent = w
        .agent("old-codex", RuntimeKind::Codex, &[("CODEX_HOME", &value)])
        .await;
    w.attach_demo_skill(&agent).await;
    let (_, run) = w.assign("Codex", "Use the demo skill.", &agent).await;
    let (_, log) = w.succeeded(&run).await;
    assert_eq!(
        snapshot(&chosen),
        [],
        "skills were written where the env chose"
    );
    assert!(
        !log.contains(&value),
        "the agent's CODEX_HOME reached the run: {log}"
    );
    assert!(log.contains("/.codex/skills/demo/SKILL.md"), "{log}");
    w.stop().await;
}

/// The attack: a skill folder holding a FIFO made the folder import read forever (a device would too).
/// Now a FIFO, a socket or a link in the folder is refused, naming it, on the server's import and in the
/// CLI's zipping; a link entry in a zip is refused too. The honest folder still imports.
async fn folder_import_reads_regular_files_only(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let dir = w.tmp.path().join("importable");
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("SKILL.md"), SKILL).unwrap();
    let fifo = dir.join("scripts/pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let import = || {
        w.api(
            reqwest::Method::POST,
            "/api/v1/skills/import-path",
            Some(json!({ "path": dir.display().to_string() })),
        )
    };
    let refused = |file: &'static str| async move {
        let (status, body) = import().await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["errors"]["files"], json!([file]), "{body}");
    };
    refused("scripts/pipe: is a FIFO (named pipe); only regular files are allowed in a skill")
        .await;
    let problems = muster::skills::archive::folder_to_zip(&dir).unwrap_err();
    assert_eq!(
        problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["scripts/pipe: is a FIFO (named pipe); only regular files are allowed in a skill"]
    );
    std::fs::remove_file(&fifo).unwrap();

    let socket = dir.join("scripts/sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    refused("scripts/sock: is a socket; only regular files are allowed in a skill").await;
    std::fs::remove_file(&socket).unwrap();

    symlink("/dev/zero", dir.join("scripts/zero")).unwrap();
    refused("scripts/zero: is a symbolic link; links are not allowed in a skill").await;
    std::fs::remove_file(dir.join("scripts/zero")).unwrap();

    // A zip whose entry is a link (made by the real `zip` tool, which stores links as links).
    symlink("/etc/passwd", dir.join("scripts/passwd")).unwrap();
    let zip = w.tmp.path().join("linked.zip");
    let zipped = std::process::Command::new("zip")
        .args(["-q", "-r", "--symlinks"])
        .arg(&zip)
        .arg(".")
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(zipped.success());
    std::fs::remove_file(dir.join("scripts/passwd")).unwrap();
    let resp = w
        .app
        .client
        .post(w.app.url("/api/v1/skills/import"))
        .bearer_auth(&w.token)
        .header("content-type", "application/zip")
        .body(std::fs::read(&zip).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 422);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["errors"]["files"],
        json!(["scripts/passwd: is a symbolic link; links are not allowed in a skill"]),
        "{body}"
    );

    // Honest: regular files only.
    std::fs::write(dir.join("scripts/run.sh"), "echo hi\n").unwrap();
    let (status, body) = import().await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["slug"], "demo", "{body}");
    w.stop().await;
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The finding: the data dir was 0755 and `muster.db` 0644, readable by every local user. Now the data
/// dir is 0700, `secret.key` and the SQLite database (with its `-wal` and `-shm`) 0600, and a second
/// start tightens files an older version left open.
async fn data_dir_database_and_key_are_private(backend: Backend) {
    let Some(db) = TestDb::new(backend).await else {
        return;
    };
    let config = db.config();
    let data = config.data_dir.clone();
    let sqlite = match &config.database_url {
        muster::store::DatabaseUrl::Sqlite(path) => Some(path.clone()),
        muster::store::DatabaseUrl::Postgres(_) => None,
    };
    let files =
        |db: &Path| ["", "-wal", "-shm"].map(|s| PathBuf::from(format!("{}{s}", db.display())));
    let check = |when: &str| {
        assert_eq!(mode(&data), 0o700, "data dir, {when}");
        assert_eq!(mode(&data.join("secret.key")), 0o600, "secret.key, {when}");
        if let Some(db) = &sqlite {
            for f in files(db) {
                assert_eq!(mode(&f), 0o600, "{}, {when}", f.display());
            }
        }
    };
    let app = spawn_app(db.config()).await;
    // A write, so the SQLite -wal and -shm exist while the server runs.
    app.store
        .create_user(&NewUser {
            email: Email::parse("a@b.test").unwrap(),
            display_name: "a".into(),
            password_hash: "x".into(),
        })
        .await
        .unwrap();
    check("fresh");
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();

    // Left open by an older version: tightened at start.
    let open = |p: &Path, m: u32| {
        if p.exists() {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        }
    };
    open(&data, 0o755);
    open(&data.join("secret.key"), 0o644);
    if let Some(db) = &sqlite {
        for f in files(db) {
            open(&f, 0o644);
        }
    }
    let app = spawn_app(config).await;
    app.store
        .create_user(&NewUser {
            email: Email::parse("c@d.test").unwrap(),
            display_name: "c".into(),
            password_hash: "x".into(),
        })
        .await
        .unwrap();
    check("after a restart");
    app.shutdown.cancel();
    app.handle.await.unwrap().unwrap();
}

/// The finding: markdown let an issue body load a remote image in every viewer's browser (a tracking
/// pixel). Now the rendered issue page shows such images as links; ordinary links and text stay.
async fn remote_images_in_an_issue_become_links(backend: Backend) {
    let Some(w) = world(backend).await else {
        return;
    };
    let body = "See ![pixel](https://evil.example/t.png) and <img src=\"https://evil.example/raw.gif\" width=1>.\n\n[docs](https://docs.example/) **bold**";
    let new = NewIssue::new(IssueTitle::parse("Tracking").unwrap())
        .with_body(body)
        .unwrap();
    let issue = w.app.store.create_issue(w.ws.id, &new).await.unwrap();
    let resp = w
        .app
        .client
        .get(w.app.url(&format!("/w/{}/issues/{}", w.ws.slug, issue.key)))
        .bearer_auth(&w.token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let page = resp.text().await.unwrap();
    assert!(!page.contains("<img src=\"https://"), "{page}");
    assert!(!page.contains("evil.example/t.png\" alt"), "{page}");
    assert!(
        page.contains(
            "<a href=\"https://evil.example/t.png\" rel=\"noopener noreferrer nofollow\">pixel</a>"
        ),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"https://evil.example/raw.gif\" rel=\"noopener noreferrer nofollow\">https://evil.example/raw.gif</a>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"https://docs.example/\" rel=\"noopener noreferrer nofollow\">docs</a> <strong>bold</strong>"),
        "{page}"
    );
    w.stop().await;
}
