use frontrow_model::{
    AppError, Booking, CounterPayment, ErrorKind, EventId, IdempotencyKey, PaymentToken, SeatId, StandingPlaces, TicketChoices, TicketType, TierPrice,
};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, MouseEvent};

use crate::admin::actions::{block_seats, counter_sale, release_seat_hold, unblock_seats};
use crate::client::browser::random_key;
use crate::client::seat_dom::{joined, seat_el, seat_from_event, seat_id_of, seat_label, seat_map, seat_tier, set_selected};
use crate::format::money;

/// A seat staff picked, as the map showed it.
#[derive(Debug, Clone, PartialEq)]
struct Picked {
    seat_id: String,
    label: String,
    status: &'static str,
    price_cents: i64,
    tier: String,
}

fn status_of(el: &Element) -> &'static str {
    let list = el.class_list();
    if list.contains("bk") {
        "blocked"
    } else if list.contains("sd") {
        "sold"
    } else if list.contains("hd") {
        "held"
    } else {
        "available"
    }
}

/// Shows a new status on a seat of the staff map.
fn show(seat_id: &str, status: &str) {
    let Some(el) = seat_el(seat_id) else { return };
    let class = match status {
        "blocked" => "bk",
        "sold" => "sd",
        "held" => "hd",
        _ => "av",
    };
    let list = el.class_list();
    let _ = list.remove_4("av", "hd", "sd", "bk");
    let _ = list.add_1(class);
    set_selected(&el, false);
    let label = seat_label(&el);
    let price = el.get_attribute("aria-label").unwrap_or_default().split(", ").nth(3).unwrap_or_default().to_owned();
    let name = if status == "available" { format!("{label}, {price}") } else { format!("{label}, {price}, {status}") };
    let _ = el.set_attribute("aria-label", &name);
}

fn ids(picks: &[Picked]) -> Vec<SeatId> {
    picks.iter().filter_map(|p| SeatId::parse(p.seat_id.as_str()).ok()).collect()
}

/// The box office's seat desk over the staff map: select seats, then block,
/// unblock, release a stuck hold, or sell them at the counter.
#[cfg_attr(any(feature = "ssr", feature = "staff"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "staff")), component)]
pub fn SeatDesk(event_id: EventId, tiers: Vec<TierPrice>, ticket_types: Vec<TicketType>, standing: Option<String>) -> impl IntoView {
    let selected = RwSignal::new(Vec::<Picked>::new());
    let message = RwSignal::new(None::<(&'static str, String)>);
    let busy = RwSignal::new(false);
    let ready = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let payment = RwSignal::new("cash".to_owned());
    let card = RwSignal::new("tok_visa".to_owned());
    let customer_name = RwSignal::new(String::new());
    let customer_email = RwSignal::new(String::new());
    let sold = RwSignal::new(None::<Booking>);
    // One key per sale attempt: a double click sends the same sale once.
    // Made in the browser on first use (the server has no crypto source).
    let sale_key = StoredValue::new(None::<String>);
    let tiers = StoredValue::new(tiers);
    // The ticket type chosen for each picked seat (the rest: the first sold
    // in its tier, as the server decides too).
    let ticket_types = StoredValue::new(ticket_types);
    let chosen = RwSignal::new(TicketChoices::new());
    // A seat's type and its price: the one chosen if sold in its tier, else
    // the first sold there.
    let type_given = move |p: &Picked, asked: Option<String>| {
        let sold = ticket_types.with_value(|types| TicketType::sold_in(types, &p.tier));
        asked.and_then(|name| sold.iter().find(|(n, _)| *n == name).cloned()).or_else(|| sold.first().cloned())
    };
    let type_of = move |p: &Picked| type_given(p, chosen.with(|c| c.get(&p.seat_id).cloned()));
    let type_now = move |p: &Picked| type_given(p, chosen.with_untracked(|c| c.get(&p.seat_id).cloned()));
    // A standing area's places are sold by count, not picked on the map.
    let places = RwSignal::new("1".to_owned());
    let area = StoredValue::new(standing.clone());

    let toggle = move |seat_id: String| {
        let Some(el) = seat_el(&seat_id) else { return };
        if selected.with_untracked(|s| s.iter().any(|p| p.seat_id == seat_id)) {
            selected.update(|s| s.retain(|p| p.seat_id != seat_id));
            set_selected(&el, false);
            return;
        }
        let (price_cents, tier) =
            tiers.with_value(|t| t.get(seat_tier(&el)).map_or((0, String::new()), |t| (i64::from(t.price_cents), t.tier.clone())));
        selected.update(|s| s.push(Picked { label: seat_label(&el), status: status_of(&el), seat_id, price_cents, tier }));
        set_selected(&el, true);
        sold.set(None);
    };
    Effect::new(move |_| {
        if let Some(map) = seat_map() {
            let on_click = Closure::<dyn FnMut(MouseEvent)>::new(move |ev: MouseEvent| {
                if let Some(id) = seat_from_event(ev.target()).as_ref().and_then(seat_id_of) {
                    toggle(id);
                }
            });
            let _ = map.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
            on_click.forget();
        }
        ready.set(true);
    });

    let done = move |seats: Vec<String>, status: &'static str, what: String| {
        for id in &seats {
            show(id, status);
        }
        selected.update(|s| s.retain(|p| !seats.contains(&p.seat_id)));
        message.set(Some(("success", what)));
    };
    let failed = move |e: AppError| {
        let text = match &e.kind {
            ErrorKind::SeatsUnavailable { conflict_seats, .. } => {
                format!("Not possible for {}: {}", joined(conflict_seats), e.message)
            }
            _ => e.message.clone(),
        };
        message.set(Some(("error", text)));
    };
    let act = move |f: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>| {
        busy.set(true);
        message.set(None);
        spawn_local(async move {
            f.await;
            busy.set(false);
        });
    };

    let block = move |_| {
        let picks = selected.get_untracked();
        let why = reason.get_untracked();
        act(Box::pin(async move {
            match block_seats(event_id, ids(&picks), why).await {
                Ok(seats) => done(seats.clone(), "blocked", format!("Blocked {}.", seats.join(", "))),
                Err(e) => failed(e),
            }
        }));
    };
    let unblock = move |_| {
        let picks = selected.get_untracked();
        act(Box::pin(async move {
            match unblock_seats(event_id, ids(&picks)).await {
                Ok(seats) => done(seats.clone(), "available", format!("Back on sale: {}.", seats.join(", "))),
                Err(e) => failed(e),
            }
        }));
    };
    let release = move |_| {
        let picks = selected.get_untracked();
        let why = reason.get_untracked();
        act(Box::pin(async move {
            for p in picks.iter().filter(|p| p.status == "held") {
                let Ok(seat) = SeatId::parse(p.seat_id.as_str()) else { continue };
                match release_seat_hold(event_id, seat, why.clone()).await {
                    Ok(seats) => done(seats.clone(), "available", format!("Released the hold on {}.", seats.join(", "))),
                    Err(e) => return failed(e),
                }
            }
        }));
    };
    let sell = move |_| {
        let picks = selected.get_untracked();
        let (pay, token) = match payment.get_untracked().as_str() {
            "card" => (CounterPayment::Card, PaymentToken::parse(card.get_untracked()).ok()),
            _ => (CounterPayment::Cash, None),
        };
        let (name, email) = (customer_name.get_untracked(), customer_email.get_untracked());
        let key = sale_key.get_value().unwrap_or_else(random_key);
        sale_key.set_value(Some(key.clone()));
        let Ok(key) = IdempotencyKey::parse(key) else { return };
        let standing = area.get_value().map(|section| StandingPlaces { section, count: places.get_untracked().parse().unwrap_or(1) });
        let types: TicketChoices = picks.iter().filter_map(|p| type_of(p).map(|(name, _)| (p.seat_id.clone(), name))).collect();
        act(Box::pin(async move {
            match counter_sale(event_id, ids(&picks), standing, pay, token, name, Some(email), key, Some(types)).await {
                Ok(booking) => {
                    sale_key.set_value(None);
                    chosen.set(TicketChoices::new());
                    done(booking.seat_ids.clone(), "sold", format!("Sold {} for {}.", booking.seat_ids.join(", "), money(booking.total_cents)));
                    sold.set(Some(booking));
                }
                Err(e) => {
                    if matches!(e.kind, ErrorKind::PaymentDeclined { .. }) {
                        sale_key.set_value(None);
                    }
                    failed(e)
                }
            }
        }));
    };

    let selection = move || {
        // The rows are drawn when the selection changes; a type chosen
        // changes only the prices (the focused select stays).
        let picks = selected.get();
        let total = move || selected.with(|picks| picks.iter().map(|p| type_of(p).map_or(p.price_cents, |(_, cents)| i64::from(cents))).sum::<i64>());
        view! {
            <ul class="selection">
                {picks.into_iter().map(|p| {
                    let sold = ticket_types.with_value(|types| TicketType::sold_in(types, &p.tier));
                    let current = type_now(&p).map(|(name, _)| name);
                    let price = {
                        let p = p.clone();
                        move || money(type_of(&p).map_or(p.price_cents, |(_, cents)| i64::from(cents)))
                    };
                    let seat = p.seat_id.clone();
                    let choice = (!sold.is_empty()).then(|| view! {
                        <select class="ticket-type" aria-label=format!("Ticket type for {}", p.label) on:change=move |ev| {
                            let name = event_target_value(&ev);
                            chosen.update(|c| { c.insert(seat.clone(), name); });
                        }>
                            {sold.into_iter().map(|(name, cents)| {
                                let selected = current.as_deref() == Some(name.as_str());
                                view! { <option value=name.clone() selected=selected>{format!("{name} ({})", money(i64::from(cents)))}</option> }
                            }).collect_view()}
                        </select>
                    });
                    view! { <li data-seat-id=p.seat_id.clone()>{p.label.clone()} " · " {p.status} " · " {price} " " {choice}</li> }
                }).collect_view()}
            </ul>
            <p class="total">"Total " <strong aria-live="polite">{move || money(total())}</strong></p>
        }
    };
    let none = move || busy.get() || selected.with(Vec::is_empty);
    let nothing_to_sell = move || busy.get() || (area.with_value(Option::is_none) && selected.with(Vec::is_empty));
    let choose = match standing {
        Some(section) => view! {
            <h2>{format!("Standing area {section}")}</h2>
            <label>"Places to sell" <input id="desk-places" type="number" min="1" max="100" prop:value=move || places.get()
                on:input=move |ev| places.set(event_target_value(&ev))/></label>
            <p class="hint">"Any free places of the area are sold."</p>
        }
        .into_any(),
        None => view! {
            <h2>"Selected seats"</h2>
            {move || selected.with(Vec::is_empty).then(|| view! { <p class="hint">"Click seats on the map."</p> })}
            {selection}
        }
        .into_any(),
    };
    view! {
        <aside class="picker desk" id="desk" aria-label="Seat desk" data-ready=move || ready.get().to_string()>
            {choose}
            <fieldset>
                <legend>"Block, unblock, release"</legend>
                <label>"Reason (for the log)" <input id="desk-reason" maxlength="500" prop:value=move || reason.get()
                    on:input=move |ev| reason.set(event_target_value(&ev))/></label>
                <div class="actions">
                    <button id="block-button" disabled=move || none() || reason.with(|r| r.trim().is_empty()) on:click=block>"Block"</button>
                    <button id="unblock-button" disabled=none on:click=unblock>"Unblock"</button>
                    <button id="release-hold-button" disabled=move || none() || reason.with(|r| r.trim().is_empty()) on:click=release>"Release hold"</button>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Sell at the counter"</legend>
                <label>"Customer name" <input id="customer-name" maxlength="200" prop:value=move || customer_name.get()
                    on:input=move |ev| customer_name.set(event_target_value(&ev))/></label>
                <label>"Customer email (optional)" <input id="customer-email" type="email" maxlength="254" prop:value=move || customer_email.get()
                    on:input=move |ev| customer_email.set(event_target_value(&ev))/></label>
                <label>"Payment"
                    <select id="counter-payment" on:change=move |ev| payment.set(event_target_value(&ev))>
                        <option value="cash" selected>"Cash"</option>
                        <option value="card">"Card"</option>
                    </select>
                </label>
                {move || (payment.get() == "card").then(|| view! {
                    <label>"Card (test terminal)"
                        <select id="counter-card" on:change=move |ev| card.set(event_target_value(&ev))>
                            {crate::client::workflow::TEST_CARDS.iter().map(|(token, label)| view! { <option value=*token>{*label}</option> }).collect_view()}
                        </select>
                    </label>
                })}
                <button class="primary" id="sell-button" disabled=move || nothing_to_sell() || customer_name.with(|n| n.trim().is_empty()) on:click=sell>"Sell"</button>
            </fieldset>
            <div class="message" role="status" aria-live="polite">
                {move || message.get().map(|(kind, text)| view! { <p class=format!("msg {kind}")>{text}</p> })}
            </div>
            {move || sold.get().map(|b| view! {
                <p class="sold-links"><a class="button-link" id="print-link" href=format!("/bookings/{}/print", b.booking_id)>"Print tickets"</a>
                    " " <a href=format!("/admin/bookings/{}", b.booking_id)>"Booking"</a></p>
            })}
        </aside>
    }
}
