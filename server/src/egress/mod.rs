//! The egress proxy: the only way a sandboxed agent reaches a host that is not on its machine's
//! loopback. The runner opens one listener per run on `127.0.0.1:<ephemeral>` (outside the sandbox),
//! hands the agent `HTTPS_PROXY`/`HTTP_PROXY` pointing at it, and lets the agent's Landlock ruleset
//! connect to that port (plus Muster's API and loopback model ports) and nothing else. A run's listener
//! knows only its run's [`AllowList`]; another run's agent cannot connect to it (its ruleset does not
//! list the port).
//!
//! The proxy speaks HTTP/1.1 `CONNECT host:port` (HTTPS, any TLS inside) and plain absolute-URI requests
//! (`GET http://host/…`). It resolves names itself (the sandbox refuses UDP, so an agent has no DNS) and
//! refuses a host not on the list with `403` and a body saying what to change. Every connection becomes
//! a [`Record`] (a run event of kind [`EVENT_KIND`]): host, port, allowed or refused and why, bytes up
//! and down.
//!
//! Bounds: a request head of at most [`MAX_HEAD`] bytes read within [`HEAD_TIMEOUT`], name resolution
//! and connect within [`CONNECT_TIMEOUT`], at most [`MAX_CONNECTIONS`] open connections per run, and
//! copies through fixed buffers; the listener and every connection end with the run.

mod proxy;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::domain::HostPattern;
pub use crate::domain::egress::Record;

/// How the body of the proxy's `403` starts (a CLI that quotes it names the refusal).
pub const REFUSAL_MARK: &str = "Muster egress proxy refused:";
/// The run event kind of a [`Record`].
pub const EVENT_KIND: &str = crate::domain::EGRESS_EVENT;
/// The most bytes of a request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long resolving and connecting to the upstream may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections of one run open at once; more wait for one to end.
pub const MAX_CONNECTIONS: usize = 64;
/// The most records waiting for the run's log; past it records are dropped (and counted).
const RECORD_BUFFER: usize = 256;

/// Names the proxy resolves to fixed addresses instead of asking DNS (tests: `allowed.test` →
/// `127.0.0.1:<port>`). The port replaces the requested one.
pub type ResolveOverrides = Arc<HashMap<String, SocketAddr>>;

/// Where a run's connections may go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowList {
    /// The agent's patterns and the workspace's default list (empty when the agent has no network).
    pub hosts: Vec<HostPattern>,
    /// Endpoints always allowed, each exactly `host:port`: the model endpoint (the base URL field or a
    /// CLI's base-URL variable) and Muster's API.
    pub endpoints: Vec<(String, u16)>,
    /// The agent's "no network" switch: only `endpoints` are allowed.
    pub no_network: bool,
}

impl AllowList {
    /// Why a connection to `host:port` is refused, or `None` when it is allowed.
    pub fn refusal(&self, host: &str, port: u16) -> Option<String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if self
            .endpoints
            .iter()
            .any(|(h, p)| *p == port && h.eq_ignore_ascii_case(host))
        {
            return None;
        }
        if self.no_network {
            return Some(format!(
                "{host}:{port} is refused: the agent has no network (only its model endpoint); an owner \
                 or admin can turn its \"no network\" switch off and allow the host"
            ));
        }
        if self.hosts.iter().any(|p| p.allows(host, port)) {
            return None;
        }
        Some(format!(
            "{host}:{port} is not on the agent's egress allow-list; an owner or admin can add \"{}\" to \
             the agent's allowed hosts (or the workspace's default list)",
            if [443, 80].contains(&port) {
                host.to_owned()
            } else {
                format!("{host}:{port}")
            }
        ))
    }

    /// One line for the run page: `allowed github.com, *.npmjs.org; model api.example.com:443`.
    pub fn describe(&self) -> String {
        let hosts: Vec<&str> = self.hosts.iter().map(HostPattern::as_str).collect();
        let endpoints: Vec<String> = self
            .endpoints
            .iter()
            .map(|(h, p)| format!("{h}:{p}"))
            .collect();
        let allowed = if self.no_network {
            "no network".to_owned()
        } else if hosts.is_empty() {
            "no other hosts".to_owned()
        } else {
            format!("allowed {}", hosts.join(", "))
        };
        if endpoints.is_empty() {
            allowed
        } else {
            format!("{allowed}; always {}", endpoints.join(", "))
        }
    }
}

/// A run's proxy: its listener's port and the stream of its records. Dropping it closes the listener
/// and every open connection of the run.
pub struct RunProxy {
    port: u16,
    records: Option<mpsc::Receiver<Record>>,
    stop: CancellationToken,
}

impl RunProxy {
    /// Opens the run's listener on `127.0.0.1:0`.
    pub async fn open(allow: AllowList, overrides: ResolveOverrides) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let (tx, rx) = mpsc::channel(RECORD_BUFFER);
        let stop = CancellationToken::new();
        let ctx = Arc::new(proxy::Ctx {
            allow,
            overrides,
            records: tx,
            stop: stop.clone(),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        });
        tokio::spawn(proxy::serve(listener, ctx));
        Ok(Self {
            port,
            records: Some(rx),
            stop,
        })
    }

    /// The listener's port (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The proxy URL the agent's `HTTPS_PROXY` and `HTTP_PROXY` name.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The records, once: they stop coming after [`RunProxy::close`] (or the drop).
    pub fn take_records(&mut self) -> Option<mpsc::Receiver<Record>> {
        self.records.take()
    }

    /// Closes the listener and ends every open connection (each still reports its record).
    pub fn close(&self) {
        self.stop.cancel();
    }
}

impl Drop for RunProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The variables that send an agent's traffic through the proxy at `url`: the upper- and lower-case
/// spellings of `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` (Claude Code, Codex, OpenCode, git, npm, pip,
/// cargo and curl read one of them), and `NO_PROXY` for loopback, which the agent reaches directly
/// (Muster's API, a local model server).
pub fn agent_env(url: &str) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for key in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        env.push((key.to_owned(), url.to_owned()));
        env.push((key.to_ascii_lowercase(), url.to_owned()));
    }
    for key in ["NO_PROXY", "no_proxy"] {
        env.push((key.to_owned(), "localhost,127.0.0.1,::1".to_owned()));
    }
    env
}

pub use crate::domain::egress::PROXY_VARS;

/// `host` and port of a `http(s)://` URL, without credentials; `None` for anything else.
pub fn url_endpoint(url: &str) -> Option<(String, u16)> {
    let port = crate::sandbox::policy::url_port(url)?;
    let (_, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split_once(']')?.0
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    let host = host.trim_end_matches('.');
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// Whether an unclassified error message is about connecting (so a refused connection may explain it):
/// Bun's `FailedToOpenSocket`, "unable to connect", a refused tunnel…
pub fn about_connecting(message: &str) -> bool {
    let lower = message.to_lowercase();
    [
        "connect",
        "socket",
        "proxy",
        "tunnel",
        "refused",
        "403",
        "unreachable",
        "eacces",
        "permission denied",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Whether `host` names this machine's loopback (`localhost`, `127.x.x.x`, `::1`).
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests;
