//! Planning in motion: what a status change means for the issues around it.
//!
//! - A blocker met (done, and no run of it still at work): the blocked issues' queued runs become
//!   claimable (the claim itself checks, see `store::plans::UNBLOCKED`); the runners are woken here, when
//!   the blocker moves or when its last run ends, so they start within a claim, not a poll.
//! - A child ended (done or cancelled, and no run of it still at work): once every child of a parent that
//!   asked for it has, the parent's agent is handed one digest of the children's outcomes, exactly once (`PlanStore::take_fan_in`). The sweep
//!   looks for fan-ins a crash left untaken.
//! - A run's brief names its blockers' branches, diff stats and summaries; a stacked edge starts the
//!   blocked issue's new line from its blocker's last delivered commit.

use crate::domain::{
    Assignee, Blocker, Issue, IssueId, IssueStatus, Run, RunStatus, RunTrigger, Usage,
};
use crate::store;

use super::Engine;

/// How many untaken fan-ins one sweep handles.
const SWEEP_FAN_INS: i64 = 100;

/// After `issue`'s status changed to its current one: wakes the runners for issues it no longer blocks,
/// and its parent's agent when it was the last child to end.
pub(crate) async fn issue_moved(engine: &Engine, issue: &Issue) {
    if issue.status == IssueStatus::Done
        && let Err(e) = blockers_met(engine, issue).await
    {
        tracing::warn!(issue = %issue.key, error = %e, "cannot wake the issues it blocked");
    }
    if matches!(issue.status, IssueStatus::Done | IssueStatus::Cancelled)
        && let Some(parent) = issue.parent
        && let Err(e) = fan_in(engine, parent).await
    {
        tracing::warn!(issue = %issue.key, error = %e, "cannot wake the parent's agent");
    }
}

/// After a run of `issue` ended: an issue already done or cancelled (its agent marked it so while the
/// run worked) held the issues it blocks and its parent's fan-in until now, when its work is delivered.
pub(crate) async fn run_ended(engine: &Engine, issue: &Issue) {
    if matches!(issue.status, IssueStatus::Done | IssueStatus::Cancelled) {
        issue_moved(engine, issue).await;
    }
}

/// The runs `issue` held that may start now: the runners (of every replica) are woken for them.
async fn blockers_met(engine: &Engine, issue: &Issue) -> store::Result<()> {
    let links = engine.store.list_links(issue.id).await?;
    let mut woke = false;
    // Every issue it blocks: whether that one's last blocker is met now, the claim decides.
    for link in links
        .iter()
        .filter(|l| l.link == crate::domain::LinkKind::Blocks)
    {
        for run in engine.store.list_runs_for_issue(link.other.id).await? {
            if run.status == RunStatus::Queued {
                tracing::info!(run.id = %run.id, issue = %link.other.key, blocker = %issue.key, "blocker met");
                engine.hub.relay(crate::hub::Relayed::RunQueued(run.id));
                woke = true;
            }
        }
    }
    if woke {
        engine.runs.wake();
    }
    Ok(())
}

/// Wakes `parent`'s agent once every child has ended (exactly once per completion of the set).
pub(crate) async fn fan_in(engine: &Engine, parent: IssueId) -> store::Result<()> {
    if !engine.store.take_fan_in(parent).await? {
        return Ok(());
    }
    let issue = engine.store.get_issue_by_id(parent).await?;
    let text = digest(engine, &issue).await?;
    let Some(comment) = engine.post_note(issue.id, None, &text).await? else {
        return Ok(());
    };
    super::finish::announce(engine, &issue);
    match issue.assignee {
        Some(Assignee::Agent(agent)) => {
            tracing::info!(issue = %issue.key, "every child ended: waking the parent's agent");
            super::triggers::hand_over(engine, &issue, agent, comment.id, RunTrigger::Comment).await
        }
        _ => Ok(()),
    }
}

/// The fan-ins a crash may have left untaken.
pub(crate) async fn sweep(engine: &Engine) {
    let due = match engine.store.fan_ins_due(SWEEP_FAN_INS).await {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, "cannot look for parents to wake");
            return;
        }
    };
    for parent in due {
        if let Err(e) = fan_in(engine, parent).await {
            tracing::warn!(error = %e, "cannot wake a parent's agent");
        }
    }
}

/// The latest succeeded run of an issue: what it delivered.
async fn delivered(engine: &Engine, issue: IssueId) -> store::Result<Option<Run>> {
    let runs = engine.store.list_runs_for_issue(issue).await?;
    Ok(runs
        .into_iter()
        .rev()
        .find(|r| r.status == RunStatus::Succeeded))
}

/// "Every sub-issue of ACM-1 has ended": each child's outcome — status, summary, branch, diff stat,
/// cost, failures — and the totals.
async fn digest(engine: &Engine, parent: &Issue) -> store::Result<String> {
    let children = engine.store.list_children(parent.id).await?;
    let mut total = Usage::default();
    let mut runs_n = 0;
    let mut lines = Vec::new();
    for child in &children {
        let runs = engine.store.list_runs_for_issue(child.id).await?;
        runs_n += runs.len();
        for run in &runs {
            total += &run.usage;
        }
        let mut line = format!(
            "- {} {} — {}",
            child.key,
            child.title.as_str(),
            child.status
        );
        match runs.iter().rev().find(|r| r.status == RunStatus::Succeeded) {
            Some(run) => {
                if let Some(branch) = &run.branch {
                    line.push_str(&format!("; branch `{branch}`"));
                }
                if let Some(stat) = run
                    .diff_stat
                    .as_deref()
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                {
                    line.push_str(&format!(" ({})", last_line(stat)));
                }
                if let Some(summary) = run
                    .summary
                    .as_deref()
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                {
                    line.push_str(&format!("\n  {}", clip(summary, 400).replace('\n', "\n  ")));
                }
            }
            None => {
                let failed = runs
                    .iter()
                    .filter(|r| matches!(r.status, RunStatus::Failed | RunStatus::TimedOut))
                    .count();
                if failed > 0 {
                    line.push_str(&format!("; {failed} failed run(s), none delivered"));
                }
            }
        }
        lines.push(line);
    }
    let done = children
        .iter()
        .filter(|c| c.status == IssueStatus::Done)
        .count();
    Ok(format!(
        "Every sub-issue of {} has ended ({done} done, {} cancelled; {runs_n} runs, ${:.4}, {} tokens):\n\n\
         {}\n\nReview their work and finish {}.",
        parent.key,
        children.len() - done,
        total.cost_usd,
        total.tokens(),
        lines.join("\n"),
        parent.key
    ))
}

/// The brief's part about `issue`'s blockers: each one's status and what it delivered (branch, diff
/// stat, summary). Empty when it has none.
pub(crate) async fn blockers_brief(engine: &Engine, issue: &Issue) -> store::Result<String> {
    let blockers = engine.store.blockers_of(&[issue.id]).await?;
    if blockers.is_empty() {
        return Ok(String::new());
    }
    let mut out = String::from("\n\n## Blocked by\n\nThis issue builds on the work of:\n");
    for b in &blockers {
        out.push_str(&format!(
            "\n### {} {} ({})\n",
            b.blocker.key,
            b.blocker.title.as_str(),
            b.blocker.status
        ));
        match delivered(engine, b.blocker.id).await? {
            Some(run) => {
                if let Some(branch) = &run.branch {
                    out.push_str(&format!("Branch: `{branch}`"));
                    if let Some(head) = &run.head_commit {
                        out.push_str(&format!(" at {}", &head[..head.len().min(12)]));
                    }
                    out.push('\n');
                }
                if let Some(stat) = run.diff_stat.as_deref().filter(|s| !s.trim().is_empty()) {
                    out.push_str(&format!("Diff stat:\n```\n{}\n```\n", stat.trim_end()));
                }
                if let Some(summary) = run.summary.as_deref().filter(|s| !s.trim().is_empty()) {
                    out.push_str(&format!("Summary: {}\n", clip(summary.trim(), 2_000)));
                }
            }
            None => out.push_str("No delivered run yet.\n"),
        }
    }
    Ok(out)
}

/// The commit a new line of `issue` starts from when a stacked edge says so: the delivered head of its
/// first stacked blocker that has one.
pub(crate) async fn stacked_base(engine: &Engine, issue: &Issue) -> store::Result<Option<String>> {
    let blockers: Vec<Blocker> = engine.store.blockers_of(&[issue.id]).await?;
    for b in blockers.iter().filter(|b| b.stacked) {
        if let Some(head) = delivered(engine, b.blocker.id)
            .await?
            .and_then(|r| r.head_commit)
        {
            return Ok(Some(head));
        }
    }
    Ok(None)
}

/// A diff stat's last line ("3 files changed, 40 insertions(+)").
fn last_line(stat: &str) -> &str {
    stat.lines().last().unwrap_or(stat).trim()
}

/// `text` cut to at most `max` characters (on a character boundary), with "…" when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clipping_keeps_whole_characters() {
        assert_eq!(super::clip("héllo", 2), "hé…");
        assert_eq!(super::clip("hi", 5), "hi");
        assert_eq!(
            super::last_line(" a | 1 +\n 1 file changed, 1 insertion(+)\n"),
            "1 file changed, 1 insertion(+)"
        );
    }
}
