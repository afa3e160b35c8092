use frontrow_model::{BookingId, ErrorKind, IdempotencyKey, TicketId};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::actions::cancel_tickets;
use crate::client::browser::random_key;
use crate::format::money;
use crate::props::CancellableTicket;

/// The fan's own cancelling: some tickets of the booking, or all of them,
/// with what each brings back under the event's terms.
#[island]
pub fn CancelPanel(booking_id: BookingId, tickets: Vec<CancellableTicket>) -> impl IntoView {
    let tickets = StoredValue::new(tickets);
    let chosen = RwSignal::new(Vec::<TicketId>::new());
    let gone = RwSignal::new(Vec::<TicketId>::new());
    let busy = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let ready = RwSignal::new(false);
    let message = RwSignal::new(None::<(&'static str, String)>);
    // One key per cancellation asked for: a double click cancels once, and
    // asking again for the same tickets after no answer (or one still in
    // flight) gets the first answer. Made in the browser on first use.
    let key = StoredValue::new(None::<(Option<Vec<TicketId>>, String)>);
    Effect::new(move |_| ready.set(true));

    let back_of =
        move |ids: &[TicketId]| tickets.with_value(|ts| ts.iter().filter(|t| ids.contains(&t.ticket_id)).map(|t| t.refund_cents).sum::<i64>());
    let live = move || tickets.with_value(|ts| ts.iter().map(|t| t.ticket_id).filter(|id| !gone.with(|g| g.contains(id))).collect::<Vec<_>>());
    let send = move |ticket_ids: Option<Vec<TicketId>>| {
        let k = key.get_value().filter(|(asked, _)| *asked == ticket_ids).map_or_else(random_key, |(_, k)| k);
        key.set_value(Some((ticket_ids.clone(), k.clone())));
        let Ok(k) = IdempotencyKey::parse(k) else { return };
        busy.set(true);
        message.set(None);
        spawn_local(async move {
            match cancel_tickets(booking_id, ticket_ids, k).await {
                Ok(done) => {
                    key.set_value(None);
                    gone.update(|g| g.extend(done.cancelled.iter().copied()));
                    chosen.set(Vec::new());
                    let seats = tickets.with_value(|ts| {
                        ts.iter().filter(|t| done.cancelled.contains(&t.ticket_id)).map(|t| t.seat_label.clone()).collect::<Vec<_>>().join("; ")
                    });
                    let kept = if done.kept_cents > 0 { format!(" (the seller kept {})", money(done.kept_cents)) } else { String::new() };
                    message.set(Some((
                        "success",
                        format!("Cancelled: {seats}. {} is on its way back to your card{kept}; a mail confirms it.", money(done.refund_cents)),
                    )));
                }
                Err(e) => {
                    // A refusal is final: the next click is a new request.
                    // Without an answer it may have happened: the same
                    // request again keeps the key.
                    if !matches!(e.kind, ErrorKind::Network | ErrorKind::IdempotencyKeyInUse | ErrorKind::Unavailable | ErrorKind::Overloaded { .. })
                    {
                        key.set_value(None);
                    }
                    message.set(Some(("error", e.message)));
                }
            }
            busy.set(false);
        });
    };
    let selected_label = move || match chosen.with(Vec::len) {
        0 => "Cancel selected tickets".to_owned(),
        n => format!("Cancel {n} ticket{} ({} back)", if n == 1 { "" } else { "s" }, money(chosen.with(|c| back_of(c)))),
    };
    view! {
        <section class="cancel-tickets" aria-labelledby="cancel-title" data-ready=move || ready.get().to_string()>
            <h2 id="cancel-title">"Cancel tickets"</h2>
            <ul class="ticket-list">
                {tickets.get_value().into_iter().map(|t| {
                    let id = t.ticket_id;
                    let cancelled = move || gone.with(|g| g.contains(&id));
                    view! {
                        <li data-ticket-id=id.to_string()>
                            <label class="check">
                                <input type="checkbox" disabled=cancelled
                                    prop:checked=move || chosen.with(|c| c.contains(&id))
                                    on:change=move |_| chosen.update(|c| if c.contains(&id) { c.retain(|x| *x != id) } else { c.push(id) })/>
                                {t.seat_label} " · " {money(t.refund_cents)} " back"
                                {move || cancelled().then(|| view! { " · " <span class="ticket-state">"cancelled"</span> })}
                            </label>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <div class="actions">
                <button id="cancel-selected" disabled=move || busy.get() || chosen.with(Vec::is_empty)
                    on:click=move |_| send(Some(chosen.get_untracked()))>{selected_label}</button>
                <button class="danger" id="cancel-all" disabled=move || busy.get() || live().is_empty() || confirming.get()
                    on:click=move |_| confirming.set(true)>"Cancel the whole booking"</button>
            </div>
            // The whole booking goes in one click only after a second look.
            {move || confirming.get().then(|| {
                let left = live();
                view! {
                    <div class="confirm" role="group" aria-label="Confirm cancelling the whole booking">
                        <p>{format!("Cancel all {} ticket{} and get {} back?", left.len(), if left.len() == 1 { "" } else { "s" }, money(back_of(&left)))}</p>
                        <button class="danger" id="cancel-all-confirm" disabled=move || busy.get()
                            on:click=move |_| { confirming.set(false); send(None) }>"Yes, cancel them"</button>
                        <button id="cancel-all-keep" on:click=move |_| confirming.set(false)>"Keep them"</button>
                    </div>
                }
            })}
            <div class="message" role="status" aria-live="polite">
                {move || message.get().map(|(kind, text)| view! { <p class=format!("msg {kind}")>{text}</p> })}
            </div>
        </section>
    }
}
