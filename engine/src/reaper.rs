//! The reaper: returns lapsed holds to the pool in batches.
//!
//! Lazy expiry already lets a new fan take a lapsed seat at once; the reaper
//! makes the seat map and the counts honest too. It works per event under a
//! transaction-scoped advisory lock, so across any number of server instances
//! exactly one reaper acts on an event at a time, and its UPDATE re-checks the
//! lapse so it can never free a seat that lazy expiry just handed to someone.

use uuid::Uuid;

use crate::error::Result;
use crate::holds::LOCK_REAPER;

/// Frees up to `batch` lapsed seats per event per round; returns seats freed.
pub async fn reap_once(pool: &sqlx::PgPool, batch: i64) -> Result<u64> {
    let events = sqlx::query_scalar!(
        "SELECT DISTINCT event_id FROM seats WHERE state = 'held' AND hold_expires_at <= now()"
    )
    .fetch_all(pool)
    .await?;
    let mut freed = 0;
    for event_id in events {
        freed += reap_event(pool, event_id, batch).await?;
    }
    if freed > 0 {
        metrics::counter!("frontrow_seats_reaped_total").increment(freed);
    }
    Ok(freed)
}

async fn reap_event(pool: &sqlx::PgPool, event_id: Uuid, batch: i64) -> Result<u64> {
    let mut total = 0;
    loop {
        let mut tx = pool.begin().await?;
        let ours = sqlx::query_scalar!(
            r#"SELECT pg_try_advisory_xact_lock($1, hashtext($2::uuid::text)) AS "locked!""#,
            LOCK_REAPER,
            event_id
        )
        .fetch_one(&mut *tx)
        .await?;
        if !ours {
            return Ok(total);
        }
        let freed = sqlx::query_scalar!(
            r#"WITH lapsed AS (
                   SELECT seat_id, hold_id, hold_token FROM seats
                    WHERE event_id = $1 AND state = 'held' AND hold_expires_at <= now()
                    ORDER BY hold_expires_at
                    LIMIT $2
                      FOR UPDATE SKIP LOCKED
               ), freed AS (
                   UPDATE seats s
                      SET state = 'available', hold_id = NULL, hold_token = NULL, holder_id = NULL,
                          hold_expires_at = NULL, version = nextval('seat_version_seq')
                     FROM lapsed l
                    WHERE s.event_id = $1 AND s.seat_id = l.seat_id
                      AND s.state = 'held' AND s.hold_expires_at <= now()
                RETURNING s.seat_id, s.version, l.hold_id, l.hold_token
               ), logged AS (
                   INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, reason)
                   SELECT $1, seat_id, version, 'held', 'available', hold_id,
                          substr(encode(sha256(convert_to(hold_token, 'UTF8')), 'hex'), 1, 12), 'expired'
                   FROM freed
               ), ended AS (
                   UPDATE holds SET state = 'expired', ended_at = now()
                    WHERE hold_id IN (SELECT hold_id FROM freed) AND state = 'active'
               )
               SELECT count(*) AS "n!" FROM freed"#,
            event_id,
            batch
        )
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        total += freed as u64;
        if freed < batch {
            return Ok(total);
        }
    }
}
