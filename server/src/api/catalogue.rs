//! The catalogue: events and seat maps, from this instance's memory.

use axum::extract::State;
use axum::Json;
use frontrow_model::{EventDetail, EventSummary, SeatMap};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{AppError, ApiResult};
use super::extract::{ApiQuery, IdPath};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventSummary>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SeatsQuery {
    /// Only this section's seats.
    #[param(max_length = 16)]
    pub section: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/events", responses((status = 200, body = EventList)))]
pub async fn list_events(State(state): State<AppState>) -> ApiResult<Json<EventList>> {
    Ok(Json(EventList { events: state.engine.events().await? }))
}

/// A published event's board, from this instance's live copy (not a query
/// per request); unpublished events are unknown to fans.
async fn published(state: &AppState, event_id: uuid::Uuid) -> ApiResult<frontrow_engine::live::BoardSnapshot> {
    let board = state.engine.board().snapshot(event_id).await?;
    if !board.event.published {
        return Err(AppError::not_found());
    }
    Ok(board)
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}", params(("event_id" = Uuid, Path)),
    responses((status = 200, body = EventDetail)))]
pub async fn event_detail(State(state): State<AppState>, IdPath(event_id): IdPath) -> ApiResult<Json<EventDetail>> {
    Ok(Json(published(&state, event_id).await?.detail()))
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}/seats", params(("event_id" = Uuid, Path), SeatsQuery),
    responses((status = 200, body = SeatMap)))]
pub async fn seats(State(state): State<AppState>, IdPath(event_id): IdPath, ApiQuery(q): ApiQuery<SeatsQuery>) -> ApiResult<Json<SeatMap>> {
    if q.section.as_deref().is_some_and(|s| s.len() > frontrow_engine::catalogue::MAX_LABEL_LEN) {
        return Err(AppError::invalid("section is at most 16 characters"));
    }
    Ok(Json(published(&state, event_id).await?.seat_map(q.section.as_deref(), false)))
}
