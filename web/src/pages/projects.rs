//! `GET /w/{slug}/projects`: every project with its progress, lead, target date and spend, and the form
//! that creates one; `GET /w/{slug}/projects/{key}`: one project's progress by status, its issues, its
//! runs and spend, and the form that edits it.

use maud::{Markup, PreEscaped, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::partials::widgets::{PersonChip, RunPill, StatusBadge};
use crate::views::{ProjectFormView, ProjectRowView, ProjectView, ProjectsView};

/// The Projects page.
pub fn projects(v: &ProjectsView) -> Markup {
    let base = workspace_url(&v.nav);
    let body = html! {
        (page_head("Projects", Some("Issues grouped under a name, each project with its own repository, lead and target date."), html! {}))
        div.panel.table-panel {
            @if v.projects.is_empty() {
                p.empty-state #no-projects { "No projects yet. Create one below, then put issues in it from the issue page or with muster issue edit KEY --project P." }
            } @else {
                table.list #projects {
                    thead { tr {
                        th scope="col" { "Project" } th scope="col" { "Status" } th scope="col" { "Progress" }
                        th scope="col" { "Lead" } th scope="col" { "Target" } th scope="col" { "Runs" }
                        th scope="col" { "Spend" }
                    } }
                    tbody { @for p in &v.projects { (row(p)) } }
                }
            }
        }
        section.panel aria-labelledby="new-project-h" {
            h2 #new-project-h { "New project" }
            form.project-form method="post" action={ (base) "/projects" } {
                (csrf(&v.nav.csrf))
                (fields(&v.form, true))
                button.btn.btn-primary type="submit" { "Create project" }
            }
        }
    };
    page("Projects", Some(&v.nav), body)
}

fn progress(p: &ProjectRowView) -> Markup {
    html! {
        div.project-progress {
            progress.plan-progress max="100" value=(p.percent.clamp(0, 100)) aria-label={ (p.key) " progress" } {}
            span.project-progress-text { (p.progress) }
        }
    }
}

fn project_status(status: &str) -> Markup {
    html! { span class={ "pill project-status project-" (status) } { (status) } }
}

fn row(p: &ProjectRowView) -> Markup {
    html! {
        tr.project-row data-project=(p.key) {
            td {
                a href=(p.url) { code.project-key { (p.key) } " " strong { (p.name) } }
                @if let Some(repo) = &p.repo { br; span.muted.project-repo title="its own repository" { code { (repo) } } }
            }
            td { (project_status(&p.status)) }
            td { (progress(p)) }
            td { @match &p.lead { Some(l) => (PersonChip(l)), None => span.muted { "—" } } }
            td { @if p.target_date.is_empty() { span.muted { "—" } } @else { (p.target_date) } }
            td.num { (p.runs) }
            td.num { (p.cost) }
        }
    }
}

/// The fields of a project form (`new`: the key is typed; an edit may change it too).
fn fields(v: &ProjectFormView, new: bool) -> Markup {
    let f = Form::new(if new { "new-project" } else { "project" }, &v.errors);
    html! {
        (f.form_errors())
        div.form-row {
            (f.field("Key", "key", Some("2–10 letters or digits, e.g. WEB."), if new { f.required("key", "text", &v.key) } else { f.input("key", "text", &v.key) }))
            (f.field("Name", "name", None, if new { f.required("name", "text", &v.name) } else { f.input("name", "text", &v.name) }))
        }
        div.form-row {
            (f.field("Status", "status", None, f.select("status", &v.status)))
            (f.field("Lead", "lead", None, f.select("lead", &v.lead)))
            (f.field("Target date", "target_date", None, f.input("target_date", "date", &v.target_date)))
        }
        (f.field("Description", "description", Some("Markdown."), f.textarea("description", &v.description, 3)))
        @if v.can_manage {
            (f.field("Repository", "repo_path", Some("Its own repository: the runs of its issues work there (a git URL or an absolute path on the runners' machine). Empty: the workspace's."), f.input("repo_path", "text", &v.repo_path)))
            (f.field("Check command", "check_command", Some("What ensembles of its issues run to judge each candidate (e.g. cargo test). Empty: the workspace's."), f.input("check_command", "text", &v.check_command)))
        }
    }
}

/// One project's page.
pub fn project(v: &ProjectView) -> Markup {
    let base = workspace_url(&v.nav);
    let p = &v.row;
    let title = format!("{} · {}", p.key, p.name);
    let body = html! {
        (page_head(&title, None, html! {
            a.btn href=(v.board_url) { "Open on the board" }
        }))
        @if v.saved { p.notice role="status" { "Saved." } }
        section.panel #project-summary aria-label="Summary" {
            div.project-facts {
                span { "Status " (project_status(&p.status)) }
                span { "Lead " @match &p.lead { Some(l) => (PersonChip(l)), None => span.muted { "nobody" } } }
                span { "Target " @if p.target_date.is_empty() { span.muted { "none" } } @else { strong { (p.target_date) } } }
                span { "Repository " @match &p.repo { Some(r) => code #project-repo { (r) }, None => span.muted #project-repo { "the workspace's" } } }
                @if let Some(c) = &v.check { span { "Check " code { (c) } } }
            }
            (progress(p))
            ul.project-statuses {
                @for s in &v.by_status {
                    li { a href=(s.url) { (StatusBadge(&s.status)) " " strong { (s.count) } } }
                }
            }
            p.project-spend #project-spend { strong { (p.runs) } " runs · " (v.tokens) " · " strong { (p.cost) } }
            @if !v.description_html.is_empty() { div.prose { (PreEscaped(&v.description_html)) } }
        }
        section.panel.table-panel.project-table aria-labelledby="project-issues-h" {
            h2 #project-issues-h { "Issues" }
            @if v.issues.is_empty() {
                p.empty-state { "No issues in this project yet: pick it on an issue's page, or muster issue edit KEY --project " (p.key) "." }
            } @else {
                table.list #project-issues {
                    thead { tr { th scope="col" { "Issue" } th scope="col" { "Status" } th scope="col" { "Assignee" } } }
                    tbody {
                        @for i in &v.issues {
                            tr data-issue=(i.key) {
                                td { a href=(i.url) { code { (i.key) } " " (i.title) } }
                                td { (StatusBadge(&i.status)) }
                                td { @match &i.assignee { Some(a) => (PersonChip(a)), None => span.muted { "—" } } }
                            }
                        }
                    }
                }
                @if let Some(more) = &v.more_issues { p { a href=(more) { "All of its issues on the board →" } } }
            }
        }
        section.panel.table-panel.project-table aria-labelledby="project-runs-h" {
            h2 #project-runs-h { "Recent runs" }
            @if v.runs.is_empty() {
                p.empty-state { "No runs yet." }
            } @else {
                table.list #project-runs {
                    thead { tr { th scope="col" { "Run" } th scope="col" { "Agent" } th scope="col" { "State" } th scope="col" { "Cost" } th scope="col" { "Started" } } }
                    tbody {
                        @for r in &v.runs {
                            tr {
                                td { a href=(r.url) { code { (r.issue_key) } } }
                                td { (r.agent) }
                                td { (RunPill(&r.status)) }
                                td.num { (r.cost) }
                                td { (r.when) }
                            }
                        }
                    }
                }
            }
        }
        section.panel aria-labelledby="edit-project-h" {
            h2 #edit-project-h { "Edit" }
            form.project-form method="post" action={ (base) "/projects/" (p.key) } {
                (csrf(&v.nav.csrf))
                (fields(&v.form, false))
                button.btn.btn-primary type="submit" { "Save" }
            }
            @if v.can_delete {
                form.project-delete method="post" action={ (base) "/projects/" (p.key) "/delete" }
                    onsubmit="return confirm('Delete this project? Its issues stay, in no project.')" {
                    (csrf(&v.nav.csrf))
                    button.btn.btn-danger type="submit" { "Delete project" }
                }
            }
        }
    };
    page(&title, Some(&v.nav), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{Nav, NavItem, ProjectIssueView, ProjectStatusView};

    fn nav() -> Nav {
        Nav {
            csrf: "tok".into(),
            workspace_slug: "acme".into(),
            active: NavItem::Projects,
            ..Default::default()
        }
    }

    fn row() -> ProjectRowView {
        ProjectRowView {
            key: "WEB".into(),
            name: "Website".into(),
            status: "active".into(),
            target_date: "2027-03-31".into(),
            progress: "2/5 done".into(),
            percent: 40,
            runs: 3,
            cost: "$0.1200".into(),
            repo: Some("/src/web".into()),
            url: "/w/acme/projects/WEB".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_list_shows_progress_and_the_form_keeps_its_input_and_errors() {
        let mut v = ProjectsView {
            nav: nav(),
            projects: vec![row()],
            form: ProjectFormView {
                key: "W".into(),
                can_manage: false,
                ..Default::default()
            },
        };
        v.form
            .errors
            .insert("key".into(), vec!["must be 2 to 10 letters".into()]);
        let html = projects(&v).into_string();
        assert!(html.contains(r#"href="/w/acme/projects/WEB""#), "{html}");
        assert!(html.contains("2/5 done"), "{html}");
        assert!(html.contains(r#"value="40""#), "{html}");
        assert!(html.contains("/src/web"), "{html}");
        assert!(html.contains("must be 2 to 10 letters"), "{html}");
        assert!(html.contains(r#"value="W""#), "{html}");
        assert!(
            !html.contains(r#"name="repo_path""#),
            "members do not see the repository field: {html}"
        );
    }

    #[test]
    fn the_page_shows_statuses_issues_spend_and_the_repository() {
        let v = ProjectView {
            nav: nav(),
            row: row(),
            by_status: vec![ProjectStatusView {
                status: "todo".into(),
                count: 3,
                url: "/w/acme?project=WEB&status=todo".into(),
            }],
            issues: vec![ProjectIssueView {
                key: "ACM-4".into(),
                title: "Hero image".into(),
                status: "todo".into(),
                url: "/w/acme/issues/ACM-4".into(),
                ..Default::default()
            }],
            tokens: "1,234 tokens".into(),
            board_url: "/w/acme?project=WEB".into(),
            form: ProjectFormView {
                can_manage: true,
                repo_path: "/src/web".into(),
                ..Default::default()
            },
            can_delete: true,
            ..Default::default()
        };
        let html = project(&v).into_string();
        assert!(html.contains("WEB · Website"), "{html}");
        assert!(html.contains(r#"id="project-repo""#), "{html}");
        assert!(html.contains("ACM-4"), "{html}");
        assert!(html.contains("1,234 tokens"), "{html}");
        assert!(html.contains(r#"name="repo_path""#), "{html}");
        assert!(html.contains("/projects/WEB/delete"), "{html}");
    }
}
