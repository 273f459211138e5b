//! Views of the pull-request loop: an issue's pull requests (side panel and board badge) and the
//! Settings page's Forge section.

use super::{FormErrors, OptionView};

/// One check on a pull request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrCheckView {
    pub name: String,
    /// `pending`, `success` or `failure` (also its CSS class).
    pub state: String,
    /// Where the check is read on the forge.
    pub url: Option<String>,
}

/// One reviewer's latest verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrReviewView {
    pub author: String,
    /// `approved`, `changes_requested` or `commented` (its CSS class).
    pub verdict: String,
    /// The verdict as it reads ("changes requested").
    pub verdict_label: String,
}

/// A pull request on its issue's side panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullView {
    pub number: i64,
    /// Its page on the forge.
    pub url: String,
    /// `draft`, `open`, `merged` or `closed` (its CSS class).
    pub state: String,
    /// "Draft", "Open", "Merged", "Closed".
    pub state_label: String,
    /// "yes", "no" or "unknown".
    pub mergeable: String,
    pub checks: Vec<PrCheckView>,
    pub reviews: Vec<PrReviewView>,
    /// "round 1 of 3": automatic rounds had, of the connection's limit.
    pub rounds: String,
    /// The number of the pull request that took the work after this one.
    pub superseded_by: Option<i64>,
}

/// The issue page's pull-request panel (`#issue-pulls`), also pushed alone over its socket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssuePullsView {
    /// Newest first.
    pub pulls: Vec<PullView>,
    /// POST here (with `_csrf`) to open one: a member, a connected workspace, no open one yet.
    pub open_url: Option<String>,
    /// Why opening one failed.
    pub errors: FormErrors,
    pub csrf: String,
    /// The panel's WebSocket (`ws-connect`), when the workspace has a connection or the issue pull requests.
    pub live_url: Option<String>,
}

/// A board card's pull-request badge: its latest pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardPullView {
    pub number: i64,
    /// `draft`, `open`, `merged` or `closed` (its CSS class).
    pub state: String,
}

/// The values of a forge form, as stored or as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgeFormView {
    pub kind: Vec<OptionView>,
    pub api_url: String,
    pub repo: String,
    pub auto_open: bool,
    pub max_rounds: String,
    pub on_close: Vec<OptionView>,
}

/// What a connection's token can do, as its forge answered a test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgeAccessView {
    /// (what, whether it may): "push branches", "open pull requests", "read checks", "comment".
    pub abilities: Vec<(String, bool)>,
    pub notes: Vec<String>,
}

/// A workspace's forge connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgeConnectionView {
    /// "GitHub".
    pub kind_label: String,
    pub api_url: String,
    pub repo: String,
    /// `/hooks/github/<id>`.
    pub webhook_path: String,
    /// POST here to change the settings.
    pub update_url: String,
    /// POST here to test the token.
    pub test_url: String,
    /// POST here to remove it.
    pub remove_url: String,
}

/// The webhook a forge must be given, shown once right after connecting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookShownView {
    /// The whole URL (this server's public URL or the request's host, and the connection's path).
    pub url: String,
    pub secret: String,
    /// What the forge calls the place ("Settings → Webhooks").
    pub where_to: String,
}

/// The Settings page's Forge section (owners and admins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForgeSectionView {
    /// POST here to connect.
    pub connect_url: String,
    pub connection: Option<ForgeConnectionView>,
    /// The connect form, or the connection's settings form.
    pub form: ForgeFormView,
    /// Set once, right after connecting.
    pub webhook: Option<WebhookShownView>,
    /// The answer of "Test connection".
    pub access: Option<ForgeAccessView>,
    /// Set after the settings were saved.
    pub saved: bool,
    pub errors: FormErrors,
}
