//! The OpenAPI document's shared parts. The error answers every route can give (401 without valid
//! credentials, 400/413/415/422 for a body that cannot be read, 500) are added here to every operation by
//! [`CommonResponses`], so a route's `#[utoipa::path]` lists only what is its own (200, 404 for its path,
//! 409, 429 …). A route that needs no credentials says `security(())` and gets no 401/403.

use utoipa::Modify;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};

/// Adds the bearer scheme and the shared error responses to every operation.
pub struct CommonResponses;

/// A response whose body is [`super::ErrorBody`].
pub fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

/// Whether an operation says it needs no credentials (`security(())`: one empty requirement).
fn is_public(op: &Operation) -> bool {
    op.security.as_ref().is_some_and(|s| {
        !s.is_empty()
            && s.iter()
                .all(|r| serde_json::to_value(r).is_ok_and(|v| v == serde_json::json!({})))
    })
}

/// The status codes every operation can answer besides its own, with their descriptions.
pub fn common_statuses(op: &Operation) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    let params = op.parameters.as_deref().unwrap_or_default();
    if !params.is_empty() || op.request_body.is_some() {
        out.push((
            "400",
            "Malformed request: a query string, path or header that cannot be read, or a body that is \
             not JSON.",
        ));
    }
    if !is_public(op) {
        out.push(("401", "No valid bearer token or session."));
        out.push((
            "403",
            "Signed in but not allowed: the caller's role, a run's token outside its issue, a session \
             write without `x-csrf-token`, or a token of a workspace the user has left.",
        ));
        out.push((
            "404",
            "Not found: what the path names, or the caller's workspace (a session's \
             `x-muster-workspace` header naming none of theirs).",
        ));
    }
    if op.request_body.is_some() {
        out.push(("413", "The body is larger than the route accepts."));
        out.push((
            "415",
            "The body's `Content-Type` is not one the route accepts.",
        ));
    }
    if !params.is_empty() || op.request_body.is_some() {
        out.push((
            "422",
            "The body or a parameter has the right shape but a value is refused; the messages say \
             which and why.",
        ));
    }
    out.push((
        "500",
        "Internal error: logged with its cause; the body has only a request id.",
    ));
    out
}

impl Modify for CommonResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        for item in openapi.paths.paths.values_mut() {
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
                &mut item.trace,
            ];
            for op in ops.into_iter().flatten() {
                for (status, description) in common_statuses(op) {
                    let response = op
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error_response(description));
                    // A route that lists the status without saying why gets the common reason.
                    if let RefOr::T(r) = response
                        && r.description.is_empty()
                    {
                        r.description = description.to_owned();
                    }
                }
            }
        }
    }
}

/// Shapes of path parameters, shared by every route that takes them (`params(IssueKeyParam)`). A value
/// of another shape is answered 404, like an unknown one.
#[allow(dead_code)] // Only their OpenAPI description is used; the handlers parse the raw segment.
pub mod path {
    /// `{key}`: an issue key.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct IssueKeyParam {
        /// Issue key, e.g. MUS-42 (the prefix is case-insensitive).
        #[param(pattern = r"^[A-Za-z]{2,10}-0*[1-9][0-9]{0,17}$", example = "MUS-42")]
        pub key: String,
    }

    /// `{id}`: a run id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct RunIdParam {
        /// Run id (UUID).
        pub id: uuid::Uuid,
    }

    /// `{id}`: a plan proposal id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct ProposalIdParam {
        /// Proposal id (UUID).
        pub id: uuid::Uuid,
    }

    /// `{id}`: an API token id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct TokenIdParam {
        /// Token id (UUID), as listed by `GET /api/v1/tokens`.
        pub id: uuid::Uuid,
    }

    /// `{id}`: a runner token id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct RunnerTokenIdParam {
        /// Runner token id (UUID), as listed by `GET /api/v1/runner-tokens`.
        pub id: uuid::Uuid,
    }

    /// `{user_id}`: a member's user id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct UserIdParam {
        /// The member's user id (UUID).
        pub user_id: uuid::Uuid,
    }

    /// `{id}`: an invitation id.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct InvitationIdParam {
        /// Invitation id (UUID), as listed by `GET /api/v1/invitations` or `GET /api/v1/members/invitations`.
        pub id: uuid::Uuid,
    }

    /// `{name}`: an agent's name.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct AgentNameParam {
        /// Agent name: 1 to 64 letters, digits, `-`, `_` and `.`.
        #[param(pattern = r"^[A-Za-z0-9._-]{1,64}$", example = "coder")]
        pub name: String,
    }

    /// `{name}`: an ensemble's name.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct EnsembleNameParam {
        /// Ensemble name: 1 to 64 letters, digits, `-`, `_` and `.`.
        #[param(pattern = r"^[A-Za-z0-9._-]{1,64}$", example = "trio")]
        pub name: String,
    }

    /// `{slug}`: a skill's slug.
    #[derive(utoipa::IntoParams)]
    #[into_params(parameter_in = Path)]
    pub struct SkillSlugParam {
        /// Skill slug: a-z, 0-9 and `-`, not starting or ending with `-`, at most 64 characters.
        #[param(
            pattern = r"^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$",
            example = "code-review"
        )]
        pub slug: String,
    }
}

/// Create routes that share their body type with the edit route (every field optional) but refuse a body
/// without some fields: `(path of the POST, schema, schema name for the create body, required fields)`.
/// The create body is documented as a copy with those fields required and not null.
pub struct RequiredOnCreate(
    pub  &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    )],
);

/// Takes `null` out of a property's schema: `type: [T, "null"]` becomes `type: T`, and
/// `oneOf: [{type: null}, S]` becomes `S`.
fn not_null(property: &mut serde_json::Value) {
    if let Some(types) = property.get_mut("type").and_then(|t| t.as_array_mut()) {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            property["type"] = only;
        }
    }
    if let Some(parts) = property.get_mut("oneOf").and_then(|p| p.as_array_mut()) {
        parts.retain(|p| p.get("type").is_none_or(|t| t != "null"));
        if let [only] = parts.as_slice() {
            *property = only.clone();
        }
    }
}

impl Modify for RequiredOnCreate {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (path, from, name, fields) in self.0 {
            let Some(source) = components.schemas.get(*from) else {
                continue;
            };
            let Ok(mut schema) = serde_json::to_value(source) else {
                continue;
            };
            for field in *fields {
                if let Some(property) = schema.get_mut("properties").and_then(|p| p.get_mut(*field))
                {
                    not_null(property);
                }
            }
            schema["required"] = serde_json::json!(fields);
            let Ok(schema) = serde_json::from_value(schema) else {
                continue;
            };
            components.schemas.insert((*name).to_owned(), schema);
            let body = openapi
                .paths
                .paths
                .get_mut(*path)
                .and_then(|item| item.post.as_mut())
                .and_then(|op| op.request_body.as_mut());
            for content in body.into_iter().flat_map(|b| b.content.values_mut()) {
                content.schema = Some(Ref::from_schema_name(*name).into());
            }
        }
    }
}
