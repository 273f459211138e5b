//! `GET /api/v1/issues/search`: full-text search over the workspace's issue keys, titles, bodies and
//! comments, best first (the ranking rule is in `store::search`). A run's token may search its own
//! workspace: agents are told to search before they create an issue.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::ErrorBody;
use crate::domain::{IssueStatus, MatchedIn, SearchHit, SearchQuery, ValidationError};
use crate::http::Result;
use crate::http::extract::{ApiCaller, AppQuery};
use crate::state::AppState;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/v1/issues/search", get(search))
}

/// What to search for.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SearchParams {
    /// Words to find (each as a word prefix: `pars` finds "parser") in titles, bodies and comments, or an
    /// issue key (`ACM-12`, or `acm-1` for ACM-1 and the keys it begins). 1 to 200 characters.
    #[param(min_length = 1, max_length = 200, example = "parser crash")]
    q: Option<String>,
    /// Hits to return, 1 to 100 (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// Only these statuses, comma-separated.
    #[param(value_type = Option<Vec<IssueStatus>>, style = Form, explode = false)]
    status: Option<String>,
}

/// The hits, best first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct SearchResults {
    hits: Vec<HitView>,
}

/// One issue found.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct HitView {
    #[schema(example = "MUS-42")]
    key: String,
    title: String,
    #[schema(value_type = IssueStatus)]
    status: String,
    /// The rank's tier: 5 the exact key, 4 a longer key the query begins, 3 the title, 2 the body,
    /// 1 a comment. Hits come sorted by it, then by most recently updated.
    score: i32,
    matched_in: MatchedIn,
    /// A short plain-text excerpt of what matched (the title for a key or title match).
    snippet: String,
    updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<SearchHit> for HitView {
    fn from(h: SearchHit) -> Self {
        HitView {
            key: h.issue.key.to_string(),
            title: h.issue.title.as_str().to_owned(),
            status: h.issue.status.to_string(),
            score: h.score,
            matched_in: h.matched_in,
            snippet: h.snippet,
            updated_at: h.issue.updated_at,
        }
    }
}

/// Searches the caller's workspace: the issue whose key is the query, the keys it begins, then issues
/// with every word in the title, the body, a comment (most recently updated first within each).
#[utoipa::path(get, path = "/api/v1/issues/search", tag = "issues", params(SearchParams),
    responses((status = 200, body = SearchResults), (status = 422, body = ErrorBody)))]
pub(super) async fn search(
    State(state): State<AppState>,
    ApiCaller(caller): ApiCaller,
    AppQuery(params): AppQuery<SearchParams>,
) -> Result<Json<SearchResults>> {
    let query = parse(&params)?;
    let hits = state.store.search_issues(caller.ws.id, &query).await?;
    Ok(Json(SearchResults {
        hits: hits.into_iter().map(HitView::from).collect(),
    }))
}

/// The query string as a [`SearchQuery`]; every refusal names its parameter.
fn parse(params: &SearchParams) -> Result<SearchQuery, ValidationError> {
    let limit = params
        .limit
        .as_deref()
        .map(|raw| {
            raw.trim().parse::<i64>().map_err(|_| {
                ValidationError::new(
                    "limit",
                    format!("must be a whole number from 1 to 100, got {raw:?}"),
                )
            })
        })
        .transpose()?;
    let mut query = SearchQuery::parse(params.q.as_deref().unwrap_or_default(), limit)?;
    if let Some(statuses) = params.status.as_deref().filter(|s| !s.is_empty()) {
        query.statuses = statuses
            .split(',')
            .map(str::parse::<IssueStatus>)
            .collect::<Result<_, _>>()?;
    }
    Ok(query)
}
