//! The interactive parts of the pages, hydrated in the browser.
//!
//! Each island renders the same markup on the server and on its first client
//! render (from its props only), then takes over in effects, which run only
//! in the browser. Browser-only code lives in [`crate::client`].

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::client;
use crate::format::{countdown, money};
use crate::props::{CheckoutState, HoldInfo, PickerProps};

/// The simulated provider's test cards.
pub const TEST_CARDS: [(&str, &str); 4] = [
    ("tok_visa", "Visa ending 4242: approves"),
    ("tok_chargeDeclined", "Card ending 0002: declined"),
    ("tok_slow", "Slow bank: approves after a while"),
    ("tok_lost", "Lost reply: charged, settled later"),
];

/// A seat the fan has picked but not yet held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The seat picker's state; every field is a cheap handle, so the struct is
/// `Copy` and moves freely into handlers.
#[derive(Clone, Copy)]
pub struct Picker {
    pub event_id: StoredValue<String>,
    pub tiers: StoredValue<Vec<crate::props::TierInfo>>,
    pub max_seats: i32,
    pub hold_ttl_ms: i64,
    pub signed_in: bool,
    pub on_sale: bool,
    pub selected: RwSignal<Vec<Pick>>,
    pub hold: RwSignal<Option<HoldInfo>>,
    pub busy: RwSignal<bool>,
    pub message: RwSignal<Option<Message>>,
    pub remaining_ms: RwSignal<i64>,
    /// Server clock minus browser clock, in milliseconds.
    pub clock_offset: StoredValue<f64>,
    /// `connecting`, `live` or `reconnecting`.
    pub live: RwSignal<&'static str>,
    /// Where the live feed resumes from: the board's epoch and the last seq seen.
    pub epoch: StoredValue<u32>,
    pub seq: StoredValue<u64>,
    pub card: RwSignal<String>,
    pub ready: RwSignal<bool>,
    /// The waiting room's admission token (renewed while the page is open).
    pub admission: StoredValue<Option<String>>,
    pub queue_token: StoredValue<Option<String>>,
}

impl Picker {
    pub fn say(&self, kind: &'static str, text: impl Into<String>) {
        self.message.set(Some(Message { kind, text: text.into() }));
    }
}

#[island]
pub fn SeatPicker(props: PickerProps) -> impl IntoView {
    let initial_remaining = props.hold.as_ref().map_or(0, |h| h.expires_at_ms - props.server_now_ms);
    let p = Picker {
        event_id: StoredValue::new(props.event_id.clone()),
        tiers: StoredValue::new(props.tiers.clone()),
        max_seats: props.max_seats,
        hold_ttl_ms: i64::from(props.hold_ttl_seconds) * 1000,
        signed_in: props.signed_in,
        on_sale: props.on_sale,
        selected: RwSignal::new(Vec::new()),
        hold: RwSignal::new(props.hold.clone()),
        busy: RwSignal::new(false),
        message: RwSignal::new(None),
        remaining_ms: RwSignal::new(initial_remaining),
        clock_offset: StoredValue::new(0.0),
        live: RwSignal::new("connecting"),
        epoch: StoredValue::new(props.epoch),
        seq: StoredValue::new(props.seq),
        card: RwSignal::new(TEST_CARDS[0].0.to_owned()),
        ready: RwSignal::new(false),
        admission: StoredValue::new(props.admission_token.clone()),
        queue_token: StoredValue::new(props.queue_token.clone()),
    };
    let server_now_ms = props.server_now_ms;
    // Browser only: wire the map, open the live feed, start the clock.
    Effect::new(move |_| client::start_picker(p, server_now_ms));

    let best_count = RwSignal::new("2".to_owned());
    let best_tier = RwSignal::new(props.tiers.first().map(|t| t.tier.clone()).unwrap_or_default());
    let signin = format!("/signin?next=/events/{}", props.event_id);
    let max_count = props.max_seats.clamp(1, 10);
    let count_options = move || (1..=max_count).map(|n| view! { <option value=n.to_string() selected=n == 2>{n}</option> }).collect_view();
    let tier_options = move || {
        p.tiers.get_value()
            .into_iter()
            .map(|t| view! { <option value=t.tier.clone()>{format!("{} ({})", t.tier, money(i64::from(t.price_cents)))}</option> })
            .collect_view()
    };

    let live_text = move || match p.live.get() {
        "live" => "Live: seats update as others buy",
        "reconnecting" => "Reconnecting to live updates…",
        _ => "Connecting to live updates…",
    };

    let selection_view = move || {
        let picks = p.selected.get();
        let total: i64 = picks.iter().map(|s| s.price_cents).sum();
        let n = picks.len();
        view! {
            <h2>"Your seats"</h2>
            {(n == 0).then(|| view! { <p class="hint">"Pick seats on the map, or let us find the best ones together."</p> })}
            <ul class="selection">
                {picks.into_iter().map(|s| {
                    let id = s.seat_id.clone();
                    let remove_label = format!("Remove {}", s.label);
                    view! {
                        <li data-seat-id=s.seat_id.clone()>
                            <span>{s.label} " · " {money(s.price_cents)}</span>
                            <button class="link" aria-label=remove_label on:click=move |_| client::toggle_seat(p, &id)>"Remove"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
            {(n > 0).then(|| view! { <p class="total">"Total " <strong>{money(total)}</strong></p> })}
            <button class="primary" id="hold-button" disabled=move || p.busy.get() || p.selected.with(|s| s.is_empty())
                on:click=move |_| client::hold_selected(p)>
                {match n { 0 => "Hold seats".to_owned(), 1 => "Hold 1 seat".to_owned(), n => format!("Hold {n} seats") }}
            </button>
        }
    };

    let hold_view = move |h: HoldInfo| {
        let pay_label = format!("Pay {}", money(h.total_cents));
        view! {
            // Focus lands here after a hold (tabindex -1), so keyboard and
            // screen-reader users continue in the panel that replaced the button.
            <h2 id="held-title" tabindex="-1">"Held for you"</h2>
            <p class="countdown">"Time left to pay: "
                <strong id="countdown" role="timer" aria-live="off">{move || countdown(p.remaining_ms.get())}</strong>
            </p>
            <ul class="held-seats">
                {h.labels.iter().map(|l| view! { <li>{l.clone()}</li> }).collect_view()}
            </ul>
            <p class="total">"Total " <strong>{money(h.total_cents)}</strong></p>
            <fieldset class="cards">
                <legend>"Pay with a test card"</legend>
                {TEST_CARDS.iter().map(|(token, label)| {
                    let token = *token;
                    view! {
                        <label class="card-choice">
                            <input type="radio" name="card" value=token
                                checked=move || p.card.get() == token
                                on:change=move |_| p.card.set(token.to_owned())/>
                            {*label}
                        </label>
                    }
                }).collect_view()}
            </fieldset>
            <div class="actions">
                <button class="primary" id="pay-button" disabled=move || p.busy.get() on:click=move |_| client::pay(p)>{pay_label}</button>
                <button id="release-button" disabled=move || p.busy.get() on:click=move |_| client::release(p)>"Release seats"</button>
            </div>
        }
    };

    view! {
        <aside class="picker" id="picker" aria-label="Your order" data-ready=move || p.ready.get().to_string()>
            <p class="live-status" data-live=move || p.live.get()>{live_text}</p>
            {move || match p.hold.get() {
                Some(h) => hold_view(h).into_any(),
                None => view! {
                    {selection_view}
                    <form class="best" on:submit=move |ev| {
                        ev.prevent_default();
                        client::hold_best(p, best_count.get_untracked(), best_tier.get_untracked());
                    }>
                        <h3>"Best available"</h3>
                        <div class="best-fields">
                            <label>"Seats " <select name="count" on:change=move |ev| best_count.set(event_target_value(&ev))>{count_options()}</select></label>
                            <label>"Tier " <select name="tier" on:change=move |ev| best_tier.set(event_target_value(&ev))>{tier_options()}</select></label>
                        </div>
                        <button type="submit" id="best-button" disabled=move || p.busy.get()>"Find seats together"</button>
                    </form>
                }.into_any(),
            }}
            {(!props.signed_in).then(|| view! { <p class="hint"><a href=signin.clone()>"Sign in"</a> " to hold seats."</p> })}
            {(!props.on_sale).then(|| view! { <p class="hint">"Tickets for this event are not on sale right now."</p> })}
            <div class="message" role="status" aria-live="polite">
                {move || p.message.get().map(|m| view! { <p class=format!("msg {}", m.kind)>{m.text}</p> })}
            </div>
        </aside>
    }
}

/// Zoom, pan and section filter for the seat map.
#[island]
pub fn MapTools(sections: Vec<String>) -> impl IntoView {
    Effect::new(move |_| client::start_map_tools());
    view! {
        <div class="map-tools" role="toolbar" aria-label="Seat map view">
            <button type="button" aria-label="Zoom in" on:click=move |_| client::zoom(0.7)>"+"</button>
            <button type="button" aria-label="Zoom out" on:click=move |_| client::zoom(1.0 / 0.7)>"−"</button>
            <button type="button" on:click=move |_| client::show_section("")>"Whole venue"</button>
            <label>"Section "
                <select id="section-filter" on:change=move |ev| client::show_section(&event_target_value(&ev))>
                    <option value="">"All"</option>
                    {sections.into_iter().map(|s| view! { <option value=s.clone()>{format!("Section {s}")}</option> }).collect_view()}
                </select>
            </label>
        </div>
    }
}

/// Follows a checkout whose payment outcome is not known yet.
#[island]
pub fn CheckoutWatcher(state: CheckoutState) -> impl IntoView {
    let status = RwSignal::new(state.status.clone());
    let reason = RwSignal::new(state.reason.clone());
    let checkout_id = state.checkout_id.clone();
    Effect::new(move |_| client::watch_checkout(checkout_id.clone(), status, reason));
    view! {
        <div class="checkout-status" role="status" aria-live="polite" data-status=move || status.get()>
            {move || match status.get().as_str() {
                "payment_pending" => view! {
                    <p class="pending">"Your payment is being processed. Your seats stay reserved meanwhile; this page updates by itself."</p>
                }.into_any(),
                "confirmed" => view! { <p>"Confirmed! Taking you to your tickets…"</p> }.into_any(),
                "refunded" => view! {
                    <p class="msg error">"The seats could not be kept for this payment, so it was refunded in full. "
                        <a href="/">"Back to events"</a></p>
                }.into_any(),
                _ => view! {
                    <p class="msg error">"The payment did not go through: " {move || reason.get().unwrap_or_default()} ". Nothing was charged. "
                        <a href="/">"Back to events"</a></p>
                }.into_any(),
            }}
        </div>
    }
}

/// Sign-in and sign-up form, posting to the JSON API.
#[island]
pub fn AuthForm(signup: bool, next: String) -> impl IntoView {
    let name = RwSignal::new(String::new());
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    // Flips once hydrated, so tests (and styles) know the form is live.
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        client::authenticate(signup, name.get_untracked(), email.get_untracked(), password.get_untracked(), next.clone(), error, busy);
    };
    view! {
        <form class="auth-form" data-ready=move || ready.get().to_string() on:submit=submit>
            {signup.then(|| view! {
                <label>"Name" <input type="text" name="name" autocomplete="name" required
                    on:input=move |ev| name.set(event_target_value(&ev))/></label>
            })}
            <label>"Email" <input type="email" name="email" autocomplete="email" required
                on:input=move |ev| email.set(event_target_value(&ev))/></label>
            <label>"Password" <input type="password" name="password" required minlength=if signup { "8" } else { "1" }
                autocomplete=if signup { "new-password" } else { "current-password" }
                on:input=move |ev| password.set(event_target_value(&ev))/></label>
            <button class="primary" type="submit" disabled=move || busy.get()>{if signup { "Create account" } else { "Sign in" }}</button>
            <div role="alert">{move || error.get().map(|e| view! { <p class="msg error">{e}</p> })}</div>
        </form>
    }
}

#[island]
pub fn SignOutButton() -> impl IntoView {
    view! { <button class="sign-out" on:click=move |_| client::sign_out()>"Sign out"</button> }
}
