//! View structs: everything a page needs, fully computed by the server. Templates only lay them out.
//!
//! Field values are display-ready strings (`status` is the stored name like `in_progress`, `status_label`
//! the human text). Markdown arrives as `*_html`, already rendered and sanitised by the server: the only
//! strings templates may emit unescaped.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

mod forge;
mod list;
mod plan;
mod project;
pub use forge::*;
pub use list::*;
pub use plan::*;
pub use project::*;

/// Messages per form field (`"title" -> ["must not be empty"]`); the key `"form"` is for the whole form.
pub type FormErrors = BTreeMap<String, Vec<String>>;

/// The signed-in frame around every page.
#[derive(Debug, Clone, Default)]
pub struct Nav {
    pub workspace_name: String,
    pub workspace_slug: String,
    pub user_name: String,
    pub user_email: String,
    /// Role of the signed-in user: `owner`, `admin` or `member`.
    pub role: String,
    /// CSRF token: every form carries it as hidden `_csrf`; htmx requests send it as `x-csrf-token`.
    pub csrf: String,
    pub active: NavItem,
    /// Unread inbox items, when the page counted them; otherwise the header loads the count itself
    /// (`GET /w/{slug}/inbox/count`).
    pub inbox_unread: Option<i64>,
}

/// Which top-level page is showing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NavItem {
    #[default]
    Board,
    Projects,
    Agents,
    Members,
    Tokens,
    Runtimes,
    Runners,
    Inbox,
    Skills,
    /// The workspace's ensembles (teams of agents), not one ensemble run's comparison.
    Ensembles,
    Settings,
    /// What runs cost (the Usage page).
    Usage,
    /// The signed-in person's own account (password).
    Account,
}

/// Who an issue is assigned to, or who wrote a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonView {
    pub name: String,
    /// One or two letters for the avatar.
    pub initials: String,
    /// `#rrggbb` avatar colour.
    pub color: String,
    pub kind: PersonKind,
    /// An agent's runtime, shown as a badge.
    pub runtime: Option<RuntimeView>,
}

/// An agent's runtime: its stored name (`claude`, `codex`, …: the badge's text and CSS class) and how
/// people call it ("Claude Code"), both the agents crate's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeView {
    pub name: String,
    pub label: String,
}

/// People and agents look different everywhere (agents: square avatar with a robot mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonKind {
    User,
    Agent,
    System,
}

/// One `<option>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionView {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// A card on the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueCardView {
    /// `MUS-42`.
    pub key: String,
    pub title: String,
    pub status: String,
    /// `none`, `urgent`, `high`, `medium`, `low`.
    pub priority: String,
    pub assignee: Option<PersonView>,
    pub labels: Vec<String>,
    /// The issue page.
    pub url: String,
    /// POST target of the move form (`status`, `index` fields).
    pub move_url: String,
    /// The state of the latest run, when an agent works on it (`queued`, `running`, `failed`, …).
    pub run_state: Option<String>,
    /// Why its queued run waits ("waiting for a runner with Codex"), shown instead of a bare `queued`.
    pub run_waiting: Option<String>,
    /// Its latest ensemble run in short ("ensemble: 2/3 green, $1.40"), when it has one.
    pub ensemble: Option<String>,
    /// Its latest pull request, when it has one.
    pub pull: Option<CardPullView>,
    /// Its sub-issues' progress and unmet blockers.
    pub plan: CardPlanView,
    /// Its project's key.
    pub project: Option<String>,
}

/// One status column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardColumnView {
    pub status: String,
    pub label: String,
    /// The column's first cards (a page; see `more`).
    pub cards: Vec<IssueCardView>,
    /// How many issues the column holds under the board's filter, shown or not.
    pub total: i64,
    /// The next page of the column, when more cards follow those shown.
    pub more: Option<ColumnMoreView>,
}

/// The "show more" of a column: where its next page is and how many cards follow those shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMoreView {
    /// GET `/w/{slug}/columns/{status}?after=…` with the board's filter: with htmx, the next cards to
    /// append; without, a page of them.
    pub url: String,
    /// How many cards follow the shown ones.
    pub rest: i64,
}

/// `GET /w/{slug}/columns/{status}` without JavaScript: one page of one column.
#[derive(Debug, Clone)]
pub struct ColumnPageView {
    pub nav: Nav,
    /// The board, with the same filter.
    pub board_url: String,
    pub column: BoardColumnView,
}

/// The board's filter bar (a GET form on the board URL with fields `q`, `assignee`, `label`, `priority`,
/// `hidden` = "1" to add blocked and cancelled columns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardFilterView {
    pub q: String,
    pub assignee: Vec<OptionView>,
    pub label: Vec<OptionView>,
    pub priority: Vec<OptionView>,
    /// The workspace's projects ("Any project" first); empty when it has none (no picker shown).
    pub project: Vec<OptionView>,
    pub show_hidden: bool,
    /// Whether any filter is set (to offer "clear").
    pub active: bool,
}

/// The fields of the new-issue and edit-issue forms, as typed (kept on errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssueFormView {
    pub title: String,
    pub body: String,
    pub status: Vec<OptionView>,
    pub priority: Vec<OptionView>,
    /// Values `""` (nobody), `user:<uuid>`, `agent:<uuid>`; agents are labelled as agents.
    pub assignee: Vec<OptionView>,
    /// Comma-separated.
    pub labels: String,
    /// "No project" and the workspace's projects (by key); empty when it has none.
    pub project: Vec<OptionView>,
    pub errors: FormErrors,
    /// Who the description and comment boxes offer to `@mention`.
    pub mentions: Vec<MentionOptionView>,
}

/// A name the `@mention` autocompletion offers: an agent's name or a member's handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionOptionView {
    /// What `@` inserts (`coder`, `ada`).
    pub name: String,
    /// Shown beside it: the member's display name, or the agent's runtime.
    pub label: String,
    pub kind: PersonKind,
}

/// `GET /w/{slug}`.
#[derive(Debug, Clone, Default)]
pub struct BoardView {
    pub nav: Nav,
    pub columns: Vec<BoardColumnView>,
    pub filter: BoardFilterView,
    /// The new-issue form (POST `/w/{slug}/issues`); open when it has errors.
    pub new_issue: IssueFormView,
    /// WebSocket URL path for live updates (`/w/{slug}/live`), with the filter's query string.
    pub live_url: String,
}

/// A comment on the issue page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentView {
    /// The comment's id: its anchor is `comment-<id>`; it is edited at `{issue url}/comments/<id>`.
    pub id: String,
    pub author: PersonView,
    pub body_html: String,
    pub at: DateTime<Utc>,
    /// When its author last edited it (shown as "edited").
    pub edited_at: Option<DateTime<Utc>>,
    /// The viewer wrote it: they may edit it.
    pub can_edit: bool,
    /// The viewer wrote it or is an owner or admin: they may delete it.
    pub can_delete: bool,
}

/// A comment open for editing on the issue page: its text as typed, and what was wrong with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommentEditView {
    pub id: String,
    pub body: String,
    pub errors: FormErrors,
}

/// One line of the activity trail ("Ada moved this from todo to in progress").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityView {
    pub actor: PersonView,
    pub text: String,
    pub at: DateTime<Utc>,
}

/// One entry of the issue page's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadEntryView {
    Comment(CommentView),
    Run(Box<ThreadRunView>),
    /// A status change or another change of the issue, shown as one thin line.
    Change(ActivityView),
}

/// A run as one compact entry of the issue's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRunView {
    pub id: String,
    /// Its run page.
    pub url: String,
    pub agent: Option<PersonView>,
    /// Which run of the issue it is (1 for the first).
    pub number: usize,
    pub attempt: i32,
    pub status: String,
    pub stalled: bool,
    /// What queued it: "assigned", "after Ada Lovelace's comment", "mentioned by reviewer", "retry".
    pub trigger: String,
    /// The comment that queued it (`#comment-<id>`), while that comment exists.
    pub trigger_href: Option<String>,
    /// Queued, claimed or running.
    pub live: bool,
    /// Why a queued run waits, when no runner could take it.
    pub waiting: Option<String>,
    /// "2m 05s" (so far, while it runs); empty before it started.
    pub duration: String,
    /// As in [`RunCountersView::cost`].
    pub cost: String,
    pub cost_title: Option<String>,
    /// "1,234".
    pub tokens: String,
    /// Its summary as sanitised HTML.
    pub summary_html: Option<String>,
    /// Why it did not succeed, when it failed.
    pub failure: Option<FailureView>,
    pub diff_stat: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The reply box under its summary (the latest finished run's, while none is live).
    pub reply: Option<ReplyView>,
}

/// The reply box under a run's summary: a comment like any other (POST `{issue url}/comments`), which
/// continues the agent's work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyView {
    /// What the box starts with (`@name ` for an agent that is not the assignee, so the reply reaches it).
    pub body: String,
    pub placeholder: String,
    pub errors: FormErrors,
}

/// `GET /w/{slug}/issues/{key}`: read view plus the edit form (POST to the same URL) and comment form
/// (POST `{url}/comments`, field `body`).
#[derive(Debug, Clone, Default)]
pub struct IssuePageView {
    pub nav: Nav,
    pub key: String,
    pub url: String,
    pub title: String,
    pub body_html: String,
    /// The description's digest: sent back when a task-list box is ticked, so a description changed
    /// since is noticed.
    pub body_digest: String,
    pub status: String,
    pub status_label: String,
    pub priority: String,
    pub labels: Vec<String>,
    pub assignee: Option<PersonView>,
    pub created_by: Option<PersonView>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub form: IssueFormView,
    /// The conversation, oldest first: comments, runs, status and other changes.
    pub thread: Vec<ThreadEntryView>,
    /// A run is queued or running: the timeline refreshes itself until it ends.
    pub live: bool,
    pub comment_body: String,
    pub comment_errors: FormErrors,
    /// The title and description are open for editing (`?edit=text`, or after a failed save).
    pub edit_text: bool,
    /// The comment open for editing (`?edit_comment=<id>`, or after a failed save).
    pub edit_comment: Option<CommentEditView>,
    /// The viewer may delete the issue (owners, admins and its creator).
    pub can_delete: bool,
    /// The issue's ensemble runs: (label, compare page URL), latest last.
    pub ensemble_runs: Vec<(String, String)>,
    /// The workspace's ensembles: (name, its members and typical cost), for "Run an ensemble".
    pub ensembles: Vec<(String, String)>,
    /// What its agent runs used in all ("2 runs · $0.5000 · 2480 tokens"), with a title when the cost
    /// needs explaining (unpriced); `None` before any run.
    pub run_totals: Option<(String, Option<String>)>,
    /// Each agent's line of work on the issue: its branch and where its last run left it.
    pub lines: Vec<WorkLineView>,
    /// The agent a comment that mentions nobody sets to work (the assigned agent, while the issue takes
    /// replies): the comment box says whom a comment wakes before it is sent.
    pub replies_wake: Option<String>,
    /// Its pull requests, and the button that opens one.
    pub pulls: IssuePullsView,
    /// Its parent, sub-issues and relations.
    pub plan: IssuePlanView,
}

/// One agent's line of work on an issue, for its side panel.
#[derive(Debug, Clone)]
pub struct WorkLineView {
    pub agent: String,
    pub branch: String,
    /// The commit's short id and whole id; `None` until a run of the line has committed.
    pub commit: Option<(String, String)>,
    /// The line's latest run.
    pub run_url: String,
}

/// `GET /w/{slug}/issues/{key}/delete`: what deleting the issue takes with it, before one confirms.
#[derive(Debug, Clone, Default)]
pub struct IssueDeleteView {
    pub nav: Nav,
    pub key: String,
    pub title: String,
    /// The issue page (Cancel); the form POSTs to `{url}/delete`.
    pub url: String,
    pub comments: usize,
    pub runs: usize,
    /// How many of its runs are still queued or running (they are cancelled first).
    pub live_runs: usize,
}

/// A row of the agents list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRowView {
    pub name: String,
    /// The agent's avatar (the same widget as on cards and run pages).
    pub avatar: PersonView,
    /// The runtime as people call it ("Claude Code").
    pub kind_label: String,
    pub model: Option<String>,
    pub url: String,
    pub max_concurrent_runs: i32,
    /// e.g. "$2.00 / 100k tokens" or "no budget".
    pub budget: String,
}

/// `GET /w/{slug}/agents`.
#[derive(Debug, Clone, Default)]
pub struct AgentListView {
    pub nav: Nav,
    pub agents: Vec<AgentRowView>,
    pub can_manage: bool,
}

/// One environment variable row in the agent form (repeated fields `env_key`, `env_value`, and checkbox `env_secret` whose value is the row
/// index; a secret's value is never sent back: `value` is empty and `has_value` says one is stored, and an
/// empty submitted value keeps it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvVarView {
    pub key: String,
    pub value: String,
    pub secret: bool,
    pub has_value: bool,
    /// A secret typed before the form came back with errors, sealed by the server for this person (never
    /// the secret itself): sent back as `env_kept`, so an empty field keeps it.
    pub kept: String,
}

/// `GET /w/{slug}/agents/new` and `GET /w/{slug}/agents/{name}`: the profile form (POST to `action`).
#[derive(Debug, Clone, Default)]
pub struct AgentFormView {
    pub nav: Nav,
    pub is_new: bool,
    pub action: String,
    /// POST here to delete (only when `can_delete`).
    pub delete_url: Option<String>,
    pub can_edit: bool,
    /// Owners and admins: kind, command, extra args, env, base URL and permission mode are editable.
    pub can_manage_runtime: bool,
    pub name: String,
    pub color: String,
    pub kind: Vec<OptionView>,
    pub model: String,
    pub instructions: String,
    pub env: Vec<EnvVarView>,
    /// One argument per line.
    pub extra_args: String,
    pub permission_mode: Vec<OptionView>,
    pub max_concurrent_runs: String,
    pub stall_timeout_secs: String,
    pub max_retries: String,
    pub budget_usd: String,
    pub budget_tokens: String,
    pub command: String,
    pub base_url: String,
    /// "Runs on": runner names separated by commas; empty for any runner.
    pub runners: String,
    /// The egress allow-list, one host pattern per line.
    pub egress_hosts: String,
    /// `allow_list` (its model endpoint, the workspace's default list and `egress_hosts`) or `none`
    /// (its model endpoint only).
    pub network: Vec<OptionView>,
    pub errors: FormErrors,
    /// Set when this agent's runtime is not usable on the server's machine ("Codex is not installed: …").
    pub runtime_warning: Option<String>,
}

/// One ensemble on the Ensembles page, every figure already written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsembleRowView {
    pub name: String,
    /// The member agents' avatars, in the ensemble's order (a deleted one as "Deleted agent").
    pub members: Vec<PersonView>,
    /// The check command; `None`: the workspace's check.
    pub check: Option<String>,
    /// "stopped after 600 s", with a check command.
    pub check_timeout: Option<String>,
    /// "all finish", "first green" or "quorum 2".
    pub early_stop: String,
    pub reviewer: Option<PersonView>,
    /// "$3.00 · 200,000 tokens"; `None`: no budget.
    pub budget: Option<String>,
    /// What one candidate may spend, "$1.00 · 66,667 tokens", when there is a budget.
    pub per_candidate: Option<String>,
    /// Why that much: "equal share" or "50% share".
    pub share: String,
    /// The edit form; `None` for a member, who only reads.
    pub edit_url: Option<String>,
}

/// `GET /w/{slug}/ensembles`: the workspace's ensembles; "New ensemble" for owners and admins.
#[derive(Debug, Clone, Default)]
pub struct EnsembleListView {
    pub nav: Nav,
    pub ensembles: Vec<EnsembleRowView>,
    pub can_manage: bool,
}

/// One agent offered as a member of an ensemble: a checkbox (field `members`, value `name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberChoiceView {
    pub name: String,
    pub avatar: PersonView,
    pub checked: bool,
}

/// `GET /w/{slug}/ensembles/new` and `…/{name}/edit`: the ensemble form (POST to `action`, fields
/// `name`, repeated `members`, `check`, `check_timeout`, `early_stop` with `quorum`, `reviewer`,
/// `budget_usd`, `budget_tokens`, `share`), every value as typed so an error keeps it.
#[derive(Debug, Clone, Default)]
pub struct EnsembleFormView {
    pub nav: Nav,
    pub is_new: bool,
    /// "New ensemble", or the stored name (`name` is what was typed).
    pub title: String,
    pub action: String,
    /// POST here to delete; `None` on the new form.
    pub delete_url: Option<String>,
    pub name: String,
    /// Every agent of the workspace, the members checked.
    pub agents: Vec<MemberChoiceView>,
    pub check: String,
    pub check_timeout: String,
    /// `all`, `first_green`, `quorum`.
    pub early_stop: Vec<OptionView>,
    /// K of "quorum K".
    pub quorum: String,
    /// None, then every agent.
    pub reviewer: Vec<OptionView>,
    pub budget_usd: String,
    pub budget_tokens: String,
    pub share: String,
    pub errors: FormErrors,
}

/// A member row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRowView {
    pub person: PersonView,
    pub email: String,
    pub role: String,
    /// POST `role` here to change the role; POST to `remove_url` to remove.
    pub role_url: String,
    pub remove_url: String,
    pub is_self: bool,
}

/// `GET /w/{slug}/members`: the list and, for owners and admins, the add form (POST `/w/{slug}/members`,
/// fields `email`, `name`, `password`, `role`).
#[derive(Debug, Clone, Default)]
pub struct MembersView {
    pub nav: Nav,
    pub members: Vec<MemberRowView>,
    /// Existing accounts invited and not yet answering (listed for managers only).
    pub invitations: Vec<PendingInvitationView>,
    pub can_manage: bool,
    pub email: String,
    pub name: String,
    pub role: Vec<OptionView>,
    pub errors: FormErrors,
}

/// A pending invitation on the members page; POST `revoke_url` to revoke it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInvitationView {
    pub email: String,
    pub name: String,
    pub role: String,
    pub expires_at: DateTime<Utc>,
    pub revoke_url: String,
}

/// One invitation addressed to the signed-in person: POST `accept_url` or `decline_url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvitationRowView {
    pub workspace_name: String,
    pub role: String,
    pub invited_by: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub accept_url: String,
    pub decline_url: String,
}

/// `GET /invitations`: the workspaces that invited the signed-in person, to join or decline.
#[derive(Debug, Clone, Default)]
pub struct InvitationsView {
    pub csrf: String,
    pub user_name: String,
    pub invitations: Vec<InvitationRowView>,
    /// Back to the person's first workspace, when they have one.
    pub home_url: Option<String>,
}

/// `GET /w/{slug}/settings` (owners and admins): the workspace's git repository, set through POST
/// `/w/{slug}/settings` (field `repo_path`; empty clears it).
#[derive(Debug, Clone, Default)]
pub struct SettingsView {
    pub nav: Nav,
    pub workspace_name: String,
    /// The stored repository, if any.
    pub repo_path: Option<String>,
    /// The form's value (kept as typed after an error).
    pub repo_input: String,
    /// The loop guard's depth limit as shown in (or typed into) the form.
    pub mention_depth_input: String,
    /// The loop guard's per-issue hourly cap as shown in (or typed into) the form.
    pub runs_per_hour_input: String,
    /// The check command ensembles run unless they name their own, as shown in (or typed into) the form.
    pub check_input: String,
    /// The default egress allow-list (one host pattern per line), as shown in (or typed into) the form.
    pub egress_input: String,
    /// The Forge section.
    pub forge: ForgeSectionView,
    /// Set after a successful save.
    pub saved: bool,
    pub errors: FormErrors,
}

/// An API token row (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRowView {
    pub name: String,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked: bool,
    /// POST here to revoke.
    pub revoke_url: String,
}

/// `GET /w/{slug}/tokens`: the signed-in user's tokens and the create form (POST `/w/{slug}/tokens`,
/// field `name`). Right after creation `new_token` holds the secret, shown this once.
#[derive(Debug, Clone, Default)]
pub struct TokensView {
    pub nav: Nav,
    pub tokens: Vec<TokenRowView>,
    pub new_token: Option<String>,
    pub name: String,
    pub errors: FormErrors,
}

/// A runner on the Runners page, fully computed by the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerRowView {
    pub name: String,
    /// Its last heartbeat is at most 30 s old and its token is not revoked.
    pub online: bool,
    /// The server's own runner (any CLI the server's machine has).
    pub embedded: bool,
    pub revoked: bool,
    pub version: String,
    /// "claude 2.1.0", one per detected CLI.
    pub clis: Vec<String>,
    /// "http://127.0.0.1:8080 (qwen, llama3)", one per local model server.
    pub local_models: Vec<String>,
    /// Links to the workspace's runs it holds: (href, label).
    pub live_runs: Vec<(String, String)>,
    pub last_heartbeat_at: DateTime<Utc>,
    /// "12 s ago", "3 min ago".
    pub last_heartbeat_ago: String,
}

/// `GET /w/{slug}/runners`: the runners any member sees; for owners and admins (`can_manage`) the
/// runner tokens and the create form (POST `/w/{slug}/runners/tokens`, field `name`), with a new
/// token's secret in `new_token` right after creation, shown this once.
#[derive(Debug, Clone, Default)]
pub struct RunnersView {
    pub nav: Nav,
    pub runners: Vec<RunnerRowView>,
    pub can_manage: bool,
    pub tokens: Vec<TokenRowView>,
    pub new_token: Option<String>,
    /// The server URL to pass to `muster runner --server`, when known.
    pub server_url: Option<String>,
    pub name: String,
    pub errors: FormErrors,
}

/// `GET /login` (POST `/login`, fields `email`, `password`, `next`).
#[derive(Debug, Clone, Default)]
pub struct LoginView {
    pub email: String,
    pub next: String,
    pub errors: FormErrors,
}

/// `GET /setup?token=…` (POST `/setup`, fields `token`, `workspace_name`, `issue_prefix`, `name`,
/// `email`, `password`).
#[derive(Debug, Clone, Default)]
pub struct SetupView {
    pub token: String,
    pub workspace_name: String,
    pub issue_prefix: String,
    pub name: String,
    pub email: String,
    pub errors: FormErrors,
}

/// A full-page error (404, 403, expired setup link…).
#[derive(Debug, Clone, Default)]
pub struct ErrorPageView {
    pub status: u16,
    pub title: String,
    pub message: String,
    /// Where "back" goes.
    pub back_url: String,
}

/// One agent runtime as detected on this server's machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeRowView {
    /// `claude`, `codex`, `opencode`, `llama`.
    pub kind: String,
    /// "Claude Code", …
    pub label: String,
    /// `found`, `too_old`, `not_installed`, `broken`.
    pub status: String,
    pub path: Option<String>,
    pub version: Option<String>,
    /// Why it is not usable, in plain words.
    pub reason: Option<String>,
    /// How to install or upgrade it (a shell command), when it is missing or too old.
    pub install_hint: Option<String>,
}

/// `GET /w/{slug}/runtimes`: what is installed, with a re-detect button (POST `redetect_url`).
#[derive(Debug, Clone, Default)]
pub struct RuntimesView {
    pub nav: Nav,
    /// How agents run here: sandboxed (with the kernel's Landlock ABI), unsandboxed by the operator's
    /// choice, or refused; one sentence.
    pub sandbox: String,
    /// Whether agents run sandboxed (else the sentence is shown as a warning).
    pub sandboxed: bool,
    pub runtimes: Vec<RuntimeRowView>,
    pub detected_at: Option<DateTime<Utc>>,
    pub redetect_url: String,
    /// Local model servers found (explicit URLs always, default ports when something answered).
    pub model_servers: Vec<ModelServerRowView>,
    /// The loopback ports probed, for the "nothing found" line (e.g. "8080, 11434, 1234, 8000").
    pub probed_ports: String,
    /// llama.cpp / Ollama / llamafile binaries found on `PATH`.
    pub local_binaries: Vec<RuntimeRowView>,
    /// Whether the viewer may re-detect (owners and admins); others see the cached result only.
    pub can_redetect: bool,
    /// Why the page shows the cached result after a re-detect was asked for (asked again too soon).
    pub note: Option<String>,
}

/// One local model server on the Runtimes page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelServerRowView {
    /// The server root URL.
    pub url: String,
    /// `llama.cpp`, `ollama`, `openai`, or empty when unrecognized.
    pub kind: String,
    /// `ready`, `loading`, `unreachable`, `unrecognized`.
    pub status: String,
    pub models: Vec<String>,
    pub version: Option<String>,
    /// Where the URL came from (`MUSTER_LLAMA_URL`, `agent local`, `port 8080 (…)`).
    pub source: String,
    /// e.g. "context 2048 tokens · tools: no".
    pub details: Option<String>,
    pub reason: Option<String>,
}

/// A run's counters: tokens and cost (updated live from `usage` events) and the elapsed time, which
/// `app.js` ticks from `started_at` while `finished_at` is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCountersView {
    /// Display-ready numbers ("12,345").
    pub input_tokens: String,
    pub output_tokens: String,
    /// Cache reads plus writes.
    pub cache_tokens: String,
    /// "$0.0421", "unpriced" (no price known for some tokens) or "$0 · local".
    pub cost: String,
    /// Why the cost reads as it does, when it is not a plain amount (the label's title).
    pub cost_title: Option<String>,
    /// "110.4": generation speed, for local models that report it.
    pub tokens_per_second: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The elapsed time when rendered ("2m 05s"); ticks on in the browser while running.
    pub elapsed: String,
}

/// The head of the run page: what ran, where it is, and the buttons that apply now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunHeaderView {
    /// The run id (stable DOM ids are `run-{id}-…`).
    pub id: String,
    /// The run page.
    pub url: String,
    pub issue_key: String,
    pub issue_title: String,
    pub issue_url: String,
    pub agent: Option<PersonView>,
    pub attempt: i32,
    /// Which run of its issue it is (1 for the first), when known.
    pub number: Option<usize>,
    /// The runner that took it.
    pub runner: Option<String>,
    /// `queued`, `claimed`, `running`, `succeeded`, `failed`, `cancelled`, `timed_out`, `interrupted`.
    pub status: String,
    /// Set while the run is flagged as stalled.
    pub stalled_at: Option<DateTime<Utc>>,
    /// Why it did not succeed: what happened and what to do, with the raw diagnostic.
    pub failure: Option<FailureView>,
    pub exit_code: Option<i32>,
    /// The branch of the run's line of work.
    pub branch: Option<String>,
    /// The commit the run's work became on it, once it ended.
    pub head_commit: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    /// POST here (with `_csrf`) to cancel; only while the run can still be cancelled.
    pub cancel_url: Option<String>,
    /// POST here (with `_csrf`) to queue a new attempt; only for a failed, cancelled, timed-out or
    /// interrupted run.
    pub retry_url: Option<String>,
    /// Why the queued run waits ("waiting for runner gpu-box (offline)"), when no runner can take it.
    pub waiting: Option<String>,
    /// POST here (with `_csrf`) to open a pull request of its work: a succeeded run of a connected
    /// workspace.
    pub open_pull_url: Option<String>,
}

/// What started a run: "assignment", "Ada's comment", "mention by reviewer (chain depth 2)", "retry of
/// run 0195ab12"; and the earlier run of the same agent on the issue that a follow-up continues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOriginView {
    /// The trigger as it reads; empty: not shown.
    pub trigger: String,
    /// The comment (`…/issues/ACM-7#comment-<id>`) or the retried run.
    pub trigger_url: Option<String>,
    /// The run continued: its short id and page.
    pub continues: Option<(String, String)>,
}

/// Why a run did not succeed, explained ("Claude Code's API key was refused by the provider (401)" /
/// "check the agent's ANTHROPIC_API_KEY secret"), with the raw diagnostic for a "details" toggle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailureView {
    /// What happened.
    pub what: String,
    /// What to do about it.
    pub to_do: String,
    /// The agent's settings page, when the fix is there.
    pub settings_url: Option<String>,
    /// The raw diagnostic (the CLI's error, its last output, the exit code), one item per line.
    pub details: String,
}

/// A long text cut for display: `shown` is the start; `full` is the whole text when it was cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LongTextView {
    pub shown: String,
    pub full: Option<String>,
    /// Lines in the whole text.
    pub lines: usize,
}

/// The result of a tool call, shown inside the call's block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolResultView {
    pub output: LongTextView,
    pub is_error: bool,
    /// The exit code when the tool ran a shell command that reported one (shown once, in the call's
    /// block, instead of a second block repeating the output).
    pub exit_code: Option<i32>,
}

/// One entry of a run's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunItemKind {
    /// The CLI started a session.
    Started {
        session_id: String,
        model: Option<String>,
        /// Skills the CLI reported finding.
        skills: Vec<String>,
    },
    /// Assistant text, rendered from markdown and sanitised by the server.
    Text { html: String },
    /// Reasoning, collapsed.
    Thinking { text: String },
    /// A tool call with its result once known. `slot_id` is the DOM id of the result slot, so the
    /// result can be swapped in live.
    ToolCall {
        slot_id: String,
        name: String,
        input: LongTextView,
        result: Option<ToolResultView>,
    },
    /// A tool result whose call is not in the log.
    ToolResult { result: ToolResultView },
    /// A shell command with its exit code.
    Command {
        cmd: String,
        exit_code: Option<i32>,
        output: LongTextView,
    },
    /// A file the agent added, deleted or updated (`change` is `add`, `delete` or `update`).
    FileChange { path: String, change: String },
    /// An error (shown in red).
    Error { message: String },
    /// A line on stderr (dimmed).
    Stderr { line: String },
    /// A line no parser understood.
    Raw { line: String },
    /// The run engine changed the run's state (`stalled`, `running`).
    Status { status: String },
    /// What the agent may reach: the sandbox mode, then one line per allowed path and the ports.
    Sandbox { lines: Vec<String> },
    /// One connection through the egress proxy: allowed or refused, host, port, bytes, why.
    Egress { allowed: bool, line: String },
    /// An ensemble candidate's check (a gate): green when it passed; how it ended (`exit 0`, `timed
    /// out`, why it could not run), its duration, `12/13 passed` when counted, and its output's last
    /// lines (redacted).
    Check {
        ok: bool,
        command: String,
        ending: String,
        duration: Option<String>,
        counts: Option<String>,
        tail: String,
    },
    /// A follow-up run: whether it resumed the previous run's session, or started fresh and why.
    Session { resumed: bool, text: String },
    /// The turn ended; the summary is rendered markdown.
    Finished {
        ok: bool,
        summary_html: Option<String>,
    },
}

/// One timeline entry with its position in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunItemView {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub kind: RunItemKind,
}

/// One line of a unified diff; `kind` is `add`, `del`, `hunk`, `meta` or `ctx`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLineView {
    pub kind: String,
    pub text: String,
}

/// What the run changed: the diff stat and, when recorded, the patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunDiffView {
    pub stat: Option<String>,
    pub lines: Vec<DiffLineView>,
    /// Lines left out of a very long patch.
    pub omitted: usize,
}

/// `GET /w/{slug}/runs/{id}`: the run's header, counters, timeline and diff. While the run is live,
/// `live_url` is the WebSocket (`…/live?after={last_seq}`) that appends what happens next.
#[derive(Debug, Clone, Default)]
pub struct RunPageView {
    pub nav: Nav,
    pub header: RunHeaderView,
    /// What started the run, and the run it continues.
    pub origin: RunOriginView,
    pub counters: RunCountersView,
    pub items: Vec<RunItemView>,
    pub diff: RunDiffView,
    /// The highest event seq rendered (the live socket's cursor).
    pub last_seq: i64,
    pub live_url: Option<String>,
}

/// One inbox item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxItemView {
    pub id: String,
    /// `run_failed`, `run_stalled`, `over_budget`, `run_interrupted`, `awaiting_review`, `mentioned`.
    pub kind: String,
    /// "Run failed", …
    pub kind_label: String,
    pub message: String,
    /// The raw diagnostic of a failed run, for a "details" toggle.
    pub details: Option<String>,
    pub issue_key: Option<String>,
    pub issue_url: Option<String>,
    pub run_url: Option<String>,
    /// The run's diff (work awaiting review).
    pub diff_url: Option<String>,
    /// The comment it is about on the issue page (a mention).
    pub comment_url: Option<String>,
    pub at: DateTime<Utc>,
    pub read: bool,
    /// POST here to mark it read (only while unread).
    pub read_url: Option<String>,
    /// POST here to retry its run (interrupted and failed runs that may be retried).
    pub retry_url: Option<String>,
}

/// `GET /w/{slug}/inbox?show=unread|all`: what needs a person, newest first.
#[derive(Debug, Clone, Default)]
pub struct InboxView {
    pub nav: Nav,
    pub items: Vec<InboxItemView>,
    /// Whether only unread items are listed.
    pub unread_only: bool,
    pub unread_count: i64,
    /// POST here to mark every item read.
    pub read_all_url: String,
    /// Invitations to other workspaces waiting for this person's answer (a banner links to them).
    pub invitations: usize,
}

/// What one push over a run's live socket changes on the run page: timeline entries to append, tool
/// results to put into their calls, and (when they changed) the counters, the header and the diff.
#[derive(Debug, Clone, Default)]
pub struct RunLiveFrame {
    /// The run id, for the DOM ids.
    pub run_id: String,
    /// Appended to the timeline, in order.
    pub items: Vec<RunItemView>,
    /// `(slot_id, result)`: results of calls already on the page.
    pub results: Vec<(String, ToolResultView)>,
    /// Entries already on the page, re-rendered and swapped in place (`id="run-entry-{seq}"`): a local
    /// model's answer block that grew by a streamed delta, a result that became its command.
    pub replaced: Vec<RunItemView>,
    pub counters: Option<RunCountersView>,
    pub header: Option<RunHeaderView>,
    pub diff: Option<RunDiffView>,
    /// The highest seq this frame brings the page to.
    pub last_seq: i64,
}

/// `GET /w/{slug}/skills`: every skill, with import and upload forms.
#[derive(Debug, Clone, Default)]
pub struct SkillListView {
    pub nav: Nav,
    pub skills: Vec<SkillRowView>,
    /// Owners and admins may import from a folder on the server.
    pub can_import_path: bool,
    /// Messages of a failed archive upload, by field: shown in the upload form.
    pub upload_errors: FormErrors,
    /// Messages of a failed server-folder import, by field: shown in the import form.
    pub import_errors: FormErrors,
    /// The folder path as typed, kept after an error.
    pub import_path: String,
}

/// One skill in the list.
#[derive(Debug, Clone, Default)]
pub struct SkillRowView {
    pub slug: String,
    pub description: String,
    /// built_in, imported or written.
    pub source: String,
    pub url: String,
    pub agents: Vec<String>,
}

/// `GET /w/{slug}/skills/{skill}`: one skill, rendered.
#[derive(Debug, Clone, Default)]
pub struct SkillPageView {
    pub nav: Nav,
    pub row: SkillRowView,
    /// The instructions as HTML, already sanitised by the server (ammonia).
    pub safe_html: String,
    /// Supporting files: path and text.
    pub files: Vec<(String, String)>,
    pub content_hash: String,
    pub edit_url: String,
    pub export_url: String,
    /// Present for owners and admins.
    pub delete_url: Option<String>,
}

/// `GET /w/{slug}/skills/new` and `…/{skill}/edit`: the SKILL.md editor with a live preview.
#[derive(Debug, Clone, Default)]
pub struct SkillFormView {
    pub nav: Nav,
    pub is_new: bool,
    pub action: String,
    pub preview_url: String,
    pub skill_md: String,
    pub errors: FormErrors,
}

/// The editor's preview: problems (if any) and the sanitised HTML.
#[derive(Debug, Clone, Default)]
pub struct SkillPreviewView {
    pub problems: Vec<String>,
    pub safe_html: String,
}

/// The skills section of an agent's page: attached skills with switches, and an attach form.
#[derive(Debug, Clone, Default)]
pub struct AgentSkillsView {
    pub csrf: String,
    /// `/w/{slug}/agents/{name}/skills`: POST attaches; `{base}/{skill}/toggle` and `/detach`.
    pub base_url: String,
    pub attached: Vec<AgentSkillRowView>,
    /// Skills not attached yet, for the attach form.
    pub available: Vec<OptionView>,
    pub skills_url: String,
}

/// One attached skill.
#[derive(Debug, Clone, Default)]
pub struct AgentSkillRowView {
    pub slug: String,
    pub description: String,
    pub enabled: bool,
    pub url: String,
}

/// A card's quick menu (`GET /w/{slug}/issues/{key}/menu`): its status and assignee as buttons. The board
/// loads it into one shared popover when a card's menu button is used; without JavaScript it is a page.
#[derive(Debug, Clone, Default)]
pub struct CardMenuView {
    /// For the no-JavaScript page (and the forms' CSRF token).
    pub nav: Nav,
    pub key: String,
    pub title: String,
    /// The issue page.
    pub url: String,
    /// POST `status` (the same target as the card's drag and drop).
    pub move_url: String,
    /// POST `assignee` (`""`, `user:<uuid>` or `agent:<uuid>`).
    pub assign_url: String,
    /// The current status.
    pub status: String,
    /// Nobody, then members, then agents; the current one marked.
    pub assignees: Vec<AssigneeChoiceView>,
}

/// One assignee button of the card menu; `person` is `None` for "Nobody".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssigneeChoiceView {
    pub value: String,
    pub person: Option<PersonView>,
    pub selected: bool,
}

/// `GET /w/{slug}/issues/{key}/ensemble[?number=n]`: an ensemble run's candidates side by side.
#[derive(Debug, Clone)]
pub struct EnsemblePageView {
    pub nav: Nav,
    pub issue_key: String,
    pub issue_title: String,
    pub issue_url: String,
    /// The ensemble's name and run number (`r<n>`).
    pub ensemble: String,
    pub number: i32,
    /// `running`, `reviewing`, `decided`, `chosen`.
    pub status: String,
    /// Whether the page refreshes itself (candidates or the reviewer still at work).
    pub live: bool,
    /// This page's own URL (the refresh reads it).
    pub self_url: String,
    pub early_stop: String,
    pub check: Option<String>,
    pub base: Option<String>,
    /// "$1.40 of $3.00" or "1,020 of 1,000 tokens", and the share of the budget spent (0–1), when
    /// there is a budget.
    pub spent_label: String,
    pub budget_parts: Vec<BudgetPartView>,
    pub stop_reason: Option<String>,
    /// What a single agent typically costs, to compare with.
    pub single_agent: Option<String>,
    pub review: ReviewStateView,
    pub recommendation: Option<RecommendationView>,
    pub candidates: Vec<CandidateColumnView>,
    /// Where Choose posts; `None` once chosen (or while a candidate is still at work).
    pub choose_url: Option<String>,
    pub can_merge: bool,
    pub merged_commit: Option<String>,
    /// Other ensemble runs of the issue: (label, url).
    pub others: Vec<(String, String)>,
    pub errors: FormErrors,
}

/// One slice of the budget bar.
#[derive(Debug, Clone)]
pub struct BudgetPartView {
    pub agent: String,
    /// The share of the bar (0–1) this candidate's spend takes.
    pub fraction: f64,
    pub label: String,
    /// `#rrggbb`, the same as the candidate's column (its agent's avatar colour where it can).
    pub color: String,
}

/// How the blind review went.
#[derive(Debug, Clone, Default)]
pub struct ReviewStateView {
    /// `none`, `pending`, `verdict`, `invalid`, `no_answer`.
    pub state: String,
    pub message: Option<String>,
    pub best_label: Option<String>,
    pub review_run_url: Option<String>,
}

/// The recommended candidate and why.
#[derive(Debug, Clone)]
pub struct RecommendationView {
    pub agent: String,
    pub why: String,
    /// `check`, `review` or `cost` (see the service's `Recommendation`).
    pub decided_by: String,
}

/// One candidate's column.
#[derive(Debug, Clone)]
pub struct CandidateColumnView {
    pub agent: String,
    pub runtime: String,
    /// `#rrggbb`: its agent's avatar colour, parted from a look-alike beside it.
    pub color: String,
    pub status: String,
    pub failure: Option<String>,
    pub run_url: String,
    pub branch: Option<String>,
    /// `pass`, `fail`, `timed_out`, `error`, `none` (not checked).
    pub gate: String,
    pub gate_label: String,
    pub check_tail: Option<String>,
    pub diff_stat: Option<String>,
    pub files: Vec<DiffFileView>,
    pub tokens: String,
    pub cost: String,
    pub duration: Option<String>,
    pub review_label: Option<String>,
    pub review_score: Option<i64>,
    pub review_reasons: Vec<String>,
    /// The last lines the agent logged.
    pub log_tail: Vec<String>,
    pub recommended: bool,
    pub chosen: bool,
    /// The value Choose posts for this candidate.
    pub choose_value: String,
}

/// One file of a candidate's diff.
#[derive(Debug, Clone)]
pub struct DiffFileView {
    pub path: String,
    pub patch: String,
}
