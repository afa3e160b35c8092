//! The server-rendered seat map in the page, as the app's picker and the
//! staff desk see it: seat names, tiers, statuses and the availability
//! line, over the DOM helpers shared with the first-pick module
//! (`frontrow-seat-dom`).

use frontrow_model::SeatStatus;
use web_sys::Element;

pub use frontrow_seat_dom::{is_available, on_key, seat_el, seat_from_event, seat_id_of, seat_map, selected_seat_ids, set_selected};

use super::browser::{document, element};

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
        // None free: held seats may come back. A map tells by its seats; an
        // overview (counts only) keeps what the server last said.
        "sold_out" | "on_sale" | "all_held" if available == 0 => {
            let held_on_map = document().query_selector("#seat-map circle.seat.hd").ok().flatten().is_some();
            let map_drawn = document().query_selector("#seat-map circle.seat").ok().flatten().is_some();
            if held_on_map || (!map_drawn && status == "all_held") {
                "all_held"
            } else {
                "sold_out"
            }
        }
        "sold_out" | "on_sale" | "all_held" => "on_sale",
        other => other,
    };
    let (text, class) = crate::format::availability(status, available, total);
    line.set_text_content(Some(&text));
    let _ = line.set_attribute("class", &format!("availability {class}"));
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
