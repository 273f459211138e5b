//! `muster run …`: list, show, cancel and retry runs, and print a run's log — all of it, or live with
//! `--follow` over the server's event stream (Server-Sent Events), reconnecting from the last seq
//! received when the connection drops, so no event is printed twice or skipped.

use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use muster_agents::AgentEvent;
use serde::Deserialize;
use serde_json::Value;

use super::events;
use super::output::{self, clean, print_json};
use super::{ApiError, Client, Remote, not_found_as, segment, shape};
use crate::domain::RunEventBody;

/// Events asked for per page by `muster run logs` without `--follow`.
const PAGE: u32 = 1000;
/// Longest text shown for one event in text mode (the rest is elided; `--json` has it all).
const TEXT_CAP: usize = 400;
/// Reconnect attempts in a row without receiving anything before `--follow` gives up.
const MAX_RECONNECTS: u32 = 8;
/// First wait before reconnecting; doubled per failed attempt up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A followed stream that is silent this long is treated as dropped (the server sends a keep-alive
/// comment every 15 s).
const STREAM_READ_TIMEOUT: Duration = Duration::from_secs(45);

/// What to do with runs.
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// List runs, newest first: RUN, ISSUE, AGENT, STATUS, ATTEMPT, COST, CREATED.
    List(ListArgs),
    /// Show one run: status, issue, agent, usage, cost, summary, diff stat.
    Show {
        /// Run id, as `muster run list` shows it, or its first characters (a unique prefix).
        #[arg(value_parser = run_id)]
        run: String,
    },
    /// Print a run's log, one line per event (`--json`: one JSON object per line). With `--follow`,
    /// keep printing until the run ends; exit 0 if it succeeded, 1 otherwise.
    Logs(LogsArgs),
    /// Cancel a queued or live run (its whole process group is stopped).
    Cancel {
        /// Run id, as `muster run list` shows it, or its first characters (a unique prefix).
        #[arg(value_parser = run_id)]
        run: String,
    },
    /// Queue a new attempt of a run that failed, was cancelled, timed out or was interrupted; prints the
    /// new run's id.
    Retry {
        /// Run id, as `muster run list` shows it, or its first characters (a unique prefix).
        #[arg(value_parser = run_id)]
        run: String,
    },
}

/// `muster run list` filters; all optional.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only runs on this issue, e.g. MUS-7.
    #[arg(long)]
    pub issue: Option<String>,
    /// Only these statuses, comma-separated (queued, claimed, running, succeeded, failed, cancelled,
    /// timed_out, interrupted).
    #[arg(long)]
    pub status: Option<String>,
    /// Only runs of this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// How many runs, 1 to 500 [default: 50].
    #[arg(long)]
    pub limit: Option<u32>,
}

/// `muster run logs` flags.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Run id, as `muster run list` shows it, or its first characters (a unique prefix).
    #[arg(value_parser = run_id)]
    pub run: String,
    /// Keep printing new events until the run ends.
    #[arg(long, short)]
    pub follow: bool,
    /// Start after this seq (the number before each line), e.g. to resume.
    #[arg(long, default_value_t = 0)]
    pub after: u64,
}

/// Checks a RUN argument (a whole run id, or the start of one: hex digits, hyphens optional), so a typo
/// is a usage error before anything is sent.
fn run_id(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if let Ok(id) = uuid::Uuid::parse_str(raw) {
        return Ok(id.to_string());
    }
    let digits = raw.chars().filter(|c| *c != '-').count();
    if (1..32).contains(&digits) && raw.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Ok(raw.to_ascii_lowercase());
    }
    Err(format!(
        "{raw:?} is not a run id or the start of one; `muster run list` shows them"
    ))
}

/// Candidates listed when a prefix is ambiguous.
const SHOWN_CANDIDATES: usize = 5;

/// The whole id of the run `raw` names: itself when whole, else the one run whose id starts with it
/// (like git's short commit ids). No match and several matches are errors that say so; several are
/// listed.
async fn resolve(client: &Client, raw: &str) -> anyhow::Result<String> {
    if uuid::Uuid::parse_str(raw).is_ok() {
        return Ok(raw.to_owned());
    }
    let query = serde_urlencoded::to_string([
        ("id_prefix", raw.to_owned()),
        ("limit", (SHOWN_CANDIDATES + 1).to_string()),
    ])?;
    let found = client.get(&format!("/api/v1/runs?{query}")).await?;
    let found: Vec<RunRow> = shape(&found)?;
    match found.as_slice() {
        [] => anyhow::bail!("no run id starts with {raw:?}; `muster run list` shows them"),
        [one] => Ok(one.id.clone()),
        several => {
            let listed: Vec<String> = several
                .iter()
                .take(SHOWN_CANDIDATES)
                .map(|r| {
                    format!(
                        "{} ({}, {}, {})",
                        r.id,
                        clean(&r.issue),
                        clean(&r.agent),
                        r.status
                    )
                })
                .collect();
            let more = if several.len() > SHOWN_CANDIDATES {
                ", and more"
            } else {
                ""
            };
            anyhow::bail!(
                "run id prefix {raw:?} is ambiguous: it starts {}{more}; give more characters",
                listed.join(", ")
            )
        }
    }
}

#[derive(Debug, Deserialize)]
struct RunRow {
    id: String,
    issue: String,
    agent: String,
    status: String,
    stalled: bool,
    attempt: i32,
    failure_reason: Option<String>,
    exit_code: Option<i32>,
    input_tokens: i64,
    output_tokens: i64,
    cost_usd: f64,
    /// The cost as it reads ("unpriced", "$0 · local"); older servers send none.
    #[serde(default)]
    cost: Option<String>,
    summary: Option<String>,
    diff_stat: Option<String>,
    branch: Option<String>,
    /// The commit the run's work became; older servers send none.
    #[serde(default)]
    head_commit: Option<String>,
    /// The runner that took it; older servers send none.
    #[serde(default)]
    runner: Option<String>,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
    /// What started it; older servers send none.
    #[serde(default)]
    trigger: Option<String>,
    #[serde(default)]
    trigger_comment_id: Option<String>,
    #[serde(default)]
    previous_run_id: Option<String>,
    #[serde(default)]
    chain_depth: i32,
}

impl RunRow {
    /// "comment (comment <id>)", "mention (comment <id>, chain depth 2)", "retry", "assignment".
    fn trigger_text(&self) -> Option<String> {
        let trigger = clean(self.trigger.as_deref()?);
        let mut about = Vec::new();
        if let Some(c) = &self.trigger_comment_id {
            about.push(format!("comment {}", clean(c)));
        }
        if self.chain_depth > 0 {
            about.push(format!("chain depth {}", self.chain_depth));
        }
        Some(if about.is_empty() {
            trigger
        } else {
            format!("{trigger} ({})", about.join(", "))
        })
    }

    /// "$0.0421", or "unpriced" when the server knows no price for some of its tokens.
    fn cost_text(&self) -> String {
        self.cost
            .clone()
            .unwrap_or_else(|| format!("${:.4}", self.cost_usd))
    }

    fn status_text(&self) -> String {
        match (&self.failure_reason, self.stalled) {
            (_, true) => format!("{} (stalled)", self.status),
            (Some(reason), false) => format!("{} ({reason})", self.status),
            (None, false) => self.status.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct EventRow {
    seq: i64,
    kind: String,
    payload: Value,
}

#[derive(Debug, Deserialize)]
struct Page {
    events: Vec<Value>,
    next_after: i64,
    done: bool,
}

/// Runs a run command.
pub async fn run(remote: &Remote, command: RunCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    let style = Style {
        json,
        color: remote.color,
    };
    match command {
        RunCommand::List(args) => list(&client, json, &args).await,
        RunCommand::Show { run } => show(&client, json, &resolve(&client, &run).await?).await,
        RunCommand::Logs(mut args) => {
            let after = i64::try_from(args.after).context("--after is too large")?;
            args.run = resolve(&client, &args.run).await?;
            if args.follow {
                follow(&client, style, &args.run, after).await
            } else {
                logs(&client, style, &args.run, after).await
            }
        }
        RunCommand::Cancel { run } => {
            let run = resolve(&client, &run).await?;
            let path = format!("/api/v1/runs/{}/cancel", segment(&run));
            let value = client.post(&path, &serde_json::json!({})).await;
            let value = value.map_err(|e| not_found_as(e, &format!("run {run}")))?;
            if json {
                return print_json(&value);
            }
            let row: RunRow = shape(&value)?;
            if row.status == "cancelled" {
                println!("run {} cancelled", row.id);
            } else {
                println!("cancelling run {} (it is stopping)", row.id);
            }
            Ok(())
        }
        RunCommand::Retry { run } => {
            let run = resolve(&client, &run).await?;
            let path = format!("/api/v1/runs/{}/retry", segment(&run));
            let value = client.post(&path, &serde_json::json!({})).await;
            let value = value.map_err(|e| not_found_as(e, &format!("run {run}")))?;
            if json {
                return print_json(&value);
            }
            let row: RunRow = shape(&value)?;
            println!("{}", row.id);
            Ok(())
        }
    }
}

async fn list(client: &Client, json: bool, args: &ListArgs) -> anyhow::Result<()> {
    let limit = args.limit.map(|l| l.to_string());
    let query: Vec<(&str, &String)> = [
        ("issue", args.issue.as_ref()),
        ("status", args.status.as_ref()),
        ("agent", args.agent.as_ref()),
        ("limit", limit.as_ref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let query = serde_urlencoded::to_string(&query)?;
    let path = if query.is_empty() {
        "/api/v1/runs".to_owned()
    } else {
        format!("/api/v1/runs?{query}")
    };
    let runs = client.get(&path).await?;
    if json {
        return print_json(&runs);
    }
    let runs: Vec<RunRow> = shape(&runs)?;
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.issue.clone(),
                r.agent.clone(),
                r.status_text(),
                r.attempt.to_string(),
                r.cost_text(),
                short_time(&r.created_at),
            ]
        })
        .collect();
    let headers = [
        "RUN", "ISSUE", "AGENT", "STATUS", "ATTEMPT", "COST", "CREATED",
    ];
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

async fn show(client: &Client, json: bool, run: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/runs/{}", segment(run));
    let value = client.get(&path).await;
    let value = value.map_err(|e| not_found_as(e, &format!("run {run}")))?;
    if json {
        return print_json(&value);
    }
    let r: RunRow = shape(&value)?;
    let or_dash = |v: &Option<String>| v.as_deref().map_or_else(|| "-".to_owned(), clean);
    println!("run {}", r.id);
    println!("issue:    {}", clean(&r.issue));
    println!("agent:    {}", clean(&r.agent));
    println!("status:   {}", r.status_text());
    println!("attempt:  {}", r.attempt);
    if let Some(trigger) = r.trigger_text() {
        println!("trigger:  {trigger}");
    }
    if let Some(prev) = &r.previous_run_id {
        println!("follows:  run {}", clean(prev));
    }
    if let Some(code) = r.exit_code {
        println!("exit:     {code}");
    }
    println!(
        "usage:    {} in, {} out, {}",
        r.input_tokens,
        r.output_tokens,
        r.cost_text()
    );
    println!("branch:   {}", or_dash(&r.branch));
    println!("commit:   {}", or_dash(&r.head_commit));
    println!("runner:   {}", or_dash(&r.runner));
    println!("created:  {}", short_time(&r.created_at));
    println!(
        "started:  {}",
        r.started_at.as_deref().map_or("-".to_owned(), short_time)
    );
    println!(
        "finished: {}",
        r.finished_at.as_deref().map_or("-".to_owned(), short_time)
    );
    println!("diff:     {}", or_dash(&r.diff_stat));
    if let Some(check) = last_check(client, run).await? {
        println!("check:    {}", clean(&check_line(&check)));
    }
    if let Some(summary) = r.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        println!("\n{}", output::indent(summary, "    "));
    }
    Ok(())
}

/// The payload of the run's last `check` event (an ensemble candidate's), read page by page.
async fn last_check(client: &Client, run: &str) -> anyhow::Result<Option<Value>> {
    let mut after = 0;
    let mut found = None;
    loop {
        let path = format!(
            "/api/v1/runs/{}/events?after={after}&limit={PAGE}",
            segment(run)
        );
        let value = client.get(&path).await;
        let value = value.map_err(|e| not_found_as(e, &format!("run {run}")))?;
        let page: Page = shape(&value)?;
        for event in &page.events {
            let row: EventRow = shape(event)?;
            if row.kind == crate::domain::CHECK_EVENT {
                found = Some(row.payload);
            }
        }
        if page.events.len() < PAGE as usize || page.next_after <= after {
            return Ok(found);
        }
        after = page.next_after;
    }
}

/// Prints every stored event after `after`, page by page.
async fn logs(client: &Client, style: Style, run: &str, mut after: i64) -> anyhow::Result<()> {
    loop {
        let path = format!(
            "/api/v1/runs/{}/events?after={after}&limit={PAGE}",
            segment(run)
        );
        let value = client.get(&path).await;
        let value = value.map_err(|e| not_found_as(e, &format!("run {run}")))?;
        let page: Page = shape(&value)?;
        for event in &page.events {
            print_event(event, style)?;
        }
        if page.done || page.events.len() < PAGE as usize || page.next_after <= after {
            return Ok(());
        }
        after = page.next_after;
    }
}

/// How `run logs` prints events: JSON lines, or text (coloured or not).
#[derive(Debug, Clone, Copy)]
struct Style {
    json: bool,
    color: bool,
}

/// Prints one event: its JSON on one line, or readable text (a diff as a unified diff).
fn print_event(event: &Value, style: Style) -> anyhow::Result<()> {
    if style.json {
        println!("{}", serde_json::to_string(event)?);
        return Ok(());
    }
    let row: EventRow = shape(event)?;
    match RunEventBody::decode(&row.kind, &row.payload) {
        RunEventBody::Diff(diff) => println!("{}", events::diff_block(row.seq, &diff, style.color)),
        _ => println!("{}", event_line(row.seq, &row.kind, &row.payload)),
    }
    Ok(())
}

/// `#12 text: Looking at the tests` — the seq, the kind and what the event says, on one line.
fn event_line(seq: i64, kind: &str, p: &Value) -> String {
    let content = match RunEventBody::decode(kind, p) {
        RunEventBody::Sandbox(note) => {
            // One block: the mode, then one indented line per rule and the ports.
            let lines: Vec<String> = crate::sandbox::event_lines(&note)
                .iter()
                .map(|l| clean(l))
                .collect();
            return format!("#{seq} sandbox: {}", lines.join("\n    "));
        }
        RunEventBody::Agent(event) => agent_text(event, p),
        RunEventBody::Check(c) => c.one_line(),
        RunEventBody::Egress(note) => note.line,
        RunEventBody::Session(note) => note.text(),
        RunEventBody::Stderr { line } => line,
        RunEventBody::Status { status, .. } => status,
        RunEventBody::Error { message } => message,
        RunEventBody::Diff(_) | RunEventBody::Push { .. } | RunEventBody::Unknown { .. } => {
            compact(p)
        }
    };
    let mut line = format!("#{seq} {kind}: {}", clean(content.trim()));
    if line.chars().count() > TEXT_CAP {
        line = line.chars().take(TEXT_CAP).collect::<String>() + "…";
    }
    line
}

/// What an agent event says, in one line's words (`p`, its payload, for the ones shown as stored).
fn agent_text(event: AgentEvent, p: &Value) -> String {
    match event {
        AgentEvent::Text { text } | AgentEvent::Thinking { text } | AgentEvent::Notice { text } => {
            text
        }
        AgentEvent::Started {
            session_id, model, ..
        } => match model {
            Some(model) => format!("session {session_id} ({model})"),
            None => format!("session {session_id}"),
        },
        AgentEvent::ToolCall { name, input, .. } => format!("{name} {}", tool_input(&input)),
        AgentEvent::ToolResult {
            output, is_error, ..
        } => {
            if is_error {
                format!("[error] {output}")
            } else {
                output
            }
        }
        AgentEvent::Command {
            cmd,
            exit_code,
            output,
        } => match exit_code {
            Some(code) => format!("$ {cmd} (exit {code}) {output}"),
            None => format!("$ {cmd} {output}"),
        },
        AgentEvent::FileChange { path, change } => format!("{} {path}", tag(&change)),
        AgentEvent::Usage(u) => format!(
            "{} in, {} out{}",
            u.input,
            u.output,
            u.cost_usd
                .map_or_else(String::new, |c| format!(", ${c:.4}"))
        ),
        // Shown as stored, as any event this list does not name.
        AgentEvent::TurnUsage(_) => compact(p),
        AgentEvent::Error { message, class } => match class {
            Some(class) => format!("[{}] {message}", tag(&class)),
            None => message,
        },
        AgentEvent::Speed {
            tokens_per_second,
            detail,
        } => {
            if detail.trim().is_empty() {
                format!("{tokens_per_second:.1} tokens/s")
            } else {
                detail
            }
        }
        AgentEvent::Finished { ok, summary } => {
            let ok = if ok { "ok" } else { "failed" };
            match summary {
                Some(summary) => format!("{ok}: {summary}"),
                None => ok.to_owned(),
            }
        }
        AgentEvent::Refused { tool, input } => format!("permission refused: {tool} {input}"),
        AgentEvent::Raw { line } => line,
    }
}

/// A check event in one line (`passed · 12/12 passed · exit 0 · 4.2 s · cargo test`), or its JSON
/// when it is not a check result.
fn check_line(p: &Value) -> String {
    match RunEventBody::decode(crate::domain::CHECK_EVENT, p) {
        RunEventBody::Check(c) => c.one_line(),
        _ => compact(p),
    }
}

/// A tool's input: the one argument that says what it does (a command, a path, a pattern) when there is
/// one, else the input's JSON.
fn tool_input(input: &Value) -> String {
    const MAIN: [&str; 7] = [
        "command",
        "cmd",
        "file_path",
        "path",
        "pattern",
        "url",
        "query",
    ];
    match MAIN.iter().find_map(|k| input[*k].as_str()) {
        Some(main) => main.to_owned(),
        None => compact(input),
    }
}

/// A serde enum's tag (`auth`, `update`).
fn tag(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).map_or_else(|_| String::new(), |v| compact(&v))
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `2025-01-02T03:04:05.678Z` → `2025-01-02 03:04:05`.
fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..19).unwrap_or(rfc3339).replacen('T', " ", 1)
}

/// Follows the run's event stream until its `end` event, reconnecting after `after` = the last seq
/// printed whenever the connection drops. Ok when the run succeeded.
async fn follow(client: &Client, style: Style, run: &str, mut after: i64) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(STREAM_READ_TIMEOUT)
        .user_agent(concat!("muster-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("cannot set up the HTTP client")?;
    let mut failures = 0_u32;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let url = format!(
            "{}/api/v1/runs/{}/events/stream?after={after}",
            client.base,
            segment(run)
        );
        let sent = http
            .get(&url)
            .bearer_auth(client.token.expose())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await;
        let why = match sent {
            Ok(response) if response.status().is_success() => {
                match read_stream(response, style, &mut after).await? {
                    StreamEnd::Ended(status, reason) => return ended(run, &status, reason),
                    StreamEnd::Dropped { progressed, why } => {
                        if progressed {
                            failures = 0;
                            backoff = FIRST_BACKOFF;
                        }
                        why
                    }
                }
            }
            Ok(response) => {
                let status = response.status();
                let body = response.bytes().await.unwrap_or_default();
                let e = ApiError::from_body(status, &body);
                return Err(not_found_as(e.into(), &format!("run {run}")));
            }
            Err(e) => format!("cannot reach {}: {}", client.base, super::chain(&e)),
        };
        failures += 1;
        if failures > MAX_RECONNECTS {
            anyhow::bail!(
                "lost the event stream of run {run} after {MAX_RECONNECTS} reconnects ({}); resume with `muster run logs {run} --follow --after {after}`",
                why
            );
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn ended(run: &str, status: &str, reason: Option<String>) -> anyhow::Result<()> {
    if status == "succeeded" {
        return Ok(());
    }
    match reason {
        Some(reason) => anyhow::bail!("run {run} ended {status} ({reason})"),
        None => anyhow::bail!("run {run} ended {status}"),
    }
}

/// How one connection of the stream ended.
enum StreamEnd {
    /// The `end` event: the run's status and failure reason.
    Ended(String, Option<String>),
    /// The connection dropped (or the server asked us to reconnect); `progressed` when events came.
    Dropped { progressed: bool, why: String },
}

async fn read_stream(
    mut response: reqwest::Response,
    style: Style,
    after: &mut i64,
) -> anyhow::Result<StreamEnd> {
    let mut parser = SseParser::default();
    let mut progressed = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                let why = "the server closed the stream".to_owned();
                return Ok(StreamEnd::Dropped { progressed, why });
            }
            Err(e) => {
                let why = format!("the stream broke: {}", super::chain(&e));
                return Ok(StreamEnd::Dropped { progressed, why });
            }
        };
        for frame in parser.push(&chunk) {
            match frame.event.as_str() {
                "end" => {
                    let run: Value = serde_json::from_str(&frame.data)
                        .context("the server's end event is not JSON")?;
                    let status = run["status"].as_str().unwrap_or("unknown").to_owned();
                    let reason = run["failure_reason"].as_str().map(str::to_owned);
                    return Ok(StreamEnd::Ended(status, reason));
                }
                "stream_error" => {
                    let why = format!("the server ended the stream: {}", clean(&frame.data));
                    return Ok(StreamEnd::Dropped { progressed, why });
                }
                _ => {
                    let event: Value = serde_json::from_str(&frame.data)
                        .context("the server sent an event that is not JSON")?;
                    let seq = event["seq"].as_i64().unwrap_or(0);
                    if seq > *after {
                        print_event(&event, style)?;
                        *after = seq;
                        progressed = true;
                    }
                }
            }
        }
    }
}

/// One Server-Sent Event: its type (`message` when unnamed) and data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` field, or `message`.
    pub event: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
    /// The `data:` lines, joined with newlines.
    pub data: String,
}

/// An incremental parser of a `text/event-stream` body: feed it chunks as they come (cut anywhere),
/// get back the complete events; comments (keep-alives) are skipped.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
}

impl SseParser {
    /// Adds bytes; returns every event completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseFrame> {
        self.pending.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some((end, sep)) = frame_end(&self.pending) {
            let block = String::from_utf8_lossy(&self.pending[..end]).into_owned();
            self.pending.drain(..end + sep);
            if let Some(frame) = parse_block(&block) {
                frames.push(frame);
            }
        }
        frames
    }
}

/// Where the first blank line (`\n\n` or `\r\n\r\n`) ends a block: (block length, separator length).
fn frame_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse_block(block: &str) -> Option<SseFrame> {
    let mut frame = SseFrame {
        event: "message".to_owned(),
        id: None,
        data: String::new(),
    };
    let mut has_data = false;
    for line in block.lines() {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => value.clone_into(&mut frame.event),
            "id" => frame.id = Some(value.to_owned()),
            "data" => {
                if has_data {
                    frame.data.push('\n');
                }
                frame.data.push_str(value);
                has_data = true;
            }
            _ => {}
        }
    }
    has_data.then_some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_survive_any_cut() {
        let body =
            b": keep-alive\n\nid: 1\ndata: {\"seq\":1}\n\nevent: end\ndata: {\"a\":\ndata: 2}\n\n";
        for cut in 0..body.len() {
            let mut p = SseParser::default();
            let mut frames = p.push(&body[..cut]);
            frames.extend(p.push(&body[cut..]));
            assert_eq!(frames.len(), 2, "cut at {cut}");
            assert_eq!(frames[0].id.as_deref(), Some("1"));
            assert_eq!(frames[0].event, "message");
            assert_eq!(frames[1].event, "end");
            assert_eq!(frames[1].data, "{\"a\":\n2}");
        }
    }

    #[test]
    fn a_check_reads_as_one_line() {
        let p = serde_json::json!({
            "command": "cargo test", "exit_code": 0, "timed_out": false, "duration_ms": 4240,
            "passed": 12, "failed": 0, "total": 12, "tail": "ok\nok", "error": null
        });
        assert_eq!(
            event_line(9, "check", &p),
            "#9 check: passed · 12/12 passed · exit 0 · 4.2 s · cargo test"
        );
        assert_eq!(
            event_line(9, "check", &serde_json::json!({"x": 1})),
            "#9 check: {\"x\":1}"
        );
    }

    #[test]
    fn events_read_as_one_clean_line() {
        let line = event_line(
            3,
            "text",
            &serde_json::json!({"text": "two\nlines\x1b[31m"}),
        );
        assert_eq!(line, "#3 text: two lines [31m");
        let line = event_line(
            4,
            "command",
            &serde_json::json!({"cmd": "cargo test", "exit_code": 101, "output": "failed"}),
        );
        assert_eq!(line, "#4 command: $ cargo test (exit 101) failed");
        let line = event_line(
            5,
            "tool_call",
            &serde_json::json!({"id": "t1", "name": "Bash", "input": {"command": "ls"}}),
        );
        assert_eq!(line, "#5 tool_call: Bash ls");
        let line = event_line(
            5,
            "tool_call",
            &serde_json::json!({"id": "t2", "name": "Todo", "input": {"items": [1]}}),
        );
        assert_eq!(line, "#5 tool_call: Todo {\"items\":[1]}");
        let line = event_line(
            8,
            "error",
            &serde_json::json!({"message": "401", "class": "auth"}),
        );
        assert_eq!(line, "#8 error: [auth] 401");
        let long = "x".repeat(1000);
        assert_eq!(
            event_line(6, "raw", &serde_json::json!({ "line": long }))
                .chars()
                .count(),
            TEXT_CAP + 1
        );
        assert!(run_id("nope").is_err());
        assert_eq!(run_id(" 0A1B-2 ").unwrap(), "0a1b-2");
        assert!(run_id("").is_err());
    }
}
