//! How the supervision of a run ended ([`Ending`]), and the outcome the runner reports for it (its texts
//! redacted by the run's redactor before they leave the runner).

use super::events::Tally;
use crate::domain::{FailureReason, RunOutcome, RunStatus};
use crate::redact::Redactor;
use crate::runner::protocol::Finished;

/// Why a run had to be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Cancelled,
    Shutdown,
    Stalled,
    OverBudget,
    /// A monthly spend cap was crossed (the server said so).
    OverCap,
    Auth,
    /// The run produced as many events as a run may keep (the cap).
    EventCap(crate::domain::Seq),
    /// The CLI failed after the egress proxy or the sandbox refused one of its connections.
    EgressRefused,
    /// The CLI reported an error and its model server no longer accepted connections.
    Unreachable,
}

/// How the supervision of a run ended.
#[derive(Debug)]
pub(super) enum Ending {
    /// Preparing or spawning failed; the message says why.
    NotStarted(FailureReason, String),
    /// The child exited by itself, with this exit code.
    Exited(Option<i32>),
    /// The supervisor stopped the child; the exit code once reaped.
    Stopped(Stop, Option<i32>),
    /// The lease was lost: someone else owns the run now.
    LeaseLost,
    /// Found live at the runner's start: the server that ran it died (its process group was stopped).
    Orphaned,
}

impl Ending {
    /// The same ending with the exit code of the stopped child.
    pub(super) fn with_exit_code(self, code: Option<i32>) -> Self {
        match self {
            Ending::Stopped(stop, _) => Ending::Stopped(stop, code),
            other => other,
        }
    }
}

/// The `finished` message for an ending, its texts redacted.
pub(super) fn finished(
    held: crate::runner::protocol::Held,
    last_seq: crate::domain::Seq,
    ending: &Ending,
    tally: &Tally,
    redactor: &Redactor,
) -> Finished {
    let (status, exit_code, failure_reason) = match ending {
        Ending::NotStarted(reason, _) => (RunStatus::Failed, None, Some(*reason)),
        Ending::Exited(code) => {
            let ok = *code == Some(0) && tally.finished.as_ref().is_none_or(|(ok, _)| *ok);
            if ok && tally.git_error.is_some() {
                (RunStatus::Failed, *code, Some(FailureReason::Git))
            } else if ok && tally.all_refused() && !tally.changed {
                // Its CLI refused every tool call it tried: it did nothing, whatever its answer says.
                (
                    RunStatus::Failed,
                    *code,
                    Some(FailureReason::NeedsPermission),
                )
            } else if ok {
                (RunStatus::Succeeded, *code, None)
            } else if tally.egress.refusal().is_some()
                && (tally.errors.reason() == FailureReason::Network || !tally.errors.seen())
            {
                // It failed after a connection was refused: that is the cause to report, not a
                // network failure worth retrying.
                (RunStatus::Failed, *code, Some(FailureReason::EgressRefused))
            } else {
                (RunStatus::Failed, *code, Some(tally.errors.reason()))
            }
        }
        Ending::Stopped(stop, code) => match stop {
            Stop::Cancelled => (RunStatus::Cancelled, *code, None),
            Stop::Shutdown => (
                RunStatus::Interrupted,
                *code,
                Some(FailureReason::RunnerLost),
            ),
            Stop::Stalled => (RunStatus::TimedOut, *code, Some(FailureReason::Stalled)),
            Stop::OverBudget => (RunStatus::Failed, *code, Some(FailureReason::OverBudget)),
            Stop::OverCap => (RunStatus::Failed, *code, Some(FailureReason::OverCap)),
            Stop::Auth => (RunStatus::Failed, *code, Some(FailureReason::Auth)),
            Stop::EventCap(_) => (RunStatus::Failed, *code, Some(FailureReason::EventCap)),
            Stop::EgressRefused => (RunStatus::Failed, *code, Some(FailureReason::EgressRefused)),
            Stop::Unreachable => (RunStatus::Failed, *code, Some(FailureReason::Unreachable)),
        },
        Ending::LeaseLost | Ending::Orphaned => (
            RunStatus::Interrupted,
            None,
            Some(FailureReason::RunnerLost),
        ),
    };
    let summary = match ending {
        Ending::NotStarted(_, message) => Some(message.clone()),
        Ending::Stopped(Stop::EventCap(cap), _) => Some(super::events::cap_message(*cap)),
        // Stopped on purpose: why (an ensemble's early stop says so), never what the killed agent said
        // last.
        Ending::Stopped(Stop::Cancelled, _) => tally.stop_note.clone(),
        _ => tally.summary(),
    };
    let refusal = tally.first_refusal.as_ref().map(|first| {
        let more = match tally.refused {
            0 | 1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        match &tally.permission_mode {
            Some(mode) => format!("{first}{more}, under the permission mode {mode}"),
            None => format!("{first}{more}"),
        }
    });
    // The decisive error, for a failure that was not of our making (a stop or an unstarted run says why
    // itself in its reason and summary).
    let failure_detail = match ending {
        _ if failure_reason == Some(FailureReason::Git) => tally.git_error.as_deref(),
        _ if failure_reason == Some(FailureReason::EgressRefused) => tally.egress.refusal(),
        _ if failure_reason == Some(FailureReason::NeedsPermission) => refusal.as_deref(),
        Ending::Exited(_) | Ending::Stopped(Stop::Auth, _) if failure_reason.is_some() => {
            tally.errors.message()
        }
        _ => None,
    };
    Finished {
        run_id: held.run_id,
        epoch: held.epoch,
        last_seq,
        outcome: RunOutcome {
            status,
            exit_code,
            failure_reason,
            failure_detail: redactor.opt(failure_detail),
            usage: tally.usage,
            summary: redactor.opt(summary.as_deref()),
            diff_stat: redactor.opt(tally.diff_stat.as_deref()),
            session_id: redactor.opt(tally.session_id.as_deref()),
            base_commit: tally.commits.as_ref().map(|(base, _)| base.clone()),
            head_commit: tally.commits.as_ref().map(|(_, head)| head.clone()),
        },
        changed: tally.changed,
    }
}
