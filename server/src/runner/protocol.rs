//! The runner protocol: what a runner (the embedded one over an in-process channel, `muster runner` over a
//! WebSocket of JSON text frames) and the server say to each other. Versioned by [`PROTOCOL_VERSION`]; a
//! runner speaking another version is refused at `hello` with [`CloseReason::Version`].
//!
//! A session: the runner says [`ToServer::Hello`]; the server answers [`ToRunner::Welcome`] (or closes
//! with a [`CloseReason`]) listing the runs the store says this runner holds that it did not name as
//! live (left behind by its previous life). The runner says how many runs it can take ([`ToServer::Claim`]);
//! the server claims queued runs for it and sends each as a [`ToRunner::Run`] order carrying a lease epoch.
//! Everything the runner reports about a run carries that epoch; the server refuses a stale one
//! ([`ToRunner::Refused`]) and writes nothing, so a run is never executed or written twice.
//!
//! Reliability: `started`, `events` and `finished` are kept in the runner's outbox until the server
//! acknowledges them ([`ToRunner::Ack`] up to a seq, [`ToRunner::Done`] for the finish) and are resent, in
//! order, after a reconnect to the same or another replica; the server's writes are idempotent on
//! `(run_id, seq)`, and a repeated start or finish of a run already started or finished is acknowledged.

use serde::{Deserialize, Serialize};

use crate::domain::{
    Budget, NewRunEvent, PermissionMode, RunId, RunOutcome, RuntimeKind, Seq, WorkspaceId,
};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// What a runner sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToServer {
    /// The first message of every connection.
    Hello(Hello),
    /// The runner can take `slots` more runs now (0: none; it says so again when one ends).
    Claim { slots: u32 },
    /// The run's process started (kept until acknowledged with `ack{seq: 0}`).
    Started(Started),
    /// Events of one run, numbered from `from_seq`, contiguous (kept until acknowledged).
    Events {
        run_id: RunId,
        epoch: i64,
        from_seq: Seq,
        events: Vec<NewRunEvent>,
        /// What the run has spent so far, when that changed since its last events: the server keeps
        /// it on the run and checks the budgets several runs share (an ensemble's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent: Option<crate::domain::Usage>,
    },
    /// The runner is alive and still holds these runs: their leases are renewed.
    Heartbeat { runs: Vec<Held> },
    /// The run went quiet for its stall timeout (`true`), or spoke again (`false`).
    Stalled {
        run_id: RunId,
        epoch: i64,
        stalled: bool,
    },
    /// How the run ended (kept until acknowledged with `done`).
    Finished(Finished),
    /// The runner will not execute a run it was just sent (it is stopping): queue it again.
    Release { run_id: RunId, epoch: i64 },
}

/// `hello`: who the runner is and what it can run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    /// The runner token (empty for the embedded runner, which the server trusts as itself).
    pub token: String,
    pub name: String,
    /// The runner's build (`muster --version`).
    pub version: String,
    /// The agent runtimes it found on its machine.
    pub runtimes: Vec<RuntimeInfo>,
    /// The local model servers it can reach.
    pub local_models: Vec<LocalModelInfo>,
    /// The most runs it executes at once.
    pub max_runs: u32,
    /// The runs it still executes (after a reconnect): not left behind, whatever the store says.
    pub live: Vec<Held>,
}

/// One detected agent runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    pub kind: RuntimeKind,
    pub version: Option<String>,
    pub path: Option<String>,
}

/// One reachable local model server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalModelInfo {
    pub url: String,
    pub models: Vec<String>,
}

/// A run the runner holds, under the epoch of its claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Held {
    pub run_id: RunId,
    pub epoch: i64,
}

/// `started`: the process of a run is up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Started {
    pub run_id: RunId,
    pub epoch: i64,
    pub pid: Option<i32>,
    pub workdir: Option<String>,
    pub branch: Option<String>,
}

/// `finished`: the outcome of a run, its texts already redacted by the runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finished {
    pub run_id: RunId,
    pub epoch: i64,
    /// The highest event seq the run produced (all sent before this message).
    pub last_seq: Seq,
    pub outcome: RunOutcome,
    /// Whether the run changed its worktree: an interrupted run that did is left to a person.
    pub changed: bool,
}

/// What the server sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToRunner {
    /// The answer to `hello`.
    Welcome(Welcome),
    /// A run to execute.
    Run(Box<Order>),
    /// Events up to `seq` are stored (`seq` 0: the start is recorded).
    Ack { run_id: RunId, seq: Seq },
    /// The finish is recorded: forget the run.
    Done { run_id: RunId },
    /// Stop the run: a person cancelled it (`lost` false: it ends `cancelled`), or the runner no longer
    /// holds it (`lost` true: stop it and write nothing more).
    /// `why`: a stop the server decided (an ensemble's policy or budget), which the run records.
    Cancel {
        run_id: RunId,
        lost: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<crate::domain::StopNote>,
    },
    /// The answer to a heartbeat: the server is there (a silent connection is taken for dead).
    Alive,
    /// A message about this run was refused (a stale epoch: another claim owns it now). The runner stops
    /// the run if it still runs, writes nothing more for it and drops what its outbox keeps of it.
    Refused { run_id: RunId, reason: String },
}

/// `welcome`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol: u32,
    pub runner_id: crate::domain::RunnerId,
    /// Seconds between heartbeats the server expects.
    pub heartbeat_secs: u64,
    /// Runs the store says this runner holds that its `hello` did not name: left behind by its previous
    /// life. The runner stops what is left of each, keeps its work, and finishes it as interrupted.
    pub orphans: Vec<Orphan>,
}

/// A run a previous life of the runner left behind.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Orphan {
    pub run_id: RunId,
    pub epoch: i64,
    pub pid: Option<i32>,
    /// The next event seq (after the events already stored).
    pub next_seq: Seq,
    pub issue_key: String,
    pub agent_name: String,
    pub secrets: Vec<String>,
    /// The forge its branch is pushed to, as for [`Order::forge`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<ForgePush>,
}

/// The forge a run's branch is pushed to when its workspace is connected to one. The runner pushes
/// with the connection's token from outside the sandbox (as an HTTP header git is handed in its
/// environment, never on a command line, in a file or in a git config), and asks the forge first: the
/// branch of a merged or closed pull request is never pushed to again (the work goes to a fresh branch).
#[derive(Clone, Serialize, Deserialize)]
pub struct ForgePush {
    pub kind: crate::domain::ForgeKind,
    pub api_url: String,
    pub repo: String,
    pub token: String,
}

impl std::fmt::Debug for ForgePush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgePush")
            .field("kind", &self.kind)
            .field("api_url", &self.api_url)
            .field("repo", &self.repo)
            .field("token", &"***")
            .finish()
    }
}

/// Why the server closed a runner's connection (the WebSocket close code and reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Unknown or revoked token.
    Token,
    /// Another protocol version.
    Version,
    /// A malformed message, or a message before `hello`.
    Protocol,
    /// The token was revoked while connected.
    Revoked,
    /// The server is shutting down: reconnect (to another replica).
    Shutdown,
    /// The server could not record what the runner said (its database is unreachable): reconnect and
    /// resend.
    ServerError,
}

impl CloseReason {
    /// The WebSocket close code (4000–4999 are the application's).
    pub fn code(self) -> u16 {
        match self {
            CloseReason::Token => 4001,
            CloseReason::Version => 4002,
            CloseReason::Protocol => 4003,
            CloseReason::Revoked => 4004,
            CloseReason::Shutdown => 1001,
            CloseReason::ServerError => 1011,
        }
    }

    /// Whether a runner should stop trying (a person must act) rather than reconnect.
    pub fn is_final(code: u16) -> bool {
        matches!(code, 4001 | 4002 | 4004)
    }
}

/// `run`: everything a runner needs to execute one run; the agent's secrets are opened (the connection
/// is the runner's, authenticated by its token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Order {
    pub run_id: RunId,
    pub epoch: i64,
    pub workspace_id: WorkspaceId,
    pub attempt: i32,
    pub issue_key: String,
    /// The branch of the run's line of work (`muster/<KEY>-<agent>`, an ensemble candidate's own), which
    /// the run's work advances; every run works in a private repository of its own.
    pub branch: String,
    pub agent: AgentSpec,
    /// The brief (the CLI's context file) and the prompt.
    pub brief: String,
    pub prompt: String,
    /// The agent's enabled skills.
    pub skills: Vec<SkillBundle>,
    /// The workspace's repository: a path on the runner's machine or a git URL; `None`: no repository.
    pub repo: Option<String>,
    /// The run's token (`MUSTER_TOKEN`).
    pub token: String,
    /// The URL agents reach the API at, when the server knows its public URL; else the runner uses the
    /// URL it connected to.
    pub api_url: Option<String>,
    /// The most events the run may store.
    pub max_events: Seq,
    /// The first event seq (1, or after the events an earlier claim of the run stored).
    pub next_seq: Seq,
    /// For a run that continues the agent's previous run on the issue: what to continue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Resume>,
    /// For an ensemble's candidate: the check to run in its worktree once the agent has finished; its
    /// result is sent as a [`crate::domain::CHECK_EVENT`] event before `finished`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<crate::domain::CheckSpec>,
    /// The commit the worktree starts at (an ensemble's candidates all start at the same one); the
    /// repository's HEAD when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The workspace's own rate table, which prices the run's usage when its CLI reports tokens but
    /// no cost; the built-in one when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rates: Option<muster_agents::RateTable>,
    /// The run must not see any other run's work, even read-only (an ensemble's candidate): its private
    /// repository gets a copy of its start's history instead of reading the repository's objects.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind: bool,
    /// The forge the branch is pushed to, when the workspace is connected to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forge: Option<ForgePush>,
}

/// What a follow-up continues: the agent's previous run on the issue, its CLI session (resumed when its
/// files are on this runner) and its branch (the new worktree starts from its tip).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resume {
    pub previous_run_id: RunId,
    /// The session to resume; `None` when that run reported none, or for a retry.
    pub session_id: Option<String>,
    /// Why no session is resumed even though that run reported one (a retry starts afresh: its attempt
    /// may have failed because the CLI refused to resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_because: Option<String>,
    /// That run's branch; `None` when it had no worktree.
    pub branch: Option<String>,
    /// The prompt when the session resumes: the new comments alone ([`Order::prompt`], the issue and
    /// the thread, is for a fresh start).
    pub prompt: String,
}

/// The agent profile as a runner needs it; `env` holds opened values.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentSpec {
    pub name: String,
    pub kind: RuntimeKind,
    pub model: Option<String>,
    pub instructions: String,
    pub env: Vec<SpecEnv>,
    pub extra_args: Vec<String>,
    pub permission_mode: PermissionMode,
    pub stall_timeout_secs: i32,
    pub budget: Budget,
    pub command: Option<String>,
    pub base_url: Option<String>,
    /// The hosts its runs may reach through the egress proxy: the agent's own list and the workspace's
    /// default list (empty with `no_network`). Absent from an older server: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_hosts: Vec<crate::domain::HostPattern>,
    /// The agent's "no network" switch: only its model endpoint (and Muster) are reachable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_network: bool,
}

/// One environment variable of the agent; `secret` values are redacted from what the run produces.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpecEnv {
    pub key: String,
    pub value: String,
    pub secret: bool,
}

/// A skill as the runner writes it, identified by its content hash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkillBundle {
    pub slug: String,
    pub name: String,
    pub description: String,
    pub body: String,
    pub content_hash: String,
    pub files: Vec<crate::domain::SkillFile>,
}

impl SkillBundle {
    /// A stored skill as an order carries it.
    pub fn of(skill: &crate::domain::Skill) -> Self {
        Self {
            slug: skill.slug.as_str().to_owned(),
            name: skill.name.clone(),
            description: skill.description.clone(),
            body: skill.body.clone(),
            content_hash: skill.content_hash.clone(),
            files: skill.files.clone(),
        }
    }
}
