//! The seat picker's workflow: choosing seats, holding them (by hand, best
//! available, the nearest free block after a lost race, or a standing
//! area's places by count), the countdown on the server's clock, paying
//! (`pay`), releasing, and following the live feed (`feed`); asking for
//! a hold and reading its answer is `hold`.

mod feed;
mod hold;
mod pay;

use std::collections::HashMap;
use std::rc::Rc;

use frontrow_model::{AppError, ErrorKind, EventId, Hold, HoldToken, IdempotencyKey, SeatId, SeatStatus, StandingPlaces};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{KeyboardEvent, MouseEvent};

use super::browser::{element, focus, navigate, now_ms, random_key, session_storage, window};
use super::live_feed;
use super::seat_dom::*;
use crate::actions;
use crate::format::money;
use crate::props::{HoldInfo, PickerProps, StandingOffer};
use frontrow_model::{TicketChoices, TicketType, TierPrice};
use pay::checkout_key;

/// How often an admitted fan's page renews the admission. It is also how
/// the waiting room sees the fan is still choosing: one who closed the page
/// stops counting as shopping within the engine's 30 s window.
const ADMISSION_RENEWAL: std::time::Duration = std::time::Duration::from_secs(10);

/// The simulated provider's test cards.
pub const TEST_CARDS: [(&str, &str); 4] = [
    ("tok_visa", "Visa ending 4242: approves"),
    ("tok_chargeDeclined", "Card ending 0002: declined"),
    ("tok_slow", "Slow bank: approves after a while"),
    ("tok_lost", "Lost reply: charged, settled later"),
];

/// A seat the fan has picked but not yet held.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub seat_id: String,
    pub label: String,
    pub price_cents: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub kind: &'static str,
    pub text: String,
}

/// Seats offered to a fan who lost a race: the nearest free block.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub seat_ids: Vec<String>,
    pub labels: Vec<String>,
}

/// The seat picker's state; every field is a cheap handle, so the struct is
/// `Copy` and moves freely into handlers.
#[derive(Clone, Copy)]
pub struct Picker {
    event_id: StoredValue<EventId>,
    tiers: StoredValue<Vec<TierPrice>>,
    pub max_seats: i32,
    hold_ttl_ms: i64,
    pub signed_in: bool,
    pub on_sale: bool,
    pub selected: RwSignal<Vec<Pick>>,
    pub hold: RwSignal<Option<HoldInfo>>,
    pub busy: RwSignal<bool>,
    pub message: RwSignal<Option<Message>>,
    pub suggestion: RwSignal<Option<Suggestion>>,
    pub remaining_ms: RwSignal<i64>,
    /// `connecting`, `live` or `reconnecting`.
    pub live: RwSignal<&'static str>,
    pub card: RwSignal<String>,
    pub ready: RwSignal<bool>,
    /// Server clock minus browser clock, in milliseconds.
    clock_offset: StoredValue<f64>,
    /// Where the live feed resumes from: the board's epoch and the last seq seen.
    epoch: StoredValue<u32>,
    seq: StoredValue<u64>,
    /// The waiting room's admission token (renewed while the page is open).
    admission: StoredValue<Option<String>>,
    queue_token: StoredValue<Option<String>>,
    /// Seats (or places) the page shows available, for the availability line.
    available: StoredValue<i64>,
    /// What the live feed sends this page (see [`PickerProps::feed`]).
    feed: StoredValue<String>,
    /// On a standing area's page: its places, held by count.
    pub standing: RwSignal<Option<StandingOffer>>,
    /// What the live feed said about the fan's own held seats while they
    /// held them (the map keeps showing them as theirs meanwhile).
    heard_on_mine: StoredValue<HashMap<String, SeatStatus>>,
    /// The idempotency key of the last hold asked for, with its seats: asking
    /// again for the same seats (after a timeout, say) reuses it, so the
    /// answer is the hold the first request made, never "your seats are taken".
    hold_key: StoredValue<Option<(Vec<String>, String)>>,
    /// The event's ticket types, and the one the fan chose for each held
    /// seat (a seat not chosen: the first type sold in its tier).
    pub ticket_types: StoredValue<Vec<TicketType>>,
    pub chosen_types: RwSignal<TicketChoices>,
}

impl Picker {
    pub fn new(props: &PickerProps) -> Self {
        Self {
            event_id: StoredValue::new(props.event_id),
            tiers: StoredValue::new(props.tiers.clone()),
            max_seats: props.max_seats,
            hold_ttl_ms: i64::from(props.hold_ttl_seconds) * 1000,
            signed_in: props.signed_in,
            on_sale: props.on_sale,
            selected: RwSignal::new(Vec::new()),
            hold: RwSignal::new(props.hold.clone()),
            busy: RwSignal::new(false),
            message: RwSignal::new(None),
            suggestion: RwSignal::new(None),
            remaining_ms: RwSignal::new(props.hold.as_ref().map_or(0, |h| h.expires_at_ms - props.server_now_ms)),
            live: RwSignal::new("connecting"),
            card: RwSignal::new(TEST_CARDS[0].0.to_owned()),
            ready: RwSignal::new(false),
            clock_offset: StoredValue::new(0.0),
            epoch: StoredValue::new(props.epoch),
            seq: StoredValue::new(props.seq),
            admission: StoredValue::new(props.admission_token.clone()),
            queue_token: StoredValue::new(props.queue_token.clone()),
            available: StoredValue::new(0),
            feed: StoredValue::new(props.feed.clone()),
            standing: RwSignal::new(props.standing.clone()),
            heard_on_mine: StoredValue::new(HashMap::new()),
            hold_key: StoredValue::new(None),
            ticket_types: StoredValue::new(props.ticket_types.clone()),
            chosen_types: RwSignal::new(TicketChoices::new()),
        }
    }

    /// The types sold in `tier`, with their prices there.
    pub fn types_in(self, tier: &str) -> Vec<(String, i32)> {
        self.ticket_types.with_value(|types| TicketType::sold_in(types, tier))
    }

    /// The type of each held seat as it stands (chosen, or the first sold in
    /// its tier) with its price; none for an event without types.
    pub fn held_types(self, hold: &HoldInfo) -> Vec<Option<(String, i32)>> {
        let chosen = self.chosen_types.get();
        hold.seat_ids
            .iter()
            .zip(&hold.tiers)
            .map(|(seat, tier)| {
                let sold = self.types_in(tier);
                chosen.get(seat).and_then(|name| sold.iter().find(|(n, _)| n == name).cloned()).or_else(|| sold.first().cloned())
            })
            .collect()
    }

    /// What the hold costs with the types as chosen (the server prices it
    /// again; this is what the fan reads).
    pub fn held_total(self, hold: &HoldInfo) -> i64 {
        let types = self.held_types(hold);
        if types.len() != hold.seat_ids.len() || types.iter().any(Option::is_none) {
            return hold.total_cents;
        }
        types.into_iter().flatten().map(|(_, cents)| i64::from(cents)).sum()
    }

    pub fn say(self, kind: &'static str, text: impl Into<String>) {
        self.message.set(Some(Message { kind, text: text.into() }));
    }

    /// Browser only: wires the map, opens the live feed, starts the clock.
    pub fn start(self, server_now_ms: i64) {
        // A seat map counts its seats; the overview and a standing area
        // start from the count the server rendered.
        let rendered = element("availability").and_then(|a| a.get_attribute("data-available")).and_then(|n| n.parse().ok());
        self.available.set_value(if seat_map().is_some() { count_available() } else { rendered.unwrap_or(0) });
        // The page was rendered at `server_now_ms`, just before its first
        // byte arrived here: the offset is right to within that latency.
        let first_byte = window().performance().map(|perf| perf.timing().response_start() as f64).filter(|t| *t > 0.0);
        self.clock_offset.set_value(server_now_ms as f64 - first_byte.unwrap_or_else(now_ms));
        if let Some(hold) = self.hold.get_untracked() {
            self.mark_mine(&hold.seat_ids);
        }
        if let Some(map) = seat_map() {
            // From here on the map is the app's: seats picked before it
            // arrived (the first-pick module) become the picker's selection.
            let _ = map.set_attribute("data-picker", "app");
            for id in selected_seat_ids() {
                if let Some(el) = seat_el(&id) {
                    set_selected(&el, false);
                }
                self.toggle_seat(&id);
            }
            let on_click = Closure::<dyn FnMut(MouseEvent)>::new(move |ev: MouseEvent| {
                // A drag to pan the map is not a click on a seat.
                if seat_map().and_then(|m| m.get_attribute("data-panned")).as_deref() == Some("1") {
                    return;
                }
                if let Some(id) = seat_from_event(ev.target()).as_ref().and_then(seat_id_of) {
                    self.toggle_seat(&id);
                }
            });
            let on_keydown = Closure::<dyn FnMut(KeyboardEvent)>::new(move |ev: KeyboardEvent| {
                if let Some(id) = on_key(&ev) {
                    self.toggle_seat(&id);
                }
            });
            let _ = map.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
            let _ = map.add_event_listener_with_callback("keydown", on_keydown.as_ref().unchecked_ref());
            on_click.forget();
            on_keydown.forget();
        }
        live_feed::open(self.event_id.get_value().to_string(), self.feed.get_value(), Rc::new(self));
        let _ = set_interval_with_handle(
            move || {
                if let Some(hold) = self.hold.get_untracked() {
                    let left = self.remaining(&hold);
                    self.remaining_ms.set(left);
                    // While a payment is in flight its answer decides, not the clock.
                    if left <= 0 && !self.busy.get_untracked() {
                        self.expire();
                    }
                }
            },
            std::time::Duration::from_millis(250),
        );
        if self.queue_token.with_value(Option::is_some) {
            let _ = set_interval_with_handle(move || self.renew_admission(), ADMISSION_RENEWAL);
        }
        self.ready.set(true);
    }

    fn event_path(self) -> String {
        format!("/events/{}", self.event_id.get_value())
    }

    fn sign_in_first(self) {
        navigate(&format!("/signin?next={}", self.event_path()));
    }

    /// Shows a status on a seat and keeps the availability line in step.
    fn show(self, el: &web_sys::Element, status: SeatStatus) {
        let change = show_status(el, status);
        if change != 0 {
            self.available.update_value(|n| *n += change);
            show_availability(self.available.get_value());
        }
    }

    fn mark_mine(self, seat_ids: &[String]) {
        set_mine(seat_ids, true);
        for id in seat_ids {
            if let Some(el) = seat_el(id) {
                self.show(&el, SeatStatus::Held);
            }
        }
    }

    fn seat_price(self, el: &web_sys::Element) -> i64 {
        let tier = seat_tier(el);
        self.tiers.with_value(|t| t.get(tier).map_or(0, |t| i64::from(t.price_cents)))
    }

    fn remaining(self, hold: &HoldInfo) -> i64 {
        hold.expires_at_ms - (now_ms() + self.clock_offset.get_value()) as i64
    }

    pub fn toggle_seat(self, seat_id: &str) {
        let Some(el) = seat_el(seat_id) else { return };
        if self.hold.with_untracked(Option::is_some) {
            self.say("info", "You are holding seats: pay for them or release them to choose again.");
            return;
        }
        if self.selected.with_untracked(|s| s.iter().any(|x| x.seat_id == seat_id)) {
            self.selected.update(|s| s.retain(|x| x.seat_id != seat_id));
            set_selected(&el, false);
            self.message.set(None);
            return;
        }
        if !self.on_sale {
            self.say("info", "Tickets for this event are not on sale right now.");
            return;
        }
        if !is_available(&el) {
            self.say("error", format!("{} is not available.", seat_label(&el)));
            return;
        }
        if self.selected.with_untracked(Vec::len) >= self.max_seats as usize {
            self.say("error", format!("You can choose up to {} seats per order.", self.max_seats));
            return;
        }
        let pick = Pick { seat_id: seat_id.to_owned(), label: seat_label(&el), price_cents: self.seat_price(&el) };
        self.say("info", format!("Selected {}, {}.", pick.label, money(pick.price_cents)));
        self.selected.update(|s| s.push(pick));
        set_selected(&el, true);
    }

    fn clear_selection(self) {
        for pick in self.selected.get_untracked() {
            if let Some(el) = seat_el(&pick.seat_id) {
                set_selected(&el, false);
            }
        }
        self.selected.set(Vec::new());
    }

    fn clear_suggestion(self) {
        if let Some(s) = self.suggestion.get_untracked() {
            set_suggested(&s.seat_ids, false);
            self.suggestion.set(None);
        }
    }

    /// The hold is over (released, expired). Its seats show what the live
    /// feed said about them since, if anything.
    fn let_go(self, hold: &HoldInfo) {
        set_mine(&hold.seat_ids, false);
        let heard = self.heard_on_mine.try_update_value(std::mem::take).unwrap_or_default();
        for id in &hold.seat_ids {
            if let (Some(status), Some(el)) = (heard.get(id), seat_el(id)) {
                self.show(&el, *status);
            }
        }
        if let Some(storage) = session_storage() {
            let _ = storage.remove_item(&checkout_key(hold.hold_id));
        }
        self.hold.set(None);
    }

    pub fn release(self) {
        let Some(hold) = self.hold.get_untracked() else { return };
        let Ok(token) = HoldToken::parse(hold.hold_token.clone()) else { return self.let_go(&hold) };
        self.busy.set(true);
        spawn_local(async move {
            match actions::release_hold(hold.hold_id, token).await {
                Ok(()) => {
                    self.let_go(&hold);
                    self.say("info", "Seats released.");
                }
                Err(AppError { kind: ErrorKind::HoldExpired { .. }, .. }) => {
                    self.let_go(&hold);
                    self.say("info", "Your hold had already ended; the seats are released.");
                }
                Err(e) => self.say("error", e.message),
            }
            self.busy.set(false);
        });
    }

    fn expire(self) {
        let Some(hold) = self.hold.get_untracked() else { return };
        self.let_go(&hold);
        self.say("error", "Your hold expired and the seats were released. You can pick seats again.");
        // Tell the server at once rather than wait for the reaper; a refusal is fine.
        if let Ok(token) = HoldToken::parse(hold.hold_token.clone()) {
            spawn_local(async move {
                let _ = actions::release_hold(hold.hold_id, token).await;
            });
        }
    }

    /// Keeps the admission alive while the page is open; sends the fan back
    /// to the queue if it lapsed.
    fn renew_admission(self) {
        let Some(queue_token) = self.queue_token.get_value() else { return };
        spawn_local(async move {
            match actions::renew_admission(self.event_id.get_value(), queue_token).await {
                Ok(view) if view.admission_token.is_some() => self.admission.set_value(view.admission_token),
                Ok(_) if self.hold.with_untracked(Option::is_none) => navigate(&format!("{}/queue", self.event_path())),
                _ => {}
            }
        });
    }
}
