//! Cross-replica wake-ups (PostgreSQL): what the hub publishes here, and runs queued or cancelled here,
//! are told to every other replica with `NOTIFY` (ids only, never payloads; an ended credential travels as
//! its SHA-256, as the store keeps it, never the secret); what other replicas tell is republished on this
//! replica's hub, wakes its runner, cancels a run it holds, or ends the live connections of a credential.
//!
//! Invariants: a note is sent after the write it describes has committed (the hub is told only after the
//! store, see `events.rs`), so a replica that reads the rows on a note finds them; each replica tags its
//! notes with its own origin id and ignores its own; publishing never waits for the database (an
//! unbounded queue feeds one sender task). On SQLite `Store::listen` is `None` and nothing starts: one
//! process is the only replica and the in-process wake-ups suffice.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::domain::{IssueKey, RunId, WorkspaceId};
use crate::engine::Engine;
use crate::hub::{LiveEvent, Relayed, Topic};

/// Starts relaying when the store can listen (Postgres); returns once both tasks are running.
pub async fn start(state: &Engine, stop: CancellationToken) -> anyhow::Result<()> {
    let Some(mut notes) = state.store.listen().await? else {
        return Ok(());
    };
    let origin = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let (tx, mut outbox) = mpsc::unbounded_channel::<Relayed>();
    state.hub.set_relay(tx);
    let store = state.store.clone();
    let (sender_origin, sender_stop) = (origin.clone(), stop.clone());
    tokio::spawn(async move {
        loop {
            let note = tokio::select! {
                () = sender_stop.cancelled() => return,
                note = outbox.recv() => note,
            };
            let Some(note) = note else { return };
            // What queued up while the last NOTIFY was on its way goes out together, each run's events
            // notes merged into its latest: one round trip however busy the runs are.
            let mut notes = vec![note];
            while let Ok(more) = outbox.try_recv() {
                notes.push(more);
            }
            for payload in payloads(&sender_origin, &coalesce(notes)) {
                if let Err(e) = store.notify(&payload).await {
                    tracing::warn!(error = %e, "cannot tell the other replicas");
                }
            }
        }
    });
    tracing::info!(replica = %origin, "relaying wake-ups between replicas");
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => return,
                message = notes.recv() => message,
            };
            let Some(message) = message else { return };
            for line in message.lines() {
                match decode(line) {
                    Some((from, _)) if from == origin => {}
                    Some((_, note)) => apply(&state, note),
                    None => tracing::debug!(line, "ignoring an unknown notification"),
                }
            }
        }
    });
    Ok(())
}

/// Acts on another replica's note.
fn apply(state: &Engine, note: Relayed) {
    match note {
        Relayed::Live(topic, event) => state.hub.publish_local(topic, event),
        Relayed::RunQueued(_) => state.runs.wake(),
        Relayed::RunnerTokenRevoked(token) => state.runs.disconnect(token),
        Relayed::CredentialEnded(hash) => {
            state.live.end_credential(&hash);
        }
        Relayed::CancelRun(run) => {
            if state.runs.tell(run, false) {
                tracing::info!(run.id = %run, "cancelled by another replica");
            }
        }
        Relayed::StopRun(run, why) => {
            let note = super::ensemble::relayed_note(why);
            if state.runs.tell_why(run, note) {
                tracing::info!(run.id = %run, %why, "stopped by another replica");
            }
        }
    }
}

/// The most bytes of one NOTIFY payload (PostgreSQL refuses 8,000 or more).
const PAYLOAD_BYTES: usize = 7_000;

/// `notes` in order, with each run's events notes reduced to one, at the place of its first, naming the
/// highest seq.
fn coalesce(notes: Vec<Relayed>) -> Vec<Relayed> {
    let mut out: Vec<Relayed> = Vec::with_capacity(notes.len());
    let mut at: std::collections::HashMap<RunId, usize> = std::collections::HashMap::new();
    for note in notes {
        if let Relayed::Live(_, LiveEvent::RunEvents { run_id, last_seq }) = &note {
            if let Some(&i) = at.get(run_id) {
                if let Relayed::Live(_, LiveEvent::RunEvents { last_seq: kept, .. }) = &mut out[i] {
                    *kept = (*kept).max(*last_seq);
                }
                continue;
            }
            at.insert(*run_id, out.len());
        }
        out.push(note);
    }
    out
}

/// The notes as NOTIFY payloads: one line per note, lines joined up to [`PAYLOAD_BYTES`].
fn payloads(origin: &str, notes: &[Relayed]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for note in notes {
        let line = encode(origin, note);
        match out.last_mut() {
            Some(payload) if payload.len() + 1 + line.len() <= PAYLOAD_BYTES => {
                payload.push('\n');
                payload.push_str(&line);
            }
            _ => out.push(line),
        }
    }
    out
}

/// `<origin> run-queued <id>`, `<origin> cancel <id>`, `<origin> run <id> events <seq>`,
/// `<origin> board <workspace id> issue <key>`.
fn encode(origin: &str, note: &Relayed) -> String {
    match note {
        Relayed::RunQueued(run) => format!("{origin} run-queued {run}"),
        Relayed::CancelRun(run) => format!("{origin} cancel {run}"),
        Relayed::StopRun(run, why) => format!("{origin} stop {run} {why}"),
        Relayed::RunnerTokenRevoked(token) => format!("{origin} runner-token-revoked {token}"),
        Relayed::CredentialEnded(hash) => format!("{origin} credential-ended {hash}"),
        Relayed::Live(_, LiveEvent::RunEvents { run_id, last_seq }) => {
            format!("{origin} run {run_id} events {last_seq}")
        }
        Relayed::Live(topic, LiveEvent::IssueChanged(key)) => {
            let ws = match topic {
                Topic::Board(ws) => ws.to_string(),
                Topic::Run(_) => String::new(),
            };
            format!("{origin} board {ws} issue {key}")
        }
    }
}

fn decode(message: &str) -> Option<(&str, Relayed)> {
    let words: Vec<&str> = message.split(' ').collect();
    let run = |raw: &str| raw.parse::<RunId>().ok();
    let note = match words.as_slice() {
        [_, "run-queued", id] => Relayed::RunQueued(run(id)?),
        [_, "cancel", id] => Relayed::CancelRun(run(id)?),
        [_, "stop", id, why] => Relayed::StopRun(run(id)?, why.parse().ok()?),
        [_, "runner-token-revoked", id] => Relayed::RunnerTokenRevoked(id.parse().ok()?),
        [_, "credential-ended", hash]
            if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Relayed::CredentialEnded((*hash).to_owned())
        }
        [_, "run", id, "events", seq] => {
            let run_id = run(id)?;
            let last_seq = seq.parse().ok()?;
            Relayed::Live(
                Topic::Run(run_id),
                LiveEvent::RunEvents { run_id, last_seq },
            )
        }
        [_, "board", ws, "issue", key] => {
            let ws: WorkspaceId = ws.parse().ok()?;
            let key = IssueKey::parse(key).ok()?;
            Relayed::Live(Topic::Board(ws), LiveEvent::IssueChanged(key))
        }
        _ => return None,
    };
    Some((words.first()?, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_carry_only_ids() {
        let run = RunId::new();
        let ws = WorkspaceId::new();
        let key = IssueKey::parse("MUS-42").unwrap();
        let notes = [
            Relayed::RunQueued(run),
            Relayed::CancelRun(run),
            Relayed::RunnerTokenRevoked(crate::domain::RunnerTokenId::new()),
            Relayed::CredentialEnded(crate::auth::hash_secret("mst_revoked")),
            Relayed::Live(
                Topic::Run(run),
                LiveEvent::RunEvents {
                    run_id: run,
                    last_seq: 17,
                },
            ),
            Relayed::Live(Topic::Board(ws), LiveEvent::IssueChanged(key)),
        ];
        for note in notes {
            let text = encode("abc", &note);
            assert!(text.len() < 120, "{text}");
            assert_eq!(decode(&text), Some(("abc", note)), "{text}");
        }
        assert_eq!(decode("abc run-queued not-a-uuid"), None);
        assert_eq!(decode("garbage"), None);
    }

    #[test]
    fn queued_notes_merge_per_run_and_fit_in_payloads() {
        let (a, b) = (RunId::new(), RunId::new());
        let events = |run_id, last_seq| {
            Relayed::Live(
                Topic::Run(run_id),
                LiveEvent::RunEvents { run_id, last_seq },
            )
        };
        let merged = coalesce(vec![
            events(a, 3),
            events(b, 9),
            Relayed::CancelRun(b),
            events(a, 7),
            events(b, 10),
        ]);
        assert_eq!(
            merged,
            vec![events(a, 7), events(b, 10), Relayed::CancelRun(b)],
            "one note per run, its highest seq, at the place of its first"
        );
        let many: Vec<Relayed> = (0..300).map(|n| events(RunId::new(), n)).collect();
        let sent = payloads("abc", &many);
        assert!(sent.len() > 1, "300 notes do not fit one payload");
        assert!(sent.iter().all(|p| p.len() <= PAYLOAD_BYTES));
        let back: Vec<Relayed> = sent
            .iter()
            .flat_map(|p| p.lines().map(|l| decode(l).unwrap().1).collect::<Vec<_>>())
            .collect();
        assert_eq!(back, many, "every note arrives, in order");
    }
}
