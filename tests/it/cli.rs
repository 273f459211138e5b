//! The `muster` binary as people use it in a shell, against a served app on both backends: a reader that
//! closes the pipe early, run ids given by a unique prefix, `run logs` of a run's diff, errors without a
//! stack trace under `RUST_BACKTRACE=1`, the default status of `issue create`, and `agent list`'s run
//! counts, and `issue thread` telling an issue's conversation. They run the built binary
//! ([`muster_tests::muster_bin`]), which cargo builds before these tests.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::Arc;

use muster::domain::*;
use muster::store::Store;
use muster_tests::engine::succeed_in_store;
use muster_tests::{Backend, TestApp, TestDb, spawn_app};
use serde_json::{Value, json};

use crate::store_conformance::{agent, fixture, issue};

/// Runs `case` with a fresh [`Cli`] on `backend`.
async fn on_cli(backend: Backend, case: impl AsyncFnOnce(&Cli)) {
    if let Some(cli) = Cli::start(backend).await {
        case(&cli).await;
    }
}

both_backends!(
    with = crate::cli::on_cli;
    a_closed_pipe_ends_commands_quietly,
    run_ids_can_be_given_by_a_unique_prefix,
    run_logs_show_the_diff_as_a_unified_diff,
    errors_are_one_line_even_with_rust_backtrace,
    issue_create_defaults_to_todo_and_agent_list_counts_runs,
    issue_thread_reads_as_a_conversation,
    issue_edit_lays_out_the_plan_and_show_prints_it,
    projects_are_laid_out_and_issues_join_them,
);

/// A served app with one workspace (prefix MUS) and its owner's API token.
pub struct Cli {
    _db: TestDb,
    app: TestApp,
    store: Arc<dyn Store>,
    ws: WorkspaceId,
    token: String,
}

/// What one run of the binary did.
#[derive(Debug)]
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Cli {
    async fn start(backend: Backend) -> Option<Cli> {
        let db = TestDb::new(backend).await?;
        let app = spawn_app(db.config()).await;
        let store = app.store.clone();
        let f = fixture(&store, "team", "MUS").await;
        let token = muster_tests::mint_token(store.as_ref(), f.ws.id, f.owner.id, "cli").await;
        Some(Cli {
            _db: db,
            app,
            store,
            ws: f.ws.id,
            token,
        })
    }

    /// `muster ARGS` with only this server's URL and token (and `env`) in its environment.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(muster_tests::muster_bin());
        cmd.args(args)
            .env_clear()
            .env("MUSTER_URL", format!("http://{}", self.app.addr))
            .env("MUSTER_TOKEN", &self.token)
            .env("MUSTER_CONFIG_DIR", self._db.dir.path().join("client"))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `muster ARGS` to the end.
    async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut cmd = self.command(args, env);
        let out = tokio::task::spawn_blocking(move || cmd.output().expect("run muster"))
            .await
            .unwrap();
        Out {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// Runs `muster ARGS` and reads only the first bytes of its output before closing the pipe, like
    /// `muster … | head -c 100`.
    async fn run_into_short_reader(&self, args: &[&str]) -> Out {
        let mut cmd = self.command(args, &[("RUST_BACKTRACE", "1")]);
        let out = tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().expect("start muster");
            let mut stdout = child.stdout.take().unwrap();
            let mut first = [0_u8; 100];
            stdout.read_exact(&mut first).expect("the first 100 bytes");
            drop(stdout);
            child.wait_with_output().expect("wait for muster")
        })
        .await
        .unwrap();
        Out {
            code: out.status.code(),
            stdout: String::new(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    /// A run of a new agent on a new issue, straight in the store.
    async fn new_run(&self, agent: AgentId) -> Run {
        let issue = issue(&self.store, self.ws, "Work", IssueStatus::Todo).await;
        self.store
            .create_run(&NewRun::assignment(self.ws, issue.id, agent))
            .await
            .unwrap()
    }
}

#[track_caller]
fn ok(out: &Out) {
    assert_eq!(out.code, Some(0), "{out:?}");
}

/// `muster issue list --json | head` and `muster run logs … | head`: far more output than a pipe holds,
/// the reader stops after 100 bytes, and muster ends with status 0 and nothing on stderr (not exit 101
/// with a panic and, under `RUST_BACKTRACE=1`, a stack trace).
async fn a_closed_pipe_ends_commands_quietly(cli: &Cli) {
    let coder = agent(&cli.store, cli.ws, "coder", 1).await;
    for n in 0..300 {
        let title = format!("Issue number {n} with a title long enough to fill the pipe quickly");
        issue(&cli.store, cli.ws, &title, IssueStatus::Todo).await;
    }
    let run = cli.new_run(coder.id).await;
    let events: Vec<NewRunEvent> = (1..=2000)
        .map(|seq| NewRunEvent {
            seq,
            at: chrono::Utc::now(),
            kind: "text".to_owned(),
            payload: json!({"kind": "text", "text": format!("line {seq} of a long and chatty log")}),
        })
        .collect();
    cli.store.append_run_events(run.id, &events).await.unwrap();

    let run_id = run.id.to_string();
    for args in [
        vec!["issue", "list", "--all", "--json"],
        vec!["issue", "list", "--all"],
        vec!["run", "logs", &run_id],
        vec!["run", "logs", &run_id, "--json"],
    ] {
        let out = cli.run_into_short_reader(&args).await;
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (Some(0), ""),
            "muster {args:?} into a reader that stops early"
        );
    }
}

/// `run show|logs|cancel|retry` take a run id or any unique start of it; an ambiguous start lists the
/// candidates, an unknown one says so; both exit 1 with one line.
async fn run_ids_can_be_given_by_a_unique_prefix(cli: &Cli) {
    let coder = agent(&cli.store, cli.ws, "coder", 1).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(cli.new_run(coder.id).await.id.to_string());
    }
    // The shortest start of the first id that no other has, and the start they all share (ids are
    // time-ordered UUIDv7: runs made together share their first digits).
    let unique_len = (1..=36)
        .find(|n| {
            ids[1..]
                .iter()
                .all(|other| !other.starts_with(&ids[0][..*n]))
        })
        .unwrap();
    let shared_len = (0..36)
        .take_while(|n| {
            ids.iter()
                .all(|id| id.as_bytes()[*n] == ids[0].as_bytes()[*n])
        })
        .count();
    assert!(shared_len >= 1, "{ids:?}");

    let unique = &ids[0][..unique_len];
    let shown = cli.run(&["run", "show", unique, "--json"], &[]).await;
    ok(&shown);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["id"], ids[0].as_str());
    // Hyphens are optional and case does not matter.
    let bare = ids[0][..unique_len.max(14)].replace('-', "").to_uppercase();
    let shown = cli.run(&["run", "show", &bare], &[]).await;
    ok(&shown);
    assert!(
        shown.stdout.starts_with(&format!("run {}\n", ids[0])),
        "{shown:?}"
    );
    let cancelled = cli.run(&["run", "cancel", unique], &[]).await;
    ok(&cancelled);
    assert_eq!(cancelled.stdout, format!("run {} cancelled\n", ids[0]));

    let shared = &ids[0][..shared_len];
    let ambiguous = cli.run(&["run", "logs", shared], &[]).await;
    assert_eq!(ambiguous.code, Some(1), "{ambiguous:?}");
    assert!(
        ambiguous.stderr.starts_with(&format!(
            "error: run id prefix \"{shared}\" is ambiguous: it starts "
        )),
        "{ambiguous:?}"
    );
    for id in &ids {
        assert!(
            ambiguous.stderr.contains(&format!("{id} (MUS-")),
            "{id} listed: {ambiguous:?}"
        );
    }
    assert!(ambiguous.stderr.ends_with("; give more characters\n"));
    assert_eq!(ambiguous.stderr.lines().count(), 1, "{ambiguous:?}");
    assert!(ambiguous.stdout.is_empty());

    // UUIDv7 ids start with 0 until the year 2527.
    let unknown = cli.run(&["run", "retry", "fff0"], &[]).await;
    assert_eq!(
        (unknown.code, unknown.stderr.as_str()),
        (
            Some(1),
            "error: no run id starts with \"fff0\"; `muster run list` shows them\n"
        )
    );
    let typo = cli.run(&["run", "show", "0xyz"], &[]).await;
    assert_eq!(typo.code, Some(2), "a usage error: {typo:?}");
    assert!(typo.stderr.contains("is not a run id or the start of one"));
}

/// A run's diff event, as the runner records it from `git diff`, prints as a unified diff: coloured only
/// when asked or on a terminal, and never under NO_COLOR (unless `--color always`).
async fn run_logs_show_the_diff_as_a_unified_diff(cli: &Cli) {
    let coder = agent(&cli.store, cli.ws, "coder", 1).await;
    let run = cli.new_run(coder.id).await;
    let payload = real_diff_payload();
    let events = [
        NewRunEvent {
            seq: 1,
            at: chrono::Utc::now(),
            kind: "text".to_owned(),
            payload: json!({"kind": "text", "text": "Fixed the greeting."}),
        },
        NewRunEvent {
            seq: 2,
            at: chrono::Utc::now(),
            kind: "diff".to_owned(),
            payload: payload.clone(),
        },
    ];
    cli.store.append_run_events(run.id, &events).await.unwrap();
    let id = run.id.to_string();

    let plain = cli.run(&["run", "logs", &id], &[]).await;
    ok(&plain);
    let base = &payload["base"].as_str().unwrap()[..12];
    let expected_head =
        format!("#1 text: Fixed the greeting.\n#2 diff: muster/MUS-1-r1 against {base}\n");
    assert!(plain.stdout.starts_with(&expected_head), "{plain:?}");
    for line in [
        " hello.txt | 3 ++-",
        " 1 file changed, 2 insertions(+), 1 deletion(-)",
        "diff --git a/hello.txt b/hello.txt",
        "--- a/hello.txt",
        "+++ b/hello.txt",
        "@@ -1,2 +1,3 @@",
        " first line",
        "-hello world",
        "+hello, world",
        "+a new line",
    ] {
        assert!(
            plain.stdout.lines().any(|l| l == line),
            "{line:?} in:\n{}",
            plain.stdout
        );
    }
    assert!(!plain.stdout.contains('\x1b'), "no colour into a pipe");
    assert!(!plain.stdout.contains("\"patch\""), "not raw JSON");

    let coloured = cli
        .run(&["run", "logs", &id, "--color", "always"], &[])
        .await;
    ok(&coloured);
    assert!(coloured.stdout.contains("\x1b[32m+hello, world\x1b[0m"));
    assert!(coloured.stdout.contains("\x1b[31m-hello world\x1b[0m"));
    assert!(coloured.stdout.contains("\x1b[36m@@ -1,2 +1,3 @@\x1b[0m"));

    // On a terminal (through `script`, which gives the command a pseudo-terminal) colour is automatic,
    // and NO_COLOR turns it off.
    let on_tty = |no_color: bool| {
        let line = format!("{} run logs {id}", muster_tests::muster_bin().display());
        let mut cmd = retarget(&cli.command(&["run", "logs", &id], &[]), &line, no_color);
        async move {
            tokio::task::spawn_blocking(move || cmd.output().expect("run script"))
                .await
                .unwrap()
        }
    };
    let tty = on_tty(false).await;
    let tty_out = String::from_utf8_lossy(&tty.stdout);
    assert!(tty_out.contains("\x1b[32m+hello, world"), "{tty:?}");
    let tty = on_tty(true).await;
    let tty_out = String::from_utf8_lossy(&tty.stdout);
    assert!(tty_out.contains("+hello, world"), "{tty:?}");
    assert!(!tty_out.contains("\x1b[32m"), "NO_COLOR: {tty:?}");
}

/// `cmd` (built by [`Cli::command`], environment included) run as `script -qec LINE /dev/null`, so that
/// muster's stdout is a pseudo-terminal; with `NO_COLOR=1` when `no_color`.
fn retarget(cmd: &Command, line: &str, no_color: bool) -> Command {
    let mut script = Command::new("script");
    script.args(["-qec", line, "/dev/null"]).env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script.env("TERM", "dumb");
    if no_color {
        script.env("NO_COLOR", "1");
    }
    script
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    script
}

/// A diff event's payload built as the runner builds it (`runner::executor::git::diff`): a real repository,
/// one commit changing a file, `git diff --stat` and `git diff` of base..HEAD.
fn real_diff_payload() -> Value {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    muster_tests::git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("hello.txt"), "first line\nhello world\n").unwrap();
    muster_tests::git_commit_all(dir, "base");
    let base = muster_tests::git(dir, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    std::fs::write(
        dir.join("hello.txt"),
        "first line\nhello, world\na new line\n",
    )
    .unwrap();
    muster_tests::git_commit_all(dir, "work");
    let range = format!("{base}..HEAD");
    let stat = muster_tests::git(
        dir,
        &["diff", "--no-color", "--no-ext-diff", "--stat", &range],
    );
    let patch = muster_tests::git(dir, &["diff", "--no-color", "--no-ext-diff", &range]);
    json!({
        "base": base,
        "branch": "muster/MUS-1-r1",
        "stat": stat.trim_end(),
        "patch": patch,
        "truncated": false,
    })
}

/// A user's mistake prints `error: …` on one line and exits 1, with no stack trace even when
/// `RUST_BACKTRACE=1` is in the environment.
async fn errors_are_one_line_even_with_rust_backtrace(cli: &Cli) {
    for backtrace in ["1", "full"] {
        let env = [("RUST_BACKTRACE", backtrace)];
        let missing = cli.run(&["issue", "show", "MUS-99"], &env).await;
        assert_eq!(
            (
                missing.code,
                missing.stderr.as_str(),
                missing.stdout.as_str()
            ),
            (Some(1), "error: issue MUS-99 not found\n", "")
        );
        let bad = cli
            .run(
                &["issue", "create", "--title", "x", "--status", "doing"],
                &env,
            )
            .await;
        assert_eq!(bad.code, Some(1), "{bad:?}");
        assert_eq!(bad.stderr.lines().count(), 1, "{bad:?}");
        assert!(
            bad.stderr
                .starts_with("error: status: unknown status \"doing\""),
            "{bad:?}"
        );
    }
}

/// `issue create` without `--status` makes a todo issue, as the board's form does; `agent list` says
/// how many runs each agent has now besides how many it may have at once.
async fn issue_create_defaults_to_todo_and_agent_list_counts_runs(cli: &Cli) {
    let created = cli.run(&["issue", "create", "--title", "Plain"], &[]).await;
    ok(&created);
    let key = created.stdout.trim();
    let shown = cli.run(&["issue", "show", key, "--json"], &[]).await;
    ok(&shown);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["status"], "todo");
    assert_eq!(
        IssueStatus::NEW_ISSUE_DEFAULT.as_str(),
        "todo",
        "the one default the board's form preselects too"
    );

    let coder = agent(&cli.store, cli.ws, "coder", 2).await;
    agent(&cli.store, cli.ws, "idle", 3).await;
    for _ in 0..3 {
        cli.new_run(coder.id).await;
    }
    let listed = cli.run(&["agent", "list"], &[]).await;
    ok(&listed);
    assert_eq!(
        listed.stdout,
        "NAME   KIND    MODEL  PERMISSION       RUNNING  QUEUED  MAX RUNS\n\
         coder  claude  -      workspace_write  0        3       2\n\
         idle   claude  -      workspace_write  0        0       3\n"
    );
}

/// `issue thread KEY`: a finished run in one line with its summary's first line (not repeated as a
/// comment), the status change, a person's reply indented, and the live follow-up it queued, in that
/// order; `--json` prints the API's body; an unknown key is a one-line error.
async fn issue_thread_reads_as_a_conversation(cli: &Cli) {
    let issue = issue(&cli.store, cli.ws, "Fix the parser", IssueStatus::Todo).await;
    let coder = agent(&cli.store, cli.ws, "coder", 2).await;
    let first = NewRun::assignment(cli.ws, issue.id, coder.id);
    let first = cli.store.create_run(&first).await.unwrap();
    succeed_in_store(
        cli.store.as_ref(),
        &first,
        "Fixed the parser.\nAll tests pass.",
    )
    .await;
    ok(&cli
        .run(&["issue", "status", "MUS-1", "in_review"], &[])
        .await);
    ok(&cli
        .run(
            &["issue", "comment", "MUS-1", "Now the empty file,\nplease."],
            &[],
        )
        .await);
    let reply = cli
        .store
        .list_comments(issue.id)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let second = NewRun {
        trigger: RunTrigger::Comment,
        trigger_comment_id: Some(reply.id),
        previous_run_id: Some(first.id),
        ..NewRun::assignment(cli.ws, issue.id, coder.id)
    };
    let second = cli.store.create_run(&second).await.unwrap();

    let shown = cli.run(&["issue", "thread", "MUS-1"], &[]).await;
    ok(&shown);
    let text = &shown.stdout;
    let expected = [
        "MUS-1 thread (5 entries)",
        &format!(
            "coder ran (assignment) — succeeded in 0 s, $0.0123: Fixed the parser.  run {}",
            first.id
        ),
        "owner moved from todo to in review",
        "owner commented:\n    Now the empty file,\n    please.",
        &format!(
            "coder ran (comment by owner) — queued — waiting to start  run {}",
            second.id
        ),
    ];
    let mut from = 0;
    for line in expected {
        let found = text[from..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} after byte {from} in:\n{text}"));
        from += found + line.len();
    }
    assert_eq!(
        text.matches("Fixed the parser.").count(),
        1,
        "the summary once:\n{text}"
    );
    assert!(
        !text.contains("All tests pass."),
        "only the summary's first line:\n{text}"
    );

    let json = cli.run(&["issue", "thread", "MUS-1", "--json"], &[]).await;
    ok(&json);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let kinds: Vec<&str> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["change", "run", "status", "comment", "run"]);
    assert_eq!(
        json["entries"][1]["run"]["summary"],
        "Fixed the parser.\nAll tests pass."
    );

    // An assignee change names whom the issue went to.
    ok(&cli
        .run(&["issue", "edit", "MUS-1", "--assignee", "coder"], &[])
        .await);
    ok(&cli
        .run(&["issue", "edit", "MUS-1", "--assignee", "none"], &[])
        .await);
    let shown = cli.run(&["issue", "thread", "MUS-1"], &[]).await;
    ok(&shown);
    assert!(
        shown.stdout.contains("owner unassigned it\n"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("owner assigned it to coder\n"),
        "{}",
        shown.stdout
    );

    let missing = cli.run(&["issue", "thread", "MUS-99"], &[]).await;
    assert_eq!(missing.code, Some(1), "{missing:?}");
    assert!(missing.stderr.contains("MUS-99"), "{missing:?}");
    assert_eq!(missing.stderr.trim().lines().count(), 1, "{missing:?}");
}

/// `issue create --parent`, `issue edit --parent/--blocked-by/--relates-to/--until/--unrelate` and
/// `--wake-on-children`, then `issue show` printing the parent, what it waits on, its relations and its
/// sub-issues; refusals (a cycle, a lone `--until`, a malformed `--unrelate`) are one-line errors.
async fn issue_edit_lays_out_the_plan_and_show_prints_it(cli: &Cli) {
    let made = |title: &'static str| async move {
        let out = cli
            .run(
                &["issue", "create", "--title", title, "--status", "backlog"],
                &[],
            )
            .await;
        ok(&out);
        out.stdout.trim().to_owned()
    };
    let launch = made("Launch").await;
    let schema = made("Schema").await;
    let api = made("API").await;
    let child = cli
        .run(
            &[
                "issue", "create", "--title", "Rollout", "--parent", &launch, "--status", "backlog",
            ],
            &[],
        )
        .await;
    ok(&child);
    ok(&cli
        .run(
            &[
                "issue", "edit", &schema, "--parent", &launch, "--blocks", &api, "--until",
                "merged",
            ],
            &[],
        )
        .await);
    ok(&cli
        .run(
            &[
                "issue",
                "edit",
                &launch,
                "--wake-on-children",
                "true",
                "--relates-to",
                &api,
            ],
            &[],
        )
        .await);
    let shown = cli.run(&["issue", "show", &api], &[]).await;
    ok(&shown);
    assert!(
        shown.stdout.contains(&format!("waiting on: {schema}\n")),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains(&format!(
            "blocked by {schema} (backlog), holds, until merged  Schema\n"
        )),
        "{}",
        shown.stdout
    );
    let shown = cli.run(&["issue", "show", &launch], &[]).await;
    ok(&shown);
    assert!(
        shown
            .stdout
            .contains("sub-issues: 0/2 done; wakes its agent when all have ended\n"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains(&format!("relates to {api}")),
        "{}",
        shown.stdout
    );

    let cycle = cli
        .run(&["issue", "edit", &api, "--blocks", &schema], &[])
        .await;
    assert_eq!(cycle.code, Some(1), "{cycle:?}");
    assert!(
        cycle.stderr.contains(&format!("{api} → {schema} → {api}")),
        "{cycle:?}"
    );
    assert_eq!(cycle.stderr.trim().lines().count(), 1, "{cycle:?}");
    let lone = cli
        .run(&["issue", "edit", &api, "--until", "merged"], &[])
        .await;
    assert_ne!(lone.code, Some(0), "{lone:?}");
    assert!(
        lone.stderr.contains("--until and --stacked go with"),
        "{lone:?}"
    );
    let bad = cli
        .run(&["issue", "edit", &api, "--unrelate", "blocked_by"], &[])
        .await;
    assert!(bad.stderr.contains("KIND:KEY"), "{bad:?}");

    ok(&cli
        .run(
            &[
                "issue",
                "edit",
                &api,
                "--unrelate",
                &format!("blocked_by:{schema}"),
            ],
            &[],
        )
        .await);
    let shown = cli.run(&["issue", "show", &api, "--json"], &[]).await;
    ok(&shown);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["plan"]["waiting_on"], serde_json::json!([]));
}

async fn projects_are_laid_out_and_issues_join_them(cli: &Cli) {
    let made = cli
        .run(
            &[
                "project",
                "create",
                "web",
                "--name",
                "Website",
                "--status",
                "active",
                "--target",
                "2027-03-31",
            ],
            &[],
        )
        .await;
    ok(&made);
    assert_eq!(made.stdout.trim(), "WEB");
    let bad = cli
        .run(&["project", "create", "WEB", "--name", "Again"], &[])
        .await;
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert!(
        bad.stderr.contains("another project already has this key"),
        "{bad:?}"
    );
    let hero = cli
        .run(
            &[
                "issue",
                "create",
                "--title",
                "Hero",
                "--project",
                "WEB",
                "--status",
                "done",
            ],
            &[],
        )
        .await;
    ok(&hero);
    let hero = hero.stdout.trim().to_owned();
    let loose = cli
        .run(
            &["issue", "create", "--title", "Loose", "--status", "backlog"],
            &[],
        )
        .await;
    ok(&loose);
    let loose = loose.stdout.trim().to_owned();
    ok(&cli
        .run(&["issue", "edit", &loose, "--project", "web"], &[])
        .await);
    let listed = cli.run(&["issue", "list", "--project", "WEB"], &[]).await;
    ok(&listed);
    assert!(
        listed.stdout.contains(&hero) && listed.stdout.contains(&loose),
        "{}",
        listed.stdout
    );
    let shown = cli.run(&["issue", "show", &loose], &[]).await;
    ok(&shown);
    assert!(shown.stdout.contains("project:  WEB\n"), "{}", shown.stdout);
    let table = cli.run(&["project", "list"], &[]).await;
    ok(&table);
    assert!(table.stdout.contains("KEY"), "{}", table.stdout);
    assert!(table.stdout.contains("1/2 done"), "{}", table.stdout);
    let edited = cli
        .run(
            &[
                "project", "edit", "WEB", "--status", "paused", "--target", "none",
            ],
            &[],
        )
        .await;
    ok(&edited);
    assert!(
        edited.stdout.contains("status:   paused"),
        "{}",
        edited.stdout
    );
    assert!(edited.stdout.contains("target:   -"), "{}", edited.stdout);
    let shown = cli.run(&["project", "show", "WEB"], &[]).await;
    ok(&shown);
    assert!(
        shown.stdout.contains("repo:     the workspace's"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("issues:   backlog 1, done 1"),
        "{}",
        shown.stdout
    );
    let unconfirmed = cli.run(&["project", "delete", "WEB"], &[]).await;
    assert_ne!(unconfirmed.code, Some(0), "{unconfirmed:?}");
    assert!(unconfirmed.stderr.contains("--yes"), "{unconfirmed:?}");
    ok(&cli.run(&["project", "delete", "WEB", "--yes"], &[]).await);
    let gone = cli.run(&["project", "show", "WEB"], &[]).await;
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(gone.stderr.contains("project WEB"), "{gone:?}");
}
