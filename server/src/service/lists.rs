//! The issue list: its parameters (filter, sort, grouping), batch changes to many issues at once, and
//! saved views.
//!
//! A batch checks everything before it changes anything: every key, every value, the parent's tree and
//! the caller's right to delete. Then each issue goes through the same use-case as a single edit
//! ([`super::issues::update`], [`super::issues::delete`]), so what an edit sets off (a run queued for an
//! agent assigned, blocked issues woken by a move to done, runs cancelled when unwanted) happens for
//! each issue of a batch too.

use serde::{Deserialize, Serialize};

use super::issues::{self as issues_svc, IssueInput};
use super::{Caller, Error, Problems, Result};
use crate::domain::list::{
    IssueGrouping, IssueOrder, IssueSort, MAX_VIEW_QUERY, SavedView, SortDir, ViewName,
};
use crate::domain::{
    Issue, IssueFilter, IssueId, IssueKey, IssueStatus, Label, MAX_TREE_DEPTH, Priority,
};
use crate::engine::Engine;

/// The most issues one batch may change.
pub const MAX_BATCH_KEYS: usize = 500;

/// A list's parameters as they appear in its URL (every one optional; empty means unset). The query
/// string of these is what a saved view keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ListParams {
    /// Statuses, comma-separated.
    pub status: String,
    /// Agent name, member email or name, `agent:<id>`, `user:<id>`.
    pub assignee: String,
    pub label: String,
    pub priority: String,
    /// A project's key.
    pub project: String,
    /// The start of a key, or words of the title or body.
    pub q: String,
    /// `updated`, `created`, `priority`, `status`, `title` or `key`.
    pub sort: String,
    /// `asc` or `desc`.
    pub dir: String,
    /// `none`, `status`, `assignee`, `priority`, `project` or `parent`.
    pub group: String,
}

impl ListParams {
    /// The order these name (most recently updated first, ungrouped, by default; a sort without a
    /// direction takes the sort's natural one).
    pub fn order(&self) -> Result<IssueOrder> {
        let mut problems = Problems::default();
        let mut order = IssueOrder::default();
        if !self.sort.trim().is_empty()
            && let Some(sort) = problems.take(self.sort.parse::<IssueSort>())
        {
            order.sort = sort;
            order.dir = sort.natural_dir();
        }
        if !self.dir.trim().is_empty()
            && let Some(dir) = problems.take(self.dir.parse::<SortDir>())
        {
            order.dir = dir;
        }
        if !self.group.trim().is_empty()
            && let Some(group) = problems.take(self.group.parse::<IssueGrouping>())
        {
            order.group = group;
        }
        problems.finish()?;
        Ok(order)
    }

    /// The query string of the set parameters, in a fixed order (no `after`).
    pub fn query_string(&self) -> String {
        let pairs: Vec<(&str, &str)> = [
            ("status", &self.status),
            ("assignee", &self.assignee),
            ("label", &self.label),
            ("priority", &self.priority),
            ("project", &self.project),
            ("q", &self.q),
            ("sort", &self.sort),
            ("dir", &self.dir),
            ("group", &self.group),
        ]
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| (k, v.as_str()))
        .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    /// Whether a filter (not the order) is set.
    pub fn filtered(&self) -> bool {
        !(self.status.is_empty()
            && self.assignee.is_empty()
            && self.label.is_empty()
            && self.priority.is_empty()
            && self.project.is_empty()
            && self.q.is_empty())
    }

    /// The store's filter for these parameters; a value that names nothing is an error naming it.
    pub async fn filter(&self, state: &Engine, caller: &Caller) -> Result<IssueFilter> {
        let mut problems = Problems::default();
        let mut filter = IssueFilter::default();
        for raw in self.status.split(',').filter(|s| !s.trim().is_empty()) {
            if let Some(s) = problems.take(raw.parse::<IssueStatus>()) {
                filter.statuses.push(s);
            }
        }
        if !self.assignee.trim().is_empty() {
            filter.assignee = problems
                .take(issues_svc::resolve_assignee(state, caller, &self.assignee).await?)
                .flatten();
        }
        if !self.label.trim().is_empty() {
            filter.label = problems.take(Label::parse(&self.label));
        }
        if !self.priority.trim().is_empty() {
            filter.priority = problems.take(self.priority.parse::<Priority>());
        }
        if !self.project.trim().is_empty() {
            filter.project = problems
                .take(super::projects::typed_project(state, caller, &self.project).await?)
                .flatten();
        }
        filter.text = Some(self.q.clone()).filter(|q| !q.trim().is_empty());
        problems.finish()?;
        Ok(filter)
    }
}

/// What a batch sets on every issue; a field left out stays as it is.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BatchSet {
    #[schema(value_type = Option<IssueStatus>)]
    pub status: Option<String>,
    /// An agent name, a member's email or name, `agent:<id>`, `user:<id>`, or "" / `none` for nobody.
    pub assignee: Option<String>,
    #[schema(value_type = Option<Priority>)]
    pub priority: Option<String>,
    /// The parent issue's key; "" or `none` clears it. A cycle is refused.
    #[schema(example = "ACM-1")]
    pub parent: Option<String>,
}

/// A change to many issues at once.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BatchInput {
    /// The issues, 1 to 500 keys of the caller's workspace.
    #[schema(example = json!(["ACM-1", "ACM-2"]), max_items = 500)]
    pub keys: Vec<String>,
    pub set: BatchSet,
    /// Labels to add to each issue (an issue keeps at most 20).
    pub add_labels: Vec<String>,
    /// Labels to take off each issue.
    pub remove_labels: Vec<String>,
    /// Delete the issues (nothing else may be asked with it).
    pub delete: bool,
}

/// What a batch did.
#[derive(Debug, Clone)]
pub enum BatchOutcome {
    /// The issues as they are now, in the order of the keys.
    Updated(Vec<Issue>),
    /// The issues deleted, as they were.
    Deleted(Vec<Issue>),
}

/// A key's problem, naming it.
fn bad_key(message: String) -> Error {
    Error::invalid([("keys", message)])
}

/// Applies `input` to every issue it names, once all of it has been checked (nothing changes when
/// any part is refused). A run's token may not batch.
pub async fn batch(state: &Engine, caller: &Caller, input: &BatchInput) -> Result<BatchOutcome> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal_saying("a batch change is for people, not runs"));
    }
    if input.keys.is_empty() {
        return Err(bad_key("name at least one issue".into()));
    }
    if input.keys.len() > MAX_BATCH_KEYS {
        return Err(bad_key(format!(
            "at most {MAX_BATCH_KEYS} issues per batch (got {})",
            input.keys.len()
        )));
    }
    let set = &input.set;
    let changes = set.status.is_some()
        || set.assignee.is_some()
        || set.priority.is_some()
        || set.parent.is_some()
        || !input.add_labels.is_empty()
        || !input.remove_labels.is_empty();
    if input.delete && changes {
        return Err(Error::invalid([(
            "delete",
            "a delete cannot be combined with changes".to_owned(),
        )]));
    }
    if !input.delete && !changes {
        return Err(Error::invalid([(
            "set",
            "nothing to change: set a field, add or remove a label, or delete".to_owned(),
        )]));
    }
    // Every key, once, in the order given.
    let mut issues: Vec<Issue> = Vec::with_capacity(input.keys.len());
    for raw in &input.keys {
        let key = IssueKey::parse(raw).map_err(|e| bad_key(e.message))?;
        if issues.iter().any(|i| i.key == key) {
            continue;
        }
        match state.store.get_issue(caller.ws.id, &key).await {
            Ok(issue) => issues.push(issue),
            Err(crate::store::Error::NotFound) => {
                return Err(bad_key(format!("{key} is not an issue of this workspace")));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if input.delete {
        if let Some(issue) = issues.iter().find(|i| !issues_svc::may_delete(caller, i)) {
            return Err(Error::refused(
                "keys",
                format!(
                    "only owners, admins and the person who created {} may delete it; nothing was deleted",
                    issue.key
                ),
            ));
        }
        let mut deleted = Vec::with_capacity(issues.len());
        for issue in &issues {
            deleted.push(issues_svc::delete(state, caller, &issue.key).await?);
        }
        return Ok(BatchOutcome::Deleted(deleted));
    }
    let mut problems = Problems::default();
    if let Some(s) = set.status.as_deref() {
        problems.take(s.parse::<IssueStatus>());
    }
    if let Some(p) = set.priority.as_deref() {
        problems.take(p.parse::<Priority>());
    }
    if let Some(a) = set.assignee.as_deref() {
        problems.take(issues_svc::resolve_assignee(state, caller, a).await?);
    }
    let add = labels(&mut problems, "add_labels", &input.add_labels);
    let remove = labels(&mut problems, "remove_labels", &input.remove_labels);
    if let Some(raw) = set.parent.as_deref().map(str::trim)
        && !matches!(raw, "" | "none")
        && let Some(parent) =
            problems.take(super::plans::typed_issue(state, caller, "parent", raw).await?)
        && let Some(message) = parent_problem(state, &issues, &parent).await?
    {
        problems.add("parent", message);
    }
    // Each issue's labels after the change, at most 20 of them.
    let mut new_labels: Vec<Option<Vec<String>>> = Vec::with_capacity(issues.len());
    for issue in &issues {
        let mut next: Vec<Label> = issue
            .labels
            .iter()
            .filter(|l| !remove.contains(l))
            .cloned()
            .collect();
        next.extend(add.iter().cloned());
        next.sort();
        next.dedup();
        if next.len() > 20 {
            problems.add(
                "add_labels",
                format!(
                    "{} would have {} labels; an issue has at most 20",
                    issue.key,
                    next.len()
                ),
            );
        }
        new_labels.push(
            (next != issue.labels).then(|| next.iter().map(|l| l.as_str().to_owned()).collect()),
        );
    }
    problems.finish()?;
    let mut updated = Vec::with_capacity(issues.len());
    for (issue, labels) in issues.iter().zip(new_labels) {
        let edit = IssueInput {
            status: set.status.clone(),
            priority: set.priority.clone(),
            assignee: set.assignee.clone(),
            parent: set.parent.clone(),
            labels,
            ..IssueInput::default()
        };
        updated.push(issues_svc::update(state, caller, &issue.key, &edit).await?);
    }
    Ok(BatchOutcome::Updated(updated))
}

/// Labels as typed, each checked.
fn labels(problems: &mut Problems, field: &'static str, raw: &[String]) -> Vec<Label> {
    raw.iter()
        .filter_map(|l| {
            problems.take(Label::parse(l).map_err(|mut e| {
                e.field = field;
                e
            }))
        })
        .collect()
}

/// Why `parent` may not become the parent of every issue of a batch: one of them is the parent or one
/// of its ancestors (a cycle), or the tree would grow too deep. The same rules as a single
/// `set_parent`, checked for all before any is written.
async fn parent_problem(
    state: &Engine,
    issues: &[Issue],
    parent: &Issue,
) -> Result<Option<String>> {
    let mut chain: Vec<Issue> = vec![parent.clone()];
    let mut up = parent.parent;
    while let Some(id) = up {
        if chain.len() > MAX_TREE_DEPTH {
            break;
        }
        let next = state.store.get_issue_by_id(id).await?;
        up = next.parent;
        chain.push(next);
    }
    let ids: Vec<IssueId> = chain.iter().map(|i| i.id).collect();
    if let Some(issue) = issues.iter().find(|i| ids.contains(&i.id)) {
        let at = ids.iter().position(|id| *id == issue.id).unwrap_or(0);
        let mut keys = vec![issue.key.to_string()];
        keys.extend(chain[..=at].iter().map(|i| i.key.to_string()));
        return Ok(Some(format!(
            "that would make a cycle: {}",
            keys.join(" → ")
        )));
    }
    if chain.len() > MAX_TREE_DEPTH {
        return Ok(Some(format!(
            "the tree would be deeper than {MAX_TREE_DEPTH} levels"
        )));
    }
    Ok(None)
}

/// A view to save: a name and the list's query string.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ViewInput {
    /// 1–80 characters, unique in the workspace.
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    /// The list's query string (`status=todo&sort=priority&group=assignee`, a leading `?` allowed):
    /// filter, sort and grouping. Checked; `after` is dropped.
    #[schema(example = "sort=priority&group=status")]
    pub query: String,
}

/// The workspace's saved views, by name.
pub async fn views(state: &Engine, caller: &Caller) -> Result<Vec<SavedView>> {
    Ok(state.store.list_saved_views(caller.ws.id).await?)
}

/// Saves a view: the query string is checked (a sort, direction or grouping that does not exist is
/// refused) and kept in its normal form.
pub async fn save_view(state: &Engine, caller: &Caller, input: &ViewInput) -> Result<SavedView> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let mut problems = Problems::default();
    let name = problems.take(ViewName::parse(&input.name));
    let raw = input.query.trim().trim_start_matches('?');
    if raw.len() > MAX_VIEW_QUERY {
        problems.add(
            "query",
            format!("must be at most {MAX_VIEW_QUERY} characters"),
        );
    }
    let params = match serde_urlencoded::from_str::<ListParams>(raw) {
        Ok(p) => Some(p),
        Err(e) => {
            problems.add("query", format!("is not a list's query string: {e}"));
            None
        }
    };
    problems.finish()?;
    let (Some(name), Some(params)) = (name, params) else {
        return Err(Error::invalid([("query", "invalid input".to_owned())]));
    };
    // The sort, direction and grouping must exist; their messages are about the query.
    if let Err(Error::Invalid(map)) = params.order() {
        return Err(Error::invalid(map.into_iter().flat_map(
            |(field, messages)| {
                messages
                    .into_iter()
                    .map(move |m| ("query", format!("{field}: {m}")))
            },
        )));
    }
    match state
        .store
        .create_saved_view(
            caller.ws.id,
            &name,
            &params.query_string(),
            Some(caller.user.id),
        )
        .await
    {
        Err(crate::store::Error::Conflict { constraint }) if constraint == "saved_view_pkey" => {
            Err(Error::conflict(
                "name",
                format!("a view named {:?} exists already", name.as_str()),
            ))
        }
        other => Ok(other?),
    }
}

/// Deletes a saved view (its creator, or an owner or admin).
pub async fn delete_view(state: &Engine, caller: &Caller, name: &str) -> Result<()> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let name = ViewName::parse(name).map_err(|_| Error::NotFound)?;
    let view = state
        .store
        .list_saved_views(caller.ws.id)
        .await?
        .into_iter()
        .find(|v| v.name == name)
        .ok_or(Error::NotFound)?;
    if !caller.role.can_manage() && view.created_by != Some(caller.user.id) {
        return Err(Error::refused(
            "name",
            "only owners, admins and the person who saved a view may delete it",
        ));
    }
    Ok(state.store.delete_saved_view(caller.ws.id, &name).await?)
}
