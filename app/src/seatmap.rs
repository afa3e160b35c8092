//! The seat map as SVG markup, drawn on the server from the live board.
//!
//! One string, not a component tree: a 10,000-seat arena is 10,000 circles,
//! and building them as reactive views would cost far more on the server and
//! nothing would be gained in the browser, where the seat picker updates
//! seats directly by id. Each seat carries what the browser needs: its id,
//! its tier (class `t<i>`), its status (class `av`/`hd`/`sd`, drawn as a
//! solid dot, a hollow ring or a small dot, so not by colour alone) and an
//! accessible name with the price.

use std::fmt::Write;

use frontrow_engine::live::BoardSnapshot;
use frontrow_model::SeatStatus;

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

pub fn status_class(status: SeatStatus) -> &'static str {
    match status {
        SeatStatus::Available => "av",
        SeatStatus::Held => "hd",
        SeatStatus::Sold | SeatStatus::Blocked => "sd",
    }
}

/// Renders the whole map. Sections are laid out left to right, wrapping
/// after `columns`, facing a stage along the top.
pub fn render(board: &BoardSnapshot) -> String {
    let layout = &board.layout;
    let sections = &layout.sections;
    let columns = match sections.len() {
        0..=3 => sections.len().max(1),
        4 => 2,
        _ => 3,
    };
    // Every section gets the same box: as wide as the widest row anywhere,
    // as tall as the deepest section, so the grid lines up.
    let widest = sections.iter().flat_map(|s| s.rows.iter()).map(|r| r.seats.len()).max().unwrap_or(0);
    let deepest = sections.iter().map(|s| s.rows.len()).max().unwrap_or(0);
    let cell_w = ROW_LABEL + widest * PITCH + SECTION_GAP;
    let cell_h = SECTION_TITLE + deepest * PITCH + SECTION_GAP;
    let grid_rows = sections.len().div_ceil(columns);
    let width = columns * cell_w + SECTION_GAP;
    let height = STAGE_HEIGHT + SECTION_GAP + grid_rows * cell_h;

    let mut svg = String::with_capacity(layout.seats.len() * 150 + 4096);
    let _ = write!(
        svg,
        r#"<svg id="seat-map" class="seat-map" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" data-version="{version}" data-epoch="{epoch}" data-seq="{seq}" role="group" aria-label="Seat map of {name}: {total} seats, {available} available. Use the arrow keys to move between seats and Enter to select.">"#,
        version = board.version,
        epoch = board.epoch,
        seq = board.seq,
        name = html_escape(&board.event.name),
        total = layout.seats.len(),
        available = board.seats_available(),
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
        let box_w = ROW_LABEL + widest * PITCH;
        let box_h = SECTION_TITLE + section.rows.len() * PITCH;
        let name = html_escape(&section.name);
        let _ = write!(
            svg,
            r#"<g class="section" data-section="{name}" data-box="{bx} {by} {bw} {bh}" role="group" aria-label="Section {name}"><text class="section-label" x="{tx}" y="{ty}" aria-hidden="true">Section {name}</text>"#,
            bx = x0.saturating_sub(8),
            by = y0.saturating_sub(8),
            bw = box_w + 16,
            bh = box_h + 16,
            tx = x0,
            ty = y0 + 10,
        );
        for (r, row) in section.rows.iter().enumerate() {
            let cy = y0 + SECTION_TITLE + r * PITCH + PITCH / 2;
            let label = html_escape(&row.label);
            // Rows shorter than the widest are centred in the section.
            let indent = (widest - row.seats.len()) * PITCH / 2;
            let _ = write!(
                svg,
                r#"<g class="row" data-row="{label}"><text class="row-label" x="{x0}" y="{ty}" aria-hidden="true">{label}</text>"#,
                ty = cy + 3,
            );
            for (k, &i) in row.seats.iter().enumerate() {
                let seat = &layout.seats[i];
                // Fans see a blocked seat as sold.
                let status = board.statuses[i].for_fans();
                let cx = x0 + ROW_LABEL + indent + k * PITCH + PITCH / 2;
                let price = amount(i64::from(seat.price_cents));
                let _ = write!(
                    svg,
                    r#"<circle id="s-{id}" class="seat t{tier} {class}" cx="{cx}" cy="{cy}" r="{RADIUS}" role="button" aria-label="Section {name}, row {label}, seat {number}, {price}"#,
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
