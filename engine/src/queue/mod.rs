//! The virtual waiting room: joining, position and ETA, and the admission
//! control loop.
//!
//! A join is one call to `queue_join` (see the migration): it never touches
//! seat inventory. Positions are `ticket - admitted_through`, read from one
//! row. Once a second per event, one instance (holding the queue's lease)
//! admits `max(0, target - active)` fans in ticket order, where
//! `target = min(ceil(k x remaining seats), max_active)`; as seats sell,
//! the target falls and admission slows, stopping at zero remaining and
//! resuming if held seats come back. "Active" is the fans shopping now
//! (`queue_active_shoppers` in the migrations): holding or paying, or not
//! yet holding and seen within [`SHOPPING_WINDOW`]. Booking, releasing, a
//! lapsed hold or leaving the page gives the slot to the next in line.

pub mod admission;
mod feed;
mod join;

pub use feed::{QueueFeed, QueueRound};
pub(crate) use join::Joiner;

use std::time::Duration;

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, QueueSettings, QueueState, QueueStats, QueueView, UserId};
use uuid::Uuid;

use crate::queue::admission::AdmissionClaims;
use crate::error::{EngineError, Result};
use crate::Engine;

/// How long an admission lasts without being renewed by the fan's page.
pub const ADMISSION_TTL: Duration = Duration::from_secs(300);
/// How long an admitted fan who holds nothing yet counts as shopping after
/// they were last seen (admitted, or their page renewing the admission,
/// which it does every few seconds).
pub const SHOPPING_WINDOW: Duration = Duration::from_secs(30);
/// How long an instance keeps the admission lease without renewing it.
pub const LEASE: Duration = Duration::from_secs(3);

/// One admission round's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TickOutcome {
    pub remaining: i64,
    pub active: i64,
    pub target: i64,
    pub admitted: i64,
    pub admitted_through: i64,
}

/// Queue tokens are 32 hex digits; anything else names no entry (and never
/// reaches the database).
fn well_formed(queue_token: &str) -> Result<()> {
    if queue_token.is_empty() || queue_token.len() > 64 || !queue_token.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(EngineError::NotFound);
    }
    Ok(())
}

impl Engine {
    /// Joins the fan to the event's waiting room (joins arriving together
    /// share one database call). Joining again keeps the place and the token.
    pub async fn join_queue(&self, event_id: EventId, user_id: UserId) -> Result<String> {
        // Only an event that asks for it costs the check a query.
        let requires_email = self.board().event(event_id).await?.facts().is_some_and(|e| e.queue_requires_verified_email);
        if requires_email && !self.email_verified(user_id).await? {
            return Err(EngineError::EmailNotVerified);
        }
        let joiner = Joiner::running_in(&self.inner.joiner, self.pool(), &Default::default());
        joiner.submit(event_id, user_id).await
    }

    /// Where the fan stands; "sold out" comes from the live seat map's count
    /// (no query). An admitted fan's admission is
    /// renewed and a fresh admission token signed for `binding` (their session).
    /// A token that is not `fan`'s reads as unknown (they travel in URLs).
    pub async fn queue_status(&self, event_id: EventId, queue_token: &str, fan: UserId, binding: &str) -> Result<QueueView> {
        well_formed(queue_token)?;
        let pool = self.pool();
        let remaining = self.board().event(event_id).await?.available_now().ok_or(EngineError::NotFound)?;
        let row = sqlx::query!(
            r#"SELECT e.ticket, e.admission_id, e.admission_expires_at > now() AS "live_admission?",
                      q.admitted_through, q.prequeue, q.admit_rate
               FROM queue_entries e JOIN queues q USING (event_id)
               WHERE e.event_id = $1 AND e.queue_token = $2 AND e.user_id = $3"#,
            event_id.as_uuid(),
            queue_token,
            fan.as_uuid()
        )
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
        let mut view = QueueView {
            queue_token: queue_token.to_owned(),
            state: QueueState::Waiting,
            position: 0,
            eta_seconds: None,
            draw_pending: false,
            admission_token: None,
            admission_expires_at: None,
        };
        match (row.admission_id, row.live_admission) {
            (Some(admission_id), Some(true)) => {
                // Renewed while the fan is around; it lapses once they leave.
                let expires_at = sqlx::query_scalar!(
                    r#"UPDATE queue_entries SET admission_expires_at = now() + make_interval(secs => $3), last_seen_at = now()
                       WHERE event_id = $1 AND queue_token = $2 RETURNING admission_expires_at AS "at!: DateTime<Utc>""#,
                    event_id.as_uuid(),
                    queue_token,
                    ADMISSION_TTL.as_secs_f64()
                )
                .fetch_one(pool)
                .await?;
                let claims = AdmissionClaims { event_id, user_id: fan, admission_id, expires_at: expires_at.timestamp(), binding: binding.to_owned() };
                view.state = QueueState::Admitted;
                view.admission_token = Some(self.sign_admission(&claims));
                view.admission_expires_at = Some(expires_at);
            }
            (Some(_), _) => view.state = QueueState::Expired,
            (None, _) if remaining <= 0 => view.state = QueueState::SoldOut,
            (None, _) => match row.ticket {
                None => {
                    view.draw_pending = true;
                    view.position = row.prequeue;
                }
                Some(ticket) => {
                    view.position = (ticket - row.admitted_through - 1).max(0);
                    view.eta_seconds = (row.admit_rate > 0.01).then(|| ((view.position + 1) as f64 / row.admit_rate).ceil() as i64);
                }
            },
        }
        Ok(view)
    }

    /// Events whose waiting room is on and whose show has not started.
    pub async fn waiting_room_events(&self) -> Result<Vec<EventId>> {
        let pool = self.pool();
        let ids = sqlx::query_scalar!("SELECT event_id FROM events WHERE waiting_room_enabled AND starts_at > now()")
            .fetch_all(pool)
            .await?;
        Ok(ids.into_iter().map(EventId::from).collect())
    }

    /// One admission round for the event, if this instance holds (or can take)
    /// the lease and a second has passed since the last round. Returns `None`
    /// when another instance is in charge or it is too soon.
    pub async fn admission_round(&self, event_id: EventId, instance_id: Uuid) -> Result<Option<TickOutcome>> {
        let pool = self.pool();
        let mut tx = crate::db::begin(pool).await?;
        sqlx::query!("INSERT INTO queues (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING", event_id.as_uuid())
            .execute(&mut *tx)
            .await?;
        let lease = sqlx::query!(
            r#"UPDATE queues q
                  SET leader_id = $2, leader_until = now() + make_interval(secs => $3), last_tick_at = now()
                WHERE event_id = $1
                  AND (leader_id = $2 OR leader_until IS NULL OR leader_until < now())
                  AND (last_tick_at IS NULL OR last_tick_at <= now() - interval '900 milliseconds')
            RETURNING admitted_through, next_ticket, drawn_at AS "drawn_at: DateTime<Utc>", admit_rate,
                      extract(epoch FROM now() - coalesce((SELECT max(at) FROM admission_ticks t WHERE t.event_id = q.event_id), now()))::float8 AS "elapsed!""#,
            event_id.as_uuid(),
            instance_id,
            LEASE.as_secs_f64()
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(lease) = lease else {
            tx.rollback().await?;
            return Ok(None);
        };
        let event = sqlx::query!(
            r#"SELECT sale_opens_at <= now() AS "open!", admission_paused, admission_factor, max_active, waiting_room_enabled
               FROM events WHERE event_id = $1"#,
            event_id.as_uuid()
        )
        .fetch_one(&mut *tx)
        .await?;
        if event.open && lease.drawn_at.is_none() {
            sqlx::query_scalar!("SELECT queue_draw($1)", event_id.as_uuid()).fetch_one(&mut *tx).await?;
        }
        let counts = sqlx::query!(
            r#"SELECT (SELECT count(*) FROM seats WHERE event_id = $1
                         AND seat_free(state, hold_expires_at, blocked_reason)) AS "remaining!",
                      queue_active_shoppers($1, make_interval(secs => $2)) AS "active!",
                      (SELECT next_ticket FROM queues WHERE event_id = $1) AS "next_ticket!""#,
            event_id.as_uuid(),
            SHOPPING_WINDOW.as_secs_f64()
        )
        .fetch_one(&mut *tx)
        .await?;
        let target = ((event.admission_factor * counts.remaining as f64).ceil() as i64).min(i64::from(event.max_active));
        let waiting = counts.next_ticket - lease.admitted_through;
        let slots = if event.open && !event.admission_paused && event.waiting_room_enabled {
            (target - counts.active).clamp(0, waiting)
        } else {
            0
        };
        let through = lease.admitted_through + slots;
        if slots > 0 {
            sqlx::query!(
                r#"UPDATE queue_entries
                      SET admission_id = gen_random_uuid(), admitted_at = now(), last_seen_at = now(),
                          admission_expires_at = now() + make_interval(secs => $4)
                    WHERE event_id = $1 AND ticket > $2 AND ticket <= $3 AND admission_id IS NULL"#,
                event_id.as_uuid(),
                lease.admitted_through,
                through,
                ADMISSION_TTL.as_secs_f64()
            )
            .execute(&mut *tx)
            .await?;
        }
        // Smoothed rate: recent rounds weigh most, so ETAs follow the pace.
        let per_second = slots as f64 / lease.elapsed.max(1.0);
        let rate = if lease.admit_rate == 0.0 { per_second } else { 0.7 * lease.admit_rate + 0.3 * per_second };
        sqlx::query!(
            "UPDATE queues SET admitted_through = $2, admit_rate = $3 WHERE event_id = $1",
            event_id.as_uuid(),
            through,
            rate
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query!(
            "INSERT INTO admission_ticks (event_id, instance_id, remaining, active, admitted) VALUES ($1, $2, $3, $4, $5)",
            event_id.as_uuid(),
            instance_id,
            counts.remaining,
            counts.active,
            slots
        )
        .execute(&mut *tx)
        .await?;
        let drawn = lease.drawn_at.is_some() || event.open;
        let payload = serde_json::json!({ "e": event_id, "a": through, "r": rate, "s": counts.remaining, "d": drawn }).to_string();
        sqlx::query!("SELECT pg_notify($1, $2)", crate::notices::QUEUE, payload).execute(&mut *tx).await?;
        tx.commit().await?;
        metrics::counter!("frontrow_queue_admitted_total").increment(slots as u64);
        Ok(Some(TickOutcome { remaining: counts.remaining, active: counts.active, target, admitted: slots, admitted_through: through }))
    }

    /// Staff figures of an event's waiting room.
    pub async fn queue_stats(&self, event_id: EventId) -> Result<QueueStats> {
        let pool = self.pool();
        let r = sqlx::query!(
            r#"SELECT e.waiting_room_enabled, e.queue_requires_verified_email, e.admission_paused, e.admission_factor, e.max_active,
                      coalesce(q.next_ticket - q.admitted_through, 0) AS "numbered!",
                      coalesce(q.prequeue, 0) AS "prequeue!",
                      coalesce(q.admitted_through, 0) AS "admitted_total!",
                      coalesce(q.admit_rate, 0) AS "rate!",
                      q.drawn_at AS "drawn_at: DateTime<Utc>", q.last_tick_at AS "last_tick_at: DateTime<Utc>",
                      queue_active_shoppers(e.event_id, make_interval(secs => $2)) AS "active!"
               FROM events e LEFT JOIN queues q USING (event_id) WHERE e.event_id = $1"#,
            event_id.as_uuid(),
            SHOPPING_WINDOW.as_secs_f64()
        )
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
        Ok(QueueStats {
            waiting_room_enabled: r.waiting_room_enabled,
            require_verified_email: r.queue_requires_verified_email,
            paused: r.admission_paused,
            admission_factor: r.admission_factor,
            max_active: r.max_active,
            queue_length: r.numbered + r.prequeue,
            prequeue: r.prequeue,
            active_shoppers: r.active,
            admitted_total: r.admitted_total,
            admission_rate: r.rate,
            drawn_at: r.drawn_at,
            last_tick_at: r.last_tick_at,
        })
    }

    /// Staff changes to an event's waiting room.
    pub async fn configure_queue(&self, staff: &frontrow_model::User, event_id: EventId, s: &QueueSettings) -> Result<QueueStats> {
        crate::accounts::require_staff(staff)?;
        let pool = self.pool();
        if s.admission_factor.is_some_and(|k| !(k > 0.0 && k <= 20.0)) {
            return Err(EngineError::invalid("admission_factor must be above 0 and at most 20"));
        }
        if s.max_active.is_some_and(|m| !(1..=1_000_000).contains(&m)) {
            return Err(EngineError::invalid("max_active must be 1 to 1000000"));
        }
        // The change, its log line and the news to other instances: together.
        let mut tx = crate::db::begin(pool).await?;
        let updated = sqlx::query!(
            r#"UPDATE events SET waiting_room_enabled = coalesce($2, waiting_room_enabled),
                                 admission_paused = coalesce($3, admission_paused),
                                 admission_factor = coalesce($4, admission_factor),
                                 max_active = coalesce($5, max_active),
                                 queue_requires_verified_email = coalesce($6, queue_requires_verified_email)
               WHERE event_id = $1"#,
            event_id.as_uuid(),
            s.waiting_room_enabled,
            s.paused,
            s.admission_factor,
            s.max_active,
            s.require_verified_email,
        )
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(EngineError::NotFound);
        }
        let detail = serde_json::to_string(s).unwrap_or_default();
        crate::changelog::record(&mut tx, Some(event_id), staff.user_id, "waiting_room_changed", &[], &detail).await?;
        crate::notices::announce_event_change(&mut tx, event_id).await?;
        tx.commit().await?;
        self.board().refresh_facts(event_id).await?;
        self.queue_stats(event_id).await
    }

    /// A queue entry's ticket (`None` before the draw) and whether it has been
    /// admitted, for the live position feed.
    pub async fn queue_entry(&self, event_id: EventId, queue_token: &str) -> Result<(Option<i64>, bool)> {
        well_formed(queue_token)?;
        let pool = self.pool();
        let row = sqlx::query!(
            "SELECT ticket, admission_id IS NOT NULL AS \"admitted!\" FROM queue_entries WHERE event_id = $1 AND queue_token = $2",
            event_id.as_uuid(),
            queue_token
        )
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
        Ok((row.ticket, row.admitted))
    }

    /// The ticket the draw gave a pre-queue entry (`None` before the draw),
    /// from the event's tickets read once on this instance.
    pub async fn drawn_ticket(&self, event_id: EventId, queue_token: &str) -> Result<Option<i64>> {
        self.queue_feed().drawn_ticket(self.pool(), event_id, queue_token).await
    }

    /// Whose queue entry the token is.
    pub async fn queue_owner(&self, event_id: EventId, queue_token: &str) -> Result<UserId> {
        well_formed(queue_token)?;
        let pool = self.pool();
        sqlx::query_scalar!("SELECT user_id FROM queue_entries WHERE event_id = $1 AND queue_token = $2", event_id.as_uuid(), queue_token)
            .fetch_optional(pool)
            .await?
            .map(UserId::from)
            .ok_or(EngineError::NotFound)
    }

    /// Whether the event's waiting room is on (read fresh: staff can switch it).
    pub async fn waiting_room_enabled(&self, event_id: EventId) -> Result<bool> {
        let pool = self.pool();
        sqlx::query_scalar!("SELECT waiting_room_enabled FROM events WHERE event_id = $1", event_id.as_uuid())
            .fetch_optional(pool)
            .await?
            .ok_or(EngineError::NotFound)
    }
}
