//! The issue list page: `GET /w/{slug}/list` (filter, sort, grouping and paging all in the query
//! string, so a URL is a shareable view), its batch form (`POST /w/{slug}/list/batch`, the same
//! use-case as `POST /api/v1/issues/batch`) and saved views (`POST /w/{slug}/list/views`,
//! `POST /w/{slug}/list/views/{name}/delete`).

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    BatchBarView, FormErrors, ListColumnView, ListFilterView, ListGroupView, ListRowView, ListView,
    NavItem, OptionView, SavedViewLinkView,
};
use serde::Deserialize;

use super::inbox::nav_with_inbox;
use super::views::{People, priority_options, status_label, status_options};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::list::{GroupKey, IssueGrouping, IssueOrder, IssueSort, ListCursor, SortDir};
use crate::domain::{Issue, IssueFilter, IssueId};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::lists::{self as svc, BatchInput, BatchSet, ListParams, ViewInput};
use crate::state::AppState;

/// Rows a page shows before its "Load more".
pub(crate) const LIST_PAGE: i64 = 50;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/list", get(show))
        .route("/w/{slug}/list/batch", post(batch))
        .route("/w/{slug}/list/views", post(save_view))
        .route("/w/{slug}/list/views/{name}/delete", post(delete_view))
}

/// The list's query string: its parameters and where the page starts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct ListQuery {
    #[serde(flatten)]
    params: ListParams,
    after: String,
}

/// What a re-render keeps from a refused form.
#[derive(Debug, Default)]
struct Kept {
    errors: FormErrors,
    selected: Vec<String>,
    confirm_delete: Vec<String>,
    save_name: String,
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Query(query): Query<ListQuery>,
) -> PageResult {
    let view = list_view(
        &state,
        &member,
        &query.params,
        &query.after,
        Kept::default(),
    )
    .await?;
    Ok(muster_web::pages::list(&view).into_response())
}

/// The column headers: sortable ones link to the list sorted by them (flipped when already).
fn columns(base: &str, params: &ListParams, order: &IssueOrder) -> Vec<ListColumnView> {
    let column = |name: &str, label: &str, sort: Option<IssueSort>| {
        let Some(sort) = sort else {
            return ListColumnView {
                name: name.into(),
                label: label.into(),
                ..ListColumnView::default()
            };
        };
        let current = order.sort == sort;
        let dir = match (current, order.dir) {
            (true, SortDir::Asc) => SortDir::Desc,
            (true, SortDir::Desc) => SortDir::Asc,
            (false, _) => sort.natural_dir(),
        };
        let next = ListParams {
            sort: sort.to_string(),
            dir: dir.to_string(),
            ..params.clone()
        };
        ListColumnView {
            name: name.into(),
            label: label.into(),
            url: format!("{base}?{}", next.query_string()),
            sorted: current.then(|| order.dir.to_string()),
        }
    };
    vec![
        column("key", "Key", Some(IssueSort::Key)),
        column("title", "Title", Some(IssueSort::Title)),
        column("status", "Status", Some(IssueSort::Status)),
        column("priority", "Priority", Some(IssueSort::Priority)),
        column("assignee", "Assignee", None),
        column("updated", "Updated", Some(IssueSort::Updated)),
    ]
}

fn filter_view(
    params: &ListParams,
    order: &IssueOrder,
    people: &People,
    labels: &[String],
) -> ListFilterView {
    let pick = |value: &str, label: &str, current: &str| OptionView {
        value: value.into(),
        label: label.into(),
        selected: value == current,
    };
    let with_any = |any: &str, current: &str, mut rest: Vec<OptionView>| {
        let mut out = vec![pick("", any, current)];
        for o in &mut rest {
            o.selected = o.value == current;
        }
        out.extend(rest);
        out
    };
    let mut assignee = people.assignee_options(&params.assignee);
    assignee[0].label = "Anyone".into();
    let group = IssueGrouping::ALL
        .iter()
        .map(|g| {
            let label = match g {
                IssueGrouping::None => "No grouping",
                IssueGrouping::Status => "Status",
                IssueGrouping::Assignee => "Assignee",
                IssueGrouping::Priority => "Priority",
                IssueGrouping::Parent => "Parent",
                IssueGrouping::Project => "Project",
            };
            pick(g.as_str(), label, order.group.as_str())
        })
        .collect();
    ListFilterView {
        q: params.q.clone(),
        status: with_any("Any status", &params.status, status_options("")),
        assignee,
        label: with_any(
            "Any label",
            &params.label,
            labels.iter().map(|l| pick(l, l, "")).collect(),
        ),
        priority: with_any("Any priority", &params.priority, priority_options("")),
        project: {
            let mut p = people.project_options(&params.project);
            if let Some(none) = p.first_mut() {
                none.label = "Any project".into();
            }
            p
        },
        group,
        sort: order.sort.to_string(),
        dir: order.dir.to_string(),
        active: params.filtered(),
    }
}

/// A group's header text.
fn group_label(key: GroupKey, people: &People, parents: &HashMap<IssueId, Issue>) -> String {
    match key {
        GroupKey::All => String::new(),
        GroupKey::Status(s) => status_label(s).to_owned(),
        GroupKey::Priority(p) => match p {
            crate::domain::Priority::None => "No priority".to_owned(),
            p => {
                let s = p.as_str();
                format!("{}{}", s[..1].to_uppercase(), &s[1..])
            }
        },
        GroupKey::Assignee(None) => "Nobody".to_owned(),
        GroupKey::Assignee(Some(a)) => people.assignee(Some(a)).map(|p| p.name).unwrap_or_default(),
        GroupKey::Parent(None) => "No parent".to_owned(),
        GroupKey::Project(None) => "No project".to_owned(),
        GroupKey::Project(Some(id)) => people.projects.iter().find(|p| p.0 == id).map_or_else(
            || "Deleted project".to_owned(),
            |p| format!("{} · {}", p.1, p.2),
        ),
        GroupKey::Parent(Some(id)) => parents.get(&id).map_or_else(
            || "Deleted parent".to_owned(),
            |p| format!("{} {}", p.key, p.title.as_str()),
        ),
    }
}

async fn list_view(
    state: &AppState,
    member: &WsMember,
    params: &ListParams,
    after: &str,
    mut kept: Kept,
) -> std::result::Result<ListView, super::PageError> {
    let caller = &member.caller;
    let slug = caller.ws.slug.to_string();
    let base = format!("/w/{slug}/list");
    let people = People::load(state, caller).await?;
    let order = match params.order() {
        Ok(order) => order,
        Err(e) => {
            kept.errors.extend(form_errors(e)?);
            IssueOrder::default()
        }
    };
    let filter = match params.filter(state, caller).await {
        Ok(filter) => filter,
        Err(e) => {
            kept.errors.extend(form_errors(e)?);
            IssueFilter::default()
        }
    };
    let cursor = match after.trim() {
        "" => None,
        raw => match ListCursor::parse(raw, &order) {
            Ok(c) => Some(c),
            Err(e) => {
                kept.errors
                    .entry(e.field.to_owned())
                    .or_default()
                    .push(e.message);
                None
            }
        },
    };
    let mut issues = state
        .store
        .list_issue_page(
            caller.ws.id,
            &filter,
            &order,
            cursor.as_ref(),
            LIST_PAGE + 1,
        )
        .await?;
    let more = issues.len() > LIST_PAGE as usize;
    issues.truncate(LIST_PAGE as usize);
    let counts: Vec<(GroupKey, i64)> = state
        .store
        .count_issue_groups(caller.ws.id, &filter, order.group)
        .await?
        .into_iter()
        .collect();
    let total = if order.group == IssueGrouping::None {
        counts.iter().map(|(_, n)| n).sum()
    } else {
        state
            .store
            .count_issue_groups(caller.ws.id, &filter, IssueGrouping::None)
            .await?
            .iter()
            .map(|(_, n)| n)
            .sum()
    };
    // The parents the page names, read once each.
    let mut parents: HashMap<IssueId, Issue> = HashMap::new();
    for id in issues.iter().filter_map(|i| i.parent) {
        if let std::collections::hash_map::Entry::Vacant(slot) = parents.entry(id)
            && let Ok(p) = state.store.get_issue_by_id(id).await
        {
            slot.insert(p);
        }
    }
    let query = params.query_string();
    let self_url = if query.is_empty() {
        base.clone()
    } else {
        format!("{base}?{query}")
    };
    let mut groups: Vec<ListGroupView> = Vec::new();
    let mut last: Option<GroupKey> = None;
    for issue in &issues {
        let key = order.group.key_of(issue);
        if last != Some(key) {
            let continued = groups.is_empty()
                && cursor.as_ref().is_some_and(|c| c.group == key.value())
                && order.group != IssueGrouping::None;
            groups.push(ListGroupView {
                label: group_label(key, &people, &parents),
                count: counts
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or(0, |(_, n)| *n),
                continued,
                rows: Vec::new(),
            });
            last = Some(key);
        }
        let row = row(&slug, issue, &people, &parents, &kept.selected);
        if let Some(g) = groups.last_mut() {
            g.rows.push(row);
        }
    }
    let more_url = more.then(|| issues.last()).flatten().map(|last| {
        let cursor = ListCursor::after(&order, last).to_string();
        let after = serde_urlencoded::to_string([("after", cursor.as_str())]).unwrap_or_default();
        if query.is_empty() {
            format!("{base}?{after}")
        } else {
            format!("{base}?{query}&{after}")
        }
    });
    let labels: Vec<String> = state
        .store
        .list_issue_labels(caller.ws.id)
        .await?
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
    let views = svc::views(state, caller)
        .await?
        .into_iter()
        .map(|v| SavedViewLinkView {
            url: format!("{base}?{}", v.query),
            current: v.query == query,
            delete_url: format!("{base}/views/{}/delete", urlencoding_path(v.name.as_str())),
            name: v.name.as_str().to_owned(),
        })
        .collect();
    let mut assignee = vec![
        OptionView {
            value: String::new(),
            label: "Assignee…".into(),
            selected: true,
        },
        OptionView {
            value: "none".into(),
            label: "Nobody".into(),
            selected: false,
        },
    ];
    assignee.extend(people.assignee_options("-").into_iter().skip(1));
    let leave = |label: &str, mut rest: Vec<OptionView>| {
        let mut out = vec![OptionView {
            value: String::new(),
            label: label.into(),
            selected: true,
        }];
        for o in &mut rest {
            o.selected = false;
        }
        out.extend(rest);
        out
    };
    let board_query = serde_urlencoded::to_string([
        ("q", &params.q),
        ("assignee", &params.assignee),
        ("label", &params.label),
        ("priority", &params.priority),
    ])
    .unwrap_or_default();
    Ok(ListView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        board_url: format!("/w/{slug}?{board_query}"),
        self_url,
        filter: filter_view(params, &order, &people, &labels),
        columns: columns(&base, params, &order),
        groups,
        total,
        more_url,
        first_url: cursor.is_some().then(|| {
            if query.is_empty() {
                base.clone()
            } else {
                format!("{base}?{query}")
            }
        }),
        batch: BatchBarView {
            action: format!("{base}/batch"),
            status: leave("Status…", status_options("")),
            assignee,
            priority: leave("Priority…", priority_options("")),
            confirm_delete: kept.confirm_delete,
        },
        views,
        save_url: format!("{base}/views"),
        query,
        save_name: kept.save_name,
        errors: kept.errors,
    })
}

/// A name as one path segment.
fn urlencoding_path(name: &str) -> String {
    let encoded = serde_urlencoded::to_string([("", name)]).unwrap_or_default();
    encoded.trim_start_matches('=').replace('+', "%20")
}

fn row(
    slug: &str,
    issue: &Issue,
    people: &People,
    parents: &HashMap<IssueId, Issue>,
    selected: &[String],
) -> ListRowView {
    let key = issue.key.to_string();
    ListRowView {
        url: format!("/w/{slug}/issues/{key}"),
        selected: selected.contains(&key),
        key,
        title: issue.title.as_str().to_owned(),
        status: issue.status.to_string(),
        status_label: status_label(issue.status).to_owned(),
        priority: issue.priority.to_string(),
        assignee: people.assignee(issue.assignee),
        labels: issue.labels.iter().map(|l| l.as_str().to_owned()).collect(),
        parent: issue.parent.and_then(|id| parents.get(&id)).map(|p| {
            let k = p.key.to_string();
            (k.clone(), format!("/w/{slug}/issues/{k}"))
        }),
        updated: issue.updated_at.format("%Y-%m-%d %H:%M").to_string(),
    }
}

/// The batch bar's fields: the ticked rows (`key`, repeated) and what to set ("" leaves a field).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BatchForm {
    key: Vec<String>,
    status: String,
    assignee: String,
    priority: String,
    parent: String,
    add_label: String,
    remove_label: String,
    delete: String,
    confirm: String,
    /// The list's query string, to come back to.
    back: String,
}

async fn batch(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<BatchForm>,
) -> PageResult {
    let slug = member.caller.ws.slug.to_string();
    let back_params: ListParams = serde_urlencoded::from_str(&form.back).unwrap_or_default();
    let back = match back_params.query_string() {
        q if q.is_empty() => format!("/w/{slug}/list"),
        q => format!("/w/{slug}/list?{q}"),
    };
    let delete = form.delete == "1";
    if delete && form.confirm != "1" && !form.key.is_empty() {
        // Asked, not yet confirmed: the same list with the keys ticked and a confirm button.
        let kept = Kept {
            confirm_delete: form.key.clone(),
            ..Kept::default()
        };
        let view = list_view(&state, &member, &back_params, "", kept).await?;
        return Ok(muster_web::pages::list(&view).into_response());
    }
    let some = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    let one = |s: &str| some(s).map(|s| vec![s]).unwrap_or_default();
    let input = BatchInput {
        keys: form.key.clone(),
        set: if delete {
            BatchSet::default()
        } else {
            BatchSet {
                status: some(&form.status),
                assignee: some(&form.assignee),
                priority: some(&form.priority),
                parent: some(&form.parent),
            }
        },
        add_labels: if delete {
            Vec::new()
        } else {
            one(&form.add_label)
        },
        remove_labels: if delete {
            Vec::new()
        } else {
            one(&form.remove_label)
        },
        delete,
    };
    match svc::batch(&state, &member.caller, &input).await {
        Ok(_) => Ok(see_other(&back)),
        Err(e) => {
            let kept = Kept {
                errors: form_errors(e)?,
                selected: form.key.clone(),
                ..Kept::default()
            };
            let view = list_view(&state, &member, &back_params, "", kept).await?;
            Ok(invalid(muster_web::pages::list(&view)))
        }
    }
}

/// "Save view": a name and the list's query string.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SaveForm {
    name: String,
    query: String,
}

async fn save_view(
    State(state): State<AppState>,
    member: WsMember,
    Form(form): Form<SaveForm>,
) -> PageResult {
    let input = ViewInput {
        name: form.name.clone(),
        query: form.query.clone(),
    };
    match svc::save_view(&state, &member.caller, &input).await {
        Ok(view) => Ok(see_other(&format!(
            "/w/{}/list?{}",
            member.caller.ws.slug, view.query
        ))),
        Err(e) => {
            let params: ListParams = serde_urlencoded::from_str(&form.query).unwrap_or_default();
            let kept = Kept {
                errors: form_errors(e)?,
                save_name: form.name,
                ..Kept::default()
            };
            let view = list_view(&state, &member, &params, "", kept).await?;
            Ok(invalid(muster_web::pages::list(&view)))
        }
    }
}

async fn delete_view(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, name)): Path<(String, String)>,
    Form(_): Form<NoFields>,
) -> PageResult {
    svc::delete_view(&state, &member.caller, &name).await?;
    Ok(see_other(&format!("/w/{}/list", member.caller.ws.slug)))
}
