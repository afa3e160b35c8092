//! Box office: create events, audit the invariants.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use frontrow_model::{AuditReport, CreatedEvent, NewEvent};

use super::error::ApiResult;
use super::extract::{ApiJson, IdPath, StaffUser};
use crate::state::AppState;

#[utoipa::path(post, path = "/api/v1/admin/events", request_body = NewEvent, security(("session" = [])),
    responses((status = 201, body = CreatedEvent)))]
pub async fn create_event(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiJson(body): ApiJson<NewEvent>,
) -> ApiResult<(StatusCode, Json<CreatedEvent>)> {
    let created = state.engine.create_event(&body, Some(staff.user_id)).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/audit", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = AuditReport)))]
pub async fn audit_event(State(state): State<AppState>, StaffUser(_): StaffUser, IdPath(event_id): IdPath) -> ApiResult<Json<AuditReport>> {
    // 404 for an unknown event rather than an all-zero report.
    state.engine.board().event(event_id).await?;
    Ok(Json(state.engine.audit(Some(event_id)).await?))
}
