//! The one error type every caller of frontrow sees: the JSON API answers
//! it as `{"error": code, "message": text, ...}`, server functions return it
//! to the islands, and the islands match on its kind (never on a status
//! number or a code string).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{CheckoutId, EventId};

/// A failure, as a client sees it: what happened (`kind`, with what the
/// UI needs to act on it) and a sentence for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[error("{message}")]
pub struct AppError {
    #[serde(flatten)]
    pub kind: ErrorKind,
    pub message: String,
}

/// Every error code of the API, with the facts that go with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum ErrorKind {
    /// 400: the request is not one this server understands.
    BadRequest,
    /// 400: the body is not valid JSON.
    InvalidJson,
    /// 401: sign in first.
    Unauthenticated,
    /// 401: wrong email or password.
    InvalidCredentials,
    /// 402: the card was refused; nothing was charged.
    PaymentDeclined {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkout_id: Option<CheckoutId>,
    },
    /// 402: the payment did not happen (lost before the provider, voided).
    PaymentFailed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkout_id: Option<CheckoutId>,
    },
    /// 403: this account may not do that.
    Forbidden,
    /// 403: a cross-site request carrying our session.
    Csrf,
    /// 403: the event's waiting room has not admitted this fan.
    NotAdmitted,
    /// 403: the sale has not opened yet.
    SaleNotOpen,
    /// 403: that code opens no presale of this event now (unknown,
    /// withdrawn, or outside its window).
    AccessCodeInvalid,
    /// 403: the presale code does not open these seats (their tier or
    /// section).
    AccessCodeScope,
    /// 409: every use of this presale code is taken (a hold that lapses
    /// gives its use back).
    AccessCodeUsedUp,
    /// 409: these seats came back and are offered to the waiting list first.
    SeatsForWaitingList,
    /// 409: the tier has seats free: hold them instead of joining its list.
    WaitlistNotNeeded,
    /// 409: this fan is on the event's waiting list already.
    AlreadyOnWaitlist,
    /// 403: the event requires a verified email to join its waiting room.
    EmailNotVerified,
    /// 403: that is not the email code we sent (or none is waiting: ask
    /// for a new one).
    WrongCode,
    /// 404: no such thing (or not yours to see).
    NotFound,
    /// 404: no ticket has this code.
    UnknownTicket,
    /// 405: the path does not take that method.
    MethodNotAllowed,
    /// 409: some seats are taken; nothing was held. `suggestion` is the best
    /// free block of as many seats nearest to the ones asked for, if any.
    SeatsUnavailable {
        conflict_seats: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        suggestion: Option<Vec<String>>,
    },
    /// 409: no block of that many adjacent free seats in the tier.
    NoSeatsTogether,
    /// 409: a standing area has fewer free places than asked for (this
    /// many, as far as this instance knows); nothing was held.
    NotEnoughPlaces { available: i64 },
    /// 409: the event has no waiting room.
    WaitingRoomOff,
    /// 409: another checkout is paying for this hold.
    CheckoutInProgress,
    /// 409: the idempotency key was used for a different request.
    IdempotencyKeyReused,
    /// 409: a request with this key is still in flight; retry shortly.
    IdempotencyKeyInUse,
    /// 409: an account with this email exists.
    EmailTaken,
    /// 409: the booking or ticket is already refunded.
    AlreadyRefunded,
    /// 409: a checked-in ticket cannot be refunded.
    TicketUsed,
    /// 409: this event's tickets cannot be cancelled by fans (staff can
    /// refund them).
    CancellationNotOffered,
    /// 409: fans could cancel until `closed_at`, no longer.
    CancellationClosed { closed_at: DateTime<Utc> },
    /// 409: the event is cancelled: nothing more is sold.
    EventCancelled,
    /// 409: this ticket was admitted already.
    AlreadyCheckedIn { checked_in_at: DateTime<Utc> },
    /// 409: this ticket was refunded (or its event cancelled).
    TicketRefunded,
    /// 409: this ticket is for another event.
    WrongEvent { event_id: EventId },
    /// 410: the hold lapsed, or its token is no longer the current one.
    HoldExpired {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkout_id: Option<CheckoutId>,
        /// Money taken for it was (or is being) given back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refunded: Option<bool>,
    },
    /// 413: the body is larger than this server accepts.
    PayloadTooLarge,
    /// 415: send JSON.
    UnsupportedMediaType,
    /// 422: a field is missing, malformed or out of range.
    InvalidInput,
    /// 422: more seats than the event allows per order.
    TooManySeats { max_seats_per_order: i32 },
    /// 429: slow down; try again after this many seconds.
    RateLimited { retry_after: u64 },
    /// 500: our fault; the response's `x-request-id` finds it in the log.
    Internal,
    /// 503: a service we depend on (the database) is down; try again soon.
    Unavailable,
    /// 503: more requests of this kind are in flight than the server takes
    /// on; nothing was done. Try again after this many seconds.
    Overloaded { retry_after: u64 },
    /// Client side only: no answer came back at all.
    Network,
}

impl ErrorKind {
    /// The HTTP status this kind is answered with.
    pub fn status(&self) -> u16 {
        use ErrorKind::*;
        match self {
            BadRequest | InvalidJson => 400,
            Unauthenticated | InvalidCredentials => 401,
            PaymentDeclined { .. } | PaymentFailed { .. } => 402,
            Forbidden | Csrf | NotAdmitted | SaleNotOpen | AccessCodeInvalid | AccessCodeScope | EmailNotVerified | WrongCode => 403,
            NotFound | UnknownTicket => 404,
            MethodNotAllowed => 405,
            SeatsUnavailable { .. }
            | NoSeatsTogether
            | NotEnoughPlaces { .. }
            | WaitingRoomOff
            | CheckoutInProgress
            | IdempotencyKeyReused
            | IdempotencyKeyInUse
            | EmailTaken
            | AccessCodeUsedUp
            | SeatsForWaitingList
            | WaitlistNotNeeded
            | AlreadyOnWaitlist
            | AlreadyRefunded
            | TicketUsed
            | CancellationNotOffered
            | CancellationClosed { .. }
            | EventCancelled
            | AlreadyCheckedIn { .. }
            | TicketRefunded
            | WrongEvent { .. } => 409,
            HoldExpired { .. } => 410,
            PayloadTooLarge => 413,
            UnsupportedMediaType => 415,
            InvalidInput | TooManySeats { .. } => 422,
            RateLimited { .. } => 429,
            Internal | Network => 500,
            Unavailable | Overloaded { .. } => 503,
        }
    }
}

impl AppError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }

    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    pub fn not_found() -> Self {
        Self::new(ErrorKind::NotFound, "no such resource")
    }

    pub fn unauthenticated() -> Self {
        Self::new(ErrorKind::Unauthenticated, "sign in first")
    }

    pub fn forbidden() -> Self {
        Self::new(ErrorKind::Forbidden, "your account may not do this")
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        Self::new(ErrorKind::RateLimited { retry_after: retry_after.max(1) }, "too many requests; slow down")
    }

    pub fn internal() -> Self {
        Self::new(ErrorKind::Internal, "something went wrong on our side")
    }

    pub fn overloaded(retry_after: u64) -> Self {
        Self::new(
            ErrorKind::Overloaded { retry_after: retry_after.max(1) },
            "too many fans are asking at this moment; nothing was done, please try again shortly",
        )
    }

    pub fn unavailable() -> Self {
        Self::new(ErrorKind::Unavailable, "the service is briefly unavailable; please try again in a few seconds")
    }
}

impl From<crate::ids::InvalidValue> for AppError {
    fn from(e: crate::ids::InvalidValue) -> Self {
        Self::invalid(e.0)
    }
}

#[cfg(feature = "server-fn")]
impl server_fn::error::FromServerFnError for AppError {
    type Encoder = server_fn::codec::JsonEncoding;

    fn from_server_fn_error(e: server_fn::error::ServerFnErrorErr) -> Self {
        use server_fn::error::ServerFnErrorErr as E;
        match e {
            E::Request(_) => Self::new(ErrorKind::Network, "The connection failed. Check your network and try again."),
            E::Args(m) | E::MissingArg(m) => Self::invalid(format!("invalid arguments: {m}")),
            // On the server this is the caller's arguments failing to parse;
            // in the browser, an answer we could not read.
            #[cfg(not(target_arch = "wasm32"))]
            E::Deserialization(m) => Self::invalid(format!("invalid arguments: {m}")),
            // The server answered something that is not one of our errors.
            other => {
                let mut e = Self::internal();
                e.message = format!("{} ({other})", e.message);
                e
            }
        }
    }
}

#[cfg(feature = "axum")]
impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        let status = axum::http::StatusCode::from_u16(self.status()).unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = match self.kind {
            ErrorKind::RateLimited { retry_after } | ErrorKind::Overloaded { retry_after } => Some(retry_after),
            ErrorKind::Unavailable => Some(2),
            _ => None,
        };
        let mut response = (status, axum::Json(self)).into_response();
        if let Some(secs) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_read_as_the_api_contract_says() {
        let e = AppError::new(ErrorKind::SeatsUnavailable { conflict_seats: vec!["A-1-1".into()], suggestion: None }, "taken");
        assert_eq!(serde_json::to_value(&e).unwrap(), json!({ "error": "seats_unavailable", "message": "taken", "conflict_seats": ["A-1-1"] }));
        assert_eq!(e.status(), 409);
        let back: AppError = serde_json::from_value(json!({ "error": "rate_limited", "message": "slow", "retry_after": 3 })).unwrap();
        assert_eq!(back.kind, ErrorKind::RateLimited { retry_after: 3 });
        assert_eq!(serde_json::to_value(AppError::internal()).unwrap()["error"], json!("internal"));
    }
}
