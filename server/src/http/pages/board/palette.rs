//! `GET /w/{slug}/palette?q=…`: what the command palette offers, as JSON for `app.js`: the issues that
//! full-text search finds for `q` (the exact key first, then keys it begins, titles, bodies and
//! comments; the first issues of the board without a query), the people and agents one
//! can assign (with their avatar, rendered by the one avatar widget), the statuses and the pages.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use maud::Render;
use muster_web::partials::widgets::Avatar;
use serde::{Deserialize, Serialize};

use super::super::PageResult;
use super::super::views::{People, status_label};
use crate::domain::{Actor, Issue, IssueFilter, IssueStatus, MatchedIn, SearchQuery, WorkspaceId};
use crate::http::extract::{AppQuery, WsMember};
use crate::state::AppState;

/// How many issues one answer lists: the palette shows a short list and narrows as one types.
const MAX_ISSUES: usize = 20;

#[derive(Debug, Deserialize)]
pub(super) struct PaletteQuery {
    #[serde(default)]
    q: String,
}

#[derive(Serialize)]
struct Palette {
    issues: Vec<PaletteIssue>,
    people: Vec<PalettePerson>,
    statuses: Vec<Choice>,
    pages: Vec<Choice>,
}

#[derive(Serialize)]
struct PaletteIssue {
    key: String,
    title: String,
    status: String,
    status_label: String,
    url: String,
    /// Where the search matched (`key`, `title`, `body`, `comment`); absent with no query.
    #[serde(skip_serializing_if = "Option::is_none")]
    matched_in: Option<&'static str>,
    /// What matched, for a body or comment match.
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<String>,
}

#[derive(Serialize)]
struct PalettePerson {
    /// What the assign form takes: `user:<id>` or `agent:<id>`.
    value: String,
    name: String,
    /// `user` or `agent`.
    kind: &'static str,
    /// The avatar's HTML (escaped by maud; our own markup).
    avatar: String,
}

#[derive(Serialize)]
struct Choice {
    value: String,
    label: String,
}

pub(super) async fn show(
    State(state): State<AppState>,
    member: WsMember,
    AppQuery(query): AppQuery<PaletteQuery>,
) -> PageResult {
    let caller = &member.caller;
    let q = query.q.trim();
    let hits = palette_issues(&state, caller.ws.id, q).await?;
    let base = format!("/w/{}", caller.ws.slug);
    let people = People::load(&state, caller).await?;
    let person = |value: String, actor: Actor, kind: &'static str| {
        let view = people.person(actor);
        PalettePerson {
            value,
            name: view.name.clone(),
            kind,
            avatar: Avatar(&view).render().into_string(),
        }
    };
    let mut everyone: Vec<PalettePerson> = people
        .members
        .iter()
        .map(|m| {
            person(
                format!("user:{}", m.user.id),
                Actor::User(m.user.id),
                "user",
            )
        })
        .collect();
    everyone.extend(
        people
            .agents
            .iter()
            .map(|a| person(format!("agent:{}", a.id), Actor::Agent(a.id), "agent")),
    );
    let mut pages = vec![
        ("Board", base.clone()),
        ("Inbox", format!("{base}/inbox")),
        ("Agents", format!("{base}/agents")),
        ("Skills", format!("{base}/skills")),
        ("Ensembles", format!("{base}/ensembles")),
        ("Members", format!("{base}/members")),
        ("Runtimes", format!("{base}/runtimes")),
        ("API tokens", format!("{base}/tokens")),
    ];
    if caller.role.can_manage() {
        pages.push(("Settings", format!("{base}/settings")));
    }
    let palette = Palette {
        issues: hits
            .into_iter()
            .map(|(i, matched)| PaletteIssue {
                key: i.key.to_string(),
                title: i.title.as_str().to_owned(),
                status: i.status.to_string(),
                status_label: status_label(i.status).to_owned(),
                url: format!("{base}/issues/{}", i.key),
                matched_in: matched.as_ref().map(|(m, _)| m.as_str()),
                snippet: matched.map(|(_, s)| s),
            })
            .collect(),
        people: everyone,
        statuses: IssueStatus::ALL
            .iter()
            .map(|s| Choice {
                value: s.to_string(),
                label: status_label(*s).to_owned(),
            })
            .collect(),
        pages: pages
            .into_iter()
            .map(|(label, url)| Choice {
                value: url,
                label: label.to_owned(),
            })
            .collect(),
    };
    Ok(Json(palette).into_response())
}

/// The issues to offer for `q`: search hits with where they matched (and what, for a body or a comment),
/// or without a query (or with one that has no word) the board's first issues.
async fn palette_issues(
    state: &AppState,
    ws: WorkspaceId,
    q: &str,
) -> crate::store::Result<Vec<(Issue, Option<(MatchedIn, String)>)>> {
    if let Ok(query) = SearchQuery::parse(q, Some(MAX_ISSUES as i64)) {
        let hits = state.store.search_issues(ws, &query).await?;
        return Ok(hits
            .into_iter()
            .map(|h| (h.issue, Some((h.matched_in, h.snippet))))
            .collect());
    }
    let filter = IssueFilter {
        limit: Some(MAX_ISSUES as i64),
        ..IssueFilter::default()
    };
    let issues = state.store.list_issues(ws, &filter).await?;
    Ok(issues.into_iter().map(|i| (i, None)).collect())
}
