use frontrow_model::{BookingId, IdempotencyKey, Ticket, TicketId, TicketState};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::admin::actions::refund;
use crate::client::browser::random_key;
use crate::format::money;

/// A booking's tickets with the refund controls: some tickets, or all.
#[cfg_attr(any(feature = "ssr", feature = "staff"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "staff")), component)]
pub fn RefundPanel(booking_id: BookingId, tickets: Vec<(Ticket, String)>) -> impl IntoView {
    let states = RwSignal::new(tickets.iter().map(|(t, _)| (t.ticket_id, t.state)).collect::<Vec<_>>());
    let chosen = RwSignal::new(Vec::<TicketId>::new());
    let reason = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let ready = RwSignal::new(false);
    let message = RwSignal::new(None::<(&'static str, String)>);
    // One key per refund asked for: a double click refunds once. Made in
    // the browser on first use.
    let key = StoredValue::new(None::<String>);
    Effect::new(move |_| ready.set(true));

    let state_of = move |id: TicketId| states.with(|s| s.iter().find(|(t, _)| *t == id).map(|(_, st)| *st));
    let send = move |ticket_ids: Option<Vec<TicketId>>| {
        let k = key.get_value().unwrap_or_else(random_key);
        key.set_value(Some(k.clone()));
        let Ok(k) = IdempotencyKey::parse(k) else { return };
        let why = reason.get_untracked();
        busy.set(true);
        message.set(None);
        spawn_local(async move {
            match refund(booking_id, ticket_ids.clone(), why, k).await {
                Ok(done) => {
                    key.set_value(None);
                    let asked = ticket_ids.clone();
                    states.update(|s| {
                        for (id, st) in s.iter_mut() {
                            let was_asked = asked.as_ref().is_none_or(|a| a.contains(id));
                            if was_asked && *st == TicketState::Valid {
                                *st = TicketState::Refunded;
                            }
                        }
                    });
                    chosen.set(Vec::new());
                    let status = serde_json::to_value(done.status).ok().and_then(|v| v.as_str().map(|s| s.replace('_', " "))).unwrap_or_default();
                    message.set(Some((
                        "success",
                        format!(
                            "Refunded {} in all; {} on sale again. The booking is now {status}.",
                            money(done.refunded_cents),
                            done.seats_released.join(", ")
                        ),
                    )));
                }
                Err(e) => message.set(Some(("error", e.message))),
            }
            busy.set(false);
        });
    };
    view! {
        <section class="refunds" aria-labelledby="refund-title" data-ready=move || ready.get().to_string()>
            <h2 id="refund-title">"Tickets"</h2>
            <ul class="ticket-list">
                {tickets.into_iter().map(|(t, label)| {
                    let id = t.ticket_id;
                    let refundable = move || state_of(id) == Some(TicketState::Valid);
                    view! {
                        <li data-ticket-id=id.to_string() data-seat-id=t.seat_id.clone()>
                            <label class="check">
                                <input type="checkbox" disabled=move || !refundable()
                                    prop:checked=move || chosen.with(|c| c.contains(&id))
                                    on:change=move |_| chosen.update(|c| if c.contains(&id) { c.retain(|x| *x != id) } else { c.push(id) })/>
                                {label} " · " {money(i64::from(t.price_cents))} " · code " <code>{t.code.clone()}</code> " · "
                                <span class="ticket-state">{move || state_of(id).map(|s| format!("{s:?}").to_lowercase()).unwrap_or_default()}</span>
                            </label>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <label>"Reason (for the log)" <input id="refund-reason" maxlength="500" prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev))/></label>
            <div class="actions">
                <button id="refund-selected" disabled=move || busy.get() || chosen.with(Vec::is_empty) || reason.with(|r| r.trim().is_empty())
                    on:click=move |_| send(Some(chosen.get_untracked()))>"Refund selected tickets"</button>
                <button class="danger" id="refund-all" disabled=move || busy.get() || reason.with(|r| r.trim().is_empty())
                    on:click=move |_| send(None)>"Refund the whole booking"</button>
            </div>
            <div class="message" role="status" aria-live="polite">
                {move || message.get().map(|(kind, text)| view! { <p class=format!("msg {kind}")>{text}</p> })}
            </div>
        </section>
    }
}
