//! The run page: every stored event rendered as a timeline, then (while the run is live) a WebSocket
//! that resumes after the last rendered seq and pushes what follows as out-of-band fragments; and the
//! cancel and retry forms. Also the views of runs the issue page and the board use.

mod live;
mod origin;
mod timeline;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use muster_web::views::{
    FailureView, NavItem, RunCountersView, RunHeaderView, RunPageView, ThreadRunView,
};

use super::inbox::nav_with_inbox;
use super::views::People;
use super::{PageResult, see_other};
use crate::domain::failure::{self, FailureFacts};
use crate::domain::{Actor, Agent, Run, RunId, RunStatus, RunTrigger, RuntimeKind, Usage};
use crate::http::Error;
use crate::http::extract::WsMember;
use crate::http::form::{Form, NoFields};
use crate::markdown::to_safe_html;
use crate::service::runners::{self, Candidate};
use crate::service::runs as svc;
use crate::service::thread::RunEntry;
use crate::state::AppState;
use timeline::{Timeline, diff_view};

/// Events read from the store per page when rendering a whole log.
const READ_PAGE: i64 = 1_000;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/w/{slug}/runs/{id}", get(show))
        .route("/w/{slug}/runs/{id}/cancel", post(cancel))
        .route("/w/{slug}/runs/{id}/retry", post(retry))
        .route("/w/{slug}/runs/{id}/live", get(live::live))
}

/// A run id from the path; anything else is 404.
pub(super) fn parse_run_id(raw: &str) -> crate::http::Result<RunId> {
    raw.parse::<RunId>().map_err(|_| Error::NotFound)
}

/// The run page's URL.
pub(super) fn run_url(slug: &str, id: RunId) -> String {
    format!("/w/{slug}/runs/{id}")
}

async fn show(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
) -> PageResult {
    let run = svc::get(&state, &member.caller, parse_run_id(&id)?).await?;
    let people = People::load(&state, &member.caller).await?;
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    let slug = member.caller.ws.slug.to_string();
    let (rates, _) = crate::service::usage::rate_table(&state, member.caller.ws.id).await?;
    let mut fold = Timeline::new(run.id.to_string(), agent_model(&people, &run))
        .with_rates(rates)
        .with_text_deltas(streams_text_deltas(&people, &run));
    let mut after = 0;
    loop {
        let events = state
            .store
            .run_events_since(run.id, after, READ_PAGE)
            .await?;
        let Some(last) = events.last() else { break };
        after = last.seq;
        events.iter().for_each(|e| fold.push(e));
    }
    let items = fold.take().items;
    let usage = if run.status.is_terminal() {
        run.usage
    } else {
        fold.live_usage()
    };
    let place = RunPlace::load(&state, &run).await?;
    let mut header = header_view(&slug, &run, &issue, &people, &place);
    header.waiting = match super::plans::run_waiting(&state, &run).await? {
        Some(blocked) => Some(blocked),
        None => runners::run_waiting(&state, &run).await?,
    };
    header.open_pull_url = super::pulls::run_open_url(&state, &member.caller, &run).await?;
    let view = RunPageView {
        nav: nav_with_inbox(&state, &member, NavItem::Board).await?,
        origin: origin::origin_view(&state, &slug, &run, &issue, &people).await?,
        header,
        counters: counters_view(&run, &people, &usage, fold.tokens_per_second),
        items,
        diff: diff_view(run.diff_stat.as_deref(), fold.patch.as_deref()),
        last_seq: fold.last_seq,
        live_url: (!run.status.is_terminal())
            .then(|| format!("{}/live?after={}", run_url(&slug, run.id), fold.last_seq)),
    };
    Ok(muster_web::pages::run(&view).into_response())
}

async fn cancel(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let run = svc::cancel(&state, &member.caller, parse_run_id(&id)?).await?;
    Ok(see_other(&run_url(member.caller.ws.slug.as_str(), run.id)))
}

async fn retry(
    State(state): State<AppState>,
    member: WsMember,
    Path((_, id)): Path<(String, String)>,
    _form: Form<NoFields>,
) -> PageResult {
    let queued = svc::retry(&state, &member.caller, parse_run_id(&id)?).await?;
    Ok(see_other(&run_url(
        member.caller.ws.slug.as_str(),
        queued.id,
    )))
}

/// The agent's configured model, to price usage its CLI reports without a cost.
fn agent_model(people: &People, run: &Run) -> Option<String> {
    people
        .agents
        .iter()
        .find(|a| a.id == run.agent_id)
        .and_then(|a| a.profile.model.clone())
}

/// Whether the run's agent streams its answer as text deltas (a local model: Muster's own loop emits
/// each coalesced chunk as it arrives), which the page shows as one growing block.
fn streams_text_deltas(people: &People, run: &Run) -> bool {
    people
        .agents
        .iter()
        .find(|a| a.id == run.agent_id)
        .is_some_and(|a| a.profile.kind.is_local_model())
}

/// What the run page's header says that the run's row does not hold: which run of its issue it is
/// ("Run 3"), and the name of the runner that took it.
#[derive(Debug, Clone, Default)]
pub(super) struct RunPlace {
    number: Option<usize>,
    runner: Option<(crate::domain::RunnerId, String)>,
}

impl RunPlace {
    pub(super) async fn load(state: &AppState, run: &Run) -> crate::store::Result<Self> {
        let mut runs = state.store.list_runs_for_issue(run.issue_id).await?;
        runs.sort_by_key(|r| (r.created_at, r.id));
        let mut place = Self {
            number: runs.iter().position(|r| r.id == run.id).map(|i| i + 1),
            runner: None,
        };
        place.follow(state, run).await;
        Ok(place)
    }

    /// Reads the runner's name again only when the run is held by another runner than the one known.
    pub(super) async fn follow(&mut self, state: &AppState, run: &Run) {
        let Some(id) = run.runner_id else {
            return;
        };
        if self.runner.as_ref().is_some_and(|(known, _)| *known == id) {
            return;
        }
        match state.store.get_runner(id).await {
            Ok(runner) => self.runner = Some((id, runner.name)),
            Err(e) => tracing::debug!(error = %e, "cannot read the run's runner"),
        }
    }
}

/// The run page's header.
pub(super) fn header_view(
    slug: &str,
    run: &Run,
    issue: &crate::domain::Issue,
    people: &People,
    place: &RunPlace,
) -> RunHeaderView {
    let url = run_url(slug, run.id);
    RunHeaderView {
        id: run.id.to_string(),
        issue_key: issue.key.to_string(),
        issue_title: issue.title.as_str().to_owned(),
        issue_url: format!("/w/{slug}/issues/{}", issue.key),
        agent: Some(people.person(Actor::Agent(run.agent_id))),
        attempt: run.attempt,
        number: place.number,
        runner: place.runner.as_ref().map(|(_, name)| name.clone()),
        status: run.status.to_string(),
        stalled_at: run.stalled_at.filter(|_| !run.status.is_terminal()),
        failure: failure_view(slug, run, people),
        exit_code: run.exit_code.filter(|_| run.failure_reason.is_some()),
        branch: run.branch.clone(),
        head_commit: run.head_commit.clone(),
        created_at: Some(run.created_at),
        cancel_url: (!run.status.is_terminal()).then(|| format!("{url}/cancel")),
        retry_url: svc::retryable(run.status).then(|| format!("{url}/retry")),
        url,
        waiting: None,
        open_pull_url: None,
    }
}

/// The run's agent, when it still exists.
fn agent_of<'a>(people: &'a People, run: &Run) -> Option<&'a Agent> {
    people.agents.iter().find(|a| a.id == run.agent_id)
}

/// Why `run` did not succeed, explained (see `domain::failure`), with a link to its agent's settings
/// when the fix is there; `None` for a run without a failure reason.
pub(crate) fn failure_view(slug: &str, run: &Run, people: &People) -> Option<FailureView> {
    let agent = agent_of(people, run);
    let kind = agent.map_or(RuntimeKind::Custom, |a| a.profile.kind);
    let model = agent.and_then(|a| a.profile.model.as_deref());
    let facts = FailureFacts::of(run, kind, model)?;
    let text = failure::explain(&facts);
    Some(FailureView {
        settings_url: agent
            .filter(|_| text.in_agent_settings)
            .map(|a| format!("/w/{slug}/agents/{}", a.profile.name.as_str())),
        what: text.what,
        to_do: text.to_do,
        details: failure::diagnostic(&facts),
    })
}

/// The cost label of `run`'s `usage` and its title (see [`Usage::cost_label`]).
fn cost_of(people: &People, run: &Run, usage: &Usage) -> (String, Option<String>) {
    let (label, title) = usage.cost_label(agent_of(people, run).map(|a| a.profile.kind));
    (label, title.map(str::to_owned))
}

/// The counters for `usage`, with the run's clock.
pub(super) fn counters_view(
    run: &Run,
    people: &People,
    usage: &Usage,
    tokens_per_second: Option<f64>,
) -> RunCountersView {
    let (cost, cost_title) = cost_of(people, run, usage);
    RunCountersView {
        cost,
        cost_title,
        tokens_per_second: tokens_per_second.map(|t| format!("{t:.1}")),
        input_tokens: thousands(usage.input_tokens),
        output_tokens: thousands(usage.output_tokens),
        cache_tokens: thousands(usage.cache_read_tokens + usage.cache_write_tokens),
        started_at: run.started_at,
        finished_at: run
            .finished_at
            .or_else(|| run.status.is_terminal().then(Utc::now)),
        elapsed: run
            .started_at
            .map(|s| duration(s, run.finished_at.unwrap_or_else(Utc::now)))
            .unwrap_or_else(|| "—".to_owned()),
    }
}

/// `12345` → `"12,345"`.
pub(crate) fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// `"2m 05s"`, `"1h 02m"`, `"12s"`.
pub(crate) fn duration(from: DateTime<Utc>, to: DateTime<Utc>) -> String {
    let secs = (to - from).num_seconds().max(0);
    match secs {
        s if s >= 3600 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m {:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// A run as one entry of the issue page's timeline (no reply box: the page decides where that goes).
pub(crate) fn thread_run(
    slug: &str,
    entry: &RunEntry,
    number: usize,
    people: &People,
) -> ThreadRunView {
    let run = &entry.run;
    let u = &run.usage;
    let tokens = u.tokens();
    let (cost, cost_title) = cost_of(people, run, u);
    let by = || entry.trigger_author.map(|a| people.person(a).name);
    let trigger = match run.trigger {
        RunTrigger::Assignment => "assigned".to_owned(),
        RunTrigger::Retry => "retry".to_owned(),
        RunTrigger::Comment => by().map_or_else(
            || "after a comment".into(),
            |n| format!("after {n}'s comment"),
        ),
        RunTrigger::Mention => {
            by().map_or_else(|| "mentioned".into(), |n| format!("mentioned by {n}"))
        }
    };
    let summary = entry
        .summary
        .as_ref()
        .map(|c| c.body.as_str())
        .or(run.summary.as_deref());
    ThreadRunView {
        id: run.id.to_string(),
        url: run_url(slug, run.id),
        agent: Some(people.person(Actor::Agent(run.agent_id))),
        attempt: run.attempt,
        number,
        status: run.status.to_string(),
        stalled: run.stalled_at.is_some() && !run.status.is_terminal(),
        trigger,
        trigger_href: run
            .trigger_comment_id
            .filter(|_| entry.trigger_author.is_some())
            .map(|c| format!("#comment-{c}")),
        live: entry.is_live(),
        waiting: entry.waiting.clone(),
        duration: run
            .started_at
            .map(|s| duration(s, run.finished_at.unwrap_or_else(Utc::now)))
            .unwrap_or_default(),
        cost,
        cost_title,
        tokens: thousands(tokens),
        summary_html: summary.map(to_safe_html),
        failure: failure_view(slug, run, people),
        diff_stat: run
            .diff_stat
            .as_deref()
            .and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()))
            .map(|l| l.trim().to_owned()),
        created_at: run.created_at,
        reply: None,
    }
}

/// The board card's run indicator for an issue's latest run: `queued`, `running`, `stalled`, `failed`,
/// `timed_out`, `interrupted`; nothing once it succeeded or was cancelled.
pub(crate) fn card_run_state(run: &Run) -> Option<String> {
    Some(match run.status {
        RunStatus::Queued | RunStatus::Claimed => "queued".to_owned(),
        RunStatus::Running if run.stalled_at.is_some() => "stalled".to_owned(),
        RunStatus::Succeeded | RunStatus::Cancelled => return None,
        other => other.to_string(),
    })
}

/// Why queued runs wait, for a whole board: the workspace's runners and agents are read once per
/// render (and not at all when nothing is queued), whatever the number of cards.
pub(crate) struct Waiting {
    candidates: Vec<Candidate>,
    agents: std::collections::HashMap<crate::domain::AgentId, Agent>,
}

impl Waiting {
    /// Reads what [`Waiting::reason`] needs when one of `runs` is queued.
    pub(crate) async fn load<'a>(
        state: &AppState,
        ws: crate::domain::WorkspaceId,
        mut runs: impl Iterator<Item = &'a Run>,
    ) -> crate::http::Result<Self> {
        if !runs.any(|r| r.status == RunStatus::Queued) {
            return Ok(Waiting {
                candidates: Vec::new(),
                agents: Default::default(),
            });
        }
        let candidates = runners::candidates(&state.engine, ws).await?;
        let agents = state.store.list_agents(ws).await?;
        Ok(Waiting {
            candidates,
            agents: agents.into_iter().map(|a| (a.id, a)).collect(),
        })
    }

    /// The waiting sentence for `run`, when it is queued and no runner could take it.
    pub(crate) fn reason(&self, run: &Run) -> Option<String> {
        let agent = self.agents.get(&run.agent_id)?;
        runners::run_waiting_reason(&self.candidates, run, agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
        let t = Utc::now();
        assert_eq!(duration(t, t + chrono::TimeDelta::seconds(125)), "2m 05s");
        assert_eq!(duration(t, t + chrono::TimeDelta::seconds(3720)), "1h 02m");
        assert_eq!(duration(t, t - chrono::TimeDelta::seconds(5)), "0s");
    }
}
