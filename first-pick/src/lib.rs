//! The first code a fan's browser runs on an event's pages.
//!
//! The app (hold, payment, countdown, live feed) is a few hundred KB of
//! WebAssembly; a seat map is usable long before it arrives. This module is
//! a few tens of KB: on a map a fan may pick from, it selects and unselects
//! seats at once, with the mouse or the keyboard, under the per-order
//! limit the page states. The app's scripts wait in the page's
//! `<template id="app-scripts">` and are put to work on the first pick, or
//! [`APP_AFTER_MS`] after this module starts, whichever comes first; the
//! app's picker then takes over the seats picked so far (it marks the map
//! `data-picker="app"`, and from then on this module leaves events alone).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, Event, HtmlTemplateElement, KeyboardEvent};

use frontrow_seat_dom::{document, element, is_available, on_key, seat_el, seat_from_event, seat_map, selected_seat_ids, set_selected, window};

/// How long a page waits for a first pick before loading the app anyway:
/// long enough that a fan who knows what they want picks without the
/// app's download in the way, short enough that the rest of the page is
/// live before anyone reaches for it.
pub const APP_AFTER_MS: i32 = 800;

/// Where this module says the map can be picked from, for the page's own
/// timing (and the benchmark that reads it).
pub const PICKABLE_MARK: &str = "frontrow:pickable";

#[wasm_bindgen(start)]
pub fn start() {
    let limit = document()
        .query_selector("[data-pick-limit]")
        .ok()
        .flatten()
        .and_then(|el| el.get_attribute("data-pick-limit"))
        .and_then(|n| n.parse::<usize>().ok());
    match (seat_map(), limit) {
        (Some(map), Some(limit)) => {
            wire(&map, limit);
            load_app_after(APP_AFTER_MS);
        }
        // A map this fan cannot pick from now (a hold to pay for, a sale
        // not open): the app has the answer, so it comes at once.
        (Some(_), None) => load_app_after(0),
        // The overview and the lists: links and forms work without the app.
        (None, _) => load_app_after(APP_AFTER_MS),
    }
}

fn wire(map: &Element, limit: usize) {
    let on_click = Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
        if app_has_the_map() {
            return;
        }
        if let Some(seat) = seat_from_event(ev.target()) {
            pick(&seat, limit);
        }
    });
    let on_keydown = Closure::<dyn FnMut(KeyboardEvent)>::new(move |ev: KeyboardEvent| {
        if app_has_the_map() {
            return;
        }
        if let Some(seat) = on_key(&ev).and_then(|id| seat_el(&id)) {
            pick(&seat, limit);
        }
    });
    let _ = map.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    let _ = map.add_event_listener_with_callback("keydown", on_keydown.as_ref().unchecked_ref());
    // The page lives as long as the listeners: they are never removed.
    on_click.forget();
    on_keydown.forget();
    let _ = map.set_attribute("data-picker", "first");
    if let Some(performance) = window().performance() {
        let _ = performance.mark(PICKABLE_MARK);
    }
}

fn app_has_the_map() -> bool {
    seat_map().and_then(|m| m.get_attribute("data-picker")).as_deref() == Some("app")
}

/// Toggles a seat as the app's picker would: an unavailable seat, or one
/// over the limit, is left as it is (the app says why when it arrives).
fn pick(seat: &Element, limit: usize) {
    if seat.class_list().contains("sel") {
        set_selected(seat, false);
    } else if is_available(seat) && selected_seat_ids().len() < limit {
        set_selected(seat, true);
    }
    load_app_after(0);
}

/// The app's scripts go in from a timer, never inside an event handler:
/// put in while a click is being handled, Chromium was seen never to run
/// the idle callback that Leptos' hydration script waits for.
fn load_app_after(ms: i32) {
    let later = Closure::once_into_js(load_app);
    let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(later.unchecked_ref(), ms);
}

/// Puts the app's scripts (held back in the page's template) into the
/// document, once.
fn load_app() {
    let Some(template) = element("app-scripts").and_then(|el| el.dyn_into::<HtmlTemplateElement>().ok()) else { return };
    template.remove();
    if let (Some(head), Ok(scripts)) = (document().head(), document().import_node_with_deep(&template.content(), true)) {
        let _ = head.append_child(&scripts);
    }
}
