//! The real agent CLIs (the pinned npm builds of `claude`, `codex` and `opencode`) driven exactly as
//! `muster_agents` launches them, against the scripted model server, offline.
//!
//! Policy: a CLI is looked up in `MUSTER_AGENT_CLIS_DIR`, then in
//! `$HOME/.cache/muster-agent-clis/node_modules/.bin`, then on `PATH`. When it is missing, its test
//! prints a loud `!!! SKIPPING` message and passes, unless `MUSTER_REQUIRE_AGENT_CLIS=1`, when that
//! is a failure (`.ci/run` installs them and sets both variables).
//!
//! Each run gets its own `HOME` and working directory, a deadline, and its process group stopped
//! when anything goes wrong.
//!
//! The second half drives the same CLIs through Muster's run engine (an agent profile, an issue
//! assigned through the API, the embedded runner): the agent's key secret reaches the model server,
//! a Codex agent without a model is refused, and a budget stops a run after the turn that crossed it.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use muster_agents::process::{self, CappedLines};
use muster_agents::{
    AgentEvent, DetectionStatus, ErrorClass, PermissionMode, RunSpec, RuntimeKind, TokenUsage,
    adapter_for, detect,
};
use muster_tests::model_server::{
    ANTHROPIC_USAGE, ModelServer, OPENAI_USAGE, PLAIN_TEXT, RecordedRequest, TOOL_SAID,
};
use muster_tests::{Part, env_setting};
use tokio::io::{AsyncReadExt as _, BufReader};

/// How long one CLI run may take, start to exit.
const RUN_DEADLINE: Duration = Duration::from_secs(120);
/// The fake key every run gets; the model server accepts anything.
const FAKE_KEY: &str = "muster-fake-key";
/// The scripted shell command: the arithmetic proves a shell ran it, not an echo of the prompt.
const COMMAND: &str = "echo muster-$((6*7))-marker";
/// What [`COMMAND`] prints.
const COMMAND_OUTPUT: &str = "muster-42-marker";
/// Most stderr kept per run, for failure messages.
const MAX_STDERR: u64 = 256 * 1024;

/// One pinned CLI.
struct Cli {
    kind: RuntimeKind,
    binary: &'static str,
    /// The version `detect` must report (pinned in `.ci/run` and versions.txt).
    version: &'static str,
    model: Option<&'static str>,
    /// The path the CLI's base URL ends with (Claude appends `/v1/messages` itself).
    base_path: &'static str,
    /// The route its model requests go to.
    model_route: &'static str,
    /// Extra run variables for the error scenario.
    error_env: &'static [(&'static str, &'static str)],
    /// The variable the CLI reads its provider key from.
    key_var: &'static str,
}

const CLAUDE: Cli = Cli {
    kind: RuntimeKind::Claude,
    binary: "claude",
    version: "2.1.197",
    model: None,
    base_path: "",
    model_route: "/v1/messages",
    // Claude retries even a 401 ten times with backoff (over two minutes); one attempt is enough.
    error_env: &[("CLAUDE_CODE_MAX_RETRIES", "0")],
    key_var: "ANTHROPIC_API_KEY",
};
const CODEX: Cli = Cli {
    kind: RuntimeKind::Codex,
    binary: "codex",
    version: "0.171.0",
    model: Some("gpt-5.5"),
    base_path: "/v1",
    model_route: "/v1/responses",
    error_env: &[],
    key_var: "OPENAI_API_KEY",
};
const OPENCODE: Cli = Cli {
    kind: RuntimeKind::Opencode,
    binary: "opencode",
    version: "1.18.33",
    model: Some("mock-model"),
    base_path: "/v1",
    model_route: "/v1/chat/completions",
    error_env: &[],
    key_var: "OPENAI_API_KEY",
};

/// The CLI's binary, or `None` after a loud skip message; panics when the CLIs are required.
fn locate(cli: &Cli) -> Option<PathBuf> {
    muster_tests::needs(Part::AgentClis);
    let mut dirs: Vec<PathBuf> = Vec::new();
    dirs.extend(env_setting("MUSTER_AGENT_CLIS_DIR").map(PathBuf::from));
    dirs.extend(
        env_setting("HOME")
            .map(|home| Path::new(&home).join(".cache/muster-agent-clis/node_modules/.bin")),
    );
    dirs.extend(env_setting("PATH").iter().flat_map(|p| {
        std::env::split_paths(p)
            .filter(|d| !d.as_os_str().is_empty())
            .collect::<Vec<_>>()
    }));
    let found = dirs
        .iter()
        .map(|dir| dir.join(cli.binary))
        .find(|path| path.is_file());
    if found.is_none() {
        muster_tests::skip(
            Part::AgentClis,
            &format!("the real-{} tests", cli.binary),
            &format!(
                "`{}` was not found in MUSTER_AGENT_CLIS_DIR, ~/.cache/muster-agent-clis/node_modules/.bin or PATH",
                cli.binary
            ),
            "Install it with `.ci/run` (step \"Agent CLIs\")",
        );
    }
    found
}

/// Whether this test process (and so the CLI it starts) runs as root.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

/// What one run produced.
struct Outcome {
    events: Vec<AgentEvent>,
    status: ExitStatus,
    stderr: String,
    /// The requests the model server got during this run.
    requests: Vec<RecordedRequest>,
}

impl Outcome {
    fn report(&self) -> String {
        let mut text = format!("exit: {}\nrequests:\n", self.status);
        for r in &self.requests {
            let tools = r.body["tools"].as_array().map_or(0, Vec::len);
            text.push_str(&format!(
                "  {} {} -> {} ({tools} tools)\n",
                r.method, r.path, r.status
            ));
        }
        text.push_str("events:\n");
        for event in &self.events {
            let shown = serde_json::to_string(event).unwrap();
            let short: String = shown.chars().take(400).collect();
            text.push_str(&format!("  {short}\n"));
        }
        let tail: String = self.stderr.chars().rev().take(2000).collect();
        let tail: String = tail.chars().rev().collect();
        text.push_str(&format!("stderr (tail):\n{tail}\n"));
        text
    }

    /// The agent's model requests: those that offer tools (OpenCode's title request offers none).
    fn model_requests(&self, cli: &Cli) -> Vec<&RecordedRequest> {
        self.requests
            .iter()
            .filter(|r| r.method == "POST" && r.route() == cli.model_route)
            .filter(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }

    fn usage(&self) -> TokenUsage {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Usage(u) => Some(*u),
                _ => None,
            })
            .sum()
    }

    fn finished(&self) -> Vec<(bool, Option<String>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Finished { ok, summary } => Some((*ok, summary.clone())),
                _ => None,
            })
            .collect()
    }

    fn texts(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn session_id(&self) -> Option<&str> {
        self.events.iter().find_map(|e| match e {
            AgentEvent::Started { session_id, .. } => Some(session_id.as_str()),
            _ => None,
        })
    }
}

/// Launches `prompt` with the adapter's own launch spec, reads and parses stdout until EOF, and
/// reaps the CLI, all within [`RUN_DEADLINE`]; on timeout the process group is stopped and the
/// test fails.
async fn run(
    cli: &Cli,
    binary: &Path,
    server: &ModelServer,
    prompt: &str,
    env: &[(&str, &str)],
) -> Outcome {
    run_in(cli, binary, server, prompt, env, None).await
}

/// [`run`], in `workdir` when given, and then through `muster sandbox-exec` with the policy the run
/// engine would give it (Landlock, no capabilities, the seccomp filter), TCP only to the model server.
async fn run_in(
    cli: &Cli,
    binary: &Path,
    server: &ModelServer,
    prompt: &str,
    env: &[(&str, &str)],
    sandboxed_in: Option<&Path>,
) -> Outcome {
    let mut env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    if cli.kind == RuntimeKind::Opencode {
        // On a fresh HOME OpenCode fetches plugin metadata from the npm registry; keep it offline
        // (and visible in the request log) by pointing npm at the model server.
        env.push((
            "npm_config_registry".to_owned(),
            format!("{}/npm-registry/", server.base_url()),
        ));
    }
    let home = tempfile::tempdir().unwrap();
    let own_workdir = tempfile::tempdir().unwrap();
    let workdir = sandboxed_in.unwrap_or(own_workdir.path());
    let spec = RunSpec {
        binary: binary.to_path_buf(),
        prompt: prompt.to_owned(),
        model: cli.model.map(str::to_owned),
        base_url: Some(format!("{}{}", server.base_url(), cli.base_path)),
        api_key: Some(FAKE_KEY.to_owned()),
        permission_mode: PermissionMode::Bypass,
        workdir: workdir.to_path_buf(),
        home_dir: home.path().to_path_buf(),
        running_as_root: running_as_root(),
        env,
        ..RunSpec::default()
    };
    let adapter = adapter_for(cli.kind);
    let mut launch = adapter.command(&spec).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    if sandboxed_in.is_some() {
        launch = sandbox(launch, server, workdir, home.path(), tmp.path());
    }
    let before = server.requests().len();
    let started = Instant::now();
    let mut child = process::spawn(&launch).await.unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let stderr_task = tokio::spawn(async move {
        let mut bytes = Vec::new();
        let _ = stderr.take(MAX_STDERR).read_to_end(&mut bytes).await;
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let mut events = Vec::new();
    let read_all = async {
        let mut lines = CappedLines::new(BufReader::new(stdout));
        while let Some(line) = lines.next_line().await? {
            events.extend(adapter.parse_line(&line));
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(RUN_DEADLINE, read_all).await {
        Ok(Ok(status)) => status,
        outcome => {
            let _ = process::stop_group(&mut child).await;
            let stderr = stderr_task.await.unwrap_or_default();
            panic!(
                "{} did not finish within {RUN_DEADLINE:?} ({outcome:?}); events so far: {events:#?}\nstderr:\n{stderr}",
                cli.binary
            );
        }
    };
    let stderr = stderr_task.await.unwrap();
    let outcome = Outcome {
        events,
        status,
        stderr,
        requests: server.requests()[before..].to_vec(),
    };
    eprintln!(
        "--- {} {prompt:?} took {:.1} s\n{}",
        cli.binary,
        started.elapsed().as_secs_f32(),
        outcome.report()
    );
    outcome
}

/// `launch` wrapped as the run engine wraps it (see `runner::executor::prepare`).
fn sandbox(
    launch: muster_agents::LaunchSpec,
    server: &ModelServer,
    workdir: &Path,
    home: &Path,
    tmp: &Path,
) -> muster_agents::LaunchSpec {
    let abi = muster::sandbox::detect().expect("this kernel has no Landlock");
    let muster = muster_tests::muster_bin();
    let search_path = process::inherited_path();
    let facts = muster::sandbox::policy::RunFacts {
        workdir,
        home,
        tmp,
        read_only: false,
        program: &launch.program,
        custom_command: None,
        protected: &[],
        abi,
        connect_ports: muster::sandbox::policy::url_port(server.base_url())
            .into_iter()
            .collect(),
        search_path: search_path.as_deref(),
        extra_rw: &[],
        extra_read: &[],
        muster: &muster,
        process_view: muster::sandbox::process_view(&muster),
    };
    let policy = muster::sandbox::policy::for_run(&facts).unwrap();
    muster::sandbox::wrap(launch, &policy, &muster, home, tmp).unwrap()
}

/// Inside the sandbox (with its seccomp filter refusing unix sockets), a shell tool call that commits in
/// the worktree: the command runs, the commit is made.
async fn sandboxed_commit_scenario(cli: &Cli, binary: &Path, server: &ModelServer) {
    let work = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q", "-b", "main"]);
    let command = format!(
        "{COMMAND} && echo sandboxed > done.txt && git add done.txt && \
         git -c user.name=agent -c user.email=agent@muster.test commit -q -m sandboxed-commit; \
         /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -n 1"
    );
    let prompt = format!("Run the command for Muster. CMD={command}");
    let out = run_in(cli, binary, server, &prompt, &[], Some(work.path())).await;
    let report = out.report();
    assert!(out.status.success(), "{report}");
    let result = out.events.iter().find_map(|e| match e {
        AgentEvent::ToolResult {
            output, is_error, ..
        } => Some((
            output.contains(COMMAND_OUTPUT),
            output.contains("PermissionError: [Errno 13] Permission denied"),
            *is_error,
        )),
        _ => None,
    });
    assert_eq!(
        result,
        Some((true, true, false)),
        "the command ran, a unix socket was refused\n{report}"
    );
    assert_eq!(
        git(&["log", "--format=%s", "main"]),
        "sandboxed-commit\n",
        "{report}"
    );
    assert_eq!(out.model_requests(cli).len(), 2, "{report}");
}

/// Detection of the real binary reports it found with the pinned version.
async fn assert_detected(cli: &Cli, binary: &Path) {
    let detection = detect(cli.kind, Some(binary)).await;
    assert_eq!(
        (detection.status, detection.version.as_deref()),
        (DetectionStatus::Found, Some(cli.version)),
        "{detection:?}"
    );
}

/// The usage of `turns` model replies, in the normalized convention.
fn scripted_usage(cli: &Cli, turns: u64) -> (u64, u64, u64, u64) {
    let u = match cli.kind {
        RuntimeKind::Claude => ANTHROPIC_USAGE,
        _ => OPENAI_USAGE,
    };
    let uncached = match cli.kind {
        RuntimeKind::Claude => u.input,
        _ => u.input - u.cache_read,
    };
    (
        uncached * turns,
        u.output * turns,
        u.cache_read * turns,
        u.cache_write * turns,
    )
}

fn tokens(usage: TokenUsage) -> (u64, u64, u64, u64) {
    (
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
    )
}

/// A plain prompt: a session, the scripted text, usage of one reply, success.
async fn text_scenario(cli: &Cli, binary: &Path, server: &ModelServer) {
    let out = run(cli, binary, server, "Say hello to Muster.", &[]).await;
    let report = out.report();
    assert!(out.status.success(), "{report}");
    assert!(
        out.session_id().is_some_and(|id| !id.is_empty()),
        "{report}"
    );
    assert_eq!(out.texts(), [PLAIN_TEXT], "{report}");
    let oks: Vec<bool> = out.finished().iter().map(|(ok, _)| *ok).collect();
    assert_eq!(oks, [true], "exactly one successful finish\n{report}");
    let requests = out.model_requests(cli);
    assert_eq!(requests.len(), 1, "{report}");
    let bearer = format!("Bearer {FAKE_KEY}");
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-api-key") == Some(FAKE_KEY)
                || r.header("authorization") == Some(bearer.as_str())),
        "every model request carries the run's key\n{report}"
    );
    let usage = out.usage();
    assert_eq!(tokens(usage), scripted_usage(cli, 1), "{report}");
    match cli.kind {
        // Claude prices the tokens itself (list prices of its default model).
        RuntimeKind::Claude => assert!(usage.cost_usd.is_some_and(|c| c > 0.0), "{report}"),
        // Codex reports no cost, and OpenCode's custom-provider model has no price: the rate table
        // prices both.
        _ => assert_eq!(usage.cost_usd, None, "{report}"),
    }
    assert_no_raw(&out, &report);
}

fn assert_no_raw(out: &Outcome, report: &str) {
    let raw: Vec<&AgentEvent> = out
        .events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Raw { .. }))
        .collect();
    assert!(raw.is_empty(), "unparsed lines {raw:#?}\n{report}");
}

/// A `CMD=` prompt: a shell call and its result with matching ids, a command with exit code 0,
/// the final text quoting the output, usage of two replies, success.
async fn command_scenario(cli: &Cli, binary: &Path, server: &ModelServer) {
    let prompt = format!("Run the command for Muster. CMD={COMMAND}");
    let out = run(cli, binary, server, &prompt, &[]).await;
    let report = out.report();
    assert!(out.status.success(), "{report}");
    assert!(out.session_id().is_some(), "{report}");
    let call = out.events.iter().find_map(|e| match e {
        AgentEvent::ToolCall { id, input, .. } if input.to_string().contains("muster-$((6*7))") => {
            Some(id.clone())
        }
        _ => None,
    });
    let call = call.unwrap_or_else(|| panic!("no shell tool call\n{report}"));
    let result = out.events.iter().find_map(|e| match e {
        AgentEvent::ToolResult {
            id,
            output,
            is_error,
        } if *id == call => Some((output.clone(), *is_error)),
        _ => None,
    });
    let (output, is_error) = result.unwrap_or_else(|| panic!("no result for {call}\n{report}"));
    assert!(!is_error && output.contains(COMMAND_OUTPUT), "{report}");
    if cli.kind != RuntimeKind::Claude {
        let command = out.events.iter().find_map(|e| match e {
            AgentEvent::Command {
                exit_code, output, ..
            } => Some((*exit_code, output.contains(COMMAND_OUTPUT))),
            _ => None,
        });
        assert_eq!(command, Some((Some(0), true)), "{report}");
    }
    let last_text = out.texts().last().copied().unwrap_or_default().to_owned();
    assert!(
        last_text.starts_with(TOOL_SAID) && last_text.contains(COMMAND_OUTPUT),
        "{report}"
    );
    let oks: Vec<bool> = out.finished().iter().map(|(ok, _)| *ok).collect();
    assert_eq!(oks, [true], "exactly one successful finish\n{report}");
    assert_eq!(out.model_requests(cli).len(), 2, "{report}");
    assert_eq!(tokens(out.usage()), scripted_usage(cli, 2), "{report}");
    assert_no_raw(&out, &report);
}

/// `MOCK_ERROR=401`: an auth-classified error and a failed finish, exit code 1.
async fn auth_error_scenario(cli: &Cli, binary: &Path, server: &ModelServer) {
    let out = run(
        cli,
        binary,
        server,
        "Fail please. MOCK_ERROR=401",
        cli.error_env,
    )
    .await;
    let report = out.report();
    assert_eq!(out.status.code(), Some(1), "{report}");
    let last_error = out.events.iter().rev().find_map(|e| match e {
        AgentEvent::Error { class, .. } => Some(*class),
        _ => None,
    });
    assert_eq!(last_error, Some(Some(ErrorClass::Auth)), "{report}");
    let finished = out.finished();
    assert!(
        finished.last().is_some_and(|(ok, _)| !ok),
        "the run must end with Finished {{ ok: false }}\n{report}"
    );
    assert!(
        out.model_requests(cli).iter().all(|r| r.status == 401),
        "{report}"
    );
}

async fn prove(cli: &Cli) {
    let Some(binary) = locate(cli) else {
        return;
    };
    assert_detected(cli, &binary).await;
    let server = ModelServer::start().await.unwrap();
    text_scenario(cli, &binary, &server).await;
    command_scenario(cli, &binary, &server).await;
    auth_error_scenario(cli, &binary, &server).await;
    if muster::sandbox::detect().is_some_and(|abi| abi >= muster::sandbox::REQUIRED_ABI) {
        sandboxed_commit_scenario(cli, &binary, &server).await;
    }
}

#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_runs_against_the_scripted_server() {
    prove(&CLAUDE).await;
}

#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn codex_runs_against_the_scripted_server() {
    prove(&CODEX).await;
}

#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn opencode_runs_against_the_scripted_server() {
    prove(&OPENCODE).await;
}

// ---- Through the run engine -------------------------------------------------------------------------

/// A Muster server with its embedded runner, the CLI configured as its runtime.
struct Engine {
    _db: muster_tests::TestDb,
    store: std::sync::Arc<dyn muster::store::Store>,
    ws: muster::domain::Workspace,
    token: String,
    addr: std::net::SocketAddr,
    shutdown: tokio_util::sync::CancellationToken,
    secrets: std::sync::Arc<muster::secrets::SecretBox>,
    runs_dir: PathBuf,
}

impl Engine {
    async fn start(backend: muster_tests::Backend, cli: &Cli, binary: &Path) -> Option<Engine> {
        Engine::start_with(backend, vec![(cli.kind, binary.to_path_buf())]).await
    }

    /// A Muster server with its embedded runner, each CLI of `runtimes` configured as its runtime.
    async fn start_with(
        backend: muster_tests::Backend,
        runtimes: Vec<(RuntimeKind, PathBuf)>,
    ) -> Option<Engine> {
        Engine::start_configured(backend, runtimes, |_| {}).await
    }

    /// [`Engine::start_with`], with `configure` applied to the server's configuration.
    async fn start_configured(
        backend: muster_tests::Backend,
        runtimes: Vec<(RuntimeKind, PathBuf)>,
        configure: impl FnOnce(&mut muster::config::Config),
    ) -> Option<Engine> {
        use muster::domain::{Email, NewUser, NewWorkspace};
        let db = muster_tests::TestDb::new(backend).await?;
        let store = db.store().await;
        let (owner, ws) = store
            .create_owner_and_workspace(
                &NewUser {
                    email: Email::parse("owner@keys.test").unwrap(),
                    display_name: "owner".to_owned(),
                    password_hash: "unused".to_owned(),
                },
                &NewWorkspace::parse("Keys", "keys", "KEY").unwrap(),
            )
            .await
            .unwrap();
        let token = muster_tests::mint_token(store.as_ref(), ws.id, owner.id, "test").await;
        store.close().await;
        let mut config = db.config();
        config.runtime_paths = runtimes;
        configure(&mut config);
        let runs_dir = config.runs_dir.clone();
        let app = muster_tests::AppBuilder::new(config)
            .embedded_runner()
            .timing(muster::runner::executor::RunTiming {
                idle_tick: Duration::from_millis(200),
                int_grace: Duration::from_secs(2),
                term_grace: Duration::from_secs(2),
                ..muster::runner::executor::RunTiming::default()
            })
            .spawn()
            .await;
        let (addr, store, shutdown) = (app.addr, app.store, app.shutdown);
        let secrets = app.state.secrets.clone();
        Some(Engine {
            _db: db,
            store,
            ws,
            token,
            addr,
            shutdown,
            secrets,
            runs_dir,
        })
    }

    /// An agent of `cli` pointed at the model server, with `env` (secrets sealed) and `change` applied.
    async fn agent(
        &self,
        cli: &Cli,
        server: &ModelServer,
        env: &[(&str, &str, bool)],
        change: impl FnOnce(&mut muster::domain::NewAgent),
    ) -> muster::domain::Agent {
        use muster::domain::{AgentName, EnvVar, NewAgent, PermissionMode};
        let mut new = NewAgent::new(
            AgentName::parse(&format!("{}-agent", cli.binary)).unwrap(),
            cli.kind,
        );
        new.base_url = Some(format!("{}{}", server.base_url(), cli.base_path));
        new.model = cli.model.map(str::to_owned);
        new.permission_mode = PermissionMode::Bypass;
        new.max_retries = 0;
        let mut vars: Vec<(String, String, bool)> = env
            .iter()
            .map(|(k, v, secret)| ((*k).to_owned(), (*v).to_owned(), *secret))
            .collect();
        vars.extend(
            cli.error_env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned(), false)),
        );
        if cli.kind == RuntimeKind::Opencode {
            // Offline, and visible in the request log (see `run_in`).
            vars.push((
                "npm_config_registry".to_owned(),
                format!("{}/npm-registry/", server.base_url()),
                false,
            ));
        }
        new.env = vars
            .into_iter()
            .map(|(key, value, secret)| EnvVar {
                value: if secret {
                    self.secrets.seal(&value).unwrap()
                } else {
                    value
                },
                key,
                secret,
            })
            .collect();
        change(&mut new);
        self.store.create_agent(self.ws.id, &new).await.unwrap()
    }

    /// Assigns `agent` to a new issue titled `title` through the API and waits for the run's end.
    async fn run(&self, agent: &muster::domain::Agent, title: &str) -> muster::domain::Run {
        let issue = self.assign(agent, title).await;
        self.ended(&issue, 0).await
    }

    /// Assigns `agent` to a new issue titled `title` through the API: the issue.
    async fn assign(&self, agent: &muster::domain::Agent, title: &str) -> muster::domain::Issue {
        use muster::domain::{IssueStatus, IssueTitle, NewIssue};
        let mut new = NewIssue::new(IssueTitle::parse(title).unwrap());
        new.status = IssueStatus::Todo;
        let issue = self.store.create_issue(self.ws.id, &new).await.unwrap();
        let resp = reqwest::Client::new()
            .patch(format!("http://{}/api/v1/issues/{}", self.addr, issue.key))
            .bearer_auth(&self.token)
            .json(&serde_json::json!({ "assignee": agent.profile.name.as_str() }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
        issue
    }

    /// The issue's run after `count` earlier runs, once it has ended.
    async fn ended(&self, issue: &muster::domain::Issue, count: usize) -> muster::domain::Run {
        let started = Instant::now();
        loop {
            let mut runs = self.store.list_runs_for_issue(issue.id).await.unwrap();
            runs.sort_by_key(|r| r.created_at);
            if let Some(run) = runs.get(count).filter(|r| r.status.is_terminal()) {
                return run.clone();
            }
            assert!(
                started.elapsed() < RUN_DEADLINE,
                "run {count} did not end: {runs:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn events(&self, run: &muster::domain::Run) -> Vec<muster::domain::RunEvent> {
        self.store.run_events_since(run.id, 0, 5000).await.unwrap()
    }

    /// `method` on `path` with `body`, which must succeed: the JSON answer.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> serde_json::Value {
        let resp = reqwest::Client::new()
            .request(method, format!("http://{}{path}", self.addr))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or_default()
    }

    /// `POST /api/v1/agents` with `body`: the status and the JSON answer.
    async fn create_agent_by_api(&self, body: serde_json::Value) -> (u16, serde_json::Value) {
        let resp = reqwest::Client::new()
            .post(format!("http://{}/api/v1/agents", self.addr))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        (
            resp.status().as_u16(),
            resp.json().await.unwrap_or_default(),
        )
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The model requests `server` got since `before`: those to the CLI's route that offer tools.
fn served(server: &ModelServer, cli: &Cli, before: usize) -> Vec<RecordedRequest> {
    server.requests()[before..]
        .iter()
        .filter(|r| r.method == "POST" && r.route() == cli.model_route)
        .filter(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .cloned()
        .collect()
}

fn run_report(run: &muster::domain::Run, events: &[muster::domain::RunEvent]) -> String {
    let mut text = format!(
        "run: {} {:?} summary {:?} usage {:?}\n",
        run.status, run.failure_reason, run.summary, run.usage
    );
    for e in events {
        let shown: String = e.payload.to_string().chars().take(300).collect();
        text.push_str(&format!("  #{} {} {shown}\n", e.seq, e.kind));
    }
    text
}

/// The agent's key secret (the variable the CLI's vendor uses) reaches the model server on every model
/// request, as the real CLI sends it, and appears nowhere in the run's stored log.
async fn key_scenario(cli: &Cli, binary: &Path, backend: muster_tests::Backend) {
    let Some(engine) = Engine::start(backend, cli, binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    const KEY: &str = "sk-agent-secret-4711";
    let var = cli.key_var;
    let agent = engine
        .agent(cli, &server, &[(var, KEY, true)], |_| {})
        .await;
    let run = engine.run(&agent, "Say hello").await;
    let events = engine.events(&run).await;
    let report = run_report(&run, &events);
    assert_eq!(
        run.status,
        muster::domain::RunStatus::Succeeded,
        "{backend:?}\n{report}"
    );
    let requests = served(&server, cli, 0);
    assert!(!requests.is_empty(), "{backend:?}\n{report}");
    for r in &requests {
        let sent = match cli.kind {
            // Claude Code sends ANTHROPIC_API_KEY as x-api-key (ANTHROPIC_AUTH_TOKEN would be a Bearer).
            RuntimeKind::Claude => r.header("x-api-key").map(str::to_owned),
            _ => r.header("authorization").map(str::to_owned),
        };
        let expected = match cli.kind {
            RuntimeKind::Claude => KEY.to_owned(),
            _ => format!("Bearer {KEY}"),
        };
        assert_eq!(
            sent.as_deref(),
            Some(expected.as_str()),
            "{backend:?}: {} {} headers {:?}\n{report}",
            r.method,
            r.path,
            r.headers
        );
    }
    let stored: String = events.iter().map(|e| e.payload.to_string()).collect();
    assert!(
        !stored.contains(KEY),
        "{backend:?}: the key leaked into the log\n{report}"
    );
    // No file the agent could read holds the key (Codex's config.toml names the variable).
    let run_dir = engine.runs_dir.join(run.id.to_string());
    for entry in walk(&run_dir) {
        let text = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains(KEY),
            "{backend:?}: {} holds the key",
            entry.display()
        );
    }
}

/// Every file under `dir` (none when it is gone).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => todo.push(path),
                Ok(t) if t.is_file() => files.push(path),
                _ => {}
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn codex_sends_the_agents_openai_key_as_a_bearer_token() {
    let Some(binary) = locate(&CODEX) else { return };
    for backend in [
        muster_tests::Backend::Sqlite,
        muster_tests::Backend::Postgres,
    ] {
        key_scenario(&CODEX, &binary, backend).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn opencode_sends_the_agents_openai_key_as_a_bearer_token() {
    let Some(binary) = locate(&OPENCODE) else {
        return;
    };
    for backend in [
        muster_tests::Backend::Sqlite,
        muster_tests::Backend::Postgres,
    ] {
        key_scenario(&OPENCODE, &binary, backend).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_sends_the_agents_anthropic_key_to_a_base_url() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    key_scenario(&CLAUDE, &binary, muster_tests::Backend::Sqlite).await;
}

/// Issue 27: a wrong base URL (nothing listens there) fails each real CLI's run within seconds, saying the
/// address and the setting to change, and is never retried (it used to take Claude Code 9 min 36 s: ten
/// retries of its own, three of Muster's).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn an_unreachable_base_url_fails_at_once_with_the_address() {
    for cli in [&CLAUDE, &CODEX, &OPENCODE] {
        let Some(binary) = locate(cli) else { return };
        let engine = Engine::start(muster_tests::Backend::Sqlite, cli, &binary)
            .await
            .unwrap();
        let server = ModelServer::start().await.unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let agent = engine
            .agent(cli, &server, &[], |a| {
                a.base_url = Some(format!("http://{closed}{}", cli.base_path));
                a.max_retries = 3;
            })
            .await;
        let started = Instant::now();
        let run = engine.run(&agent, "Reach nobody").await;
        let took = started.elapsed();
        assert_eq!(
            (run.status, run.failure_reason),
            (
                muster::domain::RunStatus::Failed,
                Some(muster::domain::FailureReason::Unreachable)
            ),
            "{}: {run:?}",
            cli.binary
        );
        assert!(
            took < Duration::from_secs(30),
            "{}: took {took:?}",
            cli.binary
        );
        // What the inbox and the issue say (Muster's comment carries the inbox item's text).
        let told = loop {
            let comments = engine.store.list_comments(run.issue_id).await.unwrap();
            if let Some(c) = comments.into_iter().find(|c| c.run_id == Some(run.id)) {
                break c;
            }
            assert!(started.elapsed() < RUN_DEADLINE, "no word of the failure");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            told.body.contains(&closed.to_string()) && told.body.contains("Base URL"),
            "{}",
            told.body
        );
        // The agent's page says so before any run.
        let html = reqwest::Client::new()
            .get(format!(
                "http://{}/w/keys/agents/{}",
                engine.addr,
                agent.profile.name.as_str()
            ))
            .bearer_auth(&engine.token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            html.contains(&format!("Nothing accepts connections at {closed} (")),
            "{}: {html}",
            cli.binary
        );
        // Not retried, and the model server heard nothing.
        let runs = engine
            .store
            .list_runs_for_issue(run.issue_id)
            .await
            .unwrap();
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert!(server.requests().is_empty(), "{:?}", server.requests());
        engine.shutdown.cancel();
    }
}

/// Issue 28: each CLI finds the agent's skills where Muster writes them (Claude Code and OpenCode in the
/// worktree's `.claude/skills` and `.opencode/skills`, Codex in the run's `$CODEX_HOME/skills`): the skill's
/// description reaches the model in the CLI's own request.
#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn each_cli_reads_the_skills_where_muster_writes_them() {
    for cli in [&CLAUDE, &CODEX, &OPENCODE] {
        let Some(binary) = locate(cli) else { return };
        let engine = Engine::start(muster_tests::Backend::Sqlite, cli, &binary)
            .await
            .unwrap();
        let server = ModelServer::start().await.unwrap();
        let key = cli.key_var;
        let agent = engine
            .agent(cli, &server, &[(key, FAKE_KEY, true)], |_| {})
            .await;
        let marker = "zebra-crossing-4242";
        let body = format!(
            "---\nname: crossings\ndescription: Use when the task mentions {marker}; it says how to cross.\n---\n\nLook both ways.\n"
        );
        let skill = engine
            .store
            .create_skill(
                engine.ws.id,
                &muster::domain::NewSkill {
                    slug: muster::domain::Slug::parse("crossings").unwrap(),
                    name: "crossings".to_owned(),
                    description: format!(
                        "Use when the task mentions {marker}; it says how to cross."
                    ),
                    content_hash: muster::skills::parse::content_hash(&body, &[]),
                    body,
                    files: Vec::new(),
                    source: muster::domain::SkillSource::Written,
                },
            )
            .await
            .unwrap();
        engine
            .store
            .attach_skill(agent.id, skill.id, true)
            .await
            .unwrap();
        let run = engine.run(&agent, "Say hello").await;
        assert_eq!(
            run.status,
            muster::domain::RunStatus::Succeeded,
            "{}: {run:?}",
            cli.binary
        );
        let told: Vec<String> = server
            .requests()
            .iter()
            .filter(|r| r.body.to_string().contains(marker))
            .map(|r| r.path.clone())
            .collect();
        eprintln!("{}: the skill reached {told:?}", cli.binary);
        assert!(
            !told.is_empty(),
            "{}: no request mentions the skill; paths: {:?}",
            cli.binary,
            server
                .requests()
                .iter()
                .map(|r| r.path.clone())
                .collect::<Vec<_>>()
        );
        engine.shutdown.cancel();
    }
}

/// Issue 27: a model server that goes away while the agent works is noticed at the CLI's first retry (the
/// runner checks it again) or, for a CLI that retries silently (OpenCode), after a few quiet checks, not
/// after the CLI's minutes of retries; the run fails as unreachable, naming the address, not retried.
#[tokio::test]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn a_model_server_gone_mid_run_fails_the_run_at_once_with_the_address() {
    for cli in [&CLAUDE, &CODEX, &OPENCODE] {
        let Some(binary) = locate(cli) else { return };
        let engine = Engine::start(muster_tests::Backend::Sqlite, cli, &binary)
            .await
            .unwrap();
        let server = ModelServer::start().await.unwrap();
        let address = server.base_url().trim_start_matches("http://").to_owned();
        let key = cli.key_var;
        let agent = engine
            .agent(cli, &server, &[(key, FAKE_KEY, true)], |a| {
                a.max_retries = 3;
            })
            .await;
        let issue = engine
            .assign(&agent, "Work while the server goes CMD=sleep 3 #")
            .await;
        // The model server has handed out the tool call (a request that offers tools gets it, the prompt
        // scripting one): it goes away while the agent runs the tool, before the CLI asks it again.
        let started = Instant::now();
        loop {
            let handed_out = server.requests().iter().any(|r| {
                r.body
                    .get("tools")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|t| !t.is_empty())
            });
            if handed_out {
                break;
            }
            assert!(
                started.elapsed() < RUN_DEADLINE,
                "{}: no request for a tool call",
                cli.binary
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.stop();
        let stopped = Instant::now();
        let ended = engine.ended(&issue, 0).await;
        let took = stopped.elapsed();
        assert_eq!(
            (ended.status, ended.failure_reason),
            (
                muster::domain::RunStatus::Failed,
                Some(muster::domain::FailureReason::Unreachable)
            ),
            "{}: {ended:?}\n{:#?}",
            cli.binary,
            engine.events(&ended).await
        );
        assert!(
            took < Duration::from_secs(30),
            "{}: took {took:?}\n{:#?}",
            cli.binary,
            engine.events(&ended).await
        );
        assert!(
            ended
                .summary
                .as_deref()
                .is_some_and(|s| s.contains(&address) && s.contains("any more")),
            "{}: {:?}",
            cli.binary,
            ended.summary
        );
        // Not retried.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let runs = engine.store.list_runs_for_issue(issue.id).await.unwrap();
        assert_eq!(runs.len(), 1, "{}: {runs:?}", cli.binary);
        eprintln!(
            "{}: failed {took:?} after the model server stopped",
            cli.binary
        );
        engine.shutdown.cancel();
    }
}

/// Issue 27: under the default permission mode, Claude Code refuses a shell command it cannot vet (it asks
/// for an approval nobody can give headless); a run whose every tool call was refused did nothing, so it
/// is "needs permission", naming the refused command and the mode, not Succeeded and not in review.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn a_run_whose_every_tool_call_was_refused_needs_permission() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    let engine = Engine::start(muster_tests::Backend::Sqlite, &CLAUDE, &binary)
        .await
        .unwrap();
    let server = ModelServer::start().await.unwrap();
    let agent = engine
        .agent(
            &CLAUDE,
            &server,
            &[("ANTHROPIC_API_KEY", "sk-test", true)],
            |a| {
                a.permission_mode = muster::domain::PermissionMode::WorkspaceWrite;
            },
        )
        .await;
    let issue = {
        use muster::domain::{IssueStatus, IssueTitle, NewIssue};
        let mut new = NewIssue::new(IssueTitle::parse("Stamp it").unwrap())
            .with_body("CMD=echo $(date) > stamp.txt")
            .unwrap();
        new.status = IssueStatus::Backlog;
        engine.store.create_issue(engine.ws.id, &new).await.unwrap()
    };
    engine
        .call(
            reqwest::Method::PATCH,
            &format!("/api/v1/issues/{}", issue.key),
            serde_json::json!({"assignee": agent.profile.name.as_str(), "status": "todo"}),
        )
        .await;
    let started = Instant::now();
    let run = loop {
        let runs = engine.store.list_runs_for_issue(issue.id).await.unwrap();
        if let Some(run) = runs.into_iter().find(|r| r.status.is_terminal()) {
            break run;
        }
        assert!(started.elapsed() < RUN_DEADLINE, "the run did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let events = engine.events(&run).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        (run.status, run.failure_reason),
        (
            muster::domain::RunStatus::Failed,
            Some(muster::domain::FailureReason::NeedsPermission)
        ),
        "{run:?}\n{kinds:?}"
    );
    let detail = run.failure_detail.clone().unwrap_or_default();
    assert!(
        detail.starts_with("Bash `echo $(date) > stamp.txt`")
            && detail.ends_with("workspace_write"),
        "{detail}"
    );
    assert!(kinds.contains(&"refused"), "{kinds:?}");
    let now = engine.store.get_issue_by_id(issue.id).await.unwrap();
    assert_ne!(
        now.status,
        muster::domain::IssueStatus::InReview,
        "nothing to review"
    );
}

/// A Codex agent with a base URL and no model: refused when saved, with a message on `model`; one saved
/// before that rule fails at run start with the same message, and the model server hears nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run) and PostgreSQL (MUSTER_TEST_PG_URL); run with --include-ignored"]
async fn a_codex_agent_with_a_base_url_needs_a_model() {
    let Some(binary) = locate(&CODEX) else { return };
    for backend in [
        muster_tests::Backend::Sqlite,
        muster_tests::Backend::Postgres,
    ] {
        let Some(engine) = Engine::start(backend, &CODEX, &binary).await else {
            continue;
        };
        let server = ModelServer::start().await.unwrap();
        let url = format!("{}/v1", server.base_url());
        let (status, body) = engine
            .create_agent_by_api(serde_json::json!({
                "name": "no-model", "kind": "codex", "base_url": url, "model": "  ",
                "env": [{"key": "OPENAI_API_KEY", "value": "sk-x", "secret": true}],
            }))
            .await;
        assert_eq!(status, 422, "{backend:?}: {body}");
        let fields: Vec<&String> = body["errors"].as_object().unwrap().keys().collect();
        assert_eq!(fields, ["model"], "{backend:?}: {body}");
        let message = body["errors"]["model"][0].as_str().unwrap();
        assert!(
            message.starts_with("a Codex agent with a base URL needs a model"),
            "{message}"
        );
        // With a model it is accepted; without a base URL the CLI's default is fine.
        let (status, body) = engine
            .create_agent_by_api(serde_json::json!({
                "name": "with-model", "kind": "codex", "base_url": url, "model": "gpt-5.5",
            }))
            .await;
        assert_eq!(status, 201, "{backend:?}: {body}");
        let (status, body) = engine
            .create_agent_by_api(serde_json::json!({"name": "vendor", "kind": "codex"}))
            .await;
        assert_eq!(status, 201, "{backend:?}: {body}");

        // Saved before the rule (straight into the store): the run fails before Codex starts.
        let old = engine
            .agent(&CODEX, &server, &[("OPENAI_API_KEY", "sk-x", true)], |a| {
                a.model = None;
            })
            .await;
        let run = engine.run(&old, "Say hello").await;
        let events = engine.events(&run).await;
        let report = run_report(&run, &events);
        assert_eq!(
            (run.status, run.failure_reason),
            (
                muster::domain::RunStatus::Failed,
                Some(muster::domain::FailureReason::Config)
            ),
            "{backend:?}\n{report}"
        );
        let summary = run.summary.clone().unwrap_or_default();
        assert!(
            summary.starts_with(
                "the agent's model is not set: a Codex agent with a base URL needs a model"
            ),
            "{backend:?}\n{report}"
        );
        assert!(
            server.requests().is_empty(),
            "{backend:?}: the model server heard nothing"
        );
    }
}

/// The scripted model keeps calling the shell (`LOOP_CMD=`); the agent's token budget is crossed on the
/// third model request, so the run is stopped right after it: three requests served, failed over
/// budget, the figures in its summary and log, the usage of the three turns recorded.
///
/// `in_flight` is how many more requests the CLI may have sent before it hears the stop: Codex logs a
/// request's usage (in its session rollout) only after the tools that request asked for have run, so
/// its next request can be on its way when the stop lands; everything served is then recorded.
async fn budget_scenario(cli: &Cli, binary: &Path, per_turn: i64, in_flight: usize) {
    let Some(engine) = Engine::start(muster_tests::Backend::Sqlite, cli, binary).await else {
        return;
    };
    let server = ModelServer::start().await.unwrap();
    // Crossed on the third turn: 2 turns fit, 3 do not.
    let budget = per_turn * 5 / 2;
    let key = cli.key_var;
    let agent = engine
        .agent(cli, &server, &[(key, FAKE_KEY, true)], |a| {
            a.budget.tokens = Some(budget);
        })
        .await;
    // The tool takes a second, as real tools do: the stop lands while it runs, before a fourth request.
    let run = engine
        .run(&agent, "Keep going LOOP_CMD=sleep 1; echo again")
        .await;
    let events = engine.events(&run).await;
    let report = run_report(&run, &events);
    assert_eq!(
        (run.status, run.failure_reason),
        (
            muster::domain::RunStatus::Failed,
            Some(muster::domain::FailureReason::OverBudget)
        ),
        "{report}"
    );
    let count = served(&server, cli, 0).len();
    assert!(
        (3..=3 + in_flight).contains(&count),
        "{count} requests\n{report}"
    );
    let used = per_turn * i64::try_from(count).unwrap();
    // The figure at the stop: past the budget, at most the three turns (Claude reports a request's
    // input when it starts and its output when it ends, so the stop may come mid-turn).
    let summary = run.summary.clone().unwrap_or_default();
    let at_stop: i64 = summary
        .strip_prefix("stopped over budget: this run has used ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{report}"));
    assert!(at_stop > budget && at_stop <= used, "{report}");
    assert_eq!(
        summary,
        format!(
            "stopped over budget: this run has used {at_stop} tokens, more than the agent's budget \
             of {budget} tokens per run; raise the budget on the agent's page to let it go further"
        ),
        "{report}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.kind == "error" && e.payload["message"] == summary.as_str()),
        "{report}"
    );
    // What the run records: every turn the CLI reported. A request in flight at the stop (Codex's
    // fourth) was served by the model server, but the CLI may be gone before it writes that request's
    // usage to its session log; then it is not known, and not made up.
    let u = run.usage;
    let recorded = u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens;
    let reported = per_turn * 3;
    assert!(
        recorded == used || (in_flight > 0 && count > 3 && recorded == reported),
        "recorded {recorded} tokens for {count} requests of {per_turn}\n{report}"
    );
    assert!(recorded >= at_stop, "{report}");
}

fn turn_tokens(cli: &Cli) -> i64 {
    let (input, output, read, write) = scripted_usage(cli, 1);
    i64::try_from(input + output + read + write).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn claude_code_is_stopped_after_the_turn_that_crossed_its_budget() {
    let Some(binary) = locate(&CLAUDE) else {
        return;
    };
    budget_scenario(&CLAUDE, &binary, turn_tokens(&CLAUDE), 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs the agent CLIs (MUSTER_AGENT_CLIS_DIR, installed by .ci/run); run with --include-ignored"]
async fn codex_is_stopped_after_the_turn_that_crossed_its_budget() {
    let Some(binary) = locate(&CODEX) else { return };
    budget_scenario(&CODEX, &binary, turn_tokens(&CODEX), 1).await;
}

mod egress;
mod ensemble;
mod forge;
mod resume;
