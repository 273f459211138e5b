//! `/api/v1/skills` and `/api/v1/agents/{name}/skills`.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post, put};
use axum::{Json, Router};

use super::ErrorBody;
use super::doc::path::{AgentNameParam, SkillSlugParam};
use crate::http::extract::{ApiCaller, AppJson, AppPath};
use crate::http::{Error, Result};
use crate::service::skills::{
    self as svc, AgentSkillView, AttachInput, ImportPathInput, SkillInput, SkillView,
};
use crate::skills::archive::MAX_ARCHIVE_BYTES;
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/skills", get(list).post(create))
        .route(
            "/api/v1/skills/import",
            post(import_archive).layer(DefaultBodyLimit::max(MAX_ARCHIVE_BYTES + 64 * 1024)),
        )
        .route("/api/v1/skills/import-path", post(import_path))
        .route(
            "/api/v1/skills/{slug}",
            get(show).put(update).delete(delete),
        )
        .route("/api/v1/skills/{slug}/export", get(export))
        .route("/api/v1/agents/{name}/skills", get(agent_skills))
        .route(
            "/api/v1/agents/{name}/skills/{slug}",
            put(attach).delete(detach),
        )
}

async fn view(
    state: &AppState,
    caller: &crate::service::Caller,
    slug: &str,
) -> Result<Json<SkillView>> {
    Ok(Json(svc::show(state, caller, slug).await?))
}

/// Lists skills by slug, with the agents each is attached to.
#[utoipa::path(get, path = "/api/v1/skills", tag = "skills", responses((status = 200, body = [SkillView])))]
pub(super) async fn list(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
) -> Result<Json<Vec<SkillView>>> {
    Ok(Json(svc::list(&state, &caller).await?))
}

/// Writes a new skill from its SKILL.md (and files).
#[utoipa::path(post, path = "/api/v1/skills", tag = "skills", request_body = SkillInput,
    responses((status = 201, body = SkillView), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn create(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<SkillInput>,
) -> Result<(StatusCode, Json<SkillView>)> {
    let skill = svc::create(&state, &caller, &input).await?;
    Ok((
        StatusCode::CREATED,
        view(&state, &caller, skill.slug.as_str()).await?,
    ))
}

/// A `.zip`/`.skill` archive's bytes, as the request body.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
#[allow(dead_code)] // Only its OpenAPI description is used.
struct ZipBody(Vec<u8>);

/// Content types the archive upload takes.
const ZIP_TYPES: &[&str] = &["application/zip", "application/octet-stream"];

/// Imports a `.zip`/`.skill` archive sent as the request body (`Content-Type: application/zip`).
#[utoipa::path(post, path = "/api/v1/skills/import", tag = "skills",
    request_body(description = "The archive's bytes, at most 2 MiB; another content type is answered 415",
        content((inline(ZipBody) = "application/zip"), (inline(ZipBody) = "application/octet-stream"))),
    responses((status = 201, body = SkillView), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn import_archive(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    headers: HeaderMap,
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<SkillView>)> {
    let sent = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if !sent.as_deref().is_some_and(|t| ZIP_TYPES.contains(&t)) {
        return Err(Error::Rejected(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "body",
            format!(
                "must be sent as {} (got {})",
                ZIP_TYPES.join(" or "),
                sent.as_deref().unwrap_or("no Content-Type")
            ),
        ));
    }
    let body = body.map_err(|r| Error::Rejected(r.status(), "body", r.body_text()))?;
    let skill = svc::import_archive(&state, &caller, &body).await?;
    Ok((
        StatusCode::CREATED,
        view(&state, &caller, skill.slug.as_str()).await?,
    ))
}

/// Imports a folder on the server (owners and admins).
#[utoipa::path(post, path = "/api/v1/skills/import-path", tag = "skills", request_body = ImportPathInput,
    responses((status = 201, body = SkillView), (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn import_path(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppJson(input): AppJson<ImportPathInput>,
) -> Result<(StatusCode, Json<SkillView>)> {
    let skill = svc::import_folder(&state, &caller, &input.path).await?;
    Ok((
        StatusCode::CREATED,
        view(&state, &caller, skill.slug.as_str()).await?,
    ))
}

/// One skill.
#[utoipa::path(get, path = "/api/v1/skills/{slug}", tag = "skills", params(SkillSlugParam),
    responses((status = 200, body = SkillView), (status = 404, body = ErrorBody)))]
pub(super) async fn show(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(slug): AppPath<String>,
) -> Result<Json<SkillView>> {
    view(&state, &caller, &slug).await
}

/// Replaces a skill's SKILL.md (and files when given); its name must stay.
#[utoipa::path(put, path = "/api/v1/skills/{slug}", tag = "skills", request_body = SkillInput,
    params(SkillSlugParam),
    responses((status = 200, body = SkillView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn update(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(slug): AppPath<String>,
    AppJson(input): AppJson<SkillInput>,
) -> Result<Json<SkillView>> {
    svc::update(&state, &caller, &slug, &input).await?;
    view(&state, &caller, &slug).await
}

/// Deletes a skill (owners and admins).
#[utoipa::path(delete, path = "/api/v1/skills/{slug}", tag = "skills", params(SkillSlugParam),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn delete(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(slug): AppPath<String>,
) -> Result<StatusCode> {
    svc::delete(&state, &caller, &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The skill as a `.zip` (`<slug>/SKILL.md` and its files).
#[utoipa::path(get, path = "/api/v1/skills/{slug}/export", tag = "skills", params(SkillSlugParam),
    responses((status = 200, content_type = "application/zip", body = Vec<u8>), (status = 404, body = ErrorBody)))]
pub(super) async fn export(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(slug): AppPath<String>,
) -> Result<impl IntoResponse> {
    let (name, bytes) = svc::export(&state, &caller, &slug).await?;
    Ok(zip_response(&name, bytes))
}

/// A `.zip` download.
pub(crate) fn zip_response(name: &str, bytes: Vec<u8>) -> axum::response::Response {
    (
        [
            (header::CONTENT_TYPE, "application/zip".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// The skills attached to an agent, with their switches.
#[utoipa::path(get, path = "/api/v1/agents/{name}/skills", tag = "skills", params(AgentNameParam),
    responses((status = 200, body = [AgentSkillView]), (status = 404, body = ErrorBody)))]
pub(super) async fn agent_skills(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath(name): AppPath<String>,
) -> Result<Json<Vec<AgentSkillView>>> {
    let list = svc::of_agent(&state, &caller, &name).await?;
    Ok(Json(list.iter().map(AgentSkillView::from).collect()))
}

/// Attaches a skill to an agent, or sets its switch (`{"enabled": false}` keeps it attached but off).
#[utoipa::path(put, path = "/api/v1/agents/{name}/skills/{slug}", tag = "skills", request_body = AttachInput,
    params(AgentNameParam, SkillSlugParam),
    responses((status = 200, body = [AgentSkillView]), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub(super) async fn attach(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath((name, slug)): AppPath<(String, String)>,
    AppJson(input): AppJson<AttachInput>,
) -> Result<Json<Vec<AgentSkillView>>> {
    let list = svc::attach(&state, &caller, &name, &slug, input.enabled).await?;
    Ok(Json(list.iter().map(AgentSkillView::from).collect()))
}

/// Detaches a skill from an agent.
#[utoipa::path(delete, path = "/api/v1/agents/{name}/skills/{slug}", tag = "skills",
    params(AgentNameParam, SkillSlugParam),
    responses((status = 200, body = [AgentSkillView]), (status = 404, body = ErrorBody)))]
pub(super) async fn detach(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppPath((name, slug)): AppPath<(String, String)>,
) -> Result<Json<Vec<AgentSkillView>>> {
    let list = svc::detach(&state, &caller, &name, &slug).await?;
    Ok(Json(list.iter().map(AgentSkillView::from).collect()))
}
