//! Members: adding people (email + initial password), changing roles, removing. Owners and admins
//! manage members; only owners grant or take away ownership; a workspace always keeps one owner. An
//! existing account is never added without its consent: it gets an invitation (see `invitations`).

use serde::Deserialize;

use super::{Caller, Error, Problems, Result};
use crate::domain::{Email, Member, NewUser, Role, User, UserId, ValidationError};
use crate::engine::Engine;
use crate::live::LiveConnections;
use crate::throttle::LoginThrottle;

/// A new member as typed by an admin.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct MemberInput {
    /// One `@` with text on both sides, no spaces.
    #[schema(max_length = 254, pattern = r"^\s*[^@\s]+@[^@\s]+\s*$")]
    pub email: String,
    /// Display name (at most 100 characters); defaults to the part of the email before `@`.
    pub name: Option<String>,
    /// Initial password (12 to 1024 characters, `muster_web::MIN_PASSWORD_CHARS`) of a new account.
    /// Ignored when the email already has an account: that account is invited instead, and joins when it
    /// accepts.
    #[schema(min_length = 12, max_length = 1024)]
    pub password: Option<String>,
    /// Default member.
    #[schema(value_type = Option<crate::domain::Role>)]
    pub role: Option<String>,
}

/// What adding a member did: a new account joined, or an existing account was invited.
#[derive(Debug, Clone)]
pub enum Added {
    /// A new account was created with the initial password and is a member now.
    Member(Member),
    /// The email belongs to an existing account: it joins only when it accepts.
    Invited(crate::domain::Invitation),
}

/// Adds a member: a new account with an initial password, or (with its consent) an existing one, which
/// gets a pending invitation instead of a membership.
pub async fn add(state: &Engine, caller: &Caller, input: &MemberInput) -> Result<Added> {
    caller.require_manager()?;
    let mut p = Problems::default();
    let email = p.take(Email::parse(&input.email));
    let role: Option<Role> = match input.role.as_deref().filter(|r| !r.is_empty()) {
        Some(r) => p.take(r.parse()),
        None => Some(Role::Member),
    };
    if email.is_none() {
        // Whether the account is new is unknown until the email is valid; its other fields are
        // checked now all the same, so one answer lists every problem.
        let password = input.password.as_deref().unwrap_or_default();
        if !password.is_empty() {
            p.take(crate::auth::check_password(password));
        }
        if let Some(e) = input
            .name
            .as_deref()
            .filter(|n| !n.trim().is_empty())
            .and_then(|n| display_name(n).err())
        {
            p.add(e.field, e.message);
        }
    }
    p.finish()?;
    let (Some(email), Some(role)) = (email, role) else {
        return Err(Error::NotFound);
    };
    if role == Role::Owner && caller.role != Role::Owner {
        return Err(Error::Forbidden);
    }
    match state.store.get_user_by_email(&email).await {
        Ok(user) => Ok(Added::Invited(
            super::invitations::invite(state, caller, &user, role).await?,
        )),
        Err(crate::store::Error::NotFound) => {
            let password = input.password.clone().unwrap_or_default();
            let mut p = Problems::default();
            p.take(crate::auth::check_password(&password));
            let name = input
                .name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty());
            let name = name.map_or_else(
                || {
                    email
                        .as_str()
                        .split('@')
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                },
                str::to_owned,
            );
            if name.chars().count() > 100 {
                p.add("name", "must be at most 100 characters");
            }
            p.finish()?;
            let password_hash = hash(password).await?;
            let new = NewUser {
                email,
                display_name: name,
                password_hash,
            };
            Ok(Added::Member(
                state.store.add_new_member(caller.ws.id, &new, role).await?,
            ))
        }
        Err(e) => Err(e.into()),
    }
}

/// A person's change of their own password.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct PasswordChange {
    /// The password the account has now.
    #[schema(min_length = 1)]
    pub current_password: String,
    /// 12 to 1024 characters (`muster_web::MIN_PASSWORD_CHARS`), other than the current one.
    #[schema(min_length = 12, max_length = 1024)]
    pub new_password: String,
    /// The new password typed again; when sent, it must match.
    #[serde(default)]
    pub new_password_again: Option<String>,
}

/// Changes `user`'s own password. The current password is required, and every wrong try counts against
/// the same per-account and per-address limits as a sign-in (so a stolen session cannot guess the password
/// faster than the login page allows). Every other session of the account is signed out, and their live
/// connections (in `live`) end; `keep` (the session that asked) stays. API tokens are not touched.
/// `throttle` is the sign-in limiter the tries count against.
pub async fn change_password(
    state: &Engine,
    throttle: &LoginThrottle,
    live: &LiveConnections,
    user: &User,
    client: std::net::IpAddr,
    input: &PasswordChange,
    keep: Option<&str>,
) -> Result<()> {
    let attempt = throttle
        .attempt(client, user.email.as_str())
        .map_err(|wait| {
            let secs = crate::throttle::retry_after_secs(wait);
            Error::Throttled {
                field: "current_password",
                message: format!("too many password attempts; try again in {secs} seconds"),
                retry_after_secs: Some(secs),
            }
        })?;
    let mut p = Problems::default();
    let current_ok = !input.current_password.is_empty()
        && crate::auth::verify(
            input.current_password.clone(),
            Some(user.password_hash.clone()),
        )
        .await;
    if input.current_password.is_empty() {
        p.add("current_password", "must not be empty");
    } else if !current_ok {
        p.add("current_password", "is not your current password");
    } else {
        throttle.succeeded(attempt);
    }
    p.take(
        crate::auth::check_password(&input.new_password).map_err(|mut e| {
            e.field = "new_password";
            e
        }),
    );
    if current_ok && input.new_password == input.current_password {
        p.add("new_password", "must differ from the current password");
    }
    if input
        .new_password_again
        .as_deref()
        .is_some_and(|again| again != input.new_password)
    {
        p.add("new_password_again", "does not match the new password");
    }
    p.finish()?;
    let password_hash = hash(input.new_password.clone()).await?;
    let ended = state
        .store
        .change_password(user.id, &password_hash, keep)
        .await?;
    for credential in &ended {
        live.end_credential(credential);
    }
    tracing::info!(user = %user.id, sessions_ended = ended.len(), "password changed");
    Ok(())
}

/// Hashes a password off the async threads, within the server's bound on concurrent hashing.
pub async fn hash(password: String) -> Result<String> {
    crate::auth::hash(password).await.map_err(Error::Internal)
}

/// Changes a member's role.
pub async fn set_role(state: &Engine, caller: &Caller, user: UserId, role: &str) -> Result<Member> {
    caller.require_manager()?;
    let role: Role = role.parse()?;
    let target = state.store.get_member(caller.ws.id, user).await?;
    if (role == Role::Owner || target.role == Role::Owner) && caller.role != Role::Owner {
        return Err(Error::Forbidden);
    }
    Ok(state
        .store
        .set_member_role(caller.ws.id, user, role)
        .await?)
}

/// Removes a member, and ends their open live connections to the workspace (in `live`).
pub async fn remove(
    state: &Engine,
    live: &LiveConnections,
    caller: &Caller,
    user: UserId,
) -> Result<()> {
    caller.require_manager()?;
    let target = state.store.get_member(caller.ws.id, user).await?;
    if target.role == Role::Owner && caller.role != Role::Owner {
        return Err(Error::Forbidden);
    }
    state.store.remove_member(caller.ws.id, user).await?;
    // Their open boards, run pages and event streams of this workspace end now; their requests are
    // refused from here on (no longer a member).
    live.end_member(caller.ws.id, user);
    Ok(())
}

/// Parses a user id from a URL.
pub fn parse_user_id(raw: &str) -> Result<UserId> {
    raw.parse().map_err(|_| Error::NotFound)
}

/// A workspace slug and issue prefix derived from a name (`"Acme Robots"` → `acme-robots`, `ACM`).
pub fn slug_and_prefix(name: &str) -> (String, String) {
    let mut slug = String::new();
    for c in name.trim().to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug
        .trim_end_matches('-')
        .chars()
        .take(48)
        .collect::<String>();
    let slug = if slug.is_empty() {
        "team".to_owned()
    } else {
        slug
    };
    let letters: String = name
        .chars()
        .filter(char::is_ascii_alphabetic)
        .take(3)
        .collect::<String>()
        .to_uppercase();
    let prefix = if letters.len() >= 2 {
        letters
    } else {
        "MUS".to_owned()
    };
    (slug, prefix)
}

/// Validates a display name for a new account.
pub fn display_name(raw: &str) -> std::result::Result<String, ValidationError> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(ValidationError::new("name", "must not be empty"));
    }
    if name.chars().count() > 100 {
        return Err(ValidationError::new(
            "name",
            "must be at most 100 characters",
        ));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_and_prefixes_from_names() {
        assert_eq!(
            super::slug_and_prefix("Acme Robots!"),
            ("acme-robots".into(), "ACM".into())
        );
        assert_eq!(
            super::slug_and_prefix("  42  "),
            ("42".into(), "MUS".into())
        );
        assert_eq!(super::slug_and_prefix("***"), ("team".into(), "MUS".into()));
    }
}
