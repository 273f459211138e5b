//! A run's way out (see [`crate::egress`]): its allow-list, its proxy listener, the variables that point
//! the agent at it, and the ports the sandbox lets the agent connect to directly — the proxy's, Muster's
//! API's and a model server's when they are on this machine's loopback. Every other host is reached
//! through the proxy, or not at all.

use std::collections::HashMap;
use std::sync::Arc;

use muster_agents::RuntimeKind;

use crate::egress::{self, AllowList, RunProxy};
use crate::runner::protocol::AgentSpec;

/// What a run's network looks like.
pub(super) struct Egress {
    /// The run's proxy; `None` when the agent runs unsandboxed (nothing would make it use the proxy).
    pub proxy: Option<RunProxy>,
    pub allow: AllowList,
    /// TCP ports the agent may connect to directly.
    pub direct_ports: Vec<u16>,
}

/// The model endpoints of a run: the base URL it runs with (the field, a CLI's base-URL variable in the
/// agent's env, or a llama agent's default server) and every base-URL variable of its kind set in `env`.
pub(super) fn model_urls(
    kind: RuntimeKind,
    base_url: Option<&str>,
    env: &[(String, String)],
) -> Vec<String> {
    // Without a base URL the CLI talks to its vendor's API.
    let mut urls: Vec<String> = base_url
        .or_else(|| kind.default_api_url())
        .map(str::to_owned)
        .into_iter()
        .collect();
    for (_, url) in kind.base_urls_in(env) {
        if !urls.iter().any(|u| u == url) {
            urls.push(url.to_owned());
        }
    }
    urls
}

/// Builds the run's allow-list from the agent's hosts and the endpoints it always reaches (`urls`: its
/// model servers and Muster's API) and, when `sandboxed`, opens its proxy listener.
pub(super) async fn open(
    config: &crate::config::Config,
    agent: &AgentSpec,
    urls: &[String],
    sandboxed: bool,
) -> Result<Egress, super::Error> {
    let mut allow = AllowList {
        hosts: agent.egress_hosts.clone(),
        endpoints: Vec::new(),
        no_network: agent.no_network,
    };
    let mut direct_ports = Vec::new();
    for url in urls {
        let Some((host, port)) = egress::url_endpoint(url) else {
            continue;
        };
        // A loopback endpoint is reached directly; through the proxy too, for a client that does not
        // take `NO_PROXY` (a name like `localhost.`).
        if egress::is_loopback(&host) {
            direct_ports.push(port);
        }
        if !allow.endpoints.contains(&(host.clone(), port)) {
            allow.endpoints.push((host, port));
        }
    }
    let proxy = if sandboxed {
        let overrides: HashMap<String, std::net::SocketAddr> = config
            .egress_resolve
            .iter()
            .map(|(name, addr)| (name.to_ascii_lowercase(), *addr))
            .collect();
        let proxy = RunProxy::open(allow.clone(), Arc::new(overrides))
            .await
            .map_err(super::Error::Egress)?;
        direct_ports.push(proxy.port());
        Some(proxy)
    } else {
        None
    };
    Ok(Egress {
        proxy,
        allow,
        direct_ports,
    })
}

impl Egress {
    /// The variables that send the agent's traffic through its proxy (none without one).
    pub(super) fn env(&self) -> Vec<(String, String)> {
        self.proxy
            .as_ref()
            .map(|p| egress::agent_env(&p.url()))
            .unwrap_or_default()
    }

    /// What the `sandbox` event says about the network: the list, the proxy.
    pub(super) fn note(&self) -> crate::domain::SandboxEgress {
        crate::domain::SandboxEgress {
            summary: self.allow.describe(),
            hosts: self.allow.hosts.clone(),
            always: self
                .allow
                .endpoints
                .iter()
                .map(|(h, p)| format!("{h}:{p}"))
                .collect(),
            no_network: self.allow.no_network,
            proxy: self.proxy.as_ref().map(RunProxy::url),
        }
    }
}
