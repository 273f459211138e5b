//! The Skills pages: the list (with upload and folder import), one skill rendered, and the SKILL.md editor
//! with an htmx preview. Skill instructions arrive as HTML the server already sanitised with ammonia;
//! everything else is escaped by maud.

use maud::{Markup, PreEscaped, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::views::{SkillFormView, SkillListView, SkillPageView, SkillPreviewView, SkillRowView};

fn source_label(source: &str) -> &str {
    match source {
        "built_in" => "built-in",
        "imported" => "imported",
        "written" => "written",
        other => other,
    }
}

fn source_badge(source: &str) -> Markup {
    html! { span class={ "badge skill-source skill-source-" (source) } { (source_label(source)) } }
}

/// The skill list, with two import forms. Each form has its own id prefix and shows only its own
/// messages, so an import error appears under the import form and not under the upload one.
pub fn skills(v: &SkillListView) -> Markup {
    let base = workspace_url(&v.nav);
    let actions = html! { a.btn.btn-primary href={ (base) "/skills/new" } { "New skill" } };
    let upload = Form::new("skill-upload", &v.upload_errors);
    let import = Form::new("skill-folder", &v.import_errors);
    let body = html! {
        (page_head("Skills", Some("Playbooks agents can use: each is a SKILL.md with optional files, handed to runs in the CLI's own skills folder."), actions))
        div.panel {
            @if v.skills.is_empty() {
                p.empty-state { "No skills yet." }
            } @else {
                table.skills {
                    thead { tr { th { "Skill" } th { "Source" } th { "Description" } th { "Attached to" } } }
                    tbody { @for s in &v.skills { (row(s)) } }
                }
            }
        }
        section.panel #skill-upload {
            h2 { "Upload a skill" }
            form method="post" action={ (base) "/skills/upload" } enctype="multipart/form-data" {
                (csrf(&v.nav.csrf))
                (upload.form_errors())
                (upload.field("Archive (.zip or .skill)", "archive", Some("SKILL.md at the top or in one folder; text files only."),
                    html! { input id=(upload.id("archive")) name="archive" type="file" accept=".zip,.skill" required
                        aria-invalid=[upload.invalid("archive").then_some("true")]
                        aria-describedby=[upload.invalid("archive").then(|| format!("{}-error", upload.id("archive")))]; }))
                (other_errors(&upload, "archive"))
                button.btn type="submit" { "Upload" }
            }
        }
        @if v.can_import_path {
            section.panel #skill-import-path {
                h2 { "Import a folder on the server" }
                form method="post" action={ (base) "/skills/import-path" } {
                    (csrf(&v.nav.csrf))
                    (import.form_errors())
                    (import.field("Folder path", "path", Some("An absolute path on the machine Muster runs on."),
                        import.required("path", "text", &v.import_path)))
                    (other_errors(&import, "path"))
                    button.btn type="submit" { "Import" }
                }
            }
        }
    };
    page("Skills", Some(&v.nav), body)
}

/// A form's messages about what is not one of its controls (the archive's SKILL.md, its files, a
/// clashing slug …), inside that form.
fn other_errors(form: &Form<'_>, control: &str) -> Markup {
    html! {
        @for field in form.errors.keys().filter(|f| *f != control && *f != "form") {
            (form.field_errors(field))
        }
    }
}

fn row(s: &SkillRowView) -> Markup {
    html! {
        tr id={ "skill-" (s.slug) } {
            td { a href=(s.url) { code { (s.slug) } } }
            td { (source_badge(&s.source)) }
            td { (s.description) }
            td {
                @if s.agents.is_empty() { span.muted { "—" } }
                @else { (s.agents.join(", ")) }
            }
        }
    }
}

/// One skill, rendered.
pub fn skill(v: &SkillPageView) -> Markup {
    let actions = html! {
        a.btn href=(v.edit_url) { "Edit" }
        " "
        a.btn href=(v.export_url) download { "Export .zip" }
        @if let Some(url) = &v.delete_url {
            " "
            form.inline method="post" action=(url) {
                (csrf(&v.nav.csrf))
                button.btn.btn-danger type="submit" { "Delete" }
            }
        }
    };
    let body = html! {
        (page_head(&v.row.slug, Some(&v.row.description), actions))
        p.muted {
            (source_badge(&v.row.source)) " · "
            @if v.row.agents.is_empty() { "not attached to any agent" }
            @else { "attached to " (v.row.agents.join(", ")) }
            " · " code title="content hash" { (v.content_hash.get(..12).unwrap_or(&v.content_hash)) }
        }
        article.panel.markdown.skill-body { (PreEscaped(&v.safe_html)) }
        @if !v.files.is_empty() {
            section.panel {
                h2 { "Files" }
                @for (path, content) in &v.files {
                    details.skill-file {
                        summary { code { (path) } }
                        pre { code { (content) } }
                    }
                }
            }
        }
    };
    page(&v.row.slug, Some(&v.nav), body)
}

/// The SKILL.md editor.
pub fn skill_form(v: &SkillFormView) -> Markup {
    let title = if v.is_new { "New skill" } else { "Edit skill" };
    let form = Form::new("skill", &v.errors);
    let body = html! {
        (page_head(title, Some("YAML front matter with name (a-z, 0-9, '-') and description, then markdown instructions."), html! {}))
        (form.form_errors())
        div.skill-editor {
            form method="post" action=(v.action) {
                (csrf(&v.nav.csrf))
                (form.field("SKILL.md", "skill_md", None, html! {
                    textarea id=(form.id("skill_md")) name="skill_md" rows="24" spellcheck="false"
                        aria-invalid=[form.invalid("skill_md").then_some("true")]
                        hx-post=(v.preview_url) hx-trigger="input changed delay:500ms, load"
                        hx-target="#skill-preview" hx-swap="innerHTML" { (v.skill_md) }
                }))
                (form.field_errors("files"))
                (form.field_errors("name"))
                button.btn.btn-primary type="submit" { "Save" }
                " "
                button.btn type="button" hx-post=(v.preview_url) hx-include="#skill-skill_md"
                    hx-target="#skill-preview" hx-swap="innerHTML" { "Preview" }
            }
            section.panel.markdown #skill-preview aria-live="polite" {}
        }
    };
    page(title, Some(&v.nav), body)
}

/// The preview fragment.
pub fn skill_preview(v: &SkillPreviewView) -> Markup {
    html! {
        @if !v.problems.is_empty() {
            div.alert.alert-error role="alert" { @for p in &v.problems { p { (p) } } }
        }
        div.skill-body { (PreEscaped(&v.safe_html)) }
    }
}

#[cfg(test)]
mod tests;
