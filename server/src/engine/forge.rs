//! The pull-request loop: an agent's pushed work becomes a pull request on the workspace's forge, and
//! what the forge reports back (checks, reviews, comments, merges) moves the issue or resumes the same
//! agent session on the same branch.
//!
//! Invariants:
//! - the forge token is opened here and in the runner's push only, both outside every sandbox; it is in
//!   no order field the agent's process sees, no event and no comment;
//! - a red check, a change request, a line comment or a comment mentioning the agent becomes a Muster
//!   comment on the issue and is handed to the agent like a person's reply (`triggers::follow_up`): into
//!   its queued run, kept for the end of its live run, or a new run continuing its session and branch —
//!   so an event that arrives while a round runs is folded into the next one, never lost;
//! - only a new run counts as a round: past the connection's `max_rounds` nothing is queued, and the
//!   limit is said once (an inbox item, a comment on the pull request and on the issue);
//! - merged moves the issue to done; closed unmerged moves it per the connection's `on_close`; work that
//!   arrives for a merged or closed pull request is pushed to a fresh branch (decided by the runner at
//!   push time, asking the forge) and gets a new pull request linked from the old one.

use crate::domain::{
    CheckState, CommentAuthor, ForgeConnection, InboxKind, Issue, IssueStatus, NewInboxItem,
    NewPullRequest, OnClose, PrCheck, PrReview, PrState, PrUpdate, PullRequest, ReviewVerdict, Run,
    RunEventBody, RunStatus, RunTrigger, WorkspaceId,
};
use crate::forge::hooks::{Delivery, ForgeEvent};
use crate::forge::{Endpoint, Forge, ForgeError, NewPull};
use crate::runner::protocol::ForgePush;
use crate::store;

use super::Engine;

/// Why a pull request could not be opened or an event taken.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The workspace has no forge connection.
    #[error(
        "this workspace is not connected to a forge: connect its repository under Settings → Forge (or with `muster forge connect`)"
    )]
    NotConnected,
    /// There is no pushed work to open a pull request with; the text says why.
    #[error("{0}")]
    NoWork(String),
    /// The connection's sealed token or secret cannot be opened (the server's key changed).
    #[error("cannot open the connection's {what}: {reason}")]
    Sealed { what: &'static str, reason: String },
    /// The forge refused or did not answer.
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The workspace's forge connection, if it has one.
pub async fn connection(
    engine: &Engine,
    ws: WorkspaceId,
) -> store::Result<Option<ForgeConnection>> {
    Ok(engine
        .store
        .list_forge_connections(ws)
        .await?
        .into_iter()
        .next())
}

/// The connection's endpoint, its token opened.
pub fn endpoint(engine: &Engine, conn: &ForgeConnection) -> Result<Endpoint, PullError> {
    let token = engine
        .secrets
        .open(&conn.token_sealed)
        .map_err(|e| PullError::Sealed {
            what: "token",
            reason: format!("{e:#}"),
        })?;
    Ok(Endpoint {
        kind: conn.kind,
        api_url: conn.api_url.clone(),
        repo: conn.repo.clone(),
        token,
    })
}

/// A client for the connection's forge.
pub fn client(engine: &Engine, conn: &ForgeConnection) -> Result<Box<dyn Forge>, PullError> {
    Ok(crate::forge::client(
        endpoint(engine, conn)?,
        crate::forge::http_client(),
    ))
}

/// What a run's order carries for its push when the workspace is connected to a forge (a connection
/// whose token cannot be opened pushes without it, and the push says why it was refused).
pub(crate) async fn push_order(
    engine: &Engine,
    ws: WorkspaceId,
) -> store::Result<Option<ForgePush>> {
    let Some(conn) = connection(engine, ws).await? else {
        return Ok(None);
    };
    Ok(endpoint(engine, &conn).ok().map(|e| ForgePush {
        kind: e.kind,
        api_url: e.api_url,
        repo: e.repo,
        token: e.token,
    }))
}

/// Where a run's work went: the branch and commit of its `push` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub branch: String,
    pub commit: String,
}

/// The last push a run logged.
pub async fn pushed(engine: &Engine, run: &Run) -> store::Result<Option<Pushed>> {
    let mut after = 0;
    let mut last = None;
    loop {
        let page = engine.store.run_events_since(run.id, after, 1000).await?;
        let Some(end) = page.last() else { break };
        after = end.seq;
        for event in page.iter().filter(|e| e.kind == "push") {
            if let RunEventBody::Push { branch, commit, .. } =
                RunEventBody::decode(&event.kind, &event.payload)
            {
                last = Some(Pushed { branch, commit });
            }
        }
    }
    Ok(last)
}

/// Opens (or finds) the pull request for a run's pushed work.
pub async fn open_for_run(
    engine: &Engine,
    run: &Run,
    draft: bool,
) -> Result<PullRequest, PullError> {
    let conn = connection(engine, run.workspace_id)
        .await?
        .ok_or(PullError::NotConnected)?;
    if run.status != RunStatus::Succeeded {
        return Err(PullError::NoWork(format!(
            "run {} has not succeeded (it is {}); only delivered work becomes a pull request",
            run.id, run.status
        )));
    }
    let Some(pushed) = pushed(engine, run).await? else {
        return Err(PullError::NoWork(format!(
            "run {} pushed nothing to the forge: it changed nothing, or its push failed (its log says why)",
            run.id
        )));
    };
    open_pushed(engine, &conn, run, &pushed, draft).await
}

/// Opens the pull request for an issue's latest delivered work (a run that succeeded and pushed).
pub async fn open_for_issue(
    engine: &Engine,
    issue: &Issue,
    draft: bool,
) -> Result<PullRequest, PullError> {
    if connection(engine, issue.workspace_id).await?.is_none() {
        return Err(PullError::NotConnected);
    }
    let runs = engine.store.list_runs_for_issue(issue.id).await?;
    for run in runs.iter().rev() {
        if run.status == RunStatus::Succeeded && pushed(engine, run).await?.is_some() {
            return open_for_run(engine, run, draft).await;
        }
    }
    Err(PullError::NoWork(format!(
        "no run on {} has delivered pushed work yet",
        issue.key
    )))
}

/// The pull request for `pushed`: the one already open on its branch (its head brought up to date),
/// one a person opened on the forge for it, or a new one. A pull request of the same line that was
/// merged or closed links to it.
async fn open_pushed(
    engine: &Engine,
    conn: &ForgeConnection,
    run: &Run,
    pushed: &Pushed,
    draft: bool,
) -> Result<PullRequest, PullError> {
    let known = engine
        .store
        .pull_requests_for_branch(conn.id, &pushed.branch)
        .await?;
    if let Some(open) = known.iter().find(|p| p.state == PrState::Open) {
        let update = PrUpdate {
            head_sha: Some(pushed.commit.clone()),
            ..PrUpdate::default()
        };
        return Ok(engine.store.update_pull_request(open.id, &update).await?);
    }
    let forge = client(engine, conn)?;
    if forge.branch_head(&pushed.branch).await?.is_none() {
        return Err(PullError::NoWork(format!(
            "the branch {} is not on {}: the run's push did not reach it (its log says why)",
            pushed.branch,
            conn.kind.label()
        )));
    }
    let issue = engine.store.get_issue_by_id(run.issue_id).await?;
    let pull = match forge.pull_for_branch(&pushed.branch).await? {
        Some(pull) => pull,
        None => {
            let base = forge.access().await?.default_branch;
            let new = NewPull {
                title: format!("{}: {}", issue.key, issue.title.as_str()),
                body: pull_body(engine, run, &issue).await,
                head: pushed.branch.clone(),
                base,
                draft,
            };
            forge.open_pull(&new).await?
        }
    };
    let new = NewPullRequest {
        workspace_id: run.workspace_id,
        connection_id: conn.id,
        issue_id: run.issue_id,
        agent_id: run.agent_id,
        run_id: run.id,
        number: pull.number,
        url: pull.url.clone(),
        branch: pushed.branch.clone(),
        base: pull.base.clone(),
        draft: pull.draft,
        head_sha: pull.head_sha.clone(),
    };
    let pr = match engine.store.create_pull_request(&new).await {
        Ok(pr) => pr,
        // Recorded meanwhile (a webhook, another replica): the same pull request.
        Err(store::Error::Conflict { .. }) => engine
            .store
            .find_pull_request(conn.id, pull.number)
            .await?
            .ok_or(store::Error::NotFound)?,
        Err(e) => return Err(e.into()),
    };
    let noun = conn.kind.pull_noun();
    let earlier = line_pulls(engine, &pr).await?;
    for old in earlier
        .iter()
        .filter(|p| p.state.is_final() && p.superseded_by.is_none())
    {
        engine.store.supersede_pull_request(old.id, pr.id).await?;
        let text = format!(
            "Work that arrived after this {noun} was {} is in #{}: {}",
            old.state, pr.number, pr.url
        );
        if let Err(e) = forge.comment(old.number, &text).await {
            tracing::warn!(error = %e, number = old.number, "cannot link the old pull request");
        }
    }
    // Work reopened after a merge or a close is in review again, not done.
    super::finish::move_if_in(
        engine,
        &issue,
        &[IssueStatus::Done, IssueStatus::Cancelled],
        IssueStatus::InReview,
        CommentAuthor::System,
    )
    .await?;
    let draft_note = if pr.draft { " (draft)" } else { "" };
    engine
        .note_on_issue(
            issue.id,
            Some(run.id),
            &format!("Opened {noun} #{}{draft_note}: {}", pr.number, pr.url),
        )
        .await?;
    super::finish::announce(engine, &issue);
    tracing::info!(issue = %issue.key, number = pr.number, branch = %pr.branch, "pull request opened");
    Ok(pr)
}

/// The other pull requests of `pr`'s line (its agent on its issue).
async fn line_pulls(engine: &Engine, pr: &PullRequest) -> store::Result<Vec<PullRequest>> {
    Ok(engine
        .store
        .list_pull_requests(pr.workspace_id, Some(pr.issue_id))
        .await?
        .into_iter()
        .filter(|p| p.agent_id == pr.agent_id && p.id != pr.id)
        .collect())
}

/// The pull request's body: the run's summary, what it changed and cost, and the way back to Muster.
async fn pull_body(engine: &Engine, run: &Run, issue: &Issue) -> String {
    let agent = engine
        .store
        .get_agent(run.workspace_id, run.agent_id)
        .await
        .map(|a| a.profile.name.as_str().to_owned())
        .unwrap_or_else(|_| "an agent".to_owned());
    let mut body = String::new();
    if let Some(summary) = run.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        body.push_str(summary.trim());
        body.push_str("\n\n");
    }
    if let Some(stat) = run.diff_stat.as_deref().filter(|s| !s.trim().is_empty()) {
        body.push_str("```\n");
        body.push_str(stat.trim_end());
        body.push_str("\n```\n\n");
    }
    let cost = if run.usage.cost_unknown {
        "unknown".to_owned()
    } else {
        format!("${:.2}", run.usage.cost_usd)
    };
    body.push_str(&format!(
        "Work of **{agent}** on {} (Muster run `{}`; cost {cost}, {} tokens in, {} out).",
        issue.key, run.id, run.usage.input_tokens, run.usage.output_tokens
    ));
    if let Some(url) = engine.api_url() {
        body.push_str(&format!(
            "\nIssue: {url}/w/{}/issues/{}",
            workspace_slug(engine, run.workspace_id).await,
            issue.key
        ));
    }
    body
}

async fn workspace_slug(engine: &Engine, ws: WorkspaceId) -> String {
    engine
        .store
        .get_workspace(ws)
        .await
        .map(|w| w.slug.as_str().to_owned())
        .unwrap_or_default()
}

/// A run succeeded: its push goes to the pull request open on its branch, or opens one when the
/// connection opens drafts on delivery, or when the line had a pull request before (merged or
/// closed: the work went to a fresh branch). Failures are said on the issue.
pub(crate) async fn run_delivered(engine: &Engine, run: &Run) {
    let opened = async {
        let Some(conn) = connection(engine, run.workspace_id).await? else {
            return Ok(());
        };
        let Some(pushed) = pushed(engine, run).await? else {
            return Ok(());
        };
        let known = engine
            .store
            .pull_requests_for_branch(conn.id, &pushed.branch)
            .await?;
        let line_had_one = engine
            .store
            .list_pull_requests(run.workspace_id, Some(run.issue_id))
            .await?
            .iter()
            .any(|p| p.agent_id == run.agent_id);
        if known.iter().any(|p| p.state == PrState::Open) || conn.auto_open || line_had_one {
            open_pushed(engine, &conn, run, &pushed, true).await?;
        }
        Ok::<_, PullError>(())
    };
    if let Err(e) = opened.await {
        tracing::warn!(error = %e, run.id = %run.id, "cannot open the pull request");
        let text = format!("Muster could not open a pull request for this work: {e}");
        if let Err(e) = engine
            .note_on_issue(run.issue_id, Some(run.id), &text)
            .await
        {
            tracing::warn!(error = %e, "cannot say so on the issue");
        }
    }
}

/// What taking a delivery did, for the forge's delivery log. A delivery may say several things (a
/// GitLab pipeline: itself and each job); a failed check without a log is only recorded when another
/// failed check of the same delivery has one (the job's failure says it better than the pipeline's).
pub async fn take(
    engine: &Engine,
    conn: &ForgeConnection,
    delivery: &Delivery,
) -> Result<String, PullError> {
    let logged_failure = delivery.events().any(|e| {
        matches!(e, ForgeEvent::Check { state: CheckState::Failure, log, .. } if *log != crate::forge::LogRef::None)
    });
    let mut done = Vec::new();
    for event in delivery.events() {
        let quiet = logged_failure
            && matches!(
                event,
                ForgeEvent::Check {
                    log: crate::forge::LogRef::None,
                    ..
                }
            );
        done.push(take_event(engine, conn, event, quiet).await?);
    }
    Ok(done.join("; "))
}

/// Takes one event of a delivery; `quiet`: record a check, resume nothing for it.
async fn take_event(
    engine: &Engine,
    conn: &ForgeConnection,
    event: &ForgeEvent,
    quiet: bool,
) -> Result<String, PullError> {
    let find = |n: i64| engine.store.find_pull_request(conn.id, n);
    match event {
        ForgeEvent::Check {
            pulls,
            branch,
            head_sha,
            name,
            state,
            url,
            log,
        } => {
            let mut prs = Vec::new();
            for n in pulls {
                prs.extend(find(*n).await?);
            }
            if prs.is_empty()
                && let Some(branch) = branch
            {
                prs.extend(
                    engine
                        .store
                        .pull_requests_for_branch(conn.id, branch)
                        .await?
                        .into_iter()
                        .filter(|p| p.state == PrState::Open),
                );
            }
            if prs.is_empty() {
                return Ok(format!("check {name}: no pull request of Muster's"));
            }
            let mut done = Vec::new();
            for pr in prs {
                // A check of an older head is history: it neither shows nor resumes anything.
                if !head_sha.is_empty() && pr.head_sha != *head_sha {
                    done.push(format!("#{}: check of an older commit", pr.number));
                    continue;
                }
                let update = PrUpdate {
                    check: Some(PrCheck {
                        name: name.clone(),
                        state: *state,
                        url: url.clone(),
                    }),
                    ..PrUpdate::default()
                };
                let pr = engine.store.update_pull_request(pr.id, &update).await?;
                announce_pr(engine, &pr).await;
                if *state != CheckState::Failure || pr.state != PrState::Open || quiet {
                    done.push(format!("#{}: check {name} is {state}", pr.number));
                    continue;
                }
                let excerpt = match client(engine, conn)?.check_log(log).await {
                    Ok(text) if !text.trim().is_empty() => text,
                    Ok(_) => "(the forge has no log for it)".to_owned(),
                    Err(e) => format!("(Muster could not read its log: {e})"),
                };
                let mut text = format!(
                    "CI check `{name}` failed on {} #{}",
                    conn.kind.pull_noun(),
                    pr.number
                );
                if let Some(url) = url {
                    text.push_str(&format!(" ({url})"));
                }
                text.push_str(&format!(
                    ".\n\nThe failing part of its log:\n\n```\n{}\n```\n\nFix it on this branch; your commit goes to the same {}.",
                    excerpt.trim_end(),
                    conn.kind.pull_noun()
                ));
                done.push(resume(engine, conn, &pr, &text).await?);
            }
            Ok(done.join("; "))
        }
        ForgeEvent::Review {
            pull,
            author,
            verdict,
            body,
        } => {
            let Some(pr) = find(*pull).await? else {
                return Ok(format!("review on #{pull}: not a pull request of Muster's"));
            };
            let update = PrUpdate {
                review: Some(PrReview {
                    author: author.clone(),
                    verdict: *verdict,
                }),
                ..PrUpdate::default()
            };
            let pr = engine.store.update_pull_request(pr.id, &update).await?;
            announce_pr(engine, &pr).await;
            let wants_work = match verdict {
                ReviewVerdict::ChangesRequested => true,
                ReviewVerdict::Commented => !body.trim().is_empty(),
                ReviewVerdict::Approved => false,
            };
            if !wants_work {
                return Ok(format!("#{pull}: {author} {verdict}"));
            }
            let said = if body.trim().is_empty() {
                "(no text)"
            } else {
                body.trim()
            };
            let text = match verdict {
                ReviewVerdict::ChangesRequested => format!(
                    "{author} requested changes on {} #{}:\n\n{said}",
                    conn.kind.pull_noun(),
                    pr.number
                ),
                _ => format!(
                    "{author} reviewed {} #{}:\n\n{said}",
                    conn.kind.pull_noun(),
                    pr.number
                ),
            };
            resume(engine, conn, &pr, &text).await
        }
        ForgeEvent::Comment {
            pull,
            author,
            body,
            path,
            line,
        } => {
            let Some(pr) = find(*pull).await? else {
                return Ok(format!(
                    "comment on #{pull}: not a pull request of Muster's"
                ));
            };
            let text = match path {
                Some(path) => {
                    let at = line.map(|l| format!(" line {l}")).unwrap_or_default();
                    format!(
                        "{author} commented on `{path}`{at} in {} #{}:\n\n{}",
                        conn.kind.pull_noun(),
                        pr.number,
                        body.trim()
                    )
                }
                None => {
                    let agent = engine.store.get_agent(pr.workspace_id, pr.agent_id).await?;
                    if !mentions(body, agent.profile.name.as_str()) {
                        return Ok(format!(
                            "#{pull}: a comment that does not mention the agent"
                        ));
                    }
                    format!(
                        "{author} on {} #{}:\n\n{}",
                        conn.kind.pull_noun(),
                        pr.number,
                        body.trim()
                    )
                }
            };
            resume(engine, conn, &pr, &text).await
        }
        ForgeEvent::Closed { pull, merged } => {
            let Some(pr) = find(*pull).await? else {
                return Ok(format!("#{pull} closed: not a pull request of Muster's"));
            };
            closed(engine, conn, &pr, *merged).await
        }
        ForgeEvent::Updated { pull, .. } => {
            let Some(pr) = find(*pull).await? else {
                return Ok(format!("#{pull} updated: not a pull request of Muster's"));
            };
            let now = client(engine, conn)?.pull(pr.number).await?;
            let update = PrUpdate {
                state: Some(now.state),
                draft: Some(now.draft),
                head_sha: Some(now.head_sha.clone()),
                mergeable: Some(now.mergeable),
                ..PrUpdate::default()
            };
            let updated = engine.store.update_pull_request(pr.id, &update).await?;
            announce_pr(engine, &updated).await;
            if now.state.is_final() && pr.state == PrState::Open {
                return closed(engine, conn, &updated, now.state == PrState::Merged).await;
            }
            Ok(format!("#{pull} refreshed"))
        }
        ForgeEvent::Ignored { what } => Ok(format!("ignored: {what}")),
    }
}

/// Whether `text` mentions `@name` (case-insensitive, not inside a longer name).
fn mentions(text: &str, name: &str) -> bool {
    let lower = text.to_lowercase();
    let wanted = format!("@{}", name.to_lowercase());
    lower.match_indices(&wanted).any(|(at, _)| {
        let after = lower[at + wanted.len()..].chars().next();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// The pull request was merged or closed: recorded, and the issue moved (merged → done; closed →
/// the connection's `on_close`), once.
async fn closed(
    engine: &Engine,
    conn: &ForgeConnection,
    pr: &PullRequest,
    merged: bool,
) -> Result<String, PullError> {
    let state = if merged {
        PrState::Merged
    } else {
        PrState::Closed
    };
    let before = engine.store.get_pull_request(pr.id).await?;
    let update = PrUpdate {
        state: Some(state),
        ..PrUpdate::default()
    };
    let pr = engine.store.update_pull_request(pr.id, &update).await?;
    announce_pr(engine, &pr).await;
    if before.state == state {
        return Ok(format!("#{}: already {state}", pr.number));
    }
    let issue = engine.store.get_issue_by_id(pr.issue_id).await?;
    let noun = conn.kind.pull_noun();
    let (to, text) = if merged {
        (
            IssueStatus::Done,
            format!("{noun} #{} was merged: {}", pr.number, pr.url),
        )
    } else {
        let to = match conn.on_close {
            OnClose::Todo => IssueStatus::Todo,
            OnClose::Cancelled => IssueStatus::Cancelled,
        };
        (
            to,
            format!(
                "{noun} #{} was closed without merging: {}",
                pr.number, pr.url
            ),
        )
    };
    let from: Vec<IssueStatus> = IssueStatus::ALL
        .iter()
        .copied()
        .filter(|s| *s != to)
        .collect();
    super::finish::move_if_in(engine, &issue, &from, to, CommentAuthor::System).await?;
    engine.note_on_issue(issue.id, None, &text).await?;
    super::finish::announce(engine, &issue);
    Ok(format!("#{}: {state}; {} is {to}", pr.number, issue.key))
}

/// Hands `text` (recorded as Muster's comment on the issue) to the pull request's agent: folded into
/// its queued run or kept for the end of its live one, or — counting one round — a new run continuing
/// its session and branch. Past the connection's rounds, nothing is queued and the limit is said once.
async fn resume(
    engine: &Engine,
    conn: &ForgeConnection,
    pr: &PullRequest,
    text: &str,
) -> Result<String, PullError> {
    let issue = engine.store.get_issue_by_id(pr.issue_id).await?;
    let busy = engine
        .store
        .last_run_of_agent(issue.id, pr.agent_id)
        .await?
        .is_some_and(|r| r.status == RunStatus::Queued || r.status.is_active());
    if !busy
        && engine
            .store
            .take_pr_round(pr.id, conn.max_rounds)
            .await?
            .is_none()
    {
        return at_limit(engine, conn, pr, &issue).await;
    }
    let mut text = text.to_owned();
    if pr.state.is_final() {
        text.push_str(&format!(
            "\n\n({} #{} is already {}: this work goes to a new branch and a new {}.)",
            conn.kind.pull_noun(),
            pr.number,
            pr.state,
            conn.kind.pull_noun()
        ));
    }
    let Some(comment) = engine.post_note(issue.id, None, &text).await? else {
        return Ok(format!("#{}: nothing to hand over", pr.number));
    };
    super::triggers::hand_over(engine, &issue, pr.agent_id, comment.id, RunTrigger::Comment)
        .await?;
    super::finish::announce(engine, &issue);
    Ok(format!(
        "#{}: handed to the agent{}",
        pr.number,
        if busy {
            " (folded into its next round)"
        } else {
            ""
        }
    ))
}

/// The pull request has had its rounds: said once, on the pull request, on the issue and in the inbox.
async fn at_limit(
    engine: &Engine,
    conn: &ForgeConnection,
    pr: &PullRequest,
    issue: &Issue,
) -> Result<String, PullError> {
    if !engine.store.notice_pr_limit(pr.id).await? {
        return Ok(format!("#{}: past its rounds (said before)", pr.number));
    }
    let noun = conn.kind.pull_noun();
    let text = format!(
        "Muster stopped sending work on {noun} #{} back to its agent: it had its {} automatic rounds (the workspace's limit). A person takes it from here.",
        pr.number, conn.max_rounds
    );
    engine.note_on_issue(issue.id, None, &text).await?;
    let item = NewInboxItem {
        workspace_id: issue.workspace_id,
        user_id: issue.created_by,
        kind: InboxKind::PullRequest,
        issue_id: Some(issue.id),
        run_id: Some(pr.run_id),
        comment_id: None,
        message: format!("{}: {text}", issue.key),
    };
    engine.store.create_inbox_item(&item).await?;
    if let Err(e) = client(engine, conn)?.comment(pr.number, &text).await {
        tracing::warn!(error = %e, number = pr.number, "cannot say the limit on the pull request");
    }
    super::finish::announce(engine, issue);
    Ok(format!("#{}: rounds exhausted", pr.number))
}

/// Tells the board the pull request's issue changed.
async fn announce_pr(engine: &Engine, pr: &PullRequest) {
    if let Ok(issue) = engine.store.get_issue_by_id(pr.issue_id).await {
        super::finish::announce(engine, &issue);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_mention_is_the_whole_name() {
        assert!(super::mentions("@coder please fix", "coder"));
        assert!(super::mentions("thanks @Coder.", "coder"));
        assert!(!super::mentions("@coder2 please", "coder"));
        assert!(!super::mentions("coder please", "coder"));
        assert!(!super::mentions("@coder-bot please", "coder"));
    }
}
