//! The brief an agent works from: the issue, its discussion, the agent's instructions and how to report
//! back, written as the CLI's native context file (`CLAUDE.md` for Claude Code, `AGENTS.md` otherwise).

use std::fmt::Write as _;

use crate::domain::{Agent, AgentKind, Comment, CommentAuthor, Issue};

/// The context file a CLI reads from its working directory.
pub(super) fn file_name(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => "CLAUDE.md",
        _ => "AGENTS.md",
    }
}

/// The brief as Markdown.
pub(super) fn render(issue: &Issue, comments: &[Comment], agent: &Agent) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", issue.key, issue.title.as_str());
    if issue.body.trim().is_empty() {
        out.push_str("(The issue has no description.)\n");
    } else {
        let _ = writeln!(out, "{}", issue.body.trim_end());
    }
    if !comments.is_empty() {
        out.push_str("\n## Discussion\n");
        for c in comments {
            let who = match c.author {
                CommentAuthor::User(_) => "a team member",
                CommentAuthor::Agent(id) if id == agent.id => "you (an earlier run)",
                CommentAuthor::Agent(_) => "another agent",
                CommentAuthor::System => "Muster",
            };
            let _ = writeln!(
                out,
                "\n**{who}**, {}:\n\n{}",
                c.created_at.format("%Y-%m-%d %H:%M UTC"),
                c.body.trim_end()
            );
        }
    }
    let instructions = agent.profile.instructions.trim();
    if !instructions.is_empty() {
        let _ = writeln!(out, "\n## Your instructions\n\n{instructions}");
    }
    let _ = writeln!(
        out,
        "\n## Reporting back\n\nWork in this directory. When you are done, end with a short summary of what \
         you did and what is left: Muster posts it on {key} as your comment and moves the issue to review. \
         If you cannot finish, say why.",
        key = issue.key
    );
    out
}

/// The prompt given on stdin: short, pointing at the brief.
pub(super) fn prompt(issue: &Issue, kind: AgentKind) -> String {
    format!(
        "Work on issue {}: {}. The full brief is in {} in the current directory. Finish with a short \
         summary of what you did.",
        issue.key,
        issue.title.as_str(),
        file_name(kind)
    )
}
