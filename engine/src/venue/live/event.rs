//! One event's live seat map on this instance: each seat's state as last
//! heard, merged by version, and the feeds its viewers are sent (one per
//! view: the whole map, a section, the overview's counts).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use chrono::Utc;
use frontrow_model::live::{LiveFrame, SeatChange, SectionCount};
use frontrow_model::{Event, EventId, SeatStatus, UserId};
use tokio::sync::{broadcast, OnceCell};

use super::cell::{holder_tag, Cells, Change, SeatCell, SeatsLeft};
use super::holders::RecentHolders;
use super::snapshot::BoardSnapshot;
use crate::db::SeatState;
use crate::venue::seating::EventLayout;

/// How many feed messages a slow viewer may fall behind before it is resent
/// a full snapshot instead.
const FEED_CAPACITY: usize = 256;

/// What viewers of an event are sent as seats change.
#[derive(Debug, Clone)]
pub enum FeedMessage {
    /// A `{"type":"diff",...}` frame, serialised once, its bytes shared by
    /// every viewer.
    Diff(Bytes),
    /// Changes may have been missed: send each viewer a fresh snapshot.
    Resync,
}

/// What a viewer of an event's live feed looks at, and so is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// Every seat: the venue drawn whole.
    Whole,
    /// One section's seats (index into the layout's sections); for a
    /// standing area, its count of free places.
    Section(usize),
    /// How many places each section has free.
    Overview,
}

/// The event's feeds, one per view: a viewer is sent only what it shows.
pub(super) struct Feeds {
    whole: broadcast::Sender<FeedMessage>,
    overview: broadcast::Sender<FeedMessage>,
    /// One per section of the layout, made with it.
    sections: std::sync::OnceLock<Vec<broadcast::Sender<FeedMessage>>>,
}

impl Feeds {
    fn new() -> Self {
        Self { whole: broadcast::channel(FEED_CAPACITY).0, overview: broadcast::channel(FEED_CAPACITY).0, sections: Default::default() }
    }

    fn sections(&self, layout: &EventLayout) -> &[broadcast::Sender<FeedMessage>] {
        self.sections.get_or_init(|| layout.sections.iter().map(|_| broadcast::channel(FEED_CAPACITY).0).collect())
    }

    pub(super) fn every(&self) -> impl Iterator<Item = &broadcast::Sender<FeedMessage>> {
        [&self.whole, &self.overview].into_iter().chain(self.sections.get().into_iter().flatten())
    }
}

/// One event's live seat map on this instance.
pub struct LiveEvent {
    pub(super) event_id: EventId,
    epoch: u32,
    pub(super) layout: OnceCell<Arc<EventLayout>>,
    /// The event's facts, re-read when staff change them.
    facts: RwLock<Option<Arc<Event>>>,
    /// Bumped at every change of `facts` (under its lock).
    facts_generation: AtomicU64,
    cells: RwLock<Cells>,
    pub(super) feeds: Feeds,
    /// The last whole-map frame, with the (seq, lapsed leases) it shows.
    whole_map: Mutex<Option<((u64, usize), Bytes)>>,
    /// The statuses the last snapshot copied, shared by every snapshot
    /// until they could differ: a page view between two changes copies no
    /// seats.
    last_statuses: Mutex<Option<SharedStatuses>>,
    /// Their holds may not have reached the board yet.
    recent_holders: RecentHolders,
}

/// Seat statuses as of one change and facts generation, good until the
/// first lease left in them lapses (lazy expiry frees a seat with no change).
struct SharedStatuses {
    seq: u64,
    facts_generation: u64,
    until_ms: i64,
    statuses: Arc<[SeatStatus]>,
    revision: String,
}

impl LiveEvent {
    pub(super) fn new(event_id: EventId, epoch: u32) -> Self {
        Self {
            event_id,
            epoch,
            layout: OnceCell::new(),
            facts: RwLock::new(None),
            facts_generation: AtomicU64::new(0),
            cells: RwLock::new(Cells::default()),
            feeds: Feeds::new(),
            whole_map: Mutex::new(None),
            last_statuses: Mutex::new(None),
            recent_holders: RecentHolders::default(),
        }
    }

    /// Notes that `fan` is asking this instance for a hold of this event.
    pub fn note_hold_asked(&self, fan: UserId) {
        self.recent_holders.note(holder_tag(fan));
    }

    /// Whether `fan` may hold seats of this event: their tag is on a seat
    /// of this board, or they asked this instance for a hold lately, or the
    /// board is not loaded. `false` is sure but for a hold asked of
    /// another instance in the last moment (its change still on the way).
    pub fn may_be_holding(&self, fan: UserId) -> bool {
        let tag = holder_tag(fan);
        if self.recent_holders.contains(tag) {
            return true;
        }
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        cells.layout.is_none() || cells.holders.contains(tag)
    }

    pub fn event_id(&self) -> EventId {
        self.event_id
    }

    /// The view of this event named by a section (`None`: the whole map).
    pub fn view(&self, section: Option<&str>) -> Option<View> {
        match section {
            None => Some(View::Whole),
            Some(name) => self.layout.get()?.section_index(name).map(View::Section),
        }
    }

    /// Receives what `view` shows (diffs or counts) and resync requests
    /// from now on.
    pub fn subscribe(&self, view: View) -> broadcast::Receiver<FeedMessage> {
        match (view, self.layout.get()) {
            (View::Section(s), Some(layout)) if s < layout.sections.len() => self.feeds.sections(layout)[s].subscribe(),
            (View::Overview, _) => self.feeds.overview.subscribe(),
            _ => self.feeds.whole.subscribe(),
        }
    }

    /// Everyone watching this event, whatever their view.
    pub fn viewers(&self) -> usize {
        self.feeds.every().map(broadcast::Sender::receiver_count).sum()
    }

    pub fn layout(&self) -> Option<&Arc<EventLayout>> {
        self.layout.get()
    }

    /// The price tier of each of these seats, where the event has ticket
    /// types (they differ by tier); else none.
    pub fn tiers_of(&self, seat_ids: &[String]) -> Vec<String> {
        let (Some(layout), Some(event)) = (self.layout(), self.facts()) else { return Vec::new() };
        if event.ticket_types.is_empty() {
            return Vec::new();
        }
        let tier = |seat: &String| layout.seat_index(seat).and_then(|i| event.tiers.get(layout.seats[i].tier_index)).map(|t| t.tier.clone());
        seat_ids.iter().map(|seat| tier(seat).unwrap_or_default()).collect()
    }

    /// The event's facts as last read.
    pub fn facts(&self) -> Option<Arc<Event>> {
        self.facts.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set_facts(&self, event: Event) {
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
        let (statuses, revision) = self.statuses_of(&cells, now_ms, facts_generation);
        Some(BoardSnapshot { statuses, version: cells.version, epoch: self.epoch, seq: cells.seq, revision, event, layout, taken_at: now })
    }

    /// Of `seat_ids`, those this board shows free, if it shows at least one
    /// of them taken (held, paying, sold or blocked) and none of those held
    /// perhaps by `fan` (whose retry the database answers with the hold): a
    /// hold of them all would be refused. `None` when all look free, when
    /// one may be the fan's, when an id is not in the layout, or before the
    /// map is loaded.
    pub fn free_if_taken_by_others(&self, seat_ids: &[String], fan: UserId) -> Option<Vec<String>> {
        let layout = self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let fan_tag = holder_tag(fan);
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        let mut free = Vec::new();
        let mut taken = false;
        for id in seat_ids {
            let cell = cells.seats.get(layout.seat_index(id)?)?;
            match cell.status(now_ms) {
                SeatStatus::Available => free.push(id.clone()),
                _ if cell.holder == Some(fan_tag) => return None,
                _ => taken = true,
            }
        }
        taken.then_some(free)
    }

    /// How many places of a section (by name) are free now, without
    /// copying the map.
    pub fn free_places(&self, section: &str) -> Option<i64> {
        let layout = self.layout.get()?;
        let s = layout.section_index(section)?;
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        Some(free_in(layout, &cells, s, Utc::now().timestamp_millis()))
    }

    /// How many seats are free now (lapsed leases included), and how many
    /// are held or being paid for and would be free again if that ended,
    /// without copying the map.
    pub fn seats_left(&self) -> Option<SeatsLeft> {
        self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        let mut left = SeatsLeft::default();
        for cell in &cells.seats {
            match cell.status(now_ms) {
                SeatStatus::Available => left.free += 1,
                // A counter sale of a blocked seat goes back to blocked.
                SeatStatus::Held if !cell.blocked => left.held += 1,
                _ => {}
            }
        }
        Some(left)
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
        Some(self.statuses_of(&cells, Utc::now().timestamp_millis(), facts_generation).1)
    }

    /// The seats' statuses at `now_ms` and their revision: the last ones
    /// copied while no change, no new facts and no lapsed lease can have
    /// moved them, else copied afresh. What fans see depends on the changes
    /// applied, the leases lapsed since and the facts (name, tiers, prices)
    /// in force; the caller reads all three together.
    fn statuses_of(&self, cells: &Cells, now_ms: i64, facts_generation: u64) -> (Arc<[SeatStatus]>, String) {
        let mut last = self.last_statuses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = last.as_ref().filter(|s| s.seq == cells.seq && s.facts_generation == facts_generation && now_ms < s.until_ms) {
            return (shared.statuses.clone(), shared.revision.clone());
        }
        let (mut lapsed, mut until_ms) = (0usize, i64::MAX);
        for cell in cells.seats.iter().filter(|c| c.state == SeatState::Held) {
            match cell.hold_expires_ms {
                Some(t) if t <= now_ms => lapsed += 1,
                Some(t) => until_ms = until_ms.min(t),
                None => {}
            }
        }
        let statuses: Arc<[SeatStatus]> = cells.seats.iter().map(|c| c.status(now_ms)).collect();
        let revision = format!("{:x}-{:x}-{:x}-{facts_generation:x}", self.epoch, cells.seq, lapsed);
        *last = Some(SharedStatuses { seq: cells.seq, facts_generation, until_ms, statuses: statuses.clone(), revision: revision.clone() });
        (statuses, revision)
    }

    /// The WebSocket snapshot frame of a view. With `since` (an epoch and
    /// seq this board handed out), only seats that may look different to a
    /// viewer who has the map as of then: those changed after it, and held
    /// seats whose lease has lapsed meanwhile. A `since` from another epoch
    /// (another process, or before a restart) gets the whole view. Views of
    /// counts (the overview, a standing area) always get every count.
    pub fn snapshot_frame(&self, view: View, since: Option<(u32, u64)>) -> Option<Bytes> {
        let layout = self.layout.get()?;
        let now_ms = Utc::now().timestamp_millis();
        let cells = self.cells.read().unwrap_or_else(|e| e.into_inner());
        let range = match view {
            View::Whole => 0..layout.seats.len(),
            View::Section(s) if !layout.sections.get(s)?.is_standing() => layout.sections[s].seats.clone(),
            View::Section(s) => return counts_of(layout, &cells, self.epoch, s..s + 1, now_ms),
            View::Overview => return counts_of(layout, &cells, self.epoch, 0..layout.sections.len(), now_ms),
        };
        let since = since.and_then(|(epoch, seq)| (epoch == self.epoch && seq <= cells.seq).then_some(seq));
        let lapsed = |c: &SeatCell| c.state == SeatState::Held && c.hold_expires_ms.is_some_and(|t| t <= now_ms);
        // The whole map is the same for every viewer who connects between
        // two changes (and lapses): made once, shared.
        let whole_map_key = (since.is_none() && view == View::Whole).then(|| (cells.seq, cells.seats.iter().filter(|c| lapsed(c)).count()));
        let mut whole_map = self.whole_map.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(key), Some((made_for, frame))) = (whole_map_key, whole_map.as_ref()) {
            if key == *made_for {
                return Some(frame.clone());
            }
        }
        let seats = cells.seats[range.clone()]
            .iter()
            .zip(range)
            .filter(|(c, _)| since.is_none_or(|seq| c.seq > seq || lapsed(c)))
            .map(|(c, i)| SeatChange { seat_id: layout.seats[i].seat_id.as_str().into(), status: c.status(now_ms).for_fans(), version: None })
            .collect();
        let frame = Bytes::from(serde_json::to_vec(&LiveFrame::Snapshot { version: cells.version, epoch: self.epoch, seq: cells.seq, seats }).ok()?);
        if let Some(key) = whole_map_key {
            *whole_map = Some((key, frame.clone()));
        }
        Some(frame)
    }

    /// Applies one notification's changes and tells viewers about the seats
    /// whose visible status changed: each view its own (diffs to the whole
    /// map and to the sections' viewers, counts to the overview and to
    /// standing areas' viewers).
    pub(super) fn apply(&self, changes: Vec<Change>) {
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
                changed.push((i, SeatChange { seat_id: layout.seats[i].seat_id.as_str().into(), status: status.for_fans(), version: Some(version) }));
            }
        }
        if changed.is_empty() {
            return;
        }
        // Sent under the lock: a viewer subscribes before it reads its
        // snapshot, so every frame it receives is either in that snapshot
        // (and replays harmlessly, in order) or newer.
        let (version, seq) = (cells.version, cells.seq);
        let diff = |changes| LiveFrame::Diff { version, epoch: self.epoch, seq, changes };
        if self.feeds.whole.receiver_count() > 0 {
            send(&self.feeds.whole, &diff(changed.iter().map(|(_, c)| c.clone()).collect()));
        }
        let section_feeds = self.feeds.sections(&layout);
        let mut touched: Vec<usize> = changed.iter().map(|(i, _)| layout.section_of(*i)).collect();
        touched.sort_unstable();
        touched.dedup();
        for &s in &touched {
            let feed = &section_feeds[s];
            if feed.receiver_count() == 0 {
                continue;
            }
            if layout.sections[s].is_standing() {
                if let Some(frame) = counts_of(&layout, &cells, self.epoch, s..s + 1, now_ms) {
                    let _ = feed.send(FeedMessage::Diff(frame));
                }
            } else {
                let mine = changed.iter().filter(|(i, _)| layout.section_of(*i) == s).map(|(_, c)| c.clone()).collect();
                send(feed, &diff(mine));
            }
        }
        if self.feeds.overview.receiver_count() > 0 {
            if let Some(frame) = counts_of(&layout, &cells, self.epoch, touched.iter().copied(), now_ms) {
                let _ = self.feeds.overview.send(FeedMessage::Diff(frame));
            }
        }
    }

    /// Takes freshly read rows, then merges what was heard before the first
    /// load finished.
    pub(super) fn install(&self, layout: &Arc<EventLayout>, rows: Vec<(usize, SeatCell)>) {
        let mut cells = self.cells.write().unwrap_or_else(|e| e.into_inner());
        if cells.seats.len() != layout.seats.len() {
            cells.seats = vec![
                SeatCell { state: SeatState::Available, version: 0, hold_expires_ms: None, blocked: false, holder: None, seq: 0 };
                layout.seats.len()
            ];
            cells.holders.clear();
        }
        // A reload races the changes heard meanwhile: keep the newer of each.
        for (i, cell) in rows {
            if cell.version > cells.seats[i].version {
                cells.seq += 1;
                let seq = cells.seq;
                cells.set(i, SeatCell { seq, ..cell });
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

/// Serialises a frame once and hands its bytes to every viewer of a feed.
fn send(feed: &broadcast::Sender<FeedMessage>, frame: &LiveFrame<'_>) {
    if let Ok(text) = serde_json::to_vec(frame) {
        let _ = feed.send(FeedMessage::Diff(Bytes::from(text)));
    }
}

/// How many places a section has free now, as fans count them.
fn free_in(layout: &EventLayout, cells: &Cells, section: usize, now_ms: i64) -> i64 {
    let range = layout.sections[section].seats.clone();
    cells.seats.get(range).map_or(0, |seats| seats.iter().filter(|c| c.status(now_ms).for_fans() == SeatStatus::Available).count() as i64)
}

/// A counts frame of these sections, as they stand now.
fn counts_of(layout: &EventLayout, cells: &Cells, epoch: u32, sections: impl Iterator<Item = usize>, now_ms: i64) -> Option<Bytes> {
    let sections = sections
        .filter(|&s| s < layout.sections.len())
        .map(|s| SectionCount {
            section: layout.sections[s].name.as_str().into(),
            available: free_in(layout, cells, s, now_ms),
            total: layout.sections[s].seats.len() as i64,
        })
        .collect();
    serde_json::to_vec(&LiveFrame::Counts { version: cells.version, epoch, seq: cells.seq, sections }).ok().map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn cell(state: SeatState, hold_expires_ms: Option<i64>) -> SeatCell {
        SeatCell { state, version: 1, hold_expires_ms, blocked: false, holder: None, seq: 1 }
    }

    #[test]
    fn a_fan_may_be_holding_while_their_tag_is_on_the_board_or_they_just_asked() {
        let fan = UserId::from(Uuid::new_v4());
        let live = LiveEvent::new(EventId::from(Uuid::new_v4()), 1);
        assert!(live.may_be_holding(fan), "before the board is loaded: perhaps");
        let mut cells = Cells { seats: vec![cell(SeatState::Available, None)], layout: Some(Arc::new(EventLayout::default())), ..Cells::default() };
        *live.cells.write().expect("cells") = Cells { layout: cells.layout.clone(), ..Cells::default() };
        assert!(!live.may_be_holding(fan), "no seat carries the fan's tag");
        cells.set(0, SeatCell { holder: Some(holder_tag(fan)), ..cell(SeatState::Held, Some(1_000)) });
        *live.cells.write().expect("cells") = cells;
        assert!(live.may_be_holding(fan));
        let other = UserId::from(Uuid::new_v4());
        live.note_hold_asked(other);
        assert!(live.may_be_holding(other), "a hold asked here counts before the board hears of it");
    }

    #[test]
    fn statuses_are_shared_until_a_change_new_facts_or_a_lapse() {
        use SeatStatus::{Available, Held};
        let live = LiveEvent::new(EventId::from(Uuid::new_v4()), 1);
        let cells = Cells {
            seats: vec![cell(SeatState::Held, Some(1_000)), cell(SeatState::Available, None), cell(SeatState::Held, Some(2_000))],
            seq: 1,
            ..Cells::default()
        };
        let (first, revision) = live.statuses_of(&cells, 500, 0);
        let (again, same_revision) = live.statuses_of(&cells, 999, 0);
        assert!(Arc::ptr_eq(&first, &again), "nothing could have moved: the same copy");
        assert_eq!((&first[..], &revision), (&[Held, Available, Held][..], &same_revision));
        // The first lease lapses: a fresh copy, a new revision.
        let (lapsed, lapsed_revision) = live.statuses_of(&cells, 1_000, 0);
        assert_eq!(&lapsed[..], &[Available, Available, Held]);
        assert_ne!(lapsed_revision, revision);
        // A change, then new facts, each make a fresh copy.
        let changed = Cells {
            seats: vec![cell(SeatState::Held, Some(1_000)), cell(SeatState::Sold, None), cell(SeatState::Held, Some(2_000))],
            seq: 2,
            ..Cells::default()
        };
        let (after_change, change_revision) = live.statuses_of(&changed, 1_001, 0);
        assert_eq!(after_change[1], SeatStatus::Sold);
        let (after_facts, facts_revision) = live.statuses_of(&changed, 1_001, 1);
        assert!(!Arc::ptr_eq(&after_change, &after_facts));
        assert_ne!(change_revision, facts_revision);
    }
}
