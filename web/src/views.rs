//! View structs: everything a page needs, fully computed by the server. Templates only lay them out.
//!
//! Field values are display-ready strings (`status` is the stored name like `in_progress`, `status_label`
//! the human text). Markdown arrives as `*_html`, already rendered and sanitised by the server: the only
//! strings templates may emit unescaped.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

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
}

/// Which top-level page is showing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NavItem {
    #[default]
    Board,
    Agents,
    Members,
    Tokens,
    Runtimes,
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
}

/// One status column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardColumnView {
    pub status: String,
    pub label: String,
    pub cards: Vec<IssueCardView>,
}

/// The board's filter bar (a GET form on the board URL with fields `q`, `assignee`, `label`, `priority`,
/// `hidden` = "1" to add blocked and cancelled columns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardFilterView {
    pub q: String,
    pub assignee: Vec<OptionView>,
    pub label: Vec<OptionView>,
    pub priority: Vec<OptionView>,
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
    pub errors: FormErrors,
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
    pub author: PersonView,
    pub body_html: String,
    pub at: DateTime<Utc>,
}

/// One line of the activity trail ("Ada moved this from todo to in progress").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityView {
    pub actor: PersonView,
    pub text: String,
    pub at: DateTime<Utc>,
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
    pub status: String,
    pub status_label: String,
    pub priority: String,
    pub labels: Vec<String>,
    pub assignee: Option<PersonView>,
    pub created_by: Option<PersonView>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub form: IssueFormView,
    pub comments: Vec<CommentView>,
    pub activity: Vec<ActivityView>,
    pub comment_body: String,
    pub comment_errors: FormErrors,
}

/// A row of the agents list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRowView {
    pub name: String,
    pub color: String,
    /// `claude`, `codex`, `opencode`, `llama`, `custom`.
    pub kind: String,
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
    pub errors: FormErrors,
    /// Set when this agent's runtime is not usable on the server's machine ("Codex is not installed: …").
    pub runtime_warning: Option<String>,
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
    pub can_manage: bool,
    pub email: String,
    pub name: String,
    pub role: Vec<OptionView>,
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
    pub runtimes: Vec<RuntimeRowView>,
    pub detected_at: Option<DateTime<Utc>>,
    pub redetect_url: String,
}
