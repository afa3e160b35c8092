//! Holds, checkout and bookings.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use frontrow_engine::checkout::{self, CheckoutOutcome, CheckoutRequest, CheckoutView};
use frontrow_engine::holds;
use frontrow_engine::model::{Booking, Hold, HoldStatus, Ticket};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tower_sessions::Session;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{ApiJson, CurrentUser, IdPath};
use super::queue::{admission_from_header, limit_fan};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct HoldBody {
    pub seat_ids: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct BestAvailableBody {
    /// How many seats side by side.
    pub count: usize,
    /// The price tier to choose from.
    pub tier: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CheckoutBody {
    pub hold_token: String,
    pub payment_token: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConfirmedBooking {
    pub booking_id: Uuid,
    pub event_id: Uuid,
    pub seat_ids: Vec<String>,
    pub total_cents: i64,
    pub status: String,
    pub tickets: Vec<Ticket>,
}

impl From<Booking> for ConfirmedBooking {
    fn from(b: Booking) -> Self {
        Self { booking_id: b.booking_id, event_id: b.event_id, seat_ids: b.seat_ids, total_cents: b.total_cents, status: b.status, tickets: b.tickets }
    }
}

fn required_header<'a>(headers: &'a HeaderMap, name: &str) -> ApiResult<&'a str> {
    let value = headers.get(name).ok_or_else(|| ApiError::invalid(format!("the {name} header is required")))?;
    value.to_str().map_err(|_| ApiError::invalid(format!("the {name} header must be visible ASCII")))
}

#[utoipa::path(post, path = "/api/v1/events/{event_id}/holds", params(("event_id" = String, Path)), request_body = HoldBody,
    responses((status = 201, body = Hold), (status = 409, description = "seats_unavailable, with conflict_seats"),
              (status = 422, description = "invalid_input or too_many_seats"), (status = 401), (status = 403, description = "sale_not_open or not_admitted"),
              (status = 404), (status = 429)))]
pub async fn create_hold(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath,
    headers: HeaderMap,
    ApiJson(body): ApiJson<HoldBody>,
) -> ApiResult<(StatusCode, Json<Hold>)> {
    limit_fan(&state, &user)?;
    let admitted = admission_from_header(&state, &session, &headers, &user, event_id).await?;
    let hold = holds::hold_seats_admitted(&state.engine.pool, event_id, user.user_id, &body.seat_ids, admitted).await?;
    Ok((StatusCode::CREATED, Json(hold)))
}

/// Best available: picks adjacent seats in one row of the tier and holds them.
#[utoipa::path(post, path = "/api/v1/events/{event_id}/holds/best", params(("event_id" = String, Path)), request_body = BestAvailableBody,
    responses((status = 201, body = Hold), (status = 409, description = "no_seats_together"),
              (status = 422, description = "invalid_input or too_many_seats"), (status = 401), (status = 403, description = "sale_not_open or not_admitted"),
              (status = 404), (status = 429)))]
pub async fn hold_best(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath,
    headers: HeaderMap,
    ApiJson(body): ApiJson<BestAvailableBody>,
) -> ApiResult<(StatusCode, Json<Hold>)> {
    limit_fan(&state, &user)?;
    let admitted = admission_from_header(&state, &session, &headers, &user, event_id).await?;
    let hold = frontrow_engine::best::hold_best(&state.engine.pool, event_id, user.user_id, body.count, &body.tier, admitted).await?;
    Ok((StatusCode::CREATED, Json(hold)))
}

#[utoipa::path(get, path = "/api/v1/holds/{hold_id}", params(("hold_id" = String, Path)),
    responses((status = 200, body = HoldStatus), (status = 404)))]
pub async fn get_hold(State(state): State<AppState>, CurrentUser(user): CurrentUser, IdPath(hold_id): IdPath) -> ApiResult<Json<HoldStatus>> {
    Ok(Json(holds::hold_status(&state.engine.pool, user.user_id, hold_id).await?))
}

#[utoipa::path(delete, path = "/api/v1/holds/{hold_id}", params(("hold_id" = String, Path), ("X-Hold-Token" = String, Header)),
    responses((status = 204), (status = 410, description = "hold_expired"), (status = 404)))]
pub async fn release_hold(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(hold_id): IdPath,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    let token = required_header(&headers, "x-hold-token")?;
    holds::release_hold(&state.engine.pool, user.user_id, hold_id, token).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/holds/{hold_id}/checkout", params(("hold_id" = String, Path), ("Idempotency-Key" = String, Header)),
    request_body = CheckoutBody,
    responses((status = 201, body = ConfirmedBooking), (status = 202, description = "payment_pending"),
              (status = 402, description = "payment_declined"), (status = 410, description = "hold_expired"),
              (status = 409, description = "idempotency_key_reused or idempotency_key_in_use"), (status = 404)))]
pub async fn checkout(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    IdPath(hold_id): IdPath,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CheckoutBody>,
) -> ApiResult<Response> {
    let idempotency_key = required_header(&headers, "idempotency-key")?;
    let outcome = checkout::checkout(
        &state.engine,
        CheckoutRequest {
            user_id: user.user_id,
            hold_id,
            hold_token: &body.hold_token,
            payment_token: &body.payment_token,
            idempotency_key,
        },
    )
    .await?;
    if matches!(outcome, CheckoutOutcome::Confirmed { .. })
        && state.settings.failpoint.as_deref() == Some("abort_after_checkout_commit")
    {
        tracing::error!("failpoint abort_after_checkout_commit: dying before the reply");
        std::process::abort();
    }
    Ok(outcome_response(outcome))
}

fn outcome_response(outcome: CheckoutOutcome) -> Response {
    match outcome {
        CheckoutOutcome::Confirmed { booking } => (StatusCode::CREATED, Json(ConfirmedBooking::from(booking))).into_response(),
        CheckoutOutcome::PaymentPending { checkout_id } => {
            (StatusCode::ACCEPTED, Json(json!({ "checkout_id": checkout_id, "status": "payment_pending" }))).into_response()
        }
        CheckoutOutcome::Declined { checkout_id, reason } => {
            ApiError::new(StatusCode::PAYMENT_REQUIRED, "payment_declined", format!("payment declined: {reason}; the hold is still yours until it expires"))
                .with("checkout_id", json!(checkout_id))
                .into_response()
        }
        CheckoutOutcome::HoldExpired { checkout_id, refunded } => {
            let message = if refunded {
                "the hold expired before the payment settled; the payment has been refunded"
            } else {
                "the hold has expired or its token is no longer current; nothing was charged"
            };
            ApiError::new(StatusCode::GONE, "hold_expired", message)
                .with("checkout_id", json!(checkout_id))
                .with("refunded", json!(refunded))
                .into_response()
        }
        CheckoutOutcome::Failed { checkout_id, reason } => {
            ApiError::new(StatusCode::PAYMENT_REQUIRED, "payment_failed", reason).with("checkout_id", json!(checkout_id)).into_response()
        }
    }
}

#[utoipa::path(get, path = "/api/v1/checkouts/{checkout_id}", params(("checkout_id" = String, Path)),
    responses((status = 200, body = CheckoutView), (status = 404)))]
pub async fn get_checkout(State(state): State<AppState>, CurrentUser(user): CurrentUser, IdPath(id): IdPath) -> ApiResult<Json<CheckoutView>> {
    Ok(Json(checkout::checkout_view(&state.engine.pool, user.user_id, id).await?))
}

#[utoipa::path(get, path = "/api/v1/bookings/{booking_id}", params(("booking_id" = String, Path)),
    responses((status = 200, body = Booking), (status = 404)))]
pub async fn get_booking(State(state): State<AppState>, CurrentUser(user): CurrentUser, IdPath(id): IdPath) -> ApiResult<Json<Booking>> {
    Ok(Json(checkout::booking_for(&state.engine.pool, id, user.user_id, user.role.is_staff()).await?))
}
