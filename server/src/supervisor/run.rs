//! One supervisor task per claimed run: prepare, spawn, start, watch, stop, finish.
//!
//! Invariants: the child is always reaped before the run is finished; after a lost lease nothing more is
//! written for the run (another party owns it now); output lines are read by two reader tasks into one
//! channel, so the watch loop's `select!` never cancels a half-read line.

use muster_agents::process::{self, CappedLines};
use serde_json::json;
use tokio::io::BufReader;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{EventLog, Tally};
use super::finish::{self, Ending};
use super::git::{self, Worktree};
use super::prepare::{self, Prepared};
use super::watch::{self, Line, Watch};
use crate::domain::{
    Actor, Agent, CommentAuthor, FailureReason, Issue, IssueStatus, Run, RunnerId,
};
use crate::engine::Engine;
use crate::redact::Redactor;

/// How many output lines may wait for the supervisor before the readers (and so the child) block.
const LINE_BUFFER: usize = 256;
/// How often the CLI's usage log is looked at for new lines (Codex writes one per model request).
const USAGE_LOG_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Supervises `run` to its end. Never panics on store or process errors: they end the run as failed.
#[tracing::instrument(skip_all, fields(run.id = %run.id))]
pub(super) async fn supervise(
    state: Engine,
    runner: RunnerId,
    run: Run,
    token: CancellationToken,
    stop: CancellationToken,
) {
    let (issue, agent) = match load(&state, &run).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "cannot load the run's issue or agent");
            let failed = Ending::NotStarted(FailureReason::Config, format!("{e}"));
            finish::conclude_unloaded(&state, &run, failed).await;
            return;
        }
    };
    let (prepared, mut child) = match launch(&state, &run, &issue, &agent).await {
        Ok(launched) => launched,
        Err(ending) => {
            revoke_token(&state, &run).await;
            let redactor = Redactor::for_agent(&state.secrets, &agent, None);
            let tally = Tally::default();
            finish::conclude(&state, &run, &issue, &agent, ending, tally, &redactor).await;
            return;
        }
    };
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let workdir = prepared.workdir.display().to_string();
    let branch = prepared.worktree.as_ref().map(|t| t.branch.as_str());
    if let Err(e) = state
        .store
        .start_run(run.id, runner, run.lease_epoch, pid, Some(&workdir), branch)
        .await
    {
        // Cancelled or taken away between the claim and now: stop what we started, write nothing more.
        tracing::info!(error = %e, "run no longer ours at start; stopping it");
        let t = state.runs.timing();
        let _ = process::stop_group_with(&mut child, t.int_grace, t.term_grace).await;
        if let Some(tree) = &prepared.worktree {
            git::discard(tree).await;
        }
        revoke_token(&state, &run).await;
        return;
    }
    tracing::info!(pid, agent = %agent.profile.name.as_str(), "run started");
    mark_in_progress(&state, &issue, &agent).await;
    let ctx = Watch {
        state: &state,
        run: &run,
        runner,
        agent: &agent,
        issue: &issue,
        adapter: prepared.adapter.as_ref(),
        token: &token,
        stop: &stop,
    };
    let worktree = prepared.worktree;
    let redactor = Redactor::new(&prepared.secrets);
    let (ending, tally) = run_child(
        &ctx,
        &mut child,
        pid,
        redactor.clone(),
        worktree.as_ref(),
        prepared.sandbox,
        prepared.usage_log,
    )
    .await;
    revoke_token(&state, &run).await;
    if matches!(ending, Ending::LeaseLost) {
        tracing::warn!("lease lost; the run was stopped and is left to its new owner");
        return;
    }
    finish::conclude(&state, &run, &issue, &agent, ending, tally, &redactor).await;
}

/// Revokes the run's token (it also stops working once the run is no longer live).
async fn revoke_token(state: &Engine, run: &Run) {
    if let Err(e) = state.store.revoke_run_tokens(run.id).await {
        tracing::warn!(error = %e, "cannot revoke the run's token");
    }
}

/// Commits the agent's work on its branch, logs the diff as the run's last event (kind `diff`) and
/// removes the worktree directory (the branch stays). Returns whether the run changed anything (a git
/// failure counts as changed, and then the worktree is kept so nothing is lost).
pub(super) async fn wrap_up_worktree(
    tree: &Worktree,
    issue: &Issue,
    agent: &Agent,
    run: &Run,
    log: &mut EventLog,
) -> (Option<String>, bool) {
    let message = format!(
        "{}: work of {} (Muster run {})",
        issue.key,
        agent.profile.name.as_str(),
        run.id
    );
    let author = format!("{} (muster)", agent.profile.name.as_str());
    match git::commit_work(tree, &message, &author).await {
        Ok(diff) => {
            log.push(
                "diff",
                json!({
                    "base": tree.base,
                    "branch": tree.branch,
                    "stat": diff.stat,
                    "patch": diff.patch,
                    "truncated": diff.truncated,
                }),
            );
            if let Err(e) = git::remove(tree).await {
                tracing::warn!(error = %e, "cannot remove the run's worktree");
            }
            let stat = (!diff.is_empty()).then(|| diff.stat.clone());
            (stat, !diff.is_empty())
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot commit the run's work; its worktree is kept");
            log.push(
                "error",
                json!({ "message": format!("cannot commit the work on {}: {e}", tree.branch) }),
            );
            (None, true)
        }
    }
}

/// Watches the child until it ends or must be stopped; stops and reaps it and whatever is left of its
/// process group; wraps up the worktree; commits every event.
async fn run_child(
    ctx: &Watch<'_>,
    child: &mut Child,
    pid: Option<i32>,
    redactor: Redactor,
    worktree: Option<&Worktree>,
    sandbox: serde_json::Value,
    usage_log: Option<std::path::PathBuf>,
) -> (Ending, Tally) {
    let mut lines = read_lines(child, usage_log);
    let mut log = EventLog::new(ctx.run.id, redactor);
    // The first event: what the agent may reach (shown as one block on the run page).
    log.push("sandbox", sandbox);
    // Codex reports no model in its events: price its usage by the profile's model.
    let mut tally = Tally {
        model: ctx.agent.profile.model.clone(),
        ..Tally::default()
    };
    let mut ending = watch::watch(ctx, child, &mut lines, &mut log, &mut tally).await;
    if !matches!(ending, Ending::Exited(_)) {
        let t = ctx.state.runs.timing();
        let status = process::stop_group_with(child, t.int_grace, t.term_grace).await;
        let code = status.ok().and_then(|s| s.code());
        ending = ending.with_exit_code(code);
    } else if let Some(pgid) = pid.and_then(|p| u32::try_from(p).ok())
        && process::kill_leftovers(pgid).await
    {
        // The leader exited by itself, leaving background children behind: no survivors.
        tracing::info!(pgid, "stopped what the agent left running");
    }
    watch::drain(ctx, &mut lines, &mut log, &mut tally).await;
    tally.settle();
    if let Some(tree) = worktree {
        let (stat, changed) = wrap_up_worktree(tree, ctx.issue, ctx.agent, ctx.run, &mut log).await;
        tally.diff_stat = stat;
        tally.changed = changed;
    }
    if let Err(e) = log.flush(ctx.state).await {
        tracing::error!(error = %e, "cannot store the run's last events");
    }
    (ending, tally)
}

/// Prepares the run and spawns its child; `Err` is the ending of a run that never started.
async fn launch(
    state: &Engine,
    run: &Run,
    issue: &Issue,
    agent: &Agent,
) -> Result<(Prepared, Child), Ending> {
    let comments = state
        .store
        .list_comments(issue.id)
        .await
        .unwrap_or_default();
    let prepared = prepare::prepare(state, run, issue, &comments, agent)
        .await
        .map_err(|e| Ending::NotStarted(e.reason, e.message))?;
    match process::spawn(&prepared.launch).await {
        Ok(child) => Ok((prepared, child)),
        Err(e) => {
            if let Some(tree) = &prepared.worktree {
                git::discard(tree).await;
            }
            let reason = match e {
                muster_agents::Error::NotInstalled { .. } => FailureReason::MissingCli,
                _ => FailureReason::Config,
            };
            Err(Ending::NotStarted(reason, format!("{e}")))
        }
    }
}

async fn load(state: &Engine, run: &Run) -> crate::store::Result<(Issue, Agent)> {
    let issue = state.store.get_issue_by_id(run.issue_id).await?;
    let agent = state
        .store
        .get_agent(run.workspace_id, run.agent_id)
        .await?;
    Ok((issue, agent))
}

/// A `todo` issue goes to `in_progress` when its run starts; either way the board hears that the run is
/// now running (its card's run indicator changes even when the issue does not move).
async fn mark_in_progress(state: &Engine, issue: &Issue, agent: &Agent) {
    if issue.status != IssueStatus::Todo {
        finish::announce(state, issue);
        return;
    }
    let actor: Actor = CommentAuthor::Agent(agent.id);
    match state
        .store
        .move_issue(
            issue.workspace_id,
            &issue.key,
            IssueStatus::InProgress,
            None,
            actor,
        )
        .await
    {
        Ok(_) => finish::announce(state, issue),
        Err(e) => tracing::warn!(error = %e, "cannot move the issue to in progress"),
    }
}

/// Starts one reader task per output stream (and one for the CLI's usage log, if it keeps one), all
/// feeding one channel that closes when they end; the usage log's reader ends with stdout.
fn read_lines(child: &mut Child, usage_log: Option<std::path::PathBuf>) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel(LINE_BUFFER);
    let stdout_done = CancellationToken::new();
    if let Some(dir) = usage_log {
        tokio::spawn(tail_usage_log(dir, tx.clone(), stdout_done.clone()));
    }
    if let Some(out) = child.stdout.take() {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _done = stdout_done.drop_guard();
            let mut lines = CappedLines::new(BufReader::new(out));
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(Line::Out(line)).await.is_err() {
                    break;
                }
            }
        });
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(async move {
            let mut lines = CappedLines::new(BufReader::new(err));
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(Line::Err(line)).await.is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// Follows the first `*.jsonl` file that appears under `dir` (Codex's session rollout), sending each
/// complete line as it is appended; after `done` (stdout closed: the CLI is gone) reads what is left
/// and ends.
async fn tail_usage_log(dir: std::path::PathBuf, tx: mpsc::Sender<Line>, done: CancellationToken) {
    use tokio::io::AsyncBufReadExt as _;
    let mut reader = None;
    let mut partial = String::new();
    loop {
        let finished = done.is_cancelled();
        if reader.is_none()
            && let Some(path) = first_jsonl(&dir).await
            && let Ok(file) = tokio::fs::File::open(&path).await
        {
            reader = Some(BufReader::new(file));
        }
        if let Some(file) = reader.as_mut() {
            // Whole lines only: a line still being written stays in `partial` until its newline.
            while let Ok(n) = file.read_line(&mut partial).await {
                if n == 0 || !partial.ends_with('\n') {
                    break;
                }
                let line = std::mem::take(&mut partial);
                if tx
                    .send(Line::UsageLog(line.trim_end().to_owned()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
        if finished {
            return;
        }
        tokio::select! {
            () = done.cancelled() => {}
            () = tokio::time::sleep(USAGE_LOG_POLL) => {}
        }
    }
}

/// The first `*.jsonl` file under `dir`, depth first in name order (`sessions/YYYY/MM/DD/rollout-….jsonl`).
async fn first_jsonl(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut entries = Vec::new();
    let mut read = tokio::fs::read_dir(dir).await.ok()?;
    while let Ok(Some(entry)) = read.next_entry().await {
        entries.push(entry.path());
    }
    entries.sort();
    for path in entries {
        if path.extension().is_some_and(|e| e == "jsonl") && path.is_file() {
            return Some(path);
        }
        if path.is_dir()
            && let Some(found) = Box::pin(first_jsonl(&path)).await
        {
            return Some(found);
        }
    }
    None
}
