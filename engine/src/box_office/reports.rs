//! What the box office reads and exports: bookings found by id, email or
//! seat; sales as CSV; payments that need a person, and settling one now;
//! re-sending tickets.

use std::fmt::Write;

use chrono::{DateTime, Utc};
use frontrow_model::{AttentionState, BookingStatus, Channel, EventId, PaymentAttention, PaymentId, StaffBookingLine, TicketState, User};
pub use frontrow_model::{PaymentInfo, SalesBy};
use serde::Serialize;

use crate::accounts::require_staff;
use crate::changelog::csv_field;
use crate::error::{EngineError, Result};
use crate::Engine;

impl Engine {
    /// Bookings whose id starts with `q`, or whose buyer's email or one of
    /// whose seats is `q` (of one event, or all), newest first.
    pub async fn find_bookings(&self, staff: &User, event_id: Option<EventId>, q: Option<&str>) -> Result<Vec<StaffBookingLine>> {
        require_staff(staff)?;
        if q.is_some_and(|q| q.chars().count() > 254 || q.chars().any(char::is_control)) {
            return Err(EngineError::invalid("q is at most 254 characters, none of them control characters"));
        }
        let q = q.map(str::trim).filter(|q| !q.is_empty());
        let rows = sqlx::query!(
            r#"SELECT b.booking_id, b.event_id, b.status AS "status: BookingStatus", b.channel AS "channel: Channel",
                      coalesce(b.customer_email, u.email) AS customer_email, coalesce(b.customer_name, u.name) AS customer_name,
                      b.total_cents, b.refunded_cents, b.created_at AS "created_at: DateTime<Utc>",
                      coalesce((SELECT array_agg(t.seat_id ORDER BY t.seat_id) FROM tickets t WHERE t.booking_id = b.booking_id), '{}') AS "seat_ids!"
               FROM bookings b JOIN users u USING (user_id)
               WHERE ($1::uuid IS NULL OR b.event_id = $1)
                 AND ($2::text IS NULL
                      OR b.booking_id::text LIKE lower($2) || '%'
                      OR lower(coalesce(b.customer_email, u.email)) = lower($2)
                      OR lower(u.email) = lower($2)
                      OR EXISTS (SELECT 1 FROM tickets t WHERE t.booking_id = b.booking_id AND upper(t.seat_id) = upper($2)))
               ORDER BY b.created_at DESC LIMIT 200"#,
            event_id.map(|id| id.as_uuid()),
            q,
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| StaffBookingLine {
                booking_id: r.booking_id.into(),
                event_id: r.event_id.into(),
                status: r.status,
                channel: r.channel,
                customer_email: r.customer_email,
                customer_name: r.customer_name,
                seat_ids: r.seat_ids,
                total_cents: r.total_cents,
                refunded_cents: r.refunded_cents,
                created_at: r.created_at,
            })
            .collect())
    }

    /// One line per ticket: booking, seat, tier, ticket type, price, channel,
    /// status, time.
    pub async fn sales_csv(&self, staff: &User, event_id: EventId) -> Result<String> {
        require_staff(staff)?;
        self.event(event_id).await?;
        let rows = sqlx::query!(
            r#"SELECT b.booking_id, t.seat_id, s.section, s.tier, t.ticket_type, t.price_cents, b.channel AS "channel: Channel",
                      t.state AS "state: TicketState", b.created_at AS "at: DateTime<Utc>"
               FROM tickets t JOIN bookings b USING (booking_id) JOIN seats s ON s.event_id = t.event_id AND s.seat_id = t.seat_id
               WHERE t.event_id = $1 ORDER BY b.created_at, t.seat_id"#,
            event_id.as_uuid()
        )
        .fetch_all(self.pool())
        .await?;
        let mut out = String::from("booking_id,seat_id,section,tier,ticket_type,price_cents,channel,status,sold_at\n");
        for r in rows {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{}",
                r.booking_id,
                csv_field(&r.seat_id),
                csv_field(&r.section),
                csv_field(&r.tier),
                csv_field(r.ticket_type.as_deref().unwrap_or_default()),
                r.price_cents,
                word(&r.channel),
                word(&r.state),
                r.at.to_rfc3339()
            );
        }
        Ok(out)
    }

    /// Tickets sold and money taken (refunds deducted, what the seller kept
    /// of a fan's cancellation counted), per tier, section, day or ticket
    /// type.
    pub async fn sales_summary_csv(&self, staff: &User, event_id: EventId, by: SalesBy) -> Result<String> {
        require_staff(staff)?;
        self.event(event_id).await?;
        let rows = sqlx::query!(
            r#"SELECT CASE $2 WHEN 'tier' THEN s.tier WHEN 'section' THEN s.section WHEN 'type' THEN coalesce(t.ticket_type, '-')
                              ELSE to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') END AS "key!",
                      count(*) FILTER (WHERE t.voided_at IS NULL) AS "tickets!",
                      coalesce(sum(CASE WHEN t.voided_at IS NULL THEN t.price_cents ELSE t.kept_cents END), 0)::bigint AS "revenue!"
               FROM tickets t JOIN bookings b USING (booking_id) JOIN seats s ON s.event_id = t.event_id AND s.seat_id = t.seat_id
               WHERE t.event_id = $1 AND (t.voided_at IS NULL OR t.kept_cents > 0) GROUP BY 1 ORDER BY 1"#,
            event_id.as_uuid(),
            word(&by),
        )
        .fetch_all(self.pool())
        .await?;
        let mut out = format!("{},tickets,revenue_cents\n", word(&by));
        for r in rows {
            let _ = writeln!(out, "{},{},{}", csv_field(&r.key), r.tickets, r.revenue);
        }
        Ok(out)
    }

    /// Payments a person should look at: captured with no booking and no
    /// refund, still unknown past the checkout's wait, or refunds that have
    /// not gone through.
    pub async fn payments_needing_attention(&self, staff: &User) -> Result<Vec<PaymentAttention>> {
        require_staff(staff)?;
        let wait = self.settings().checkout_wait.as_secs_f64();
        let rows = sqlx::query!(
            r#"SELECT pi.payment_id AS "payment_id!", pi.checkout_id AS "checkout_id!", c.event_id AS "event_id!", 'captured_without_booking' AS "state!",
                      pi.amount_cents AS "amount_cents!", coalesce(pi.last_error, 'the money was taken but no booking holds it') AS "reason!",
                      pi.updated_at AS "since!: DateTime<Utc>"
                 FROM payment_intents pi JOIN checkouts c USING (checkout_id)
                WHERE pi.status = 'succeeded' AND c.booking_id IS NULL
                  AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = pi.payment_id)
               UNION ALL
               SELECT pi.payment_id, pi.checkout_id, c.event_id,
                      CASE WHEN pi.gave_up_at IS NOT NULL THEN 'gave_up'
                           WHEN pi.seats_released_at IS NOT NULL THEN 'watched' ELSE 'pending_past_wait' END,
                      pi.amount_cents, coalesce(pi.last_error, 'the provider has not said yet'), pi.created_at
                 FROM payment_intents pi JOIN checkouts c USING (checkout_id)
                WHERE pi.settled_at IS NULL AND pi.created_at < now() - make_interval(secs => $1)
               UNION ALL
               SELECT pi.payment_id, pi.checkout_id, c.event_id,
                      CASE WHEN r.status = 'failed' THEN 'refund_failed' ELSE 'refund_pending' END, r.amount_cents,
                      coalesce(r.last_error, r.reason), r.created_at
                 FROM refunds r JOIN payment_intents pi USING (payment_id) JOIN checkouts c USING (checkout_id)
                WHERE r.status <> 'succeeded'
               ORDER BY 7"#,
            wait
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| PaymentAttention {
                payment_id: r.payment_id.into(),
                checkout_id: r.checkout_id.into(),
                event_id: r.event_id.into(),
                state: match r.state.as_str() {
                    "captured_without_booking" => AttentionState::CapturedWithoutBooking,
                    "pending_past_wait" => AttentionState::PendingPastWait,
                    "watched" => AttentionState::Watched,
                    "gave_up" => AttentionState::GaveUp,
                    "refund_failed" => AttentionState::RefundFailed,
                    _ => AttentionState::RefundPending,
                },
                amount_cents: r.amount_cents,
                reason: r.reason,
                since: r.since,
            })
            .collect())
    }

    /// Settles a payment now: asks the provider again (as reconciliation
    /// would), and sends its refunds that have not gone through.
    pub async fn settle_payment(&self, staff: &User, payment_id: PaymentId) -> Result<PaymentInfo> {
        require_staff(staff)?;
        let checkout_id = sqlx::query_scalar!("SELECT checkout_id FROM payment_intents WHERE payment_id = $1", payment_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .ok_or(EngineError::NotFound)?;
        crate::money::reconcile::settle_now(self, checkout_id.into()).await?;
        let refunds = sqlx::query_scalar!("SELECT refund_id FROM refunds WHERE payment_id = $1 AND status <> 'succeeded'", payment_id.as_uuid())
            .fetch_all(self.pool())
            .await?;
        for refund_id in refunds {
            crate::payment::attempt_refund(self, refund_id).await?;
        }
        let mut conn = self.pool().acquire().await?;
        let event_id = sqlx::query_scalar!("SELECT event_id FROM checkouts WHERE checkout_id = $1", checkout_id).fetch_one(&mut *conn).await?;
        crate::changelog::record(&mut conn, Some(event_id.into()), staff.user_id, "payment_settled", &[], &payment_id.to_string()).await?;
        self.payment_info(payment_id).await
    }

    async fn payment_info(&self, payment_id: PaymentId) -> Result<PaymentInfo> {
        let r = sqlx::query!(
            r#"SELECT pi.payment_id, pi.checkout_id, c.event_id, pi.status::text AS "status!", pi.settled_at IS NOT NULL AS "settled!",
                      pi.amount_cents, c.booking_id,
                      (SELECT count(*) FROM refunds r WHERE r.payment_id = pi.payment_id AND r.status <> 'succeeded') AS "refunds_pending!"
               FROM payment_intents pi JOIN checkouts c USING (checkout_id) WHERE pi.payment_id = $1"#,
            payment_id.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        Ok(PaymentInfo {
            payment_id: r.payment_id.into(),
            checkout_id: r.checkout_id.into(),
            event_id: r.event_id.into(),
            status: r.status,
            settled: r.settled,
            amount_cents: r.amount_cents,
            booking_id: r.booking_id.map(Into::into),
            refunds_pending: r.refunds_pending,
        })
    }
}

/// A unit enum's snake_case word.
fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}
