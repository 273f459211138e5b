//! Ensembles as people use them: define a team (owners and admins: it decides what runs), assign an
//! issue to it (candidates queued blind from one base commit), compare the candidates on evidence, and
//! choose one (its branch kept and, when asked, merged into the base branch; the others removed).

use std::collections::HashMap;
use std::path::Path;

use muster_agents::AgentEvent;
use serde::{Deserialize, Serialize};

use super::{Caller, Error, Problems, Result};
use crate::domain::{
    Agent, AgentName, Budget, CHECK_TIMEOUT_DEFAULT_SECS, CheckResult, CheckSpec, CommentAuthor,
    EarlyStop, Ensemble, EnsembleName, EnsembleRun, EnsembleSettings, EnsembleStatus, IssueKey,
    IssueStatus, NewEnsembleRun, NewRun, ReviewOutcome, Run, RunEventBody, RunStatus,
};
use crate::engine::Engine;
use crate::engine::ensemble::{candidates, check_of, total_spent};
use crate::runner::executor::git;

/// What a person sends to create or edit an ensemble; on edit, absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct EnsembleInput {
    #[schema(pattern = r"^[A-Za-z0-9._-]{1,64}$", example = "trio")]
    pub name: Option<String>,
    /// Agent names, 2 to 8, each once.
    #[schema(min_items = 2, max_items = 8)]
    pub members: Option<Vec<String>>,
    /// The check command run in each candidate's worktree; "" for the workspace's.
    pub check: Option<String>,
    /// Seconds before the ensemble's own check is stopped (default 600, at most 3600).
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 1, maximum = 3600)]
    pub check_timeout_secs: Option<u64>,
    /// `all`, `first_green` or `quorum K`.
    #[schema(
        pattern = r"^\s*(all|first[_-]green|quorum[ :=]*[1-8])\s*$",
        example = "first_green"
    )]
    pub early_stop: Option<String>,
    /// The reviewer agent's name; "" for none.
    pub reviewer: Option<String>,
    /// The whole ensemble's budget in USD; 0 for none.
    #[schema(minimum = 0)]
    pub budget_usd: Option<f64>,
    /// The whole ensemble's token budget; 0 for none.
    #[serde(default, deserialize_with = "crate::domain::serde_util::whole_number")]
    #[schema(minimum = 0)]
    pub budget_tokens: Option<i64>,
    /// The most one candidate may spend, as a fraction of the budget; 0 for an equal share.
    #[schema(minimum = 0, maximum = 1)]
    pub share: Option<f64>,
}

/// An ensemble as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EnsembleView {
    pub name: String,
    pub members: Vec<String>,
    pub check: Option<String>,
    pub check_timeout_secs: Option<u64>,
    pub early_stop: String,
    pub reviewer: Option<String>,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<i64>,
    pub share: Option<f64>,
    /// What one candidate may spend.
    pub candidate_budget_usd: Option<f64>,
    pub candidate_budget_tokens: Option<i64>,
}

impl EnsembleView {
    /// `e` with its agents' names (`agents` the workspace's).
    pub fn of(e: &Ensemble, agents: &[Agent]) -> Self {
        let s = &e.settings;
        let share = s.candidate_budget();
        Self {
            name: e.name.as_str().to_owned(),
            members: s.members.iter().map(|m| agent_name(agents, *m)).collect(),
            check: s.check.as_ref().map(|c| c.command.clone()),
            check_timeout_secs: s.check.as_ref().map(|c| c.timeout_secs),
            early_stop: s.early_stop.to_string(),
            reviewer: s.reviewer.map(|r| agent_name(agents, r)),
            budget_usd: s.budget.usd,
            budget_tokens: s.budget.tokens,
            share: s.share,
            candidate_budget_usd: share.usd,
            candidate_budget_tokens: share.tokens,
        }
    }
}

fn agent_name(agents: &[Agent], id: crate::domain::AgentId) -> String {
    agents.iter().find(|a| a.id == id).map_or_else(
        || "(deleted agent)".to_owned(),
        |a| a.profile.name.as_str().to_owned(),
    )
}

/// Builds the settings from `input` over `base` (an edit) or from nothing (a create), every problem
/// reported at once: `earlier` (what the caller found in its raw input) and this function's own.
async fn build(
    state: &Engine,
    caller: &Caller,
    base: Option<&Ensemble>,
    input: &EnsembleInput,
    earlier: Problems,
) -> Result<(EnsembleName, EnsembleSettings)> {
    let mut problems = earlier;
    let name = match (&input.name, base) {
        (Some(raw), _) => problems.take(EnsembleName::parse(raw)),
        (None, Some(e)) => Some(e.name.clone()),
        (None, None) => {
            problems.add("name", "an ensemble needs a name");
            None
        }
    };
    let agents = state.store.list_agents(caller.ws.id).await?;
    let find = |raw: &str| {
        agents
            .iter()
            .find(|a| a.profile.name.as_str() == raw.trim())
            .map(|a| a.id)
    };
    let mut settings = base.map_or_else(
        || EnsembleSettings {
            members: Vec::new(),
            check: None,
            early_stop: EarlyStop::All,
            reviewer: None,
            budget: Budget::default(),
            share: None,
        },
        |e| e.settings.clone(),
    );
    match &input.members {
        Some(names) => {
            settings.members.clear();
            for raw in names {
                match find(raw) {
                    Some(id) => settings.members.push(id),
                    None => problems.add(
                        "members",
                        format!("no agent called {raw:?} in this workspace"),
                    ),
                }
            }
        }
        None if base.is_none() => problems.add("members", "an ensemble needs 2 to 8 members"),
        None => {}
    }
    if let Some(raw) = &input.reviewer {
        settings.reviewer = None;
        if !raw.trim().is_empty() {
            match find(raw) {
                Some(id) => settings.reviewer = Some(id),
                None => problems.add(
                    "reviewer",
                    format!("no agent called {raw:?} in this workspace"),
                ),
            }
        }
    }
    if let Some(raw) = &input.check {
        settings.check = (!raw.trim().is_empty()).then(|| CheckSpec {
            command: raw.trim().to_owned(),
            timeout_secs: CHECK_TIMEOUT_DEFAULT_SECS,
        });
    }
    if let Some(secs) = input.check_timeout_secs {
        match &mut settings.check {
            Some(check) => check.timeout_secs = secs,
            None => problems.add(
                "check_timeout",
                "a check timeout needs a check command on the ensemble",
            ),
        }
    }
    if let Some(raw) = &input.early_stop
        && let Some(policy) = problems.take(raw.parse::<EarlyStop>())
    {
        settings.early_stop = policy;
    }
    if let Some(usd) = input.budget_usd {
        settings.budget.usd = (usd != 0.0).then_some(usd);
    }
    if let Some(tokens) = input.budget_tokens {
        settings.budget.tokens = (tokens != 0).then_some(tokens);
    }
    if let Some(share) = input.share {
        settings.share = (share != 0.0).then_some(share);
    }
    problems.finish()?;
    settings.validate()?;
    let Some(name) = name else {
        return Err(Error::invalid([(
            "name",
            "an ensemble needs a name".to_owned(),
        )]));
    };
    Ok((name, settings))
}

/// Creates an ensemble: owners and admins only (its check command and members decide what runs).
pub async fn create(state: &Engine, caller: &Caller, input: &EnsembleInput) -> Result<Ensemble> {
    create_checked(state, caller, input, Problems::default()).await
}

/// [`create`], with problems the caller already found in its raw input (a number that did not parse)
/// reported in the same 422 as the rest.
pub async fn create_checked(
    state: &Engine,
    caller: &Caller,
    input: &EnsembleInput,
    earlier: Problems,
) -> Result<Ensemble> {
    caller.require_manager()?;
    let (name, settings) = build(state, caller, None, input, earlier).await?;
    match state
        .store
        .create_ensemble(caller.ws.id, &name, &settings)
        .await
    {
        Err(crate::store::Error::Conflict { constraint })
            if constraint.contains("ensemble_workspace_name") =>
        {
            Err(Error::conflict(
                "name",
                format!("an ensemble called {} exists already", name.as_str()),
            ))
        }
        other => Ok(other?),
    }
}

/// An ensemble by name.
pub async fn by_name(state: &Engine, caller: &Caller, name: &str) -> Result<Ensemble> {
    let name = AgentName::parse(name).map_err(|_| Error::NotFound)?;
    Ok(state
        .store
        .get_ensemble_by_name(caller.ws.id, &name)
        .await?)
}

/// The workspace's ensembles, by name.
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<Ensemble>> {
    Ok(state.store.list_ensembles(caller.ws.id).await?)
}

/// Edits an ensemble (owners and admins); runs under way keep what they started with.
pub async fn update(
    state: &Engine,
    caller: &Caller,
    name: &str,
    input: &EnsembleInput,
) -> Result<Ensemble> {
    update_checked(state, caller, name, input, Problems::default()).await
}

/// [`update`], with problems the caller already found in its raw input reported in the same 422.
pub async fn update_checked(
    state: &Engine,
    caller: &Caller,
    name: &str,
    input: &EnsembleInput,
    earlier: Problems,
) -> Result<Ensemble> {
    caller.require_manager()?;
    let found = by_name(state, caller, name).await?;
    let (new_name, settings) = build(state, caller, Some(&found), input, earlier).await?;
    match state
        .store
        .update_ensemble(caller.ws.id, found.id, &new_name, &settings)
        .await
    {
        Err(crate::store::Error::Conflict { constraint })
            if constraint.contains("ensemble_workspace_name") =>
        {
            Err(Error::conflict(
                "name",
                format!("an ensemble called {} exists already", new_name.as_str()),
            ))
        }
        other => Ok(other?),
    }
}

/// Deletes an ensemble (owners and admins); its past runs stay, with their snapshot.
pub async fn delete(state: &Engine, caller: &Caller, name: &str) -> Result<()> {
    caller.require_manager()?;
    let found = by_name(state, caller, name).await?;
    Ok(state.store.delete_ensemble(caller.ws.id, found.id).await?)
}

/// What one agent's run has cost, from its history: the median of its last finished runs.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Estimate {
    pub agent: String,
    /// How many of its finished runs the median is taken over.
    pub runs: usize,
    pub median_cost_usd: Option<f64>,
    pub median_tokens: Option<i64>,
}

/// How many of an agent's latest runs an estimate looks at.
const ESTIMATE_RUNS: i64 = 50;

/// What each member (and the reviewer) is likely to cost, and the total.
pub async fn estimate(
    state: &Engine,
    caller: &Caller,
    settings: &EnsembleSettings,
) -> Result<Vec<Estimate>> {
    let agents = state.store.list_agents(caller.ws.id).await?;
    let mut out = Vec::new();
    for id in settings.members.iter().chain(settings.reviewer.iter()) {
        let filter = crate::store::RunFilter {
            agent: Some(*id),
            statuses: vec![RunStatus::Succeeded, RunStatus::Failed],
            limit: ESTIMATE_RUNS,
            ..crate::store::RunFilter::default()
        };
        let runs = state.store.list_runs(caller.ws.id, &filter).await?;
        let mut costs: Vec<f64> = runs
            .iter()
            .filter(|r| !r.usage.cost_unknown)
            .map(|r| r.usage.cost_usd)
            .collect();
        let mut tokens: Vec<i64> = runs.iter().map(|r| r.usage.tokens()).collect();
        costs.sort_by(f64::total_cmp);
        tokens.sort_unstable();
        out.push(Estimate {
            agent: agent_name(&agents, *id),
            runs: runs.len(),
            median_cost_usd: median(&costs),
            median_tokens: median(&tokens),
        });
    }
    Ok(out)
}

fn median<T: Copy>(sorted: &[T]) -> Option<T> {
    sorted
        .get(sorted.len() / 2)
        .copied()
        .filter(|_| !sorted.is_empty())
}

/// What assigning an issue to an ensemble did.
#[derive(Debug, Clone)]
pub struct Assigned {
    pub ensemble_run: EnsembleRun,
    pub candidates: Vec<Run>,
    pub estimates: Vec<Estimate>,
}

/// Assigns `key` to the ensemble `name`: one run per member, blind, each on its own branch from the
/// repository's current commit, with the ensemble's check (else the workspace's) and budget. Refused
/// while a member has a live run on the issue, or while the issue has an undecided ensemble run.
pub async fn assign(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    name: &str,
) -> Result<Assigned> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let ensemble = by_name(state, caller, name).await.map_err(|e| match e {
        Error::NotFound => Error::invalid([(
            "ensemble",
            format!("no ensemble called {name:?} in this workspace"),
        )]),
        other => other,
    })?;
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let agents = state.store.list_agents(caller.ws.id).await?;
    let mut problems = Problems::default();
    for m in ensemble
        .settings
        .members
        .iter()
        .chain(ensemble.settings.reviewer.iter())
    {
        if !agents.iter().any(|a| a.id == *m) {
            problems.add(
                "ensemble",
                "one of its agents was deleted; edit the ensemble first",
            );
        }
    }
    problems.finish()?;
    let earlier = state.store.list_ensemble_runs(issue.id).await?;
    if let Some(open) = earlier.iter().find(|e| {
        matches!(
            e.status,
            EnsembleStatus::Running | EnsembleStatus::Reviewing
        )
    }) {
        return Err(Error::conflict(
            "ensemble",
            format!(
                "{} is already being worked on by ensemble {} (r{}); wait for it or stop its runs",
                issue.key, open.name, open.number
            ),
        ));
    }
    // The issue's project's repository and check when it has them, else the workspace's.
    let place = crate::engine::order::work_place(state, &caller.ws, &issue).await?;
    let mut settings = ensemble.settings.clone();
    if settings.check.is_none() {
        settings.check.clone_from(&place.check);
    }
    let (base_commit, base_branch) = match place.repo.as_deref().map(str::trim) {
        Some(path) if !path.is_empty() && Path::new(path).is_dir() => {
            base_of(Path::new(path)).await
        }
        _ => (None, None),
    };
    let new = NewEnsembleRun {
        workspace_id: caller.ws.id,
        issue_id: issue.id,
        ensemble_id: ensemble.id,
        name: ensemble.name.as_str().to_owned(),
        settings: settings.clone(),
        base_commit,
        base_branch,
    };
    let runs: Vec<NewRun> = settings
        .members
        .iter()
        .map(|m| NewRun::assignment(caller.ws.id, issue.id, *m))
        .collect();
    let (ensemble_run, candidates) = match state.store.create_ensemble_run(&new, &runs).await {
        Err(crate::store::Error::Conflict { constraint }) if constraint == "run_one_active_key" => {
            return Err(Error::conflict(
                "ensemble",
                "a member of the ensemble already has a live run on this issue; stop it first",
            ));
        }
        other => other?,
    };
    let estimates = estimate(state, caller, &settings).await?;
    for run in &candidates {
        state.hub.relay(crate::hub::Relayed::RunQueued(run.id));
    }
    state.runs.wake();
    if issue.status == crate::domain::IssueStatus::Todo
        || issue.status == crate::domain::IssueStatus::Backlog
    {
        let _ = state
            .store
            .move_issue(
                caller.ws.id,
                &issue.key,
                IssueStatus::InProgress,
                None,
                caller.actor(),
            )
            .await;
    }
    crate::engine::finish::announce(state, &issue);
    Ok(Assigned {
        ensemble_run,
        candidates,
        estimates,
    })
}

/// The commit and branch the repository at `repo` is on.
async fn base_of(repo: &Path) -> (Option<String>, Option<String>) {
    let commit = git::git(repo, &["rev-parse", "--verify", "HEAD"])
        .await
        .ok();
    let branch = git::git(repo, &["symbolic-ref", "--short", "-q", "HEAD"])
        .await
        .ok();
    (
        commit
            .map(|c| c.trim().to_owned())
            .filter(|c| !c.is_empty()),
        branch
            .map(|b| b.trim().to_owned())
            .filter(|b| !b.is_empty()),
    )
}

/// One candidate side by side with the others.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CandidateView {
    pub run_id: uuid::Uuid,
    pub agent: String,
    pub runtime: String,
    pub status: String,
    pub failure_reason: Option<String>,
    pub summary: Option<String>,
    pub branch: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub check: Option<CheckResult>,
    pub green: bool,
    pub diff_stat: Option<String>,
    /// Lines added plus removed, from the diff stat (the smaller diff wins a tie).
    pub lines_changed: Option<i64>,
    pub tokens: i64,
    pub cost_usd: f64,
    /// Some of its tokens had no price: its cost is unknown, never cheaper than a priced candidate's.
    pub cost_unknown: bool,
    pub cost_label: String,
    pub duration_secs: Option<i64>,
    /// The neutral label the reviewer saw, its score and reasons.
    pub review_label: Option<String>,
    pub review_score: Option<i64>,
    pub review_reasons: Vec<String>,
    pub chosen: bool,
}

/// The recommendation and the evidence it rests on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Recommendation {
    pub run_id: uuid::Uuid,
    pub agent: String,
    pub why: String,
    /// No check separated it from the others: the blind review's scores did.
    pub by_opinion_only: bool,
    /// What set it apart: `check` (the only one that passed), `review` (the blind review's score) or
    /// `cost` (neither: the lower known cost, then the smaller diff).
    pub decided_by: String,
}

/// An issue's ensemble run, compared.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Comparison {
    pub issue: String,
    pub ensemble: String,
    pub number: i32,
    pub status: String,
    pub early_stop: String,
    pub check: Option<String>,
    pub base_commit: Option<String>,
    pub base_branch: Option<String>,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<i64>,
    pub spent_usd: f64,
    pub spent_tokens: i64,
    /// What the reviewer cost (counted in the spend).
    pub review_cost_usd: f64,
    pub stop_reason: Option<String>,
    pub candidates: Vec<CandidateView>,
    pub green: usize,
    /// `verdict`, `invalid`, `no_answer`, or `none` (no review was needed or none is set).
    pub review: String,
    pub review_error: Option<String>,
    pub review_best: Option<String>,
    pub recommendation: Option<Recommendation>,
    pub chosen: Option<String>,
    pub merged_commit: Option<String>,
    /// What one agent alone cost on average (the median of the members' estimates), to compare with.
    pub single_agent_estimate_usd: Option<f64>,
}

/// The latest (or the `number`th) ensemble run of `key`, compared.
pub async fn compare(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    number: Option<i32>,
) -> Result<(EnsembleRun, Comparison)> {
    let issue = state.store.get_issue(caller.ws.id, key).await?;
    let all = state.store.list_ensemble_runs(issue.id).await?;
    let er = match number {
        Some(n) => all.into_iter().find(|e| e.number == n),
        None => all.into_iter().last(),
    }
    .ok_or_else(|| Error::Unknown {
        field: "ensemble",
        message: format!(
            "{key} has no ensemble run{}",
            number.map(|n| format!(" r{n}")).unwrap_or_default()
        ),
    })?;
    let runs = state.store.list_ensemble_members_runs(er.id).await?;
    let agents = state.store.list_agents(caller.ws.id).await?;
    let verdict = match &er.review {
        Some(ReviewOutcome::Verdict { verdict }) => Some(verdict.clone()),
        _ => None,
    };
    let mut views = Vec::new();
    for r in candidates(&er, &runs) {
        let check = check_of(state, r.id).await?;
        let label = er
            .review_labels
            .iter()
            .find(|(_, id)| *id == r.id)
            .map(|(l, _)| *l);
        let (score, reasons) = label
            .and_then(|l| verdict.as_ref().map(|v| verdict_for(v, l)))
            .unwrap_or((None, Vec::new()));
        let agent = agents.iter().find(|a| a.id == r.agent_id);
        let (cost_label, _) = r.usage.cost_label(agent.map(|a| a.profile.kind));
        views.push(CandidateView {
            run_id: r.id.0,
            agent: agent_name(&agents, r.agent_id),
            runtime: agent
                .map(|a| a.profile.kind.to_string())
                .unwrap_or_default(),
            status: r.status.to_string(),
            failure_reason: r.failure_reason.map(|f| f.to_string()),
            summary: r.summary.clone(),
            branch: r.branch.clone(),
            green: check.as_ref().is_some_and(CheckResult::passed_check),
            check,
            lines_changed: r.diff_stat.as_deref().map(lines_changed),
            diff_stat: r.diff_stat.clone(),
            tokens: r.usage.tokens(),
            cost_usd: r.usage.cost_usd,
            cost_unknown: r.usage.cost_unknown,
            cost_label,
            duration_secs: r
                .started_at
                .map(|s| (r.finished_at.unwrap_or_else(chrono::Utc::now) - s).num_seconds()),
            review_label: label.map(String::from),
            review_score: score,
            review_reasons: reasons,
            chosen: er.chosen_run_id == Some(r.id),
        });
    }
    let spent = total_spent(&runs);
    let review_cost =
        crate::engine::ensemble::review_run(&er, &runs).map_or(0.0, |r| r.usage.cost_usd);
    let green = views.iter().filter(|v| v.green).count();
    let (review, review_error, review_best) = match &er.review {
        None => ("none".to_owned(), None, None),
        Some(ReviewOutcome::Verdict { verdict }) => (
            "verdict".to_owned(),
            None,
            verdict["best"].as_str().map(str::to_owned),
        ),
        Some(ReviewOutcome::Invalid { error, .. }) => {
            ("invalid".to_owned(), Some(error.clone()), None)
        }
        Some(ReviewOutcome::NoAnswer { why }) => ("no_answer".to_owned(), Some(why.clone()), None),
    };
    let recommendation = recommend(&views, review_best.as_deref());
    let estimates = estimate(state, caller, &er.settings)
        .await
        .unwrap_or_default();
    let mut singles: Vec<f64> = estimates
        .iter()
        .take(er.settings.members.len())
        .filter_map(|e| e.median_cost_usd)
        .collect();
    singles.sort_by(f64::total_cmp);
    let comparison = Comparison {
        issue: issue.key.to_string(),
        ensemble: er.name.clone(),
        number: er.number,
        status: er.status.to_string(),
        early_stop: er.settings.early_stop.to_string(),
        check: er.settings.check.as_ref().map(|c| c.command.clone()),
        base_commit: er.base_commit.clone(),
        base_branch: er.base_branch.clone(),
        budget_usd: er.settings.budget.usd,
        budget_tokens: er.settings.budget.tokens,
        spent_usd: spent.cost_usd,
        spent_tokens: spent.tokens(),
        review_cost_usd: review_cost,
        stop_reason: er.stop_reason.clone(),
        green,
        review,
        review_error,
        review_best,
        recommendation,
        chosen: views.iter().find(|v| v.chosen).map(|v| v.agent.clone()),
        merged_commit: er.merged_commit.clone(),
        single_agent_estimate_usd: median(&singles),
        candidates: views,
    };
    Ok((er, comparison))
}

/// A candidate's score and reasons in a validated verdict.
fn verdict_for(verdict: &serde_json::Value, label: char) -> (Option<i64>, Vec<String>) {
    let label = label.to_string();
    let Some(entry) = verdict["candidates"].as_array().and_then(|c| {
        c.iter()
            .find(|e| e["label"].as_str() == Some(label.as_str()))
    }) else {
        return (None, Vec::new());
    };
    let reasons = entry["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (entry["score"].as_i64(), reasons)
}

/// Lines added plus removed in a `git diff --stat` summary ("2 files changed, 5 insertions(+), 1
/// deletion(-)").
fn lines_changed(stat: &str) -> i64 {
    let last = stat.lines().last().unwrap_or_default();
    last.split(',')
        .filter(|part| part.contains("insertion") || part.contains("deletion"))
        .filter_map(|part| part.split_whitespace().next()?.parse::<i64>().ok())
        .sum()
}

/// The recommendation, one rule everywhere: the check first, then the blind review's score, then the
/// lower cost (an unpriced candidate's cost is unknown, so it never ranks as the cheaper), then the
/// smaller diff; only candidates that changed something.
fn recommend(views: &[CandidateView], review_best: Option<&str>) -> Option<Recommendation> {
    let pool: Vec<&CandidateView> = views.iter().filter(|v| v.diff_stat.is_some()).collect();
    let cost = |v: &CandidateView| {
        if v.cost_unknown {
            i64::MAX
        } else {
            (v.cost_usd * 1e6) as i64
        }
    };
    // The candidate the reviewer judged best ranks ahead of its scores (a verdict may score another as
    // high or higher), so "judged best" and "recommended" never name two different candidates that
    // both passed.
    let judged_best =
        |v: &CandidateView| review_best.is_some() && v.review_label.as_deref() == review_best;
    let key = |v: &CandidateView| {
        (
            !v.green,
            !judged_best(v),
            -v.review_score.unwrap_or(-1),
            cost(v),
            v.lines_changed.unwrap_or(i64::MAX),
        )
    };
    let best = pool.iter().min_by_key(|v| key(v))?;
    let greens = pool.iter().filter(|v| v.green).count();
    let decided_by = if best.green && greens == 1 {
        "check"
    } else if best.review_score.is_some() || judged_best(best) {
        "review"
    } else {
        "cost"
    };
    let mut why = vec![match (best.green, greens) {
        (true, 1) => "the only candidate that passed the check".to_owned(),
        (true, n) if n == pool.len() => format!("all {n} candidates passed the check"),
        (true, 2) => "passed the check, as 1 other candidate did".to_owned(),
        (true, n) => format!("passed the check, as {} other candidates did", n - 1),
        (false, _) => "no candidate passed the check".to_owned(),
    }];
    match (decided_by, best.review_score) {
        ("check", _) => {}
        (_, score) if judged_best(best) => why.push(match score {
            Some(score) => format!("the blind review judged it best ({score}/10)"),
            None => "the blind review judged it best".to_owned(),
        }),
        (_, Some(score)) => why.push(format!("the blind review scored it {score}/10")),
        _ => {
            why.push("no review set them apart".to_owned());
            why.push(format!("cost {}", best.cost_label));
            if let Some(lines) = best.lines_changed {
                why.push(format!("{lines} lines changed"));
            }
        }
    }
    Some(Recommendation {
        run_id: best.run_id,
        agent: best.agent.clone(),
        why: why.join("; "),
        by_opinion_only: decided_by == "review",
        decided_by: decided_by.to_owned(),
    })
}

/// The person's choice: `candidate` is an agent name, a run id (or its prefix) or a review label.
/// With `merge`, the candidate's branch is merged into the base branch of the local repository (refused
/// on conflicts, or when that branch is checked out with uncommitted changes). The other candidates'
/// branches are removed; live candidates are stopped.
pub async fn choose(
    state: &Engine,
    caller: &Caller,
    key: &IssueKey,
    candidate: &str,
    merge: bool,
) -> Result<EnsembleRun> {
    if let Some(scope) = &caller.run {
        return Err(scope.refusal());
    }
    let (er, comparison) = compare(state, caller, key, None).await?;
    let raw = candidate.trim();
    let picked = comparison
        .candidates
        .iter()
        .find(|c| {
            c.agent == raw
                || c.review_label.as_deref() == Some(raw)
                || (raw.len() >= 4 && c.run_id.to_string().starts_with(&raw.to_ascii_lowercase()))
        })
        .ok_or_else(|| {
            Error::invalid([(
                "candidate",
                format!(
                    "no candidate {raw:?}; the candidates are {}",
                    comparison
                        .candidates
                        .iter()
                        .map(|c| c.agent.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )])
        })?;
    if er.status == EnsembleStatus::Chosen {
        return Err(Error::conflict(
            "candidate",
            format!(
                "a candidate of {key} was already chosen ({})",
                comparison.chosen.unwrap_or_default()
            ),
        ));
    }
    let runs = state.store.list_ensemble_members_runs(er.id).await?;
    let run = runs
        .iter()
        .find(|r| r.id.0 == picked.run_id)
        .ok_or(Error::NotFound)?;
    if !run.status.is_terminal() {
        return Err(Error::conflict(
            "candidate",
            format!(
                "{}'s run is still {}; wait for it to end or stop it",
                picked.agent, run.status
            ),
        ));
    }
    let issue = state.store.get_issue_by_id(er.issue_id).await?;
    let place = crate::engine::order::work_place(state, &caller.ws, &issue).await?;
    let repo = place
        .repo
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty() && Path::new(p).is_dir())
        .map(Path::new);
    let merged = if merge {
        let (Some(repo), Some(branch), Some(base)) =
            (repo, run.branch.as_deref(), er.base_branch.as_deref())
        else {
            return Err(Error::invalid([(
                "merge",
                "merging needs the workspace's local repository, the candidate's branch and the branch it started from"
                    .to_owned(),
            )]));
        };
        // What the candidate's run committed, never its branch's tip now: anyone may have moved that.
        let Some(work) = run.head_commit.as_deref() else {
            return Err(Error::invalid([(
                "merge",
                format!(
                    "{}'s run recorded no commit of its work (it ended before committing, or before Muster recorded commits); merge {branch} by hand",
                    picked.agent
                ),
            )]));
        };
        let message = format!(
            "{key}: merge {branch}, chosen from ensemble {} (r{})",
            er.name, er.number
        );
        // The merge is the chooser's: their name and email sign it.
        let who = (
            caller.user.display_name.as_str(),
            caller.user.email.as_str(),
        );
        Some(
            merge_into(repo, base, work, &message, who)
                .await
                .map_err(|e| Error::conflict("merge", e.to_string()))?,
        )
    } else {
        None
    };
    let chosen = match state
        .store
        .choose_ensemble_candidate(er.id, run.id, caller.user.id, merged.as_deref())
        .await
    {
        Err(crate::store::Error::Conflict { .. }) => {
            return Err(Error::conflict(
                "candidate",
                "a candidate was chosen meanwhile",
            ));
        }
        other => other?,
    };
    // The others: stopped if still live, their branches removed.
    let stop = crate::domain::StopNote {
        why: crate::domain::StopWhy::Person,
        note: format!("stopped: {} was chosen", picked.agent),
    };
    for other in candidates(&er, &runs)
        .into_iter()
        .filter(|r| r.id != run.id)
    {
        if !other.status.is_terminal() {
            let _ = state.stop_run(other.id, &stop).await;
        }
        // Only while it still holds what the candidate committed: a branch someone moved is theirs.
        if let (Some(repo), Some(branch), Some(commit)) =
            (repo, other.branch.as_deref(), other.head_commit.as_deref())
            && let Err(e) = git::prune_branch(repo, branch, commit).await
        {
            tracing::warn!(error = %e, branch, "cannot remove a candidate's branch");
        }
    }
    // The thread records the choice (and the merge); a merged choice is the issue's work delivered.
    let mut text = format!(
        "{} chose {}'s work from ensemble {} (r{})",
        caller.user.display_name, picked.agent, er.name, er.number
    );
    match &merged {
        Some(commit) => text.push_str(&format!(
            " and merged it into {} as {}.",
            er.base_branch.as_deref().unwrap_or("the base branch"),
            commit.get(..12).unwrap_or(commit)
        )),
        None => text.push('.'),
    }
    state
        .note_on_issue(er.issue_id, Some(run.id), &text)
        .await?;
    let mut issue = state.store.get_issue(caller.ws.id, key).await?;
    if merged.is_some() && !matches!(issue.status, IssueStatus::Done | IssueStatus::Cancelled) {
        issue = state
            .store
            .move_issue(
                caller.ws.id,
                key,
                IssueStatus::Done,
                None,
                CommentAuthor::User(caller.user.id),
            )
            .await?;
        crate::engine::plan::issue_moved(state, &issue).await;
    }
    crate::engine::finish::announce(state, &issue);
    Ok(chosen)
}

/// Merges the commit `work` into `base` in `repo` without touching any working tree but the one that
/// has `base` checked out (fast-forwarded there only when it is clean); the new commit's id.
async fn merge_into(
    repo: &Path,
    base: &str,
    work: &str,
    message: &str,
    (name, email): (&str, &str),
) -> std::result::Result<String, git::GitError> {
    let base_ref = format!("refs/heads/{base}");
    let old = git::git(repo, &["rev-parse", "--verify", &base_ref])
        .await?
        .trim()
        .to_owned();
    let tip = git::commit(repo, work).await?;
    let tree = git::git(
        repo,
        &["merge-tree", "--write-tree", "--name-only", &old, &tip],
    )
    .await
    .map_err(|e| {
        git::GitError::Other(format!(
            "commit {work} does not merge cleanly into {base}: {e}"
        ))
    })?;
    let tree = tree.lines().next().unwrap_or_default().trim().to_owned();
    let (name, email) = (format!("user.name={name}"), format!("user.email={email}"));
    let commit = git::git(
        repo,
        &[
            "-c",
            &name,
            "-c",
            &email,
            "commit-tree",
            &tree,
            "-p",
            &old,
            "-p",
            &tip,
            "-m",
            message,
        ],
    )
    .await?
    .trim()
    .to_owned();
    let checked_out = git::git(repo, &["symbolic-ref", "-q", "HEAD"])
        .await
        .ok()
        .map(|h| h.trim().to_owned());
    if checked_out.as_deref() == Some(base_ref.as_str()) {
        let dirty = git::git(repo, &["status", "--porcelain", "--untracked-files=no"]).await?;
        if !dirty.trim().is_empty() {
            return Err(git::GitError::Other(format!(
                "{base} is checked out in {} with uncommitted changes; commit or stash them, then choose again",
                repo.display()
            )));
        }
        git::git(repo, &["merge", "--ff-only", "-q", &commit]).await?;
    } else {
        git::git(repo, &["update-ref", &base_ref, &commit, &old]).await?;
    }
    Ok(commit)
}

/// Sets or clears the workspace's check command (owners and admins).
pub async fn set_workspace_check(
    state: &Engine,
    caller: &Caller,
    command: &str,
    timeout_secs: Option<u64>,
) -> Result<crate::domain::Workspace> {
    caller.require_manager()?;
    let check = (!command.trim().is_empty()).then(|| CheckSpec {
        command: command.trim().to_owned(),
        timeout_secs: timeout_secs.unwrap_or(CHECK_TIMEOUT_DEFAULT_SECS),
    });
    if let Some(check) = &check {
        check.validate()?;
    }
    Ok(state
        .store
        .set_workspace_check(caller.ws.id, check.as_ref())
        .await?)
}

/// Each issue's latest ensemble run and its short state for the board: "ensemble: 2/3 green, $1.4000".
pub async fn board_badges(
    state: &Engine,
    ws: crate::domain::WorkspaceId,
) -> Result<HashMap<crate::domain::IssueId, String>> {
    let mut out = HashMap::new();
    for er in state.store.latest_ensemble_runs(ws).await? {
        let runs = state.store.list_ensemble_members_runs(er.id).await?;
        let cands = candidates(&er, &runs);
        let mut green = 0;
        for r in &cands {
            if check_of(state, r.id)
                .await?
                .is_some_and(|c| c.passed_check())
            {
                green += 1;
            }
        }
        // Unpriced work reads "unpriced" (or "$0.0123 + unpriced"), never a $0.00 it did not cost.
        let (cost, _) = total_spent(&runs).cost_label(None);
        out.insert(
            er.issue_id,
            format!("ensemble: {green}/{} green, {cost}", cands.len()),
        );
    }
    Ok(out)
}

/// What the compare page shows of one candidate beyond its row: its diff split by file, and the last
/// lines it logged.
#[derive(Debug, Clone, Default)]
pub struct CandidateDetails {
    /// (path, patch) per file, in the diff's order.
    pub files: Vec<(String, String)>,
    pub log_tail: Vec<String>,
    pub check_tail: Option<String>,
}

/// How many events the log tail reads.
const LOG_TAIL_EVENTS: i64 = 40;
/// How many lines of it are shown.
const LOG_TAIL_LINES: usize = 8;

/// A candidate's diff by file and its log's tail.
pub async fn candidate_details(
    state: &Engine,
    run: crate::domain::RunId,
) -> Result<CandidateDetails> {
    let patch = crate::engine::ensemble::diff_of(state, run)
        .await?
        .map(|(p, _)| p)
        .unwrap_or_default();
    let mut files: Vec<(String, String)> = Vec::new();
    for line in patch.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest
                .trim_end()
                .rsplit(" b/")
                .next()
                .unwrap_or(rest)
                .to_owned();
            files.push((path, String::new()));
        }
        match files.last_mut() {
            Some((_, p)) => p.push_str(line),
            None if !line.trim().is_empty() => files.push(("(diff)".to_owned(), line.to_owned())),
            None => {}
        }
    }
    let mut log_tail: Vec<String> = Vec::new();
    for e in state.store.run_events_tail(run, LOG_TAIL_EVENTS).await? {
        let text = match e.body() {
            RunEventBody::Agent(AgentEvent::Text { text }) => Some(text),
            RunEventBody::Stderr { line } | RunEventBody::Agent(AgentEvent::Raw { line }) => {
                Some(line)
            }
            RunEventBody::Agent(AgentEvent::ToolCall { name, .. }) => Some(format!("→ {name}")),
            RunEventBody::Agent(AgentEvent::Command { cmd, .. }) => Some(format!("$ {cmd}")),
            RunEventBody::Error { message }
            | RunEventBody::Agent(AgentEvent::Error { message, .. }) => {
                Some(format!("error: {message}"))
            }
            RunEventBody::Check(c) => Some(format!(
                "check: exit {}",
                c.exit_code
                    .map_or_else(|| "null".to_owned(), |code| code.to_string())
            )),
            _ => None,
        };
        if let Some(text) = text {
            log_tail.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| l.chars().take(200).collect::<String>()),
            );
        }
    }
    let cut = log_tail.len().saturating_sub(LOG_TAIL_LINES);
    log_tail.drain(..cut);
    let check_tail = check_of(state, run)
        .await?
        .map(|c| c.tail)
        .filter(|t| !t.trim().is_empty());
    Ok(CandidateDetails {
        files,
        log_tail,
        check_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(agent: &str, green: bool, cost: Option<f64>, lines: i64) -> CandidateView {
        CandidateView {
            run_id: uuid::Uuid::new_v4(),
            agent: agent.to_owned(),
            runtime: "custom".to_owned(),
            status: "succeeded".to_owned(),
            failure_reason: None,
            summary: None,
            branch: None,
            check: None,
            green,
            diff_stat: Some(format!("1 file changed, {lines} insertions(+)")),
            lines_changed: Some(lines),
            tokens: 100,
            cost_usd: cost.unwrap_or(0.0),
            cost_unknown: cost.is_none(),
            cost_label: cost.map_or_else(|| "unpriced".to_owned(), |c| format!("${c:.4}")),
            duration_secs: Some(1),
            review_label: None,
            review_score: None,
            review_reasons: Vec::new(),
            chosen: false,
        }
    }

    /// Issue 27: "passed the check, like 1 other(s)" when 3 of 3 passed, and an unpriced candidate ranked
    /// cheaper than a priced one.
    #[test]
    fn unpriced_never_ranks_cheaper_and_the_wording_counts_right() {
        let all = [
            candidate("local", true, None, 3),
            candidate("priced", true, Some(0.0009), 9),
            candidate("dear", true, Some(0.5), 1),
        ];
        let r = recommend(&all, None).unwrap();
        assert_eq!(
            (r.agent.as_str(), r.decided_by.as_str()),
            ("priced", "cost")
        );
        assert_eq!(
            r.why,
            "all 3 candidates passed the check; no review set them apart; cost $0.0009; 9 lines changed"
        );
        assert!(!r.by_opinion_only, "no opinion was asked");

        let two = [
            candidate("a", true, Some(0.2), 3),
            candidate("b", true, Some(0.1), 3),
            candidate("c", false, Some(0.0), 3),
        ];
        let r = recommend(&two, None).unwrap();
        assert_eq!(r.agent, "b");
        assert!(
            r.why
                .starts_with("passed the check, as 1 other candidate did;"),
            "{}",
            r.why
        );

        let one = [
            candidate("a", false, Some(0.0), 3),
            candidate("b", true, Some(1.0), 3),
        ];
        let r = recommend(&one, None).unwrap();
        assert_eq!((r.agent.as_str(), r.decided_by.as_str()), ("b", "check"));
        assert_eq!(r.why, "the only candidate that passed the check");
    }

    /// Issue 27: "judged best: A (opencode-slow)" beside "Recommended: claude-quick" when the verdict
    /// scored the other one higher.
    #[test]
    fn the_reviewers_pick_is_the_recommendation_among_those_that_passed() {
        let reviewed = |agent: &str, green: bool, label: &str, score: i64| {
            let mut c = candidate(agent, green, Some(0.1), 3);
            c.review_label = Some(label.to_owned());
            c.review_score = Some(score);
            c
        };
        let views = [
            reviewed("claude-quick", true, "B", 7),
            reviewed("opencode-slow", true, "A", 6),
            reviewed("codex-wrong", false, "C", 9),
        ];
        let r = recommend(&views, Some("A")).unwrap();
        assert_eq!(
            (r.agent.as_str(), r.decided_by.as_str()),
            ("opencode-slow", "review")
        );
        assert_eq!(
            r.why,
            "passed the check, as 1 other candidate did; the blind review judged it best (6/10)"
        );
        assert!(r.by_opinion_only);
        // A pick that failed the check does not outrank one that passed.
        let r = recommend(&views, Some("C")).unwrap();
        assert_eq!(r.agent, "claude-quick");
        assert_eq!(
            r.why,
            "passed the check, as 1 other candidate did; the blind review scored it 7/10"
        );
    }
}
