//! The waiting list over HTTP: a fan joins, reads their place or offer,
//! leaves or declines; staff read the list, pause it, set the offer window
//! and offer by hand. Thin adapters over the engine.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use frontrow_model::{EventId, HandOffer, HoldId, JoinWaitlist, Waitlist, WaitlistEntry, WaitlistSettings, WaitlistState};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, AppError};
use super::extract::{ApiJson, ApiQuery, CurrentUser, IdPath, StaffUser};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct WaitlistEntries {
    pub entries: Vec<WaitlistEntry>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LeftWaitlist {
    /// `waiting`: taken off the list; `passed`: the offer was declined and
    /// its seats go to the next fan; otherwise the entry as it was.
    pub state: WaitlistState,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OfferMade {
    /// The fan's hold of the offered seats.
    pub hold_id: HoldId,
}

/// Joins the event's waiting list for `quantity` seats of a tier that has
/// none free. Seats of that tier that come back are offered in the order
/// fans joined, each offer a hold kept for the fan (mailed, and shown on
/// the event's page and the account page).
#[utoipa::path(post, path = "/api/v1/events/{event_id}/waitlist", params(("event_id" = Uuid, Path)),
    request_body = JoinWaitlist, security(("session" = [])),
    responses((status = 201, body = WaitlistEntry),
              (status = 403, description = "sale_not_open", body = AppError),
              (status = 404, description = "not_found: no such event or tier", body = AppError),
              (status = 409, description = "waitlist_not_needed: the tier has seats free; already_on_waitlist; event_cancelled", body = AppError),
              (status = 422, description = "invalid_input: quantity over the per-order limit", body = AppError)))]
pub async fn join(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<JoinWaitlist>,
) -> ApiResult<(StatusCode, Json<WaitlistEntry>)> {
    Ok((StatusCode::CREATED, Json(state.engine.join_waitlist(&user, event_id, &body).await?)))
}

/// The fan's entry: their place while waiting, the offer while it is open.
#[utoipa::path(get, path = "/api/v1/events/{event_id}/waitlist", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = WaitlistEntry), (status = 404, description = "not_found: not on this event's list", body = AppError)))]
pub async fn mine(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
) -> ApiResult<Json<WaitlistEntry>> {
    Ok(Json(state.engine.waitlist_entry(user.user_id, event_id).await?.ok_or_else(AppError::not_found)?))
}

/// Leaves the list while waiting, or declines the open offer.
#[utoipa::path(delete, path = "/api/v1/events/{event_id}/waitlist", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = LeftWaitlist), (status = 404, description = "not_found: not on this event's list", body = AppError)))]
pub async fn leave(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
) -> ApiResult<Json<LeftWaitlist>> {
    Ok(Json(LeftWaitlist { state: state.engine.leave_waitlist(user.user_id, event_id).await? }))
}

/// Every waiting list the fan is on.
#[utoipa::path(get, path = "/api/v1/me/waitlist", security(("session" = [])), responses((status = 200, body = WaitlistEntries)))]
pub async fn all_mine(State(state): State<AppState>, CurrentUser(user): CurrentUser) -> ApiResult<Json<WaitlistEntries>> {
    Ok(Json(WaitlistEntries { entries: state.engine.waitlist_entries(user.user_id, None).await? }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitlistQuery {
    /// Lines shown, from the first (default 500); the figures count them all.
    #[param(minimum = 1, maximum = 5000)]
    pub limit: Option<i64>,
}

/// The event's list for staff: waiting fans in order, then the offers.
#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/waitlist", params(("event_id" = Uuid, Path), WaitlistQuery), security(("session" = [])),
    responses((status = 200, body = Waitlist), (status = 404, description = "not_found: no such event", body = AppError)))]
pub async fn list(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(query): ApiQuery<WaitlistQuery>,
) -> ApiResult<Json<Waitlist>> {
    Ok(Json(state.engine.waitlist(&staff, event_id, query.limit).await?))
}

/// Pauses or resumes the list (paused: seats that come back are free to
/// everyone), or sets how long offers from now on last.
#[utoipa::path(patch, path = "/api/v1/admin/events/{event_id}/waitlist", params(("event_id" = Uuid, Path)),
    request_body = WaitlistSettings, security(("session" = [])),
    responses((status = 200, body = Waitlist), (status = 404, description = "not_found: no such event", body = AppError),
              (status = 422, description = "invalid_input: offer_minutes out of range", body = AppError)))]
pub async fn configure(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<WaitlistSettings>,
) -> ApiResult<Json<Waitlist>> {
    Ok(Json(state.engine.set_waitlist(&staff, event_id, &body).await?))
}

/// Offers seats to one fan on the list now, out of turn: the free seats
/// named, or the first free ones of the fan's tier.
#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/waitlist/offers", params(("event_id" = Uuid, Path)),
    request_body = HandOffer, security(("session" = [])),
    responses((status = 201, body = OfferMade),
              (status = 404, description = "not_found: no such fan on this list", body = AppError),
              (status = 409, description = "seats_unavailable: a seat named is not free; no_seats_together: too few free in the tier", body = AppError),
              (status = 422, description = "invalid_input: the fan has had an offer already", body = AppError)))]
pub async fn offer(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<HandOffer>,
) -> ApiResult<(StatusCode, Json<OfferMade>)> {
    Ok((StatusCode::CREATED, Json(OfferMade { hold_id: state.engine.offer_by_hand(&staff, event_id, &body).await? })))
}
