//! An event's waiting list on its staff page: its figures, pausing it and
//! the offer window, and each fan on it, with an offer to make by hand.

use frontrow_model::{Waitlist, WaitlistState};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::admin::actions::{ConfigureWaitlist, OfferToWaitingFan};
use crate::admin::when;

#[component]
pub fn WaitlistSection(list: Waitlist) -> impl IntoView {
    let id = list.event_id;
    let shown = list.lines.len();
    let more = (list.lines_total > shown as i64).then(|| {
        view! { <p class="hint waitlist-more">"The first " {shown} " of " {list.lines_total} " lines: the fans waiting longest, then the latest offers."</p> }
    });
    let rows = list
        .lines
        .into_iter()
        .map(|l| {
            let state = match l.state {
                WaitlistState::Waiting => format!("waiting, number {} for {}", l.place.unwrap_or(0), l.tier),
                WaitlistState::Offered => format!("offered until {}", l.offer_ends_at.map(when).unwrap_or_default()),
                other => other.as_str().to_owned(),
            };
            let by_hand = l.offered_by_hand.then_some(" (by hand)");
            view! {
                <tr data-entry=l.entry_id.to_string() data-state=l.state.as_str()>
                    <td>{l.name} " · " {l.email}</td>
                    <td>{l.quantity} " in " {l.tier.clone()}</td>
                    <td>{when(l.joined_at)}</td>
                    <td class="state">{state}{by_hand}</td>
                    <td>{l.seat_ids.join(", ")}</td>
                    <td>{(l.state == WaitlistState::Waiting).then(|| view! {
                        <form class="inline" method="post" action=OfferToWaitingFan::PATH>
                            <input type="hidden" name="event_id" value=id.to_string()/>
                            <input type="hidden" name="entry_id" value=l.entry_id.to_string()/>
                            <button type="submit">"Offer free seats now"</button>
                        </form>
                    })}</td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <h2 id="waitlist">"Waiting list"</h2>
        <p class="hint">"Fans join it for a tier with no seat free. While they wait, seats of that tier that come back are kept for them and offered in turn, each offer a hold for the time below; declined or let lapse, the seats go to the next fan. Paused: seats that come back are free to everyone (you can still offer by hand)."</p>
        <dl class="waitlist-figures">
            <dt>"Waiting"</dt><dd class="waitlist-waiting">{list.figures.waiting}</dd>
            <dt>"Offers open"</dt><dd class="waitlist-offers">{list.figures.offers_outstanding}</dd>
        </dl>
        <form class="stacked" method="post" action=ConfigureWaitlist::PATH id="waitlist-settings">
            <input type="hidden" name="event_id" value=id.to_string()/>
            <label class="check"><input type="checkbox" name="paused" checked=list.paused/> "Paused"</label>
            <label>"An offer lasts (minutes)" <input type="number" name="offer_minutes" value=list.offer_minutes min="5" max="10080" required/></label>
            <button type="submit">"Save waiting list"</button>
        </form>
        {(!rows.is_empty()).then(|| view! {
            <table class="waitlist-lines">
                <thead><tr><th>"Fan"</th><th>"Wants"</th><th>"Joined"</th><th>"Now"</th><th>"Seats"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        })}
        {more}
    }
}
