//! `muster issue …`: create, list, search, show, comment, move, assign, edit and delete issues through the API.

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::output::{self, Person, clean, indent, print_json};
use super::pages;
use super::{Client, Remote, not_found_as, segment, shape, text_arg};

/// What to do with issues.
#[derive(Debug, Subcommand)]
pub enum IssueCommand {
    /// Create an issue and print its key (e.g. MUS-7) alone on stdout.
    Create(CreateArgs),
    /// List issues as a table (KEY, STATUS, PRIORITY, ASSIGNEE, TITLE), by column then position (or as
    /// --sort, --dir and --group say): the first 50 (see --limit and --all).
    List(ListArgs),
    /// Search the workspace's issues (keys, titles, bodies, comments), best first: KEY, STATUS, TITLE and
    /// where it matched. Search before you create an issue.
    Search(super::search::SearchArgs),
    /// Show an issue: fields, body, all its comments and activity.
    Show {
        /// Issue key, e.g. MUS-7.
        key: String,
    },
    /// Show an issue's conversation as one timeline, oldest first: comments, each agent run in one line
    /// (trigger, outcome, duration, cost, its summary's first line, its id), status and other changes.
    Thread {
        /// Issue key, e.g. MUS-7.
        key: String,
    },
    /// Comment on an issue.
    Comment {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// Markdown text, or - to read it from standard input.
        text: String,
    },
    /// Change the text of one of your comments (its id is in `issue comment --json` or `issue show --json`).
    CommentEdit {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// The comment's id.
        id: String,
        /// Markdown text, or - to read it from standard input.
        text: String,
    },
    /// Delete a comment: your own, or any as an owner or admin.
    CommentDelete {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// The comment's id.
        id: String,
    },
    /// Delete an issue with its comments, activity and runs (owners, admins and its creator); its live
    /// runs are cancelled first.
    Delete {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// Confirm: the issue, its comments and its runs' logs cannot be brought back.
        #[arg(long)]
        yes: bool,
    },
    /// Move an issue to another status (to the end of that column).
    Status {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// backlog, todo, in_progress, in_review, done, blocked or cancelled.
        status: String,
    },
    /// Assign an issue to an agent or a member (`none` unassigns), or with --ensemble to an ensemble:
    /// each member takes it blind, on its own branch.
    Assign {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// An agent name, a member's email or display name, or `none`.
        #[arg(required_unless_present = "ensemble", conflicts_with = "ensemble")]
        name: Option<String>,
        /// An ensemble's name.
        #[arg(long)]
        ensemble: Option<String>,
    },
    /// Compare the candidates of the issue's latest ensemble run: state, check, diff, tokens, cost,
    /// review, and the recommendation.
    Compare {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// Which ensemble run (its number); the latest when absent.
        #[arg(long)]
        number: Option<i32>,
    },
    /// Choose a candidate of the issue's latest ensemble run (by agent name, run id or review label);
    /// the other candidates' branches are removed.
    Choose {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// The candidate: its agent's name, its run id (or a prefix) or its review label.
        candidate: String,
        /// Also merge its branch into the branch the candidates started from (local repository).
        #[arg(long)]
        merge: bool,
    },
    /// Change an issue's fields; only the flags given change.
    Edit(EditArgs),
    /// Ask an agent to plan an issue: it reads the code, changes nothing, and proposes a tree of
    /// sub-issues (titles, acceptance checks, agents, dependencies) for you to review.
    Plan {
        /// Issue key, e.g. MUS-7.
        key: String,
        /// The agent that plans.
        #[arg(long)]
        agent: String,
    },
    /// Show the issue's latest plan proposal as a tree: each item's ref, title, agent and what it waits on.
    Proposal {
        /// Issue key, e.g. MUS-7.
        key: String,
    },
    /// Approve the issue's pending plan: its sub-issues and dependencies are created at once and (unless
    /// --no-assign) assigned, so each agent starts once its blockers are done.
    Approve(super::plan::ApproveArgs),
    /// Discard the issue's pending plan proposal; nothing is created.
    Discard {
        /// Issue key, e.g. MUS-7.
        key: String,
    },
}

/// `muster issue create` flags.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Title, 1 to 500 characters.
    #[arg(long)]
    pub title: String,
    /// Markdown body, or - to read it from standard input.
    #[arg(long)]
    pub body: Option<String>,
    /// An agent name or a member's email or display name.
    #[arg(long)]
    pub assignee: Option<String>,
    /// backlog, todo (the default: an assigned agent starts at once), in_progress, in_review, done,
    /// blocked or cancelled.
    #[arg(long)]
    pub status: Option<String>,
    /// none (default), urgent, high, medium or low.
    #[arg(long)]
    pub priority: Option<String>,
    /// A label; repeat for several.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Make it a sub-issue of this issue (its key).
    #[arg(long, value_name = "KEY")]
    pub parent: Option<String>,
    /// Wake the assigned agent once, with a digest, when every sub-issue is done or cancelled.
    #[arg(long)]
    pub wake_on_children: bool,
    /// Put it in this project (its key): its runs work in the project's repository. A sub-issue is
    /// put in its parent's project unless this says otherwise.
    #[arg(long, value_name = "KEY")]
    pub project: Option<String>,
}

/// `muster issue list` filters; all optional.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only these statuses, comma-separated (e.g. todo,in_progress).
    #[arg(long)]
    pub status: Option<String>,
    /// Only issues assigned to this agent or member.
    #[arg(long)]
    pub assignee: Option<String>,
    /// Only issues with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only this priority.
    #[arg(long)]
    pub priority: Option<String>,
    /// Only issues whose key starts with this (`ACM-1`), or with this text in the title or body.
    #[arg(long)]
    pub search: Option<String>,
    /// Only issues of this project (its key).
    #[arg(long, value_name = "KEY")]
    pub project: Option<String>,
    /// Sort by updated, created, priority, status, title or key (as the list view; default: board order).
    #[arg(long)]
    pub sort: Option<String>,
    /// Sort direction: asc or desc (default: newest first for times, else ascending).
    #[arg(long)]
    pub dir: Option<String>,
    /// Group by status, assignee, priority or parent first (rows come group by group).
    #[arg(long)]
    pub group: Option<String>,
    /// Show at most this many issues; a note on stderr says when more match.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Show every matching issue, however many (read a page of 200 at a time).
    #[arg(long, conflicts_with = "limit")]
    pub all: bool,
}

/// `muster issue edit` flags.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// Issue key, e.g. MUS-7.
    pub key: String,
    /// New title.
    #[arg(long)]
    pub title: Option<String>,
    /// New Markdown body, or - to read it from standard input.
    #[arg(long)]
    pub body: Option<String>,
    /// New priority: none, urgent, high, medium or low.
    #[arg(long)]
    pub priority: Option<String>,
    /// New status (moves the issue to the end of that column).
    #[arg(long)]
    pub status: Option<String>,
    /// New assignee (agent or member), or `none`.
    #[arg(long)]
    pub assignee: Option<String>,
    /// Replaces the labels; repeat for several.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Removes every label.
    #[arg(long, conflicts_with = "labels")]
    pub clear_labels: bool,
    /// Make it a sub-issue of this issue, or `none` to make it a top-level issue.
    #[arg(long, value_name = "KEY")]
    pub parent: Option<String>,
    /// Wake the assigned agent once, with a digest, when every sub-issue has ended (true or false).
    #[arg(long, value_name = "BOOL")]
    pub wake_on_children: Option<bool>,
    /// Move it to this project (its key), or `none` to take it out of its project.
    #[arg(long, value_name = "KEY")]
    pub project: Option<String>,
    /// Add a blocker: the issue's agent does not start until KEY is done; repeat for several.
    #[arg(long = "blocked-by", value_name = "KEY")]
    pub blocked_by: Vec<String>,
    /// Add an issue this one blocks; repeat for several.
    #[arg(long = "blocks", value_name = "KEY")]
    pub blocks: Vec<String>,
    /// Relate it to another issue; repeat for several.
    #[arg(long = "relates-to", value_name = "KEY")]
    pub relates_to: Vec<String>,
    /// Mark it a duplicate of another issue.
    #[arg(long = "duplicate-of", value_name = "KEY")]
    pub duplicate_of: Vec<String>,
    /// For --blocked-by and --blocks: hold until the blocker is done (`done`, the default) or done with
    /// a merged pull request (`merged`).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// For --blocked-by and --blocks: the blocked issue's first run starts from the blocker's work.
    #[arg(long)]
    pub stacked: bool,
    /// Remove a relation, as `KIND:KEY` (e.g. blocked_by:ACM-2, relates_to:ACM-5); repeat for several.
    #[arg(long = "unrelate", value_name = "KIND:KEY")]
    pub unrelate: Vec<String>,
}

/// The JSON body of a create or an edit (`IssueInput` on the server).
#[derive(Debug, Default, Serialize)]
struct IssueBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assignee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wake_on_children: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<String>,
}

/// A relation to add (`RelationInput` on the server).
#[derive(Debug, Serialize)]
struct RelationBody<'a> {
    kind: &'a str,
    issue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<&'a str>,
    stacked: bool,
}

#[derive(Debug, Deserialize)]
struct IssueRef {
    key: String,
    title: String,
    status: String,
}

#[derive(Debug, Deserialize)]
struct Relation {
    relation: String,
    issue: IssueRef,
    until: String,
    met: bool,
}

#[derive(Debug, Deserialize)]
struct Progress {
    total: i64,
    done: i64,
    cancelled: i64,
}

#[derive(Debug, Deserialize)]
struct Child {
    #[serde(flatten)]
    issue: IssueRef,
    assignee: Option<Person>,
}

#[derive(Debug, Deserialize)]
struct PlanOut {
    parent: Option<IssueRef>,
    children: Vec<Child>,
    progress: Progress,
    relations: Vec<Relation>,
    waiting_on: Vec<String>,
    wake_on_children: bool,
}

#[derive(Debug, Deserialize)]
struct Issue {
    key: String,
    title: String,
    body: String,
    status: String,
    priority: String,
    assignee: Option<Person>,
    labels: Vec<String>,
    #[serde(default)]
    project: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Comment {
    author: Person,
    body: String,
    created_at: String,
}

#[derive(Debug, Deserialize)]
struct Activity {
    actor: Person,
    kind: String,
    detail: Value,
    at: String,
}

#[derive(Debug, Deserialize)]
struct Detail {
    #[serde(flatten)]
    issue: Issue,
    comments: Vec<Comment>,
    activity: Vec<Activity>,
    plan: PlanOut,
}

/// Runs an issue command.
pub async fn run(remote: &Remote, command: IssueCommand) -> anyhow::Result<()> {
    let client = remote.connect()?;
    let json = remote.json;
    match command {
        IssueCommand::Create(args) => create(&client, json, args).await,
        IssueCommand::List(args) => list(&client, json, &args).await,
        IssueCommand::Search(args) => super::search::run(&client, json, &args).await,
        IssueCommand::Show { key } => show(&client, json, &key).await,
        IssueCommand::Thread { key } => super::thread::show(&client, json, &key).await,
        IssueCommand::Comment { key, text } => {
            let body = serde_json::json!({ "body": text_arg(text)? });
            let path = format!("/api/v1/issues/{}/comments", segment(&key));
            let comment = client.post(&path, &body).await;
            let comment = comment.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
            done(json, &comment, || format!("commented on {}", clean(&key)))
        }
        IssueCommand::CommentEdit { key, id, text } => {
            let body = serde_json::json!({ "body": text_arg(text)? });
            let path = comment_path(&key, &id);
            let comment = client.patch(&path, &body).await;
            let comment =
                comment.map_err(|e| not_found_as(e, &format!("comment {id} on {key}")))?;
            done(json, &comment, || {
                format!("edited comment {} on {}", clean(&id), clean(&key))
            })
        }
        IssueCommand::CommentDelete { key, id } => {
            let deleted = client.delete(&comment_path(&key, &id)).await;
            deleted.map_err(|e| not_found_as(e, &format!("comment {id} on {key}")))?;
            done(json, &serde_json::json!({ "deleted": id }), || {
                format!("deleted comment {} on {}", clean(&id), clean(&key))
            })
        }
        IssueCommand::Delete { key, yes } => {
            anyhow::ensure!(
                yes,
                "deleting {} also deletes its comments, activity and runs; add --yes to confirm",
                clean(&key)
            );
            let path = format!("/api/v1/issues/{}", segment(&key));
            let deleted = client.delete(&path).await;
            deleted.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
            done(json, &serde_json::json!({ "deleted": key }), || {
                format!("deleted {}", clean(&key))
            })
        }
        IssueCommand::Status { key, status } => {
            let path = format!("/api/v1/issues/{}/move", segment(&key));
            let body = serde_json::json!({ "status": status });
            let issue = client.post(&path, &body).await;
            let issue = issue.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
            let moved: Issue = shape(&issue)?;
            done(json, &issue, || {
                format!("{} is now {}", moved.key, moved.status)
            })
        }
        IssueCommand::Assign {
            key,
            ensemble: Some(ensemble),
            ..
        } => super::ensemble::assign(&client, json, &key, &ensemble).await,
        IssueCommand::Compare { key, number } => {
            super::ensemble::compare(&client, json, &key, number).await
        }
        IssueCommand::Choose {
            key,
            candidate,
            merge,
        } => super::ensemble::choose(&client, json, &key, &candidate, merge).await,
        IssueCommand::Assign { key, name, .. } => {
            let name = name.unwrap_or_default();
            let assignee = if name.trim() == "none" {
                String::new()
            } else {
                name
            };
            let input = IssueBody {
                assignee: Some(assignee),
                ..IssueBody::default()
            };
            let issue = patch(&client, &key, &input).await?;
            let changed: Issue = shape(&issue)?;
            done(json, &issue, || match &changed.assignee {
                Some(p) => format!("{} is assigned to {}", changed.key, clean(&p.name)),
                None => format!("{} is unassigned", changed.key),
            })
        }
        IssueCommand::Edit(args) => edit(&client, json, args).await,
        IssueCommand::Plan { key, agent } => {
            super::plan::request(&client, json, &key, &agent).await
        }
        IssueCommand::Proposal { key } => super::plan::show(&client, json, &key).await,
        IssueCommand::Approve(args) => super::plan::approve(&client, json, &args).await,
        IssueCommand::Discard { key } => super::plan::discard(&client, json, &key).await,
    }
}

fn comment_path(key: &str, id: &str) -> String {
    format!("/api/v1/issues/{}/comments/{}", segment(key), segment(id))
}

/// Prints `value` for `--json`, else the line `text` makes.
fn done(json: bool, value: &Value, text: impl FnOnce() -> String) -> anyhow::Result<()> {
    if json {
        print_json(value)
    } else {
        println!("{}", text());
        Ok(())
    }
}

async fn patch(client: &Client, key: &str, input: &IssueBody) -> anyhow::Result<Value> {
    let path = format!("/api/v1/issues/{}", segment(key));
    let issue = client.patch(&path, input).await;
    issue.map_err(|e| not_found_as(e, &format!("issue {key}")))
}

async fn create(client: &Client, json: bool, args: CreateArgs) -> anyhow::Result<()> {
    let input = IssueBody {
        title: Some(args.title),
        body: args.body.map(text_arg).transpose()?,
        status: args.status,
        priority: args.priority,
        assignee: args.assignee,
        labels: (!args.labels.is_empty()).then_some(args.labels),
        parent: args.parent,
        wake_on_children: args.wake_on_children.then_some(true),
        project: args.project,
    };
    let issue = client.post("/api/v1/issues", &input).await?;
    let created: Issue = shape(&issue)?;
    done(json, &issue, || created.key.clone())
}

async fn list(client: &Client, json: bool, args: &ListArgs) -> anyhow::Result<()> {
    let query: Vec<(&str, &String)> = [
        ("status", &args.status),
        ("assignee", &args.assignee),
        ("label", &args.label),
        ("priority", &args.priority),
        ("q", &args.search),
        ("project", &args.project),
        ("sort", &args.sort),
        ("dir", &args.dir),
        ("group", &args.group),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    .collect();
    let query = serde_urlencoded::to_string(&query)?;
    let path = if query.is_empty() {
        "/api/v1/issues".to_owned()
    } else {
        format!("/api/v1/issues?{query}")
    };
    let want = (!args.all).then(|| usize::try_from(args.limit).unwrap_or(usize::MAX));
    let read = pages::read(client, &path, "issues", None, want).await?;
    if read.next_after.is_some() {
        eprintln!(
            "… more issues match than the {} shown; use --all to list them all, or a larger --limit",
            read.items.len()
        );
    }
    let issues = Value::Array(read.items);
    if json {
        return print_json(&issues);
    }
    let issues: Vec<Issue> = shape(&issues)?;
    let rows: Vec<Vec<String>> = issues
        .into_iter()
        .map(|i| {
            let assignee = i.assignee.map_or_else(|| "-".to_owned(), |p| p.name);
            vec![i.key, i.status, i.priority, assignee, i.title]
        })
        .collect();
    let headers = ["KEY", "STATUS", "PRIORITY", "ASSIGNEE", "TITLE"];
    print!("{}", output::table(&headers, &rows));
    Ok(())
}

async fn show(client: &Client, json: bool, key: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/issues/{}", segment(key));
    let detail = client.get(&path).await;
    let mut detail = detail.map_err(|e| not_found_as(e, &format!("issue {key}")))?;
    // The issue comes with its first comments; read the rest page by page.
    if let Some(after) = detail["comments_next_after"].as_str().map(str::to_owned) {
        let path = format!("{path}/comments");
        let rest = pages::read(client, &path, "comments", Some(after), None).await?;
        if let Some(comments) = detail["comments"].as_array_mut() {
            comments.extend(rest.items);
        }
        detail["comments_next_after"] = Value::Null;
    }
    if json {
        return print_json(&detail);
    }
    let d: Detail = shape(&detail)?;
    let i = &d.issue;
    let assignee = i.assignee.as_ref().map_or("-", |p| p.name.as_str());
    let labels = if i.labels.is_empty() {
        "-".to_owned()
    } else {
        i.labels.join(", ")
    };
    println!("{}  {}", i.key, clean(&i.title));
    println!("status:   {}", i.status);
    println!("priority: {}", i.priority);
    println!("assignee: {}", clean(assignee));
    println!("labels:   {}", clean(&labels));
    if let Some(project) = &i.project {
        println!("project:  {}", clean(project));
    }
    print_plan(&d.plan);
    if !i.body.trim().is_empty() {
        println!("\n{}", indent(&i.body, "    "));
    }
    println!("\ncomments ({}):", d.comments.len());
    for c in &d.comments {
        println!(
            "  {} · {}",
            clean(&c.author.name),
            short_time(&c.created_at)
        );
        println!("{}", indent(&c.body, "    "));
    }
    println!("\nactivity:");
    for a in &d.activity {
        let what = activity_text(&a.kind, &a.detail);
        println!(
            "  {}  {} {}",
            short_time(&a.at),
            clean(&a.actor.name),
            clean(&what)
        );
    }
    Ok(())
}

/// The plan's lines of `issue show`: parent, waiting on, relations, sub-issues with their progress.
fn print_plan(p: &PlanOut) {
    if let Some(parent) = &p.parent {
        println!("parent:   {}  {}", parent.key, clean(&parent.title));
    }
    if !p.waiting_on.is_empty() {
        println!("waiting on: {}", p.waiting_on.join(", "));
    }
    for r in &p.relations {
        let mut line = format!(
            "{} {} ({})",
            r.relation.replace('_', " "),
            r.issue.key,
            r.issue.status
        );
        if r.relation == "blocked_by" {
            line.push_str(if r.met { ", met" } else { ", holds" });
            if r.until == "merged" {
                line.push_str(", until merged");
            }
        }
        println!("  {}  {}", clean(&line), clean(&r.issue.title));
    }
    if p.progress.total > 0 {
        println!(
            "sub-issues: {}/{} done{}{}",
            p.progress.done,
            p.progress.total - p.progress.cancelled,
            if p.progress.cancelled > 0 {
                format!(", {} cancelled", p.progress.cancelled)
            } else {
                String::new()
            },
            if p.wake_on_children {
                "; wakes its agent when all have ended"
            } else {
                ""
            }
        );
        for c in &p.children {
            let who = c.assignee.as_ref().map_or("-", |a| a.name.as_str());
            println!(
                "  {:<10} {:<12} {:<16} {}",
                c.issue.key,
                c.issue.status,
                clean(who),
                clean(&c.issue.title)
            );
        }
    }
}

/// `2025-01-02T03:04:05.678Z` → `2025-01-02 03:04`.
pub(super) fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..16).unwrap_or(rfc3339).replacen('T', " ", 1)
}

/// One activity line's text, e.g. `moved backlog → todo`.
pub(super) fn activity_text(kind: &str, detail: &Value) -> String {
    let show = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".to_owned(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let (from, to) = (show(&detail["from"]), show(&detail["to"]));
    match kind {
        "created" => format!("created it in {}", show(&detail["status"])),
        "status" => format!("moved it {from} → {to}"),
        "title" | "priority" | "labels" => format!("changed {kind} {from} → {to}"),
        "assignee" if detail["to"].is_null() => "unassigned it".to_owned(),
        "assignee" => "changed the assignee".to_owned(),
        "body" => "edited the body".to_owned(),
        "project" if detail["to"].is_null() => "took it out of its project".to_owned(),
        "project" => "moved it to another project".to_owned(),
        other => other.to_owned(),
    }
}

async fn edit(client: &Client, json: bool, args: EditArgs) -> anyhow::Result<()> {
    let labels = if args.clear_labels {
        Some(Vec::new())
    } else {
        (!args.labels.is_empty()).then_some(args.labels)
    };
    let input = IssueBody {
        title: args.title,
        body: args.body.map(text_arg).transpose()?,
        status: args.status,
        priority: args.priority,
        assignee: args
            .assignee
            .map(|a| if a.trim() == "none" { String::new() } else { a }),
        labels,
        parent: args
            .parent
            .map(|p| if p.trim() == "none" { String::new() } else { p }),
        wake_on_children: args.wake_on_children,
        project: args
            .project
            .map(|p| if p.trim() == "none" { String::new() } else { p }),
    };
    let fields = !serde_json::to_value(&input)?
        .as_object()
        .is_some_and(serde_json::Map::is_empty);
    let mut adds: Vec<(&str, &String)> = Vec::new();
    adds.extend(args.blocked_by.iter().map(|k| ("blocked_by", k)));
    adds.extend(args.blocks.iter().map(|k| ("blocks", k)));
    adds.extend(args.relates_to.iter().map(|k| ("relates_to", k)));
    adds.extend(args.duplicate_of.iter().map(|k| ("duplicate_of", k)));
    let mut removes = Vec::new();
    for raw in &args.unrelate {
        let Some((kind, other)) = raw.split_once(':') else {
            anyhow::bail!("--unrelate {raw:?}: write it as KIND:KEY, e.g. blocked_by:ACM-2");
        };
        removes.push((kind.trim(), other.trim()));
    }
    let block_flags = args.until.is_some() || args.stacked;
    anyhow::ensure!(
        !block_flags || !args.blocked_by.is_empty() || !args.blocks.is_empty(),
        "--until and --stacked go with --blocked-by or --blocks"
    );
    anyhow::ensure!(
        fields || !adds.is_empty() || !removes.is_empty(),
        "nothing to change: give at least one of --title, --body, --priority, --status, --assignee, --label, \
         --clear-labels, --parent, --wake-on-children, --project, --blocked-by, --blocks, --relates-to, --duplicate-of, --unrelate"
    );
    let mut issue = if fields {
        patch(client, &args.key, &input).await?
    } else {
        Value::Null
    };
    let base = format!("/api/v1/issues/{}/relations", segment(&args.key));
    for (kind, other) in adds {
        let blocking = matches!(kind, "blocked_by" | "blocks");
        let body = RelationBody {
            kind,
            issue: other,
            until: args.until.as_deref().filter(|_| blocking),
            stacked: args.stacked && blocking,
        };
        client
            .post(&base, &body)
            .await
            .map_err(|e| not_found_as(e, &format!("issue {}", args.key)))?;
    }
    for (kind, other) in removes {
        client
            .delete(&format!("{base}/{}/{}", segment(kind), segment(other)))
            .await
            .map_err(|e| not_found_as(e, &format!("{kind} {other} on {}", args.key)))?;
    }
    if issue.is_null() {
        issue = client
            .get(&format!("/api/v1/issues/{}", segment(&args.key)))
            .await?;
    }
    let edited: Issue = shape(&issue)?;
    done(json, &issue, || format!("updated {}", edited.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_reads_as_a_sentence() {
        let d = serde_json::json!({ "from": "backlog", "to": "todo" });
        assert_eq!(activity_text("status", &d), "moved it backlog → todo");
        let d = serde_json::json!({ "from": [], "to": ["bug", "ui"] });
        assert_eq!(activity_text("labels", &d), "changed labels - → bug, ui");
        assert_eq!(short_time("2025-01-02T03:04:05.6Z"), "2025-01-02 03:04");
    }
}
