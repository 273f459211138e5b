//! API tokens: created for the signed-in user in one workspace, shown once, stored hashed.

use serde::Serialize;

use super::{Caller, Error, Result};
use crate::domain::{ApiToken, NewApiToken, TokenId};
use crate::engine::Engine;

/// A token just created: the secret is in here and nowhere else.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CreatedToken {
    pub id: uuid::Uuid,
    pub name: String,
    /// Shown once; store it now.
    pub token: String,
}

/// Creates a token named `name` for the caller.
pub async fn create(state: &Engine, caller: &Caller, name: &str) -> Result<CreatedToken> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(Error::invalid([(
            "name",
            "must be 1 to 100 characters".to_owned(),
        )]));
    }
    let secret = crate::auth::new_secret(crate::auth::API_TOKEN_KIND);
    let new = NewApiToken {
        workspace_id: caller.ws.id,
        user_id: caller.user.id,
        name: name.to_owned(),
        prefix: secret.prefix,
        token_hash: secret.hash,
        run_id: None,
    };
    let token = state.store.create_api_token(&new).await?;
    Ok(CreatedToken {
        id: token.id.0,
        name: token.name,
        token: secret.secret,
    })
}

/// The caller's tokens.
pub async fn list(state: &Engine, caller: &Caller) -> Result<Vec<ApiToken>> {
    Ok(state
        .store
        .list_api_tokens(caller.ws.id, caller.user.id)
        .await?)
}

/// Revokes one of the caller's tokens; the event streams and sockets opened with it end at once.
pub async fn revoke(state: &Engine, caller: &Caller, id: &str) -> Result<()> {
    let id: TokenId = id.parse().map_err(|_| Error::NotFound)?;
    let hash = state
        .store
        .revoke_api_token(caller.ws.id, caller.user.id, id)
        .await?;
    state.credential_ended(&hash);
    Ok(())
}
