//! The seat map as SVG markup, drawn on the server from the live board (or,
//! for the layout generator's preview, from a plan not yet saved).
//!
//! One string, not a component tree: a 10,000-seat arena is 10,000 circles,
//! and building them as reactive views would cost far more on the server and
//! nothing would be gained in the browser, where the islands update seats
//! directly by id. Each seat carries what the browser needs: its id, its
//! tier (class `t<i>`), its status (class `av`/`hd`/`sd`, and `bk` for staff,
//! drawn as a solid dot, a hollow ring, a small dot or a crossed dot, so not
//! by colour alone), its kind (`wc` wheelchair space, `cp` companion seat)
//! and an accessible name with the price. An aisle leaves a gap in its row.

use std::fmt::Write;

use frontrow_engine::live::{BoardSnapshot, EventLayout};
use frontrow_model::{NewSection, SeatKind, SeatStatus, TierPrice};

use crate::format::amount;
use crate::server::html_escape;

/// Distance between seat centres, in SVG units.
const PITCH: usize = 12;
const RADIUS: usize = 5;
/// Room left of each row for its label.
const ROW_LABEL: usize = 22;
const SECTION_GAP: usize = 36;
const SECTION_TITLE: usize = 18;
const STAGE_HEIGHT: usize = 40;
/// The gap an aisle leaves between two seats.
const AISLE: usize = PITCH / 2;

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

/// The map fans see.
pub fn render(board: &BoardSnapshot) -> String {
    render_for(board, Audience::Fans)
}

/// A drawing of the fans' map and the point of the live feed it shows.
#[derive(Debug, Clone)]
pub struct DrawnMap {
    pub svg: std::sync::Arc<str>,
    pub epoch: u32,
    pub seq: u64,
}

/// The fans' seat map of an event, drawn once per revision of its board
/// (a page view between two changes costs no drawing), or reused while at
/// most `max_age` old when changes come faster than that: the page resumes
/// the live feed from the drawing's own epoch and seq, so nothing after it
/// is missed.
pub fn fans_map(board: &BoardSnapshot, max_age: std::time::Duration) -> DrawnMap {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    use std::time::Instant;
    static DRAWN: LazyLock<Mutex<HashMap<uuid::Uuid, (String, Instant, DrawnMap)>>> = LazyLock::new(Mutex::default);
    let event_id = board.event.event_id;
    if let Some((revision, drawn_at, map)) = DRAWN.lock().unwrap_or_else(|e| e.into_inner()).get(&event_id) {
        if *revision == board.revision || (map.epoch == board.epoch && drawn_at.elapsed() < max_age) {
            return map.clone();
        }
    }
    let map = DrawnMap { svg: render(board).into(), epoch: board.epoch, seq: board.seq };
    DRAWN.lock().unwrap_or_else(|e| e.into_inner()).insert(event_id, (board.revision.clone(), Instant::now(), map.clone()));
    map
}

pub fn render_for(board: &BoardSnapshot, audience: Audience) -> String {
    let meta = format!(r#" data-version="{}" data-epoch="{}" data-seq="{}""#, board.version, board.epoch, board.seq);
    draw(&board.event.name, &board.layout, &board.statuses, &meta, audience)
}

/// A plan's map before it is saved: every seat free, tiers numbered in the
/// order the rows name them.
pub fn preview(sections: &[NewSection]) -> String {
    let tiers: Vec<TierPrice> =
        frontrow_engine::layouts::tiers_of(sections).into_iter().map(|tier| TierPrice { tier, price_cents: 0 }).collect();
    let layout = frontrow_engine::catalogue::plan_layout(sections, &tiers);
    let statuses = vec![SeatStatus::Available; layout.seats.len()];
    draw("the layout", &layout, &statuses, r#" data-preview="1""#, Audience::Staff)
}

/// Where a row's seats sit along it, from its first seat's left edge.
fn offsets(layout: &EventLayout, seats: &[usize]) -> Vec<usize> {
    let mut x = 0;
    seats
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            if k > 0 {
                x += PITCH + if layout.seats[i].aisle_before { AISLE } else { 0 };
            }
            x
        })
        .collect()
}

/// Renders the whole map. Sections are laid out left to right, wrapping
/// after `columns`, facing a stage along the top.
fn draw(name: &str, layout: &EventLayout, statuses: &[SeatStatus], meta: &str, audience: Audience) -> String {
    let sections = &layout.sections;
    let columns = match sections.len() {
        0..=3 => sections.len().max(1),
        4 => 2,
        _ => 3,
    };
    // Every section gets the same box: as wide as the widest row anywhere,
    // as tall as the deepest section, so the grid lines up.
    let row_width = |seats: &[usize]| offsets(layout, seats).last().map_or(0, |x| x + PITCH);
    let widest = sections.iter().flat_map(|s| s.rows.iter()).map(|r| row_width(&r.seats)).max().unwrap_or(0);
    let deepest = sections.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let cell_w = ROW_LABEL + widest + SECTION_GAP;
    let cell_h = SECTION_TITLE + deepest * PITCH + SECTION_GAP;
    let grid_rows = sections.len().div_ceil(columns);
    let width = columns * cell_w + SECTION_GAP;
    let height = STAGE_HEIGHT + SECTION_GAP + grid_rows * cell_h;
    let shown = |i: usize| match audience {
        Audience::Fans => statuses[i].for_fans(),
        Audience::Staff => statuses[i],
    };
    let available = (0..statuses.len()).filter(|&i| shown(i) == SeatStatus::Available).count();

    let mut svg = String::with_capacity(layout.seats.len() * 150 + 4096);
    let _ = write!(
        svg,
        r#"<svg id="seat-map" class="seat-map" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"{meta} role="group" aria-label="Seat map of {name}: {total} seats, {available} available. Use the arrow keys to move between seats and Enter to select.">"#,
        name = html_escape(name),
        total = layout.seats.len(),
    );
    let stage_w = width.saturating_sub(2 * SECTION_GAP);
    let _ = write!(
        svg,
        r#"<rect class="stage" x="{SECTION_GAP}" y="8" width="{stage_w}" height="{h}" rx="6"/><text class="stage-label" x="{cx}" y="{ty}" text-anchor="middle" aria-hidden="true">STAGE</text>"#,
        h = STAGE_HEIGHT - 12,
        cx = width / 2,
        ty = 8 + (STAGE_HEIGHT - 12) / 2 + 5,
    );
    let mut first_focusable = true;
    for (n, section) in sections.iter().enumerate() {
        let x0 = SECTION_GAP + (n % columns) * cell_w;
        let y0 = STAGE_HEIGHT + SECTION_GAP + (n / columns) * cell_h;
        let box_h = SECTION_TITLE + section.rows.len() * PITCH;
        let section_name = html_escape(&section.name);
        let _ = write!(
            svg,
            r#"<g class="section" data-section="{section_name}" data-box="{bx} {by} {bw} {bh}" role="group" aria-label="Section {section_name}"><text class="section-label" x="{tx}" y="{ty}" aria-hidden="true">Section {section_name}</text>"#,
            bx = x0.saturating_sub(8),
            by = y0.saturating_sub(8),
            bw = ROW_LABEL + widest + 16,
            bh = box_h + 16,
            tx = x0,
            ty = y0 + 10,
        );
        for (r, row) in section.rows.iter().enumerate() {
            let cy = y0 + SECTION_TITLE + r * PITCH + PITCH / 2;
            let label = html_escape(&row.label);
            // Rows shorter than the widest are centred in the section.
            let indent = (widest - row_width(&row.seats)) / 2;
            let _ = write!(
                svg,
                r#"<g class="row" data-row="{label}"><text class="row-label" x="{x0}" y="{ty}" aria-hidden="true">{label}</text>"#,
                ty = cy + 3,
            );
            for (&i, x) in row.seats.iter().zip(offsets(layout, &row.seats)) {
                let seat = &layout.seats[i];
                let status = shown(i);
                let cx = x0 + ROW_LABEL + indent + x + PITCH / 2;
                let (kind_class, kind_word) = match seat.kind {
                    SeatKind::Standard => ("", ""),
                    SeatKind::Wheelchair => (" wc", ", wheelchair space"),
                    SeatKind::Companion => (" cp", ", companion seat"),
                };
                let price = amount(i64::from(seat.price_cents));
                let _ = write!(
                    svg,
                    r#"<circle id="s-{id}" class="seat t{tier} {class}{kind_class}" cx="{cx}" cy="{cy}" r="{RADIUS}" role="button" aria-label="Section {section_name}, row {label}, seat {number}, {price}{kind_word}"#,
                    id = html_escape(&seat.seat_id),
                    tier = seat.tier_index,
                    class = status_class(status),
                    number = seat.number,
                );
                if status != SeatStatus::Available {
                    let _ = write!(svg, r#", {}" aria-disabled="true""#, status.word());
                } else {
                    svg.push('"');
                }
                // Roving focus: the map is one Tab stop; arrows move within it.
                if first_focusable {
                    svg.push_str(r#" tabindex="0""#);
                    first_focusable = false;
                }
                svg.push_str("/>");
            }
            svg.push_str("</g>");
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}
