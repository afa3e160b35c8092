//! The catalogue: events and seat maps, from this instance's memory.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::Json;
use frontrow_model::{EventDetail, EventId, EventPage, EventSearch, SeatMap};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiResult, AppError, ErrorKind};
use super::extract::{ApiQuery, IdPath};
use crate::prepared::Prepared;
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SeatsQuery {
    /// Only this section's seats.
    #[param(min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]+$")]
    pub section: Option<String>,
}

/// The catalogue, searched and paged from this instance's memory: the
/// same answer the home page gives for the same parameters.
#[utoipa::path(get, path = "/api/v1/events", params(EventSearch),
    responses((status = 200, body = EventPage), (status = 422, description = "invalid_input", body = AppError)))]
pub async fn list_events(State(state): State<AppState>, ApiQuery(search): ApiQuery<EventSearch>) -> ApiResult<Json<EventPage>> {
    Ok(Json(state.engine.search_events(&search).await?))
}

/// A published event's board, from this instance's live copy (not a query
/// per request); unpublished events are unknown to fans.
async fn published(state: &AppState, event_id: EventId) -> ApiResult<frontrow_engine::venue::live::BoardSnapshot> {
    let board = state.engine.board().snapshot(event_id).await?;
    if !board.event.published {
        return Err(AppError::not_found());
    }
    Ok(board)
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}", params(("event_id" = Uuid, Path)),
    responses((status = 200, body = EventDetail)))]
pub async fn event_detail(State(state): State<AppState>, IdPath(event_id): IdPath<EventId>) -> ApiResult<Json<EventDetail>> {
    Ok(Json(published(&state, event_id).await?.detail()))
}

/// The seat list as prepared bytes: rendered (and compressed) once per
/// revision of the board, 304 to a reader who already has it.
#[utoipa::path(get, path = "/api/v1/events/{event_id}/seats", params(("event_id" = Uuid, Path), SeatsQuery),
    responses((status = 200, body = SeatMap, headers(("ETag" = String, description = "the map's revision"))),
              (status = 304, description = "the map named by If-None-Match is still current")))]
pub async fn seats(
    State(state): State<AppState>,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(q): ApiQuery<SeatsQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if q.section.as_deref().is_some_and(|s| s.chars().count() > frontrow_engine::venue::catalogue::MAX_LABEL_LEN) {
        return Err(AppError::invalid("section is at most 16 characters"));
    }
    let live = state.engine.board().event(event_id).await?;
    if !live.facts().is_some_and(|e| e.published) {
        return Err(AppError::not_found());
    }
    // Most reads find the bytes of the current revision ready: naming it is
    // enough, the map is copied only to render.
    let revision = live.revision().ok_or_else(AppError::not_found)?;
    let layout = live.layout().ok_or_else(AppError::not_found)?;
    let section = q.section;
    if section.as_deref().is_some_and(|name| !layout.sections.iter().any(|s| s.name == name)) {
        return Err(AppError::new(ErrorKind::NotFound, "this event has no such section"));
    }
    let resource = format!("seats/{event_id}/{}", section.as_deref().unwrap_or_default());
    let render = move || {
        // The bytes are labelled with the revision of the snapshot they are
        // made from (it may be newer than the one asked for).
        let board = live.snapshot().ok_or_else(|| std::io::Error::other("the board lost its map"))?;
        let body = serde_json::to_vec(&board.seat_map(section.as_deref(), false))?;
        Prepared::new(board.revision, "application/json", body)
    };
    let prepared = state.prepared.get(&resource, &revision, render).await;
    let prepared = prepared.map_err(|e| {
        tracing::error!(error = %e, "could not prepare a seat map");
        AppError::internal()
    })?;
    Ok(prepared.respond(&headers))
}
