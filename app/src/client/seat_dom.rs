//! The server-rendered seat map in the page: reading and updating seats by
//! id (`s-<seat id>`), so a change costs a few attribute writes however
//! large the venue is, and moving keyboard focus between seats.

use frontrow_model::SeatStatus;
use wasm_bindgen::JsCast;
use web_sys::{Element, KeyboardEvent};

use super::browser::{document, element};

pub fn seat_el(seat_id: &str) -> Option<Element> {
    element(&format!("s-{seat_id}"))
}

pub fn seat_map() -> Option<Element> {
    element("seat-map")
}

/// "Section A, row 1, seat 3" from the seat's accessible name.
pub fn seat_label(el: &Element) -> String {
    let name = el.get_attribute("aria-label").unwrap_or_default();
    name.split(", ").take(3).collect::<Vec<_>>().join(", ")
}

/// A seat's name from the map, or (a seat this page does not draw) read
/// from its id, `SECTION-ROW-NUMBER`.
pub fn label_of(seat_id: &str) -> String {
    if let Some(el) = seat_el(seat_id) {
        return seat_label(&el);
    }
    match seat_id.split('-').collect::<Vec<_>>()[..] {
        [section, frontrow_model::STANDING_ROW, number] => format!("Standing area {section}, place {number}"),
        [section, row, number] => format!("Section {section}, row {row}, seat {number}"),
        _ => seat_id.to_owned(),
    }
}

/// The seat's price tier (its `t<i>` class).
pub fn seat_tier(el: &Element) -> usize {
    let classes = el.get_attribute("class").unwrap_or_default();
    classes.split(' ').find_map(|c| c.strip_prefix('t').and_then(|n| n.parse::<usize>().ok())).unwrap_or(0)
}

pub fn is_available(el: &Element) -> bool {
    el.class_list().contains("av")
}

pub fn seat_id_of(el: &Element) -> Option<String> {
    el.id().strip_prefix("s-").map(str::to_owned)
}

/// The seat an event happened on, if any.
pub fn seat_from_event(target: Option<web_sys::EventTarget>) -> Option<Element> {
    let el: Element = target?.dyn_into().ok()?;
    el.closest("circle.seat").ok().flatten()
}

/// How many seats the map shows available.
pub fn count_available() -> i64 {
    document().query_selector_all("#seat-map circle.seat.av").map_or(0, |l| i64::from(l.length()))
}

/// Shows `status` on the seat; returns how the count of available seats
/// changed (-1, 0 or +1).
pub fn show_status(el: &Element, status: SeatStatus) -> i64 {
    let (class, word) = match status {
        SeatStatus::Available => ("av", None),
        SeatStatus::Sold | SeatStatus::Blocked => ("sd", Some("sold")),
        SeatStatus::Held => ("hd", Some("held")),
    };
    let list = el.class_list();
    if list.contains(class) {
        return 0;
    }
    let was_available = list.contains("av");
    let _ = list.remove_3("av", "hd", "sd");
    let _ = list.add_1(class);
    let label = el.get_attribute("aria-label").unwrap_or_default();
    let base = label.trim_end_matches(", held").trim_end_matches(", sold").to_owned();
    match word {
        Some(word) => {
            let _ = el.set_attribute("aria-label", &format!("{base}, {word}"));
            let _ = el.set_attribute("aria-disabled", "true");
        }
        None => {
            let _ = el.set_attribute("aria-label", &base);
            let _ = el.remove_attribute("aria-disabled");
        }
    }
    match (was_available, class == "av") {
        (true, false) => -1,
        (false, true) => 1,
        _ => 0,
    }
}

/// Rewrites the availability line under the event's title with the same
/// words the server uses.
pub fn show_availability(available: i64) {
    let Some(line) = element("availability") else { return };
    let total: i64 = line.get_attribute("data-total").and_then(|t| t.parse().ok()).unwrap_or(0);
    let status = line.get_attribute("data-status").unwrap_or_default();
    let status = match status.as_str() {
        "sold_out" | "on_sale" if available == 0 => "sold_out",
        "sold_out" | "on_sale" => "on_sale",
        other => other,
    };
    let (text, class) = crate::format::availability(status, available, total);
    line.set_text_content(Some(&text));
    let _ = line.set_attribute("class", &format!("availability {class}"));
}

pub fn set_selected(el: &Element, on: bool) {
    let _ = el.class_list().toggle_with_force("sel", on);
    if on {
        let _ = el.set_attribute("aria-pressed", "true");
    } else {
        let _ = el.remove_attribute("aria-pressed");
    }
}

/// Marks (or unmarks) the fan's own held seats.
pub fn set_mine(seat_ids: &[String], on: bool) {
    for id in seat_ids {
        if let Some(el) = seat_el(id) {
            let _ = el.class_list().toggle_with_force("mine", on);
        }
    }
}

pub fn flash_conflict(seat_id: &str) {
    if let Some(el) = seat_el(seat_id) {
        let _ = el.class_list().add_1("conflict");
    }
}

/// Marks seats offered to a fan who lost a race.
pub fn set_suggested(seat_ids: &[String], on: bool) {
    for id in seat_ids {
        if let Some(el) = seat_el(id) {
            let _ = el.class_list().toggle_with_force("suggested", on);
        }
    }
}

/// "A", "A and B", "A; B and C".
pub fn joined(labels: &[String]) -> String {
    match labels {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join("; ")),
    }
}

fn move_focus(from: &Element, to: Option<Element>) {
    let Some(to) = to else { return };
    let _ = from.set_attribute("tabindex", "-1");
    let _ = to.set_attribute("tabindex", "0");
    if let Some(svg_el) = to.dyn_ref::<web_sys::SvgElement>() {
        let _ = svg_el.focus();
    }
}

fn cx(el: &Element) -> f64 {
    el.get_attribute("cx").and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// The seat nearest to `el` horizontally in the row `step` rows away.
fn seat_in_other_row(el: &Element, step: i32) -> Option<Element> {
    let row = el.parent_element()?;
    let rows = seat_map()?.query_selector_all("g.row").ok()?;
    let index = (0..rows.length()).find(|&i| rows.item(i).is_some_and(|n| n.is_same_node(Some(&row))))?;
    let target = index as i64 + i64::from(step);
    if target < 0 || target >= i64::from(rows.length()) {
        return None;
    }
    let other: Element = rows.item(target as u32)?.dyn_into().ok()?;
    let seats = other.query_selector_all("circle.seat").ok()?;
    let x = cx(el);
    (0..seats.length())
        .filter_map(|i| seats.item(i).and_then(|n| n.dyn_into::<Element>().ok()))
        .min_by(|a, b| (cx(a) - x).abs().total_cmp(&(cx(b) - x).abs()))
}

fn sibling_seat(el: &Element, forward: bool) -> Option<Element> {
    let mut next = if forward { el.next_element_sibling() } else { el.previous_element_sibling() };
    while let Some(n) = next {
        if n.class_list().contains("seat") {
            return Some(n);
        }
        next = if forward { n.next_element_sibling() } else { n.previous_element_sibling() };
    }
    None
}

/// Roving focus over the map: arrows, Home and End move between seats (the
/// map is one Tab stop). Returns the seat to toggle on Enter or Space.
pub fn on_key(ev: &KeyboardEvent) -> Option<String> {
    let el = seat_from_event(ev.target())?;
    let target = match ev.key().as_str() {
        "ArrowRight" => sibling_seat(&el, true),
        "ArrowLeft" => sibling_seat(&el, false),
        "ArrowDown" => seat_in_other_row(&el, 1),
        "ArrowUp" => seat_in_other_row(&el, -1),
        "Home" => el.parent_element().and_then(|r| r.query_selector("circle.seat").ok().flatten()),
        "End" => el
            .parent_element()
            .and_then(|r| r.query_selector_all("circle.seat").ok())
            .and_then(|l| l.item(l.length().saturating_sub(1)).and_then(|n| n.dyn_into().ok())),
        "Enter" | " " => {
            ev.prevent_default();
            return seat_id_of(&el);
        }
        _ => return None,
    };
    ev.prevent_default();
    move_focus(&el, target);
    None
}
