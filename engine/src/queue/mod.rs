//! The virtual waiting room: joining, position and ETA, and the admission
//! control loop.
//!
//! A join is one call to `queue_join` (see the migration): it never touches
//! seat inventory. Positions are `ticket - admitted_through`, read from one
//! row. Once a second per event, one instance (holding the queue's lease)
//! admits `max(0, target - active)` fans in ticket order, where
//! `target = min(ceil(k x remaining seats), max_active)`; as seats sell,
//! the target falls and admission slows, stopping at zero remaining and
//! resuming if held seats come back. While nothing is free but seats are
//! held, waiting fans are told so (`all_held`) and keep their place;
//! "sold out" means nothing is free or held. "Active" is the fans shopping now
//! (`queue_active_shoppers` in the migrations): holding or paying, or not
//! yet holding and seen within [`SHOPPING_WINDOW`]. Booking, releasing, a
//! lapsed hold or leaving the page gives the slot to the next in line.
//!
//! A presale has a queue of its own ([`SalePhase::Presale`]): fans who
//! entered a code join it before the public sale opens, its pre-queue is
//! drawn at the presale's opening, and its admissions let fans hold only
//! during the presale. A presale joiner also waits in the public sale's
//! pre-queue, for the public draw.

pub mod admission;
mod feed;
mod join;
mod status;

pub use feed::{QueueFeed, QueueRound};
pub(crate) use join::Joiner;
pub(crate) use status::EntryReader;

use std::time::Duration;

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, PresaleQueueStats, QueueCounts, QueueSettings, QueueState, QueueStats, QueueView, SalePhase, UserId};
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::queue::admission::AdmissionClaims;
use crate::venue::live::SeatsLeft;
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

/// A fan's queue entry and the queue's figures, as one read gives them.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    queue_token: String,
    phase: SalePhase,
    /// A presale entry once the public sale has opened.
    presale_over: bool,
    ticket: Option<i64>,
    admission_id: Option<Uuid>,
    live_admission: bool,
    admitted_through: i64,
    prequeue: i64,
    admit_rate: f64,
}

impl Entry {
    /// What a fan who is not (or no longer) admitted is told, given the
    /// live seat map's seats left: nothing free but some held, they keep
    /// their place; nothing free nor held, it is sold out.
    fn waiting_view(&self, left: SeatsLeft) -> QueueView {
        let mut view = QueueView {
            queue_token: self.queue_token.clone(),
            phase: self.phase,
            state: QueueState::Waiting,
            position: 0,
            eta_seconds: None,
            draw_pending: false,
            admission_token: None,
            admission_expires_at: None,
        };
        match (self.admission_id, self.ticket) {
            _ if self.presale_over => view.state = QueueState::PresaleOver,
            (Some(_), _) => view.state = QueueState::Expired,
            (None, _) if left.free <= 0 && !left.all_held() => view.state = QueueState::SoldOut,
            (None, None) => {
                view.draw_pending = true;
                view.position = self.prequeue;
            }
            (None, Some(ticket)) => {
                view.position = (ticket - self.admitted_through - 1).max(0);
                if left.all_held() {
                    view.state = QueueState::AllHeld;
                } else {
                    view.eta_seconds = (self.admit_rate > 0.01).then(|| ((view.position + 1) as f64 / self.admit_rate).ceil() as i64);
                }
            }
        }
        view
    }
}

impl Engine {
    /// Joins the fan to the queue of the event's sale `phase` (joins
    /// arriving together share one database call) and answers where they
    /// stand, as [`Engine::queue_status`] would. Joining again keeps the
    /// place and the token. Which sale a fan may queue for is the caller's
    /// to decide (the presale: a fan with a code, before the public sale).
    pub async fn join_queue(&self, event_id: EventId, phase: SalePhase, user_id: UserId, binding: &str) -> Result<QueueView> {
        let event = self.board().event(event_id).await?;
        // Only an event that asks for it costs the check a query.
        if event.facts().is_some_and(|e| e.queue_requires_verified_email) && !self.email_verified(user_id).await? {
            return Err(EngineError::EmailNotVerified);
        }
        let joiner = Joiner::running_in(&self.inner.joiner, self.pool(), &Default::default());
        let entry = joiner.submit((event_id, phase), user_id).await?;
        if entry.live_admission {
            // Already admitted and back: renewed, with a fresh token.
            return self.queue_status(event_id, &entry.queue_token, user_id, binding).await;
        }
        Ok(entry.waiting_view(event.seats_left().ok_or(EngineError::NotFound)?))
    }

    /// Where the fan stands; "sold out" comes from the live seat map's count
    /// (no query). An admitted fan's admission is
    /// renewed and a fresh admission token signed for `binding` (their session).
    /// A token that is not `fan`'s reads as unknown (they travel in URLs).
    pub async fn queue_status(&self, event_id: EventId, queue_token: &str, fan: UserId, binding: &str) -> Result<QueueView> {
        well_formed(queue_token)?;
        let pool = self.pool();
        let left = self.board().event(event_id).await?.seats_left().ok_or(EngineError::NotFound)?;
        let entry = match self.read_entry(event_id, queue_token).await? {
            Some((owner, entry)) if owner == fan => entry,
            _ => return Err(EngineError::NotFound),
        };
        let Some(admission_id) = entry.admission_id.filter(|_| entry.live_admission && !entry.presale_over) else {
            return Ok(entry.waiting_view(left));
        };
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
        let claims = AdmissionClaims {
            event_id,
            phase: entry.phase,
            user_id: fan,
            admission_id,
            expires_at: expires_at.timestamp(),
            binding: binding.to_owned(),
        };
        Ok(QueueView {
            queue_token: queue_token.to_owned(),
            phase: entry.phase,
            state: QueueState::Admitted,
            position: 0,
            eta_seconds: None,
            draw_pending: false,
            admission_token: Some(self.sign_admission(&claims)),
            admission_expires_at: Some(expires_at),
        })
    }

    /// Events whose waiting room is on and whose show has not started.
    pub async fn waiting_room_events(&self) -> Result<Vec<EventId>> {
        let pool = self.pool();
        let ids = sqlx::query_scalar!("SELECT event_id FROM events WHERE waiting_room_enabled AND starts_at > now()").fetch_all(pool).await?;
        Ok(ids.into_iter().map(EventId::from).collect())
    }

    /// One admission round for the queue of the event's sale `phase`, if
    /// this instance holds (or can take) the lease and a second has passed
    /// since the last round. Returns `None` when another instance is in
    /// charge, it is too soon, or there is no such queue now (a presale
    /// nobody queued for, or over).
    pub async fn admission_round(&self, event_id: EventId, phase: SalePhase, instance_id: Uuid) -> Result<Option<TickOutcome>> {
        // One call: the queue row's lock is held only while PostgreSQL works
        // (joins wait on it), never across round trips from a busy server.
        let round = sqlx::query!(
            r#"SELECT out_remaining AS "remaining!", out_active AS "active!", out_target AS "target!",
                      out_admitted AS "admitted!", out_through AS "admitted_through!"
                 FROM queue_admission_round($1, $2, $3, $4, $5, $6, $7)"#,
            event_id.as_uuid(),
            phase as SalePhase,
            instance_id,
            LEASE.as_secs_f64(),
            SHOPPING_WINDOW.as_secs_f64(),
            ADMISSION_TTL.as_secs_f64(),
            crate::notices::QUEUE
        )
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = round else { return Ok(None) };
        metrics::counter!("frontrow_queue_admitted_total", "phase" => phase.as_str()).increment(r.admitted as u64);
        Ok(Some(TickOutcome {
            remaining: r.remaining,
            active: r.active,
            target: r.target,
            admitted: r.admitted,
            admitted_through: r.admitted_through,
        }))
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
                      queue_active_shoppers(e.event_id, 'public', make_interval(secs => $2)) AS "active!",
                      queue_opens_at(e.event_id, 'presale') AS "presale_opens_at: DateTime<Utc>",
                      coalesce(p.next_ticket - p.admitted_through, 0) AS "presale_numbered!",
                      coalesce(p.prequeue, 0) AS "presale_prequeue!",
                      coalesce(p.admitted_through, 0) AS "presale_admitted_total!",
                      coalesce(p.admit_rate, 0) AS "presale_rate!",
                      p.drawn_at AS "presale_drawn_at: DateTime<Utc>",
                      queue_active_shoppers(e.event_id, 'presale', make_interval(secs => $2)) AS "presale_active!"
               FROM events e
               LEFT JOIN queues q ON q.event_id = e.event_id AND q.phase = 'public'
               LEFT JOIN queues p ON p.event_id = e.event_id AND p.phase = 'presale'
               WHERE e.event_id = $1"#,
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
            counts: QueueCounts {
                queue_length: r.numbered + r.prequeue,
                prequeue: r.prequeue,
                active_shoppers: r.active,
                admitted_total: r.admitted_total,
                admission_rate: r.rate,
                drawn_at: r.drawn_at,
            },
            last_tick_at: r.last_tick_at,
            presale: r.presale_opens_at.map(|opens_at| PresaleQueueStats {
                opens_at,
                counts: QueueCounts {
                    queue_length: r.presale_numbered + r.presale_prequeue,
                    prequeue: r.presale_prequeue,
                    active_shoppers: r.presale_active,
                    admitted_total: r.presale_admitted_total,
                    admission_rate: r.presale_rate,
                    drawn_at: r.presale_drawn_at,
                },
            }),
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

    /// Whose queue entry the token is, which sale's queue it is in, and its
    /// ticket (`None` before the draw), for the live position feed: one read
    /// per socket.
    pub async fn queue_entry(&self, event_id: EventId, queue_token: &str) -> Result<(UserId, SalePhase, Option<i64>)> {
        well_formed(queue_token)?;
        let (owner, entry) = self.read_entry(event_id, queue_token).await?.ok_or(EngineError::NotFound)?;
        Ok((owner, entry.phase, entry.ticket))
    }

    /// Whose entry of the event a (well-formed) token is and the entry
    /// itself; reads arriving together share one database call.
    async fn read_entry(&self, event_id: EventId, queue_token: &str) -> Result<Option<(UserId, Entry)>> {
        let reader = EntryReader::running_in(&self.inner.entry_reader, self.pool(), &Default::default());
        let found = reader.submit((), queue_token.to_owned()).await?;
        Ok(found.and_then(|(event, owner, entry)| (event == event_id).then_some((owner, entry))))
    }

    /// The ticket the draw gave a pre-queue entry (`None` before the draw),
    /// from the queue's tickets read once on this instance.
    pub async fn drawn_ticket(&self, event_id: EventId, phase: SalePhase, queue_token: &str) -> Result<Option<i64>> {
        self.queue_feed().drawn_ticket(self.pool(), event_id, phase, queue_token).await
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
