//! After the hold: a payment on its way, the booking with its tickets, and
//! the fan's bookings.

use frontrow_model::{AppError, BookingStatus, CheckoutStatus, CheckoutView, TicketState};
use leptos::prelude::*;
use leptos_meta::Title;

use super::load_viewer;
use super::{long_date, param, redirect, short_date, status_word, NotFound};
use crate::format::money;
use crate::islands::{CancelPanel, CheckoutWatcher, SignOutButton};
use crate::props::*;

#[server(prefix = "/_app")]
pub async fn load_booking(booking_id: String) -> Result<Option<BookingView>, AppError> {
    use crate::server::{engine, qr_svg, viewer};
    use frontrow_engine::EngineError;
    let Some(user) = viewer().await? else { return Ok(None) };
    let Ok(id) = booking_id.parse::<frontrow_model::BookingId>() else { return Ok(None) };
    let engine = engine()?;
    let booking = match engine.booking_for(&user, id).await {
        Ok(b) => b,
        Err(EngineError::NotFound) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let board = engine.board().snapshot(booking.event_id).await?;
    let layout = &board.layout;
    let tickets = booking
        .tickets
        .iter()
        .map(|t| {
            let seat_label = layout.seat_index(&t.seat_id).map_or_else(|| t.seat_id.clone(), |i| layout.seat_label(i));
            TicketView { qr_svg: qr_svg(&t.code, &format!("Ticket code {} for {seat_label}", t.code)), seat_label, ticket: t.clone() }
        })
        .collect();
    let holder = engine.holder_name(id).await?;
    let event = (*board.event).clone();
    // The terms concern the fan who bought online, while they have tickets
    // of an event still on; cancelling is offered while the policy allows
    // (the engine decides again, by the database's clock, when they ask).
    let now = chrono::Utc::now();
    let terms_apply = booking.channel == frontrow_model::Channel::Online
        && engine.booking_owner(id).await? == user.user_id
        && event.cancelled_at.is_none()
        && booking.tickets.iter().any(|t| t.state == TicketState::Valid);
    let cancel_open = terms_apply && event.refund_policy.deadline(event.starts_at).is_some_and(|deadline| now < deadline);
    let refund_terms = terms_apply.then(|| crate::format::refund_terms(&event.refund_policy, event.starts_at, now));
    Ok(Some(BookingView { event, booking, tickets, holder, refund_terms, cancel_open }))
}

/// The waiting lists the signed-in fan is on (none signed in: empty).
#[server(prefix = "/_app")]
pub async fn load_my_waitlists() -> Result<Vec<frontrow_model::WaitlistEntry>, AppError> {
    use crate::server::{engine, viewer};
    let Some(user) = viewer().await? else { return Ok(Vec::new()) };
    Ok(engine()?.waitlist_entries(user.user_id, None).await?)
}

/// `None` when nobody is signed in.
#[server(prefix = "/_app")]
pub async fn load_my_bookings() -> Result<Option<Vec<BookingLine>>, AppError> {
    use crate::server::{engine, viewer};
    let Some(user) = viewer().await? else { return Ok(None) };
    let engine = engine()?;
    let mut lines = Vec::new();
    for booking in engine.bookings_of(user.user_id).await? {
        let event = (*engine.board().snapshot(booking.event_id).await?.event).clone();
        lines.push(BookingLine { booking, event });
    }
    Ok(Some(lines))
}

#[server(prefix = "/_app")]
pub async fn load_checkout(checkout_id: String) -> Result<Option<CheckoutView>, AppError> {
    use crate::server::{engine, viewer};
    use frontrow_engine::EngineError;
    let Some(user) = viewer().await? else { return Ok(None) };
    let Ok(id) = checkout_id.parse::<frontrow_model::CheckoutId>() else { return Ok(None) };
    match engine()?.checkout_view(user.user_id, id).await {
        Ok(view) => Ok(Some(view)),
        Err(EngineError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[component]
pub fn CheckoutPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Title text="Payment"/>
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    match load_checkout(id).await {
                        Ok(Some(state)) if state.status == CheckoutStatus::Confirmed && state.booking.is_some() => {
                            redirect(&format!("/bookings/{}", state.booking.map(|b| b.booking_id.to_string()).unwrap_or_default()));
                            view! { <p>"Your booking is confirmed."</p> }.into_any()
                        }
                        Ok(Some(state)) => view! {
                            <section class="checkout-page">
                                <h1>"Payment"</h1>
                                <CheckoutWatcher state/>
                            </section>
                        }.into_any(),
                        Ok(None) => view! { <NotFound/> }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
pub fn BookingPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    match load_booking(id).await {
                        Ok(Some(b)) => view! { <BookingDetails view=b/> }.into_any(),
                        Ok(None) => view! { <NotFound/> }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">{e.message}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// What a booking's page says about it, in a few words.
fn booking_headline(status: BookingStatus) -> &'static str {
    match status {
        BookingStatus::Confirmed => "You're going!",
        BookingStatus::PartiallyRefunded => "You're going (some tickets refunded)",
        BookingStatus::Refunded => "Booking refunded",
        BookingStatus::Cancelled => "Event cancelled, refunded",
    }
}

fn ticket_state_word(state: TicketState) -> &'static str {
    match state {
        TicketState::Valid => "valid",
        TicketState::CheckedIn => "checked in",
        TicketState::Refunded => "refunded",
        TicketState::Void => "void (event cancelled)",
    }
}

#[component]
fn BookingDetails(view: BookingView) -> impl IntoView {
    let BookingView { booking, event, tickets, holder, refund_terms, cancel_open } = view;
    let cancellable: Vec<CancellableTicket> = tickets
        .iter()
        .filter(|t| t.ticket.state == TicketState::Valid)
        .map(|t| CancellableTicket {
            ticket_id: t.ticket.ticket_id,
            seat_label: t.seat_label.clone(),
            refund_cents: event.refund_policy.refund_of(t.ticket.price_cents),
        })
        .collect();
    let booking_id = booking.booking_id;
    let print = format!("/bookings/{}/print", booking.booking_id);
    let status = status_word(booking.status).replace('_', " ");
    let status = if booking.status == BookingStatus::Cancelled { "cancelled, refunded".to_owned() } else { status };
    let count = tickets.len();
    view! {
        <Title text=format!("Booking for {}", event.name)/>
        <section class="booking" data-booking-id=booking.booking_id.to_string()>
            <h1>{booking_headline(booking.status)}</h1>
            <p class="meta"><strong>{event.name.clone()}</strong> " · " {event.venue.clone()} " · " {long_date(event.starts_at)}</p>
            <dl class="booking-facts">
                <dt>"Booking"</dt><dd class="booking-id">{booking.booking_id.to_string()}</dd>
                <dt>"Holder"</dt><dd class="holder">{holder}</dd>
                <dt>"Status"</dt><dd class="booking-status">{status}</dd>
                <dt>"Tickets"</dt><dd>{count}</dd>
                <dt>"Total paid"</dt><dd>{money(booking.total_cents)}</dd>
                {(booking.refunded_cents > 0).then(|| view! { <dt>"Refunded"</dt><dd>{money(booking.refunded_cents)}</dd> })}
                <dt>"Booked"</dt><dd>{short_date(booking.created_at)}</dd>
            </dl>
            <p><a class="button-link" href=print>"Print tickets"</a></p>
            <ul class="tickets">
                {tickets.into_iter().map(|t| view! {
                    <li class="ticket" data-seat-id=t.ticket.seat_id.clone() data-state=status_word(t.ticket.state)>
                        <div class="qr" inner_html=t.qr_svg/>
                        <div>
                            <h2>{t.seat_label}</h2>
                            {t.ticket.ticket_type.clone().map(|kind| view! { <p class="ticket-type">{kind}</p> })}
                            <p class="code">"Ticket code " <code>{t.ticket.code}</code></p>
                            {(t.ticket.state != TicketState::Valid).then(|| view! { <p class="ticket-state">{ticket_state_word(t.ticket.state)}</p> })}
                        </div>
                    </li>
                }).collect_view()}
            </ul>
            {refund_terms.map(|terms| view! { <p class="refund-terms" id="refund-terms">{terms}</p> })}
            {cancel_open.then(|| view! { <CancelPanel booking_id tickets=cancellable/> })}
        </section>
    }
}

#[component]
pub fn AccountPage() -> impl IntoView {
    view! {
        <Title text="My bookings"/>
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match (load_viewer().await, load_my_bookings().await) {
                    (Ok(Some(v)), Ok(Some(lines))) => {
                        let waitlists = load_my_waitlists().await.unwrap_or_default();
                        view! {
                        <section class="account">
                            <h1>"My bookings"</h1>
                            <p>"Signed in as " <strong>{v.name}</strong> " (" {v.email} ")"</p>
                            <SignOutButton/>
                            {if lines.is_empty() {
                                view! { <p class="notice">"No bookings yet. " <a href="/">"Find an event"</a> "."</p> }.into_any()
                            } else {
                                view! {
                                    <ul class="booking-list">
                                        {lines.into_iter().map(|line| view! {
                                            <li>
                                                <a href=format!("/bookings/{}", line.booking.booking_id)>{line.event.name}</a>
                                                " · " {short_date(line.event.starts_at)} " · " {line.booking.seat_ids.len()} " seats · "
                                                {money(line.booking.total_cents)} " · " {status_word(line.booking.status).replace('_', " ")}
                                            </li>
                                        }).collect_view()}
                                    </ul>
                                }.into_any()
                            }}
                            <MyWaitlists entries=waitlists/>
                        </section>
                    }.into_any()
                    }
                    _ => {
                        redirect("/signin?next=/account");
                        view! { <p><a href="/signin?next=/account">"Sign in"</a> " to see your bookings."</p> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

/// The fan's waiting lists: their place, or the seats offered to them (a
/// link to the event's page, where the offer is bought or declined).
#[component]
fn MyWaitlists(entries: Vec<frontrow_model::WaitlistEntry>) -> impl IntoView {
    use frontrow_model::WaitlistState;
    (!entries.is_empty()).then(|| {
        view! {
            <h2>"Waiting lists"</h2>
            <ul class="waitlist-list" id="my-waitlists">
                {entries.into_iter().map(|e| {
                    let what = match (e.state, &e.offer) {
                        (WaitlistState::Waiting, _) => format!("number {} in line for {} in {}", e.place.unwrap_or(0), e.quantity, e.tier),
                        (WaitlistState::Offered, Some(offer)) => format!(
                            "seats offered to you: {} ({}), kept until {}: buy them now",
                            offer.seat_ids.join(", "), money(offer.total_cents), short_date(offer.expires_at)
                        ),
                        (WaitlistState::Paying, _) => "paying for the seats offered".to_owned(),
                        (WaitlistState::Bought, _) => "bought from the waiting list".to_owned(),
                        _ => "the offer went on to the next fan".to_owned(),
                    };
                    view! {
                        <li data-state=e.state.as_str()>
                            <a href=format!("/events/{}#waitlist", e.event_id)>{e.event_name}</a> " · " {what}
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
    })
}
