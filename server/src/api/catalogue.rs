//! The catalogue: events and seat maps.

use axum::extract::State;
use axum::Json;
use frontrow_engine::catalogue;
use frontrow_engine::model::{EventDetail, EventSummary, SeatMap};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiResult};
use super::extract::{ApiQuery, IdPath};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventSummary>,
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct SeatsQuery {
    /// Only this section's seats.
    pub section: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/events", responses((status = 200, body = EventList)))]
pub async fn list_events(State(state): State<AppState>) -> ApiResult<Json<EventList>> {
    Ok(Json(EventList { events: catalogue::list_events(&state.engine.pool).await? }))
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}", params(("event_id" = String, Path)),
    responses((status = 200, body = EventDetail), (status = 404)))]
pub async fn event_detail(State(state): State<AppState>, IdPath(event_id): IdPath) -> ApiResult<Json<EventDetail>> {
    // From this instance's live copy, not a query per request.
    Ok(Json(state.engine.board.snapshot(event_id).await?.detail()))
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}/seats", params(("event_id" = String, Path), SeatsQuery),
    responses((status = 200, body = SeatMap), (status = 404)))]
pub async fn seats(State(state): State<AppState>, IdPath(event_id): IdPath, ApiQuery(q): ApiQuery<SeatsQuery>) -> ApiResult<Json<SeatMap>> {
    if q.section.as_deref().is_some_and(|s| s.len() > catalogue::MAX_LABEL_LEN) {
        return Err(ApiError::invalid("section is at most 16 characters"));
    }
    Ok(Json(state.engine.board.snapshot(event_id).await?.seat_map(q.section.as_deref())))
}
