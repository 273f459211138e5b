//! Where an agent's network traffic may go: host patterns of an allow-list (per agent, plus the
//! workspace's default list) that the runner's egress proxy checks every connection against.
//!
//! A pattern is a host name (`github.com`), a wildcard for its subdomains (`*.npmjs.org`: any name
//! ending in `.npmjs.org`, not `npmjs.org` itself) or an IP address, optionally with `:port`. Without a
//! port a pattern allows 443 and 80 only; with one, that port only.

use super::ValidationError;

/// The most patterns one list may hold.
pub const MAX_EGRESS_HOSTS: usize = 100;

/// The ports a pattern without `:port` allows.
pub const DEFAULT_EGRESS_PORTS: [u16; 2] = [443, 80];

/// The variables that point an agent at its run's egress proxy (set by Muster for each run; a profile
/// may not set them).
pub const PROXY_VARS: [&str; 8] = [
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
    "no_proxy",
];

/// One validated allow-list entry, kept as typed (lowercased).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct HostPattern(String);

impl HostPattern {
    /// Validates one entry of `field` (`egress_hosts`).
    pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, ValidationError> {
        let s = raw.trim().to_ascii_lowercase();
        let bad = |why: &str| {
            ValidationError::new(
                field,
                format!(
                    "{raw:?} {why}; an entry is a host name (github.com), a wildcard for its \
                     subdomains (*.npmjs.org) or an IP address, optionally with :port"
                ),
            )
        };
        if s.is_empty() {
            return Err(bad("is empty"));
        }
        if s.contains("://") || s.contains('/') {
            return Err(bad("has a scheme or a path"));
        }
        let (host, port) = split_port(&s).map_err(|e| bad(&e))?;
        let name = host.strip_prefix("*.").unwrap_or(host);
        if name.contains('*') {
            return Err(bad("may use * only as its first label (*.example.com)"));
        }
        if host.starts_with("*.") && !name.contains('.') {
            return Err(bad(
                "is too wide: a wildcard needs a domain with a dot (*.example.com)",
            ));
        }
        if name.len() > 253 || !valid_name(name) {
            return Err(bad("is not a valid host name"));
        }
        if port == Some(0) {
            return Err(bad("has port 0"));
        }
        Ok(Self(s))
    }

    /// The pattern as typed (lowercased).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this pattern allows a connection to `host` (a name or an address) on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let Ok((pattern, want)) = split_port(&self.0) else {
            return false;
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let port_ok = match want {
            Some(p) => p == port,
            None => DEFAULT_EGRESS_PORTS.contains(&port),
        };
        let host_ok = match pattern.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
            None => host == pattern.trim_start_matches('[').trim_end_matches(']'),
        };
        port_ok && host_ok
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Validates a whole list (at most [`MAX_EGRESS_HOSTS`] entries, none twice); every problem is returned.
pub fn parse_host_list(
    field: &'static str,
    raw: &[String],
) -> Result<Vec<HostPattern>, Vec<ValidationError>> {
    let mut out: Vec<HostPattern> = Vec::new();
    let mut errors = Vec::new();
    if raw.len() > MAX_EGRESS_HOSTS {
        errors.push(ValidationError::new(
            field,
            format!("at most {MAX_EGRESS_HOSTS} entries ({} given)", raw.len()),
        ));
    }
    for entry in raw.iter().filter(|e| !e.trim().is_empty()) {
        match HostPattern::parse_field(field, entry) {
            Ok(p) if out.contains(&p) => {}
            Ok(p) => out.push(p),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Splits `host[:port]` (an IPv6 address in brackets: `[::1]:8080`).
fn split_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        match rest.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) => (h, Some(p.strip_prefix(':').ok_or("has a bad port")?)),
            None => return Err("has an unclosed [".to_owned()),
        }
    } else if s.matches(':').count() > 1 {
        (s, None) // a bare IPv6 address
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = port
        .map(|p| {
            p.parse::<u16>()
                .map_err(|_| format!("has a bad port {p:?}"))
        })
        .transpose()?;
    Ok((host, port))
}

fn valid_name(name: &str) -> bool {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// One connection through the proxy, as its run's log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub host: String,
    pub port: u16,
    /// `CONNECT`, or the method of a plain HTTP request.
    pub method: String,
    pub allowed: bool,
    /// Why it was refused or failed, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Bytes from the agent to the host, and back.
    pub bytes_up: u64,
    pub bytes_down: u64,
}

impl Record {
    /// The line the run page and `muster run logs` show.
    pub fn line(&self) -> String {
        let verdict = if self.allowed { "allowed" } else { "refused" };
        let mut line = format!(
            "{verdict} {} {}:{} (↑{} B ↓{} B)",
            self.method, self.host, self.port, self.bytes_up, self.bytes_down
        );
        if let Some(why) = &self.why {
            line.push_str(": ");
            line.push_str(why);
        }
        line
    }

    /// Whether the proxy refused the connection by its list (not a failed connect).
    pub fn refused(&self) -> bool {
        !self.allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> HostPattern {
        HostPattern::parse_field("egress_hosts", s).unwrap()
    }

    #[test]
    fn patterns_match_hosts_and_ports() {
        assert!(p("github.com").allows("github.com", 443));
        assert!(p("GitHub.com").allows("github.com.", 80));
        assert!(!p("github.com").allows("github.com", 22));
        assert!(!p("github.com").allows("api.github.com", 443));
        assert!(p("*.npmjs.org").allows("registry.npmjs.org", 443));
        assert!(!p("*.npmjs.org").allows("npmjs.org", 443));
        assert!(!p("*.npmjs.org").allows("evilnpmjs.org", 443));
        assert!(p("allowed.test:8080").allows("allowed.test", 8080));
        assert!(!p("allowed.test:8080").allows("allowed.test", 443));
        assert!(p("[::1]:9").allows("::1", 9));
        assert!(p("10.0.0.1").allows("10.0.0.1", 443));
    }

    #[test]
    fn bad_patterns_say_what_an_entry_is() {
        for bad in [
            "https://github.com",
            "github.com/x",
            "*",
            "*.com",
            "a.*.com",
            "host:99999",
            "bad host",
            "",
        ] {
            let e = HostPattern::parse_field("egress_hosts", bad).unwrap_err();
            assert!(e.message.contains("an entry is a host name"), "{bad}: {e}");
        }
        let many: Vec<String> = (0..101).map(|i| format!("h{i}.example.com")).collect();
        assert!(parse_host_list("egress_hosts", &many).is_err());
    }
}
