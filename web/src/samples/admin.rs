//! Sample views for the agents, members and tokens pages.

use chrono::{DateTime, Utc};

use super::{at, err, nav, opts, user};
use crate::views::*;

/// The agent form for `codex` with a secret and a plain env var, and errors.
pub fn agent_form() -> AgentFormView {
    let mut errors = err("max_concurrent_runs", "must be between 1 and 16");
    errors.insert("form".into(), vec!["Fix the highlighted fields.".into()]);
    AgentFormView {
        nav: nav(NavItem::Agents),
        is_new: false,
        action: "/w/acme/agents/codex".into(),
        delete_url: Some("/w/acme/agents/codex/delete".into()),
        can_edit: true,
        can_manage_runtime: true,
        name: "codex".into(),
        color: "#0891b2".into(),
        kind: opts(
            &[
                ("claude", "Claude Code"),
                ("codex", "Codex"),
                ("opencode", "OpenCode"),
                ("llama", "Local Llama"),
                ("custom", "Custom"),
            ],
            "codex",
        ),
        model: "gpt-5-codex".into(),
        runners: "gpu-box, mac-mini".into(),
        egress_hosts: "github.com\n*.npmjs.org".into(),
        network: opts(&[("allow_list", "Allowed hosts"), ("none", "None")], "allow_list"),
        instructions: "Prefer small commits. Run `cargo test` before you finish.".into(),
        env: vec![
            EnvVarView {
                key: "OPENAI_API_KEY".into(),
                value: "sk-LEAKED".into(),
                secret: true,
                has_value: true,
                kept: String::new(),
            },
            EnvVarView {
                key: "RUST_LOG".into(),
                value: "info".into(),
                secret: false,
                has_value: true,
                kept: String::new(),
            },
        ],
        extra_args: "--search\n--config=model_reasoning_effort=high".into(),
        permission_mode: opts(
            &[
                ("read_only", "Read only"),
                ("workspace_write", "Edit the worktree"),
                ("bypass", "Anything (inside the sandbox)"),
            ],
            "workspace_write",
        ),
        max_concurrent_runs: "40".into(),
        stall_timeout_secs: "600".into(),
        max_retries: "2".into(),
        budget_usd: "2.00".into(),
        budget_tokens: String::new(),
        command: String::new(),
        base_url: String::new(),
        errors,
        runtime_warning: Some("Codex is not installed on this server: codex was not found on PATH. See the Runtimes page.".into()),
    }
}

/// The agents list.
pub fn agents() -> AgentListView {
    let row = |name: &str,
               color: &str,
               kind: (&str, &str),
               model: Option<&str>,
               runs: i32,
               budget: &str| {
        AgentRowView {
            name: name.into(),
            avatar: PersonView {
                runtime: Some(super::runtime(kind.0, kind.1)),
                ..super::agent(name, color)
            },
            kind_label: kind.1.into(),
            model: model.map(str::to_string),
            url: format!("/w/acme/agents/{name}"),
            max_concurrent_runs: runs,
            budget: budget.into(),
        }
    };
    AgentListView {
        nav: nav(NavItem::Agents),
        agents: vec![
            row(
                "claude-reviewer",
                "#d97706",
                ("claude", "Claude Code"),
                Some("claude-sonnet-4-5"),
                2,
                "$2.00 / 100k tokens",
            ),
            row(
                "codex",
                "#0891b2",
                ("codex", "Codex"),
                Some("gpt-5-codex"),
                1,
                "$1.50 per run",
            ),
            row(
                "local-llama",
                "#16a34a",
                ("llama", "Local Llama"),
                Some("qwen2.5-coder-7b"),
                1,
                "no budget",
            ),
        ],
        can_manage: true,
    }
}

fn member(person: PersonView, email: &str, role: &str, is_self: bool) -> MemberRowView {
    MemberRowView {
        person,
        email: email.into(),
        role: role.into(),
        role_url: format!("/w/acme/members/{email}/role"),
        remove_url: format!("/w/acme/members/{email}/remove"),
        is_self,
    }
}

/// The members page as an admin sees it, with an error on the add form.
pub fn members() -> MembersView {
    MembersView {
        nav: nav(NavItem::Members),
        members: vec![
            member(
                user("Ada Lovelace", "#7c3aed"),
                "ada@acme.test",
                "admin",
                true,
            ),
            member(
                user("Grace Hopper", "#db2777"),
                "grace@acme.test",
                "member",
                false,
            ),
            member(
                user("Linus Torvalds", "#2563eb"),
                "linus@acme.test",
                "owner",
                false,
            ),
        ],
        invitations: Vec::new(),
        can_manage: true,
        email: "grace@acme.test".into(),
        name: "Grace".into(),
        role: opts(
            &[("owner", "Owner"), ("admin", "Admin"), ("member", "Member")],
            "member",
        ),
        errors: err("email", "is already a member"),
    }
}

/// The tokens page right after creating one.
pub fn tokens() -> TokensView {
    let row = |name: &str, prefix: &str, last: Option<DateTime<Utc>>, revoked: bool| TokenRowView {
        name: name.into(),
        prefix: prefix.into(),
        created_at: at(1, 8, 0),
        last_used_at: last,
        revoked,
        revoke_url: format!("/w/acme/tokens/{prefix}/revoke"),
    };
    TokensView {
        nav: nav(NavItem::Tokens),
        tokens: vec![
            row("CI runner", "mus_8c1e", None, false),
            row("Ada's laptop", "mus_4f2a", Some(at(4, 12, 30)), false),
            row("old script", "mus_0b77", Some(at(2, 7, 5)), true),
        ],
        new_token: Some("mus_8c1e_Zq3vN0pX7yRkT2bWmE9sLfH4uJd6".into()),
        name: String::new(),
        errors: FormErrors::new(),
    }
}
