//! `GET /w/{slug}/members`: who is in the workspace, role changes and removal for managers, and the
//! add-member form.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf, options};
use crate::partials::widgets::{PersonChip, Timestamp};
use crate::views::{MemberRowView, MembersView, OptionView};

/// The members page. Managers (`can_manage`) get a role select per row (POST `role_url`, field `role`),
/// a remove button (POST `remove_url`) and the add form (POST `/w/{slug}/members`: `email`, `name`,
/// `password`, `role`). Nobody changes or removes their own row here.
pub fn members(v: &MembersView) -> Markup {
    let body = html! {
        (page_head("Members", Some("People who can see this workspace's board and assign work."), html! {}))
        div.panel.table-panel {
            table.list {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Role" }
                    @if v.can_manage { th scope="col" { span.visually-hidden { "Actions" } } }
                } }
                tbody {
                    @for m in &v.members { (member_row(m, v)) }
                }
            }
        }
        @if v.can_manage && !v.invitations.is_empty() { (pending(v)) }
        @if v.can_manage { (add_form(v)) }
    };
    page("Members", Some(&v.nav), body)
}

/// The role options with this member's role selected.
fn role_options(all: &[OptionView], role: &str) -> Vec<OptionView> {
    all.iter()
        .map(|o| OptionView {
            selected: o.value == role,
            ..o.clone()
        })
        .collect()
}

fn member_row(m: &MemberRowView, v: &MembersView) -> Markup {
    let select_id = format!("role-{}", m.email);
    html! {
        tr {
            td { (PersonChip(&m.person)) @if m.is_self { " " span.tag { "you" } } }
            td.muted { (m.email) }
            td {
                @if v.can_manage && !m.is_self {
                    form.inline-form method="post" action=(m.role_url) {
                        (csrf(&v.nav.csrf))
                        label.visually-hidden for=(select_id) { "Role of " (m.person.name) }
                        select id=(select_id) name="role" { (options(&role_options(&v.role, &m.role))) }
                        button.btn.btn-small type="submit" { "Save" }
                    }
                } @else {
                    span class={ "role role-" (role_class(&m.role)) } { (m.role) }
                }
            }
            @if v.can_manage {
                td.actions {
                    @if !m.is_self {
                        form method="post" action=(m.remove_url) data-confirm={ "Remove " (m.person.name) " from the workspace?" } {
                            (csrf(&v.nav.csrf))
                            button.btn.btn-small.btn-danger-ghost type="submit" { "Remove" span.visually-hidden { " " (m.person.name) } }
                        }
                    }
                }
            }
        }
    }
}

fn role_class(role: &str) -> &str {
    match role {
        "owner" | "admin" | "member" => role,
        _ => "other",
    }
}

/// Invited accounts that have not answered yet, each with a revoke button.
fn pending(v: &MembersView) -> Markup {
    html! {
        section.panel.table-panel aria-labelledby="invitations-h" {
            h2 #invitations-h { "Pending invitations" }
            table.list {
                thead { tr {
                    th scope="col" { "Name" } th scope="col" { "Email" } th scope="col" { "Role" }
                    th scope="col" { "Expires" } th scope="col" { span.visually-hidden { "Actions" } }
                } }
                tbody {
                    @for i in &v.invitations {
                        tr {
                            td { (i.name) } td.muted { (i.email) }
                            td { span class={ "role role-" (role_class(&i.role)) } { (i.role) } }
                            td { (Timestamp(i.expires_at)) }
                            td.actions {
                                form method="post" action=(i.revoke_url) {
                                    (csrf(&v.nav.csrf))
                                    button.btn.btn-small.btn-danger-ghost type="submit" { "Revoke" span.visually-hidden { " " (i.email) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn add_form(v: &MembersView) -> Markup {
    let f = Form::new("member", &v.errors);
    html! {
        section.panel aria-labelledby="add-member-h" {
            h2 #add-member-h { "Add a member" }
            p.hint { "A new account signs in with this email and password; ask them to change it on their account page (their name in the top bar). An email that already has an account is invited instead: it joins when that person accepts." }
            form.stack method="post" action={ (workspace_url(&v.nav)) "/members" } {
                (csrf(&v.nav.csrf))
                (f.form_errors())
                div.field-row {
                    (f.field("Email", "email", None, f.required("email", "email", &v.email)))
                    (f.field("Name", "name", Some("For a new account."), f.input("name", "text", &v.name)))
                }
                div.field-row {
                    (f.field("Initial password", "password", Some(&format!("For a new account; {}", crate::pages::password_hint().to_lowercase())), f.input("password", "password", "")))
                    (f.field("Role", "role", None, f.select("role", &v.role)))
                }
                div.form-actions { button.btn.btn-primary type="submit" { "Add member" } }
            }
        }
    }
}

#[cfg(test)]
mod tests;
