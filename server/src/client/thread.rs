//! `muster issue thread KEY`: an issue's conversation as one timeline, read from
//! `GET /api/v1/issues/{key}/thread` — comments, each agent run in one line with its summary, status
//! changes and the other changes — for a person; `--json` prints the API's body as it is.

use serde::Deserialize;
use serde_json::Value;

use super::issue::{activity_text, short_time};
use super::output::{Person, clean, indent, print_json};
use super::{Client, not_found_as, segment, shape};

#[derive(Debug, Deserialize)]
struct Thread {
    issue: String,
    entries: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    Comment {
        at: String,
        comment: Comment,
    },
    Run {
        at: String,
        run: Run,
        live: bool,
        triggered_by: Option<Person>,
        duration_secs: Option<i64>,
        waiting: Option<String>,
    },
    Status {
        at: String,
        actor: Person,
        from: String,
        to: String,
    },
    Change {
        at: String,
        actor: Person,
        what: String,
        detail: Value,
        /// Whom an assignee change gave the issue to.
        #[serde(default)]
        assignee: Option<Person>,
    },
}

#[derive(Debug, Deserialize)]
struct Comment {
    author: Person,
    body: String,
    edited_at: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Run {
    id: String,
    agent: String,
    status: String,
    trigger: String,
    cost: String,
    summary: Option<String>,
    failure_message: Option<String>,
}

/// Prints the timeline of issue `key`.
pub async fn show(client: &Client, json: bool, key: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/issues/{}/thread", segment(key));
    let thread = client.get(&path).await;
    let thread = thread.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    if json {
        return print_json(&thread);
    }
    let thread: Thread = shape(&thread)?;
    println!("{} thread ({} entries)", thread.issue, thread.entries.len());
    for entry in &thread.entries {
        println!("{}", line(entry));
    }
    Ok(())
}

/// One entry as it reads: `time  who what`, a comment's text indented below.
fn line(entry: &Entry) -> String {
    match entry {
        Entry::Comment { at, comment } => {
            let edited = if comment.edited_at.is_some() {
                " (edited)"
            } else {
                ""
            };
            format!(
                "{}  {} commented{edited}:\n{}",
                short_time(at),
                clean(&comment.author.name),
                indent(&comment.body, "    ")
            )
        }
        Entry::Run { at, .. } => format!("{}  {}", short_time(at), run_text(entry)),
        Entry::Status {
            at,
            actor,
            from,
            to,
        } => format!(
            "{}  {} moved from {} to {}",
            short_time(at),
            clean(&actor.name),
            clean(&from.replace('_', " ")),
            clean(&to.replace('_', " "))
        ),
        Entry::Change {
            at,
            actor,
            what,
            detail,
            assignee,
        } => {
            let text = match (what.as_str(), assignee) {
                ("assignee", Some(to)) => format!("assigned it to {}", to.name),
                _ => activity_text(what, detail),
            };
            format!(
                "{}  {} {}",
                short_time(at),
                clean(&actor.name),
                clean(&text)
            )
        }
    }
}

/// "coder ran (comment by Ada) — succeeded in 42 s, $0.0123: <summary's first line>  run <id>"; a live
/// run says it is working (or why it waits).
fn run_text(entry: &Entry) -> String {
    let Entry::Run {
        run,
        live,
        triggered_by,
        duration_secs,
        waiting,
        ..
    } = entry
    else {
        return String::new();
    };
    let trigger = match triggered_by {
        Some(p) => format!("{} by {}", run.trigger, p.name),
        None => run.trigger.clone(),
    };
    let secs = duration_secs.map(|s| format!(" {s} s")).unwrap_or_default();
    let outcome = if *live {
        match (run.status.as_str(), waiting) {
            ("queued", Some(why)) => format!("queued — {why}"),
            ("queued" | "claimed", None) => "queued — waiting to start".to_owned(),
            _ => format!("working…{secs}"),
        }
    } else {
        let mut text = format!(
            "{}{}, {}",
            run.status.replace('_', " "),
            in_secs(*duration_secs),
            run.cost
        );
        let said = run.summary.as_deref().or(run.failure_message.as_deref());
        if let Some(first) = said.and_then(|s| s.lines().map(str::trim).find(|l| !l.is_empty())) {
            text.push_str(": ");
            text.push_str(first);
        }
        text
    };
    clean(&format!(
        "{} ran ({trigger}) — {outcome}  run {}",
        run.agent, run.id
    ))
}

fn in_secs(duration: Option<i64>) -> String {
    duration.map(|s| format!(" in {s} s")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(value: Value) -> Entry {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn runs_read_as_one_line() {
        let run = |status: &str, live: bool, summary: Value, waiting: Value| {
            entry(serde_json::json!({
                "kind": "run", "at": "2025-01-02T03:04:05Z", "live": live, "duration_secs": 42,
                "triggered_by": {"name": "Ada"}, "waiting": waiting,
                "run": {"id": "r1", "agent": "coder", "status": status, "trigger": "comment",
                        "cost": "$0.0123", "summary": summary, "failure_message": null}
            }))
        };
        let done = run("succeeded", false, "Fixed it.\nMore.".into(), Value::Null);
        assert_eq!(
            line(&done),
            "2025-01-02 03:04  coder ran (comment by Ada) — succeeded in 42 s, $0.0123: Fixed it.  run r1"
        );
        let working = run("running", true, Value::Null, Value::Null);
        assert!(run_text(&working).contains("— working… 42 s  run r1"));
        let queued = run(
            "queued",
            true,
            Value::Null,
            "waiting for a runner: none is online".into(),
        );
        assert!(run_text(&queued).contains("— queued — waiting for a runner: none is online"));
    }

    #[test]
    fn status_changes_and_comments_read_for_people() {
        let moved = entry(
            serde_json::json!({"kind": "status", "at": "2025-01-02T03:04:05Z",
            "actor": {"name": "Ada"}, "from": "todo", "to": "in_progress"}),
        );
        assert_eq!(
            line(&moved),
            "2025-01-02 03:04  Ada moved from todo to in progress"
        );
        let said = entry(
            serde_json::json!({"kind": "comment", "at": "2025-01-02T03:04:05Z",
            "comment": {"author": {"name": "Ada"}, "body": "one\ntwo", "edited_at": null}}),
        );
        assert_eq!(
            line(&said),
            "2025-01-02 03:04  Ada commented:\n    one\n    two"
        );
    }
}
