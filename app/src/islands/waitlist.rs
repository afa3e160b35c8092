use frontrow_model::{EventId, WaitlistEntry, WaitlistState};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos::task::spawn_local;

use crate::actions::{join_waitlist, leave_waitlist, my_waitlist_entry, JoinWaitlist};
use crate::client::browser::reload;
use crate::format::money;

/// The waiting list of a sold-out tier: the join form (a plain form posting
/// to the server function, so it works without JavaScript), or, once the
/// fan's entry is read in the browser, their place or their offer. The page
/// around it stays the one every fan gets.
#[island]
pub fn WaitlistBox(event_id: EventId, tiers: Vec<String>, max_seats: i32) -> impl IntoView {
    let entry = RwSignal::new(None::<WaitlistEntry>);
    let loaded = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let tier = RwSignal::new(tiers.first().cloned().unwrap_or_default());
    let quantity = RwSignal::new(1);
    Effect::new(move |_| {
        spawn_local(async move {
            // Signed out, or the database away: the form stays.
            if let Ok(found) = my_waitlist_entry(event_id).await {
                entry.set(found);
            }
            loaded.set(true);
        });
    });
    let join = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            match join_waitlist(event_id, tier.get_untracked(), quantity.get_untracked()).await {
                Ok(joined) => entry.set(Some(joined)),
                Err(e) => error.set(Some(e.message)),
            }
            busy.set(false);
        });
    };
    let leave = move |_| {
        busy.set(true);
        spawn_local(async move {
            match leave_waitlist(event_id).await {
                Ok(_) => return reload(),
                Err(e) => error.set(Some(e.message)),
            }
            busy.set(false);
        });
    };
    let form = {
        let tiers = tiers.clone();
        move || {
            let options = tiers.iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view();
            view! {
                <p>"Sold out in " {tiers.join(", ")} ". Join the waiting list: if seats come back, they are offered in the order fans joined, and kept for you for a while."</p>
                <form class="waitlist-join" id="waitlist-join" method="post" action=JoinWaitlist::PATH data-ready=move || loaded.get().to_string() on:submit=join>
                    <input type="hidden" name="event_id" value=event_id.to_string()/>
                    <label>"Tier " <select name="tier" on:change=move |ev| tier.set(event_target_value(&ev))>{options}</select></label>
                    <label>"Seats " <input type="number" name="quantity" min="1" max=max_seats value="1" required
                        on:input=move |ev| quantity.set(event_target_value(&ev).parse().unwrap_or(1))/></label>
                    <button class="primary" type="submit" disabled=move || busy.get()>"Join the waiting list"</button>
                </form>
            }
        }
    };
    let status = move || {
        entry.get().map(|e| {
            let seats = if e.quantity == 1 { "1 seat".to_owned() } else { format!("{} seats", e.quantity) };
            let line = match (e.state, &e.offer) {
                (WaitlistState::Waiting, _) => format!("You are number {} on the waiting list for {seats} in {}.", e.place.unwrap_or(0), e.tier),
                (WaitlistState::Offered, Some(offer)) => format!(
                    "Seats came back for you: {} ({}), kept until {}. Buy them beside the map, or decline them.",
                    offer.seat_ids.join(", "),
                    money(offer.total_cents),
                    offer.expires_at.format("%H:%M UTC")
                ),
                (WaitlistState::Paying, _) => "You are paying for the seats offered to you.".to_owned(),
                (WaitlistState::Bought, _) => "You bought the seats offered to you from the waiting list.".to_owned(),
                _ => "The seats offered to you went on to the next fan on the list.".to_owned(),
            };
            let button = match e.state {
                WaitlistState::Waiting => Some("Leave the waiting list"),
                WaitlistState::Offered => Some("Decline the offer"),
                _ => None,
            };
            view! {
                <p class="waitlist-status" id="waitlist-status" data-state=e.state.as_str()>{line}</p>
                {button.map(|label| view! { <button type="button" class="waitlist-leave" disabled=move || busy.get() on:click=leave>{label}</button> })}
            }
        })
    };
    view! {
        <section class="waitlist" id="waitlist" aria-label="Waiting list">
            <h2>"Waiting list"</h2>
            {move || if entry.with(Option::is_some) { status().into_any() } else { form().into_any() }}
            <div role="alert">{move || error.get().map(|e| view! { <p class="msg error">{e}</p> })}</div>
        </section>
    }
}
