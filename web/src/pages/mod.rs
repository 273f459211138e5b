//! One function per full page; each takes its view (from [`crate::views`]) and returns the whole
//! document, wrapped by [`crate::layout::page`].

mod account;
mod agent_form;
mod agents;
mod board;
mod ensemble;
mod ensembles;
mod error;
mod inbox;
mod invitations;
mod issue;
mod list;
mod login;
mod members;
mod plan_review;
mod projects;
mod rates;
mod run;
mod runners;
mod runtimes;
mod settings;
mod setup;
mod skills;
mod tokens;
mod usage;

pub use account::{AccountView, account};
pub use agent_form::agent_form;
pub use agents::agents;
pub use board::{board, card_menu_page, column_page};
pub use ensemble::ensemble;
pub use ensembles::{ensemble_form, ensembles};
pub use error::error;
pub use inbox::inbox;
pub use invitations::invitations;
pub use issue::{issue, issue_delete};
pub use list::{list, view_toggle};
pub use login::login;
pub use members::members;
pub use plan_review::plan_review;
pub use projects::{project, projects};
pub use rates::{RateRowView, RatesPageView, rates};
pub use run::{run, run_live_frame};
pub use runners::runners;
pub use runtimes::runtimes;
pub use settings::settings;
pub use setup::{setup, setup_used};
pub use skills::{skill, skill_form, skill_preview, skills};
pub use tokens::tokens;
pub use usage::{
    BarView, CapRowView, ChartView, ChoiceView, SeriesView, UsagePageView, UsageRowView, usage,
};

/// The hint under every new-password field, from the one rule the server enforces.
pub fn password_hint() -> String {
    format!("At least {} characters.", crate::MIN_PASSWORD_CHARS)
}
