//! Fans changing their mind: cancelling a booking, or some of its tickets,
//! from their booking page, on the terms the event's refund policy sets.
//!
//! The same single transaction as a refund by staff decides it (the
//! booking row locked, each ticket changing state once, the refund
//! recorded), so two clicks, two tabs or two instances refund a ticket
//! once; the provider is asked afterwards, idempotent by the refund's id,
//! and reconciliation finishes what a crash interrupts.

use frontrow_model::{BookingId, CancelRequest, Cancellation, Channel, IdempotencyKey, RefundPolicy, User, UserId};

use super::refunds::{chosen_tickets, remember, replay, take_back, RefundKind};
use crate::changelog;
use crate::error::{EngineError, Result};
use crate::tokens::sha256_hex;
use crate::Engine;

impl Engine {
    /// Cancels the fan's tickets (`ticket_ids`, or every valid one) while
    /// the event's policy allows, refunding each ticket's price less what
    /// the seller keeps. Idempotent by `key`: a retry gets the first answer.
    pub async fn cancel_tickets(&self, fan: &User, booking_id: BookingId, request: &CancelRequest, key: &IdempotencyKey) -> Result<Cancellation> {
        let hash = sha256_hex(serde_json::to_string(&("cancel", booking_id, &request.ticket_ids)).unwrap_or_default().as_bytes());
        let mut tx = crate::db::begin(self.pool()).await?;
        let b = sqlx::query!(
            r#"SELECT b.event_id, b.user_id, b.channel AS "channel: Channel", e.cancelled_at IS NOT NULL AS "event_cancelled!",
                      e.cancel_until_hours, e.cancel_keep_percent, e.cancel_fee_cents,
                      e.starts_at - make_interval(hours => e.cancel_until_hours) AS "deadline: chrono::DateTime<chrono::Utc>"
                 FROM bookings b JOIN events e USING (event_id)
                WHERE b.booking_id = $1 FOR UPDATE OF b"#,
            booking_id.as_uuid()
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(EngineError::NotFound)?;
        // A request with this key answered before (or while this waited for
        // the lock) gets that answer.
        if let Some(answer) = replay(&mut tx, fan.user_id, key, &hash).await? {
            return Ok(answer);
        }
        // Someone else's booking is none of this fan's business; a counter
        // sale is refunded at the counter.
        if UserId::from(b.user_id) != fan.user_id {
            return Err(EngineError::NotFound);
        }
        if b.event_cancelled {
            return Err(EngineError::AlreadyRefunded);
        }
        let policy = RefundPolicy { cancel_until_hours: b.cancel_until_hours, keep_percent: b.cancel_keep_percent, fee_cents: b.cancel_fee_cents };
        let (Some(deadline), Channel::Online) = (b.deadline, b.channel) else {
            return Err(EngineError::CancellationNotOffered);
        };
        // The clock is the database's, like every other deadline (instances
        // agree on it), read now that the booking is locked.
        let closed = sqlx::query_scalar!(r#"SELECT clock_timestamp() >= $1 AS "closed!""#, deadline as chrono::DateTime<chrono::Utc>)
            .fetch_one(&mut *tx)
            .await?;
        if closed {
            return Err(EngineError::CancellationClosed { closed_at: deadline });
        }
        let wanted = chosen_tickets(&mut tx, booking_id, request.ticket_ids.as_deref()).await?;
        let taken = take_back(&mut tx, booking_id, &wanted, Some(fan.user_id), RefundKind::Fan, &policy, "cancelled by the fan").await?;
        changelog::record(
            &mut tx,
            Some(b.event_id.into()),
            fan.user_id,
            "fan_cancel",
            &taken.seat_ids,
            &format!("booking {booking_id}: {} cents back, {} kept", taken.refund_cents, taken.kept_cents),
        )
        .await?;
        let answer = Cancellation {
            booking_id,
            status: taken.status,
            cancelled: wanted,
            refund_cents: taken.refund_cents,
            kept_cents: taken.kept_cents,
            seats_released: taken.seats_released,
        };
        remember(&mut tx, fan.user_id, key, &hash, &answer).await?;
        tx.commit().await?;
        self.board().seats_written();
        metrics::counter!("frontrow_fan_cancellations_total").increment(1);
        self.fail_point(crate::FailPoint::AbortBeforeRefund);
        if let Some(refund_id) = taken.refund_id {
            self.send_refund(refund_id).await;
        }
        Ok(answer)
    }
}
