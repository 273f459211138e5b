//! The command line: `muster serve`, `muster migrate`, the API client (`login`, `logout`, `issue`,
//! `agent`) and `admin bootstrap`. Server and connection flags are also environment variables (`MUSTER_*`),
//! documented in `--help`. This is the only module that reads the environment, through clap; the client
//! subcommands' own flags (in `client::*`) have no environment variables.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::client::{self, Remote, Secret};
use crate::config::Config;
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
    /// Issues: create, list, show, comment, status, assign, edit.
    Issue(IssueArgs),
    /// Agent profiles: list, show, create, edit.
    Agent(AgentArgs),
    /// Members of the workspace: list, add, role, remove.
    Member(MemberArgs),
    /// Your API tokens: list, create, revoke.
    Token(TokenArgs),
    /// Agent runtimes on this machine: detect.
    Runtime {
        #[command(flatten)]
        paths: RuntimePaths,
        #[command(subcommand)]
        command: client::runtime::RuntimeCommand,
    },
    /// Administration straight on the database (works with or without a running server).
    Admin(AdminArgs),
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
        }
    }
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

/// `muster member …`.
#[derive(Debug, Args)]
pub struct MemberArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::team::MemberCommand,
}

/// `muster token …`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: client::team::TokenCommand,
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
    /// The owner's password: at least 8 characters for a new account, else the account's password.
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
    #[arg(long, env = "MUSTER_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Most database connections to hold open.
    #[arg(long, env = "MUSTER_DB_MAX_CONNECTIONS", default_value_t = 10)]
    pub db_max_connections: u32,
}

/// Where the agent CLIs are, when not on `PATH` (or to pin one build).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Agent CLIs")]
pub struct RuntimePaths {
    /// Path of the Claude Code binary [default: `claude` on PATH].
    #[arg(long, env = "MUSTER_CLAUDE_PATH", global = true)]
    pub claude_path: Option<PathBuf>,
    /// Path of the Codex binary [default: `codex` on PATH].
    #[arg(long, env = "MUSTER_CODEX_PATH", global = true)]
    pub codex_path: Option<PathBuf>,
    /// Path of the OpenCode binary [default: `opencode` on PATH].
    #[arg(long, env = "MUSTER_OPENCODE_PATH", global = true)]
    pub opencode_path: Option<PathBuf>,
    /// Path of a llama.cpp / Ollama / llamafile binary [default: the first found on PATH].
    #[arg(long, env = "MUSTER_LLAMA_PATH", global = true)]
    pub llama_path: Option<PathBuf>,
}

impl RuntimePaths {
    /// The overrides that are set, by runtime kind.
    pub fn overrides(&self) -> Vec<(muster_agents::RuntimeKind, PathBuf)> {
        use muster_agents::RuntimeKind as K;
        [
            (K::Claude, &self.claude_path),
            (K::Codex, &self.codex_path),
            (K::Opencode, &self.opencode_path),
            (K::Llama, &self.llama_path),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.clone().map(|p| (k, p)))
        .collect()
    }
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
    /// Do not run agents in this process (a board-only replica; runs wait for a runner elsewhere).
    #[arg(long, env = "MUSTER_NO_RUNNER")]
    pub no_runner: bool,
    #[command(flatten)]
    pub runtime_paths: RuntimePaths,
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
        let url = match &self.database_url {
            Some(raw) => DatabaseUrl::parse(raw)?,
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

impl ServeArgs {
    /// The server configuration these flags describe.
    pub fn config(&self) -> anyhow::Result<Config> {
        let (data_dir, database_url, pool) = self.db.resolve()?;
        Ok(Config {
            addr: self.addr,
            data_dir,
            database_url,
            pool,
            shutdown_timeout: Duration::from_secs(self.shutdown_timeout),
            public_url: self.public_url.clone(),
            runtime_paths: self.runtime_paths.overrides(),
            embedded_runner: !self.no_runner,
        })
    }
}

/// Runs the parsed command to completion.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => crate::app::serve(args.config()?).await,
        Command::Migrate(args) => {
            let (data_dir, url, pool) = args.resolve()?;
            crate::app::prepare_data_dir(&data_dir)?;
            let store = store::connect(&url, pool).await?;
            store.close().await;
            tracing::info!(database = %url.redacted(), "migrations applied");
            Ok(())
        }
        Command::Login(args) => client::login(&args.remote()).await,
        Command::Logout(args) => client::logout(&args.remote()),
        Command::Issue(args) => client::issue::run(&args.remote.remote(), args.command).await,
        Command::Agent(args) => client::agent::run(&args.remote.remote(), args.command).await,
        Command::Member(args) => client::team::members(&args.remote.remote(), args.command).await,
        Command::Token(args) => client::team::tokens(&args.remote.remote(), args.command).await,
        Command::Runtime { paths, command } => {
            client::runtime::run(command, paths.overrides()).await
        }
        Command::Admin(AdminArgs {
            command: AdminCommand::Bootstrap(args),
        }) => {
            let (data_dir, url, pool) = args.db.resolve()?;
            crate::app::prepare_data_dir(&data_dir)?;
            client::admin::bootstrap(&url, pool, &args.input()).await
        }
    }
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
