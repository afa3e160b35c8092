//! Admission rounds as each instance hears them, fanned out from memory to
//! the waiting fans' sockets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use frontrow_model::{EventId, SalePhase};
use serde::Deserialize;
use tokio::sync::broadcast;

use crate::error::{EngineError, Result};

/// An admission round as announced on [`crate::notices::QUEUE`].
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct QueueRound {
    #[serde(rename = "a")]
    pub admitted_through: i64,
    #[serde(rename = "r")]
    pub rate: f64,
    #[serde(rename = "s")]
    pub remaining: i64,
    /// Which sale's queue the round was for.
    #[serde(rename = "p", default)]
    pub phase: SalePhase,
    /// Whether the pre-queue's order has been drawn (tickets are known).
    #[serde(rename = "d", default)]
    pub drawn: bool,
    /// With nothing remaining: whether seats are held that may come back
    /// (this instance's live map says, as it hears the round).
    #[serde(skip)]
    pub all_held: bool,
}

#[derive(Debug, Deserialize)]
struct RoundNotification {
    e: EventId,
    #[serde(flatten)]
    round: QueueRound,
}

/// One of an event's queues: the event and which of its sales.
type QueueKey = (EventId, SalePhase);

/// This instance's fan-out of admission rounds to waiting fans' sockets: a
/// round reaches every socket from memory, and the tickets the draw gave the
/// pre-queue are read once per queue for all of them (not once per socket).
#[derive(Default)]
pub struct QueueFeed {
    events: Mutex<HashMap<QueueKey, broadcast::Sender<QueueRound>>>,
    drawn: Mutex<HashMap<QueueKey, Arc<tokio::sync::OnceCell<HashMap<String, i64>>>>>,
    /// Reads of drawn tickets so far (one per event, however many sockets).
    ticket_loads: std::sync::atomic::AtomicU64,
}

impl QueueFeed {
    /// How many times this instance has read an event's drawn tickets.
    pub fn ticket_loads(&self) -> u64 {
        self.ticket_loads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The ticket the draw gave `queue_token`, from the queue's drawn
    /// tickets, read once on this instance (concurrent callers share it).
    pub async fn drawn_ticket(&self, pool: &sqlx::PgPool, event_id: EventId, phase: SalePhase, queue_token: &str) -> Result<Option<i64>> {
        let cell = {
            let mut drawn = self.drawn.lock().unwrap_or_else(|e| e.into_inner());
            drawn.entry((event_id, phase)).or_default().clone()
        };
        let tickets = cell
            .get_or_try_init(|| async {
                self.ticket_loads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let rows = sqlx::query!(
                    r#"SELECT queue_token, ticket AS "ticket!" FROM queue_entries WHERE event_id = $1 AND phase = $2 AND ticket IS NOT NULL"#,
                    event_id.as_uuid(),
                    phase as SalePhase
                )
                .fetch_all(pool)
                .await?;
                Ok::<_, EngineError>(rows.into_iter().map(|r| (r.queue_token, r.ticket)).collect())
            })
            .await?;
        Ok(tickets.get(queue_token).copied())
    }

    pub fn subscribe(&self, event_id: EventId, phase: SalePhase) -> broadcast::Receiver<QueueRound> {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.entry((event_id, phase)).or_insert_with(|| broadcast::channel(16).0).subscribe()
    }

    /// Fans a round out to the event's sockets on this instance;
    /// `all_held` tells, when nothing remains, whether held seats may come
    /// back (asked once per round, not per socket).
    pub fn apply_notification(&self, payload: &str, all_held: impl FnOnce(EventId) -> bool) {
        let Ok(mut n) = serde_json::from_str::<RoundNotification>(payload) else {
            tracing::warn!(payload, "unreadable queue notification");
            return;
        };
        n.round.all_held = n.round.remaining <= 0 && all_held(n.e);
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let key = (n.e, n.round.phase);
        if let Some(feed) = events.get(&key) {
            if feed.send(n.round).is_err() {
                // Nobody waiting on this instance any more.
                events.remove(&key);
            }
        }
    }
}
