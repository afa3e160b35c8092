//! Presales over HTTP: a fan enters a code (remembered in their session for
//! the event's holds); staff make, list, export and withdraw batches of
//! codes. Thin adapters over the engine.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Json};
use frontrow_engine::accounts::sign_in::ClientAddress;
use frontrow_model::{AccessCodeBatch, AccessCodeBatchId, CreatedAccessCodes, EventId, NewAccessCodes, PresaleCodeEntry, PresalePass};
use serde::Serialize;
use tower_sessions::Session;
use utoipa::ToSchema;

use super::error::{ApiResult, AppError};
use super::extract::{ApiJson, CurrentUser, IdPath, StaffUser};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct AccessCodeBatchList {
    pub batches: Vec<AccessCodeBatch>,
}

/// Enters a presale code for the event. A code whose presale is open or
/// still to come is remembered in the session: until the public sale, this
/// fan's holds of the event present it (the hold decides its window, seats
/// and uses left), and where the waiting room is on they queue for the
/// presale.
#[utoipa::path(post, path = "/api/v1/events/{event_id}/presale-code", params(("event_id" = Uuid, Path)),
    request_body = PresaleCodeEntry, security(("session" = [])),
    responses((status = 200, description = "the code opens a presale now or later (from starts_at): what it lets this fan hold", body = PresalePass),
              (status = 403, description = "access_code_invalid: no such code for this event, withdrawn, or its window over; or csrf", body = AppError),
              (status = 429, description = "rate_limited: too many wrong codes from this fan or address; wait retry_after seconds", body = AppError)))]
pub async fn enter_code(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
    address: Option<Extension<ClientAddress>>,
    ApiJson(body): ApiJson<PresaleCodeEntry>,
) -> ApiResult<Json<PresalePass>> {
    let address = address.map(|Extension(ClientAddress(ip))| ip);
    Ok(Json(frontrow_session::enter_presale_code(&session, &state.engine, &user, event_id, &body.code, address).await?))
}

/// Makes a batch of presale codes: one shared `code`, or `count` unique
/// random ones (answered here once, and in the batch's CSV). Besides the
/// schema (422 names the rule broken): give `code` or `count`, not both;
/// `tiers` and `sections` are the event's own; the window ends by the
/// public sale's opening and has not passed.
#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/access-codes", params(("event_id" = Uuid, Path)),
    request_body = NewAccessCodes, security(("session" = [])),
    responses((status = 201, body = CreatedAccessCodes),
              (status = 409, description = "event_cancelled", body = AppError),
              (status = 422, description = "invalid_input: a rule between fields, a tier or section the event lacks, a shared code already in use", body = AppError)))]
pub async fn create_codes(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<NewAccessCodes>,
) -> ApiResult<(StatusCode, Json<CreatedAccessCodes>)> {
    Ok((StatusCode::CREATED, Json(state.engine.create_access_codes(&staff, event_id, &body).await?)))
}

/// The event's batches of presale codes, each with its uses now.
#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/access-codes", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = AccessCodeBatchList)))]
pub async fn list_codes(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
) -> ApiResult<Json<AccessCodeBatchList>> {
    Ok(Json(AccessCodeBatchList { batches: state.engine.access_code_batches(&staff, event_id).await? }))
}

/// A batch's codes, one row each with its uses now.
#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/access-codes/{batch_id}/codes.csv",
    params(("event_id" = Uuid, Path), ("batch_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn codes_csv(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath((event_id, batch_id)): IdPath<(EventId, AccessCodeBatchId)>,
) -> ApiResult<Response> {
    Ok(super::admin::csv(format!("codes-{batch_id}.csv"), state.engine.access_codes_csv(&staff, event_id, batch_id).await?))
}

/// Withdraws a batch: its codes open nothing from now on (holds made with
/// them stand). Withdrawing again changes nothing.
#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/access-codes/{batch_id}/revoke",
    params(("event_id" = Uuid, Path), ("batch_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = AccessCodeBatch)))]
pub async fn revoke_codes(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath((event_id, batch_id)): IdPath<(EventId, AccessCodeBatchId)>,
) -> ApiResult<Json<AccessCodeBatch>> {
    Ok(Json(state.engine.revoke_access_codes(&staff, event_id, batch_id).await?))
}
