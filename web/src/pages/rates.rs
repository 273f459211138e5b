//! `GET /w/{slug}/usage/rates`: the prices runs are priced with when their CLI reports tokens but no
//! cost (Codex), per model in USD per million tokens; owners and admins edit them as JSON.

use maud::{Markup, html};

use crate::layout::{page, page_head, workspace_url};
use crate::partials::form::{Form, csrf};
use crate::views::{FormErrors, Nav};

/// One model's prices, as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct RateRowView {
    pub model: String,
    pub input: String,
    pub output: String,
    pub cached: String,
}

/// The rates page.
#[derive(Debug, Clone, Default)]
pub struct RatesPageView {
    pub nav: Nav,
    /// The workspace's own table (else the built-in one).
    pub custom: bool,
    pub rows: Vec<RateRowView>,
    /// The table as JSON, to edit.
    pub json: String,
    pub can_manage: bool,
    pub errors: FormErrors,
    pub saved: bool,
}

/// The rates page: the table, and for owners and admins a JSON editor (POST, field `rates`; empty goes
/// back to the built-in table).
pub fn rates(v: &RatesPageView) -> Markup {
    let f = Form::new("rates", &v.errors);
    let base = workspace_url(&v.nav);
    let body = html! {
        nav.breadcrumbs aria-label="Breadcrumb" {
            a href={ (base) "/usage" } { "Usage" }
            span aria-hidden="true" { "/" }
            span { "Rates" }
        }
        (page_head("Rates", Some(if v.custom { "This workspace's own table" } else { "The built-in table" }), html! {}))
        @if v.saved { p.notice role="status" { "Saved." } }
        section.panel aria-labelledby="rates-h" {
            h2 #rates-h { "USD per million tokens" }
            p.muted {
                "Runs whose CLI reports tokens but no cost (Codex) are priced from this table and read \"estimated\"; "
                "a model it does not know reads \"unpriced\", never $0; local models are $0. A model matches its "
                "exact name, else the longest entry that prefixes it at - [ @ or :."
            }
            table.data #rates-table {
                thead { tr { th scope="col" { "Model" } th scope="col" { "Input" } th scope="col" { "Output" } th scope="col" { "Cached input" } } }
                tbody {
                    @for r in &v.rows {
                        tr { th scope="row" { code { (r.model) } } td.num { (r.input) } td.num { (r.output) } td.num { (r.cached) } }
                    }
                }
            }
        }
        @if v.can_manage {
            section.panel aria-labelledby="rates-edit-h" {
                h2 #rates-edit-h { "Edit" }
                form method="post" action={ (base) "/usage/rates" } {
                    (csrf(&v.nav.csrf))
                    (f.form_errors())
                    (f.field("Rates (JSON)", "rates",
                        Some("{\"model\": {\"input\": 1.25, \"output\": 10, \"cached\": 0.125}}; empty goes back to the built-in table."),
                        f.textarea("rates", &v.json, 14)))
                    button.btn.btn-primary type="submit" { "Save rates" }
                }
            }
        }
    };
    page("Rates", Some(&v.nav), body)
}
