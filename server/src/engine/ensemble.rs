//! The server's side of ensembles: what a candidate's or the reviewer's order carries, the one budget
//! (checked whenever a member's runner reports what it has spent), the early-stop policy (checked when a
//! candidate ends, on its check result), the blind review when the checks do not decide, and the end
//! (the issue goes to review; a person compares and chooses).
//!
//! Every step reads the ensemble run and its runs from the store and acts on what it finds, so it can
//! run on any replica, more than once: queueing the review is one guarded write (`running` →
//! `reviewing`), deciding another (`running | reviewing` → `decided`), so two replicas never both do it.

use crate::domain::review::ReviewCandidate;
use crate::domain::{
    AgentId, Budget, CHECK_EVENT, CheckResult, CommentAuthor, EarlyStop, EnsembleRun,
    EnsembleRunId, EnsembleStatus, FailureReason, InboxKind, Issue, IssueStatus, NewInboxItem,
    NewRun, ReviewOutcome, Run, RunEventBody, RunId, RunOutcome, RunStatus, StopNote, StopWhy,
    Usage,
};
use crate::engine::Engine;
use crate::engine::order::Unread;
use crate::hub::Relayed;
use crate::runner::protocol::Order;
use crate::store;

/// The brief (the CLI's context file) of the reviewer's run: its prompt says everything else.
const REVIEW_BRIEF: &str = "# Blind review\n\nYou compare anonymised candidate changes to one issue. Judge only \
    the evidence in the prompt (each candidate's check result and diff) and answer only with the JSON \
    verdict the prompt asks for.\n";

/// The most bytes of one candidate's diff the reviewer is shown.
const REVIEW_DIFF_BYTES: usize = 60_000;
/// The most bytes of the reviewer's answer kept with an invalid verdict.
const ANSWER_KEPT: usize = 4_000;

/// The note of a stop told through another replica (a NOTIFY carries ids, not text).
pub(crate) fn relayed_note(why: StopWhy) -> StopNote {
    let note = match why {
        StopWhy::OverBudget => "stopped over budget: the ensemble's budget is spent",
        StopWhy::OverCap => "stopped over a monthly spend cap",
        StopWhy::EarlyStop => "stopped early: the ensemble's early-stop policy was met",
        StopWhy::Person => "stopped by a person",
    };
    StopNote {
        why,
        note: note.to_owned(),
    }
}

/// The branch of a candidate: `muster/<KEY>-<agent>-r<n>` (`n` the ensemble run's number), with
/// `-a<attempt>` for a retry.
pub(crate) fn candidate_branch(issue_key: &str, agent: &str, number: i32, attempt: i32) -> String {
    let agent = super::order::branch_slug(agent);
    match attempt {
        1 => format!("muster/{issue_key}-{agent}-r{number}"),
        n => format!("muster/{issue_key}-{agent}-r{number}-a{n}"),
    }
}

/// What one candidate or the reviewer may spend: the tighter of its own per-run budget and `cap`.
fn tighter(own: Budget, cap: Budget) -> Budget {
    let min_f = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let min_i = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Budget {
        usd: min_f(own.usd, cap.usd),
        tokens: min_i(own.tokens, cap.tokens),
    }
}

/// Everything the runs of an ensemble run have spent (live runs as last reported).
pub fn total_spent(runs: &[Run]) -> Usage {
    runs.iter().map(|r| &r.usage).sum()
}

/// What is left of `budget` after `spent` (`None` where it has no limit of that kind).
fn left(budget: Budget, spent: &Usage) -> Budget {
    Budget {
        usd: budget.usd.map(|usd| (usd - spent.cost_usd).max(0.0)),
        tokens: budget.tokens.map(|t| (t - spent.tokens()).max(0)),
    }
}

/// Why the ensemble is over its budget, if it is.
fn over_budget(budget: Budget, spent: &Usage) -> Option<String> {
    if let Some(usd) = budget.usd.filter(|usd| spent.cost_usd >= *usd) {
        return Some(format!(
            "stopped over budget: the ensemble has spent ${:.4} of its ${usd:.4} budget",
            spent.cost_usd
        ));
    }
    let used = spent.tokens();
    budget
        .tokens
        .filter(|t| used >= *t)
        .map(|t| format!("stopped over budget: the ensemble has used {used} of its {t} tokens"))
}

/// The candidates of an ensemble run: each member's latest run (a retry replaces its attempt).
pub fn candidates<'a>(er: &EnsembleRun, runs: &'a [Run]) -> Vec<&'a Run> {
    er.settings
        .members
        .iter()
        .filter_map(|m| runs.iter().rev().find(|r| r.agent_id == *m))
        .collect()
}

/// The reviewer's latest run, once the review is queued.
pub fn review_run<'a>(er: &EnsembleRun, runs: &'a [Run]) -> Option<&'a Run> {
    let reviewer = er.settings.reviewer?;
    er.review_run_id?;
    runs.iter().rev().find(|r| r.agent_id == reviewer)
}

/// A candidate's check result, from its log.
pub async fn check_of(engine: &Engine, run: RunId) -> store::Result<Option<CheckResult>> {
    Ok(engine
        .store
        .last_run_event_of_kind(run, CHECK_EVENT)
        .await?
        .and_then(|e| match e.body() {
            RunEventBody::Check(c) => Some(c),
            _ => None,
        }))
}

/// A candidate's diff (the patch its `diff` event carries) and whether it was truncated.
pub async fn diff_of(engine: &Engine, run: RunId) -> store::Result<Option<(String, bool)>> {
    Ok(engine
        .store
        .last_run_event_of_kind(run, "diff")
        .await?
        .map(|e| match e.body() {
            RunEventBody::Diff(d) => (d.patch, d.truncated),
            _ => (String::new(), false),
        }))
}

/// Shapes the order of a run that belongs to an ensemble run: a candidate gets its branch, the common
/// base commit, the check, and its share of the budget; the reviewer gets the blind review as its
/// prompt, no repository, and what is left of the budget.
pub(crate) async fn shape_order(
    engine: &Engine,
    run: &Run,
    issue: &Issue,
    agent_name: &str,
    order: &mut Order,
) -> Result<(), Unread> {
    let Some(id) = run.ensemble_run_id else {
        return Ok(());
    };
    let er = engine
        .store
        .get_ensemble_run(id)
        .await
        .map_err(Unread::of("the run's ensemble"))?;
    // A candidate neither continues its agent's earlier work on the issue nor sees anyone else's.
    order.resume = None;
    if er.settings.members.contains(&run.agent_id) {
        order.branch = candidate_branch(&issue.key.to_string(), agent_name, er.number, run.attempt);
        order.base.clone_from(&er.base_commit);
        order.check.clone_from(&er.settings.check);
        order.agent.budget = tighter(order.agent.budget, er.settings.candidate_budget());
        order.blind = true;
        return Ok(());
    }
    let runs = engine
        .store
        .list_ensemble_members_runs(id)
        .await
        .map_err(Unread::of("the ensemble's runs"))?;
    // Nothing in what the reviewer reads may say whose work it is: the members' names, models and
    // runtimes are hidden wherever they appear (a commit message, a check's output).
    let agents = engine
        .store
        .list_agents(run.workspace_id)
        .await
        .map_err(Unread::of("the workspace's agents"))?;
    let mut hidden: Vec<String> = Vec::new();
    for a in agents
        .iter()
        .filter(|a| er.settings.members.contains(&a.id))
    {
        hidden.push(a.profile.name.as_str().to_owned());
        hidden.extend(a.profile.model.clone());
        hidden.push(a.profile.kind.to_string());
    }
    hidden.push(er.name.clone());
    let hidden: Vec<&str> = hidden.iter().map(String::as_str).collect();
    let mut shown = Vec::with_capacity(er.review_labels.len());
    for (label, candidate) in &er.review_labels {
        let (diff, truncated) = diff_of(engine, *candidate)
            .await
            .map_err(Unread::of("a candidate's diff"))?
            .unwrap_or_default();
        let check = check_of(engine, *candidate)
            .await
            .map_err(Unread::of("a candidate's check"))?;
        let mut diff = diff;
        let cut = truncated || diff.len() > REVIEW_DIFF_BYTES;
        if diff.len() > REVIEW_DIFF_BYTES {
            let mut at = REVIEW_DIFF_BYTES;
            while !diff.is_char_boundary(at) {
                at -= 1;
            }
            diff.truncate(at);
        }
        let mut candidate = ReviewCandidate {
            label: *label,
            diff,
            diff_truncated: cut,
            check,
        };
        candidate.hide(&hidden);
        shown.push(candidate);
    }
    let prompt = crate::domain::review::review_prompt(issue.title.as_str(), &issue.body, &shown);
    order.brief = REVIEW_BRIEF.to_owned();
    order.prompt = prompt;
    order.repo = None;
    order.skills.clear();
    order.check = None;
    order.base = None;
    order.agent.budget = tighter(
        order.agent.budget,
        left(er.settings.budget, &total_spent(&runs)),
    );
    Ok(())
}

/// The outcome of a queued run the server stops: over budget is a failure saying so; an early stop is a
/// cancel saying why.
fn stopped_outcome(note: &StopNote) -> RunOutcome {
    let mut outcome = super::finish::cancelled_outcome();
    match note.why {
        StopWhy::OverBudget | StopWhy::OverCap => {
            outcome.status = RunStatus::Failed;
            outcome.failure_reason = Some(if note.why == StopWhy::OverCap {
                FailureReason::OverCap
            } else {
                FailureReason::OverBudget
            });
            outcome.failure_detail = Some(note.note.clone());
        }
        StopWhy::EarlyStop | StopWhy::Person => {}
    }
    outcome.summary = Some(note.note.clone());
    outcome
}

impl Engine {
    /// Stops a run for `note`: a live one through the runner that holds it (here, or through the relay
    /// on another replica), a queued one at once. `true` when it ended here and now (a queued run).
    pub async fn stop_run(&self, run_id: RunId, note: &StopNote) -> store::Result<bool> {
        if self.runs.tell_why(run_id, note.clone()) {
            return Ok(false);
        }
        let run = self.store.get_run(run_id).await?;
        match run.status {
            RunStatus::Claimed | RunStatus::Running => {
                self.hub.relay(Relayed::StopRun(run_id, note.why));
                Ok(false)
            }
            RunStatus::Queued => {
                match self.store.finish_run(run_id, &stopped_outcome(note)).await {
                    Ok(_) => Ok(true),
                    Err(store::Error::Conflict { .. }) => {
                        // Claimed meanwhile: its runner holds it now.
                        if !self.runs.tell_why(run_id, note.clone()) {
                            self.hub.relay(Relayed::StopRun(run_id, note.why));
                        }
                        Ok(false)
                    }
                    Err(e) => Err(e),
                }
            }
            _ => Ok(false),
        }
    }
}

/// A runner reported what its run has spent: keep it on the run, stop the run when a monthly cap is
/// crossed, and when the run belongs to an ensemble, enforce the ensemble's budget (every live member
/// is stopped once it is spent, so the overshoot is at most the turn each live member was in, as long as
/// a turn takes longer than the server takes to act: a report's round trip).
pub(crate) async fn spent(engine: Engine, run: RunId, epoch: i64, usage: Usage) {
    if let Err(e) = engine.store.set_live_usage(run, epoch, &usage).await {
        tracing::warn!(error = %e, run.id = %run, "cannot record what the run has spent");
        return;
    }
    let Ok(found) = engine.store.get_run(run).await else {
        return;
    };
    // A monthly cap (the agent's or the workspace's) crossed mid-run stops the run after that turn,
    // like its own budget would.
    match crate::engine::caps::cap_breach(
        engine.store.as_ref(),
        found.workspace_id,
        found.agent_id,
        chrono::Utc::now(),
    )
    .await
    {
        Ok(Some(reason)) => {
            let stop = StopNote {
                why: StopWhy::OverCap,
                note: format!("stopped over a monthly spend cap: {reason}"),
            };
            if let Err(e) = engine.stop_run(run, &stop).await {
                tracing::warn!(error = %e, run.id = %run, "cannot stop a run over its monthly cap");
            }
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, run.id = %run, "cannot check the monthly caps"),
    }
    if let Some(id) = found.ensemble_run_id
        && let Err(e) = enforce_budget(&engine, id).await
    {
        tracing::warn!(error = %e, ensemble_run = %id, "cannot check the ensemble's budget");
    }
}

/// Stops every live member of the ensemble run once its budget is spent; `true` when it did.
async fn enforce_budget(engine: &Engine, id: EnsembleRunId) -> store::Result<bool> {
    let er = engine.store.get_ensemble_run(id).await?;
    if matches!(er.status, EnsembleStatus::Decided | EnsembleStatus::Chosen) {
        return Ok(false);
    }
    let runs = engine.store.list_ensemble_members_runs(id).await?;
    let Some(note) = over_budget(er.settings.budget, &total_spent(&runs)) else {
        return Ok(false);
    };
    engine.store.note_ensemble_stop(id, &note).await?;
    let stop = StopNote {
        why: StopWhy::OverBudget,
        note,
    };
    let mut ended_here = false;
    for r in runs.iter().filter(|r| !r.status.is_terminal()) {
        tracing::info!(run.id = %r.id, ensemble_run = %id, "stopping a member: the ensemble's budget is spent");
        ended_here |= engine.stop_run(r.id, &stop).await?;
    }
    if ended_here {
        advance(engine, id).await?;
    }
    Ok(true)
}

/// A run that belongs to an ensemble run ended (however it ended): move the ensemble on.
pub(crate) async fn run_ended(engine: &Engine, run: &Run) {
    let Some(id) = run.ensemble_run_id else {
        return;
    };
    if let Err(e) = advance(engine, id).await {
        tracing::warn!(error = %e, ensemble_run = %id, "cannot move the ensemble on");
    }
}

/// One look at the ensemble run: early stop when its policy is met, the review or the decision when
/// every candidate has ended, the decision when the review has.
pub(crate) async fn advance(engine: &Engine, id: EnsembleRunId) -> store::Result<()> {
    // Stopping queued candidates ends them at once; look again then (at most as often as there are
    // members).
    for _ in 0..=crate::domain::ENSEMBLE_MEMBERS.end() + 1 {
        let er = engine.store.get_ensemble_run(id).await?;
        let runs = engine.store.list_ensemble_members_runs(id).await?;
        let again = match er.status {
            EnsembleStatus::Running => candidates_step(engine, &er, &runs).await?,
            EnsembleStatus::Reviewing => {
                review_step(engine, &er, &runs).await?;
                false
            }
            EnsembleStatus::Decided | EnsembleStatus::Chosen => false,
        };
        if !again {
            break;
        }
    }
    Ok(())
}

/// The candidates' part; `true` when it ended runs here and the state must be read again.
async fn candidates_step(engine: &Engine, er: &EnsembleRun, runs: &[Run]) -> store::Result<bool> {
    let cands = candidates(er, runs);
    let mut green: Vec<&Run> = Vec::new();
    let mut with_diff: Vec<&Run> = Vec::new();
    for r in cands.iter().filter(|r| r.status.is_terminal()) {
        if check_of(engine, r.id)
            .await?
            .is_some_and(|c| c.passed_check())
        {
            green.push(r);
        }
        if r.diff_stat.is_some() {
            with_diff.push(r);
        }
    }
    let live: Vec<&&Run> = cands.iter().filter(|r| !r.status.is_terminal()).collect();
    if !live.is_empty() {
        let met = match er.settings.early_stop {
            EarlyStop::All => false,
            EarlyStop::FirstGreen => !green.is_empty(),
            EarlyStop::Quorum(k) => green.len() >= usize::from(k),
        };
        if !met {
            return Ok(false);
        }
        let note = format!(
            "stopped early: {} of the candidates passed the check (policy {})",
            green.len(),
            er.settings.early_stop
        );
        engine.store.note_ensemble_stop(er.id, &note).await?;
        let stop = StopNote {
            why: StopWhy::EarlyStop,
            note,
        };
        let mut ended_here = false;
        for r in live {
            ended_here |= engine.stop_run(r.id, &stop).await?;
        }
        return Ok(ended_here);
    }
    // Every candidate has ended.
    if green.len() == 1 {
        decide(engine, er, None).await?;
        return Ok(false);
    }
    // None or several passed: the review decides, among the green ones if several passed, else among
    // all that changed something.
    let pool: Vec<&Run> = if green.len() > 1 { green } else { with_diff };
    let Some(reviewer) = er.settings.reviewer.filter(|_| !pool.is_empty()) else {
        decide(engine, er, None).await?;
        return Ok(false);
    };
    let spent = total_spent(runs);
    if over_budget(er.settings.budget, &spent).is_some() {
        let outcome = ReviewOutcome::NoAnswer {
            why: "the ensemble's budget was spent before the review".to_owned(),
        };
        decide(engine, er, Some(&outcome)).await?;
        return Ok(false);
    }
    queue_review(engine, er, reviewer, &pool).await?;
    Ok(false)
}

async fn queue_review(
    engine: &Engine,
    er: &EnsembleRun,
    reviewer: AgentId,
    pool: &[&Run],
) -> store::Result<()> {
    let ids: Vec<RunId> = pool.iter().map(|r| r.id).collect();
    let labels = crate::domain::review::assign_labels(&ids, &mut rand::rng())
        .map_err(|e| store::Error::Other(anyhow::anyhow!(e)))?;
    let new = NewRun {
        ensemble_run_id: Some(er.id),
        ..NewRun::assignment(er.workspace_id, er.issue_id, reviewer)
    };
    match engine
        .store
        .start_ensemble_review(er.id, &new, &labels)
        .await
    {
        Ok(run) => {
            tracing::info!(run.id = %run.id, ensemble_run = %er.id, "blind review queued");
            engine.runs.wake();
            engine.hub.relay(Relayed::RunQueued(run.id));
            Ok(())
        }
        // Another replica queued it first.
        Err(store::Error::Conflict { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The review's part: once the reviewer's run has ended, its answer is read as a verdict (validated,
/// never guessed) and the ensemble run is decided.
async fn review_step(engine: &Engine, er: &EnsembleRun, runs: &[Run]) -> store::Result<()> {
    let Some(review) = review_run(er, runs) else {
        return decide(engine, er, None).await;
    };
    if !review.status.is_terminal() {
        return Ok(());
    }
    let outcome = if review.status == RunStatus::Succeeded {
        let answer = review.summary.clone().unwrap_or_default();
        let labels: Vec<char> = er.review_labels.iter().map(|(l, _)| *l).collect();
        match crate::domain::review::parse_verdict(&answer, &labels) {
            Ok(verdict) => ReviewOutcome::Verdict {
                verdict: serde_json::to_value(&verdict).unwrap_or_default(),
            },
            Err(e) => ReviewOutcome::Invalid {
                error: e.to_string(),
                answer: answer.chars().take(ANSWER_KEPT).collect(),
            },
        }
    } else {
        ReviewOutcome::NoAnswer {
            why: format!(
                "the reviewer's run ended {}{}",
                review.status,
                review
                    .failure_reason
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
        }
    };
    decide(engine, er, Some(&outcome)).await
}

/// Marks the ensemble run decided and tells people: the issue goes to review, its creator (or everyone)
/// gets an inbox item to compare and choose.
async fn decide(
    engine: &Engine,
    er: &EnsembleRun,
    review: Option<&ReviewOutcome>,
) -> store::Result<()> {
    let Some(decided) = engine.store.decide_ensemble_run(er.id, review).await? else {
        return Ok(());
    };
    tracing::info!(ensemble_run = %er.id, "ensemble decided");
    let issue = engine.store.get_issue_by_id(decided.issue_id).await?;
    let runs = engine.store.list_ensemble_members_runs(er.id).await?;
    let cands = candidates(&decided, &runs);
    let mut green = 0;
    for r in &cands {
        if check_of(engine, r.id)
            .await?
            .is_some_and(|c| c.passed_check())
        {
            green += 1;
        }
    }
    let spent = total_spent(&runs);
    let from = [IssueStatus::Todo, IssueStatus::InProgress];
    let moved = super::finish::move_if_in(
        engine,
        &issue,
        &from,
        IssueStatus::InReview,
        CommentAuthor::System,
    )
    .await;
    if let Err(e) = moved {
        tracing::warn!(error = %e, "cannot move the issue to review after its ensemble");
    }
    let item = NewInboxItem {
        workspace_id: decided.workspace_id,
        user_id: issue.created_by,
        kind: InboxKind::AwaitingReview,
        issue_id: Some(issue.id),
        run_id: None,
        comment_id: None,
        message: format!(
            "ensemble {} finished {} ({}): {green}/{} passed the check, ${:.4} spent; compare and choose",
            decided.name,
            issue.key,
            issue.title.as_str(),
            cands.len(),
            spent.cost_usd
        ),
    };
    engine.store.create_inbox_item(&item).await?;
    super::finish::announce(engine, &issue);
    Ok(())
}
