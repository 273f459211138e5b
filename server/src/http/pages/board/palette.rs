//! `GET /w/{slug}/palette?q=…`: what the command palette offers, as JSON for `app.js`: the issues that
//! match `q` (the exact key first, then keys it begins, titles and bodies), the people and agents one
//! can assign (with their avatar, rendered by the one avatar widget), the statuses and the pages.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use maud::Render;
use muster_web::partials::widgets::Avatar;
use serde::{Deserialize, Serialize};

use super::super::PageResult;
use super::super::views::{People, status_label};
use crate::domain::{Actor, IssueFilter, IssueKey, IssueStatus};
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
    let mut issues = Vec::new();
    if let Ok(key) = IssueKey::parse(q) {
        match state.store.get_issue(caller.ws.id, &key).await {
            Ok(issue) => issues.push(issue),
            Err(crate::store::Error::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let filter = IssueFilter {
        text: Some(q.to_owned()),
        limit: Some(MAX_ISSUES as i64 + 1),
        ..IssueFilter::default()
    };
    for issue in state.store.list_issues(caller.ws.id, &filter).await? {
        if issues.len() < MAX_ISSUES && !issues.iter().any(|i| i.id == issue.id) {
            issues.push(issue);
        }
    }
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
        issues: issues
            .iter()
            .map(|i| PaletteIssue {
                key: i.key.to_string(),
                title: i.title.as_str().to_owned(),
                status: i.status.to_string(),
                status_label: status_label(i.status).to_owned(),
                url: format!("{base}/issues/{}", i.key),
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
