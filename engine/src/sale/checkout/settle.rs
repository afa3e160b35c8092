//! Step 4 and every other end of a checkout: the sale committed (or the
//! money refunded when the seats are gone), the payment declined or failed,
//! or left pending under watch; each stores the key's final answer.

use frontrow_model::BookingId;

use super::batch::{SaleOutcome, SaleRequest};
use super::*;

/// Stores the final answer for the key and gives up the lease.
pub(super) async fn finish<'e, E>(
    executor: E,
    checkout_id: CheckoutId,
    state: CheckoutState,
    outcome: &CheckoutOutcome,
    booking_id: Option<BookingId>,
) -> Result<()>
where
    E: sqlx::PgExecutor<'e>,
{
    sqlx::query!(
        r#"UPDATE checkouts
              SET state = $2, response_body = $3, booking_id = coalesce($4, booking_id),
                  lease_until = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id.as_uuid(),
        state as CheckoutState,
        encode_outcome(outcome)?,
        booking_id.map(|id| id.as_uuid()),
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// The payment outcome is not known yet: answer "pending", keep the seats
/// reserved, and let reconciliation settle it.
pub(crate) async fn mark_pending(
    pool: &sqlx::PgPool,
    checkout_id: CheckoutId,
    provider_ref: Option<&str>,
    status: PaymentState,
    error: Option<&str>,
) -> Result<CheckoutOutcome> {
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    sqlx::query!(
        r#"UPDATE payment_intents
              SET status = $2, provider_ref = coalesce($3, provider_ref),
                  last_error = $4, updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id.as_uuid(),
        status as PaymentState,
        provider_ref,
        error,
    )
    .execute(&mut *tx)
    .await?;
    let outcome = CheckoutOutcome::PaymentPending { checkout_id };
    finish(&mut *tx, checkout_id, CheckoutState::PaymentPending, &outcome, None).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The money is captured: commit the sale if the seats are still reserved
/// for this checkout (one `checkout_sell` call, shared with the checkouts
/// beside it), otherwise refund.
pub(crate) async fn settle_success(engine: &Engine, checkout_id: CheckoutId, provider_ref: &str) -> Result<CheckoutOutcome> {
    let request = SaleRequest { checkout: checkout_id, provider_ref: provider_ref.to_owned(), booking: BookingId::from(Uuid::new_v4()) };
    match engine.sale_batcher().submit((), request).await? {
        SaleOutcome::Sold { answer, seats } => {
            engine.board().seats_written();
            metrics::counter!("frontrow_seats_sold_total").increment(u64::try_from(seats).unwrap_or_default());
            decode_outcome(answer)
        }
        SaleOutcome::Settled(Some(answer)) => decode_outcome(answer),
        SaleOutcome::Settled(None) => Err(EngineError::Internal(format!("checkout {checkout_id} settled without an answer"))),
        // The seats were let go before the money arrived: never sell them
        // twice; give the money back instead.
        SaleOutcome::Unsellable => refund_unsellable(engine, checkout_id, provider_ref).await,
    }
}

pub(crate) enum Unpaid {
    /// The fan's payment was refused: the hold is theirs again until it lapses.
    Declined(String),
    /// The payment never happened (lost before the provider, or voided).
    Failed(String),
}

/// Nothing was charged: the seats go back to the hold (with its original
/// expiry) so the fan can try again, and the key's answer is stored.
pub(crate) async fn settle_unpaid(pool: &sqlx::PgPool, checkout_id: CheckoutId, why: Unpaid) -> Result<CheckoutOutcome> {
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    seats::return_to_hold(&mut tx, hold.hold_id, &hold.hold_token).await?;
    sqlx::query!("UPDATE holds SET state = 'active' WHERE hold_id = $1 AND state = 'checking_out'", hold.hold_id.as_uuid()).execute(&mut *tx).await?;
    let (state, payment_state, outcome) = match why {
        Unpaid::Declined(reason) => (CheckoutState::Declined, PaymentState::Declined, CheckoutOutcome::Declined { checkout_id, reason }),
        Unpaid::Failed(reason) => (CheckoutState::Failed, PaymentState::Canceled, CheckoutOutcome::Failed { checkout_id, reason }),
    };
    sqlx::query!(
        r#"UPDATE payment_intents SET status = $2, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id.as_uuid(),
        payment_state as PaymentState
    )
    .execute(&mut *tx)
    .await?;
    finish(&mut *tx, checkout_id, state, &outcome, None).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// Captured money for seats that are no longer ours: record the refund
/// first (so it can never be forgotten), then ask the provider.
async fn refund_unsellable(engine: &Engine, checkout_id: CheckoutId, provider_ref: &str) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let intent = sqlx::query!(
        r#"UPDATE payment_intents SET status = 'succeeded', provider_ref = $2, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1 RETURNING payment_id, amount_cents"#,
        checkout_id.as_uuid(),
        provider_ref
    )
    .fetch_one(&mut *tx)
    .await?;
    let refund_id = sqlx::query_scalar!(
        r#"INSERT INTO refunds (refund_id, payment_id, amount_cents, reason)
           VALUES ($1, $2, $3, 'seats released before the payment settled')
           ON CONFLICT (payment_id) WHERE kind = 'unsellable' DO UPDATE SET updated_at = now()
           RETURNING refund_id"#,
        Uuid::new_v4(),
        intent.payment_id,
        intent.amount_cents,
    )
    .fetch_one(&mut *tx)
    .await?;
    let hold = hold_facts(&mut tx, checkout_id).await?;
    sqlx::query!("UPDATE holds SET state = 'expired', ended_at = now() WHERE hold_id = $1 AND state <> 'converted'", hold.hold_id.as_uuid())
        .execute(&mut *tx)
        .await?;
    let outcome = CheckoutOutcome::HoldExpired { checkout_id, refunded: true };
    finish(&mut *tx, checkout_id, CheckoutState::Refunded, &outcome, None).await?;
    tx.commit().await?;
    metrics::counter!("frontrow_refunds_total").increment(1);
    // If the provider cannot be reached now, the refund stays pending and
    // reconciliation retries it.
    if let Err(e) = crate::payment::attempt_refund(engine, refund_id).await {
        tracing::warn!(%refund_id, error = %e, "refund not completed yet; reconciliation will retry");
    }
    Ok(outcome)
}

/// Locks the checkout and its payment for settling. `Some(answer)` when the
/// payment was already settled (by the request or by reconciliation): then
/// nothing may change and the stored answer stands.
async fn lock_unsettled(conn: &mut sqlx::PgConnection, checkout_id: CheckoutId) -> Result<Option<CheckoutOutcome>> {
    let row = sqlx::query!(
        r#"SELECT c.response_body, pi.settled_at IS NOT NULL AS "settled!"
           FROM checkouts c JOIN payment_intents pi USING (checkout_id)
           WHERE c.checkout_id = $1 FOR UPDATE"#,
        checkout_id.as_uuid()
    )
    .fetch_one(conn)
    .await?;
    match (row.settled, row.response_body) {
        (true, Some(body)) => decode_outcome(body).map(Some),
        (true, None) => Err(EngineError::Internal(format!("checkout {checkout_id} settled without an answer"))),
        (false, _) => Ok(None),
    }
}
