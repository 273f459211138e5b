//! What a run's log says, typed: the agent CLI's own events ([`AgentEvent`]) and the ones the runner
//! adds itself (its stderr, stall and cancel notes, the sandbox, the diff, the push, the check, the
//! egress proxy's records, its own errors).
//!
//! The store keeps each event as a `kind` and a JSON `payload`; [`RunEventBody::into_parts`] and
//! [`RunEventBody::decode`] are the only translation, so the stored JSON stays what it always was:
//! - an agent event's payload is the [`AgentEvent`] itself, its `kind` tag included;
//! - a runner event's payload is its fields only, without a `kind` (`stderr` is `{"line": …}`);
//! - both an agent's and the runner's errors are kind `error`: the agent's carry `kind` and `class`,
//!   the runner's only a `message`.
//!
//! An event that decodes as nothing known (a kind from a newer version, a malformed payload) becomes
//! [`RunEventBody::Unknown`], never an error: readers show it raw.

use muster_agents::AgentEvent;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::egress::{HostPattern, Record};
use super::{CheckResult, RunEvent};

/// The body of one run event: what it says, without its seq and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum RunEventBody {
    /// What the agent CLI said, parsed by its adapter.
    #[serde(skip)]
    Agent(AgentEvent),
    /// A line the agent CLI wrote to stderr.
    Stderr {
        #[serde(default)]
        line: String,
    },
    /// The run stalled or went on (`stalled`, `running`), or was cancelled by a person or an ensemble's
    /// early stop (`cancelled`, with the note why).
    Status {
        #[serde(default)]
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The work the run committed, and its diff against the run's base.
    Diff(DiffNote),
    /// The run's commit pushed to its repository's remote (shown without credentials).
    Push {
        remote: String,
        branch: String,
        commit: String,
    },
    /// What the agent may reach, the first event of a run.
    Sandbox(SandboxNote),
    /// An ensemble candidate's check result.
    Check(CheckResult),
    /// Whether a follow-up resumed the previous run's session.
    Session(SessionNote),
    /// One connection through the run's egress proxy.
    Egress(EgressNote),
    /// Something the runner itself reports as an error: a budget or cap stop, a model server gone, a
    /// commit or push that failed.
    Error { message: String },
    /// A stored event nothing above reads: kept as it came.
    #[serde(skip)]
    Unknown { kind: String, payload: Value },
}

/// The kinds the runner makes itself (besides `error`, which agents make too).
const RUNNER_KINDS: [&str; 8] = [
    "stderr", "status", "diff", "push", "sandbox", "check", "session", "egress",
];

impl RunEventBody {
    /// A runner error with `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self::Error {
            message: message.into(),
        }
    }

    /// The stored kind: the agent event's tag, or the runner kind.
    pub fn kind(&self) -> &str {
        match self {
            Self::Agent(e) => e.kind(),
            Self::Stderr { .. } => "stderr",
            Self::Status { .. } => "status",
            Self::Diff(_) => "diff",
            Self::Push { .. } => "push",
            Self::Sandbox(_) => "sandbox",
            Self::Check(_) => super::CHECK_EVENT,
            Self::Session(_) => "session",
            Self::Egress(_) => EGRESS_EVENT,
            Self::Error { .. } => "error",
            Self::Unknown { kind, .. } => kind,
        }
    }

    /// The stored kind and payload.
    pub fn into_parts(self) -> (String, Value) {
        let kind = self.kind().to_owned();
        let payload = match self {
            Self::Agent(e) => serde_json::to_value(&e),
            Self::Unknown { payload, .. } => Ok(payload),
            runner => serde_json::to_value(&runner).map(|mut v| v["payload"].take()),
        };
        // Serializing these types cannot fail (string keys, finite numbers but for a model's speed).
        let payload = payload.unwrap_or_else(|e| json!({ "error": e.to_string() }));
        (kind, payload)
    }

    /// Reads a stored event back; what does not decode is [`RunEventBody::Unknown`].
    pub fn decode(kind: &str, payload: &Value) -> Self {
        let has = |key: &str| payload.get(key).is_some();
        let runner =
            RUNNER_KINDS.contains(&kind) || (kind == "error" && !has("kind") && !has("class"));
        let decoded = if runner {
            Self::deserialize(json!({ "kind": kind, "payload": payload })).ok()
        } else if has("kind") {
            AgentEvent::deserialize(payload).ok().map(Self::Agent)
        } else {
            // A payload without its tag (an API client's own): the row's kind is the tag.
            let mut tagged = payload.clone();
            match tagged.as_object_mut() {
                Some(fields) => {
                    fields.insert("kind".to_owned(), kind.into());
                    AgentEvent::deserialize(tagged).ok().map(Self::Agent)
                }
                None => None,
            }
        };
        decoded.unwrap_or_else(|| Self::Unknown {
            kind: kind.to_owned(),
            payload: payload.clone(),
        })
    }
}

impl From<AgentEvent> for RunEventBody {
    fn from(e: AgentEvent) -> Self {
        Self::Agent(e)
    }
}

impl RunEvent {
    /// What the event says, decoded.
    pub fn body(&self) -> RunEventBody {
        RunEventBody::decode(&self.kind, &self.payload)
    }
}

/// The kind of an egress proxy's record.
pub const EGRESS_EVENT: &str = "egress";

/// The `diff` event: the commit the run's work became, on its branch, against the run's base.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DiffNote {
    #[serde(default)]
    pub base: String,
    #[serde(default)]
    pub commit: String,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub stat: String,
    #[serde(default)]
    pub patch: String,
    /// The patch was cut at its size limit.
    #[serde(default)]
    pub truncated: bool,
}

/// The `sandbox` event: the mode, and when sandboxed the Landlock rules, the ports, the seccomp filter,
/// the process view and the egress list. Fields absent when unsandboxed are left out.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SandboxNote {
    /// The mode in words.
    #[serde(default)]
    pub mode: String,
    /// The kernel's Landlock ABI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abi: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<SandboxPath>>,
    /// The TCP ports the agent may connect to directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ports: Option<Vec<u16>>,
    /// `refused`: the seccomp filter refuses unix sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_sockets: Option<String>,
    /// `refused`: the seccomp filter refuses UDP and netlink sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_netlink: Option<String>,
    /// The sandbox's process view (`namespace`, `self_only`; see `crate::sandbox::ProcessView`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_view: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<SandboxEgress>,
}

/// One Landlock rule of a [`SandboxNote`]: a path and what the agent may do there.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SandboxPath {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub access: String,
}

/// What a [`SandboxNote`] says about the network: the allow-list, the proxy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SandboxEgress {
    /// The list in one line.
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub hosts: Vec<HostPattern>,
    /// Endpoints always allowed, `host:port`.
    #[serde(default)]
    pub always: Vec<String>,
    #[serde(default)]
    pub no_network: bool,
    /// The run's proxy URL (`null` without one).
    #[serde(default)]
    pub proxy: Option<String>,
}

/// The `session` event of a follow-up: whether it resumed the previous run's session, and where its work
/// starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionNote {
    /// The run it continues (a [`RunId`](super::RunId); read as text, so a row that holds something
    /// else still shows).
    #[serde(default)]
    pub previous_run_id: String,
    #[serde(default)]
    pub resumed: bool,
    /// The branch the work continues from (`null` when none).
    #[serde(default)]
    pub from_branch: Option<String>,
    /// The session resumed, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why a fresh session started, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The previous run's branch, when this runner does not have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_missing: Option<String>,
}

impl SessionNote {
    /// What the event says, for people: whether a follow-up resumed the previous run's session (and
    /// where its work starts), or started a fresh one whose brief carries the thread, and why.
    pub fn text(&self) -> String {
        let previous: String = self.previous_run_id.chars().take(8).collect();
        let mut text = if self.resumed {
            format!(
                "Resumed session {} of run {previous}.",
                self.session_id.as_deref().unwrap_or_default()
            )
        } else {
            format!(
                "Started a fresh session ({}); the brief carries the thread so far.",
                match self.reason.as_deref().unwrap_or_default() {
                    "" => "the previous session could not be resumed",
                    why => why,
                }
            )
        };
        match (&self.from_branch, &self.branch_missing) {
            (Some(branch), _) => {
                text.push_str(&format!(" The work continues from branch {branch}."));
            }
            (None, Some(branch)) => text.push_str(&format!(
                " Branch {branch} is not on this runner: the work starts from the repository's HEAD."
            )),
            (None, None) => {}
        }
        text
    }
}

/// The `egress` event: the proxy's record, and the line the run page and `muster run logs` show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EgressNote {
    #[serde(flatten)]
    pub record: Record,
    #[serde(default)]
    pub line: String,
}

impl From<Record> for EgressNote {
    fn from(record: Record) -> Self {
        Self {
            line: record.line(),
            record,
        }
    }
}

#[cfg(test)]
mod tests;
