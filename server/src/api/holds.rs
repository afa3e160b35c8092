//! Holds, checkout and bookings: thin adapters over the engine's commands.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use frontrow_engine::sale::checkout::CheckoutRequest;
use frontrow_engine::Held;
use frontrow_model::{
    Booking, BookingId, CancelRequest, Cancellation, CheckoutAnswer, CheckoutId, CheckoutView, ErrorKind, EventId, Hold, HoldId, HoldStatus,
    HoldToken, IdempotencyKey, PaymentToken, SeatId, StandingPlaces, TicketChoices, User,
};
use frontrow_session::Pass;
use serde::Deserialize;
use tower_sessions::Session;
use utoipa::ToSchema;

use super::error::{ApiResult, AppError};
use super::extract::{ApiJson, CurrentUser, IdPath, KeyHeader};
use super::queue::limit_fan;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldBody {
    /// 1 to 100 distinct seats, all or none.
    #[schema(schema_with = seat_list_schema)]
    pub seat_ids: Vec<SeatId>,
}

fn seat_list_schema() -> utoipa::openapi::schema::Array {
    use utoipa::PartialSchema;
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(SeatId::schema())
        .min_items(Some(1))
        .max_items(Some(frontrow_model::MAX_SEATS_PER_REQUEST))
        .unique_items(true)
        .description(Some("1 to 100 distinct seats, all or none"))
        .build()
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BestAvailableBody {
    /// How many seats side by side.
    #[schema(minimum = 1, maximum = 100)]
    pub count: usize,
    /// The price tier to choose from.
    #[schema(min_length = 1, max_length = 32)]
    pub tier: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutBody {
    pub hold_token: HoldToken,
    pub payment_token: PaymentToken,
    /// The ticket type of each seat (seat id -> type name), where the event
    /// has types; a seat left out is of the first type sold in its tier.
    /// Never a price: the server prices them.
    #[serde(default)]
    pub ticket_types: TicketChoices,
}

fn admission_header(headers: &HeaderMap) -> ApiResult<Option<&str>> {
    headers
        .get("x-admission-token")
        .map(|v| v.to_str().map_err(|_| AppError::new(ErrorKind::NotAdmitted, "admission refused: malformed admission token")))
        .transpose()
}

/// What lets the fan hold: their admission to the event's waiting room,
/// from the `X-Admission-Token` header (none without one), and the presale
/// code their session entered for the event (`POST .../presale-code`).
async fn pass(state: &AppState, session: &Session, user: &User, event_id: EventId, headers: &HeaderMap) -> ApiResult<Pass> {
    Ok(frontrow_session::pass(session, &state.engine, event_id, user.user_id, admission_header(headers)?).await?)
}

/// A new hold is 201; the same request's hold again, 200.
fn hold_answer(held: Held) -> (StatusCode, Json<Hold>) {
    (if held.existing { StatusCode::OK } else { StatusCode::CREATED }, Json(held.hold))
}

#[utoipa::path(post, path = "/api/v1/events/{event_id}/holds",
    params(("event_id" = Uuid, Path), ("X-Admission-Token" = Option<String>, Header),
           ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "the same key and seats again answer the same hold while it lives")),
    request_body = HoldBody, security(("session" = [])),
    responses((status = 201, body = Hold),
              (status = 200, description = "this request was made before (same key, or exactly the seats of a live hold of yours): that hold", body = Hold),
              (status = 409, description = "seats_unavailable, with conflict_seats; or idempotency_key_reused", body = AppError),
              (status = 410, description = "hold_expired: the hold this key made has ended", body = AppError),
              (status = 422, description = "invalid_input (seat ids this event does not have) or too_many_seats (over the event's max_seats_per_order with this fan's other holds)", body = AppError),
              (status = 403, description = "sale_not_open (before the public sale, only a presale code entered with POST .../presale-code opens seats), not_admitted, access_code_invalid, access_code_scope or csrf", body = AppError)))]
pub async fn create_hold(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<HoldBody>,
) -> ApiResult<(StatusCode, Json<Hold>)> {
    limit_fan(&state, &user)?;
    let key = optional_key(&headers)?;
    let pass = pass(&state, &session, &user, event_id, &headers).await?;
    let held = state.engine.hold(user.user_id, event_id, &body.seat_ids, pass.access(), key.as_ref()).await?;
    Ok(hold_answer(held))
}

fn optional_key(headers: &HeaderMap) -> ApiResult<Option<IdempotencyKey>> {
    headers
        .get("idempotency-key")
        .map(|v| {
            let raw = v.to_str().map_err(|_| AppError::invalid("the Idempotency-Key header must be visible ASCII"))?;
            Ok(IdempotencyKey::parse(raw)?)
        })
        .transpose()
}

/// Best available: picks adjacent seats in one row of the tier and holds them.
#[utoipa::path(post, path = "/api/v1/events/{event_id}/holds/best", params(("event_id" = Uuid, Path), ("X-Admission-Token" = Option<String>, Header)),
    request_body = BestAvailableBody, security(("session" = [])),
    responses((status = 201, body = Hold), (status = 409, description = "no_seats_together", body = AppError),
              (status = 422, description = "invalid_input or too_many_seats", body = AppError),
              (status = 403, description = "sale_not_open (before the public sale, only a presale code entered with POST .../presale-code opens seats), not_admitted, access_code_invalid, access_code_scope or csrf", body = AppError)))]
pub async fn hold_best(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BestAvailableBody>,
) -> ApiResult<(StatusCode, Json<Hold>)> {
    limit_fan(&state, &user)?;
    let pass = pass(&state, &session, &user, event_id, &headers).await?;
    let hold = state.engine.hold_best(user.user_id, event_id, body.count, &body.tier, pass.access()).await?;
    Ok((StatusCode::CREATED, Json(hold)))
}

/// Places of a standing area by count: any free ones, all or none.
#[utoipa::path(post, path = "/api/v1/events/{event_id}/holds/standing",
    params(("event_id" = Uuid, Path), ("X-Admission-Token" = Option<String>, Header),
           ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$", description = "the same key and request again answer the same hold while it lives")),
    request_body = StandingPlaces, security(("session" = [])),
    responses((status = 201, body = Hold),
              (status = 200, description = "this request was made before (same key): that hold", body = Hold),
              (status = 409, description = "not_enough_places (with how many are left), or idempotency_key_reused", body = AppError),
              (status = 410, description = "hold_expired: the hold this key made has ended", body = AppError),
              (status = 404, description = "not_found: no such event, or no such standing area in it", body = AppError),
              (status = 422, description = "invalid_input or too_many_seats (over the event's max_seats_per_order with this fan's other holds)", body = AppError),
              (status = 403, description = "sale_not_open (before the public sale, only a presale code entered with POST .../presale-code opens seats), not_admitted, access_code_invalid, access_code_scope or csrf", body = AppError)))]
pub async fn hold_places(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<StandingPlaces>,
) -> ApiResult<(StatusCode, Json<Hold>)> {
    limit_fan(&state, &user)?;
    let key = optional_key(&headers)?;
    let pass = pass(&state, &session, &user, event_id, &headers).await?;
    let held = state.engine.hold_places(user.user_id, event_id, &body, pass.access(), key.as_ref()).await?;
    Ok(hold_answer(held))
}

#[utoipa::path(get, path = "/api/v1/holds/{hold_id}", params(("hold_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = HoldStatus)))]
pub async fn get_hold(State(state): State<AppState>, CurrentUser(user): CurrentUser, IdPath(hold_id): IdPath<HoldId>) -> ApiResult<Json<HoldStatus>> {
    Ok(Json(state.engine.hold_status(user.user_id, hold_id).await?))
}

#[utoipa::path(delete, path = "/api/v1/holds/{hold_id}", params(("hold_id" = Uuid, Path), ("X-Hold-Token" = String, Header)),
    security(("session" = [])),
    responses((status = 204), (status = 410, description = "hold_expired", body = AppError), (status = 422, description = "no X-Hold-Token", body = AppError)))]
pub async fn release_hold(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(hold_id): IdPath<HoldId>,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    let raw = headers.get("x-hold-token").ok_or_else(|| AppError::invalid("the X-Hold-Token header is required"))?;
    let raw = raw.to_str().map_err(|_| AppError::invalid("the X-Hold-Token header must be visible ASCII"))?;
    // A token that cannot be a hold token is simply not the current one.
    let token = HoldToken::parse(raw).map_err(|_| AppError::from(frontrow_engine::EngineError::HoldExpired))?;
    state.engine.release(user.user_id, hold_id, &token).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/holds/{hold_id}/checkout", params(("hold_id" = Uuid, Path), ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    request_body = CheckoutBody, security(("session" = [])),
    responses((status = 201, body = Booking), (status = 202, description = "payment_pending: follow GET /api/v1/checkouts/{checkout_id}"),
              (status = 402, description = "payment_declined or payment_failed", body = AppError),
              (status = 410, description = "hold_expired", body = AppError),
              (status = 409, description = "idempotency_key_reused, idempotency_key_in_use or checkout_in_progress", body = AppError)))]
pub async fn checkout(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(hold_id): IdPath<HoldId>,
    KeyHeader(idempotency_key): KeyHeader,
    ApiJson(body): ApiJson<CheckoutBody>,
) -> ApiResult<Response> {
    let outcome = state
        .engine
        .checkout(CheckoutRequest {
            user_id: user.user_id,
            hold_id,
            hold_token: &body.hold_token,
            payment_token: &body.payment_token,
            idempotency_key: &idempotency_key,
            ticket_types: &body.ticket_types,
        })
        .await?;
    if matches!(outcome, frontrow_engine::sale::checkout::CheckoutOutcome::Confirmed { .. }) {
        state.engine.fail_point(frontrow_engine::FailPoint::AbortAfterCheckoutCommit);
    }
    Ok(match outcome.into_answer()? {
        CheckoutAnswer::Confirmed { booking } => (StatusCode::CREATED, Json(booking)).into_response(),
        CheckoutAnswer::PaymentPending { checkout_id } => {
            (StatusCode::ACCEPTED, Json(serde_json::json!({ "checkout_id": checkout_id, "status": "payment_pending" }))).into_response()
        }
    })
}

#[utoipa::path(get, path = "/api/v1/checkouts/{checkout_id}", params(("checkout_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = CheckoutView)))]
pub async fn get_checkout(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(id): IdPath<CheckoutId>,
) -> ApiResult<Json<CheckoutView>> {
    Ok(Json(state.engine.checkout_view(user.user_id, id).await?))
}

#[utoipa::path(get, path = "/api/v1/bookings/{booking_id}", params(("booking_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = Booking)))]
pub async fn get_booking(State(state): State<AppState>, CurrentUser(user): CurrentUser, IdPath(id): IdPath<BookingId>) -> ApiResult<Json<Booking>> {
    Ok(Json(state.engine.booking_for(&user, id).await?))
}

/// A fan cancels tickets of their booking (`ticket_ids`, or every valid
/// one) while the event's refund policy allows: each comes back at its
/// price less what the policy keeps, once, however often this is sent.
#[utoipa::path(post, path = "/api/v1/bookings/{booking_id}/cancel",
    params(("booking_id" = Uuid, Path), ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    request_body = CancelRequest, security(("session" = [])),
    responses((status = 200, body = Cancellation),
              (status = 409, description = "cancellation_not_offered, cancellation_closed (with closed_at), already_refunded or ticket_used", body = AppError)))]
pub async fn cancel_tickets(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(id): IdPath<BookingId>,
    KeyHeader(key): KeyHeader,
    ApiJson(body): ApiJson<CancelRequest>,
) -> ApiResult<Json<Cancellation>> {
    Ok(Json(state.engine.cancel_tickets(&user, id, &body, &key).await?))
}
