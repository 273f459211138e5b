//! One task per run a runner executes: prepare, spawn, report the start, watch, stop, wrap up, report
//! the end. Also the recovery of a run a previous life of the runner left behind.
//!
//! Invariants: the child is always reaped before the run is reported finished; after a lost claim
//! nothing more is reported for the run (another claim owns it now); output lines are read by two reader
//! tasks into one channel, so the watch loop's `select!` never cancels a half-read line.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use muster_agents::process::{self, CappedLines};
use tokio::io::BufReader;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::RunTiming;
use super::check::{self, Confinement};
use super::ending::{self, Ending, Stop};
use super::events::{EventLog, Tally};
use super::git::{self, Worktree};
use super::prepare::{self, Prepared};
use super::usage_log::UsageLog;
use super::watch::{self, Line, Watch};
use crate::config::Config;
use crate::domain::{DiffNote, RunEventBody, RunId, SandboxNote, SessionNote};
use crate::redact::Redactor;
use crate::runner::core::Link;
use crate::runner::protocol::{Held, Order, Orphan, Started, ToServer};
use crate::runtimes::RuntimeCache;

/// How many output lines may wait for the supervisor before the readers (and so the child) block.
const LINE_BUFFER: usize = 256;

/// What a runner's machine offers the runs it executes. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    /// The runner's configuration: its runs folder, its data folder (kept from agents), the sandbox
    /// settings, local model servers, the `muster` executable.
    pub config: Arc<Config>,
    /// The agent CLIs on this machine.
    pub runtimes: RuntimeCache,
    /// The clocks (grace periods, stall override in tests).
    pub timing: RunTiming,
    /// The URL agents reach the API at when the order names none (the server this runner reaches).
    pub api_url: Option<String>,
    /// Where clones of the workspaces' repositories live.
    pub repo_cache: PathBuf,
}

/// A run's stop signal: a person's cancel, a lost claim, or the runner's shutdown (the parent token).
pub struct RunSignal {
    token: CancellationToken,
    shutdown: CancellationToken,
    lost: AtomicBool,
    /// Why the server stopped the run, when it said.
    why: std::sync::Mutex<Option<crate::domain::StopNote>>,
    /// Fires when a budget the run shares is spent: the agent stops, but its check still runs (its
    /// partial work counts), unlike after a cancel.
    spent: CancellationToken,
}

impl RunSignal {
    /// A signal that also fires when `shutdown` (the runner's stop) does.
    pub fn new(shutdown: &CancellationToken) -> Self {
        Self {
            token: shutdown.child_token(),
            shutdown: shutdown.clone(),
            lost: AtomicBool::new(false),
            why: std::sync::Mutex::new(None),
            spent: CancellationToken::new(),
        }
    }

    /// Stops the run for a reason the server gave (an ensemble's early stop or budget).
    pub fn stop_because(&self, why: crate::domain::StopNote) {
        let over_budget = matches!(
            why.why,
            crate::domain::StopWhy::OverBudget | crate::domain::StopWhy::OverCap
        );
        *self
            .why
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
        if over_budget {
            self.spent.cancel();
        } else {
            self.token.cancel();
        }
    }

    /// Fires when the server stopped the run because a budget it shares is spent.
    pub(super) fn spent(&self) -> &CancellationToken {
        &self.spent
    }

    /// The reason the server gave for stopping the run, if any.
    pub fn why(&self) -> Option<crate::domain::StopNote> {
        self.why
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether the runner is shutting down (the run then ends `interrupted`).
    pub fn is_shutdown(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Stops the run; `lost`: the runner no longer holds it, so it must write nothing more.
    pub fn stop(&self, lost: bool) {
        if lost {
            self.lost.store(true, Ordering::SeqCst);
        }
        self.token.cancel();
    }

    /// Whether the run's claim was lost.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    pub(super) fn token(&self) -> &CancellationToken {
        &self.token
    }
}

/// Executes `order` to its end and reports it through `link`. Never panics on process errors: they end
/// the run as failed.
#[tracing::instrument(skip_all, fields(run.id = %order.run_id))]
pub(crate) async fn execute(host: &Host, order: Order, link: &Link, signal: &RunSignal) {
    let held = Held {
        run_id: order.run_id,
        epoch: order.epoch,
    };
    let (prepared, mut child) = match launch(host, &order).await {
        Ok(launched) => launched,
        Err(ending) => {
            if let Ending::NotStarted(reason, message) = &ending {
                tracing::warn!(%reason, message, "the run cannot start");
            }
            let redactor = Redactor::new(prepare::order_secrets(&order));
            let report = ending::finished(
                held,
                order.next_seq - 1,
                &ending,
                &Tally::default(),
                &redactor,
            );
            link.keep(ToServer::Finished(report));
            return;
        }
    };
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    link.keep(ToServer::Started(Started {
        run_id: order.run_id,
        epoch: order.epoch,
        pid,
        workdir: Some(prepared.workdir.display().to_string()),
        branch: prepared.worktree.as_ref().map(|t| t.branch.clone()),
    }));
    tracing::info!(pid, agent = %order.agent.name, "run started");
    let redactor = Redactor::new(&prepared.secrets);
    let ctx = Watch {
        host,
        order: &order,
        link,
        adapter: prepared.adapter.as_ref(),
        signal,
        model_probe: prepared.model_probe.as_deref(),
    };
    let worktree = prepared.worktree;
    let mut egress = prepared.egress;
    let (ending, tally, last_seq) = run_child(
        &ctx,
        &mut child,
        pid,
        redactor.clone(),
        Work {
            worktree: worktree.as_ref(),
            confinement: &prepared.confinement,
        },
        first_events(prepared.sandbox, prepared.continuity),
        Sources {
            usage_log: prepared.usage_log,
            egress: egress.as_mut(),
        },
    )
    .await;
    drop(egress);
    if matches!(ending, Ending::LeaseLost) || signal.is_lost() {
        tracing::warn!("claim lost; the run was stopped and is left to its new owner");
        return;
    }
    let report = ending::finished(held, last_seq, &ending, &tally, &redactor);
    link.keep(ToServer::Finished(report));
}

/// Finishes a run a previous life of this runner left behind: stops what is left of its process group
/// (only if a member still carries the run's id in its environment, so a reused pid is never hit),
/// commits the work in its worktree and logs the diff, then reports it `interrupted` — the server
/// re-queues it if it changed nothing, else leaves it to a person. The events it stored stay.
pub(crate) async fn recover(host: &Host, orphan: Orphan, link: &Link) {
    let run_id = orphan.run_id;
    if let Some(pgid) = orphan.pid.and_then(|p| u32::try_from(p).ok())
        && process::group_has_env(pgid, "MUSTER_RUN_ID", &run_id.to_string())
    {
        tracing::warn!(run.id = %run_id, pgid, "stopping the orphaned agent");
        process::kill_leftovers(pgid);
    }
    let mut secrets = orphan.secrets.clone();
    secrets.extend(orphan.forge.as_ref().map(|f| f.token.clone()));
    let redactor = Redactor::new(&secrets);
    let next_seq = orphan.next_seq.max(link.kept_seq(run_id) + 1);
    let held = Held {
        run_id,
        epoch: orphan.epoch,
    };
    let mut log = EventLog::new(held, next_seq, redactor.clone());
    let mut tally = Tally::default();
    if let Some(tree) = git::recorded(&prepare::run_dir(&host.config, run_id)).await {
        let wrapped = wrap_up_worktree(
            &tree,
            &orphan.issue_key,
            &orphan.agent_name,
            run_id,
            &mut log,
            Push::of(host.config.push_branches, orphan.forge.as_ref()),
            None,
        )
        .await;
        tally.diff_stat = wrapped.stat;
        tally.changed = wrapped.changed;
        tally.commits = wrapped.commits;
        tally.git_error = wrapped.git_error;
    }
    log.flush(link);
    let report = ending::finished(held, log.last_seq(), &Ending::Orphaned, &tally, &redactor);
    link.keep(ToServer::Finished(report));
}

/// An ensemble candidate's check, to run once the work is committed (see [`check`](super::check)).
pub(super) struct CheckRun<'a> {
    pub spec: &'a crate::domain::CheckSpec,
    pub confinement: &'a Confinement,
    pub redactor: &'a Redactor,
    pub timing: &'a RunTiming,
    pub signal: &'a RunSignal,
    /// Where the events logged before the check go out while it runs.
    pub link: &'a Link,
}

/// Whether and how a run's commit is pushed to its repository's remote: the runner may push (its
/// `--no-push` says not), and through the workspace's forge when it has one.
#[derive(Clone, Copy)]
pub(super) struct Push<'a> {
    pub allowed: bool,
    pub forge: Option<&'a crate::runner::protocol::ForgePush>,
}

impl<'a> Push<'a> {
    pub(super) fn of(allowed: bool, forge: Option<&'a crate::runner::protocol::ForgePush>) -> Self {
        Self { allowed, forge }
    }
}

/// What wrapping up a worktree found.
pub(super) struct WrappedUp {
    /// The diff stat, when the run changed something.
    pub stat: Option<String>,
    /// Whether the run changed anything (a git failure counts as changed).
    pub changed: bool,
    /// The run was stopped during its check (a cancel, the runner's shutdown, a lost claim).
    pub stopped_in_check: bool,
    /// The run's start and the commit its work became, when it could be committed.
    pub commits: Option<(String, String)>,
    /// Why the work could not be committed, when it could not.
    pub git_error: Option<String>,
}

/// Commits the agent's work into the run's repository on its line's branch (see [`git::commit_work`]),
/// logs the diff (kind `diff`, with the commit), pushes that commit to the repository's remote when it
/// is a git URL, the run changed something and `push` allows it (kind `push`, or `error`: a refused push
/// never fails the run), runs the ensemble candidate's `check` in the worktree and logs its result (kind
/// [`CHECK_EVENT`](crate::domain::CHECK_EVENT)), and removes the worktree and the private repository.
/// A git failure counts as changed, and then both are kept so nothing is lost.
pub(super) async fn wrap_up_worktree(
    tree: &Worktree,
    issue_key: &str,
    agent_name: &str,
    run_id: RunId,
    log: &mut EventLog,
    push: Push<'_>,
    check: Option<CheckRun<'_>>,
) -> WrappedUp {
    let message = format!("{issue_key}: work of {agent_name} (Muster run {run_id})");
    let author = format!("{agent_name} (muster)");
    match git::commit_work(tree, &message, &author).await {
        Ok(git::Committed { commit, diff }) => {
            log.push(RunEventBody::Diff(DiffNote {
                base: tree.base.clone(),
                commit: commit.clone(),
                branch: tree.branch.clone(),
                stat: diff.stat.clone(),
                patch: diff.patch.clone(),
                truncated: diff.truncated,
            }));
            if let Some(url) = tree
                .remote
                .as_deref()
                .filter(|_| push.allowed && !diff.is_empty())
            {
                push_work(tree, &commit, url, push.forge, log).await;
            }
            let mut stopped_in_check = false;
            if let Some(c) = check {
                stopped_in_check = run_check(tree, log, &c).await;
            }
            if let Err(e) = git::remove(tree).await {
                tracing::warn!(error = %e, "cannot remove the run's worktree");
            }
            let stat = (!diff.is_empty()).then(|| diff.stat.clone());
            WrappedUp {
                stat,
                changed: !diff.is_empty(),
                stopped_in_check,
                commits: Some((tree.base.clone(), commit)),
                git_error: None,
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot commit the run's work; its worktree is kept");
            let message = format!(
                "cannot commit the work on {}: {e}; the worktree {} is kept with it",
                tree.branch,
                tree.path.display()
            );
            log.push(RunEventBody::error(message.clone()));
            if let Some(c) = check {
                let result = check::not_run(
                    c.spec,
                    "the work could not be committed, so it was not checked",
                );
                log.push(RunEventBody::Check(result));
            }
            WrappedUp {
                stat: None,
                changed: true,
                stopped_in_check: false,
                commits: None,
                git_error: Some(message),
            }
        }
    }
}

/// Runs the check in the committed worktree and logs its result (not after a lost claim: another claim
/// owns the run). Returns whether the run was stopped meanwhile. What the check does to the worktree or
/// the private repository changes nothing: the work was committed into the run's repository already.
async fn run_check(tree: &Worktree, log: &mut EventLog, c: &CheckRun<'_>) -> bool {
    // What was logged so far (the diff) is stored while the check runs.
    log.flush(c.link);
    tracing::info!(command = %c.spec.command, "running the check");
    let outcome = check::run(
        c.spec,
        &tree.path,
        c.confinement,
        c.redactor,
        c.timing,
        c.signal,
    )
    .await;
    let (result, stopped) = match outcome {
        check::Outcome::Done(result) => (result, false),
        check::Outcome::Stopped(result) => (result, true),
    };
    tracing::info!(
        exit_code = ?result.exit_code,
        timed_out = result.timed_out,
        duration_ms = result.duration_ms,
        "check finished"
    );
    if !c.signal.is_lost() {
        log.push(RunEventBody::Check(result));
    }
    stopped
}

/// Pushes the run's commit to its branch at `url` and logs the outcome (the remote shown without
/// credentials). With a forge, the forge is asked first which branch the line's work goes to (never the
/// branch of a merged or closed pull request: see [`crate::forge::push_target`]) and the push carries
/// its token; when the forge cannot be asked, nothing is pushed.
async fn push_work(
    tree: &Worktree,
    commit: &str,
    url: &str,
    forge: Option<&crate::runner::protocol::ForgePush>,
    log: &mut EventLog,
) {
    let (branch, auth) = match forge {
        None => (tree.branch.clone(), None),
        Some(f) => match crate::forge::push_target(f, &tree.branch).await {
            Ok(branch) => (
                branch,
                Some(crate::forge::git_auth_header(f.kind, &f.token)),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "cannot ask the forge where the branch goes");
                log.push(RunEventBody::error(format!(
                    "not pushed: cannot ask {} whether the pull request of {} is still open: {e}",
                    f.kind.label(),
                    tree.branch
                )));
                return;
            }
        },
    };
    match git::push_branch_to(tree, commit, url, &branch, auth.as_deref()).await {
        Ok(()) => log.push(RunEventBody::Push {
            remote: crate::redact::without_credentials(url),
            branch,
            commit: commit.to_owned(),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "cannot push the run's branch");
            log.push(RunEventBody::error(e.to_string()));
        }
    }
}

/// The events a run's log opens with: what the agent may reach (`sandbox`, shown as one block on the run
/// page), and for a follow-up whether it resumed its session (`session`).
fn first_events(sandbox: SandboxNote, continuity: Option<SessionNote>) -> Vec<RunEventBody> {
    let mut first = vec![RunEventBody::Sandbox(sandbox)];
    first.extend(continuity.map(RunEventBody::Session));
    first
}

/// What feeds the run's log besides the child's output: the CLI's usage log, the egress proxy's records.
struct Sources<'a> {
    usage_log: Option<UsageLog>,
    egress: Option<&'a mut crate::egress::RunProxy>,
}

/// Where the run works: its worktree (when the workspace has a repository) and what a check there runs
/// inside.
struct Work<'a> {
    worktree: Option<&'a Worktree>,
    confinement: &'a Confinement,
}

/// Watches the child until it ends or must be stopped; stops and reaps it and whatever is left of its
/// process group; wraps up the worktree; hands every event to the outbox. Returns the ending, the tally
/// and the last event seq.
async fn run_child(
    ctx: &Watch<'_>,
    child: &mut Child,
    pid: Option<i32>,
    redactor: Redactor,
    work: Work<'_>,
    first: Vec<RunEventBody>,
    sources: Sources<'_>,
) -> (Ending, Tally, crate::domain::Seq) {
    let Work {
        worktree,
        confinement,
    } = work;
    let Sources { usage_log, egress } = sources;
    let (mut lines, egress) = match egress {
        Some(proxy) => {
            let records = proxy.take_records();
            (read_lines(child, usage_log, records), Some(proxy))
        }
        None => (read_lines(child, usage_log, None), None),
    };
    let check_redactor = redactor.clone();
    let held = Held {
        run_id: ctx.order.run_id,
        epoch: ctx.order.epoch,
    };
    let mut log = EventLog::new(held, ctx.order.next_seq, redactor);
    for body in first {
        log.push(body);
    }
    // Codex reports no model in its events: price its usage by the profile's model.
    let mut tally = Tally {
        model: ctx.order.agent.model.clone(),
        permission_mode: Some(ctx.order.agent.permission_mode.to_string()),
        ..Tally::default()
    };
    if let Some(policy) = &confinement.policy {
        tally.egress.direct_ports.clone_from(&policy.connect_ports);
    }
    let mut ending = watch::watch(ctx, child, &mut lines, &mut log, &mut tally).await;
    if !matches!(ending, Ending::Exited(_)) {
        let t = &ctx.host.timing;
        let status = process::stop_group_with(child, t.int_grace, t.term_grace).await;
        let code = status.ok().and_then(|s| s.code());
        ending = ending.with_exit_code(code);
    } else if let Some(pgid) = pid.and_then(|p| u32::try_from(p).ok())
        && process::kill_leftovers(pgid)
    {
        // The leader exited by itself, leaving background children behind: no survivors.
        tracing::info!(pgid, "stopped what the agent left running");
    }
    // The agent is gone: its connections end and report what they carried.
    if let Some(proxy) = egress {
        proxy.close();
    }
    if ctx.signal.is_lost() {
        if let Some(tree) = worktree {
            git::discard(tree).await;
        }
        return (Ending::LeaseLost, tally, log.last_seq());
    }
    watch::drain(ctx, &mut lines, &mut log, &mut tally).await;
    tally.settle();
    // An ensemble candidate is checked unless a person cancelled it or the runner is stopping (a lost
    // claim returned above); over budget, failed or stalled, its partial work counts.
    let check = ctx
        .order
        .check
        .as_ref()
        .filter(|_| !matches!(ending, Ending::Stopped(Stop::Cancelled | Stop::Shutdown, _)));
    if let Some(tree) = worktree {
        let wrapped = wrap_up_worktree(
            tree,
            &ctx.order.issue_key,
            &ctx.order.agent.name,
            ctx.order.run_id,
            &mut log,
            Push::of(ctx.host.config.push_branches, ctx.order.forge.as_ref()),
            check.map(|spec| CheckRun {
                spec,
                confinement,
                redactor: &check_redactor,
                timing: &ctx.host.timing,
                signal: ctx.signal,
                link: ctx.link,
            }),
        )
        .await;
        tally.diff_stat = wrapped.stat;
        tally.changed = wrapped.changed;
        tally.commits = wrapped.commits;
        tally.git_error = wrapped.git_error;
        if wrapped.stopped_in_check {
            if ctx.signal.is_lost() {
                return (Ending::LeaseLost, tally, log.last_seq());
            }
            let stop = if ctx.signal.is_shutdown() {
                Stop::Shutdown
            } else {
                Stop::Cancelled
            };
            let code = match ending {
                Ending::Exited(code) | Ending::Stopped(_, code) => code,
                _ => None,
            };
            ending = Ending::Stopped(stop, code);
        }
    } else if let Some(spec) = check {
        let result = check::not_run(
            spec,
            "the run has no worktree (the workspace has no repository), so there is nothing to check",
        );
        log.push(RunEventBody::Check(result));
    }
    log.flush(ctx.link);
    (ending, tally, log.last_seq())
}

/// Prepares the run and spawns its child; `Err` is the ending of a run that never started.
async fn launch(host: &Host, order: &Order) -> Result<(Prepared, Child), Ending> {
    let prepared = prepare::prepare(host, order)
        .await
        .map_err(|e| Ending::NotStarted(e.reason(), e.to_string()))?;
    match process::spawn(&prepared.launch).await {
        Ok(child) => Ok((prepared, child)),
        Err(e) => {
            if let Some(tree) = &prepared.worktree {
                git::discard(tree).await;
            }
            let e = super::Error::Spawn(e);
            Err(Ending::NotStarted(e.reason(), e.to_string()))
        }
    }
}

/// Starts one reader task per output stream (and one for the CLI's usage log, if it keeps one, and one
/// for the egress proxy's records), all feeding one channel that closes when they end; the usage log's
/// reader ends with stdout, the records' when the run's proxy is closed.
fn read_lines(
    child: &mut Child,
    usage_log: Option<UsageLog>,
    egress: Option<mpsc::Receiver<crate::egress::Record>>,
) -> mpsc::Receiver<Line> {
    let (tx, rx) = mpsc::channel(LINE_BUFFER);
    if let Some(mut records) = egress {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(record) = records.recv().await {
                if tx.send(Line::Egress(record)).await.is_err() {
                    break;
                }
            }
        });
    }
    let stdout_done = CancellationToken::new();
    if let Some(log) = usage_log {
        tokio::spawn(log.tail(tx.clone(), stdout_done.clone()));
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
