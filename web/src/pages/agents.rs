//! `GET /w/{slug}/agents`: the workspace's agent profiles.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::widgets::Avatar;
use crate::views::{AgentListView, AgentRowView};

/// The agent list, with "New agent" for owners and admins.
pub fn agents(v: &AgentListView) -> Markup {
    let new_url = format!("{}/agents/new", workspace_url(&v.nav));
    let actions = html! {
        @if v.can_manage { a.btn.btn-primary href=(new_url) { "New agent" } }
    };
    let body = html! {
        (page_head("Agents", Some("Coding agents that pick up issues assigned to them."), actions))
        @if v.agents.is_empty() {
            div.empty-state {
                p { "No agents yet." }
                @if v.can_manage { p { "Add one to assign issues to Claude Code, Codex, OpenCode or a local model." } }
            }
        } @else {
            ul.agent-grid {
                @for a in &v.agents { li { (agent_card(a)) } }
            }
        }
    };
    page("Agents", Some(&v.nav), body)
}

fn agent_card(a: &AgentRowView) -> Markup {
    html! {
        a.agent-card href=(a.url) {
            span.avatar-lg { (Avatar(&a.avatar)) }
            div.agent-info {
                div.agent-name { (a.name) span.tag-agent { "agent" } }
                div.agent-meta {
                    span { (a.kind_label) }
                    @if let Some(m) = &a.model { span.mono { (m) } }
                }
                div.agent-meta {
                    span { (a.max_concurrent_runs) " concurrent " (if a.max_concurrent_runs == 1 { "run" } else { "runs" }) }
                    span { (a.budget) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::nav;
    use crate::views::NavItem;

    fn row(name: &str) -> AgentRowView {
        AgentRowView {
            name: name.into(),
            avatar: crate::samples::agent(name, "#d97706"),
            kind_label: "Claude Code".into(),
            model: Some("claude-sonnet-4".into()),
            url: format!("/w/acme/agents/{name}"),
            max_concurrent_runs: 2,
            budget: "$2.00 / 100k tokens".into(),
        }
    }

    #[test]
    fn lists_agents_with_links_and_square_avatars() {
        let v = AgentListView {
            nav: nav(NavItem::Agents),
            agents: vec![row("claude-reviewer"), row("<img src=x>")],
            can_manage: true,
        };
        let html = agents(&v).into_string();
        assert!(html.contains(r#"href="/w/acme/agents/new""#));
        assert!(html.contains(r#"href="/w/acme/agents/claude-reviewer""#));
        assert!(html.contains("avatar avatar-agent"));
        assert!(html.contains("Claude Code") && html.contains("claude-sonnet-4"));
        assert!(html.contains("2 concurrent runs") && html.contains("$2.00 / 100k tokens"));
        assert!(html.contains("&lt;img src=x&gt;") && !html.contains("<img src=x>"));
    }

    #[test]
    fn members_cannot_add_agents() {
        let v = AgentListView {
            nav: nav(NavItem::Agents),
            agents: vec![],
            can_manage: false,
        };
        let html = agents(&v).into_string();
        assert!(!html.contains("/agents/new"));
        assert!(html.contains("No agents yet."));
    }
}
