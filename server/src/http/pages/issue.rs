//! The issue page: rendered markdown, editable in place (title and description, the side panel's fields,
//! one's own comments), and the conversation as one timeline (`service::thread`: comments, agent runs
//! with their summaries, changes) with a reply box under the latest finished run; and the confirmation
//! step of deleting an issue.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use muster_web::views::{
    ActivityView, CommentEditView, CommentView, FormErrors, IssueDeleteView, IssuePageView,
    NavItem, ReplyView, ThreadEntryView, ThreadRunView,
};

use super::inbox::nav_with_inbox;
use super::mentions;
use super::runs::thread_run;
use super::views::{IssueForm, People, assignee_value, issue_form, status_label};
use super::{PageResult, form_errors, invalid, see_other};
use crate::domain::{Activity, ActivityKind, Issue};
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::service::comments as comments_svc;
use crate::service::issues as svc;
use crate::service::thread::{self as thread_svc, Entry};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/issues/{key}", get(show).post(update))
        .route("/w/{slug}/issues/{key}/comments", post(comment))
        .route("/w/{slug}/issues/{key}/tasks", post(set_task))
        .route("/w/{slug}/issues/{key}/comments/{id}", post(edit_comment))
        .route(
            "/w/{slug}/issues/{key}/comments/{id}/delete",
            post(delete_comment),
        )
        .route(
            "/w/{slug}/issues/{key}/delete",
            get(confirm_delete).post(delete),
        )
}

/// "moved this from todo to in progress".
fn moved(from: &str, to: &str) -> String {
    format!("moved this from {from} to {to}")
}

fn describe(a: &Activity, people: &People) -> String {
    let d = &a.detail;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().replace('_', " ");
    match a.kind {
        ActivityKind::Created => "created this issue".into(),
        ActivityKind::Status => moved(&text(&d["from"]), &text(&d["to"])),
        ActivityKind::Priority => format!("set priority to {}", text(&d["to"])),
        ActivityKind::Title => format!("renamed this to \u{201c}{}\u{201d}", text(&d["to"])),
        ActivityKind::Labels => "changed the labels".into(),
        ActivityKind::Body => "edited the description".into(),
        ActivityKind::Assignee => match a.new_assignee() {
            Some(to) => format!("assigned this to {}", people.person(to).name),
            None => "removed the assignee".into(),
        },
        ActivityKind::Project => {
            let named = d["to"].as_str().and_then(|to| {
                people
                    .projects
                    .iter()
                    .find(|(id, _, _)| id.to_string() == to)
                    .map(|(_, key, name)| format!("{key} ({name})"))
            });
            match (d["to"].is_null(), named) {
                (true, _) => "removed this from its project".into(),
                (false, Some(project)) => format!("moved this to project {project}"),
                (false, None) => "moved this to a project since deleted".into(),
            }
        }
    }
}

pub(super) async fn page_view(
    state: &AppState,
    member: &WsMember,
    issue: &Issue,
) -> crate::http::Result<IssuePageView> {
    let people = People::load(state, &member.caller).await?;
    let thread = thread_svc::load(state, &member.caller, &issue.key).await?;
    let key = issue.key.to_string();
    let slug = member.caller.ws.slug.to_string();
    let names = mentions::names(&people);
    let markdown = |text: &str| mentions::markdown(text, &names, &people, &slug);
    let labels: Vec<String> = issue.labels.iter().map(|l| l.as_str().to_owned()).collect();
    let ensembles = state.store.list_ensemble_runs(issue.id).await?;
    let (plan, _) = super::plans::issue_plan(state, &member.caller, &member.csrf, issue).await?;
    let mut thread_entries = thread_views(
        member,
        issue,
        &thread.entries,
        &people,
        &markdown,
        &ensembles,
    );
    super::plans::mark_waiting(&mut thread_entries, &plan.waiting_on);
    Ok(IssuePageView {
        nav: nav_with_inbox(state, member, NavItem::Board).await?,
        url: format!("/w/{}/issues/{key}", member.caller.ws.slug),
        key,
        title: issue.title.as_str().to_owned(),
        body_html: markdown(&issue.body),
        body_digest: svc::body_digest(&issue.body),
        status: issue.status.to_string(),
        status_label: status_label(issue.status).to_owned(),
        priority: issue.priority.to_string(),
        labels: labels.clone(),
        assignee: people.assignee(issue.assignee),
        replies_wake: match issue.assignee {
            Some(crate::domain::Assignee::Agent(_)) if issue.status.takes_replies() => {
                people.assignee(issue.assignee).map(|a| a.name)
            }
            _ => None,
        },
        created_by: issue
            .created_by
            .map(|u| people.person(crate::domain::Actor::User(u))),
        created_at: Some(issue.created_at),
        // Its last change of any kind: an edit, a comment, a run's start or end.
        updated_at: thread
            .entries
            .iter()
            .map(|e| match e {
                Entry::Run(r) => r
                    .run
                    .finished_at
                    .or(r.run.started_at)
                    .unwrap_or(r.run.created_at),
                other => other.at(),
            })
            .chain([issue.updated_at])
            .max(),
        form: issue_form(
            &people,
            &IssueForm {
                title: Some(issue.title.as_str().to_owned()),
                body: Some(issue.body.clone()),
                status: Some(issue.status.to_string()),
                priority: Some(issue.priority.to_string()),
                assignee: Some(assignee_value(issue.assignee)),
                labels: Some(labels.join(", ")),
                project: Some(people.project_key(issue.project)),
                ..IssueForm::default()
            },
        ),
        live: thread
            .entries
            .iter()
            .any(|e| matches!(e, Entry::Run(r) if r.is_live())),
        thread: thread_entries,
        comment_body: String::new(),
        comment_errors: FormErrors::new(),
        edit_text: false,
        edit_comment: None,
        can_delete: svc::may_delete(&member.caller, issue),
        ensemble_runs: ensembles
            .iter()
            .map(|e| {
                (
                    format!("{} r{} ({})", e.name, e.number, e.status),
                    format!(
                        "/w/{}/issues/{}/ensemble?number={}",
                        member.caller.ws.slug, issue.key, e.number
                    ),
                )
            })
            .collect(),
        ensembles: ensemble_choices(state, &member.caller).await?,
        run_totals: run_totals(&thread.entries),
        lines: work_lines(&thread.entries, &people, member.caller.ws.slug.as_str()),
        pulls: super::pulls::issue_pulls(state, &member.caller, &member.csrf, issue).await?,
        plan,
    })
}

/// The workspace's ensembles with what each would take: its members and, from their history, a typical
/// cost (the sum of each member's median run).
async fn ensemble_choices(
    state: &AppState,
    caller: &crate::service::Caller,
) -> crate::http::Result<Vec<(String, String)>> {
    use crate::service::ensembles as ens;
    let agents = state.store.list_agents(caller.ws.id).await?;
    let mut out = Vec::new();
    for e in ens::list(state, caller).await? {
        let view = ens::EnsembleView::of(&e, &agents);
        let estimates = ens::estimate(state, caller, &e.settings).await?;
        let known: Vec<f64> = estimates.iter().filter_map(|x| x.median_cost_usd).collect();
        let typical = if known.len() == estimates.len() && !known.is_empty() {
            format!("typically ~${:.2}", known.iter().sum::<f64>())
        } else {
            "no cost history yet".to_owned()
        };
        let cap = view
            .budget_usd
            .map(|b| format!(", cap ${b:.2}"))
            .unwrap_or_default();
        out.push((
            view.name,
            format!("{}; {typical}{cap}", view.members.join(", ")),
        ));
    }
    Ok(out)
}

/// Each agent's line of work among the issue's runs, for its side panel.
fn work_lines(
    entries: &[Entry],
    people: &People,
    slug: &str,
) -> Vec<muster_web::views::WorkLineView> {
    let runs: Vec<crate::domain::Run> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Run(r) => Some(r.run.clone()),
            _ => None,
        })
        .collect();
    crate::domain::work_lines(&runs)
        .into_iter()
        .map(|l| muster_web::views::WorkLineView {
            agent: people.person(crate::domain::Actor::Agent(l.agent_id)).name,
            branch: l.branch,
            commit: l
                .commit
                .map(|c| (c.get(..12).unwrap_or(&c).to_owned(), c.clone())),
            run_url: format!("/w/{slug}/runs/{}", l.run_id),
        })
        .collect()
}

/// What the issue's runs used in all, for its side panel.
fn run_totals(entries: &[Entry]) -> Option<(String, Option<String>)> {
    let mut sum = crate::domain::Usage::default();
    let mut runs = 0;
    for entry in entries {
        if let Entry::Run(r) = entry {
            runs += 1;
            sum += &r.run.usage;
        }
    }
    if runs == 0 {
        return None;
    }
    let (cost, title) = sum.cost_label(None);
    let tokens = super::runs::thousands(sum.tokens());
    let noun = if runs == 1 { "run" } else { "runs" };
    Some((
        format!("{runs} {noun} · {cost} · {tokens} tokens"),
        title.map(str::to_owned),
    ))
}

/// The timeline's views, with the reply box under the latest run once it finished (and while the issue
/// takes replies); of an ensemble's runs, only the chosen candidate's takes replies (the work continues
/// there, not under a losing candidate or the reviewer).
fn thread_views(
    member: &WsMember,
    issue: &Issue,
    entries: &[Entry],
    people: &People,
    markdown: &dyn Fn(&str) -> String,
    ensembles: &[crate::domain::EnsembleRun],
) -> Vec<ThreadEntryView> {
    let replied_to = entries.iter().rposition(|e| match e {
        Entry::Run(r) => r
            .run
            .ensemble_run_id
            .is_none_or(|_| ensembles.iter().any(|e| e.chosen_run_id == Some(r.run.id))),
        _ => false,
    });
    let slug = member.caller.ws.slug.as_str();
    let mut runs_seen = 0;
    let mut views: Vec<ThreadEntryView> = entries
        .iter()
        .map(|e| match e {
            Entry::Comment(c) => ThreadEntryView::Comment(CommentView {
                id: c.id.to_string(),
                author: people.person(c.author),
                body_html: markdown(&c.body),
                at: c.created_at,
                edited_at: c.edited_at,
                can_edit: comments_svc::is_author(&member.caller, c),
                can_delete: comments_svc::may_delete(&member.caller, c),
            }),
            Entry::Run(r) => {
                runs_seen += 1;
                ThreadEntryView::Run(Box::new(thread_run(slug, r, runs_seen, people)))
            }
            Entry::Status(s) => ThreadEntryView::Change(ActivityView {
                actor: people.person(s.actor),
                text: moved(
                    &s.from.as_str().replace('_', " "),
                    &s.to.as_str().replace('_', " "),
                ),
                at: s.at,
            }),
            Entry::Change(a) => ThreadEntryView::Change(ActivityView {
                actor: people.person(a.actor),
                text: describe(a, people),
                at: a.at,
            }),
        })
        .collect();
    let latest = replied_to.and_then(|i| match views.get_mut(i) {
        Some(ThreadEntryView::Run(r)) => Some(r),
        _ => None,
    });
    if let Some(run) = latest.filter(|r| !r.live)
        && member.caller.run.is_none()
        && issue.status.takes_replies()
    {
        run.reply = Some(reply_view(issue, run, people));
    }
    views
}

/// The reply box for `run`: the assignee continues its work from a plain reply; another agent is
/// addressed with `@name`, which brings it in.
fn reply_view(issue: &Issue, run: &ThreadRunView, people: &People) -> ReplyView {
    let name = run.agent.as_ref().map_or("the agent", |a| a.name.as_str());
    let assignee = people.assignee(issue.assignee).map(|a| a.name);
    if assignee.as_deref() == Some(name) {
        ReplyView {
            body: String::new(),
            placeholder: format!(
                "Reply to {name}: it continues its work from here, on its branch. Markdown."
            ),
            errors: FormErrors::new(),
        }
    } else {
        ReplyView {
            body: format!("@{name} "),
            placeholder: format!("Reply to {name}: the @mention brings it back. Markdown."),
            errors: FormErrors::new(),
        }
    }
}

/// What the issue page opens for editing: `?edit=text` (title and description), `?edit_comment=<id>`.
#[derive(Debug, Default, serde::Deserialize)]
struct ShowQuery {
    edit: Option<String>,
    edit_comment: Option<String>,
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Query(q): Query<ShowQuery>,
) -> PageResult {
    let issue = state
        .store
        .get_issue(member.caller.ws.id, &svc::parse_key(&key)?)
        .await?;
    let mut view = page_view(&state, &member, &issue).await?;
    view.edit_text = q.edit.as_deref() == Some("text");
    if let Some(id) = q.edit_comment {
        // Only one's own comment opens; any other id just shows the page.
        let body = state
            .store
            .list_comments(issue.id)
            .await?
            .into_iter()
            .find(|c| c.id.to_string() == id && comments_svc::is_author(&member.caller, c))
            .map(|c| c.body);
        view.edit_comment = body.map(|body| CommentEditView {
            id,
            body,
            errors: FormErrors::new(),
        });
    }
    Ok(muster_web::pages::issue(&view).into_response())
}

/// A comment as sent: its text, and the run it answers when written in a run's reply box.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct CommentForm {
    body: String,
    reply_to: String,
}

/// A task-list box ticked or cleared: its number, whether it is done, and the digest of the description
/// the page shows.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct TaskForm {
    task: String,
    done: String,
    digest: String,
}

/// Ticks or clears a task-list box of the description (the page's script sends `task`, `done` and the
/// `digest` of the description it shows): the new digest, or the refusal's words.
async fn set_task(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<TaskForm>,
) -> crate::http::Result<axum::Json<serde_json::Value>> {
    let key = svc::parse_key(&key)?;
    let Ok(index) = form.task.trim().parse::<usize>() else {
        return Err(crate::http::Error::invalid([(
            "task",
            format!("{:?} is not a task-list box number", form.task),
        )]));
    };
    let done = matches!(form.done.as_str(), "true" | "on" | "1");
    let issue = svc::set_task(&state, &member.caller, &key, index, done, &form.digest).await?;
    Ok(axum::Json(
        serde_json::json!({ "digest": svc::body_digest(&issue.body) }),
    ))
}

async fn update(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<IssueForm>,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    match svc::update(&state, &member.caller, &key, &form.sent_input()).await {
        Ok(issue) => Ok(see_other(&format!(
            "/w/{}/issues/{}",
            member.caller.ws.slug, issue.key
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = page_view(&state, &member, &issue).await?;
            let people = People::load(&state, &member.caller).await?;
            let assignee = assignee_value(issue.assignee);
            let labels = issue
                .labels
                .iter()
                .map(|l| l.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            // A field the form did not send shows what the issue has.
            let value = |sent: &Option<String>, current: &str| {
                sent.clone().unwrap_or_else(|| current.to_owned())
            };
            view.form = issue_form(
                &people,
                &IssueForm {
                    title: Some(value(&form.title, issue.title.as_str())),
                    body: Some(value(&form.body, &issue.body)),
                    status: Some(value(&form.status, issue.status.as_str())),
                    priority: Some(value(&form.priority, issue.priority.as_str())),
                    assignee: Some(value(&form.assignee, &assignee)),
                    labels: Some(value(&form.labels, &labels)),
                    project: Some(value(&form.project, &people.project_key(issue.project))),
                    ..IssueForm::default()
                },
            );
            view.form.errors = errors;
            view.edit_text = form.title.is_some() || form.body.is_some();
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}

async fn comment(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    Form(form): Form<CommentForm>,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let body = form.body.as_str();
    match svc::comment(&state, &member.caller, &key, body).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#comments",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = page_view(&state, &member, &issue).await?;
            let reply = view.thread.iter_mut().find_map(|e| match e {
                ThreadEntryView::Run(r) if r.id == form.reply_to => r.reply.as_mut(),
                _ => None,
            });
            match reply {
                Some(reply) => {
                    reply.body = body.to_owned();
                    reply.errors = errors;
                }
                None => {
                    view.comment_body = body.to_owned();
                    view.comment_errors = errors;
                }
            }
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}

async fn edit_comment(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, id)): Path<(String, String, String)>,
    Form(form): Form<CommentForm>,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let comment = comments_svc::parse_id(&id, &key)?;
    let body = form.body.as_str();
    match comments_svc::edit(&state, &member.caller, &key, comment, body).await {
        Ok(_) => Ok(see_other(&format!(
            "/w/{}/issues/{key}#comment-{comment}",
            member.caller.ws.slug
        ))),
        Err(e) => {
            let errors = form_errors(e)?;
            let issue = state.store.get_issue(member.caller.ws.id, &key).await?;
            let mut view = page_view(&state, &member, &issue).await?;
            view.edit_comment = Some(CommentEditView {
                id: comment.to_string(),
                body: body.to_owned(),
                errors,
            });
            Ok(invalid(muster_web::pages::issue(&view)))
        }
    }
}

async fn delete_comment(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key, id)): Path<(String, String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let key = svc::parse_key(&key)?;
    let comment = comments_svc::parse_id(&id, &key)?;
    comments_svc::delete(&state, &member.caller, &key, comment).await?;
    Ok(see_other(&format!(
        "/w/{}/issues/{key}#comments",
        member.caller.ws.slug
    )))
}

/// The confirmation step: what goes with the issue, and the button that deletes it.
async fn confirm_delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
) -> PageResult {
    let issue = state
        .store
        .get_issue(member.caller.ws.id, &svc::parse_key(&key)?)
        .await?;
    if !svc::may_delete(&member.caller, &issue) {
        return Err(crate::http::Error::Forbidden.into());
    }
    let runs = state.store.list_runs_for_issue(issue.id).await?;
    let view = IssueDeleteView {
        nav: nav_with_inbox(&state, &member, NavItem::Board).await?,
        key: issue.key.to_string(),
        title: issue.title.as_str().to_owned(),
        url: format!("/w/{}/issues/{}", member.caller.ws.slug, issue.key),
        comments: state.store.list_comments(issue.id).await?.len(),
        live_runs: runs.iter().filter(|r| !r.status.is_terminal()).count(),
        runs: runs.len(),
    };
    Ok(muster_web::pages::issue_delete(&view).into_response())
}

async fn delete(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, key)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    svc::delete(&state, &member.caller, &svc::parse_key(&key)?).await?;
    Ok(see_other(&format!("/w/{}", member.caller.ws.slug)))
}
