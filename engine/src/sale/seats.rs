//! Seat transitions: every change to a seat's state, each with its row in
//! the seat change log (`seat_events`), in one place.
//!
//! ```text
//!   available ──claim──▶ held ──reserve_for_payment──▶ payment_pending ──sell──▶ sold
//!    ▲  ▲  ▲              │  │                              │   │                 │
//!    │  │  └──release─────┘  └◀──────return_to_hold─────────┘   │                 │
//!    │  └──reap (lease lapsed), staff_release                    │                 │
//!    └─────────release_unpaid (payment deadline) ─────────────────┘                 │
//!    └─────────free_sold (refund, cancellation) ───────────────────────────────────┘
//!   available ◀──block / unblock──▶ blocked ──claim (counter)──▶ held …
//! ```
//!
//! Each transition is one conditional UPDATE whose predicate is the whole
//! rule (the state it comes from, the hold's current fencing token, the
//! lease), so two callers racing for a seat cannot both win: the loser's
//! UPDATE matches no row. A blocked seat keeps its reason while a counter
//! sale holds it, so every way back from a hold returns it to blocked, not
//! to sale: what a freed seat looks like is written once, `seat_freed` in
//! the migrations, and each way of letting go uses it; the lapsed lease and
//! the free and held seat are SQL functions too (`seat_rules` migration).
//! The transitions taken many requests at a time are database functions,
//! one call per batch: claim is `hold_batch`, reserve_for_payment is
//! `checkout_reserve` and sell is `checkout_sell` (see the migrations and
//! [`super::hold_batch`], [`super::checkout`]).
//! Callers run the others inside their own short transactions (a fan's release
//! is one statement, a transaction of its own); nothing here holds a lock
//! across requests.

use chrono::{DateTime, Utc};
use frontrow_model::{BookingId, EventId, HoldId, HoldState, UserId};
use sqlx::PgConnection;

use crate::error::Result;
use crate::tokens::token_tag;

/// `count` free places of a standing area for the box office, locked in
/// this transaction (any another transaction has locked are skipped, so the
/// desk never waits on an on-sale): fewer when fewer are free.
pub(crate) async fn free_places(conn: &mut PgConnection, event_id: EventId, section: &str, count: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        r#"SELECT seat_id FROM seats
            WHERE event_id = $1 AND section = $2 AND kind = 'standing'
              AND seat_free(state, hold_expires_at, blocked_reason)
            ORDER BY position
            LIMIT $3
              FOR UPDATE SKIP LOCKED"#,
        event_id.as_uuid(),
        section,
        count,
    )
    .fetch_all(conn)
    .await?)
}

/// A seat a hold just claimed.
pub(crate) struct ClaimedSeat {
    pub seat_id: String,
    pub price_cents: i32,
    pub expires_at: DateTime<Utc>,
}

/// Who claims seats outside a fan's hold, which decides the seats it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaimPurpose {
    /// A counter sale: blocked seats too.
    Counter,
    /// An offer to a fan on the waiting list: only free seats.
    WaitlistOffer,
}

impl ClaimPurpose {
    fn reason(self) -> &'static str {
        match self {
            ClaimPurpose::Counter => "counter_hold",
            ClaimPurpose::WaitlistOffer => "waitlist_offer",
        }
    }
}

/// Seats the counter or the waiting list may take (see [`ClaimPurpose`];
/// free includes a lapsed lease, by lazy expiry) → held by `hold_id` under
/// `token` for `ttl_seconds`. (Fans' holds go through the `hold_batch`
/// function.) Returns the seats it could claim; the caller rolls back
/// unless it got all of them.
pub(crate) async fn claim(
    conn: &mut PgConnection,
    event_id: EventId,
    seat_ids: &[String],
    hold_id: HoldId,
    token: &str,
    holder: UserId,
    ttl_seconds: i32,
    purpose: ClaimPurpose,
) -> Result<Vec<ClaimedSeat>> {
    Ok(sqlx::query_as!(
        ClaimedSeat,
        r#"WITH claimed AS (
               UPDATE seats s
                  SET state = 'held', hold_id = $3, hold_token = $4, holder_id = $5,
                      hold_expires_at = now() + make_interval(secs => $6::int), booking_id = NULL,
                      version = nextval('seat_version_seq')
                 FROM seats prior
                WHERE s.event_id = $1 AND s.seat_id = ANY($2::text[])
                  AND prior.event_id = s.event_id AND prior.seat_id = s.seat_id
                  AND CASE WHEN $8 THEN s.state = 'available'
                                        OR (s.state = 'held' AND lease_lapsed(s.hold_expires_at))
                                        OR s.state = 'blocked'
                           ELSE seat_free(s.state, s.hold_expires_at, s.blocked_reason) END
            RETURNING s.seat_id, s.price_cents, s.version, s.hold_expires_at, prior.state AS prior_state
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT $1, seat_id, version, prior_state, 'held', $3, $7, $5, $9::text::seat_change_reason
               FROM claimed
           )
           SELECT seat_id AS "seat_id!", price_cents AS "price_cents!", hold_expires_at AS "expires_at!: DateTime<Utc>"
           FROM claimed"#,
        event_id.as_uuid(),
        seat_ids,
        hold_id.as_uuid(),
        token,
        holder.as_uuid(),
        ttl_seconds,
        token_tag(token),
        purpose == ClaimPurpose::Counter,
        purpose.reason(),
    )
    .fetch_all(conn)
    .await?)
}

/// One fan letting a hold go, as [`release`] takes them.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ReleaseRequest {
    pub hold: HoldId,
    pub token: String,
    /// The token's tag for the seat audit rows.
    pub tag: String,
    pub fan: UserId,
}

/// held (lease live, current token) → free (available, or blocked again):
/// the holders let the seats go, and each hold is marked released. Many
/// fans' releases in one statement, so one round trip and one commit, each
/// request judged on its own. Returns, per request in order, the hold's
/// state before (`None`: not this fan's hold) and the seats freed.
pub(crate) async fn release(conn: &mut PgConnection, requests: &[ReleaseRequest]) -> Result<Vec<(Option<HoldState>, i64)>> {
    let body = serde_json::to_value(requests).map_err(|e| crate::error::EngineError::Internal(e.to_string()))?;
    let rows = sqlx::query!(
        r#"WITH request AS (
               SELECT (n - 1)::int AS i, (r->>'hold')::uuid AS hold, r->>'token' AS token, r->>'tag' AS tag, (r->>'fan')::uuid AS fan
                 FROM jsonb_array_elements($1) WITH ORDINALITY AS e(r, n)
           ), first AS (
               -- A request sent twice in one batch (a double click) frees
               -- the seats for its first copy; the others find them gone,
               -- as they would one by one.
               SELECT DISTINCT ON (hold, token, fan) * FROM request ORDER BY hold, token, fan, i
           ), found AS (
               -- Each hold's seats by the seats' index of holds, one look-up a hold
               -- (the subquery is kept apart, so nothing else is on offer).
               -- Joined, or with the state in its conditions, the planner
               -- may scan a partial index whole (held seats, or holders),
               -- taking it for empty from statistics made before the sale,
               -- and each release would read every held seat of the event.
               SELECT q.i, q.hold, q.token, q.tag, q.fan, s.event_id, s.seat_id
                 FROM first q CROSS JOIN LATERAL (SELECT s.event_id, s.seat_id FROM seats s WHERE s.hold_id = q.hold OFFSET 0) s
           ), locked AS (
               -- Locked by their keys alone, in one order (the one hold_batch
               -- and the checkout use), so statements side by side never wait
               -- on each other in a circle; the rows come back as they are
               -- once locked.
               SELECT s.event_id, s.seat_id, s.state, s.hold_id, s.hold_token, s.holder_id, s.hold_expires_at
                 FROM seats s
                WHERE s.event_id = ANY ((SELECT array_agg(DISTINCT event_id) FROM found)::uuid[])
                  AND s.seat_id = ANY ((SELECT array_agg(seat_id) FROM found)::text[])
                ORDER BY s.event_id, s.seat_id
                  FOR UPDATE
           ), target AS (
               SELECT f.i, f.hold, f.tag, f.fan, l.event_id, l.seat_id
                 FROM locked l JOIN found f ON f.event_id = l.event_id AND f.seat_id = l.seat_id
                WHERE l.hold_id = f.hold AND l.hold_token = f.token AND l.holder_id = f.fan
                  AND l.state = 'held' AND NOT lease_lapsed(l.hold_expires_at)
           ), freed AS (
               -- (Locked above: nothing can have changed them since.)
               UPDATE seats s
                  SET (state, hold_id, hold_token, holder_id, hold_expires_at, version) = (SELECT * FROM seat_freed(s.blocked_reason))
                 FROM target t
                WHERE s.event_id = t.event_id AND s.seat_id = t.seat_id
            RETURNING t.i, t.hold, t.tag, t.fan, s.event_id, s.seat_id, s.version, s.state
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT event_id, seat_id, version, 'held', state, hold, tag, fan, 'release' FROM freed
           ), ended AS (
               UPDATE holds SET state = 'released', ended_at = now()
                WHERE hold_id IN (SELECT hold FROM freed)
           )
           -- The hold's state by its key alone, request by request: joined,
           -- or with the fan in the condition, the planner may read all the
           -- holds, or all of the fan's.
           SELECT q.i AS "i!", (SELECT CASE WHEN h.user_id = q.fan THEN h.state END FROM holds h WHERE h.hold_id = q.hold) AS "state?: HoldState",
                  (SELECT count(*) FROM freed f WHERE f.i = q.i) AS "released!"
             FROM request q
            ORDER BY q.i"#,
        body,
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.state, r.released)).collect())
}

/// held (any token, lease live or not) → free, by staff, for a hold stuck
/// on a seat. A hold whose payment is in flight is left to reconciliation.
pub(crate) async fn staff_release(conn: &mut PgConnection, hold_id: HoldId, actor: UserId) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        r#"WITH prior AS (
               -- Locked in the one order (see hold_batch), as a fan's own
               -- release of the same hold locks them.
               SELECT event_id, seat_id, hold_token FROM seats
                WHERE hold_id = $1 AND state = 'held'
                ORDER BY event_id, seat_id
                  FOR UPDATE
           ), freed AS (
               UPDATE seats s
                  SET (state, hold_id, hold_token, holder_id, hold_expires_at, version) = (SELECT * FROM seat_freed(s.blocked_reason))
                 FROM prior
                WHERE s.hold_id = $1 AND s.state = 'held' AND prior.event_id = s.event_id AND prior.seat_id = s.seat_id
            RETURNING s.event_id, s.seat_id, s.version, s.state, prior.hold_token
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT event_id, seat_id, version, 'held', state, $1,
                      substr(encode(sha256(convert_to(hold_token, 'UTF8')), 'hex'), 1, 12), $2, 'staff_release'
               FROM freed
           )
           SELECT seat_id AS "seat_id!" FROM freed ORDER BY seat_id"#,
        hold_id.as_uuid(),
        actor.as_uuid(),
    )
    .fetch_all(conn)
    .await?)
}

/// payment_pending (current token) → held again until the hold's own
/// expiry: nothing was charged, so the buyer may try another card.
pub(crate) async fn return_to_hold(conn: &mut PgConnection, hold_id: HoldId, token: &str) -> Result<u64> {
    Ok(sqlx::query!(
        r#"WITH back AS (
               UPDATE seats s
                  SET state = 'held', hold_expires_at = h.expires_at, version = nextval('seat_version_seq')
                 FROM holds h
                WHERE h.hold_id = $1 AND s.hold_id = $1 AND s.hold_token = $2 AND s.state = 'payment_pending'
            RETURNING s.event_id, s.seat_id, s.version, s.holder_id
           )
           INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
           SELECT event_id, seat_id, version, 'payment_pending', 'held', $1, $3, holder_id, 'payment_not_taken' FROM back"#,
        hold_id.as_uuid(),
        token,
        token_tag(token),
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// payment_pending past its deadline (current token) → free: the payment's
/// outcome is still unknown, and the seats go back on sale (a late capture
/// is refunded).
pub(crate) async fn release_unpaid(conn: &mut PgConnection, hold_id: HoldId, token: &str) -> Result<i64> {
    Ok(sqlx::query_scalar!(
        r#"WITH freed AS (
               UPDATE seats
                  SET (state, hold_id, hold_token, holder_id, hold_expires_at, version) = (SELECT * FROM seat_freed(blocked_reason))
                WHERE hold_id = $1 AND hold_token = $2 AND state = 'payment_pending' AND lease_lapsed(hold_expires_at)
            RETURNING event_id, seat_id, version, state
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, reason)
               SELECT event_id, seat_id, version, 'payment_pending', state, $1, $3, 'payment_deadline' FROM freed
           )
           SELECT count(*) AS "n!" FROM freed"#,
        hold_id.as_uuid(),
        token,
        token_tag(token),
    )
    .fetch_one(conn)
    .await?)
}

/// held with a lapsed lease → free, at most `batch` seats of the event, and
/// their holds marked expired. Re-checks the lapse in the UPDATE, so it
/// never frees a seat that lazy expiry just handed to someone else.
pub(crate) async fn reap(conn: &mut PgConnection, event_id: EventId, batch: i64) -> Result<i64> {
    Ok(sqlx::query_scalar!(
        r#"WITH lapsed AS (
               SELECT seat_id, hold_id, hold_token FROM seats
                WHERE event_id = $1 AND state = 'held' AND lease_lapsed(hold_expires_at)
                ORDER BY hold_expires_at
                LIMIT $2
                  FOR UPDATE SKIP LOCKED
           ), freed AS (
               UPDATE seats s
                  SET (state, hold_id, hold_token, holder_id, hold_expires_at, version) = (SELECT * FROM seat_freed(s.blocked_reason))
                 FROM lapsed l
                WHERE s.event_id = $1 AND s.seat_id = l.seat_id
                  AND s.state = 'held' AND lease_lapsed(s.hold_expires_at)
            RETURNING s.seat_id, s.version, s.state, l.hold_id, l.hold_token
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, reason)
               SELECT $1, seat_id, version, 'held', state, hold_id,
                      substr(encode(sha256(convert_to(hold_token, 'UTF8')), 'hex'), 1, 12), 'expired'
               FROM freed
           ), ended AS (
               UPDATE holds SET state = 'expired', ended_at = now()
                WHERE hold_id IN (SELECT hold_id FROM freed) AND state = 'active'
           )
           SELECT count(*) AS "n!" FROM freed"#,
        event_id.as_uuid(),
        batch
    )
    .fetch_one(conn)
    .await?)
}

/// available → blocked with `reason`, all of `seat_ids` or none (the caller
/// rolls back on a shortfall). Returns the seats blocked.
pub(crate) async fn block(conn: &mut PgConnection, event_id: EventId, seat_ids: &[String], reason: &str, actor: UserId) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        r#"WITH blocked AS (
               UPDATE seats
                  SET state = 'blocked', blocked_reason = $3, version = nextval('seat_version_seq')
                WHERE event_id = $1 AND seat_id = ANY($2::text[]) AND state = 'available'
            RETURNING seat_id, version
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, actor_id, reason)
               SELECT $1, seat_id, version, 'available', 'blocked', $4, 'block' FROM blocked
           )
           SELECT seat_id AS "seat_id!" FROM blocked ORDER BY seat_id"#,
        event_id.as_uuid(),
        seat_ids,
        reason,
        actor.as_uuid(),
    )
    .fetch_all(conn)
    .await?)
}

/// blocked → available, all of `seat_ids` or none (the caller rolls back
/// on a shortfall). Returns the seats released.
pub(crate) async fn unblock(conn: &mut PgConnection, event_id: EventId, seat_ids: &[String], actor: UserId) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        r#"WITH freed AS (
               UPDATE seats
                  SET state = 'available', blocked_reason = NULL, version = nextval('seat_version_seq')
                WHERE event_id = $1 AND seat_id = ANY($2::text[]) AND state = 'blocked'
            RETURNING seat_id, version
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, actor_id, reason)
               SELECT $1, seat_id, version, 'blocked', 'available', $3, 'unblock' FROM freed
           )
           SELECT seat_id AS "seat_id!" FROM freed ORDER BY seat_id"#,
        event_id.as_uuid(),
        seat_ids,
        actor.as_uuid(),
    )
    .fetch_all(conn)
    .await?)
}

/// Why a sold seat is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsold {
    Refund,
    Cancel,
}

/// sold (to `booking_id`) → available: its ticket was refunded, or the
/// event cancelled. Returns the seats freed.
pub(crate) async fn free_sold(
    conn: &mut PgConnection,
    booking_id: BookingId,
    seat_ids: &[String],
    actor: Option<UserId>,
    why: Unsold,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        r#"WITH freed AS (
               UPDATE seats
                  SET state = 'available', booking_id = NULL, version = nextval('seat_version_seq')
                WHERE booking_id = $1 AND seat_id = ANY($2::text[]) AND state = 'sold'
            RETURNING event_id, seat_id, version
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, actor_id, reason)
               SELECT event_id, seat_id, version, 'sold', 'available', $3,
                      CASE WHEN $4 THEN 'cancel'::seat_change_reason ELSE 'refund' END FROM freed
           )
           SELECT seat_id AS "seat_id!" FROM freed ORDER BY seat_id"#,
        booking_id.as_uuid(),
        seat_ids,
        actor.map(|id| id.as_uuid()),
        why == Unsold::Cancel,
    )
    .fetch_all(conn)
    .await?)
}

/// Of `seat_ids`, those the event has.
pub(crate) async fn known(conn: &mut PgConnection, event_id: EventId, seat_ids: &[String]) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!("SELECT seat_id FROM seats WHERE event_id = $1 AND seat_id = ANY($2::text[])", event_id.as_uuid(), seat_ids)
        .fetch_all(conn)
        .await?)
}

/// How many of a hold's seats wait for a payment, whatever the token.
pub(crate) async fn in_payment_by_hold(conn: &mut PgConnection, hold_id: HoldId) -> Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT count(*) AS "waiting!", count(*) FILTER (WHERE lease_lapsed(hold_expires_at)) AS "overdue!"
           FROM seats WHERE hold_id = $1 AND state = 'payment_pending'"#,
        hold_id.as_uuid()
    )
    .fetch_one(conn)
    .await?;
    Ok((r.waiting, r.overdue))
}

/// Events with lapsed holds the reaper should visit.
pub(crate) async fn events_with_lapsed_holds(conn: &mut PgConnection) -> Result<Vec<EventId>> {
    let ids =
        sqlx::query_scalar!("SELECT DISTINCT event_id FROM seats WHERE state = 'held' AND lease_lapsed(hold_expires_at)").fetch_all(conn).await?;
    Ok(ids.into_iter().map(EventId::from).collect())
}
