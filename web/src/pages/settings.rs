//! `GET /w/{slug}/settings`: workspace settings for owners and admins — the git repository runs work in,
//! the loop guard, and the forge (see `forge`).

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::views::SettingsView;

mod forge;

/// The settings page: one form (POST `/w/{slug}/settings`, fields `repo_path`, `mention_depth_limit`,
/// `agent_runs_per_issue_per_hour`).
pub fn settings(v: &SettingsView) -> Markup {
    let f = Form::new("settings", &v.errors);
    let body = html! {
        (page_head("Settings", Some(v.workspace_name.as_str()), html! {}))
        @if v.saved { p.notice role="status" { "Saved." } }
        section.panel aria-labelledby="repo-h" {
            h2 #repo-h { "Repository" }
            p.muted {
                "With a repository, each run works in its own git worktree on a branch "
                code { "muster/<KEY>-r<attempt>" }
                " made from the repository's current commit (a git URL is fetched first; the branch is pushed back to it); its changes are committed on that branch and shown as a diff. "
                "Without one, each run gets an empty folder."
            }
            p {
                "Now: "
                @match &v.repo_path {
                    Some(path) => { code #repo-current { (path) } }
                    None => { span #repo-current.muted { "no repository" } }
                }
            }
            form method="post" action={ (workspace_url(&v.nav)) "/settings" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                (f.field(
                    "Repository",
                    "repo_path",
                    Some("A git URL each runner clones (https://…, ssh://…, git@host:path; credentials from the runner's own git setup, never in the URL), or an absolute path of a repository on the runners' machine. Leave empty to clear."),
                    f.input("repo_path", "text", &v.repo_input),
                ))
                h2 #loop-h { "Loop guard" }
                p.muted {
                    "Replies and " code { "@mentions" } " start agents' runs, and agents mention each other. "
                    "Past these limits Muster refuses the run, says why on the issue and tells its creator."
                }
                (f.field(
                    "Mention depth limit",
                    "mention_depth_limit",
                    Some("How many agent-to-agent mentions may chain from one comment (1 to 20)."),
                    f.input("mention_depth_limit", "number", &v.mention_depth_input),
                ))
                (f.field(
                    "Agent-triggered runs per issue per hour",
                    "agent_runs_per_issue_per_hour",
                    Some("How many runs agents' comments may start on one issue in an hour (1 to 1000)."),
                    f.input("agent_runs_per_issue_per_hour", "number", &v.runs_per_hour_input),
                ))
                h2 #check-h { "Check" }
                (f.field(
                    "Check command",
                    "check_command",
                    Some("What ensembles run in each candidate's worktree to judge it (e.g. cargo test), unless an ensemble names its own. Empty: none."),
                    f.input("check_command", "text", &v.check_input),
                ))
                h2 #egress-h { "Egress" }
                p.muted {
                    "Agents reach the network only through their run's egress proxy: their model endpoint, and the hosts allowed here and on each agent's page. Every connection is in the run's log."
                }
                (f.field(
                    "Default allowed hosts",
                    "egress_hosts",
                    Some("One per line: github.com, *.npmjs.org (subdomains), host:port. Without a port: 443 and 80. Every agent gets these unless its network is off."),
                    f.textarea("egress_hosts", &v.egress_input, 3),
                ))
                button.btn.btn-primary type="submit" { "Save" }
            }
        }
        (forge::section(v))
    };
    page("Settings", Some(&v.nav), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{Nav, NavItem};

    #[test]
    fn shows_the_repository_and_errors_with_the_input_kept() {
        let mut v = SettingsView {
            nav: Nav {
                csrf: "tok".into(),
                workspace_slug: "acme".into(),
                active: NavItem::Settings,
                ..Default::default()
            },
            workspace_name: "Acme".into(),
            repo_path: Some("/src/acme".into()),
            repo_input: "/src/acm".into(),
            mention_depth_input: "30".into(),
            ..Default::default()
        };
        v.errors.insert(
            "repo_path".into(),
            vec!["/src/acm does not exist on the server".into()],
        );
        let html = settings(&v).into_string();
        assert!(html.contains(r#"action="/w/acme/settings""#), "{html}");
        assert!(html.contains("/src/acme</code>"), "{html}");
        assert!(html.contains(r#"value="/src/acm""#), "{html}");
        assert!(html.contains("does not exist on the server"), "{html}");
        assert!(html.contains(r#"value="tok""#), "{html}");
        assert!(html.contains(r#"name="mention_depth_limit""#), "{html}");
        assert!(html.contains(r#"value="30""#), "{html}");
        assert!(
            html.contains(r#"name="agent_runs_per_issue_per_hour""#),
            "{html}"
        );
    }
}
