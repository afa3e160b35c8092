//! Checkout: from a hold to a booking, with the payment taken in between.
//!
//! 1. Claim the fan's idempotency key (or replay / refuse / resume; `key`).
//! 2. Short transaction: fence on the hold token, move the seats to
//!    `payment_pending`, record the payment intent.
//! 3. Call the provider, outside any transaction, with an idempotency key.
//! 4. Short transaction: commit the sale, fenced by the same token; the
//!    unique live ticket per seat is the last backstop.
//!
//! Steps 2 and 4 are each one database call shared by the checkouts that
//! arrive together (`batch`).
//! Any outcome not known in time is left to reconciliation (`reconcile`).

use frontrow_model::{
    AppError, Booking, CheckoutAnswer, CheckoutId, CheckoutStatus, CheckoutView, ErrorKind, HoldId, HoldToken, IdempotencyKey, PaymentToken,
    TicketChoices, UserId,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::db::{CheckoutState, PaymentState};
use crate::error::{EngineError, Result};
use crate::payment::{PaymentRequest, PaymentStatus, ProviderError, CASH};
use crate::sale::bookings;
use crate::sale::seats;
use crate::tokens::sha256_hex;
use crate::Engine;

#[derive(Debug, Clone)]
pub struct CheckoutRequest<'a> {
    pub user_id: UserId,
    pub hold_id: HoldId,
    pub hold_token: &'a HoldToken,
    pub payment_token: &'a PaymentToken,
    pub idempotency_key: &'a IdempotencyKey,
    /// The ticket type of each seat (the rest: the first sold in its tier).
    pub ticket_types: &'a TicketChoices,
}

/// The answer to a checkout, stored with the idempotency key and replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CheckoutOutcome {
    Confirmed { booking: Booking },
    PaymentPending { checkout_id: CheckoutId },
    Declined { checkout_id: CheckoutId, reason: String },
    HoldExpired { checkout_id: CheckoutId, refunded: bool },
    Failed { checkout_id: CheckoutId, reason: String },
}

impl CheckoutOutcome {
    /// The answer a client gets: a booking, a pending payment to follow, or
    /// the error that says why not.
    pub fn into_answer(self) -> std::result::Result<CheckoutAnswer, AppError> {
        match self {
            CheckoutOutcome::Confirmed { booking } => Ok(CheckoutAnswer::Confirmed { booking }),
            CheckoutOutcome::PaymentPending { checkout_id } => Ok(CheckoutAnswer::PaymentPending { checkout_id }),
            CheckoutOutcome::Declined { checkout_id, reason } => Err(AppError::new(
                ErrorKind::PaymentDeclined { checkout_id: Some(checkout_id) },
                format!("payment declined: {reason}; the hold is still yours until it expires"),
            )),
            CheckoutOutcome::HoldExpired { checkout_id, refunded } => Err(AppError::new(
                ErrorKind::HoldExpired { checkout_id: Some(checkout_id), refunded: Some(refunded) },
                if refunded {
                    "the hold expired before the payment settled; the payment has been refunded"
                } else {
                    "the hold has expired or its token is no longer current; nothing was charged"
                },
            )),
            CheckoutOutcome::Failed { checkout_id, reason } => {
                Err(AppError::new(ErrorKind::PaymentFailed { checkout_id: Some(checkout_id) }, reason))
            }
        }
    }
}

impl Engine {
    /// Pays for a hold and turns it into a booking; idempotent by the
    /// request's key (a retry gets the first answer).
    pub async fn checkout(&self, req: CheckoutRequest<'_>) -> Result<CheckoutOutcome> {
        checkout(self, req).await
    }

    /// Where a checkout stands now (for its owner).
    pub async fn checkout_view(&self, fan: UserId, checkout_id: CheckoutId) -> Result<CheckoutView> {
        let c = sqlx::query!(
            r#"SELECT state AS "state: CheckoutState", response_body, booking_id FROM checkouts WHERE checkout_id = $1 AND user_id = $2"#,
            checkout_id.as_uuid(),
            fan.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let booking = match c.booking_id {
            Some(id) => bookings::load(&mut *self.pool().acquire().await?, &[id.into()]).await?.pop(),
            None => None,
        };
        let reason = match c.response_body.map(decode_outcome).transpose()? {
            Some(CheckoutOutcome::Declined { reason, .. } | CheckoutOutcome::Failed { reason, .. }) => Some(reason),
            Some(CheckoutOutcome::HoldExpired { refunded: true, .. }) => {
                Some("the hold lapsed before the payment settled; the payment was refunded".into())
            }
            Some(CheckoutOutcome::HoldExpired { .. }) => Some("the hold had expired".into()),
            _ => None,
        };
        let status = match c.state {
            CheckoutState::Processing | CheckoutState::PaymentPending => CheckoutStatus::PaymentPending,
            CheckoutState::Confirmed => CheckoutStatus::Confirmed,
            CheckoutState::Refunded => CheckoutStatus::Refunded,
            CheckoutState::Declined | CheckoutState::Expired | CheckoutState::Failed => CheckoutStatus::Failed,
        };
        Ok(CheckoutView { checkout_id, status, booking, reason })
    }
}

async fn checkout(engine: &Engine, req: CheckoutRequest<'_>) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let hold = sqlx::query!(
        r#"SELECT h.event_id, h.seat_ids, e.cancelled_at IS NOT NULL AS "cancelled!"
           FROM holds h JOIN events e USING (event_id) WHERE h.hold_id = $1 AND h.user_id = $2"#,
        req.hold_id.as_uuid(),
        req.user_id.as_uuid()
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    // Types chosen are part of the request (none: as it was before types).
    let types_asked = match req.ticket_types.is_empty() {
        true => String::new(),
        false => format!("\n{}", serde_json::to_string(req.ticket_types).unwrap_or_default()),
    };
    let request_hash = sha256_hex(format!("{}\n{}\n{}{types_asked}", req.hold_id, req.hold_token, req.payment_token).as_bytes());
    let idempotency_key = req.idempotency_key.as_str();
    if hold.cancelled {
        // Nothing more is sold; a checkout that already answered still
        // replays its answer.
        let stored = sqlx::query_scalar!(
            "SELECT response_body FROM checkouts WHERE user_id = $1 AND idempotency_key = $2 AND request_hash = $3",
            req.user_id.as_uuid(),
            idempotency_key,
            request_hash
        )
        .fetch_optional(pool)
        .await?
        .flatten();
        return match stored {
            Some(body) => decode_outcome(body),
            None => Err(EngineError::EventCancelled),
        };
    }
    let keyed = KeyedRequest { user_id: req.user_id, key: idempotency_key, request_hash: &request_hash };
    let types = match engine.choose_ticket_types(hold.event_id.into(), &hold.seat_ids, req.ticket_types).await {
        Ok(types) => types,
        // A retry of a checkout that answered gets its answer, though the
        // types it named may have changed since.
        Err(refused) => match keyed.existing(&mut *pool.acquire().await?, engine).await? {
            Some(Claimed::Answered(body)) => return decode_outcome(body),
            _ => return Err(refused),
        },
    };
    let claimed = keyed.claim(&mut *pool.acquire().await?, engine, req.hold_id, hold.event_id.into(), types.as_ref()).await?;
    let (checkout_id, claim) = match claimed {
        Some(id) => (id, Claim::Fresh),
        None => match answer_retry(engine, &keyed).await? {
            Retried::Answered(outcome) => return Ok(outcome),
            Retried::TakenOver(id) => (id, Claim::TakenOver),
        },
    };
    let outcome = run(engine, checkout_id, req.hold_token.as_str(), Payment::Provider(req.payment_token.as_str()), claim).await;
    if outcome.is_err() {
        key::let_go(engine, checkout_id).await;
    }
    let label = match &outcome {
        Ok(CheckoutOutcome::Confirmed { .. }) => "confirmed",
        Ok(CheckoutOutcome::PaymentPending { .. }) => "payment_pending",
        Ok(CheckoutOutcome::Declined { .. }) => "declined",
        Ok(CheckoutOutcome::HoldExpired { .. }) => "hold_expired",
        Ok(CheckoutOutcome::Failed { .. }) => "failed",
        Err(_) => "error",
    };
    metrics::counter!("frontrow_checkouts_total", "outcome" => label).increment(1);
    outcome
}

/// How often a retry looks again at the request it repeats while that one runs.
const RETRY_POLL: std::time::Duration = std::time::Duration::from_millis(100);

enum Retried {
    Answered(CheckoutOutcome),
    TakenOver(CheckoutId),
}

/// A checkout repeating one already claimed under its key: the stored
/// answer if there is one; if the first request is still running (its
/// client hung up, say, and it goes on to its end), its answer as soon as it
/// has one, waiting as long as a checkout waits for its payment; if the
/// first request died, its claim, taken over to carry on where it stopped.
async fn answer_retry(engine: &Engine, keyed: &KeyedRequest<'_>) -> Result<Retried> {
    let give_up = std::time::Instant::now() + engine.settings().checkout_wait;
    loop {
        match keyed.existing(&mut *engine.pool().acquire().await?, engine).await? {
            Some(Claimed::Answered(body)) => return decode_outcome(body).map(Retried::Answered),
            Some(Claimed::TakenOver(checkout_id)) => return Ok(Retried::TakenOver(checkout_id)),
            Some(Claimed::InUse) if std::time::Instant::now() < give_up => tokio::time::sleep(RETRY_POLL).await,
            Some(Claimed::InUse) => return Err(EngineError::IdempotencyKeyInUse),
            // Claims are never deleted while their account exists.
            None => return Err(EngineError::Internal("an idempotency key's claim vanished".into())),
        }
    }
}

pub(crate) fn decode_outcome(body: serde_json::Value) -> Result<CheckoutOutcome> {
    serde_json::from_value(body).map_err(|e| EngineError::Internal(format!("stored checkout response: {e}")))
}

fn encode_outcome(outcome: &CheckoutOutcome) -> Result<serde_json::Value> {
    serde_json::to_value(outcome).map_err(|e| EngineError::Internal(format!("encoding checkout response: {e}")))
}

/// The checkout's hold, as the settle steps need it.
struct HoldFacts {
    hold_id: HoldId,
    hold_token: String,
}

async fn hold_facts(conn: &mut sqlx::PgConnection, checkout_id: CheckoutId) -> Result<HoldFacts> {
    let h =
        sqlx::query!("SELECT h.hold_id, h.hold_token FROM checkouts c JOIN holds h USING (hold_id) WHERE c.checkout_id = $1", checkout_id.as_uuid())
            .fetch_one(conn)
            .await?;
    Ok(HoldFacts { hold_id: h.hold_id.into(), hold_token: h.hold_token })
}

mod batch;
pub(crate) mod key;
mod pay;
mod settle;

pub(crate) use batch::{ReserveBatcher, SaleBatcher};
use key::{Claimed, KeyedRequest};

pub(crate) use pay::{pay, recorded_request, run, Claim, Payment, Sending};
pub(crate) use settle::{mark_pending, settle_success, settle_unpaid, Unpaid};
