//! Where a line of work's branch goes on its forge, decided at push time by asking the forge (never a
//! cache): the line's own branch while no pull request on it is merged or closed, else the first fresh
//! `<branch>-<n>` — one with an open pull request, or none at all.

use super::{Endpoint, Forge, ForgeError, PrState, REQUEST_TIMEOUT, USER_AGENT};
use crate::runner::protocol::ForgePush;

/// How many fresh branches a line may have had before Muster gives up looking for one.
const MAX_BRANCHES: u32 = 50;

/// The HTTP client forge calls go through: bounded, identified as Muster, and built once per process
/// (building one loads the platform's certificate store; a clone shares its connection pool).
pub fn http_client() -> reqwest::Client {
    static CLIENT: std::sync::LazyLock<reqwest::Client> = std::sync::LazyLock::new(|| {
        reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .user_agent(USER_AGENT)
            .build()
            .unwrap_or_default()
    });
    CLIENT.clone()
}

/// The branch `line`'s work is pushed to on the forge `push` names.
pub async fn push_target(push: &ForgePush, line: &str) -> Result<String, ForgeError> {
    let forge = super::client(
        Endpoint {
            kind: push.kind,
            api_url: push.api_url.clone(),
            repo: push.repo.clone(),
            token: push.token.clone(),
        },
        http_client(),
    );
    target(forge.as_ref(), line).await
}

/// [`push_target`] against a client.
pub async fn target(forge: &dyn Forge, line: &str) -> Result<String, ForgeError> {
    for n in 1..=MAX_BRANCHES {
        let branch = if n == 1 {
            line.to_owned()
        } else {
            format!("{line}-{n}")
        };
        let pulls = forge.pulls_for_branch(&branch).await?;
        if pulls.is_empty() || pulls.iter().any(|p| p.state == PrState::Open) {
            return Ok(branch);
        }
    }
    Err(ForgeError::Refused {
        status: 409,
        message: format!(
            "{line} and its next {} branches all have merged or closed pull requests",
            MAX_BRANCHES - 1
        ),
    })
}
