//! Holds: the compare-and-swap that claims seats, release by fencing token,
//! and the hold's status.
//!
//! A hold is one conditional UPDATE over all requested seats that succeeds
//! only where a seat is available or its lease has lapsed (lazy expiry). If it
//! claims fewer seats than asked, the transaction rolls back: all or nothing.
//! The transaction lives inside one call; nothing is locked between requests.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::catalogue::event_rules;
use crate::error::{EngineError, Result};
use crate::model::{Hold, HoldStatus};
use crate::tokens::{hold_token, token_tag};

/// Upper bound on seat ids in one request, far above any per-order limit, so
/// a huge array is refused before it reaches the database.
pub const MAX_SEAT_IDS_PER_REQUEST: usize = 100;
pub const MAX_SEAT_ID_LEN: usize = 64;
pub const MAX_TOKEN_LEN: usize = 128;

/// Advisory-lock namespaces (first key of the two-key form).
pub(crate) const LOCK_FAN_LIMIT: i32 = 0x4652_0001;
pub(crate) const LOCK_REAPER: i32 = 0x4652_0002;

fn validate_seat_ids(seat_ids: &[String]) -> Result<()> {
    if seat_ids.is_empty() {
        return Err(EngineError::invalid("seat_ids must not be empty"));
    }
    if seat_ids.len() > MAX_SEAT_IDS_PER_REQUEST {
        return Err(EngineError::invalid(format!("seat_ids may list at most {MAX_SEAT_IDS_PER_REQUEST} seats")));
    }
    let mut seen = HashSet::with_capacity(seat_ids.len());
    for id in seat_ids {
        if id.is_empty() || id.len() > MAX_SEAT_ID_LEN {
            return Err(EngineError::invalid("each seat id must be 1 to 64 characters"));
        }
        if !seen.insert(id.as_str()) {
            return Err(EngineError::invalid(format!("seat {id} is listed twice")));
        }
    }
    Ok(())
}

/// True for the errors PostgreSQL raises when two transactions must not both
/// proceed (deadlock, serialization failure): safe to retry the whole call.
pub(crate) fn is_retryable(err: &EngineError) -> bool {
    match err {
        EngineError::Database(sqlx::Error::Database(db)) => matches!(db.code().as_deref(), Some("40P01" | "40001")),
        _ => false,
    }
}

/// Claims every seat in `seat_ids` for `user_id`, or none of them, for a
/// caller with no admission from the waiting room.
pub async fn hold_seats(pool: &sqlx::PgPool, event_id: Uuid, user_id: Uuid, seat_ids: &[String]) -> Result<Hold> {
    hold_seats_admitted(pool, event_id, user_id, seat_ids, false).await
}

/// As [`hold_seats`]; `admitted` says the caller checked the fan's
/// admission token, which an event with its waiting room on requires.
pub async fn hold_seats_admitted(pool: &sqlx::PgPool, event_id: Uuid, user_id: Uuid, seat_ids: &[String], admitted: bool) -> Result<Hold> {
    validate_seat_ids(seat_ids)?;
    let rules = event_rules(pool, event_id).await?;
    if rules.waiting_room_enabled && !admitted {
        return Err(EngineError::NotAdmitted);
    }
    if rules.sale_opens_at > Utc::now() {
        return Err(EngineError::SaleNotOpen);
    }
    if seat_ids.len() > rules.max_seats_per_order as usize {
        return Err(EngineError::TooManySeats { max: rules.max_seats_per_order });
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_hold(pool, event_id, user_id, seat_ids, rules.hold_ttl_seconds, rules.max_seats_per_order).await {
            Err(e) if attempt < 3 && is_retryable(&e) => continue,
            other => {
                record_hold_metric(&other);
                return other;
            }
        }
    }
}

fn record_hold_metric(outcome: &Result<Hold>) {
    let label = match outcome {
        Ok(_) => "held",
        Err(EngineError::SeatsUnavailable { .. }) => "conflict",
        Err(EngineError::TooManySeats { .. }) => "too_many",
        Err(_) => "error",
    };
    metrics::counter!("frontrow_hold_attempts_total", "outcome" => label).increment(1);
}

async fn try_hold(
    pool: &sqlx::PgPool,
    event_id: Uuid,
    user_id: Uuid,
    seat_ids: &[String],
    ttl_seconds: i32,
    max_per_order: i32,
) -> Result<Hold> {
    let hold_id = Uuid::new_v4();
    let token = hold_token();
    let tag = token_tag(&token);
    let mut tx = pool.begin().await?;

    // The per-fan limit counts live holds and bookings; serialise this fan's
    // own concurrent holds for the event so two of them cannot both pass it.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text || $3::uuid::text))",
        LOCK_FAN_LIMIT,
        event_id,
        user_id
    )
    .execute(&mut *tx)
    .await?;
    let already = sqlx::query_scalar!(
        r#"SELECT (SELECT count(*) FROM seats
                    WHERE event_id = $1 AND holder_id = $2
                      AND (state = 'payment_pending' OR (state = 'held' AND hold_expires_at > now())))
                + (SELECT count(*) FROM tickets t JOIN bookings b USING (booking_id)
                    WHERE b.event_id = $1 AND b.user_id = $2 AND t.voided_at IS NULL) AS "n!""#,
        event_id,
        user_id
    )
    .fetch_one(&mut *tx)
    .await?;
    if already + seat_ids.len() as i64 > i64::from(max_per_order) {
        return Err(EngineError::TooManySeats { max: max_per_order });
    }

    // The compare-and-swap itself, with its audit-log entries, in one statement.
    let claimed = sqlx::query!(
        r#"WITH claimed AS (
               UPDATE seats s
                  SET state = 'held', hold_id = $3, hold_token = $4, holder_id = $5,
                      hold_expires_at = now() + make_interval(secs => $6::int), booking_id = NULL,
                      version = nextval('seat_version_seq')
                 FROM seats prior
                WHERE s.event_id = $1 AND s.seat_id = ANY($2::text[])
                  AND prior.event_id = s.event_id AND prior.seat_id = s.seat_id
                  AND (s.state = 'available' OR (s.state = 'held' AND s.hold_expires_at <= now()))
            RETURNING s.seat_id, s.price_cents, s.version, s.hold_expires_at, prior.state AS prior_state
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT $1, seat_id, version, prior_state, 'held', $3, $7, $5, 'hold' FROM claimed
           )
           SELECT seat_id AS "seat_id!", price_cents AS "price_cents!", hold_expires_at AS "expires_at!: DateTime<Utc>"
           FROM claimed"#,
        event_id,
        seat_ids,
        hold_id,
        token,
        user_id,
        ttl_seconds,
        tag,
    )
    .fetch_all(&mut *tx)
    .await?;

    if claimed.len() != seat_ids.len() {
        tx.rollback().await?;
        return Err(explain_shortfall(pool, event_id, seat_ids, claimed.iter().map(|c| c.seat_id.as_str())).await);
    }

    let expires_at = claimed[0].expires_at;
    let total_cents: i64 = claimed.iter().map(|c| i64::from(c.price_cents)).sum();
    sqlx::query!(
        r#"INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)"#,
        hold_id,
        event_id,
        user_id,
        token,
        seat_ids,
        total_cents,
        expires_at as DateTime<Utc>,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Hold { hold_id, hold_token: token, event_id, seat_ids: seat_ids.to_vec(), expires_at, total_cents })
}

/// After a failed claim: unknown seat ids are the caller's mistake (422);
/// otherwise the seats not claimed are the conflicts (409).
async fn explain_shortfall<'a>(
    pool: &sqlx::PgPool,
    event_id: Uuid,
    seat_ids: &[String],
    claimed: impl Iterator<Item = &'a str>,
) -> EngineError {
    let known = match sqlx::query_scalar!(
        "SELECT seat_id FROM seats WHERE event_id = $1 AND seat_id = ANY($2::text[])",
        event_id,
        seat_ids
    )
    .fetch_all(pool)
    .await
    {
        Ok(known) => known.into_iter().collect::<HashSet<_>>(),
        Err(e) => return e.into(),
    };
    let unknown: Vec<&String> = seat_ids.iter().filter(|id| !known.contains(*id)).collect();
    if !unknown.is_empty() {
        let list: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return EngineError::invalid(format!("unknown seat ids: {}", list.join(", ")));
    }
    let claimed: HashSet<&str> = claimed.collect();
    let conflict_seats = seat_ids.iter().filter(|id| !claimed.contains(id.as_str())).cloned().collect();
    EngineError::SeatsUnavailable { conflict_seats }
}

/// Gives the seats back at once. Only the current, unexpired token can.
pub async fn release_hold(pool: &sqlx::PgPool, user_id: Uuid, hold_id: Uuid, token: &str) -> Result<()> {
    let hold = sqlx::query!(
        r#"SELECT event_id, state::text AS "state!" FROM holds WHERE hold_id = $1 AND user_id = $2"#,
        hold_id,
        user_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    if token.len() > MAX_TOKEN_LEN {
        return Err(EngineError::HoldExpired);
    }
    let mut tx = pool.begin().await?;
    let released = sqlx::query_scalar!(
        r#"WITH freed AS (
               UPDATE seats
                  SET state = 'available', hold_id = NULL, hold_token = NULL, holder_id = NULL,
                      hold_expires_at = NULL, version = nextval('seat_version_seq')
                WHERE hold_id = $1 AND hold_token = $2 AND state = 'held' AND hold_expires_at > now()
            RETURNING event_id, seat_id, version
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT event_id, seat_id, version, 'held', 'available', $1, $3, $4, 'release' FROM freed
           )
           SELECT count(*) AS "n!" FROM freed"#,
        hold_id,
        token,
        token_tag(token),
        user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    if released == 0 {
        tx.rollback().await?;
        return Err(if hold.state == "checking_out" { EngineError::CheckoutInProgress } else { EngineError::HoldExpired });
    }
    sqlx::query!("UPDATE holds SET state = 'released', ended_at = now() WHERE hold_id = $1", hold_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn hold_status(pool: &sqlx::PgPool, user_id: Uuid, hold_id: Uuid) -> Result<HoldStatus> {
    let h = sqlx::query!(
        r#"SELECT hold_id, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", state::text AS "state!", expires_at <= now() AS "lapsed!"
           FROM holds WHERE hold_id = $1 AND user_id = $2"#,
        hold_id,
        user_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let state = if h.state == "active" && h.lapsed { "expired".to_owned() } else { h.state };
    Ok(HoldStatus { hold_id: h.hold_id, event_id: h.event_id, seat_ids: h.seat_ids, expires_at: h.expires_at, state })
}

/// The fan's live hold on the event, if any (the newest), so a reloaded page
/// can pick up where the fan was, including in the middle of paying (the
/// page then re-sends the same idempotency key and gets the first answer).
pub async fn active_hold(pool: &sqlx::PgPool, user_id: Uuid, event_id: Uuid) -> Result<Option<Hold>> {
    Ok(sqlx::query_as!(
        Hold,
        r#"SELECT hold_id, hold_token, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", total_cents
           FROM holds
           WHERE user_id = $1 AND event_id = $2 AND state IN ('active', 'checking_out') AND expires_at > now()
           ORDER BY created_at DESC LIMIT 1"#,
        user_id,
        event_id
    )
    .fetch_optional(pool)
    .await?)
}
