//! The Settings page's Forge section (owners and admins): connect (`POST …/settings/forge`), then the
//! connection's settings (`POST …/settings/forge/{id}`), a test of its token (`…/{id}/test`) and its
//! removal (`…/{id}/remove`). The webhook's URL and secret are shown once, on the answer to connecting.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::post;
use muster_web::views::{
    ForgeAccessView, ForgeConnectionView, ForgeFormView, ForgeSectionView, FormErrors, OptionView,
    WebhookShownView,
};

use super::super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{DEFAULT_MAX_ROUNDS, ForgeConnection, ForgeKind, OnClose};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::forges::{self as svc, ForgeInput};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/settings/forge", post(connect))
        .route("/w/{slug}/settings/forge/{id}", post(update))
        .route("/w/{slug}/settings/forge/{id}/test", post(test))
        .route("/w/{slug}/settings/forge/{id}/remove", post(remove))
}

/// A forge form as sent (the settings form sends only its last three fields).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ForgeForm {
    kind: String,
    api_url: String,
    repo: String,
    token: String,
    webhook_secret: String,
    /// A checkbox: sent only when ticked.
    auto_open: Option<String>,
    max_rounds: String,
    on_close: String,
}

impl ForgeForm {
    /// The settings part as the service reads it.
    fn settings_input(&self) -> ForgeInput {
        ForgeInput {
            auto_open: Some(self.auto_open.is_some()),
            // A number that does not parse is out of range: the service's message names the range.
            max_rounds: match self.max_rounds.trim() {
                "" => None,
                typed => Some(typed.parse().unwrap_or(0)),
            },
            on_close: Some(self.on_close.clone()).filter(|s| !s.is_empty()),
            ..ForgeInput::default()
        }
    }

    /// The whole connect form as the service reads it (empty fields are absent).
    fn connect_input(&self) -> ForgeInput {
        let given = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        ForgeInput {
            kind: given(&self.kind),
            api_url: given(&self.api_url),
            repo: given(&self.repo),
            token: given(&self.token),
            webhook_secret: given(&self.webhook_secret),
            ..self.settings_input()
        }
    }

    /// The form filled as typed (never the token or the secret).
    fn view(&self) -> ForgeFormView {
        form_view(
            &self.kind,
            &self.api_url,
            &self.repo,
            self.auto_open.is_some(),
            &self.max_rounds,
            &self.on_close,
        )
    }
}

fn form_view(
    kind: &str,
    api_url: &str,
    repo: &str,
    auto_open: bool,
    max_rounds: &str,
    on_close: &str,
) -> ForgeFormView {
    ForgeFormView {
        kind: ForgeKind::ALL
            .iter()
            .map(|k| OptionView {
                value: k.as_str().to_owned(),
                label: k.label().to_owned(),
                selected: k.as_str() == kind,
            })
            .collect(),
        api_url: api_url.to_owned(),
        repo: repo.to_owned(),
        auto_open,
        max_rounds: max_rounds.to_owned(),
        on_close: [
            (OnClose::Todo, "back to todo"),
            (OnClose::Cancelled, "cancelled"),
        ]
        .iter()
        .map(|(v, label)| OptionView {
            value: v.as_str().to_owned(),
            label: (*label).to_owned(),
            selected: v.as_str() == on_close,
        })
        .collect(),
    }
}

/// The section as stored: the connection and its settings, or an empty connect form.
pub(super) async fn section(
    state: &AppState,
    member: &WsMember,
) -> crate::http::Result<ForgeSectionView> {
    let slug = member.caller.ws.slug.as_str();
    let conn = super::super::pulls::connection(state, member.caller.ws.id).await?;
    Ok(ForgeSectionView {
        connect_url: format!("/w/{slug}/settings/forge"),
        form: match &conn {
            Some(c) => form_view(
                c.kind.as_str(),
                &c.api_url,
                &c.repo,
                c.auto_open,
                &c.max_rounds.to_string(),
                c.on_close.as_str(),
            ),
            None => form_view(
                "github",
                "",
                "",
                false,
                &DEFAULT_MAX_ROUNDS.to_string(),
                "todo",
            ),
        },
        connection: conn.as_ref().map(|c| connection_view(slug, c)),
        ..ForgeSectionView::default()
    })
}

fn connection_view(slug: &str, c: &ForgeConnection) -> ForgeConnectionView {
    let url = format!("/w/{slug}/settings/forge/{}", c.id);
    ForgeConnectionView {
        kind_label: c.kind.label().to_owned(),
        api_url: c.api_url.clone(),
        repo: c.repo.clone(),
        webhook_path: svc::webhook_path(c),
        test_url: format!("{url}/test"),
        remove_url: format!("{url}/remove"),
        update_url: url,
    }
}

/// The settings page with `forge` as its Forge section.
fn page(member: &WsMember, forge: ForgeSectionView) -> maud::Markup {
    let mut v = super::view(member);
    v.forge = forge;
    muster_web::pages::settings(&v)
}

/// A refusal the section shows beside its field (a token the forge refused), or the page's error.
fn section_errors(e: crate::service::Error) -> Result<FormErrors, super::super::PageError> {
    match e {
        crate::service::Error::Refused { field, message } => {
            Ok(FormErrors::from([(field.to_owned(), vec![message])]))
        }
        other => form_errors(other),
    }
}

/// Where the forge posts: this server's public URL, else the host the request came to.
fn webhook_url(state: &AppState, headers: &HeaderMap, path: &str) -> String {
    let base = state.config.public_url.clone().unwrap_or_else(|| {
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("127.0.0.1");
        format!("http://{host}")
    });
    format!("{}{path}", base.trim_end_matches('/'))
}

/// Where a person adds the webhook on each forge.
fn where_to(kind: ForgeKind) -> &'static str {
    match kind {
        ForgeKind::Github => "the repository's Settings → Webhooks (content type application/json)",
        ForgeKind::Gitlab => {
            "the project's Settings → Webhooks (the secret goes in \"Secret token\")"
        }
        ForgeKind::Gitea => {
            "the repository's Settings → Webhooks (type Gitea or Forgejo, POST, application/json)"
        }
    }
}

async fn connect(
    State(state): State<AppState>,
    member: WsMember,
    headers: HeaderMap,
    Form(form): Form<ForgeForm>,
) -> PageResult {
    member.caller.require_manager()?;
    match svc::connect(&state, &member.caller, &form.connect_input()).await {
        Ok(made) => {
            let mut s = section(&state, &member).await?;
            s.webhook = Some(WebhookShownView {
                url: webhook_url(&state, &headers, &made.webhook_path),
                secret: made.webhook_secret,
                where_to: where_to(made.connection.kind).to_owned(),
            });
            s.access = Some(access_view(&made.access));
            Ok(page(&member, s).into_response())
        }
        Err(e) => {
            let mut s = section(&state, &member).await?;
            s.errors = section_errors(e)?;
            s.form = form.view();
            Ok(invalid(page(&member, s)))
        }
    }
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    Form(form): Form<ForgeForm>,
) -> PageResult {
    let id = id.parse().map_err(|_| crate::http::Error::NotFound)?;
    match svc::update(&state, &member.caller, id, &form.settings_input()).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/settings?forge_saved=1#forge",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let mut s = section(&state, &member).await?;
            s.errors = section_errors(e)?;
            let kind = s
                .form
                .kind
                .iter()
                .find(|o| o.selected)
                .map(|o| o.value.clone());
            s.form = ForgeForm {
                kind: kind.unwrap_or_default(),
                api_url: s.form.api_url.clone(),
                repo: s.form.repo.clone(),
                ..form
            }
            .view();
            Ok(invalid(page(&member, s)))
        }
    }
}

fn access_view(a: &crate::forge::Access) -> ForgeAccessView {
    ForgeAccessView {
        abilities: [
            ("push branches", a.can_push),
            ("open pull requests", a.can_open_prs),
            ("read checks", a.can_read_checks),
            ("comment", a.can_comment),
        ]
        .into_iter()
        .map(|(what, can)| (what.to_owned(), can))
        .collect(),
        notes: a.notes.clone(),
    }
}

async fn test(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let id = id.parse().map_err(|_| crate::http::Error::NotFound)?;
    let mut s = section(&state, &member).await?;
    match svc::test(&state, &member.caller, id).await {
        Ok(access) => {
            s.access = Some(access_view(&access));
            Ok(page(&member, s).into_response())
        }
        Err(e) => {
            s.errors = section_errors(e)?;
            Ok(invalid(page(&member, s)))
        }
    }
}

async fn remove(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let id = id.parse().map_err(|_| crate::http::Error::NotFound)?;
    svc::remove(&state, &member.caller, id).await?;
    Ok(see_other(&format!(
        "/w/{}/settings#forge",
        member.caller.ws.slug
    )))
}
