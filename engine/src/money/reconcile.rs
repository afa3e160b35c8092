//! Reconciliation: settles every payment whose outcome the checkout could not
//! learn in time (slow, lost, or the server died), and retries refunds.
//!
//! For each unsettled payment it asks the provider, by the idempotency key:
//! captured → sell the seats if they are still reserved for it, else refund;
//! refused → hand the seats back; still unknown past the payment deadline →
//! let the seats go (recorded), keep asking, refund if the money arrives.
//! A payment the provider's search cannot find is sent again with the same
//! idempotency key (the search may lag for an hour; the repeat returns the
//! original charge if it did arrive, which is refunded if its seats are
//! gone). A payment that cannot be proved uncharged stays under watch,
//! asked about with back-off, until the provider's idempotency window has
//! passed; then a person is told. Nothing is closed on a guess.

use std::time::Duration;

use frontrow_model::CheckoutId;

use crate::db::PaymentState;
use crate::error::Result;
use crate::payment::attempt_refund;
use crate::payment::PaymentStatus;
use crate::payment::CASH;
use crate::sale::checkout::{mark_pending, pay, recorded_request, settle_success, settle_unpaid, CheckoutOutcome, Sending, Unpaid};
use crate::sale::seats;
use crate::Engine;

/// A checkout whose request died before it recorded any payment is closed
/// after this long.
pub const NOT_RECEIVED_AFTER: Duration = Duration::from_secs(30);

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReconcileStats {
    pub confirmed: u32,
    pub refunded: u32,
    pub failed: u32,
    pub released: u32,
    pub still_pending: u32,
    pub refunds_retried: u32,
    /// Payments whose seats are gone and whose charge is not proved either
    /// way yet (asked about again with back-off).
    pub watched: u32,
    /// Payments handed to a person: still unproved at the end of the watch.
    pub gave_up: u32,
}

impl ReconcileStats {
    fn count(&mut self, outcome: &CheckoutOutcome) {
        match outcome {
            CheckoutOutcome::Confirmed { .. } => self.confirmed += 1,
            CheckoutOutcome::PaymentPending { .. } => self.still_pending += 1,
            CheckoutOutcome::HoldExpired { .. } => self.refunded += 1,
            CheckoutOutcome::Declined { .. } | CheckoutOutcome::Failed { .. } => self.failed += 1,
        }
    }
}

impl Engine {
    /// One round of reconciliation (the background task runs it every few
    /// seconds on every instance; checkout leases keep them apart).
    pub async fn reconcile_once(&self) -> Result<ReconcileStats> {
        reconcile_once(self).await
    }
}

async fn reconcile_once(engine: &Engine) -> Result<ReconcileStats> {
    let pool = engine.pool();
    let mut stats = ReconcileStats::default();
    let lease_secs = engine.settings().checkout_lease.as_secs_f64();

    // Unsettled payments whose checkout no live request is working on.
    let candidates = sqlx::query_scalar!(
        r#"SELECT pi.checkout_id
           FROM payment_intents pi JOIN checkouts c USING (checkout_id)
           WHERE pi.settled_at IS NULL AND pi.next_check_at <= now() AND lease_lapsed(c.lease_until, c.lease_owner)
           ORDER BY pi.next_check_at LIMIT 200"#
    )
    .fetch_all(pool)
    .await?;
    for checkout_id in candidates {
        if let Err(e) = settle_claimed(engine, checkout_id.into(), lease_secs, &mut stats).await {
            tracing::warn!(%checkout_id, error = %e, "reconciling checkout failed; will retry");
        }
    }

    // Bookings of cancelled events not refunded yet (a cancel cut short, or
    // a sale that completed just after the cancel).
    stats.refunded += engine.refund_cancelled_events().await?;

    // Refunds the provider has not confirmed yet, least recently tried
    // first, each after waiting as long again as it has been failing (1 s,
    // 2 s, 4 s, … at most an hour between tries), so a provider that keeps
    // refusing one is not asked about it every round.
    let refunds = sqlx::query_scalar!(
        r#"SELECT refund_id FROM refunds
            WHERE status <> 'succeeded'
              AND updated_at < now() - least(interval '1 hour', greatest(interval '1 second', updated_at - created_at))
            ORDER BY updated_at, refund_id LIMIT 200"#
    )
    .fetch_all(pool)
    .await?;
    for refund_id in refunds {
        stats.refunds_retried += 1;
        if let Err(e) = attempt_refund(engine, refund_id).await {
            tracing::warn!(%refund_id, error = %e, "refund retry failed");
        }
    }

    // Checkouts whose request died before reserving anything: close them so
    // their key answers instead of hanging "in flight" forever.
    let abandoned = sqlx::query_scalar!(
        r#"UPDATE checkouts c
              SET state = 'failed', lease_until = now(), updated_at = now(),
                  response_body = jsonb_build_object('outcome', 'failed', 'checkout_id', c.checkout_id,
                                                     'reason', 'the checkout was interrupted before payment')
            WHERE c.state = 'processing' AND c.lease_until < now() - make_interval(secs => $1)
              AND NOT EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.checkout_id = c.checkout_id)
        RETURNING c.checkout_id"#,
        NOT_RECEIVED_AFTER.as_secs_f64()
    )
    .fetch_all(pool)
    .await?;
    stats.failed += abandoned.len() as u32;
    Ok(stats)
}

/// Settles one checkout now if nothing else is working on it (a request,
/// another instance): asks the provider, then books, refunds or waits.
pub(crate) async fn settle_now(engine: &Engine, checkout_id: CheckoutId) -> Result<()> {
    let lease_secs = engine.settings().checkout_lease.as_secs_f64();
    settle_claimed(engine, checkout_id, lease_secs, &mut ReconcileStats::default()).await
}

async fn settle_claimed(engine: &Engine, checkout_id: CheckoutId, lease_secs: f64, stats: &mut ReconcileStats) -> Result<()> {
    let pool = engine.pool();
    // Claim the checkout's lease so no request or other instance settles it too.
    let claimed = sqlx::query!(
        r#"UPDATE checkouts c SET lease_until = now() + make_interval(secs => $2), lease_owner = $3
             FROM payment_intents pi
            WHERE c.checkout_id = $1 AND pi.checkout_id = c.checkout_id AND lease_lapsed(c.lease_until, c.lease_owner)
              AND pi.settled_at IS NULL
        RETURNING pi.provider, pi.provider_key, pi.provider_ref"#,
        checkout_id.as_uuid(),
        lease_secs,
        engine.settings().instance_id,
    )
    .fetch_optional(pool)
    .await?;
    let Some(payment) = claimed else { return Ok(()) };
    let result = if payment.provider == CASH {
        // Cash changed hands when the intent was recorded.
        settle_success(engine, checkout_id, &format!("cash-{checkout_id}")).await.map(|o| stats.count(&o))
    } else {
        settle_one(engine, checkout_id, &payment.provider_key, payment.provider_ref.as_deref(), stats).await
    };
    if let Err(e) = watch(engine, checkout_id, stats).await {
        tracing::warn!(%checkout_id, error = %e, "scheduling the next look at a payment failed");
    }
    sqlx::query!("UPDATE checkouts SET lease_until = now() WHERE checkout_id = $1", checkout_id.as_uuid()).execute(pool).await?;
    result
}

/// After a look at a payment that is still not settled: while its seats
/// wait, look again next round; once they are gone, wait as long as they
/// have been gone (1 s, 2 s, 4 s, … up to an hour between looks); past the
/// watch, hand it to a person, loudly.
async fn watch(engine: &Engine, checkout_id: CheckoutId, stats: &mut ReconcileStats) -> Result<()> {
    let pool = engine.pool();
    let watched = sqlx::query!(
        r#"UPDATE payment_intents
              SET checks = checks + 1,
                  next_check_at = CASE WHEN seats_released_at IS NULL THEN now()
                                       ELSE now() + least(interval '1 hour', greatest(interval '1 second', now() - seats_released_at)) END
            WHERE checkout_id = $1 AND settled_at IS NULL AND gave_up_at IS NULL
        RETURNING payment_id, seats_released_at IS NOT NULL AS "released!",
                  created_at < now() - make_interval(secs => $2) AS "watch_over!""#,
        checkout_id.as_uuid(),
        engine.settings().payment_watch.as_secs_f64()
    )
    .fetch_optional(pool)
    .await?;
    let Some(w) = watched.filter(|w| w.released) else { return Ok(()) };
    if !w.watch_over {
        stats.watched += 1;
        return Ok(());
    }
    sqlx::query!(
        "UPDATE payment_intents SET gave_up_at = now(), next_check_at = 'infinity', updated_at = now() WHERE checkout_id = $1",
        checkout_id.as_uuid()
    )
    .execute(pool)
    .await?;
    stats.gave_up += 1;
    metrics::counter!("frontrow_payments_gave_up_total").increment(1);
    tracing::error!(
        payment_id = %w.payment_id, %checkout_id,
        "a payment could not be proved charged or uncharged within the provider's idempotency window: check it with the provider by hand (Box office → Payments)"
    );
    Ok(())
}

async fn settle_one(
    engine: &Engine,
    checkout_id: CheckoutId,
    provider_key: &str,
    provider_ref: Option<&str>,
    stats: &mut ReconcileStats,
) -> Result<()> {
    let pool = engine.pool();
    // By reference when the provider gave us one (exact, no search lag),
    // else by our idempotency key.
    let lookup = match provider_ref {
        Some(r) => engine.provider().retrieve_payment(r).await.map(Some),
        None => engine.provider().find_payment(provider_key).await,
    };
    match lookup {
        Ok(Some(payment)) => match payment.status {
            PaymentStatus::Succeeded => {
                stats.count(&settle_success(engine, checkout_id, &payment.provider_ref).await?);
            }
            PaymentStatus::Declined { reason } => {
                settle_unpaid(pool, checkout_id, Unpaid::Failed(reason)).await?;
                stats.failed += 1;
            }
            PaymentStatus::Canceled => {
                settle_unpaid(pool, checkout_id, Unpaid::Failed("payment canceled".into())).await?;
                stats.failed += 1;
            }
            PaymentStatus::Processing if payment_deadline_passed(pool, checkout_id).await? => {
                // Try to void it; if it can no longer be voided, let the seats
                // go and keep following the payment (a late capture is refunded).
                match engine.provider().cancel_payment(&payment.provider_ref).await {
                    Ok(p) if p.status == PaymentStatus::Canceled => {
                        settle_unpaid(pool, checkout_id, Unpaid::Failed("the payment did not complete in time".into())).await?;
                        stats.failed += 1;
                    }
                    Ok(p) if p.status == PaymentStatus::Succeeded => {
                        stats.count(&settle_success(engine, checkout_id, &p.provider_ref).await?);
                    }
                    _ => {
                        mark_pending(pool, checkout_id, Some(&payment.provider_ref), PaymentState::Processing, None).await?;
                        stats.released += release_past_deadline(pool, checkout_id).await?;
                        stats.still_pending += 1;
                    }
                }
            }
            PaymentStatus::Processing => {
                mark_pending(pool, checkout_id, Some(&payment.provider_ref), PaymentState::Processing, None).await?;
                stats.still_pending += 1;
            }
        },
        // Not found is no proof (the search may lag): send the create again
        // with the same key, which answers the original if it arrived.
        Ok(None) => {
            let request = recorded_request(pool, checkout_id, &engine.settings().currency).await?;
            let outcome = pay(engine, checkout_id, &request, Sending::Again).await?;
            if matches!(outcome, CheckoutOutcome::PaymentPending { .. }) {
                // Still no answer: past the deadline the seats go back on sale.
                stats.released += release_past_deadline(pool, checkout_id).await?;
            }
            stats.count(&outcome);
        }
        Err(e) => {
            tracing::warn!(%checkout_id, error = %e, "payment provider unreachable during reconciliation");
            stats.released += release_past_deadline(pool, checkout_id).await?;
            stats.still_pending += 1;
        }
    }
    Ok(())
}

/// Past the payment deadline, seats reserved for an unresolved payment go back
/// on sale. The decision is recorded on the payment; if the money arrives
/// later it is refunded (see `settle_success`).
async fn release_past_deadline(pool: &sqlx::PgPool, checkout_id: CheckoutId) -> Result<u32> {
    let mut tx = crate::db::begin(pool).await?;
    // The checkout and its payment first, then the seats: the order a sale
    // takes them in (`checkout_sell`), so a payment settling at its deadline
    // waits for this or this for it, never both for each other.
    let hold = sqlx::query!(
        r#"SELECT h.hold_id, h.hold_token FROM checkouts c JOIN holds h USING (hold_id) JOIN payment_intents pi USING (checkout_id)
            WHERE c.checkout_id = $1 FOR UPDATE OF c, pi"#,
        checkout_id.as_uuid()
    )
    .fetch_one(&mut *tx)
    .await?;
    let released = seats::release_unpaid(&mut tx, hold.hold_id.into(), &hold.hold_token).await?;
    if released > 0 {
        sqlx::query!("UPDATE payment_intents SET seats_released_at = now(), updated_at = now() WHERE checkout_id = $1", checkout_id.as_uuid())
            .execute(&mut *tx)
            .await?;
        sqlx::query!("UPDATE holds SET state = 'expired', ended_at = now() WHERE hold_id = $1", hold.hold_id).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(released as u32)
}

/// Has the reservation of this checkout's seats run out? (False once they are gone.)
async fn payment_deadline_passed(pool: &sqlx::PgPool, checkout_id: CheckoutId) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM checkouts c JOIN holds h USING (hold_id)
                          JOIN seats s ON s.hold_id = h.hold_id AND s.hold_token = h.hold_token
                          WHERE c.checkout_id = $1 AND s.state = 'payment_pending'
                            AND lease_lapsed(s.hold_expires_at)) AS "passed!""#,
        checkout_id.as_uuid()
    )
    .fetch_one(pool)
    .await?)
}
