//! Finding local model servers: explicit URLs first (agent profiles, `MUSTER_LLAMA_URL`, `OLLAMA_HOST`,
//! `LLAMA_API_BASE`), then the usual loopback ports ([`DEFAULT_PORTS`]), all probed concurrently with a short
//! per-request timeout.
//!
//! Fingerprints: a `Server: llama.cpp` header or a `/props` document (`build_info`, `model_path`) means
//! llama.cpp (llama-server, llamafile, xllamacpp); `/api/version` with a `version` means Ollama; anything else
//! that lists `/v1/models` is a generic OpenAI-compatible server. Explicit URLs are always reported (with why
//! they are unusable); a default port is reported only when a model server answers there.
//!
//! A base URL may point anywhere, so a probe is treated as a request to an unknown host: redirects are
//! never followed, bodies are read only as JSON and capped, and what is reported is only status codes and
//! the fields read from the documents above after validation ([`sane_name`], [`sane_version`]) — never a
//! response body. URLs are reported without their credentials ([`crate::without_credentials`]).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::{excerpt, server_root, without_credentials};

/// How long each probe request may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(300);
/// Most bytes of a probe's answer read (a `/v1/models` list of a few hundred models fits).
const MAX_PROBE_BODY: usize = 256 * 1024;
/// Most model names reported for one server.
const MAX_MODELS: usize = 100;

/// The loopback ports local model servers use by default, with who uses them.
pub const DEFAULT_PORTS: [(u16, &str); 4] = [
    (8080, "llama.cpp / llamafile"),
    (11434, "Ollama"),
    (1234, "LM Studio"),
    (8000, "vLLM / llama-cpp-python"),
];

/// Which server software answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ServerKind {
    /// llama.cpp's server (llama-server, llamafile, xllamacpp).
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    /// Ollama.
    #[serde(rename = "ollama")]
    Ollama,
    /// Another OpenAI-compatible server (vLLM, LM Studio, TGI, llama-cpp-python, …).
    #[serde(rename = "openai")]
    OpenAi,
}

impl ServerKind {
    /// `llama.cpp`, `ollama` or `openai`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama.cpp",
            Self::Ollama => "ollama",
            Self::OpenAi => "openai",
        }
    }
}

/// Whether a server can take requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Answering and serving a model.
    Ready,
    /// Up, but still loading its model (llama.cpp answers 503).
    Loading,
    /// Nothing answered.
    Unreachable,
    /// Something answered, but not like a model server.
    Unrecognized,
}

impl ServerStatus {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Loading => "loading",
            Self::Unreachable => "unreachable",
            Self::Unrecognized => "unrecognized",
        }
    }
}

/// A URL to probe and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The server URL (with or without `/v1`).
    pub url: String,
    /// Where it came from: `MUSTER_LLAMA_URL`, `agent reviewer`, `port 8080 (llama.cpp / llamafile)`, …
    pub source: String,
    /// Explicit candidates are reported even when nothing answers.
    pub explicit: bool,
}

impl Candidate {
    /// An explicitly configured URL.
    pub fn explicit(url: &str, source: &str) -> Self {
        Self {
            url: url.to_owned(),
            source: source.to_owned(),
            explicit: true,
        }
    }
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelServer {
    /// The server root (no trailing `/v1`), without credentials.
    pub url: String,
    /// Where the URL came from.
    pub source: String,
    /// The server software, when recognized.
    pub kind: Option<ServerKind>,
    /// Whether it can take requests.
    pub status: ServerStatus,
    /// Its version or build, when it says.
    pub version: Option<String>,
    /// The models it serves.
    pub models: Vec<String>,
    /// The context size of the loaded model, when the server says (llama.cpp).
    pub context_size: Option<u64>,
    /// Whether the model's chat template takes tools, when the server says (llama.cpp).
    pub supports_tools: Option<bool>,
    /// Why it is unusable, in plain words.
    pub reason: Option<String>,
}

/// The default-port candidates on 127.0.0.1.
pub fn default_candidates() -> Vec<Candidate> {
    DEFAULT_PORTS
        .iter()
        .map(|(port, who)| Candidate {
            url: format!("http://127.0.0.1:{port}"),
            source: format!("port {port} ({who})"),
            explicit: false,
        })
        .collect()
}

/// An `OLLAMA_HOST` value as a URL: `0.0.0.0` (bind-all) means loopback; scheme and port 11434 are added
/// when missing.
pub fn ollama_host_url(value: &str) -> String {
    let v = value.trim().trim_end_matches('/');
    let (scheme, rest) = match v.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("http", v),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => (h, p),
        _ => (rest, "11434"),
    };
    let host = match host {
        "" | "0.0.0.0" => "127.0.0.1",
        "[::]" => "[::1]",
        h => h,
    };
    format!("{scheme}://{host}:{port}")
}

/// Probes every candidate concurrently (duplicates by server root are probed once, the first source wins)
/// and returns what was found, in candidate order.
pub async fn scan(candidates: Vec<Candidate>, timeout: Duration) -> Vec<ModelServer> {
    let Ok(http) = client(timeout) else {
        return Vec::new();
    };
    let mut seen = Vec::new();
    let mut set = JoinSet::new();
    for candidate in candidates {
        let root = server_root(&candidate.url);
        if root.is_empty() || seen.contains(&root) {
            continue;
        }
        seen.push(root);
        let (http, index) = (http.clone(), seen.len());
        set.spawn(async move { (index, probe(&http, &candidate, timeout).await) });
    }
    let mut found = Vec::new();
    while let Some(joined) = set.join_next().await {
        if let Ok((index, Some(server))) = joined {
            found.push((index, server));
        }
    }
    found.sort_by_key(|(i, _)| *i);
    found.into_iter().map(|(_, s)| s).collect()
}

/// The HTTP client for probes: no redirects (a redirect is reported as its status, never followed).
pub fn client(connect_timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// One GET's outcome: status, whether the `Server` header says llama.cpp, and the JSON body if any.
type Answer = Result<(u16, bool, Option<Value>), String>;

async fn get(http: &reqwest::Client, url: String, timeout: Duration) -> Answer {
    let mut response = http
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| failure(&e))?;
    let status = response.status().as_u16();
    let llama = response
        .headers()
        .get(reqwest::header::SERVER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("llama.cpp"));
    let mut body = Vec::new();
    let read = async {
        while let Ok(Some(bytes)) = response.chunk().await {
            body.extend_from_slice(&bytes);
            if body.len() > MAX_PROBE_BODY {
                return false;
            }
        }
        true
    };
    let whole = tokio::time::timeout(timeout, read).await.unwrap_or(false);
    let json = whole
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten();
    Ok((status, llama, json))
}

/// Why a request failed, in words that name neither the URL (it may carry credentials) nor anything the
/// other side sent.
fn failure(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    // The sources below reqwest's own message are the transport's (connection refused, DNS, TLS); the
    // top-level message would repeat the URL.
    let mut detail = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        detail.push(s.to_string());
        source = s.source();
    }
    match detail.last() {
        Some(cause) => format!("{what}: {cause}"),
        None => what.to_owned(),
    }
}

/// A model name as a server lists it, if it looks like one: 1–200 characters of letters, digits and
/// `._:/@+-` (`llama3.2:1b`, `hf.co/org/model:Q4_K_M`, `smollm2-135m-q8_0.gguf`).
pub fn sane_name(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@+-".contains(c));
    ok.then(|| name.to_owned())
}

/// A version or build as a server reports it, if it looks like one: 1–64 characters of letters, digits
/// and `._+-` (`0.5.7`, `b4567-abc1234`).
pub fn sane_version(version: &str) -> Option<String> {
    let ok = !version.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    ok.then(|| version.to_owned())
}

/// Probes one server; `None` for a default port where no model server answers.
pub async fn probe(
    http: &reqwest::Client,
    candidate: &Candidate,
    timeout: Duration,
) -> Option<ModelServer> {
    let root = server_root(&candidate.url);
    let shown = without_credentials(&root);
    let (props, version, models) = tokio::join!(
        get(http, format!("{root}/props"), timeout),
        get(http, format!("{root}/api/version"), timeout),
        get(http, format!("{root}/v1/models"), timeout),
    );
    let mut server = ModelServer {
        url: shown.clone(),
        source: candidate.source.clone(),
        kind: None,
        status: ServerStatus::Ready,
        version: None,
        models: Vec::new(),
        context_size: None,
        supports_tools: None,
        reason: None,
    };
    if let (Err(e), Err(_), Err(_)) = (&props, &version, &models) {
        server.status = ServerStatus::Unreachable;
        server.reason = Some(format!("nothing answered at {shown}: {}", excerpt(e, 160)));
        return candidate.explicit.then_some(server);
    }
    let header_says_llama = [&props, &version, &models]
        .iter()
        .any(|a| matches!(a, Ok((_, true, _))));
    if let Ok((status, _, body)) = &props {
        let doc = body.as_ref().filter(|b| {
            *status == 200 && (b.get("build_info").is_some() || b.get("model_path").is_some())
        });
        if let Some(doc) = doc {
            read_props(&mut server, doc);
        } else if header_says_llama && *status == 503 {
            server.status = ServerStatus::Loading;
            server.reason = Some("the server is still loading its model".to_owned());
        }
        if doc.is_some() || header_says_llama {
            server.kind = Some(ServerKind::LlamaCpp);
        }
    }
    if server.kind.is_none()
        && let Ok((200, _, Some(body))) = &version
        && let Some(v) = body.get("version").and_then(Value::as_str)
    {
        server.kind = Some(ServerKind::Ollama);
        server.version = sane_version(v);
        if let Ok((200, _, Some(tags))) = get(http, format!("{root}/api/tags"), timeout).await {
            server.models = names(&tags, "/models", "name");
        }
    }
    match &models {
        Ok((200, _, Some(body))) if body.get("data").is_some_and(Value::is_array) => {
            let listed = names(body, "/data", "id");
            if server.models.is_empty() {
                server.models = listed;
            }
            server.kind.get_or_insert(ServerKind::OpenAi);
        }
        Ok((503, _, _)) if server.kind.is_some() => {
            server.status = ServerStatus::Loading;
            server.reason = Some("the server is still loading its model".to_owned());
        }
        _ => {}
    }
    if server.kind.is_none() {
        if !candidate.explicit {
            return None;
        }
        server.status = ServerStatus::Unrecognized;
        let codes: Vec<String> = [&props, &version, &models]
            .iter()
            .map(|a| match a {
                Ok((status, _, _)) => status.to_string(),
                Err(_) => "no answer".to_owned(),
            })
            .collect();
        server.reason = Some(format!(
            "{shown} answered, but not as a model server (/props, /api/version, /v1/models: HTTP {}; \
             redirects are not followed)",
            codes.join(", ")
        ));
    } else if server.status == ServerStatus::Ready && server.models.is_empty() {
        server.reason = Some("the server lists no models".to_owned());
    }
    Some(server)
}

fn read_props(server: &mut ModelServer, doc: &Value) {
    server.version = doc
        .get("build_info")
        .and_then(Value::as_str)
        .and_then(sane_version);
    let alias = doc.get("model_alias").and_then(Value::as_str);
    let file = doc
        .get("model_path")
        .and_then(Value::as_str)
        .and_then(|p| p.rsplit('/').next());
    if let Some(model) = alias.filter(|a| !a.is_empty()).or(file).and_then(sane_name) {
        server.models.push(model);
    }
    server.context_size = doc
        .pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_u64);
    server.supports_tools = doc
        .pointer("/chat_template_caps/supports_tools")
        .and_then(Value::as_bool);
}

fn names(doc: &Value, list: &str, field: &str) -> Vec<String> {
    doc.pointer(list)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| m.get(field).and_then(Value::as_str))
                .filter_map(sane_name)
                .take(MAX_MODELS)
                .collect()
        })
        .unwrap_or_default()
}

/// Nothing accepted a connection at a model server's address. Its text is "host:port (why)", without
/// the URL's credentials; sentences about the server put it after "at".
#[derive(Debug, thiserror::Error)]
#[error("{address} ({why})")]
pub struct Unreachable {
    /// `host:port`, as connected to.
    pub address: String,
    pub why: NoConnection,
}

/// Why a connection was not made.
#[derive(Debug, thiserror::Error)]
pub enum NoConnection {
    /// The connection failed (refused, no route, no such name, …).
    #[error("{0}")]
    Failed(#[source] std::io::Error),
    /// Nothing answered within the timeout (in milliseconds).
    #[error("no answer within {0} ms")]
    NoAnswer(u128),
}

/// Whether something accepts a TCP connection at `url`'s host and port (its scheme's default port when
/// it names none), within `timeout`. Only a connection is tried, no request: no key is sent, nothing is
/// spent. `Ok` too for a URL without a host, which the client that uses it refuses with its own words.
pub async fn accepts_connections(url: &str, timeout: Duration) -> Result<(), Unreachable> {
    let Ok(parsed) = reqwest::Url::parse(url.trim()) else {
        return Ok(());
    };
    let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
        return Ok(());
    };
    // `localhost.` is `localhost` (a fully qualified name the resolver may not take with its dot).
    let address = format!("{}:{port}", host.trim_end_matches('.'));
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address.as_str())).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Unreachable {
            address,
            why: NoConnection::Failed(e),
        }),
        Err(_) => Err(Unreachable {
            address,
            why: NoConnection::NoAnswer(timeout.as_millis()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_values_become_urls() {
        assert_eq!(ollama_host_url("127.0.0.1:11434"), "http://127.0.0.1:11434");
        assert_eq!(ollama_host_url("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(
            ollama_host_url("http://gpu-box:9000/"),
            "http://gpu-box:9000"
        );
        assert_eq!(
            ollama_host_url("https://models.example"),
            "https://models.example:11434"
        );
    }

    #[test]
    fn only_names_and_versions_that_look_like_them_are_reported() {
        for name in [
            "llama3.2:1b",
            "hf.co/org/model:Q4_K_M",
            "smollm2-135m-q8_0.gguf",
        ] {
            assert_eq!(sane_name(name).as_deref(), Some(name));
        }
        for bad in ["", "a b", "<script>", "x\ny", &"m".repeat(201)] {
            assert_eq!(sane_name(bad), None, "{bad:?}");
        }
        assert_eq!(
            sane_version("b4567-abc1234").as_deref(),
            Some("b4567-abc1234")
        );
        assert_eq!(sane_version("0.5.7").as_deref(), Some("0.5.7"));
        assert_eq!(sane_version("1.0 (internal: secret)"), None);
        assert_eq!(sane_version(&"1".repeat(65)), None);
    }

    #[test]
    fn default_candidates_are_loopback_and_implicit() {
        let c = default_candidates();
        assert_eq!(c.len(), 4);
        assert!(
            c.iter()
                .all(|c| c.url.starts_with("http://127.0.0.1:") && !c.explicit)
        );
        assert_eq!(c[1].url, "http://127.0.0.1:11434");
    }

    #[tokio::test]
    async fn an_explicit_url_where_nothing_listens_is_reported_unreachable() {
        // Bind then drop a listener: the port is then (almost certainly) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/v1");
        let found = scan(
            vec![
                Candidate::explicit(&url, "MUSTER_LLAMA_URL"),
                Candidate {
                    url: format!("http://127.0.0.1:{port}"),
                    source: "duplicate".into(),
                    explicit: false,
                },
            ],
            PROBE_TIMEOUT,
        )
        .await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].status, ServerStatus::Unreachable);
        assert_eq!(found[0].source, "MUSTER_LLAMA_URL");
        assert_eq!(found[0].url, format!("http://127.0.0.1:{port}"));
        assert!(
            found[0]
                .reason
                .as_deref()
                .unwrap_or("")
                .contains("nothing answered")
        );
    }
}
