//! One function per full page; each takes its view (from [`crate::views`]) and returns the whole
//! document, wrapped by [`crate::layout::page`].

mod agent_form;
mod agents;
mod board;
mod error;
mod issue;
mod login;
mod members;
mod runtimes;
mod setup;
mod tokens;

pub use agent_form::agent_form;
pub use agents::agents;
pub use board::board;
pub use error::error;
pub use issue::issue;
pub use login::login;
pub use members::members;
pub use runtimes::runtimes;
pub use setup::setup;
pub use tokens::tokens;
