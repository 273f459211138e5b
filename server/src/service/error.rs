//! The service layer's one error type: what a use-case refuses, said in terms of the request (which
//! field, and why), never of a transport. The HTTP edge (`impl From<Error> for http::Error`) is the one
//! place these become statuses and bodies; a runner or the CLI can branch on them without axum.

use std::collections::BTreeMap;

use crate::domain::ValidationError;
use crate::store;

/// `Result` with the service [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Messages per input field.
pub type FieldMessages = BTreeMap<String, Vec<String>>;

/// Everything a use-case can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller's role does not allow this.
    #[error("you are not allowed to do this")]
    Forbidden,
    /// The role may make the request, but not change these fields.
    #[error("you are not allowed to change these fields")]
    NotAllowed(FieldMessages),
    /// Nothing by that name, or not the caller's to see.
    #[error("not found")]
    NotFound,
    /// A particular thing named in the request does not exist, said precisely (which comment, on which
    /// issue), where a bare [`Error::NotFound`] would leave the caller guessing.
    #[error("{field} {message}")]
    Unknown {
        /// The field the message is about.
        field: &'static str,
        /// What does not exist.
        message: String,
    },
    /// The caller may not do this particular thing, said precisely: a run's token outside its issue, a
    /// comment that is not the caller's.
    #[error("{field} {message}")]
    Refused {
        /// The field the message is about.
        field: &'static str,
        /// Why it is refused.
        message: String,
    },
    /// Clashes with existing data; the map says which field and why.
    #[error("conflict")]
    Conflict(FieldMessages),
    /// Bad input, one or more messages per field.
    #[error("invalid input")]
    Invalid(FieldMessages),
    /// Over a rate limit: the field, the message, and the seconds to wait if known.
    #[error("{message}")]
    Throttled {
        /// The field the message is about.
        field: &'static str,
        /// What was limited and when to try again.
        message: String,
        /// Whole seconds until a try may succeed.
        retry_after_secs: Option<u64>,
    },
    /// Anything else: logged with its cause chain at the edge, never shown.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// Bad input, with messages per field.
    pub fn invalid<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        Error::Invalid(by_field(fields))
    }

    /// Fields the caller's role may not change, with a message each.
    pub fn not_allowed<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        Error::NotAllowed(by_field(fields))
    }

    /// A clash about one field.
    pub fn conflict(field: &str, message: impl Into<String>) -> Self {
        Error::Conflict(BTreeMap::from([(field.to_owned(), vec![message.into()])]))
    }

    /// A refusal about one field.
    pub fn refused(field: &'static str, message: impl Into<String>) -> Self {
        Error::Refused {
            field,
            message: message.into(),
        }
    }
}

fn by_field<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> FieldMessages {
    let mut map = FieldMessages::new();
    for (field, message) in fields {
        map.entry(field.to_owned()).or_default().push(message);
    }
    map
}

impl From<ValidationError> for Error {
    fn from(e: ValidationError) -> Self {
        Error::invalid([(e.field, e.message)])
    }
}

impl From<store::Error> for Error {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::NotFound => Error::NotFound,
            store::Error::Conflict { constraint } => conflict_message(&constraint),
            store::Error::Other(e) => Error::Internal(e),
        }
    }
}

/// What a violated constraint means to the person who sent the request.
fn conflict_message(constraint: &str) -> Error {
    match constraint {
        "workspace_slug_key" => Error::conflict("slug", "is already taken"),
        "app_user_email_key" => Error::conflict("email", "already has an account"),
        "member_pkey" => Error::conflict("email", "is already a member"),
        "agent_workspace_name_key" => {
            Error::conflict("name", "another agent already has this name")
        }
        "skill_workspace_slug_key" => {
            Error::conflict("slug", "another skill already has this slug")
        }
        "run_one_active_key" => {
            Error::conflict("agent", "this agent already has a live run on this issue")
        }
        "plan_proposal_status" => Error::conflict("proposal", "was already approved or discarded"),
        "plan_proposal_pending_key" => Error::conflict(
            "proposal",
            "another proposal for this issue was recorded at the same moment; send it again",
        ),
        "last_owner" => Error::conflict("role", "a workspace needs at least one owner"),
        "foreign_key" => Error::conflict(
            "id",
            "is still in use or refers to something that does not exist",
        ),
        other => Error::conflict("id", format!("conflicts with existing data ({other})")),
    }
}

#[cfg(test)]
mod tests {
    use super::Error;
    use crate::store;

    #[test]
    fn known_constraints_name_their_field_and_unknown_ones_name_the_constraint() {
        let conflict = |c: &str| match Error::from(store::Error::Conflict {
            constraint: c.to_owned(),
        }) {
            Error::Conflict(map) => map,
            other => panic!("expected a conflict, got {other:?}"),
        };
        assert_eq!(conflict("workspace_slug_key")["slug"], ["is already taken"]);
        assert_eq!(
            conflict("mystery_key")["id"],
            ["conflicts with existing data (mystery_key)"]
        );
        assert!(matches!(
            Error::from(store::Error::NotFound),
            Error::NotFound
        ));
    }

    #[test]
    fn messages_for_one_field_are_kept_together_in_order() {
        let Error::Invalid(map) = Error::invalid([
            ("name", "must not be empty".to_owned()),
            ("slug", "is too long".to_owned()),
            ("name", "must be unique".to_owned()),
        ]) else {
            panic!("invalid() builds Error::Invalid");
        };
        assert_eq!(map["name"], ["must not be empty", "must be unique"]);
        assert_eq!(map["slug"], ["is too long"]);
    }
}
