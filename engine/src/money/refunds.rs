//! Giving money back: staff refunding a booking or single tickets, an event
//! cancelled (every booking refunded). The provider is asked by
//! [`crate::payment::attempt_refund`].
//!
//! Each refund is decided in one transaction that turns the tickets
//! `refunded` (or `void`) with a conditional UPDATE, frees their seats,
//! and records the refund; only then is the provider asked, outside any
//! transaction and idempotent by the refund's id. A ticket can change state
//! once, so however many staff, retries or instances race, it is refunded
//! once and its seat comes back once; a refund the provider has not
//! confirmed is retried by reconciliation.

use frontrow_model::{BookingId, BookingStatus, EventId, IdempotencyKey, RefundPolicy, RefundRequest, RefundResult, TicketId, User, UserId};
use serde::Serialize;
use sqlx::PgConnection;
use uuid::Uuid;

use crate::accounts::require_staff;
use crate::changelog;
use crate::error::{EngineError, Result};
use crate::payment::attempt_refund;
use crate::sale::seats::{self, Unsold};
use crate::tokens::sha256_hex;
use crate::venue::catalogue::check_text;
use crate::Engine;

/// Why money goes back (`refunds.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "refund_kind", rename_all = "snake_case")]
pub(super) enum RefundKind {
    Staff,
    Cancel,
    /// A fan cancelling under the event's refund policy.
    Fan,
}

/// A ticket a refund or cancellation just took back.
struct TakenBack {
    ticket_id: Uuid,
    seat_id: String,
    price_cents: i32,
}

impl Engine {
    /// Refunds single tickets of a booking, or all its live tickets: their
    /// seats go back on sale and the money back through the provider (or the
    /// till). Idempotent by `key`: a retry with the same key and body gets
    /// the first answer.
    pub async fn refund_booking(&self, staff: &User, booking_id: BookingId, request: &RefundRequest, key: &IdempotencyKey) -> Result<RefundResult> {
        require_staff(staff)?;
        check_text("reason", &request.reason, 500)?;
        let hash = sha256_hex(serde_json::to_string(&(booking_id, &request.ticket_ids, &request.reason)).unwrap_or_default().as_bytes());
        let mut tx = crate::db::begin(self.pool()).await?;
        let booking = sqlx::query!("SELECT event_id FROM bookings WHERE booking_id = $1 FOR UPDATE", booking_id.as_uuid())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(EngineError::NotFound)?;
        // A request with this key answered before (or while this waited for
        // the lock) gets that answer.
        if let Some(answer) = replay(&mut tx, staff.user_id, key, &hash).await? {
            return Ok(answer);
        }
        let wanted = chosen_tickets(&mut tx, booking_id, request.ticket_ids.as_deref()).await?;
        let taken = take_back(&mut tx, booking_id, &wanted, Some(staff.user_id), RefundKind::Staff, &RefundPolicy::FULL, &request.reason).await?;
        changelog::record(
            &mut tx,
            Some(booking.event_id.into()),
            staff.user_id,
            "refund",
            &taken.seat_ids,
            &format!("booking {booking_id}, {} cents: {}", taken.refund_cents, request.reason.trim()),
        )
        .await?;
        let answer = RefundResult {
            booking_id,
            status: taken.status,
            refunded_cents: booking_refunded(&mut tx, booking_id).await?,
            seats_released: taken.seats_released,
        };
        remember(&mut tx, staff.user_id, key, &hash, &answer).await?;
        tx.commit().await?;
        self.board().seats_written();
        metrics::counter!("frontrow_refunds_total").increment(1);
        if let Some(refund_id) = taken.refund_id {
            self.send_refund(refund_id).await;
        }
        Ok(answer)
    }

    /// Cancels an event: sales stop at once, and every booking is refunded
    /// (now, and by reconciliation for any that a crash or a late checkout
    /// leaves). Running it again changes nothing.
    pub async fn cancel_event(&self, staff: &User, event_id: EventId, reason: &str) -> Result<()> {
        require_staff(staff)?;
        check_text("reason", reason, 500)?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let newly = sqlx::query_scalar!(
            r#"UPDATE events SET cancelled_at = now(), cancel_reason = $2
                WHERE event_id = $1 AND cancelled_at IS NULL RETURNING event_id"#,
            event_id.as_uuid(),
            reason.trim()
        )
        .fetch_optional(&mut *tx)
        .await?;
        if newly.is_none() {
            // Already cancelled (or no such event).
            self.event(event_id).await?;
        } else {
            changelog::record(&mut tx, Some(event_id), staff.user_id, "event_cancelled", &[], reason.trim()).await?;
            crate::notices::announce_event_change(&mut tx, event_id).await?;
        }
        tx.commit().await?;
        self.board().refresh_facts(event_id).await?;
        self.refund_cancelled(event_id).await?;
        Ok(())
    }

    /// Refunds the live bookings of cancelled events (all of them, or one
    /// event's); returns how many bookings it refunded.
    pub(crate) async fn refund_cancelled_events(&self) -> Result<u32> {
        let events = sqlx::query_scalar!(
            r#"SELECT DISTINCT e.event_id FROM events e JOIN bookings b USING (event_id)
                WHERE e.cancelled_at IS NOT NULL AND b.status IN ('confirmed', 'partially_refunded')"#
        )
        .fetch_all(self.pool())
        .await?;
        let mut done = 0;
        // One event's failure (a booking that cannot be refunded, say) is
        // logged and retried next round; it does not hold the others up.
        for event_id in events {
            match self.refund_cancelled(event_id.into()).await {
                Ok(n) => done += n,
                Err(e) => tracing::error!(%event_id, error = %e, "refunding a cancelled event's bookings failed; will retry"),
            }
        }
        Ok(done)
    }

    async fn refund_cancelled(&self, event_id: EventId) -> Result<u32> {
        let mut done = 0;
        // One booking per transaction: a crash part-way leaves every booking
        // either wholly refunded (its refund recorded, to be sent) or untouched.
        loop {
            let mut tx = crate::db::begin(self.pool()).await?;
            // Another instance (or a second cancel) may be at it too: each
            // booking is taken by one of them.
            let Some(booking_id) = sqlx::query_scalar!(
                r#"SELECT b.booking_id FROM bookings b JOIN events e USING (event_id)
                    WHERE b.event_id = $1 AND e.cancelled_at IS NOT NULL AND b.status IN ('confirmed', 'partially_refunded')
                    ORDER BY b.created_at LIMIT 1 FOR UPDATE OF b SKIP LOCKED"#,
                event_id.as_uuid()
            )
            .fetch_optional(&mut *tx)
            .await?
            else {
                return Ok(done);
            };
            let booking_id = BookingId::from(booking_id);
            let live: Vec<TicketId> =
                sqlx::query_scalar!("SELECT ticket_id FROM tickets WHERE booking_id = $1 AND state IN ('valid', 'checked_in')", booking_id.as_uuid())
                    .fetch_all(&mut *tx)
                    .await?
                    .into_iter()
                    .map(TicketId::from)
                    .collect();
            let voided = void_tickets(&mut tx, booking_id, &live, frontrow_model::TicketState::Void).await?;
            let seat_ids: Vec<String> = voided.iter().map(|t| t.seat_id.clone()).collect();
            seats::free_sold(&mut tx, booking_id, &seat_ids, None, Unsold::Cancel).await?;
            let amount: i64 = voided.iter().map(|t| i64::from(t.price_cents)).sum();
            settle_booking(&mut tx, booking_id, amount, BookingStatus::Cancelled).await?;
            let refund = match amount {
                0 => None,
                _ => Some(record_refund(&mut tx, booking_id, RefundKind::Cancel, (amount, 0), &live, None, "event cancelled").await?),
            };
            tx.commit().await?;
            self.board().seats_written();
            done += 1;
            self.fail_point(crate::FailPoint::AbortMidCancellation);
            if let Some(refund_id) = refund {
                self.send_refund(refund_id).await;
            }
        }
    }

    /// Asks the provider for a recorded refund; a failure leaves it pending
    /// for reconciliation to retry.
    pub(super) async fn send_refund(&self, refund_id: Uuid) {
        if let Err(e) = attempt_refund(self, refund_id).await {
            tracing::warn!(%refund_id, error = %e, "refund not completed yet; reconciliation will retry");
        }
    }
}

/// Tickets of the booking to take back: those asked for (each must be
/// part of it, valid, and named once), or every valid one. A checked-in
/// ticket is refused, whether named or part of the whole booking.
pub(super) async fn chosen_tickets(conn: &mut PgConnection, booking_id: BookingId, asked: Option<&[TicketId]>) -> Result<Vec<TicketId>> {
    use frontrow_model::TicketState as T;
    let tickets =
        sqlx::query!(r#"SELECT ticket_id, state AS "state: frontrow_model::TicketState" FROM tickets WHERE booking_id = $1"#, booking_id.as_uuid())
            .fetch_all(conn)
            .await?;
    let wanted: Vec<TicketId> = match asked {
        Some(ids) => {
            if ids.is_empty() {
                return Err(EngineError::invalid("ticket_ids, when given, must name at least one ticket"));
            }
            let distinct: std::collections::HashSet<&TicketId> = ids.iter().collect();
            if distinct.len() != ids.len() {
                return Err(EngineError::invalid("ticket_ids names a ticket more than once"));
            }
            for id in ids {
                match tickets.iter().find(|t| TicketId::from(t.ticket_id) == *id) {
                    None => return Err(EngineError::NoSuch(format!("ticket {id} is not part of this booking"))),
                    Some(t) if t.state == T::CheckedIn => return Err(EngineError::TicketUsed),
                    Some(t) if matches!(t.state, T::Refunded | T::Void) => return Err(EngineError::AlreadyRefunded),
                    Some(_) => {}
                }
            }
            ids.to_vec()
        }
        None => {
            if tickets.iter().any(|t| t.state == T::CheckedIn) {
                return Err(EngineError::TicketUsed);
            }
            tickets.iter().filter(|t| t.state == T::Valid).map(|t| TicketId::from(t.ticket_id)).collect()
        }
    };
    if wanted.is_empty() {
        return Err(EngineError::AlreadyRefunded);
    }
    Ok(wanted)
}

/// What taking tickets back did.
pub(super) struct TakeBack {
    pub seat_ids: Vec<String>,
    pub seats_released: Vec<String>,
    pub refund_cents: i64,
    pub kept_cents: i64,
    pub status: BookingStatus,
    /// The refund to send (none when nothing is owed).
    pub refund_id: Option<Uuid>,
}

/// Turns the valid tickets `wanted` refunded, puts their seats back on
/// sale and records the refund (each ticket's price less what `terms` let
/// the seller keep), all in the caller's transaction.
pub(super) async fn take_back(
    tx: &mut PgConnection,
    booking_id: BookingId,
    wanted: &[TicketId],
    actor: Option<UserId>,
    kind: RefundKind,
    terms: &RefundPolicy,
    reason: &str,
) -> Result<TakeBack> {
    let taken = void_tickets(&mut *tx, booking_id, wanted, frontrow_model::TicketState::Refunded).await?;
    if taken.len() != wanted.len() {
        // The booking row is locked against other refunds and the
        // cancellation, but not against the door: a ticket was checked in
        // between the caller's read and this change. The caller's
        // transaction is dropped: nothing is changed; the ticket is used.
        return Err(EngineError::TicketUsed);
    }
    let seat_ids: Vec<String> = taken.iter().map(|t| t.seat_id.clone()).collect();
    let seats_released = seats::free_sold(&mut *tx, booking_id, &seat_ids, actor, Unsold::Refund).await?;
    let kept_each: Vec<i64> = taken.iter().map(|t| terms.kept_of(t.price_cents)).collect();
    if kept_each.iter().any(|k| *k > 0) {
        let ids: Vec<Uuid> = taken.iter().map(|t| t.ticket_id).collect();
        sqlx::query!(
            "UPDATE tickets t SET kept_cents = k.kept FROM UNNEST($1::uuid[], $2::int8[]) AS k(ticket_id, kept) WHERE t.ticket_id = k.ticket_id",
            &ids,
            &kept_each,
        )
        .execute(&mut *tx)
        .await?;
    }
    let kept: i64 = kept_each.iter().sum();
    let refund_cents: i64 = taken.iter().map(|t| i64::from(t.price_cents)).sum::<i64>() - kept;
    let status = settle_booking(&mut *tx, booking_id, refund_cents, BookingStatus::Refunded).await?;
    let refund_id = record_refund(&mut *tx, booking_id, kind, (refund_cents, kept), wanted, actor, reason).await?;
    // Nothing owed (free tickets, or all of it kept): the refund is recorded
    // settled (it is the buyer's mail and the books' line), not sent.
    let refund_id = (refund_cents > 0).then_some(refund_id);
    Ok(TakeBack { seat_ids, seats_released, refund_cents, kept_cents: kept, status, refund_id })
}

/// Turns live tickets of the booking `to` refunded or void (each at most
/// once); returns those it changed.
async fn void_tickets(
    conn: &mut PgConnection,
    booking_id: BookingId,
    ticket_ids: &[TicketId],
    to: frontrow_model::TicketState,
) -> Result<Vec<TakenBack>> {
    Ok(sqlx::query_as!(
        TakenBack,
        r#"UPDATE tickets SET state = $3::ticket_state, voided_at = now()
            WHERE booking_id = $1 AND ticket_id = ANY($2) AND state IN ('valid', 'checked_in')
              AND ($3::ticket_state = 'void' OR state = 'valid')
        RETURNING ticket_id, seat_id, price_cents"#,
        booking_id.as_uuid(),
        ticket_ids as &[TicketId],
        to as frontrow_model::TicketState,
    )
    .fetch_all(conn)
    .await?)
}

/// Adds `amount` to what the booking has had back; its status becomes
/// `all_gone` once no live ticket is left, else partially refunded.
async fn settle_booking(conn: &mut PgConnection, booking_id: BookingId, amount: i64, all_gone: BookingStatus) -> Result<BookingStatus> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE bookings b SET refunded_cents = refunded_cents + $2,
                  status = CASE WHEN EXISTS (SELECT 1 FROM tickets t WHERE t.booking_id = b.booking_id AND t.voided_at IS NULL)
                                THEN 'partially_refunded'::booking_status ELSE $3 END
            WHERE booking_id = $1 RETURNING status AS "status: BookingStatus""#,
        booking_id.as_uuid(),
        amount,
        all_gone as BookingStatus,
    )
    .fetch_one(conn)
    .await?)
}

async fn booking_refunded(conn: &mut PgConnection, booking_id: BookingId) -> Result<i64> {
    Ok(sqlx::query_scalar!("SELECT refunded_cents FROM bookings WHERE booking_id = $1", booking_id.as_uuid()).fetch_one(conn).await?)
}

/// Records a refund of the booking's payment, to be sent to the provider.
async fn record_refund(
    conn: &mut PgConnection,
    booking_id: BookingId,
    kind: RefundKind,
    (amount, kept): (i64, i64),
    ticket_ids: &[TicketId],
    actor: Option<UserId>,
    reason: &str,
) -> Result<Uuid> {
    let refund_id = Uuid::new_v4();
    let inserted = sqlx::query!(
        r#"INSERT INTO refunds (refund_id, payment_id, amount_cents, reason, kind, booking_id, ticket_ids, actor_id, kept_cents, status)
           SELECT $1, pi.payment_id, $2::bigint, $3, $4, $5, $6, $7, $8,
                  CASE WHEN $2::bigint = 0 THEN 'succeeded' ELSE 'pending' END::refund_state
             FROM checkouts c JOIN payment_intents pi USING (checkout_id)
            WHERE c.booking_id = $5"#,
        refund_id,
        amount,
        reason.trim(),
        kind as RefundKind,
        booking_id.as_uuid(),
        ticket_ids as &[TicketId],
        actor.map(|id| id.as_uuid()),
        kept,
    )
    .execute(conn)
    .await?;
    if inserted.rows_affected() != 1 {
        return Err(EngineError::Internal(format!("booking {booking_id} has no payment to refund")));
    }
    Ok(refund_id)
}

/// The stored answer to this staff member's request with `key`, if any
/// (409 if the key was used for another request).
pub(super) async fn replay<T: serde::de::DeserializeOwned>(
    conn: &mut PgConnection,
    user_id: UserId,
    key: &IdempotencyKey,
    hash: &str,
) -> Result<Option<T>> {
    let stored = sqlx::query!(
        "SELECT request_hash, response FROM staff_requests WHERE user_id = $1 AND idempotency_key = $2",
        user_id.as_uuid(),
        key.as_str()
    )
    .fetch_optional(conn)
    .await?;
    match stored {
        None => Ok(None),
        Some(s) if s.request_hash != hash => Err(EngineError::IdempotencyKeyReused),
        Some(s) => serde_json::from_value(s.response).map(Some).map_err(|e| EngineError::Internal(format!("a stored answer: {e}"))),
    }
}

/// Stores the answer to this request with `key` (in the transaction that
/// made the change, so a retry after a crash finds either both or neither).
pub(super) async fn remember<T: Serialize>(conn: &mut PgConnection, user_id: UserId, key: &IdempotencyKey, hash: &str, answer: &T) -> Result<()> {
    let response = serde_json::to_value(answer).map_err(|e| EngineError::Internal(format!("storing an answer: {e}")))?;
    let stored = sqlx::query!(
        r#"INSERT INTO staff_requests (user_id, idempotency_key, request_hash, response) VALUES ($1, $2, $3, $4)
           ON CONFLICT (user_id, idempotency_key) DO NOTHING"#,
        user_id.as_uuid(),
        key.as_str(),
        hash,
        response
    )
    .execute(conn)
    .await?;
    if stored.rows_affected() == 0 {
        // The same key finished meanwhile (its transaction held the key's row).
        return Err(EngineError::IdempotencyKeyInUse);
    }
    Ok(())
}
