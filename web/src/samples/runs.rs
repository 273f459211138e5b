//! Sample run page, the issue timeline's runs and inbox.

use super::{agent, at, nav};
use crate::views::*;

fn text(s: &str) -> LongTextView {
    LongTextView {
        shown: s.into(),
        full: None,
        lines: s.lines().count(),
    }
}

fn item(seq: i64, kind: RunItemKind) -> RunItemView {
    RunItemView {
        seq,
        at: at(4, 16, 30),
        kind,
    }
}

/// A run of claude-reviewer on MUS-24 that is still running, with one of each kind of entry.
pub fn run_page() -> RunPageView {
    let id = "7f1c2a9e-0000-4000-8000-000000000001";
    let long: String = (1..=60)
        .map(|n| format!("test case_{n} ... ok\n"))
        .collect();
    RunPageView {
        nav: nav(NavItem::Board),
        header: RunHeaderView {
            id: id.into(),
            url: format!("/w/acme/runs/{id}"),
            issue_key: "MUS-24".into(),
            issue_title: "Stream run logs over the board WebSocket".into(),
            issue_url: "/w/acme/issues/MUS-24".into(),
            agent: Some(agent("claude-reviewer", "#d97706")),
            attempt: 2,
            number: Some(3),
            runner: Some("gpu-box".into()),
            status: "running".into(),
            stalled_at: None,
            failure: None,
            exit_code: None,
            branch: Some("muster/MUS-24-claude-reviewer".into()),
            head_commit: Some("3f2a9c41d07be5e8a1c2f06d9b7e4a1f0c3d2b19".into()),
            created_at: Some(at(4, 16, 29)),
            cancel_url: Some(format!("/w/acme/runs/{id}/cancel")),
            retry_url: None,
            waiting: None,
            open_pull_url: None,
        },
        origin: RunOriginView {
            trigger: "Ada's comment".into(),
            trigger_url: Some("/w/acme/issues/MUS-24#comment-c1".into()),
            continues: Some(("7f1c2a9e".into(), "/w/acme/runs/7f1c2a9e-0000".into())),
        },
        counters: RunCountersView {
            input_tokens: "12,840".into(),
            output_tokens: "2,113".into(),
            cache_tokens: "48,002".into(),
            cost: "$0.0912".into(),
            cost_title: None,
            tokens_per_second: None,
            started_at: Some(at(4, 16, 30)),
            finished_at: None,
            elapsed: "1m 12s".into(),
        },
        items: vec![
            item(
                1,
                RunItemKind::Started {
                    session_id: "5810e3a2".into(),
                    model: Some("claude-sonnet-4-5".into()),
                    skills: vec!["test-first-fix".into(), "report-to-the-board".into()],
                },
            ),
            item(
                2,
                RunItemKind::Thinking {
                    text: "The hub must subscribe before it replays.".into(),
                },
            ),
            item(
                3,
                RunItemKind::Text {
                    html: "<p>I'll read <code>hub.rs</code> first.</p>".into(),
                },
            ),
            item(
                4,
                RunItemKind::ToolCall {
                    slot_id: format!("run-{id}-result-toolu_1"),
                    name: "Bash".into(),
                    input: text("cargo test -p muster hub"),
                    result: Some(ToolResultView {
                        output: LongTextView {
                            shown: "test case_1 ... ok".into(),
                            full: Some(long),
                            lines: 60,
                        },
                        is_error: false,
                        exit_code: Some(0),
                    }),
                },
            ),
            item(
                6,
                RunItemKind::Command {
                    cmd: "cargo clippy".into(),
                    exit_code: Some(101),
                    output: text("error: unused import"),
                },
            ),
            item(
                7,
                RunItemKind::FileChange {
                    path: "server/src/hub.rs".into(),
                    change: "update".into(),
                },
            ),
            item(
                8,
                RunItemKind::Stderr {
                    line: "warning: build took 40s".into(),
                },
            ),
            item(
                9,
                RunItemKind::Error {
                    message: "API Error: 529 overloaded".into(),
                },
            ),
            item(
                10,
                RunItemKind::ToolCall {
                    slot_id: format!("run-{id}-result-toolu_2"),
                    name: "Edit".into(),
                    input: text("{\n  \"file_path\": \"server/src/hub.rs\"\n}"),
                    result: None,
                },
            ),
        ],
        diff: RunDiffView::default(),
        last_seq: 10,
        live_url: Some(format!("/w/acme/runs/{id}/live?after=10")),
    }
}

/// The same run after it failed.
pub fn failed_run_page() -> RunPageView {
    let mut v = run_page();
    v.header.status = "failed".into();
    v.header.failure = Some(FailureView {
        what: "The agent's command exited with code 1".into(),
        to_do: "open the run for its last error (under details)".into(),
        settings_url: None,
        details: "last output: <b>tests</b> fail\nexit code: 1\nreason: exit".into(),
    });
    v.header.exit_code = Some(1);
    v.header.cancel_url = None;
    v.header.retry_url = Some(format!("{}/retry", v.header.url));
    v.counters.finished_at = Some(at(4, 16, 32));
    v.live_url = None;
    v.diff = RunDiffView {
        stat: Some(
            " server/src/hub.rs | 4 +++-\n 1 file changed, 3 insertions(+), 1 deletion(-)".into(),
        ),
        lines: vec![
            DiffLineView {
                kind: "meta".into(),
                text: "--- a/server/src/hub.rs".into(),
            },
            DiffLineView {
                kind: "meta".into(),
                text: "+++ b/server/src/hub.rs".into(),
            },
            DiffLineView {
                kind: "hunk".into(),
                text: "@@ -1,2 +1,2 @@".into(),
            },
            DiffLineView {
                kind: "del".into(),
                text: "-let rx = None;".into(),
            },
            DiffLineView {
                kind: "add".into(),
                text: "+let rx = hub.subscribe(topic);".into(),
            },
            DiffLineView {
                kind: "ctx".into(),
                text: " replay(rx);".into(),
            },
        ],
        omitted: 0,
    };
    v
}

/// Two runs of MUS-24, newest (live) first.
pub fn thread_runs() -> Vec<ThreadRunView> {
    let run = |id: &str, attempt: i32, status: &str| ThreadRunView {
        id: id.into(),
        url: format!("/w/acme/runs/{id}"),
        agent: Some(agent("claude-reviewer", "#d97706")),
        number: if id == "r2" { 2 } else { 1 },
        attempt,
        status: status.into(),
        stalled: false,
        trigger: "assigned".into(),
        trigger_href: None,
        live: false,
        waiting: None,
        duration: String::new(),
        cost: "$0.0000".into(),
        cost_title: None,
        tokens: "0".into(),
        summary_html: None,
        failure: None,
        diff_stat: None,
        created_at: at(4, 16, 0),
        reply: None,
    };
    vec![
        ThreadRunView {
            trigger: "after Ada Lovelace's comment".into(),
            trigger_href: Some("#comment-c1".into()),
            live: true,
            duration: "1m 12s".into(),
            tokens: "62,955".into(),
            cost: "$0.0912".into(),
            created_at: at(4, 16, 29),
            ..run("r2", 2, "running")
        },
        ThreadRunView {
            cost: "unpriced".into(),
            cost_title: Some("Unknown cost: no price for this model".into()),
            tokens: "1,024".into(),
            failure: Some(FailureView {
                what: "Codex's API key was refused by the provider (401)".into(),
                to_do: "check the agent's OPENAI_API_KEY secret".into(),
                settings_url: Some("/w/acme/agents/codex".into()),
                details: "error: unexpected status 401 Unauthorized\nexit code: 1\nreason: auth"
                    .into(),
            }),
            duration: "12s".into(),
            diff_stat: Some("1 file changed, 3 insertions(+)".into()),
            ..run("r1", 1, "failed")
        },
    ]
}

/// An inbox with an unread failure (retryable) and a read stall.
pub fn inbox() -> InboxView {
    InboxView {
        nav: nav(NavItem::Inbox),
        items: vec![
            InboxItemView {
                id: "i1".into(),
                kind: "run_failed".into(),
                kind_label: "Run failed".into(),
                message: "codex failed on MUS-26 (exit): <b>tests</b> fail".into(),
                details: Some("error: <b>tests</b> fail\nexit code: 1".into()),
                issue_key: Some("MUS-26".into()),
                issue_url: Some("/w/acme/issues/MUS-26".into()),
                run_url: Some("/w/acme/runs/r9".into()),
                diff_url: None,
                comment_url: None,
                at: at(4, 17, 0),
                read: false,
                read_url: Some("/w/acme/inbox/i1/read".into()),
                retry_url: Some("/w/acme/inbox/i1/retry".into()),
            },
            InboxItemView {
                id: "i2".into(),
                kind: "run_stalled".into(),
                kind_label: "Run stalled".into(),
                message: "claude-reviewer has been silent on MUS-24".into(),
                details: None,
                issue_key: Some("MUS-24".into()),
                issue_url: Some("/w/acme/issues/MUS-24".into()),
                run_url: Some("/w/acme/runs/r2".into()),
                diff_url: None,
                comment_url: None,
                at: at(4, 16, 45),
                read: true,
                read_url: None,
                retry_url: None,
            },
        ],
        unread_only: false,
        unread_count: 1,
        read_all_url: "/w/acme/inbox/read".into(),
        invitations: 0,
    }
}
