//! Realistic sample views shared by the rendering tests and the screenshot samples.

use chrono::{DateTime, TimeZone, Utc};

use crate::views::*;

/// A fixed instant so rendered timestamps are stable.
pub fn at(day: u32, hour: u32, min: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, day, hour, min, 0).unwrap()
}

/// Signed-in frame for Ada, an admin of Acme Robotics.
pub fn nav(active: NavItem) -> Nav {
    Nav {
        workspace_name: "Acme Robotics".into(),
        workspace_slug: "acme".into(),
        user_name: "Ada Lovelace".into(),
        user_email: "ada@acme.test".into(),
        role: "admin".into(),
        csrf: "csrf-123".into(),
        active,
        inbox_unread: Some(2),
    }
}

/// A person.
pub fn user(name: &str, color: &str) -> PersonView {
    let initials = name
        .split_whitespace()
        .filter_map(|w| w.chars().next())
        .take(2)
        .collect();
    PersonView {
        name: name.into(),
        initials,
        color: color.into(),
        kind: PersonKind::User,
        runtime: None,
    }
}

/// An agent.
pub fn agent(name: &str, color: &str) -> PersonView {
    PersonView {
        name: name.into(),
        initials: crate::partials::widgets::initials(name),
        color: color.into(),
        kind: PersonKind::Agent,
        runtime: Some(runtime("claude", "Claude Code")),
    }
}

/// A runtime as the server describes it.
pub fn runtime(name: &str, label: &str) -> RuntimeView {
    RuntimeView {
        name: name.into(),
        label: label.into(),
    }
}

/// Options from `(value, label)` pairs with `selected` marked.
pub fn opts(pairs: &[(&str, &str)], selected: &str) -> Vec<OptionView> {
    pairs
        .iter()
        .map(|(v, l)| OptionView {
            value: (*v).into(),
            label: (*l).into(),
            selected: *v == selected,
        })
        .collect()
}

/// One error message for `field`.
pub fn err(field: &str, msg: &str) -> FormErrors {
    FormErrors::from([(field.to_string(), vec![msg.to_string()])])
}

/// `(key, title, status, priority, assignee, labels, run state)`; assignee `""` is nobody.
type CardSpec = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Option<&'static str>,
);

// rustfmt would put every tuple field on its own line.
#[rustfmt::skip]
const CARDS: &[CardSpec] = &[
    ("MUS-31", "Support SSO login with OIDC providers", "backlog", "low", "", &["auth"], None),
    ("MUS-35", "Nightly export of the board to CSV", "backlog", "none", "grace", &[], None),
    ("MUS-28", "Rate-limit the public API per token", "todo", "high", "codex", &["api", "security"], Some("queued")),
    ("MUS-33", "Dark mode flickers on first paint", "todo", "medium", "ada", &["ui"], None),
    ("MUS-24", "Stream run logs over the board WebSocket", "in_progress", "urgent", "claude", &["live", "backend"], Some("running")),
    ("MUS-26", "Migrate sessions table to UUID v7 keys", "in_progress", "medium", "codex", &["db"], Some("failed")),
    ("MUS-22", "Keyboard shortcuts for the board", "in_review", "low", "grace", &["ui", "a11y"], Some("succeeded")),
    ("MUS-19", "Invite members by email", "done", "high", "ada", &["auth"], None),
];

fn assignee(code: &str) -> Option<PersonView> {
    match code {
        "claude" => Some(agent("claude-reviewer", "#d97706")),
        "codex" => Some(agent("codex", "#0891b2")),
        "ada" => Some(user("Ada Lovelace", "#7c3aed")),
        "grace" => Some(user("Grace Hopper", "#db2777")),
        _ => None,
    }
}

fn card(spec: &CardSpec) -> IssueCardView {
    let (key, title, status, priority, who, labels, run) = *spec;
    IssueCardView {
        key: key.into(),
        title: title.into(),
        status: status.into(),
        priority: priority.into(),
        assignee: assignee(who),
        labels: labels.iter().map(|l| (*l).to_string()).collect(),
        url: format!("/w/acme/issues/{key}"),
        move_url: format!("/w/acme/issues/{key}/move"),
        run_state: run.map(str::to_string),
        run_waiting: None,
        ensemble: None,
        pull: None,
        plan: Default::default(),
        project: None,
    }
}

/// Eight cards across the five board columns, people and agents assigned, one failed run.
pub fn columns() -> Vec<BoardColumnView> {
    let cards: Vec<IssueCardView> = CARDS.iter().map(card).collect();
    crate::partials::widgets::STATUSES[..5]
        .iter()
        .map(|(status, label)| {
            let cards: Vec<IssueCardView> = cards
                .iter()
                .filter(|c| c.status == *status)
                .cloned()
                .collect();
            BoardColumnView {
                status: (*status).into(),
                label: (*label).into(),
                total: i64::try_from(cards.len()).unwrap_or(i64::MAX),
                cards,
                more: None,
            }
        })
        .collect()
}

const STATUS_OPTS: &[(&str, &str)] = &[
    ("backlog", "Backlog"),
    ("todo", "Todo"),
    ("in_progress", "In progress"),
    ("in_review", "In review"),
    ("done", "Done"),
];
const PRIO_OPTS: &[(&str, &str)] = &[
    ("none", "No priority"),
    ("urgent", "Urgent"),
    ("high", "High"),
    ("medium", "Medium"),
    ("low", "Low"),
];
const ASSIGNEE_OPTS: &[(&str, &str)] = &[
    ("", "Nobody"),
    ("user:0193", "Ada Lovelace"),
    ("user:0194", "Grace Hopper"),
    ("agent:0195", "claude-reviewer (agent)"),
    ("agent:0196", "codex (agent)"),
];

/// An issue form with the given typed values.
pub fn issue_form(title: &str, body: &str, errors: FormErrors) -> IssueFormView {
    IssueFormView {
        title: title.into(),
        body: body.into(),
        status: opts(STATUS_OPTS, "in_progress"),
        priority: opts(PRIO_OPTS, "urgent"),
        assignee: opts(ASSIGNEE_OPTS, "agent:0195"),
        labels: "live, backend".into(),
        project: opts(&[("", "No project"), ("WEB", "WEB · Website")], "WEB"),
        errors,
        mentions: vec![
            MentionOptionView {
                name: "coder".into(),
                label: "claude".into(),
                kind: PersonKind::Agent,
            },
            MentionOptionView {
                name: "ada".into(),
                label: "Ada \"the\" Lovelace".into(),
                kind: PersonKind::User,
            },
        ],
    }
}

/// The board with a few filters available.
pub fn board() -> BoardView {
    BoardView {
        nav: nav(NavItem::Board),
        columns: columns(),
        filter: BoardFilterView {
            q: String::new(),
            assignee: opts(
                &[
                    ("", "Anyone"),
                    ("user:0193", "Ada Lovelace"),
                    ("agent:0195", "claude-reviewer (agent)"),
                ],
                "",
            ),
            label: opts(&[("", "Any label"), ("ui", "ui"), ("auth", "auth")], ""),
            priority: opts(
                &[("", "Any priority"), ("urgent", "Urgent"), ("high", "High")],
                "",
            ),
            project: opts(&[("", "Any project"), ("WEB", "WEB · Website")], ""),
            show_hidden: false,
            active: false,
        },
        new_issue: issue_form("", "", FormErrors::new()),
        live_url: "/w/acme/live".into(),
    }
}

const BODY_HTML: &str = "<p>Run output is stored per event; the board should show it <strong>live</strong>.</p>\
<ul><li>subscribe first, then replay after the cursor</li><li>resync from the store on lag</li></ul>\
<pre><code>GET /w/acme/runs/{id}/live?after=42</code></pre>";

/// The issue page for MUS-24: a conversation with a person's and an agent's comment, a failed run, a
/// live one and status changes.
pub fn issue() -> IssuePageView {
    let claude = agent("claude-reviewer", "#d97706");
    let ada = user("Ada Lovelace", "#7c3aed");
    let system = PersonView {
        name: "Muster".into(),
        initials: "M".into(),
        color: "#6b7280".into(),
        kind: PersonKind::System,
        runtime: None,
    };
    IssuePageView {
        ensemble_runs: Vec::new(),
        ensembles: Vec::new(),
        nav: nav(NavItem::Board),
        key: "MUS-24".into(),
        url: "/w/acme/issues/MUS-24".into(),
        title: "Stream run logs over the board WebSocket".into(),
        body_html: BODY_HTML.into(),
        body_digest: "0123456789abcdef01234567".into(),
        status: "in_progress".into(),
        status_label: "In progress".into(),
        priority: "urgent".into(),
        labels: vec!["live".into(), "backend".into()],
        assignee: Some(claude.clone()),
        created_by: Some(ada.clone()),
        created_at: Some(at(3, 9, 12)),
        updated_at: Some(at(4, 16, 40)),
        form: issue_form(
            "Stream run logs over the board WebSocket",
            "Run output is stored per event…",
            FormErrors::new(),
        ),
        thread: vec![
            ThreadEntryView::Change(ActivityView {
                actor: ada.clone(),
                text: "created this issue".into(),
                at: at(3, 9, 12),
            }),
            ThreadEntryView::Comment(CommentView {
                id: "c1".into(),
                author: ada.clone(),
                body_html:
                    "<p>Please keep the replay and the live stream in one ordered sequence.</p>"
                        .into(),
                at: at(3, 9, 20),
                edited_at: Some(at(3, 9, 25)),
                can_edit: true,
                can_delete: true,
            }),
            ThreadEntryView::Change(ActivityView {
                actor: ada,
                text: "assigned this to claude-reviewer".into(),
                at: at(3, 9, 21),
            }),
            ThreadEntryView::Run(Box::new(thread_runs().remove(1))),
            ThreadEntryView::Change(ActivityView {
                actor: system,
                text: "moved this from in progress to todo".into(),
                at: at(4, 16, 1),
            }),
            ThreadEntryView::Comment(CommentView {
                id: "c2".into(),
                author: claude.clone(),
                body_html:
                    "<p>Started on branch <code>mus-24-live-logs</code>; the key is fixed.</p>"
                        .into(),
                at: at(4, 16, 28),
                edited_at: None,
                can_edit: false,
                can_delete: true,
            }),
            ThreadEntryView::Run(Box::new(thread_runs().remove(0))),
            ThreadEntryView::Change(ActivityView {
                actor: claude,
                text: "moved this from todo to in progress".into(),
                at: at(4, 16, 29),
            }),
        ],
        live: true,
        comment_body: String::new(),
        comment_errors: FormErrors::new(),
        edit_text: false,
        edit_comment: None,
        can_delete: true,
        run_totals: Some(("2 runs · $0.4210 · 31200 tokens".to_owned(), None)),
        replies_wake: Some("claude-reviewer".into()),
        pulls: Default::default(),
        plan: Default::default(),
        lines: vec![WorkLineView {
            agent: "claude-reviewer".to_owned(),
            branch: "muster/MUS-24-claude-reviewer".to_owned(),
            commit: Some((
                "3f2a9c41d07b".to_owned(),
                "3f2a9c41d07be5e8a1c2f06d9b7e4a1f0c3d2b19".to_owned(),
            )),
            run_url: "/w/acme/runs/01a2".to_owned(),
        }],
    }
}

mod admin;
mod ensembles;
mod runs;
mod write;

pub use admin::{agent_form, agents, members, tokens};
pub use ensembles::{ensemble_form, ensembles};
pub use runs::{failed_run_page, inbox, run_page, thread_runs};
