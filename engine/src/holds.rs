//! Holds: claiming seats all-or-nothing, releasing them by fencing token,
//! and the hold's status.
//!
//! A hold is one conditional UPDATE over all requested seats (see
//! [`seats::claim`]) inside one short transaction; if it claims fewer seats
//! than asked, the transaction rolls back and the conflicts are named.
//! Nothing is locked between requests.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_model::{seat_list, Hold, HoldState, HoldStatus, HoldToken, IdempotencyKey, SeatId};
use uuid::Uuid;

use crate::admission::Admission;
use crate::db::{retrying, LOCK_FAN_LIMIT};
use crate::error::{EngineError, Result};
use crate::seats;
use crate::tokens::{hold_token, sha256_hex};
use crate::Engine;

/// A hold asked for, and whether it is a new one or one the fan already had.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub hold: Hold,
    /// The same request came again (its key, or exactly the seats of a live
    /// hold of this fan): this is that hold, not a new one.
    pub existing: bool,
}

/// What makes two hold requests the same: the event and the set of seats.
fn hold_request_hash(event_id: Uuid, seat_ids: &[String]) -> String {
    let mut sorted: Vec<&str> = seat_ids.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sha256_hex(format!("{event_id}\n{}", sorted.join("\n")).as_bytes())
}

impl Engine {
    /// Claims every seat in `seat_ids` for `fan`, or none of them. An event
    /// whose waiting room is on needs the fan's [`Admission`].
    ///
    /// A retry is safe: with the `key` of an earlier request for the same
    /// seats, that hold comes back while it lives (another request under the
    /// key is refused); without one, asking again for exactly the seats of a
    /// live hold of this fan answers that hold rather than naming the fan's
    /// own seats as taken.
    pub async fn hold(
        &self,
        fan: Uuid,
        event_id: Uuid,
        seat_ids: &[SeatId],
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let outcome = match self.hold_seats(fan, event_id, seat_ids, admission, key).await {
            // A lost race: offer the nearest seats that are free together.
            Err(EngineError::SeatsUnavailable { conflict_seats, .. }) => {
                let suggestion = self.nearest_free(event_id, &conflict_seats, seat_ids.len()).await;
                Err(EngineError::SeatsUnavailable { conflict_seats, suggestion })
            }
            other => other,
        };
        record_hold_metric(&outcome);
        outcome
    }

    /// [`Engine::hold`] without the suggestion after a lost race.
    pub(crate) async fn hold_seats(
        &self,
        fan: Uuid,
        event_id: Uuid,
        seat_ids: &[SeatId],
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        seat_list(seat_ids)?;
        let rules = self.rules(event_id).await?;
        rules.check_can_hold(fan, admission)?;
        if seat_ids.len() > rules.max_seats_per_order as usize {
            return Err(EngineError::TooManySeats { max: rules.max_seats_per_order });
        }
        let ids: Vec<String> = seat_ids.iter().map(|s| s.as_str().to_owned()).collect();
        let request_hash = hold_request_hash(event_id, &ids);
        let key = key.map(IdempotencyKey::as_str);
        let fresh = retrying(|| self.try_hold(event_id, fan, &ids, rules.hold_ttl_seconds, rules.max_seats_per_order, key, &request_hash)).await;
        match fresh {
            Ok(hold) => Ok(Held { hold, existing: false }),
            // Seats taken, or the key already used: perhaps by this very
            // request, sent before.
            Err(e @ (EngineError::SeatsUnavailable { .. } | EngineError::IdempotencyKeyInUse)) => {
                match self.earlier_hold(fan, event_id, &ids, key, &request_hash).await? {
                    Some(hold) => Ok(Held { hold, existing: true }),
                    None => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The live hold an earlier, identical request made: by its key, or
    /// (without a key) by exactly these seats. A key used for other seats,
    /// or whose hold has ended, is refused.
    async fn earlier_hold(&self, fan: Uuid, event_id: Uuid, seat_ids: &[String], key: Option<&str>, request_hash: &str) -> Result<Option<Hold>> {
        let row = sqlx::query!(
            r#"SELECT hold_id, hold_token, event_id, seat_ids, total_cents, expires_at AS "expires_at: DateTime<Utc>",
                      request_hash, state = 'active' AND expires_at > now() AS "live!"
                 FROM holds
                WHERE user_id = $1
                  AND CASE WHEN $2::text IS NOT NULL THEN idempotency_key = $2
                           ELSE event_id = $3 AND state = 'active' AND expires_at > now()
                                AND (SELECT array_agg(s ORDER BY s) FROM unnest(seat_ids) s) = (SELECT array_agg(s ORDER BY s) FROM unnest($4::text[]) s)
                      END
                LIMIT 1"#,
            fan,
            key,
            event_id,
            seat_ids,
        )
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else { return Ok(None) };
        if key.is_some() && r.request_hash.as_deref() != Some(request_hash) {
            return Err(EngineError::IdempotencyKeyReused);
        }
        if !r.live {
            return Err(EngineError::HoldExpired);
        }
        Ok(Some(Hold { hold_id: r.hold_id, hold_token: r.hold_token, event_id: r.event_id, seat_ids: r.seat_ids, expires_at: r.expires_at, total_cents: r.total_cents }))
    }

    #[allow(clippy::too_many_arguments)]
    async fn try_hold(
        &self,
        event_id: Uuid,
        fan: Uuid,
        seat_ids: &[String],
        ttl_seconds: i32,
        max_per_order: i32,
        key: Option<&str>,
        request_hash: &str,
    ) -> Result<Hold> {
        let hold_id = Uuid::new_v4();
        let token = hold_token();
        let mut tx = self.pool().begin().await?;

        // The per-fan limit counts live holds and bookings; serialise this fan's
        // own concurrent holds for the event so two of them cannot both pass it.
        sqlx::query!(
            "SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text || $3::uuid::text))",
            LOCK_FAN_LIMIT,
            event_id,
            fan
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
            fan
        )
        .fetch_one(&mut *tx)
        .await?;
        if already + seat_ids.len() as i64 > i64::from(max_per_order) {
            return Err(EngineError::TooManySeats { max: max_per_order });
        }

        let claimed = seats::claim(&mut tx, event_id, seat_ids, hold_id, &token, fan, ttl_seconds, seats::Claimant::Fan).await?;
        if claimed.len() != seat_ids.len() {
            tx.rollback().await?;
            return Err(self.explain_shortfall(event_id, seat_ids, claimed.iter().map(|c| c.seat_id.as_str())).await);
        }

        let expires_at = claimed[0].expires_at;
        let total_cents: i64 = claimed.iter().map(|c| i64::from(c.price_cents)).sum();
        let inserted = sqlx::query!(
            r#"INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at, idempotency_key, request_hash)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               ON CONFLICT (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"#,
            hold_id,
            event_id,
            fan,
            token,
            seat_ids,
            total_cents,
            expires_at as DateTime<Utc>,
            key,
            request_hash,
        )
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            // The key is already taken: give the seats back and answer by it.
            tx.rollback().await?;
            return Err(EngineError::IdempotencyKeyInUse);
        }
        tx.commit().await?;
        Ok(Hold { hold_id, hold_token: token, event_id, seat_ids: seat_ids.to_vec(), expires_at, total_cents })
    }

    /// After a failed claim: unknown seat ids are the caller's mistake (422);
    /// otherwise the seats not claimed are the conflicts (409).
    pub(crate) async fn explain_shortfall<'a>(&self, event_id: Uuid, seat_ids: &[String], claimed: impl Iterator<Item = &'a str>) -> EngineError {
        let known = match self.pool().acquire().await {
            Ok(mut conn) => match seats::known(&mut conn, event_id, seat_ids).await {
                Ok(known) => known.into_iter().collect::<HashSet<_>>(),
                Err(e) => return e,
            },
            Err(e) => return e.into(),
        };
        let unknown: Vec<&str> = seat_ids.iter().filter(|id| !known.contains(*id)).map(String::as_str).collect();
        if !unknown.is_empty() {
            return EngineError::invalid(format!("unknown seat ids: {}", unknown.join(", ")));
        }
        let claimed: HashSet<&str> = claimed.collect();
        let conflict_seats = seat_ids.iter().filter(|id| !claimed.contains(id.as_str())).cloned().collect();
        EngineError::SeatsUnavailable { conflict_seats, suggestion: None }
    }

    /// The best block of `count` free seats side by side nearest to `near`,
    /// from this instance's seat map (a suggestion: the hold decides).
    async fn nearest_free(&self, event_id: Uuid, near: &[String], count: usize) -> Option<Vec<String>> {
        let board = self.board().snapshot(event_id).await.ok()?;
        crate::best::nearest(&board, near, count)
    }

    /// Gives the seats back at once. Only the current, unexpired token can.
    pub async fn release(&self, fan: Uuid, hold_id: Uuid, token: &HoldToken) -> Result<()> {
        let state = sqlx::query_scalar!(
            r#"SELECT state AS "state: HoldState" FROM holds WHERE hold_id = $1 AND user_id = $2"#,
            hold_id,
            fan
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let mut tx = self.pool().begin().await?;
        let released = seats::release(&mut tx, hold_id, token.as_str(), fan).await?;
        if released == 0 {
            tx.rollback().await?;
            return Err(if state == HoldState::CheckingOut { EngineError::CheckoutInProgress } else { EngineError::HoldExpired });
        }
        sqlx::query!("UPDATE holds SET state = 'released', ended_at = now() WHERE hold_id = $1", hold_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn hold_status(&self, fan: Uuid, hold_id: Uuid) -> Result<HoldStatus> {
        let h = sqlx::query!(
            r#"SELECT hold_id, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", state AS "state: HoldState",
                      expires_at <= now() AS "lapsed!"
               FROM holds WHERE hold_id = $1 AND user_id = $2"#,
            hold_id,
            fan
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let state = if h.state == HoldState::Active && h.lapsed { HoldState::Expired } else { h.state };
        Ok(HoldStatus { hold_id: h.hold_id, event_id: h.event_id, seat_ids: h.seat_ids, expires_at: h.expires_at, state })
    }

    /// The fan's live hold on the event, if any (the newest), so a reloaded page
    /// can pick up where the fan was, including in the middle of paying (the
    /// page then re-sends the same idempotency key and gets the first answer).
    pub async fn active_hold(&self, fan: Uuid, event_id: Uuid) -> Result<Option<Hold>> {
        Ok(sqlx::query_as!(
            Hold,
            r#"SELECT hold_id, hold_token, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", total_cents
               FROM holds
               WHERE user_id = $1 AND event_id = $2 AND state IN ('active', 'checking_out') AND expires_at > now()
               ORDER BY created_at DESC LIMIT 1"#,
            fan,
            event_id
        )
        .fetch_optional(self.pool())
        .await?)
    }
}

fn record_hold_metric(outcome: &Result<Held>) {
    let label = match outcome {
        Ok(Held { existing: true, .. }) => "existing",
        Ok(_) => "held",
        Err(EngineError::SeatsUnavailable { .. }) => "conflict",
        Err(EngineError::TooManySeats { .. }) => "too_many",
        Err(_) => "error",
    };
    metrics::counter!("frontrow_hold_attempts_total", "outcome" => label).increment(1);
}
