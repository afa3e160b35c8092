use leptos::prelude::*;

use crate::client::workflow::{Picker, TEST_CARDS};
use crate::format::{countdown, money};
use crate::props::{HoldInfo, PickerProps};

/// The seat picker: the fan's selection, best available, the hold with its
/// countdown, payment, and what the live feed says.
#[island]
pub fn SeatPicker(props: PickerProps) -> impl IntoView {
    let p = Picker::new(&props);
    let server_now_ms = props.server_now_ms;
    // Browser only: wire the map, open the live feed, start the clock.
    Effect::new(move |_| p.start(server_now_ms));

    let tiers = StoredValue::new(props.tiers.clone());
    let best_count = RwSignal::new("2".to_owned());
    let best_tier = RwSignal::new(props.tiers.first().map(|t| t.tier.clone()).unwrap_or_default());
    let signin = format!("/signin?next=/events/{}", props.event_id);
    let max_count = props.max_seats.clamp(1, 10);
    let count_options = move || (1..=max_count).map(|n| view! { <option value=n.to_string() selected=n == 2>{n}</option> }).collect_view();
    let tier_options = move || {
        tiers
            .get_value()
            .into_iter()
            .map(|t| view! { <option value=t.tier.clone()>{format!("{} ({})", t.tier, money(i64::from(t.price_cents)))}</option> })
            .collect_view()
    };

    let live_text = move || match p.live.get() {
        "live" => "Live: seats update as others buy",
        "reconnecting" => "Reconnecting to live updates…",
        _ => "Connecting to live updates…",
    };

    // The overview shows sections, not seats: only best available here.
    let on_overview = props.feed == "overview";
    let selection_view = move || {
        if on_overview {
            return view! {
                <h2>"Your seats"</h2>
                <p class="hint">"Choose a section on the map to pick seats, or let us find the best ones together."</p>
            }
            .into_any();
        }
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
                            <button class="link" aria-label=remove_label on:click=move |_| p.toggle_seat(&id)>"Remove"</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
            {(n > 0).then(|| view! { <p class="total">"Total " <strong>{money(total)}</strong></p> })}
            <button class="primary" id="hold-button" disabled=move || p.busy.get() || p.selected.with(|s| s.is_empty())
                on:click=move |_| p.hold_selected()>
                {match n { 0 => "Hold seats".to_owned(), 1 => "Hold 1 seat".to_owned(), n => format!("Hold {n} seats") }}
            </button>
        }
        .into_any()
    };

    // After a lost race: the nearest free seats together, one click away.
    let suggestion_view = move || {
        p.suggestion.get().map(|s| {
            let what = crate::client::seat_dom::joined(&s.labels);
            view! {
                <div class="suggestion">
                    <p>"Nearest free seats together: " <strong>{what}</strong></p>
                    <button class="primary" id="suggestion-button" disabled=move || p.busy.get() on:click=move |_| p.take_suggestion()>
                        {if s.seat_ids.len() == 1 { "Hold this seat instead".to_owned() } else { format!("Hold these {} seats instead", s.seat_ids.len()) }}
                    </button>
                </div>
            }
        })
    };

    let terms = StoredValue::new(props.refund_terms.clone());
    let hold_view = move |h: HoldInfo| {
        let held = StoredValue::new(h.clone());
        let total = move || held.with_value(|h| p.held_total(h));
        let pay_label = move || format!("Pay {}", money(total()));
        let has_types = p.ticket_types.with_value(|types| !types.is_empty());
        // Each seat with its label and, where the event has ticket types, a
        // choice among those sold in its tier.
        let seat_line = move |(i, label): (usize, &String)| {
            let seat = held.with_value(|h| h.seat_ids.get(i).cloned().unwrap_or_default());
            let options = held.with_value(|h| h.tiers.get(i).map(|tier| p.types_in(tier)).unwrap_or_default());
            let choice = (has_types && !options.is_empty()).then(|| {
                let picked = {
                    let seat = seat.clone();
                    move || p.chosen_types.with(|c| c.get(&seat).cloned())
                };
                let first = options.first().map(|(name, _)| name.clone()).unwrap_or_default();
                let seat_for_change = seat.clone();
                view! {
                    <label class="ticket-type">"Ticket "
                        <select data-seat-id=seat.clone() aria-label=format!("Ticket type for {label}") on:change=move |ev| {
                            let name = event_target_value(&ev);
                            p.chosen_types.update(|c| { c.insert(seat_for_change.clone(), name); });
                        }>
                            {options.into_iter().map(|(name, cents)| {
                                let is_first = name == first;
                                let this = name.clone();
                                let picked = picked.clone();
                                view! {
                                    <option value=name.clone() selected=move || picked().map_or(is_first, |p| p == this)>
                                        {format!("{name} ({})", money(i64::from(cents)))}
                                    </option>
                                }
                            }).collect_view()}
                        </select>
                    </label>
                }
            });
            view! { <li>{label.clone()} {choice}</li> }
        };
        view! {
            // Focus lands here after a hold (tabindex -1), so keyboard and
            // screen-reader users continue in the panel that replaced the button.
            <h2 id="held-title" tabindex="-1">"Held for you"</h2>
            <p class="countdown">"Time left to pay: "
                <strong id="countdown" role="timer" aria-live="off">{move || countdown(p.remaining_ms.get())}</strong>
            </p>
            <ul class="held-seats">
                {h.labels.iter().enumerate().map(seat_line).collect_view()}
            </ul>
            <p class="total">"Total " <strong id="held-total" aria-live="polite">{move || money(total())}</strong></p>
            <p class="refund-terms hint">{terms.get_value()}</p>
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
                <button class="primary" id="pay-button" disabled=move || p.busy.get() on:click=move |_| p.pay()>{pay_label}</button>
                <button id="release-button" disabled=move || p.busy.get() on:click=move |_| p.release()>"Release seats"</button>
            </div>
        }
    };

    // On a standing area's page: its places, by count.
    let places_count = RwSignal::new("1".to_owned());
    let standing_view = move || {
        let offer = p.standing.get()?;
        let most = i64::from(p.max_seats).min(offer.available).clamp(1, 10);
        let n = places_count.get().parse::<i64>().unwrap_or(1).min(most);
        Some(view! {
            <h2>"Standing places"</h2>
            <p class="hint">{format!("{} each. You get any free places of the area, all at once or none.", money(offer.price_cents))}</p>
            <form class="best" on:submit=move |ev| {
                ev.prevent_default();
                p.hold_places(places_count.get_untracked());
            }>
                <label>"Places " <select name="places" id="places-select" on:change=move |ev| places_count.set(event_target_value(&ev))>
                    {(1..=most).map(|k| view! { <option value=k.to_string() selected=k == n>{k}</option> }).collect_view()}
                </select></label>
                <p class="total">"Total " <strong>{money(offer.price_cents * n)}</strong></p>
                <button type="submit" class="primary" id="hold-places-button" disabled=move || p.busy.get() || offer.available == 0>
                    {if n == 1 { "Hold 1 place".to_owned() } else { format!("Hold {n} places") }}
                </button>
            </form>
        })
    };

    view! {
        <aside class="picker" id="picker" aria-label="Your order" data-ready=move || p.ready.get().to_string()>
            <p class="live-status" data-live=move || p.live.get()>{live_text}</p>
            {move || match p.hold.get() {
                Some(h) => hold_view(h).into_any(),
                None if p.standing.with(Option::is_some) => standing_view.into_any(),
                None => view! {
                    {selection_view}
                    <form class="best" on:submit=move |ev| {
                        ev.prevent_default();
                        p.hold_best(best_count.get_untracked(), best_tier.get_untracked());
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
            {suggestion_view}
        </aside>
    }
}
