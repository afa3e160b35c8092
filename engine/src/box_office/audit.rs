//! The invariant audit: SQL that proves nothing was oversold, nothing is held
//! without a live hold, and every captured payment was booked or refunded.

use frontrow_model::{AuditReport, EventId};

use crate::error::Result;
use crate::Engine;

impl Engine {
    /// Audits one event, or every event when `event_id` is `None`.
    pub async fn audit(&self, event_id: Option<EventId>) -> Result<AuditReport> {
        audit(self.pool(), event_id).await
    }
}

async fn audit(pool: &sqlx::PgPool, event_id: Option<EventId>) -> Result<AuditReport> {
    let r = sqlx::query!(
        r#"WITH s AS (SELECT * FROM seats WHERE $1::uuid IS NULL OR event_id = $1),
                live_tickets AS (SELECT t.* FROM tickets t WHERE t.voided_at IS NULL AND ($1::uuid IS NULL OR t.event_id = $1)),
                pi AS (SELECT pi.* FROM payment_intents pi JOIN checkouts c USING (checkout_id)
                        WHERE $1::uuid IS NULL OR c.event_id = $1)
           SELECT
             -- Seats with more than one live ticket, or sold without exactly one.
             (SELECT count(*) FROM (SELECT event_id, seat_id FROM live_tickets GROUP BY 1, 2 HAVING count(*) > 1) d)
             + (SELECT count(*) FROM s WHERE s.state = 'sold'
                  AND (SELECT count(*) FROM live_tickets t WHERE t.event_id = s.event_id AND t.seat_id = s.seat_id) <> 1)
               AS "oversold_seats!",
             (SELECT count(*) FROM s WHERE state = 'sold') AS "seats_sold!",
             (SELECT count(*) FROM s WHERE seat_held(state, hold_expires_at)) AS "seats_held!",
             (SELECT count(*) FROM s WHERE seat_free(state, hold_expires_at, blocked_reason)) AS "seats_available!",
             (SELECT count(*) FROM s WHERE state = 'blocked') AS "seats_blocked!",
             (SELECT count(*) FROM bookings b WHERE $1::uuid IS NULL OR b.event_id = $1) AS "bookings!",
             (SELECT count(*) FROM pi WHERE pi.status = 'succeeded'
                  AND NOT EXISTS (SELECT 1 FROM bookings b JOIN checkouts c ON c.booking_id = b.booking_id
                                   WHERE c.checkout_id = pi.checkout_id)
                  AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = pi.payment_id)) AS "captured_without_booking!",
             (SELECT count(*) FROM refunds r JOIN pi USING (payment_id) WHERE r.status <> 'succeeded') AS "refunds_pending!",
             -- Seats gone, charge not proved either way: watched, or handed to a person.
             (SELECT count(*) FROM pi WHERE pi.settled_at IS NULL AND (pi.seats_released_at IS NOT NULL OR pi.gave_up_at IS NOT NULL))
               AS "payments_unresolved!",
             (SELECT count(*) FROM s WHERE seat_held(s.state, s.hold_expires_at)
                  AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.hold_id = s.hold_id AND h.hold_token = s.hold_token
                                    AND h.user_id = s.holder_id AND h.state IN ('active', 'checking_out')))
               AS "held_without_live_hold!",
             (SELECT count(*) FROM s WHERE s.state = 'sold'
                  AND NOT EXISTS (SELECT 1 FROM bookings b WHERE b.booking_id = s.booking_id AND b.status IN ('confirmed', 'partially_refunded')))
             + (SELECT count(*) FROM live_tickets t JOIN seats x ON x.event_id = t.event_id AND x.seat_id = t.seat_id
                  WHERE x.state <> 'sold' OR x.booking_id IS DISTINCT FROM t.booking_id)
               AS "sold_mismatched!""#,
        event_id.map(|id| id.as_uuid())
    )
    .fetch_one(pool)
    .await?;
    Ok(AuditReport {
        oversold_seats: r.oversold_seats,
        seats_sold: r.seats_sold,
        seats_held: r.seats_held,
        seats_available: r.seats_available,
        seats_blocked: r.seats_blocked,
        bookings: r.bookings,
        payments_captured_without_booking: r.captured_without_booking,
        refunds_pending: r.refunds_pending,
        payments_unresolved: r.payments_unresolved,
        held_without_live_hold: r.held_without_live_hold,
        sold_mismatched: r.sold_mismatched,
    })
}
