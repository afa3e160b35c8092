//! Live seat maps.
//!
//! Each server instance keeps the seat map of every event someone is looking
//! at in memory (a [`SeatBoard`]), so page renders, `GET .../seats` and
//! WebSocket snapshots never query the database per request. The copy is
//! kept current from the seat change log: a trigger on `seats` (and
//! `hold_batch`) writes every change to `seat_changes` in its transaction,
//! and each instance reads the log from where it stopped ([`tail`]), applies
//! it here and fans it out to its viewers. A change made through any
//! instance therefore reaches the viewers of all of them. Changes to an
//! event's own facts (name, rules, published, cancelled) are announced on
//! [`notices::EVENTS`] and re-read.
//!
//! Ordering: changes of different transactions may arrive in any order
//! relative to a snapshot being loaded, so every seat carries its version and
//! a change is applied only if it is newer than what the board has. Versions
//! are taken when a statement runs, not when it commits, so they cannot tell
//! a viewer what it has missed; for that each board numbers the changes it
//! applies (`seq`, in arrival order) under a random per-process `epoch`, and
//! a reconnecting viewer names the `(epoch, seq)` it has. When the listening
//! connection is lost the database may have restarted or failed over: the
//! board reads the log from its head again, reloads every event it holds
//! and tells viewers to take a fresh snapshot.

mod cell;
mod event;
mod holders;
mod snapshot;
mod tail;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use frontrow_model::{Event, EventId, SeatKind};
use serde::Deserialize;
use sqlx::postgres::PgListener;

use crate::db::SeatState;
use crate::error::{EngineError, Result};
pub use crate::venue::seating::{EventLayout, LayoutRow, LayoutSeat, LayoutSection};
use crate::Engine;
pub use cell::{holder_tag, SeatsLeft};
use cell::{Change, SeatCell};
pub use event::{FeedMessage, LiveEvent, View};
pub use snapshot::BoardSnapshot;

use crate::notices;

#[derive(Debug, Deserialize)]
struct LoggedChanges {
    e: EventId,
    c: Vec<Change>,
}

/// Every live event of this instance.
pub struct SeatBoard {
    pool: sqlx::PgPool,
    events: Mutex<HashMap<EventId, Arc<LiveEvent>>>,
    loads: AtomicU64,
    /// Random per process: a viewer's `seq` means nothing to another board.
    epoch: u32,
    /// Bumped whenever the listener (re)connects; a load that started under
    /// an older generation may have missed changes and is redone.
    generation: AtomicU64,
    /// The published events in listing order, and when they were read.
    published: Mutex<Option<(Instant, Arc<[EventId]>)>>,
    /// Where this instance has read the seat change log.
    tail: tail::Tail,
}

/// How long the list of published events is trusted; a change this
/// instance hears of (or makes) drops it at once.
const PUBLISHED_LIST_TTL: Duration = Duration::from_secs(1);

impl SeatBoard {
    pub fn new(pool: sqlx::PgPool) -> Self {
        Self {
            pool,
            events: Mutex::new(HashMap::new()),
            loads: AtomicU64::new(0),
            epoch: rand::random(),
            generation: AtomicU64::new(0),
            published: Mutex::new(None),
            tail: tail::Tail::new(),
        }
    }

    /// The published events, soonest first: the listing a fan's events page
    /// shows, read at most once a second whatever the traffic.
    pub async fn published_events(&self) -> Result<Arc<[EventId]>> {
        if let Some((read_at, ids)) = self.published.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if read_at.elapsed() < PUBLISHED_LIST_TTL {
                return Ok(ids.clone());
            }
        }
        let read_at = Instant::now();
        let ids: Arc<[EventId]> = sqlx::query_scalar!("SELECT event_id FROM events WHERE published ORDER BY starts_at, name")
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .map(EventId::from)
            .collect();
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = Some((read_at, ids.clone()));
        Ok(ids)
    }

    /// An event was created or changed: list the events afresh.
    pub fn forget_published_events(&self) {
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// How many times the board has resynchronised (once per connection of
    /// the change listener, the first included).
    pub fn resyncs(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many times an event's seats were read from the database (tests
    /// check that concurrent first requests share one load).
    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// The event's live map, loading it on first use. Concurrent first
    /// requests wait for one load; an unknown event is `NotFound` and leaves
    /// nothing behind.
    pub async fn event(&self, event_id: EventId) -> Result<Arc<LiveEvent>> {
        let live = {
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            events.entry(event_id).or_insert_with(|| Arc::new(LiveEvent::new(event_id, self.epoch))).clone()
        };
        let loaded = live.layout.get_or_try_init(|| self.load(&live)).await;
        match loaded {
            Ok(_) => Ok(live),
            // An unknown event leaves nothing behind. (Other errors keep the
            // entry: whoever waits on it retries the load.)
            Err(EngineError::NotFound) => {
                let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
                if events.get(&event_id).is_some_and(|l| Arc::ptr_eq(l, &live) && live.layout.get().is_none()) {
                    events.remove(&event_id);
                }
                Err(EngineError::NotFound)
            }
            Err(e) => Err(e),
        }
    }

    /// The event's live map if this instance has it loaded (never a query).
    pub fn loaded(&self, event_id: EventId) -> Option<Arc<LiveEvent>> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.get(&event_id).filter(|live| live.layout.get().is_some()).cloned()
    }

    pub async fn snapshot(&self, event_id: EventId) -> Result<BoardSnapshot> {
        self.event(event_id).await?.snapshot().ok_or(EngineError::NotFound)
    }

    async fn load(&self, live: &LiveEvent) -> Result<Arc<EventLayout>> {
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            self.loads.fetch_add(1, Ordering::Relaxed);
            let (event, layout, rows) = load_event(&self.pool, live.event_id).await?;
            let layout = Arc::new(layout);
            live.set_facts(event);
            live.install(&layout, rows);
            // The listener reconnected while we read: what we read may
            // predate changes nobody heard. Read again.
            if self.generation.load(Ordering::Acquire) == generation {
                return Ok(layout);
            }
        }
    }

    /// Applies one row of the seat change log.
    fn apply_logged(&self, payload: &str) {
        let Ok(n) = serde_json::from_str::<LoggedChanges>(payload) else {
            tracing::warn!(payload, "unreadable seat change");
            return;
        };
        let live = self.events.lock().unwrap_or_else(|e| e.into_inner()).get(&n.e).cloned();
        if let Some(live) = live {
            live.apply(n.c);
        }
    }

    /// Re-reads an event's facts after staff changed them (a no-op for an
    /// event this instance does not hold).
    pub async fn refresh_facts(&self, event_id: EventId) -> Result<()> {
        self.forget_published_events();
        let live = self.events.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id).cloned();
        if let Some(live) = live {
            live.set_facts(crate::venue::catalogue::load_event(&self.pool, event_id).await?);
        }
        Ok(())
    }

    /// Reloads every loaded event from the database and tells its viewers to
    /// resynchronise: used after changes may have been missed.
    ///
    /// An error means some event could not be reloaded; the caller starts
    /// over (reconnects and resyncs again).
    pub async fn resync_all(&self) -> Result<()> {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let events: Vec<Arc<LiveEvent>> = self.events.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for live in events {
            // Still loading: that load notices the new generation and redoes itself.
            let Some(layout) = live.layout.get() else { continue };
            let (event, _, rows) = load_event(&self.pool, live.event_id).await?;
            live.set_facts(event);
            live.install(layout, rows);
            for feed in live.feeds.every() {
                let _ = feed.send(FeedMessage::Resync);
            }
        }
        Ok(())
    }
}

async fn load_event(pool: &sqlx::PgPool, event_id: EventId) -> Result<(Event, EventLayout, Vec<(usize, SeatCell)>)> {
    let event = crate::venue::catalogue::load_event(pool, event_id).await?;
    let (shapes, stage) = crate::venue::catalogue::load_shapes(pool, event_id).await?;
    let rows = sqlx::query!(
        r#"SELECT seat_id, section, row_label, number, tier, price_cents, state AS "state: SeatState", version,
                  (extract(epoch FROM hold_expires_at) * 1000)::bigint AS hold_expires_ms,
                  blocked_reason IS NOT NULL AS "blocked!", holder_tag(holder_id) AS holder, kind AS "kind: SeatKind", aisle_before
           FROM seats WHERE event_id = $1
           ORDER BY position"#,
        event_id.as_uuid()
    )
    .fetch_all(pool)
    .await?;

    let tier_index: HashMap<&str, usize> = event.tiers.iter().enumerate().map(|(i, t)| (t.tier.as_str(), i)).collect();
    let cells = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (i, SeatCell { state: r.state, version: r.version, hold_expires_ms: r.hold_expires_ms, blocked: r.blocked, holder: r.holder, seq: 0 })
        })
        .collect();
    let listed = rows.iter().map(|r| {
        let seat = LayoutSeat {
            seat_id: r.seat_id.clone(),
            number: r.number,
            tier_index: tier_index.get(r.tier.as_str()).copied().unwrap_or(0),
            price_cents: r.price_cents,
            kind: r.kind,
            aisle_before: r.aisle_before,
        };
        (r.section.as_str(), r.row_label.as_str(), seat)
    });
    let layout = EventLayout::from_seats(listed, &shapes, stage);
    Ok((event, layout, cells))
}

/// Follows the seat change log and listens for its hints, event changes,
/// admission rounds, session ends and account changes until `stop`
/// completes, reconnecting after errors. Every (re)connection reads the log
/// from its head and reloads the board (the database may have restarted
/// from a backup, or failed over), as it forgets sessions and accounts it
/// could not hear about.
pub(crate) async fn listen(engine: &Engine, stop: impl Future<Output = ()>) {
    let board = engine.board();
    tokio::select! {
        _ = stop => {}
        _ = hear_notices(engine) => {}
        _ = tail::follow(board) => {}
        _ = tail::prune(board) => {}
        _ = tail::tell_others(board) => {}
    }
}

async fn hear_notices(engine: &Engine) {
    let (board, queue_feed) = (engine.board(), engine.queue_feed());
    loop {
        let session = async {
            let mut listener = PgListener::connect_with(&board.pool).await?;
            listener.listen_all([notices::SEATS, notices::EVENTS, notices::QUEUE, notices::SESSIONS, notices::ACCOUNTS]).await?;
            // Ends and account changes announced while no one listened are unknown.
            let _ = engine.inner.session_ends.send(crate::accounts::SessionEnd::Unknown);
            engine.account_feed_heard();
            board.follow_from_head().await.map_err(|e| match e {
                EngineError::Database(e) | EngineError::Unavailable(e) => e,
                other => sqlx::Error::Protocol(other.to_string()),
            })?;
            loop {
                // `None`: the connection dropped and notifications may be lost.
                match listener.try_recv().await? {
                    Some(n) if n.channel() == notices::SEATS => board.log_moved(),
                    Some(n) if n.channel() == notices::EVENTS => {
                        if let Ok(event_id) = n.payload().parse() {
                            if let Err(e) = board.refresh_facts(event_id).await {
                                tracing::warn!(%event_id, error = %e, "could not re-read a changed event");
                            }
                        }
                    }
                    Some(n) if n.channel() == notices::SESSIONS => {
                        let _ = engine.inner.session_ends.send(crate::accounts::SessionEnd::One(n.payload().to_owned()));
                    }
                    Some(n) if n.channel() == notices::ACCOUNTS => engine.account_changed(n.payload()).await,
                    // Admission rounds come every second; a missed one is
                    // made good by the next.
                    Some(n) => queue_feed.apply_notification(n.payload(), |event_id| {
                        board.loaded(event_id).and_then(|live| live.seats_left()).is_some_and(|left| left.all_held())
                    }),
                    None => return Ok::<(), sqlx::Error>(()),
                }
            }
        };
        let outcome = session.await;
        engine.account_feed_lost();
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "the notice listener lost its connection");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
