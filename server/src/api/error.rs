//! The one error type of the HTTP layer: every failure becomes
//! `{"error": code, "message": text, ...}` with the contract's status.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use frontrow_engine::EngineError;
use serde_json::{json, Map, Value};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub extra: Map<String, Value>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), extra: Map::new(), retry_after: None }
    }
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message)
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such resource")
    }
    pub fn unauthenticated() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", "sign in first")
    }
    pub fn forbidden() -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "your account may not do this")
    }
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", "too many requests; slow down");
        e.retry_after = Some(retry_after_secs.max(1));
        e
    }
    pub fn internal(context: impl std::fmt::Display) -> Self {
        // The detail goes to the log (with the request id), never to the client.
        tracing::error!(error = %context, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "something went wrong on our side")
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        use StatusCode as S;
        match e {
            EngineError::NotFound => ApiError::not_found(),
            EngineError::InvalidInput(m) => ApiError::invalid(m),
            EngineError::SeatsUnavailable { conflict_seats } => {
                ApiError::new(S::CONFLICT, "seats_unavailable", format!("not available: {}", conflict_seats.join(", ")))
                    .with("conflict_seats", json!(conflict_seats))
            }
            EngineError::TooManySeats { max } => {
                ApiError::new(S::UNPROCESSABLE_ENTITY, "too_many_seats", format!("at most {max} seats per order for this event"))
                    .with("max_seats_per_order", json!(max))
            }
            e @ EngineError::NoSeatsTogether { .. } => ApiError::new(S::CONFLICT, "no_seats_together", e.to_string()),
            e @ EngineError::NotAdmitted => ApiError::new(S::FORBIDDEN, "not_admitted", e.to_string()),
            e @ EngineError::WaitingRoomOff => ApiError::new(S::CONFLICT, "waiting_room_off", e.to_string()),
            e @ EngineError::SaleNotOpen => ApiError::new(S::FORBIDDEN, "sale_not_open", e.to_string()),
            e @ EngineError::HoldExpired => ApiError::new(S::GONE, "hold_expired", e.to_string()),
            e @ EngineError::CheckoutInProgress => ApiError::new(S::CONFLICT, "checkout_in_progress", e.to_string()),
            e @ EngineError::IdempotencyKeyReused => ApiError::new(S::CONFLICT, "idempotency_key_reused", e.to_string()),
            e @ EngineError::IdempotencyKeyInUse => ApiError::new(S::CONFLICT, "idempotency_key_in_use", e.to_string()),
            e @ EngineError::EmailTaken => ApiError::new(S::CONFLICT, "email_taken", e.to_string()),
            e @ EngineError::InvalidCredentials => ApiError::new(S::UNAUTHORIZED, "invalid_credentials", e.to_string()),
            EngineError::Forbidden { .. } => ApiError::forbidden(),
            e @ (EngineError::Database(_) | EngineError::Internal(_)) => ApiError::internal(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.code));
        body.insert("message".into(), json!(self.message));
        body.extend(self.extra);
        let mut response = (self.status, Json(Value::Object(body))).into_response();
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
