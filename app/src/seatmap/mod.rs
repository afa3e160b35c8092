//! The seat map as SVG markup, drawn on the server from the live board (or,
//! for the layout generator's preview, from a plan not yet saved).
//!
//! Three drawings: the whole venue with every seat (small venues, and the
//! preview); the overview of a big venue, one shaded shape per section; and
//! one section's seats (a very big section a block of rows at a time). Each
//! seat carries what the browser needs: its id, its tier (class `t<i>`), its
//! status (class `av`/`hd`/`sd`, and `bk` for staff, drawn as a solid dot, a
//! hollow ring, a small dot or a crossed dot, so not by colour alone), its
//! kind (`wc` wheelchair space, `cp` companion seat) and an accessible name
//! with the price. An aisle leaves a gap in its row.

mod draw;
pub mod geometry;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use frontrow_engine::venue::live::{BoardSnapshot, EventLayout};

use draw::Seats;
use frontrow_model::{EventId, NewSection, SeatStatus, Stage, TierPrice};
use geometry::VenueGeometry;

/// Who the map is drawn for: fans see blocked seats as sold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Fans,
    Staff,
}

pub fn status_class(status: SeatStatus) -> &'static str {
    match status {
        SeatStatus::Available => "av",
        SeatStatus::Held => "hd",
        SeatStatus::Sold => "sd",
        SeatStatus::Blocked => "bk",
    }
}

/// What part of a venue a drawing shows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MapView {
    /// Every seat.
    Whole,
    /// A shape per section.
    Overview,
    /// One section's seats, these rows of it.
    Section { index: usize, rows: Range<usize> },
}

/// How the fans' maps are drawn: when a venue is shown as an overview, and
/// how much of a section one view shows.
#[derive(Debug, Clone, Copy)]
pub struct MapSettings {
    /// How old a drawn map may be when the board has moved on: pages served
    /// meanwhile share one drawing, and the live feed brings each viewer the
    /// changes after it.
    pub refresh: Duration,
    /// Venues with more seats than this open on the overview.
    pub overview_above: usize,
    /// A section with more seats than this is shown a block of rows at a time.
    pub block_seats: usize,
    /// The most seats a fan may still ask to see on one map.
    pub whole_at_most: usize,
}

impl Default for MapSettings {
    fn default() -> Self {
        Self { refresh: Duration::from_millis(50), overview_above: 12_000, block_seats: 2500, whole_at_most: 25_000 }
    }
}

impl MapSettings {
    /// Whether fans first see this venue as an overview.
    pub fn overview(&self, layout: &EventLayout) -> bool {
        layout.sections.len() > 1 && (layout.seats.len() > self.overview_above || layout.has_standing())
    }

    /// A section's blocks of rows, each of at most `block_seats` seats (one
    /// block for most sections).
    pub fn blocks(&self, layout: &EventLayout, section: usize) -> Vec<Range<usize>> {
        let rows = &layout.sections[section].rows;
        let mut blocks = Vec::new();
        let (mut start, mut seats) = (0, 0);
        for (r, row) in rows.iter().enumerate() {
            if r > start && seats + row.seats.len() > self.block_seats {
                blocks.push(start..r);
                (start, seats) = (r, 0);
            }
            seats += row.seats.len();
        }
        blocks.push(start..rows.len());
        blocks
    }
}

/// A drawing of a fans' map and the point of the live feed it shows.
#[derive(Debug, Clone)]
pub struct DrawnMap {
    pub svg: Arc<str>,
    pub epoch: u32,
    pub seq: u64,
    /// Set once a newer drawing of the same view has taken its place.
    replaced: Arc<AtomicBool>,
}

impl DrawnMap {
    /// Whether this is still the drawing fans are shown of its view.
    pub fn is_current(&self) -> bool {
        !self.replaced.load(Ordering::Acquire)
    }
}

/// Where a page's map goes when the server puts it in after rendering.
///
/// The map is the same megabyte for every fan until the board moves on;
/// rendering it into each page, then reading it back to find it, copied it
/// several times per request. The server gives each event page's request a
/// slot; the page renders [`MapSlot::MARKER`] in the map's place and leaves
/// the drawing here, and the server answers with the page around the
/// drawing's own bytes (kept compressed once per drawing). A request
/// without a slot (the server function called from the browser) gets the
/// map in its answer as before.
#[derive(Debug, Clone, Default)]
pub struct MapSlot(Arc<Mutex<Option<DrawnMap>>>);

impl MapSlot {
    /// Stands in the rendered page for the map. It cannot come from data:
    /// every text the page shows is escaped, so no `<!--` of its own.
    pub const MARKER: &'static str = "<!--frontrow:seat-map-->";

    /// Leaves the drawing in the slot; the page shows the marker.
    pub fn put(&self, map: DrawnMap) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(map);
    }

    /// The drawing left for this request, if any, left there too.
    pub fn peek(&self) -> Option<DrawnMap> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The drawing left for this request, if any.
    pub fn take(&self) -> Option<DrawnMap> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Where the places of a standing area (and a section's seats) are picked.
pub fn section_href(event_id: EventId, section: &str) -> String {
    format!("/events/{event_id}/sections/{section}")
}

/// The venue's geometry, worked out once per layout.
fn venue_of(event_id: EventId, layout: &Arc<EventLayout>) -> Arc<VenueGeometry> {
    type Cache = Mutex<HashMap<EventId, (Arc<EventLayout>, Arc<VenueGeometry>)>>;
    static VENUES: LazyLock<Cache> = LazyLock::new(Mutex::default);
    if let Some((for_layout, venue)) = VENUES.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id) {
        if Arc::ptr_eq(for_layout, layout) {
            return venue.clone();
        }
    }
    let venue = Arc::new(geometry::venue(layout));
    VENUES.lock().unwrap_or_else(|e| e.into_inner()).insert(event_id, (layout.clone(), venue.clone()));
    venue
}

/// Draws a view of the board for fans (a section links to its page).
pub fn draw(board: &BoardSnapshot, view: &MapView, audience: Audience) -> String {
    let event_id = board.event.event_id;
    draw_with(board, view, audience, &|name| section_href(event_id, name))
}

/// Draws a view of the board; `href` says where a section's link goes.
pub fn draw_with(board: &BoardSnapshot, view: &MapView, audience: Audience, href: &dyn Fn(&str) -> String) -> String {
    let meta = format!(r#" data-version="{}" data-epoch="{}" data-seq="{}""#, board.version, board.epoch, board.seq);
    let seats = Seats { layout: &board.layout, statuses: &board.statuses, audience };
    let venue = venue_of(board.event.event_id, &board.layout);
    match view {
        MapView::Whole => draw::whole(&board.event.name, &seats, &venue, &meta, href),
        MapView::Overview => draw::overview(&board.event.name, &seats, &venue, &meta, href),
        MapView::Section { index, rows } => {
            draw::section(&board.event.name, &seats, *index, &venue.frames[*index], rows.clone(), &venue.stage.label, &meta)
        }
    }
}

/// A view of an event's map as fans see it, drawn once per revision of its
/// board (a page view between two changes costs no drawing), or reused
/// while at most `max_age` old when changes come faster than that: the page
/// resumes the live feed from the drawing's own epoch and seq, so nothing
/// after it is missed.
pub fn fans_map(board: &BoardSnapshot, view: &MapView, max_age: Duration) -> DrawnMap {
    type Cache = Mutex<HashMap<(EventId, MapView), (String, Instant, DrawnMap)>>;
    static DRAWN: LazyLock<Cache> = LazyLock::new(Mutex::default);
    let key = (board.event.event_id, view.clone());
    if let Some((revision, drawn_at, map)) = DRAWN.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        if *revision == board.revision || (map.epoch == board.epoch && drawn_at.elapsed() < max_age) {
            return map.clone();
        }
    }
    let map = DrawnMap { svg: draw(board, view, Audience::Fans).into(), epoch: board.epoch, seq: board.seq, replaced: Arc::default() };
    let before = DRAWN.lock().unwrap_or_else(|e| e.into_inner()).insert(key, (board.revision.clone(), Instant::now(), map.clone()));
    if let Some((_, _, replaced)) = before {
        replaced.replaced.store(true, Ordering::Release);
    }
    map
}

/// A plan's map before it is saved: every seat free, tiers numbered in the
/// order the rows name them.
pub fn preview(sections: &[NewSection], stage: Option<&Stage>) -> String {
    let tiers: Vec<TierPrice> =
        frontrow_engine::venue::layouts::tiers_of(sections).into_iter().map(|tier| TierPrice { tier, price_cents: 0 }).collect();
    let layout = frontrow_engine::venue::catalogue::plan_layout(sections, &tiers, stage);
    let statuses = vec![SeatStatus::Available; layout.seats.len()];
    let seats = Seats { layout: &layout, statuses: &statuses, audience: Audience::Staff };
    draw::whole("the layout", &seats, &geometry::venue(&layout), r#" data-preview="1""#, &|_| "#".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontrow_model::NewRow;

    fn plan(rows: i32, seats: i32) -> EventLayout {
        let rows = (1..=rows)
            .map(|r| NewRow { row: r.to_string(), seats, tier: "T".into(), aisles_after: vec![], wheelchair: vec![], companion: vec![] })
            .collect();
        let sections = [NewSection { section: "A".into(), rows, placement: None, standing: None }];
        frontrow_engine::venue::catalogue::plan_layout(&sections, &[TierPrice { tier: "T".into(), price_cents: 1 }], None)
    }

    #[test]
    fn a_big_section_is_shown_in_blocks_of_whole_rows() {
        let settings = MapSettings { block_seats: 250, ..MapSettings::default() };
        assert_eq!(settings.blocks(&plan(10, 100), 0), vec![0..2, 2..4, 4..6, 6..8, 8..10]);
        assert_eq!(settings.blocks(&plan(3, 10), 0), vec![0..3]);
        // A row longer than a block is a block of its own.
        assert_eq!(settings.blocks(&plan(2, 300), 0), vec![0..1, 1..2]);
    }

    #[test]
    fn only_big_venues_of_several_sections_open_on_the_overview() {
        let settings = MapSettings { overview_above: 50, ..MapSettings::default() };
        assert!(!settings.overview(&plan(10, 10)), "one section is shown whole");
    }
}
