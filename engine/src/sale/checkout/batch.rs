//! The checkout's two short transactions, each decided many at a time (see
//! [`crate::sale::group_commit`]): one call of `checkout_reserve` for the
//! seats moved to payment and the intents recorded, one of `checkout_sell`
//! for the payments turned into bookings. Each request is decided alone,
//! as if by itself; both functions take their locks up front in the one
//! global order, so two batches side by side are safe (see the migration).

use std::sync::Arc;

use frontrow_model::{BookingId, CheckoutId};
use serde::Serialize;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::sale::group_commit::{in_request_order, Batch, GroupCommit};
use crate::Engine;

/// Step 2 for one checkout: what `checkout_reserve` takes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReserveRequest {
    pub checkout: CheckoutId,
    /// The hold token the checkout is fenced by, and its audit tag.
    pub token: String,
    pub tag: String,
    /// The payment intent to record.
    pub payment: Uuid,
    pub provider: String,
    pub key: String,
    pub payment_token: String,
    /// How long the seats wait for the payment, and the key's lease.
    pub grace_seconds: f64,
    pub lease_seconds: f64,
    /// The answer stored if the hold has lapsed.
    pub expired: serde_json::Value,
}

#[derive(Debug)]
pub(crate) enum ReserveOutcome {
    Reserved {
        amount_cents: i64,
    },
    /// The key's claim was closed meanwhile: its stored answer.
    Answered(serde_json::Value),
    /// The key's claim was closed meanwhile and has no answer yet.
    InUse,
    /// Another key is paying for this hold; this key was given back.
    InProgress,
    /// The hold had lapsed (or its token was no longer current): the
    /// answer stored.
    Expired(serde_json::Value),
    /// A ticket type chosen is no longer sold in its seat's tier (staff
    /// changed the types meanwhile); nothing changed.
    BadTypes,
}

/// Step 4 for one checkout whose payment is captured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SaleRequest {
    pub checkout: CheckoutId,
    pub provider_ref: String,
    /// The booking's id, if one is made.
    pub booking: BookingId,
}

#[derive(Debug)]
pub(crate) enum SaleOutcome {
    /// Booked: the stored answer and the number of seats sold.
    Sold { answer: serde_json::Value, seats: i32 },
    /// Settled earlier (by the request or by reconciliation): its answer.
    Settled(Option<serde_json::Value>),
    /// The seats were let go before the money arrived; nothing changed.
    Unsellable,
}

pub(crate) struct Reservations;
pub(crate) struct Sales;

pub(crate) type ReserveBatcher = GroupCommit<Reservations>;
pub(crate) type SaleBatcher = GroupCommit<Sales>;

fn as_json<T: Serialize>(requests: &[T]) -> Result<serde_json::Value> {
    serde_json::to_value(requests).map_err(|e| EngineError::Internal(e.to_string()))
}

impl Batch for Reservations {
    type Request = ReserveRequest;
    type Outcome = ReserveOutcome;
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_checkout_reserve_batch_size";

    async fn call(connection: &mut PgConnection, _: (), requests: &[ReserveRequest]) -> Result<Vec<Result<ReserveOutcome>>> {
        let rows = sqlx::query!(
            r#"SELECT request_index AS "request_index!", outcome AS "outcome!", amount_cents, answer FROM checkout_reserve($1)"#,
            as_json(requests)?
        )
        .fetch_all(connection)
        .await?;
        let outcomes = rows.into_iter().map(|row| {
            let outcome = match (row.outcome.as_str(), row.amount_cents, row.answer) {
                ("reserved", Some(amount_cents), _) => Ok(ReserveOutcome::Reserved { amount_cents }),
                ("answered", _, Some(answer)) => Ok(ReserveOutcome::Answered(answer)),
                ("in_use", ..) => Ok(ReserveOutcome::InUse),
                ("in_progress", ..) => Ok(ReserveOutcome::InProgress),
                ("expired", _, Some(answer)) => Ok(ReserveOutcome::Expired(answer)),
                ("bad_types", ..) => Ok(ReserveOutcome::BadTypes),
                (other, ..) => Err(EngineError::Internal(format!("checkout_reserve answered {other:?}"))),
            };
            (row.request_index, outcome)
        });
        Ok(in_request_order(requests.len(), outcomes, "checkout_reserve"))
    }
}

impl Batch for Sales {
    type Request = SaleRequest;
    type Outcome = SaleOutcome;
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_checkout_sell_batch_size";

    async fn call(connection: &mut PgConnection, _: (), requests: &[SaleRequest]) -> Result<Vec<Result<SaleOutcome>>> {
        let rows = sqlx::query!(
            r#"SELECT request_index AS "request_index!", outcome AS "outcome!", answer, seats_sold AS "seats_sold!" FROM checkout_sell($1)"#,
            as_json(requests)?
        )
        .fetch_all(connection)
        .await?;
        let outcomes = rows.into_iter().map(|row| {
            let outcome = match (row.outcome.as_str(), row.answer) {
                ("sold", Some(answer)) => Ok(SaleOutcome::Sold { answer, seats: row.seats_sold }),
                ("settled", answer) => Ok(SaleOutcome::Settled(answer)),
                ("unsellable", _) => Ok(SaleOutcome::Unsellable),
                (other, _) => Err(EngineError::Internal(format!("checkout_sell answered {other:?}"))),
            };
            (row.request_index, outcome)
        });
        Ok(in_request_order(requests.len(), outcomes, "checkout_sell"))
    }
}

impl Engine {
    pub(super) fn reserve_batcher(&self) -> Arc<ReserveBatcher> {
        ReserveBatcher::running_in(&self.inner.reserve_batcher, self.pool(), &Arc::default())
    }

    pub(super) fn sale_batcher(&self) -> Arc<SaleBatcher> {
        SaleBatcher::running_in(&self.inner.sale_batcher, self.pool(), &Arc::default())
    }
}
