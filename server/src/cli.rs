//! The command line: `muster serve`, `muster migrate`. Every flag is also an environment variable
//! (`MUSTER_*`), documented in `--help`. This is the only module that reads the environment, through clap.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

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
