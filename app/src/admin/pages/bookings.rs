//! Finding bookings (by booking id, email or seat) and one booking: refund
//! it whole or ticket by ticket, print or re-send its tickets.

use frontrow_model::{AppError, Booking, Event, EventId, StaffBookingLine, StaffEventLine};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

use super::param;
use crate::admin::actions::ResendTickets;
use crate::admin::islands::RefundPanel;
use crate::admin::{refused, when, word, Frame};
use crate::format::money;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BookingsData {
    pub events: Vec<StaffEventLine>,
    pub found: Vec<StaffBookingLine>,
}

#[server(prefix = "/_app")]
pub async fn load_bookings(event_id: Option<String>, q: Option<String>) -> Result<BookingsData, AppError> {
    let (engine, user) = crate::server::staff().await?;
    let event_id = match event_id.filter(|e| !e.is_empty()) {
        Some(e) => Some(e.parse::<EventId>().map_err(|_| AppError::invalid("no such event"))?),
        None => None,
    };
    Ok(BookingsData { events: engine.staff_events().await?, found: engine.find_bookings(&user, event_id, q.as_deref()).await? })
}

#[component]
pub fn StaffBookingsPage() -> impl IntoView {
    let query = use_query_map().read_untracked().clone();
    let (event_id, q) = (query.get("event_id"), query.get("q"));
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let (event_id, q) = (event_id.clone(), q.clone());
                Suspend::new(async move {
                    match load_bookings(event_id.clone(), q.clone()).await {
                        Err(e) => refused(e, "/admin/bookings"),
                        Ok(data) => view! {
                            <Frame title="Bookings".to_owned() here="/admin/bookings".to_owned()><Bookings data event_id q/></Frame>
                        }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Bookings(data: BookingsData, event_id: Option<String>, q: Option<String>) -> impl IntoView {
    let names: std::collections::HashMap<EventId, String> = data.events.iter().map(|e| (e.event_id, e.name.clone())).collect();
    let chosen = event_id.unwrap_or_default();
    view! {
        <form class="filters" method="get" role="search">
            <label>"Booking id, email or seat" <input name="q" value=q.unwrap_or_default() maxlength="254"/></label>
            <label>"Event"
                <select name="event_id">
                    <option value="">"All events"</option>
                    {data.events.iter().map(|e| view! {
                        <option value=e.event_id.to_string() selected=chosen == e.event_id.to_string()>{e.name.clone()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit">"Find"</button>
        </form>
        <table class="data">
            <caption>{format!("{} bookings", data.found.len())}</caption>
            <thead><tr><th scope="col">"Booking"</th><th scope="col">"Event"</th><th scope="col">"Buyer"</th><th scope="col">"Seats"</th>
                <th scope="col">"Paid"</th><th scope="col">"Refunded"</th><th scope="col">"Status"</th><th scope="col">"Channel"</th><th scope="col">"When"</th></tr></thead>
            <tbody>
                {data.found.into_iter().map(|b| view! {
                    <tr data-booking-id=b.booking_id.to_string()>
                        <th scope="row"><a href=format!("/admin/bookings/{}", b.booking_id)>{b.booking_id.to_string()[..8].to_owned()}</a></th>
                        <td>{names.get(&b.event_id).cloned().unwrap_or_default()}</td>
                        <td>{b.customer_name.unwrap_or_default()} " " <span class="hint">{b.customer_email.unwrap_or_default()}</span></td>
                        <td>{b.seat_ids.join(" ")}</td>
                        <td class="num">{money(b.total_cents)}</td>
                        <td class="num">{money(b.refunded_cents)}</td>
                        <td>{word(b.status)}</td>
                        <td>{word(b.channel)}</td>
                        <td>{when(b.created_at)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BookingData {
    pub booking: Booking,
    pub event: Event,
    pub buyer: Option<StaffBookingLine>,
    /// Read-out names of the tickets' seats, in ticket order.
    pub labels: Vec<String>,
    /// The mails about it (tickets, refunds), from the outbox.
    pub mails: Vec<frontrow_model::BookingMail>,
}

#[server(prefix = "/_app")]
pub async fn load_staff_booking(booking_id: String) -> Result<BookingData, AppError> {
    // A malformed id names nothing, whoever asks.
    let id: frontrow_model::BookingId = booking_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, user) = crate::server::staff().await?;
    let booking = engine.booking_for(&user, id).await?;
    let board = engine.board().snapshot(booking.event_id).await?;
    let labels = booking
        .tickets
        .iter()
        .map(|t| board.layout.seat_index(&t.seat_id).map_or_else(|| t.seat_id.clone(), |i| board.layout.seat_label(i)))
        .collect();
    let buyer = engine.find_bookings(&user, Some(booking.event_id), Some(&id.to_string())).await?.into_iter().next();
    let mails = engine.booking_mails(&user, id).await?;
    Ok(BookingData { event: (*board.event).clone(), booking, buyer, labels, mails })
}

#[component]
pub fn StaffBookingPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    let here = format!("/admin/bookings/{id}");
                    match load_staff_booking(id).await {
                        Err(e) => refused(e, &here),
                        Ok(data) => view! { <Frame title="Booking".to_owned() here><OneBooking data/></Frame> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn OneBooking(data: BookingData) -> impl IntoView {
    let BookingData { booking, event, buyer, labels, mails } = data;
    let id = booking.booking_id;
    let tickets: Vec<(frontrow_model::Ticket, String)> = booking.tickets.iter().cloned().zip(labels).collect();
    view! {
        <dl class="booking-facts">
            <dt>"Booking"</dt><dd class="booking-id">{id.to_string()}</dd>
            <dt>"Event"</dt><dd><a href=format!("/admin/events/{}", event.event_id)>{event.name.clone()}</a></dd>
            <dt>"Buyer"</dt><dd>{buyer.as_ref().and_then(|b| b.customer_name.clone()).unwrap_or_default()} " "
                {buyer.as_ref().and_then(|b| b.customer_email.clone()).unwrap_or_default()}</dd>
            <dt>"Status"</dt><dd class="booking-status">{word(booking.status)}</dd>
            <dt>"Channel"</dt><dd>{word(booking.channel)}</dd>
            <dt>"Paid"</dt><dd>{money(booking.total_cents)}</dd>
            <dt>"Refunded"</dt><dd class="refunded">{money(booking.refunded_cents)}</dd>
            <dt>"Booked"</dt><dd>{when(booking.created_at)}</dd>
        </dl>
        <p class="actions">
            <a class="button-link" href=format!("/bookings/{id}/print")>"Print tickets"</a>
        </p>
        <form method="post" action=ResendTickets::PATH class="inline">
            <input type="hidden" name="booking_id" value=id.to_string()/>
            <button type="submit">"Re-send tickets by email"</button>
        </form>
        <MailList mails/>
        <RefundPanel booking_id=id tickets/>
    }
}

/// The booking's mails and how each went.
#[component]
fn MailList(mails: Vec<frontrow_model::BookingMail>) -> impl IntoView {
    view! {
        <h2>"Mail"</h2>
        {if mails.is_empty() {
            view! { <p class="hint">"No mail for this booking (a counter sale without an address)."</p> }.into_any()
        } else {
            view! {
                <table class="mails" id="booking-mails">
                    <thead><tr><th>"Mail"</th><th>"State"</th><th>"To"</th><th>"Queued"</th><th>"Sent"</th><th>"Attempts"</th><th>"Last error"</th></tr></thead>
                    <tbody>
                        {mails.into_iter().map(|m| view! {
                            <tr data-state=word(m.state)>
                                <td>{word(m.kind)}</td>
                                <td class="mail-state">{word(m.state)}</td>
                                <td>{m.recipient.unwrap_or_default()}</td>
                                <td>{when(m.created_at)}</td>
                                <td>{m.sent_at.map(when).unwrap_or_default()}</td>
                                <td>{m.attempts}</td>
                                <td>{m.last_error.unwrap_or_default()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}
