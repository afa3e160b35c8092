//! The SVG markup of the three drawings: the whole venue with every seat,
//! the overview (a shape per section, shaded by what is left), and one
//! section's seats. One string each, not a component tree: a big venue is
//! tens of thousands of seats, and the islands update them by id.

use std::fmt::{self, Display, Write};
use std::ops::Range;

use frontrow_engine::venue::live::EventLayout;
use frontrow_model::{SeatKind, SeatStatus, Stage};

use super::geometry::{bounds_of, Point, SectionFrame, Transform, VenueGeometry, MARGIN, PITCH, RADIUS};
use super::{status_class, Audience};
use crate::format::{amount, section_label, shade};
use crate::server::html_escape;

/// A coordinate as few characters as it needs ("12", "12.5").
struct N(f64);

impl Display for N {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // (+ 0.0 turns a negative zero into zero.)
        let tenths = (self.0 * 10.0).round() + 0.0;
        if tenths % 10.0 == 0.0 {
            write!(f, "{}", tenths / 10.0)
        } else {
            write!(f, "{:.1}", tenths / 10.0)
        }
    }
}

/// What every drawing of an event's seats needs.
pub(super) struct Seats<'a> {
    pub layout: &'a EventLayout,
    /// As staff see them, aligned with the layout's seats.
    pub statuses: &'a [SeatStatus],
    pub audience: Audience,
}

impl Seats<'_> {
    fn shown(&self, i: usize) -> SeatStatus {
        match self.audience {
            Audience::Fans => self.statuses[i].for_fans(),
            Audience::Staff => self.statuses[i],
        }
    }

    fn available(&self, range: Range<usize>) -> usize {
        range.filter(|&i| self.shown(i) == SeatStatus::Available).count()
    }

    fn price_min(&self, section: usize) -> i64 {
        let range = self.layout.sections[section].seats.clone();
        self.layout.seats[range].iter().map(|s| i64::from(s.price_cents)).min().unwrap_or(0)
    }
}

fn view_box(b: [f64; 4]) -> String {
    format!("{} {} {} {}", N(b[0] - MARGIN), N(b[1] - MARGIN), N(b[2] - b[0] + 2.0 * MARGIN), N(b[3] - b[1] + 2.0 * MARGIN))
}

fn path(points: impl IntoIterator<Item = Point>) -> String {
    let mut d = String::new();
    for (k, (x, y)) in points.into_iter().enumerate() {
        let _ = write!(d, "{}{} {}", if k == 0 { "M" } else { "L" }, N(x), N(y));
    }
    d.push('Z');
    d
}

fn stage(svg: &mut String, stage: &Stage) {
    let (x, y, w, h) = (stage.x - stage.width / 2.0, stage.y - stage.height / 2.0, stage.width, stage.height);
    if stage.round {
        let _ = write!(svg, r#"<ellipse class="stage" cx="{}" cy="{}" rx="{}" ry="{}"/>"#, N(stage.x), N(stage.y), N(w / 2.0), N(h / 2.0));
    } else {
        let _ = write!(svg, r#"<rect class="stage" x="{}" y="{}" width="{}" height="{}" rx="6"/>"#, N(x), N(y), N(w), N(h));
    }
    let _ = write!(
        svg,
        r#"<text class="stage-label" x="{}" y="{}" text-anchor="middle" aria-hidden="true">{}</text>"#,
        N(stage.x),
        N(stage.y + 5.0),
        html_escape(&stage.label)
    );
}

/// One section's rows of seats, each seat placed by `at`.
fn rows(svg: &mut String, seats: &Seats, section: usize, frame: &SectionFrame, rows: Range<usize>, at: &dyn Fn(Point) -> Point, focus: &mut bool) {
    let layout = seats.layout;
    let s = &layout.sections[section];
    let name = html_escape(&s.name);
    let first = s.seats.start;
    for r in rows {
        let row = &s.rows[r];
        let label = html_escape(&row.label);
        let (lx, ly) = at(frame.row_labels[r]);
        let _ = write!(
            svg,
            r#"<g class="row" data-row="{label}"><text class="row-label" x="{}" y="{}" text-anchor="middle" aria-hidden="true">{label}</text>"#,
            N(lx),
            N(ly + 3.0)
        );
        for &i in &row.seats {
            let seat = &layout.seats[i];
            let status = seats.shown(i);
            let (cx, cy) = at(frame.seats[i - first]);
            let (kind_class, kind_word) = match seat.kind {
                SeatKind::Standard | SeatKind::Standing => ("", ""),
                SeatKind::Wheelchair => (" wc", ", wheelchair space"),
                SeatKind::Companion => (" cp", ", companion seat"),
            };
            let _ = write!(
                svg,
                r#"<circle id="s-{id}" class="seat t{tier} {class}{kind_class}" cx="{cx}" cy="{cy}" r="{RADIUS}" role="button" aria-label="Section {name}, row {label}, seat {number}, {price}{kind_word}"#,
                id = html_escape(&seat.seat_id),
                tier = seat.tier_index,
                class = status_class(status),
                cx = N(cx),
                cy = N(cy),
                number = seat.number,
                price = amount(i64::from(seat.price_cents)),
            );
            if status != SeatStatus::Available {
                let _ = write!(svg, r#", {}" aria-disabled="true""#, status.word());
            } else {
                svg.push('"');
            }
            // Roving focus: the map is one Tab stop; arrows move within it.
            if *focus {
                svg.push_str(r#" tabindex="0""#);
                *focus = false;
            }
            svg.push_str("/>");
        }
        svg.push_str("</g>");
    }
}

/// A standing area on a seat map: one shape, a link to where its places
/// are held by count.
fn standing_area(svg: &mut String, seats: &Seats, section: usize, outline: &[Point], href: &str) {
    let s = &seats.layout.sections[section];
    let total = s.seats.len() as i64;
    let available = seats.available(s.seats.clone()) as i64;
    let label = section_label(&s.name, true, available, total, seats.price_min(section));
    let b = bounds_of(outline.iter().copied());
    let _ = write!(
        svg,
        r#"<g class="section standing" data-section="{name}"><a href="{href}" aria-label="{label}"><path class="area shade-{shade}" d="{d}"/><text class="section-label" x="{x}" y="{y}" text-anchor="middle" aria-hidden="true">{name} · standing</text></a></g>"#,
        name = html_escape(&s.name),
        label = html_escape(&label),
        shade = shade(available, total),
        d = path(outline.iter().copied()),
        x = N((b[0] + b[2]) / 2.0),
        y = N((b[1] + b[3]) / 2.0 + 4.0),
    );
}

/// The whole venue, every seat drawn. `section_href` names where a
/// standing area's places are held.
pub(super) fn whole(title: &str, seats: &Seats, venue: &VenueGeometry, meta: &str, section_href: &dyn Fn(&str) -> String) -> String {
    let layout = seats.layout;
    let total = layout.seats.len();
    let available = seats.available(0..total);
    let mut svg = String::with_capacity(total * 150 + 4096);
    let _ = write!(
        svg,
        r#"<svg id="seat-map" class="seat-map" xmlns="http://www.w3.org/2000/svg" viewBox="{vb}"{meta} role="group" aria-label="Seat map of {title}: {total} seats, {available} available. Use the arrow keys to move between seats and Enter to select.">"#,
        vb = view_box(venue.bounds),
        title = html_escape(title),
    );
    stage(&mut svg, &venue.stage);
    let mut focus = true;
    for (i, section) in layout.sections.iter().enumerate() {
        let t: Transform = venue.transforms[i];
        let outline: Vec<Point> = venue.frames[i].outline.iter().map(|&p| t.apply(p)).collect();
        if section.is_standing() {
            standing_area(&mut svg, seats, i, &outline, &section_href(&section.name));
            continue;
        }
        let b = bounds_of(outline.iter().copied());
        let name = html_escape(&section.name);
        let (tx, ty) = t.apply((0.0, -PITCH / 2.0 - 2.0));
        let _ = write!(
            svg,
            r#"<g class="section" data-section="{name}" data-box="{} {} {} {}" role="group" aria-label="Section {name}"><text class="section-label" x="{}" y="{}" text-anchor="middle" aria-hidden="true">Section {name}</text>"#,
            N(b[0] - 8.0),
            N(b[1] - 8.0),
            N(b[2] - b[0] + 16.0),
            N(b[3] - b[1] + 16.0),
            N(tx),
            N(ty),
        );
        rows(&mut svg, seats, i, &venue.frames[i], 0..section.rows.len(), &|p| t.apply(p), &mut focus);
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

/// One section's seats (the rows in `shown`), drawn in the section's own
/// frame: front row at the top, nearest the stage named above it.
pub(super) fn section(
    title: &str,
    seats: &Seats,
    section: usize,
    frame: &SectionFrame,
    shown: Range<usize>,
    stage_label: &str,
    meta: &str,
) -> String {
    let s = &seats.layout.sections[section];
    let range = if shown.is_empty() {
        s.seats.start..s.seats.start
    } else {
        s.rows[shown.start].seats[0]..s.rows[shown.end - 1].seats.last().map_or(0, |l| l + 1)
    };
    let first = s.seats.start;
    let points = frame.seats[range.start - first..range.end - first].iter().copied().chain(shown.clone().map(|r| frame.row_labels[r]));
    let mut b = bounds_of(points);
    b = [b[0] - PITCH, b[1] - PITCH, b[2] + PITCH, b[3] + PITCH];
    // A bar above the front row says which way the stage is.
    let hint_y = b[1] - 24.0;
    let bounds = [b[0], hint_y - 4.0, b[2], b[3]];
    let available = seats.available(range.clone());
    let rows_word = match (shown.start, shown.end) {
        _ if shown.len() == s.rows.len() => String::new(),
        (a, z) => format!(", rows {} to {}", s.rows[a].label, s.rows[z - 1].label),
    };
    let mut svg = String::with_capacity(range.len() * 150 + 2048);
    let _ = write!(
        svg,
        r#"<svg id="seat-map" class="seat-map section-map" xmlns="http://www.w3.org/2000/svg" viewBox="{vb}"{meta} data-section="{name}" role="group" aria-label="Seats of {title}, section {name}{rows_word}: {count} seats, {available} available. Use the arrow keys to move between seats and Enter to select.">"#,
        vb = view_box(bounds),
        name = html_escape(&s.name),
        title = html_escape(title),
        count = range.len(),
    );
    let _ = write!(
        svg,
        r#"<rect class="stage" x="{}" y="{}" width="{}" height="16" rx="4"/><text class="stage-hint" x="{}" y="{}" text-anchor="middle" aria-hidden="true">▲ {}</text>"#,
        N(b[0]),
        N(hint_y),
        N(b[2] - b[0]),
        N((b[0] + b[2]) / 2.0),
        N(hint_y + 11.5),
        html_escape(stage_label),
    );
    let _ = write!(svg, r#"<g class="section" data-section="{name}" role="group" aria-label="Section {name}">"#, name = html_escape(&s.name));
    let mut focus = true;
    rows(&mut svg, seats, section, frame, shown, &|p| p, &mut focus);
    svg.push_str("</g></svg>");
    svg
}

/// The venue overview: each section one shape, shaded by what is left,
/// each a link to its section named for people and screen readers.
pub(super) fn overview(title: &str, seats: &Seats, venue: &VenueGeometry, meta: &str, section_href: &dyn Fn(&str) -> String) -> String {
    let layout = seats.layout;
    let mut svg = String::with_capacity(layout.sections.len() * 400 + 2048);
    let _ = write!(
        svg,
        r#"<svg id="venue-overview" class="venue-overview" xmlns="http://www.w3.org/2000/svg" viewBox="{vb}"{meta} role="group" aria-label="Overview of {title}: choose a section">"#,
        vb = view_box(venue.bounds),
        title = html_escape(title),
    );
    stage(&mut svg, &venue.stage);
    for (i, s) in layout.sections.iter().enumerate() {
        let t = venue.transforms[i];
        let outline: Vec<Point> = venue.frames[i].outline.iter().map(|&p| t.apply(p)).collect();
        let total = s.seats.len() as i64;
        let available = seats.available(s.seats.clone()) as i64;
        let price = seats.price_min(i);
        let label = section_label(&s.name, s.is_standing(), available, total, price);
        let (cx, cy) = outline.iter().fold((0.0, 0.0), |(x, y), p| (x + p.0, y + p.1));
        let n = outline.len().max(1) as f64;
        let name = html_escape(&s.name);
        let _ = write!(
            svg,
            r#"<a id="ov-{name}" class="ov-section shade-{shade}{standing}" href="{href}" aria-label="{label}" data-section="{name}" data-total="{total}" data-available="{available}" data-price="{price}"><path d="{d}"/><text x="{x}" y="{y}" text-anchor="middle" aria-hidden="true">{name}</text></a>"#,
            shade = shade(available, total),
            standing = if s.is_standing() { " standing" } else { "" },
            href = section_href(&s.name),
            label = html_escape(&label),
            d = path(outline.iter().copied()),
            x = N(cx / n),
            y = N(cy / n + 4.0),
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::N;

    #[test]
    fn coordinates_take_as_few_characters_as_they_need() {
        assert_eq!(N(12.0).to_string(), "12");
        assert_eq!(N(12.04).to_string(), "12");
        assert_eq!(N(-3.24).to_string(), "-3.2");
        assert_eq!(N(-0.01).to_string(), "0");
        assert_eq!(N(7.5).to_string(), "7.5");
    }
}
