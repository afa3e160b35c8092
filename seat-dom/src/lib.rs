//! The server-drawn seat map in the browser, with nothing but the DOM: a
//! seat is found by id (`s-<seat id>`), so a change costs a few attribute
//! writes however large the venue is; the map is one Tab stop with roving
//! focus between seats.
//!
//! The app's picker and the small first-pick module (which lets a fan pick
//! before the app has arrived) both use it, so a seat is selected the same
//! way by either.

use wasm_bindgen::JsCast;
use web_sys::{Element, KeyboardEvent};

pub fn window() -> web_sys::Window {
    web_sys::window().expect("a browser window")
}

pub fn document() -> web_sys::Document {
    window().document().expect("a document")
}

pub fn element(id: &str) -> Option<Element> {
    document().get_element_by_id(id)
}

pub fn seat_el(seat_id: &str) -> Option<Element> {
    element(&format!("s-{seat_id}"))
}

pub fn seat_map() -> Option<Element> {
    element("seat-map")
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

pub fn set_selected(el: &Element, on: bool) {
    let _ = el.class_list().toggle_with_force("sel", on);
    if on {
        let _ = el.set_attribute("aria-pressed", "true");
    } else {
        let _ = el.remove_attribute("aria-pressed");
    }
}

/// The ids of the seats the map shows selected, in page order.
pub fn selected_seat_ids() -> Vec<String> {
    let Ok(list) = document().query_selector_all("#seat-map circle.seat.sel") else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)?.dyn_into::<Element>().ok()).filter_map(|el| seat_id_of(&el)).collect()
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
