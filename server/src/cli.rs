//! The command line: `muster serve`, `muster migrate`, the API client (`login`, `logout`, `issue`,
//! `agent`) and `admin bootstrap`. Server and connection flags are also environment variables (`MUSTER_*`),
//! documented in `--help`. This is the only module that reads the environment: through clap, when it parses
//! the command line, and `child_env`. A command's flags live beside the command (`runner::remote::RunnerArgs`,
//! `host::AgentHostArgs`, `runtimes::RuntimePaths`, `sandbox::exec::SandboxExecArgs`,
//! `client::runtime::LlamaLoopArgs`, the client subcommands' in `client::*`, which have no environment
//! variables); `serve`'s, the database's and the connection's are here.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::client::runtime::LlamaLoopArgs;
use crate::client::{self, Remote, Secret};
use crate::config::Config;
use crate::host::AgentHostArgs;
use crate::runner::remote::RunnerArgs;
use crate::runtimes::RuntimePaths;
use crate::sandbox::exec::SandboxExecArgs;
use crate::store::{self, DatabaseUrl, PoolOptions};
use crate::telemetry::LogFormat;

/// Muster runs a team's AI coding agents: a board of issues, agents that take them, live logs.
#[derive(Debug, Parser)]
#[command(name = "muster", version, about, propagate_version = true)]
pub struct Cli {
    /// Log line format.
    #[arg(
        long,
        env = "MUSTER_LOG_FORMAT",
        value_enum,
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server: board, API, live logs (on the embedded SQLite database unless told otherwise).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate(DbArgs),
    /// Check a server URL and API token with the server, then store them for the commands below.
    Login(RemoteArgs),
    /// Remove the stored API token (it stays valid on the server until revoked on the Tokens page).
    Logout(RemoteArgs),
    /// Issues: create, list, search, show, comment, status, assign, edit.
    Issue(IssueArgs),
    /// Agent profiles: list, show, create, edit.
    Agent(AgentArgs),
    /// Ensembles (teams of agents that take one issue blind): list, show, create, edit, delete.
    Ensemble(EnsembleArgs),
    /// Projects (issues under a name, with their own repository): list, show, create, edit, delete.
    Project(ProjectArgs),
    /// Skills: list, show, import, export, attach, detach.
    Skill(SkillArgs),
    /// Members of the workspace: list, add, role, remove, pending invitations.
    Member(MemberArgs),
    /// Invitations to workspaces addressed to you: list, accept, decline.
    Invitation(InvitationArgs),
    /// Your API tokens: list, create, revoke.
    Token(TokenArgs),
    /// The workspace's settings: show, repo (the git repository runs get worktrees of).
    Workspace(WorkspaceArgs),
    /// Saved views of the issue list: list, save, delete.
    View(ViewArgs),
    /// Agent runs: list, show, logs (--follow), cancel, retry.
    Run(RunArgs),
    /// What runs cost over a period, by agent, model, runtime or issue (--json, --csv).
    Usage(UsageArgs),
    /// Run agents for Muster servers from this machine, over one WebSocket per server.
    Runner(Box<RunnerArgs>),
    /// Runner tokens of the workspace (owners and admins): list, create, revoke.
    RunnerToken(RunnerTokenArgs),
    /// The runners the workspace can use: online or not, their CLIs, their live runs.
    Runners(RemoteArgs),
    /// The workspace's forge connection (owners and admins): connect, list, test, remove.
    Forge(ForgeArgs),
    /// Pull requests of agents' work: open, list, show.
    Pr(PrArgs),
    /// Agent runtimes on this machine: detect.
    Runtime {
        #[command(flatten)]
        paths: RuntimePaths,
        /// Report the agent sandbox mode as `muster serve` with this flag would run it.
        #[arg(long, env = "MUSTER_ALLOW_UNSANDBOXED_AGENTS", global = true)]
        allow_unsandboxed_agents: bool,
        #[command(subcommand)]
        command: client::runtime::RuntimeCommand,
    },
    /// Administration straight on the database (works with or without a running server).
    Admin(AdminArgs),
    /// Internal: the agent loop of a `llama` agent's run against a local model server; the runner starts it
    /// and reads one event per line from its stdout. The user prompt is read from stdin.
    #[command(hide = true)]
    LlamaLoop(LlamaLoopArgs),
    /// Internal: the exec step every agent starts as. Applies the sandbox policy (JSON, computed by the
    /// runner) to this process, drops every capability, then executes PROGRAM. `main` runs it before any
    /// thread exists.
    #[command(hide = true)]
    SandboxExec(SandboxExecArgs),
}

/// How the client commands reach a Muster server. Flags and variables override `muster login`'s file.
#[derive(Debug, Args)]
#[command(next_help_heading = "Connection")]
pub struct RemoteArgs {
    /// Server URL, plain http (e.g. http://127.0.0.1:7777) [default: the one stored by `muster login`].
    #[arg(long, env = "MUSTER_URL", global = true)]
    pub server: Option<String>,
    /// API token (from the Tokens page or `muster admin bootstrap`) [default: the one stored by `muster login`].
    #[arg(long, env = "MUSTER_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<Secret>,
    /// Folder of the client's config.json [default: $XDG_CONFIG_HOME/muster, e.g. ~/.config/muster].
    #[arg(long, env = "MUSTER_CONFIG_DIR", global = true)]
    pub config_dir: Option<PathBuf>,
    /// Print the server's JSON instead of text, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

impl RemoteArgs {
    fn remote(&self) -> Remote {
        Remote {
            server: self.server.clone(),
            token: self.token.clone(),
            config_dir: self.config_dir.clone(),
            json: self.json,
            color: false,
        }
    }
}

/// Whether `NO_COLOR` is set to a non-empty value (whatever the value, as <https://no-color.org> says).
#[allow(clippy::disallowed_methods)] // cli.rs is the one home of environment reads
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// `muster issue …`.
#[derive(Debug, Args)]
pub struct IssueArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::issue::IssueCommand,
}

/// `muster agent …`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::agent::AgentCommand,
}

/// `muster ensemble …`.
#[derive(Debug, Args)]
pub struct EnsembleArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::ensemble::EnsembleCommand,
}

/// `muster project …`.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::project::ProjectCommand,
}

/// `muster member …`.
#[derive(Debug, Args)]
pub struct MemberArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::team::MemberCommand,
}

/// `muster invitation …`.
#[derive(Debug, Args)]
pub struct InvitationArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::team::InvitationCommand,
}

/// `muster run …`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Colour the logs (diffs like `git diff`): auto colours only a terminal, and not when NO_COLOR is set.
    #[arg(long, value_enum, default_value_t, global = true)]
    pub color: client::events::ColorChoice,
    #[command(subcommand)]
    pub command: client::run::RunCommand,
}

/// `muster skill …`.
#[derive(Debug, Args)]
pub struct SkillArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::skill::SkillCommand,
}

/// `muster token …`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::team::TokenCommand,
}

/// `muster runner-token …`.
#[derive(Debug, Args)]
pub struct RunnerTokenArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::runners::RunnerTokenCommand,
}

/// `muster forge …`.
#[derive(Debug, Args)]
pub struct ForgeArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::forge::ForgeCommand,
}

/// `muster pr …`.
#[derive(Debug, Args)]
pub struct PrArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::forge::PrCommand,
}

/// `muster workspace …`.
#[derive(Debug, Args)]
pub struct WorkspaceArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::workspace::WorkspaceCommand,
}

/// `muster view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::view::ViewCommand,
}

/// `muster usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub options: client::usage::UsageOptions,
}

/// `muster admin …`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// Administration commands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Make sure an owner account and workspace exist, then print a new API token alone on the last line.
    /// Creates the user and workspace when the email is new; otherwise checks the password.
    Bootstrap(BootstrapArgs),
}

/// `muster admin bootstrap` options.
#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// The owner's email (an account is created when none has it).
    #[arg(long, env = "MUSTER_BOOTSTRAP_EMAIL")]
    pub email: String,
    /// The owner's password: at least 12 characters for a new account, else the account's password.
    #[arg(long, env = "MUSTER_BOOTSTRAP_PASSWORD", hide_env_values = true)]
    pub password: Secret,
    /// Workspace name: created with a new account (default "Muster"), else chosen among the user's
    /// workspaces by name or slug (default: their first).
    #[arg(long, env = "MUSTER_BOOTSTRAP_WORKSPACE")]
    pub workspace: Option<String>,
    /// Display name of a new account [default: the part of the email before @].
    #[arg(long, env = "MUSTER_BOOTSTRAP_NAME")]
    pub name: Option<String>,
    /// Name of the new token, as the Tokens page lists it.
    #[arg(
        long,
        env = "MUSTER_BOOTSTRAP_TOKEN_NAME",
        default_value = "muster admin bootstrap"
    )]
    pub token_name: String,
    /// Print one JSON object (with the token) instead of lines.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

impl BootstrapArgs {
    fn input(&self) -> client::admin::Bootstrap {
        client::admin::Bootstrap {
            email: self.email.clone(),
            password: self.password.clone(),
            workspace: self.workspace.clone(),
            name: self.name.clone(),
            token_name: self.token_name.clone(),
            json: self.json,
        }
    }
}

/// Where Muster keeps its data.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// Data directory (created if missing) [default: $XDG_DATA_HOME/muster, e.g. ~/.local/share/muster].
    #[arg(long, env = "MUSTER_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Database: sqlite://PATH or postgres://USER@HOST:PORT/DB [default: sqlite://<data-dir>/muster.db].
    /// A URL with a password is refused on the command line: set MUSTER_DATABASE_URL or use
    /// --database-url-file.
    #[arg(long, env = "MUSTER_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// A file holding the database URL (e.g. a Docker or systemd secret), instead of MUSTER_DATABASE_URL.
    #[arg(long, env = "MUSTER_DATABASE_URL_FILE")]
    pub database_url_file: Option<PathBuf>,
    /// Most database connections to hold open.
    #[arg(long, env = "MUSTER_DB_MAX_CONNECTIONS", default_value_t = 10)]
    pub db_max_connections: u32,
}

/// `muster serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. The default is loopback only; put a TLS proxy in front to expose it.
    #[arg(long, env = "MUSTER_ADDR", default_value = "127.0.0.1:7777")]
    pub addr: SocketAddr,
    /// Seconds that in-flight requests get to finish after SIGINT or SIGTERM.
    #[arg(long, env = "MUSTER_SHUTDOWN_TIMEOUT", default_value_t = 10)]
    pub shutdown_timeout: u64,
    /// The URL people reach Muster at, when behind a proxy (e.g. https://muster.example.com); an https URL
    /// makes session cookies Secure.
    #[arg(long, env = "MUSTER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Require this bearer token on GET /metrics (Prometheus `authorization: credentials`). Without one, a
    /// server on a loopback address shows only process-wide aggregates and any other address answers 401.
    /// From the environment only: on the command line it is refused.
    #[arg(long, env = "MUSTER_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// A file holding the /metrics bearer token, instead of MUSTER_METRICS_TOKEN.
    #[arg(long, env = "MUSTER_METRICS_TOKEN_FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// Do not run agents in this process (a board-only replica; runs wait for a runner elsewhere).
    #[arg(long, env = "MUSTER_NO_RUNNER")]
    pub no_runner: bool,
    /// The most events (output lines, tool calls, …) one run may store; a run that reaches it is stopped
    /// and fails with reason event_cap.
    #[arg(long, env = "MUSTER_MAX_EVENTS_PER_RUN", default_value_t = crate::config::DEFAULT_MAX_EVENTS_PER_RUN,
        value_parser = clap::value_parser!(i64).range(1..))]
    pub max_events_per_run: i64,
    /// Sign-in attempts allowed per minute from one client address (then 429 with Retry-After).
    #[arg(long, env = "MUSTER_LOGIN_PER_IP_PER_MINUTE", default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub login_per_ip_per_minute: u32,
    /// Failed sign-ins allowed per 15 minutes on one account from one client address (then 429 with
    /// Retry-After); from all addresses together, ten times as many an hour.
    #[arg(long, env = "MUSTER_LOGIN_PER_ACCOUNT_PER_15_MINUTES", default_value_t = 5,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub login_per_account_per_15_minutes: u32,
    /// Most live connections (board and run WebSockets, run event streams) one person may hold open.
    #[arg(long, env = "MUSTER_LIVE_CONNECTIONS_PER_USER", default_value_t = 32,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub live_connections_per_user: u32,
    #[command(flatten)]
    pub agents: AgentHostArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

impl DbArgs {
    fn resolve(&self) -> anyhow::Result<(PathBuf, DatabaseUrl, PoolOptions)> {
        let data_dir = match &self.data_dir {
            Some(dir) => dir.clone(),
            None => dirs::data_dir()
                .map(|d| d.join("muster"))
                .context("cannot find a data directory for this user; pass --data-dir or set MUSTER_DATA_DIR")?,
        };
        let from_file = secret_file(self.database_url_file.as_deref(), "the database URL")?;
        let raw = match (&self.database_url, from_file) {
            (Some(_), Some(_)) => anyhow::bail!(
                "the database URL is given twice: set MUSTER_DATABASE_URL or --database-url-file, not both"
            ),
            (Some(raw), None) => Some(raw.clone()),
            (None, from_file) => from_file,
        };
        let url = match raw {
            Some(raw) => DatabaseUrl::parse(&raw)?,
            None => DatabaseUrl::Sqlite(data_dir.join("muster.db")),
        };
        anyhow::ensure!(
            self.db_max_connections > 0,
            "--db-max-connections must be at least 1"
        );
        let pool = PoolOptions {
            max_connections: self.db_max_connections,
            ..PoolOptions::default()
        };
        Ok((data_dir, url, pool))
    }
}

/// The secret held by the file at `path` (its contents without surrounding whitespace), when one is
/// named; `what` names the secret in the error.
pub fn secret_file(path: Option<&std::path::Path>, what: &str) -> anyhow::Result<Option<String>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {what} from {}", path.display()))?;
    let text = text.trim();
    anyhow::ensure!(
        !text.is_empty(),
        "{} is empty; it must hold {what}",
        path.display()
    );
    Ok(Some(text.to_owned()))
}

/// Flags that would put a secret on the command line, where every process of the machine (agents
/// included, before they had a process view of their own) reads it in `/proc/<pid>/cmdline`: the
/// subcommand, the argument id, whether only a value with a password counts, and what to use instead.
const SECRET_FLAGS: [(&str, &str, bool, &str); 4] = [
    (
        "runner",
        "token",
        false,
        "--token would put the runner token on the command line, where every process on the machine can read it; set MUSTER_RUNNER_TOKEN or pass --token-file FILE",
    ),
    (
        "serve",
        "metrics_token",
        false,
        "--metrics-token would put the token on the command line, where every process on the machine can read it; set MUSTER_METRICS_TOKEN or pass --metrics-token-file FILE",
    ),
    (
        "",
        "database_url",
        true,
        "--database-url with a password would put the password on the command line, where every process on the machine can read it; set MUSTER_DATABASE_URL or pass --database-url-file FILE",
    ),
    (
        "llama-loop",
        "base_url",
        true,
        "--base-url with credentials would put them on the command line, where every process on the machine can read them; set MUSTER_LLAMA_BASE_URL",
    ),
];

/// Refuses a secret given as a command-line flag ([`SECRET_FLAGS`]); the same value from the
/// environment or a file is fine.
pub fn refuse_secrets_on_argv(matches: &clap::ArgMatches) -> Result<(), String> {
    let mut level = matches;
    let mut name = "";
    loop {
        for (command, id, only_with_password, message) in SECRET_FLAGS {
            if !(command.is_empty() || command == name) {
                continue;
            }
            if !level.ids().any(|i| i.as_str() == id)
                || level.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
            {
                continue;
            }
            let values: Vec<String> = level
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            if !only_with_password || values.iter().any(|v| url_has_password(v)) {
                return Err(message.to_owned());
            }
        }
        match level.subcommand() {
            Some((sub, next)) => {
                name = sub;
                level = next;
            }
            None => return Ok(()),
        }
    }
}

/// Whether a URL carries a password: `scheme://user:password@host…` or a `password=` query parameter
/// (PostgreSQL's URLs accept one).
fn url_has_password(url: &str) -> bool {
    let Some((_, rest)) = url.trim().split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let in_userinfo = authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.split_once(':').is_some_and(|(_, p)| !p.is_empty()));
    let in_query = rest.split_once('?').is_some_and(|(_, query)| {
        query
            .split('&')
            .any(|pair| pair.to_ascii_lowercase().starts_with("password="))
    });
    in_userinfo || in_query
}

impl ServeArgs {
    /// The server configuration these flags describe.
    pub fn config(&self) -> anyhow::Result<Config> {
        let (data_dir, database_url, pool) = self.db.resolve()?;
        let metrics_token = match (
            self.metrics_token.clone().filter(|t| !t.trim().is_empty()),
            secret_file(self.metrics_token_file.as_deref(), "the metrics token")?,
        ) {
            (Some(_), Some(_)) => anyhow::bail!(
                "the metrics token is given twice: set MUSTER_METRICS_TOKEN or --metrics-token-file, not both"
            ),
            (token, from_file) => token.or(from_file),
        };
        let runs_dir = self.agents.runs_dir()?;
        anyhow::ensure!(
            !runs_dir.starts_with(&data_dir) && !data_dir.starts_with(&runs_dir),
            "--runs-dir {} must be outside the data directory {} (agents may use the runs folder)",
            runs_dir.display(),
            data_dir.display()
        );
        Ok(Config {
            addr: self.addr,
            runs_dir,
            allow_unsandboxed_agents: self.agents.allow_unsandboxed_agents,
            agent_ports: self.agents.agent_ports.clone(),
            egress_resolve: Vec::new(),
            agent_rw_paths: self.agents.agent_rw_paths.clone(),
            data_dir,
            database_url,
            pool,
            shutdown_timeout: Duration::from_secs(self.shutdown_timeout),
            public_url: self.public_url.clone(),
            metrics_token,
            runtime_paths: self.agents.runtime_paths.overrides(),
            embedded_runner: !self.no_runner,
            self_exe: crate::config::default_self_exe(),
            llama_urls: self.agents.runtime_paths.llama_urls(),
            max_events_per_run: self.max_events_per_run,
            login_limits: crate::config::LoginLimits {
                per_ip_per_minute: self.login_per_ip_per_minute,
                per_account_per_15_minutes: self.login_per_account_per_15_minutes,
            },
            live_connections_per_user: usize::try_from(self.live_connections_per_user)
                .unwrap_or(usize::MAX),
            push_branches: !self.agents.no_push,
        })
    }
}

/// Runs the parsed command to completion.
/// The whole `muster` program: parse the command line, start logging, run the command. The binary's
/// `main` calls it; so does the benchmark harness, whose executable acts as the server it measures (its
/// `serve` and the agents' `sandbox-exec` step), so that the server is a process of its own.
pub fn main() -> std::process::ExitCode {
    use clap::{CommandFactory as _, FromArgMatches as _};
    use std::process::ExitCode;
    let matches = Cli::command().get_matches();
    if let Err(e) = refuse_secrets_on_argv(&matches) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if let Command::SandboxExec(args) = &cli.command {
        // The agent's exec step: still single-threaded (no runtime, no logging thread), so the sandbox
        // covers the whole process that becomes the agent. Returns only on failure.
        let stage = crate::sandbox::exec::Stage {
            parent: args.parent_pid,
            init: args.init,
            probe: args.probe,
        };
        return match crate::sandbox::exec::run(&args.policy, stage, &args.program, &args.args) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(126)
            }
        };
    }
    crate::telemetry::init(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line naming the problem and the fix; the context chain is joined with ": ".
            let message = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => crate::app::serve(args.config()?).await,
        Command::Migrate(args) => {
            let (data_dir, url, pool) = args.resolve()?;
            crate::host::prepare_data_dir(&data_dir)?;
            let store = store::connect(&url, pool).await?;
            store.close().await;
            tracing::info!(database = %url.redacted(), "migrations applied");
            Ok(())
        }
        Command::Login(args) => client::login(&args.remote()).await,
        Command::Logout(args) => client::logout(&args.remote()),
        Command::Issue(args) => client::issue::run(&args.remote.remote(), args.command).await,
        Command::Agent(args) => client::agent::run(&args.remote.remote(), args.command).await,
        Command::Ensemble(args) => client::ensemble::run(&args.remote.remote(), args.command).await,
        Command::Project(args) => client::project::run(&args.remote.remote(), args.command).await,
        Command::Skill(args) => client::skill::run(&args.remote.remote(), args.command).await,
        Command::Member(args) => client::team::members(&args.remote.remote(), args.command).await,
        Command::Invitation(args) => {
            client::team::invitations(&args.remote.remote(), args.command).await
        }
        Command::Token(args) => client::team::tokens(&args.remote.remote(), args.command).await,
        Command::Workspace(args) => {
            client::workspace::run(&args.remote.remote(), args.command).await
        }
        Command::View(args) => client::view::run(&args.remote.remote(), args.command).await,
        Command::Usage(args) => client::usage::run(&args.remote.remote(), args.options).await,
        Command::Run(args) => {
            let remote = Remote {
                color: args
                    .color
                    .resolve(std::io::stdout().is_terminal(), no_color()),
                ..args.remote.remote()
            };
            client::run::run(&remote, args.command).await
        }
        Command::Runner(args) => crate::runner::remote::run(*args).await,
        Command::RunnerToken(args) => {
            client::runners::tokens(&args.remote.remote(), args.command).await
        }
        Command::Runners(args) => client::runners::list(&args.remote()).await,
        Command::Forge(args) => {
            client::forge::forge(&args.remote.remote(), args.command, &env_value).await
        }
        Command::Pr(args) => client::forge::pr(&args.remote.remote(), args.command).await,
        Command::Runtime {
            paths,
            allow_unsandboxed_agents,
            command,
        } => {
            let sandbox =
                crate::sandbox::decide(crate::sandbox::detect(), allow_unsandboxed_agents);
            client::runtime::run(command, paths.overrides(), paths.llama_urls(), sandbox).await
        }
        Command::LlamaLoop(args) => crate::client::runtime::llama_loop(args, child_env()).await,
        Command::SandboxExec(args) => {
            // `main` runs it before the async runtime exists; here it would be on a runtime thread.
            anyhow::bail!(
                "{} must run before any thread is started; got {:?}",
                crate::sandbox::exec::SUBCOMMAND,
                args.program
            )
        }
        Command::Admin(AdminArgs {
            command: AdminCommand::Bootstrap(args),
        }) => {
            let (data_dir, url, pool) = args.db.resolve()?;
            crate::host::prepare_data_dir(&data_dir)?;
            client::admin::bootstrap(&url, pool, &args.input()).await
        }
    }
}

/// One variable of this process's environment (`muster forge connect --token-env VAR`), when it is
/// set and is text.
#[allow(clippy::disallowed_methods)] // cli.rs is the one home of environment reads
fn env_value(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// This process's environment, for the commands a `llama-loop` run's tools start (the runner already gave
/// the loop an explicit, run-scoped environment).
#[allow(clippy::disallowed_methods)] // cli.rs is the one home of environment reads
fn child_env() -> Vec<(String, String)> {
    std::env::vars().collect()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn client_flags_come_after_the_subcommand_and_the_token_stays_hidden() {
        let cli = Cli::try_parse_from([
            "muster", "issue", "list", "--status", "todo", "--json", "--token", "mst_x",
        ])
        .unwrap();
        assert!(!format!("{cli:?}").contains("mst_x"));
        let Command::Issue(args) = cli.command else {
            panic!("not issue")
        };
        assert!(args.remote.json);
        let bad_env = [
            "muster", "agent", "create", "--name", "a", "--kind", "claude", "--env", "X",
        ];
        assert_eq!(Cli::try_parse_from(bad_env).unwrap_err().exit_code(), 2);
        let boot = [
            "muster",
            "admin",
            "bootstrap",
            "--email",
            "a@b.c",
            "--password",
            "hunter22",
        ];
        assert!(!format!("{:?}", Cli::try_parse_from(boot).unwrap()).contains("hunter22"));
    }

    /// What `main` does with a command line before running it.
    fn secrets_check(args: &[&str]) -> Result<(), String> {
        let matches = Cli::command().try_get_matches_from(args).unwrap();
        refuse_secrets_on_argv(&matches)
    }

    #[test]
    fn secrets_on_the_command_line_are_refused_with_what_to_use_instead() {
        let runner = [
            "muster",
            "runner",
            "--server",
            "http://m:7777",
            "--token",
            "mrt_secret",
        ];
        assert_eq!(
            secrets_check(&runner).unwrap_err(),
            "--token would put the runner token on the command line, where every process on the machine can read it; set MUSTER_RUNNER_TOKEN or pass --token-file FILE"
        );
        let metrics = ["muster", "serve", "--metrics-token", "m3trics"];
        assert!(
            secrets_check(&metrics)
                .unwrap_err()
                .starts_with("--metrics-token would put the token on the command line")
        );
        for url in [
            "postgres://muster:s3cret@db/muster",
            "postgres://muster@db/muster?password=s3cret",
        ] {
            for command in ["serve", "migrate"] {
                let e = secrets_check(&["muster", command, "--database-url", url]).unwrap_err();
                assert!(
                    e.contains("set MUSTER_DATABASE_URL or pass --database-url-file FILE"),
                    "{e}"
                );
            }
        }
        let llama = [
            "muster",
            "llama-loop",
            "--system-file",
            "/x",
            "--base-url",
            "http://u:p@127.0.0.1:8080",
        ];
        assert!(
            secrets_check(&llama)
                .unwrap_err()
                .contains("MUSTER_LLAMA_BASE_URL")
        );
        // What carries no secret is fine on the command line.
        secrets_check(&[
            "muster",
            "migrate",
            "--database-url",
            "postgres://muster@db/muster",
        ])
        .unwrap();
        secrets_check(&[
            "muster",
            "llama-loop",
            "--system-file",
            "/x",
            "--base-url",
            "http://127.0.0.1:8080",
        ])
        .unwrap();
        secrets_check(&[
            "muster",
            "runner",
            "--server",
            "http://m:7777",
            "--token-file",
            "/run/secrets/t",
        ])
        .unwrap();
    }

    #[test]
    fn a_runner_token_comes_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "mrt_from_file\n").unwrap();
        let path = file.display().to_string();
        let parse = |args: &[&str]| {
            let Command::Runner(args) = Cli::try_parse_from(args).unwrap().command else {
                panic!("not runner")
            };
            crate::runner::remote::Settings::from_args(&args)
        };
        let base = [
            "muster",
            "runner",
            "--server",
            "http://m:7777",
            "--state-dir",
            "/tmp/s",
            "--runs-dir",
            "/tmp/r",
        ];
        let mut with_file = base.to_vec();
        with_file.extend(["--token-file", &path]);
        assert_eq!(parse(&with_file).unwrap().token, "mrt_from_file");
        let e = format!("{:#}", parse(&base).unwrap_err());
        assert!(
            e.starts_with("no runner token: set MUSTER_RUNNER_TOKEN or pass --token-file FILE"),
            "{e}"
        );
        let mut missing = base.to_vec();
        missing.extend(["--token-file", "/nonexistent/token"]);
        let e = format!("{:#}", parse(&missing).unwrap_err());
        assert!(
            e.starts_with("cannot read the runner token from /nonexistent/token: "),
            "{e}"
        );
    }

    #[test]
    fn database_url_defaults_to_sqlite_in_the_data_dir() {
        let cli = Cli::try_parse_from(["muster", "serve", "--data-dir", "/tmp/m"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("not serve")
        };
        let config = args.config().unwrap();
        assert_eq!(
            config.database_url,
            DatabaseUrl::Sqlite(PathBuf::from("/tmp/m/muster.db"))
        );
        assert_eq!(config.addr, "127.0.0.1:7777".parse().unwrap());
    }

    #[test]
    fn unknown_schemes_name_both_accepted_ones() {
        let e = DatabaseUrl::parse("mysql://root@localhost/muster")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "unsupported database URL scheme \"mysql\": use sqlite://PATH (embedded, the default) or postgres://USER@HOST/DB"
        );
        assert!(matches!(
            DatabaseUrl::parse("postgresql://a@b/c").unwrap(),
            DatabaseUrl::Postgres(_)
        ));
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/m.db?mode=rwc").unwrap(),
            DatabaseUrl::Sqlite(PathBuf::from("/var/m.db"))
        );
    }

    #[test]
    fn passwords_never_reach_logs() {
        let url = DatabaseUrl::parse("postgres://muster:s3cret@db:5432/muster").unwrap();
        assert_eq!(url.redacted(), "postgres://muster:***@db:5432/muster");
        assert!(!format!("{url:?}").contains("s3cret"));
    }
}
