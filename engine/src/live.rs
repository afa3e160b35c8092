//! Live seat maps.
//!
//! Each server instance keeps the seat map of every event someone is looking
//! at in memory (a [`SeatBoard`]), so page renders, `GET .../seats` and
//! WebSocket snapshots never query the database per request. The copy is
//! kept current by PostgreSQL notifications: a trigger on `seats` announces
//! every committed change on [`CHANNEL`], and [`listen`] applies them here and
//! fans them out to this instance's viewers. A change made through any
//! instance therefore reaches the viewers of all of them. Changes to an
//! event's own facts (name, rules, published, cancelled) are announced on
//! [`EVENTS_CHANNEL`] and re-read.
//!
//! Ordering: notifications of different transactions may arrive in any order
//! relative to a snapshot being loaded, so every seat carries its version and
//! a change is applied only if it is newer than what the board has. Versions
//! are taken when a statement runs, not when it commits, so they cannot tell
//! a viewer what it has missed; for that each board numbers the changes it
//! applies (`seq`, in arrival order) under a random per-process `epoch`, and
//! a reconnecting viewer names the `(epoch, seq)` it has. When the listening
//! connection is lost, changes may have been missed: the board reloads every
//! event it holds and tells viewers to take a fresh snapshot.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use frontrow_model::live::{LiveFrame, SeatChange};
use frontrow_model::{Event, EventDetail, EventSummary, SeatKind, SeatMap, SeatStatus, SeatView, SectionSummary};
use serde::Deserialize;
use sqlx::postgres::PgListener;
use tokio::sync::{broadcast, OnceCell};
use uuid::Uuid;

use crate::db::SeatState;
use crate::error::{EngineError, Result};
use crate::Engine;

/// The notification channel the `seats_notify_changes` trigger writes to.
pub const CHANNEL: &str = "frontrow_seats";
/// Where an event's own facts changing is announced (payload: its id).
pub const EVENTS_CHANNEL: &str = "frontrow_events";

/// How many feed messages a slow viewer may fall behind before it is resent
/// a full snapshot instead.
const FEED_CAPACITY: usize = 256;

/// Where a seat is, what it costs: fixed once the event exists.
#[derive(Debug, Clone)]
pub struct LayoutSeat {
    pub seat_id: String,
    pub number: i32,
    /// Into the event's tiers.
    pub tier_index: usize,
    pub price_cents: i32,
    pub kind: SeatKind,
    /// An aisle runs between this seat and the one before it in the row.
    pub aisle_before: bool,
}

#[derive(Debug, Clone)]
pub struct LayoutRow {
    pub label: String,
    /// Indexes into [`EventLayout::seats`], in position order.
    pub seats: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct LayoutSection {
    pub name: String,
    pub rows: Vec<LayoutRow>,
}

/// An event's seating plan (its facts, which staff may change, live apart).
#[derive(Debug, Clone, Default)]
pub struct EventLayout {
    pub seats: Vec<LayoutSeat>,
    pub sections: Vec<LayoutSection>,
    index: HashMap<String, usize>,
}

impl EventLayout {
    /// Builds a layout from its sections (seats in layout order).
    pub fn new(sections: Vec<LayoutSection>, seats: Vec<LayoutSeat>) -> Self {
        let index = seats.iter().enumerate().map(|(i, s)| (s.seat_id.clone(), i)).collect();
        Self { seats, sections, index }
    }

    pub fn seat_index(&self, seat_id: &str) -> Option<usize> {
        self.index.get(seat_id).copied()
    }

    /// "Section B, row 4, seat 12": how a person reads a seat out.
    pub fn seat_label(&self, index: usize) -> String {
        let (section, row) = self.position_of(index);
        format!("Section {section}, row {row}, seat {}", self.seats[index].number)
    }

    /// The section and row a seat is in.
    pub fn position_of(&self, index: usize) -> (&str, &str) {
        for section in &self.sections {
            for row in &section.rows {
                if row.seats.contains(&index) {
                    return (&section.name, &row.label);
                }
            }
        }
        ("?", "?")
    }
}

/// The mutable part of one seat, as last seen.
#[derive(Debug, Clone, Copy)]
struct SeatCell {
    state: SeatState,
    version: i64,
    hold_expires_ms: Option<i64>,
    /// Blocked by staff (kept while a counter sale holds it).
    blocked: bool,
    /// The board's `seq` when this cell last changed.
    seq: u64,
}

impl SeatCell {
    /// What the seat is now, for staff (fans see [`SeatStatus::for_fans`]).
    fn status(&self, now_ms: i64) -> SeatStatus {
        let lapsed = self.hold_expires_ms.is_some_and(|t| t <= now_ms);
        match self.state {
            SeatState::Available => SeatStatus::Available,
            SeatState::Blocked => SeatStatus::Blocked,
            // Lazy expiry, as in the hold predicate: a lapsed lease is free
            // now, or blocked again if it was a counter sale of a blocked seat.
            SeatState::Held if lapsed && self.blocked => SeatStatus::Blocked,
            SeatState::Held if lapsed => SeatStatus::Available,
            SeatState::Held | SeatState::PaymentPending => SeatStatus::Held,
            SeatState::Sold => SeatStatus::Sold,
        }
    }
}

/// One changed seat as the trigger reports it.
#[derive(Debug, Clone, Deserialize)]
struct Change(String, i64, SeatState, Option<i64>, bool);

#[derive(Debug, Deserialize)]
struct Notification {
    e: Uuid,
    c: Vec<Change>,
}

#[derive(Default)]
struct Cells {
    /// Set by the first load, under the same lock as the cells.
    layout: Option<Arc<EventLayout>>,
    /// Aligned with `EventLayout::seats` once loaded.
    seats: Vec<SeatCell>,
    /// Changes heard before the first load finished; merged by version.
    early: Vec<Change>,
    version: i64,
    /// Changes applied so far, in arrival order.
    seq: u64,
}

/// What viewers of an event are sent as seats change.
#[derive(Debug, Clone)]
pub enum FeedMessage {
    /// A `{"type":"diff",...}` frame, serialised once, its bytes shared by
    /// every viewer.
    Diff(Bytes),
    /// Changes may have been missed: send each viewer a fresh snapshot.
    Resync,
}

/// One event's live seat map on this instance.
pub struct LiveEvent {
    event_id: Uuid,
    epoch: u32,
    layout: OnceCell<Arc<EventLayout>>,
    /// The event's facts, re-read when staff change them.
    facts: RwLock<Option<Arc<Event>>>,
    /// Bumped at every change of `facts` (under its lock).
    facts_generation: AtomicU64,
    cells: RwLock<Cells>,
    feed: broadcast::Sender<FeedMessage>,
    /// The last whole-map frame, with the (seq, lapsed leases) it shows.
    whole_map: Mutex<Option<((u64, usize), Bytes)>>,
}

/// A consistent copy of an event's seat map at one moment.
#[derive(Debug, Clone)]
pub struct BoardSnapshot {
    pub event: Arc<Event>,
    pub layout: Arc<EventLayout>,
    /// Aligned with `layout.seats`; as staff see them (fans see blocked
    /// seats as sold).
    pub statuses: Vec<SeatStatus>,
    pub version: i64,
    /// Where a viewer of this snapshot resumes the live feed from.
    pub epoch: u32,
    pub seq: u64,
    /// Names what fans see in this snapshot: equal revisions, equal maps.
    pub revision: String,
    pub taken_at: DateTime<Utc>,
}

impl BoardSnapshot {
    pub fn seats_available(&self) -> i64 {
        self.count(SeatStatus::Available)
    }

    /// How many seats are in this state, as staff count them.
    pub fn count(&self, status: SeatStatus) -> i64 {
        self.statuses.iter().filter(|s| **s == status).count() as i64
    }

    pub fn summary(&self) -> EventSummary {
        crate::catalogue::summary((*self.event).clone(), self.layout.seats.len() as i64, self.seats_available(), self.taken_at)
    }

    pub fn detail(&self) -> EventDetail {
        let l = &self.layout;
        EventDetail {
            summary: self.summary(),
            sections: l
                .sections
                .iter()
                .map(|s| SectionSummary {
                    section: s.name.clone(),
                    rows: s.rows.len() as i64,
                    seats: s.rows.iter().map(|r| r.seats.len() as i64).sum(),
                })
                .collect(),
        }
    }

    /// The contract's seat list, optionally one section only, as fans see
    /// it (`for_staff`: blocked seats as blocked).
    pub fn seat_map(&self, section: Option<&str>, for_staff: bool) -> SeatMap {
        let l = &self.layout;
        let mut seats = Vec::new();
        for s in l.sections.iter().filter(|s| section.is_none_or(|name| name == s.name)) {
            for row in &s.rows {
                for &i in &row.seats {
                    let seat = &l.seats[i];
                    let tier = &self.event.tiers[seat.tier_index];
                    seats.push(SeatView {
                        seat_id: seat.seat_id.clone(),
                        section: s.name.clone(),
                        row: row.label.clone(),
                        number: seat.number,
                        tier: tier.tier.clone(),
                        price_cents: seat.price_cents,
                        status: if for_staff { self.statuses[i] } else { self.statuses[i].for_fans() },
                        kind: seat.kind,
                    });
                }
            }
        }
        SeatMap { event_id: self.event.event_id, version: self.version, seats }
    }
}

impl LiveEvent {
    fn new(event_id: Uuid, epoch: u32) -> Self {
        let (feed, _) = broadcast::channel(FEED_CAPACITY);
        Self { event_id, epoch, layout: OnceCell::new(), facts: RwLock::new(None), facts_generation: AtomicU64::new(0), cells: RwLock::new(Cells::default()), feed, whole_map: Mutex::new(None) }
    }

    pub fn event_id(&self) -> Uuid {
        self.event_id
    }

    /// Receives diffs and resync requests from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<FeedMessage> {
        self.feed.subscribe()
    }

    pub fn viewers(&self) -> usize {
        self.feed.receiver_count()
    }

    pub fn layout(&self) -> Option<&Arc<EventLayout>> {
        self.layout.get()
    }

    /// The event's facts as last read.
    pub fn facts(&self) -> Option<Arc<Event>> {
        self.facts.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_facts(&self, event: Event) {
        let mut facts = self.facts.write().unwrap_or_else(|e| e.into_inner());
        *facts = Some(Arc::new(event));
        self.facts_generation.fetch_add(1, Ordering::Release);
    }

    /// A consistent copy of the map now, named by its [`BoardSnapshot::revision`].
    pub fn snapshot(&self) -> Option<BoardSnapshot> {
        let layout = self.layout.get()?.clone();
        let (event, facts_generation) = {
            let facts = self.facts.read().unwrap_or_else(|e| e.into_inner());
            (facts.clone()?, self.facts_generation.load(Ordering::Acquire))
        };
        let now = Utc::now();
        let now_ms = now.timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        Some(BoardSnapshot {
            statuses: cells.seats.iter().map(|c| c.status(now_ms)).collect(),
            version: cells.version,
            epoch: self.epoch,
            seq: cells.seq,
            revision: self.revision_of(&cells, now_ms, facts_generation),
            event,
            layout,
            taken_at: now,
        })
    }

    /// Of `seat_ids`, those this board shows free, if it shows at least one
    /// of them taken (held, paying, sold or blocked): a hold of them all
    /// would be refused. `None` when all look free, when an id is not in the
    /// layout, or before the map is loaded.
    pub fn free_if_any_taken(&self, seat_ids: &[String]) -> Option<Vec<String>> {
        let layout = self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        let mut free = Vec::new();
        let mut taken = false;
        for id in seat_ids {
            match cells.seats.get(layout.seat_index(id)?)?.status(now_ms) {
                SeatStatus::Available => free.push(id.clone()),
                _ => taken = true,
            }
        }
        taken.then_some(free)
    }

    /// How many seats are free now (lapsed leases included), without
    /// copying the map.
    pub fn available_now(&self) -> Option<i64> {
        self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        Some(cells.seats.iter().filter(|c| c.status(now_ms) == SeatStatus::Available).count() as i64)
    }

    /// The revision a [`snapshot`](Self::snapshot) taken now would have,
    /// without copying the map: enough to tell whether prepared bytes are
    /// still current.
    pub fn revision(&self) -> Option<String> {
        self.layout.get()?;
        let facts_generation = {
            let facts = self.facts.read().unwrap_or_else(|e| e.into_inner());
            facts.as_ref()?;
            self.facts_generation.load(Ordering::Acquire)
        };
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        Some(self.revision_of(&cells, Utc::now().timestamp_millis(), facts_generation))
    }

    /// What fans see depends on the changes applied, the leases lapsed since
    /// (lazy expiry frees them without a change) and the facts (name, tiers,
    /// prices) in force; the caller reads all three together.
    fn revision_of(&self, cells: &Cells, now_ms: i64, facts_generation: u64) -> String {
        let lapsed = cells.seats.iter().filter(|c| c.state == SeatState::Held && c.hold_expires_ms.is_some_and(|t| t <= now_ms)).count();
        format!("{:x}-{:x}-{:x}-{facts_generation:x}", self.epoch, cells.seq, lapsed)
    }

    /// The WebSocket snapshot frame. With `since` (an epoch and seq this
    /// board handed out), only seats that may look different to a viewer who
    /// has the map as of then: those changed after it, and held seats whose
    /// lease has lapsed meanwhile. A `since` from another epoch (another
    /// process, or before a restart) gets the whole map.
    pub fn snapshot_frame(&self, since: Option<(u32, u64)>) -> Option<Bytes> {
        let layout = self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        let since = since.and_then(|(epoch, seq)| (epoch == self.epoch && seq <= cells.seq).then_some(seq));
        let lapsed = |c: &SeatCell| c.state == SeatState::Held && c.hold_expires_ms.is_some_and(|t| t <= now_ms);
        // The whole map is the same for every viewer who connects between
        // two changes (and lapses): made once, shared.
        let whole_map_key = since.is_none().then(|| (cells.seq, cells.seats.iter().filter(|c| lapsed(c)).count()));
        let mut whole_map = self.whole_map.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(key), Some((made_for, frame))) = (whole_map_key, whole_map.as_ref()) {
            if key == *made_for {
                return Some(frame.clone());
            }
        }
        let seats = cells
            .seats
            .iter()
            .enumerate()
            .filter(|(_, c)| since.is_none_or(|seq| c.seq > seq || lapsed(c)))
            .map(|(i, c)| SeatChange { seat_id: layout.seats[i].seat_id.as_str().into(), status: c.status(now_ms).for_fans(), version: None })
            .collect();
        let frame = Bytes::from(serde_json::to_vec(&LiveFrame::Snapshot { version: cells.version, epoch: self.epoch, seq: cells.seq, seats }).ok()?);
        if let Some(key) = whole_map_key {
            *whole_map = Some((key, frame.clone()));
        }
        Some(frame)
    }

    /// Applies one notification's changes and tells viewers about the seats
    /// whose visible status changed.
    fn apply(&self, changes: Vec<Change>) {
        let now_ms = Utc::now().timestamp_millis();
        let mut cells = self.cells.write().unwrap_or_else(|e| e.into_inner());
        let Some(layout) = cells.layout.clone() else {
            cells.early.extend(changes);
            return;
        };
        // Every change that moves a seat forward is sent, even if its status
        // looks the same (a lapsed hold taken again reads "held" to anyone
        // who last saw "held", but "available" to anyone who loaded after
        // the lapse); viewers ignore what they already show.
        let mut changed = Vec::new();
        for change in changes {
            if let Some((i, status, version)) = cells.merge(&layout, change, now_ms) {
                changed.push(SeatChange { seat_id: layout.seats[i].seat_id.as_str().into(), status: status.for_fans(), version: Some(version) });
            }
        }
        if changed.is_empty() || self.feed.receiver_count() == 0 {
            return;
        }
        // Sent under the lock: a viewer subscribes before it reads its
        // snapshot, so every diff it receives is either in that snapshot
        // (and replays harmlessly, in order) or newer.
        let frame = LiveFrame::Diff { version: cells.version, epoch: self.epoch, seq: cells.seq, changes: changed };
        if let Ok(text) = serde_json::to_string(&frame) {
            let _ = self.feed.send(FeedMessage::Diff(Bytes::from(text)));
        }
    }

    /// Takes freshly read rows, then merges what was heard before the first
    /// load finished.
    fn install(&self, layout: &Arc<EventLayout>, rows: Vec<(usize, SeatCell)>) {
        let mut cells = self.cells.write().unwrap_or_else(|e| e.into_inner());
        if cells.seats.len() != layout.seats.len() {
            cells.seats = vec![SeatCell { state: SeatState::Available, version: 0, hold_expires_ms: None, blocked: false, seq: 0 }; layout.seats.len()];
        }
        // A reload races the changes heard meanwhile: keep the newer of each.
        for (i, cell) in rows {
            if cell.version > cells.seats[i].version {
                cells.seq += 1;
                cells.seats[i] = SeatCell { seq: cells.seq, ..cell };
            }
        }
        cells.version = cells.seats.iter().map(|c| c.version).max().unwrap_or(0);
        cells.layout = Some(layout.clone());
        let now_ms = Utc::now().timestamp_millis();
        for change in std::mem::take(&mut cells.early) {
            cells.merge(layout, change, now_ms);
        }
    }
}

impl Cells {
    /// Takes `change` if it is newer than the seat's version; returns the
    /// seat, its status now and the version.
    fn merge(&mut self, layout: &EventLayout, change: Change, now_ms: i64) -> Option<(usize, SeatStatus, i64)> {
        let Change(seat_id, version, state, hold_expires_ms, blocked) = change;
        let i = layout.seat_index(&seat_id)?;
        let seq = self.seq + 1;
        let cell = self.seats.get_mut(i)?;
        if version <= cell.version {
            return None;
        }
        *cell = SeatCell { state, version, hold_expires_ms, blocked, seq };
        let status = cell.status(now_ms);
        self.seq = seq;
        self.version = self.version.max(version);
        Some((i, status, version))
    }
}

/// Every live event of this instance.
pub struct SeatBoard {
    pool: sqlx::PgPool,
    events: Mutex<HashMap<Uuid, Arc<LiveEvent>>>,
    loads: AtomicU64,
    /// Random per process: a viewer's `seq` means nothing to another board.
    epoch: u32,
    /// Bumped whenever the listener (re)connects; a load that started under
    /// an older generation may have missed changes and is redone.
    generation: AtomicU64,
    /// The published events in listing order, and when they were read.
    published: Mutex<Option<(Instant, Arc<[Uuid]>)>>,
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
        }
    }

    /// The published events, soonest first: the listing a fan's events page
    /// shows, read at most once a second whatever the traffic.
    pub async fn published_events(&self) -> Result<Arc<[Uuid]>> {
        if let Some((read_at, ids)) = self.published.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if read_at.elapsed() < PUBLISHED_LIST_TTL {
                return Ok(ids.clone());
            }
        }
        let read_at = Instant::now();
        let ids: Arc<[Uuid]> = sqlx::query_scalar!("SELECT event_id FROM events WHERE published ORDER BY starts_at, name")
            .fetch_all(&self.pool)
            .await?
            .into();
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = Some((read_at, ids.clone()));
        Ok(ids)
    }

    /// An event was created or changed: list the events afresh.
    pub fn forget_published_events(&self) {
        *self.published.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// How many times an event's seats were read from the database (tests
    /// check that concurrent first requests share one load).
    /// How many times the board has resynchronised (once per connection of
    /// the change listener, the first included).
    pub fn resyncs(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// The event's live map, loading it on first use. Concurrent first
    /// requests wait for one load; an unknown event is `NotFound` and leaves
    /// nothing behind.
    pub async fn event(&self, event_id: Uuid) -> Result<Arc<LiveEvent>> {
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

    pub async fn snapshot(&self, event_id: Uuid) -> Result<BoardSnapshot> {
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

    /// Applies one `frontrow_seats` payload.
    pub fn apply_notification(&self, payload: &str) {
        let Ok(n) = serde_json::from_str::<Notification>(payload) else {
            tracing::warn!(payload, "unreadable seat notification");
            return;
        };
        let live = self.events.lock().unwrap_or_else(|e| e.into_inner()).get(&n.e).cloned();
        if let Some(live) = live {
            live.apply(n.c);
        }
    }

    /// Re-reads an event's facts after staff changed them (a no-op for an
    /// event this instance does not hold).
    pub async fn refresh_facts(&self, event_id: Uuid) -> Result<()> {
        self.forget_published_events();
        let live = self.events.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id).cloned();
        if let Some(live) = live {
            live.set_facts(crate::catalogue::load_event(&self.pool, event_id).await?);
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
            let _ = live.feed.send(FeedMessage::Resync);
        }
        Ok(())
    }
}

async fn load_event(pool: &sqlx::PgPool, event_id: Uuid) -> Result<(Event, EventLayout, Vec<(usize, SeatCell)>)> {
    let event = crate::catalogue::load_event(pool, event_id).await?;
    let rows = sqlx::query!(
        r#"SELECT seat_id, section, row_label, number, tier, price_cents, state AS "state: SeatState", version,
                  (extract(epoch FROM hold_expires_at) * 1000)::bigint AS hold_expires_ms,
                  blocked_reason IS NOT NULL AS "blocked!", kind AS "kind: SeatKind", aisle_before
           FROM seats WHERE event_id = $1
           ORDER BY position"#,
        event_id
    )
    .fetch_all(pool)
    .await?;

    let tier_index: HashMap<&str, usize> = event.tiers.iter().enumerate().map(|(i, t)| (t.tier.as_str(), i)).collect();
    let mut seats = Vec::with_capacity(rows.len());
    let mut cells = Vec::with_capacity(rows.len());
    let mut sections: Vec<LayoutSection> = Vec::new();
    for r in rows {
        let i = seats.len();
        // Seats come in layout order (position), so a section or row starts
        // where the label changes.
        if sections.last().is_none_or(|s| s.name != r.section) {
            sections.push(LayoutSection { name: r.section.clone(), rows: Vec::new() });
        }
        let section = sections.last_mut().expect("pushed above");
        if section.rows.last().is_none_or(|row| row.label != r.row_label) {
            section.rows.push(LayoutRow { label: r.row_label.clone(), seats: Vec::new() });
        }
        section.rows.last_mut().expect("pushed above").seats.push(i);
        seats.push(LayoutSeat {
            seat_id: r.seat_id,
            number: r.number,
            tier_index: tier_index.get(r.tier.as_str()).copied().unwrap_or(0),
            price_cents: r.price_cents,
            kind: r.kind,
            aisle_before: r.aisle_before,
        });
        cells.push((i, SeatCell { state: r.state, version: r.version, hold_expires_ms: r.hold_expires_ms, blocked: r.blocked, seq: 0 }));
    }
    Ok((event, EventLayout::new(sections, seats), cells))
}

/// Listens for seat changes, event changes and admission rounds until `stop`
/// completes, reconnecting after errors. Every (re)connection resynchronises
/// the board, since changes made while nobody listened were not heard.
pub(crate) async fn listen(engine: &Engine, stop: impl Future<Output = ()>) {
    let (board, queue_feed) = (engine.board(), engine.queue_feed());
    tokio::pin!(stop);
    loop {
        let session = async {
            let mut listener = PgListener::connect_with(&board.pool).await?;
            listener.listen_all([CHANNEL, EVENTS_CHANNEL, crate::queue::CHANNEL]).await?;
            board.resync_all().await.map_err(|e| match e {
                EngineError::Database(e) | EngineError::Unavailable(e) => e,
                other => sqlx::Error::Protocol(other.to_string()),
            })?;
            loop {
                // `None`: the connection dropped and notifications may be lost.
                match listener.try_recv().await? {
                    Some(n) if n.channel() == CHANNEL => board.apply_notification(n.payload()),
                    Some(n) if n.channel() == EVENTS_CHANNEL => {
                        if let Ok(event_id) = n.payload().parse() {
                            if let Err(e) = board.refresh_facts(event_id).await {
                                tracing::warn!(%event_id, error = %e, "could not re-read a changed event");
                            }
                        }
                    }
                    // Admission rounds come every second; a missed one is
                    // made good by the next.
                    Some(n) => queue_feed.apply_notification(n.payload()),
                    None => return Ok::<(), sqlx::Error>(()),
                }
            }
        };
        tokio::select! {
            _ = &mut stop => return,
            outcome = session => {
                if let Err(e) = outcome {
                    tracing::warn!(error = %e, "seat change listener lost its connection");
                }
            }
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}
