//! Pages. These components run only on the server (islands mode); their data
//! comes from server functions, called directly during the render. The
//! interactive parts are the islands in [`crate::islands`].

use frontrow_model::{AppError, BookingStatus, CheckoutStatus, CheckoutView, EventStatus, EventSummary, Role, TicketState, TierPrice, User};
use leptos::prelude::*;
use leptos::server_fn::error::ServerFnUrlError;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::format::{availability, money};
use crate::islands::{AuthForm, CheckoutWatcher, MapTools, SeatPicker, SignOutButton};
use crate::links::safe_next;
use crate::props::*;

#[server(prefix = "/_app")]
pub async fn load_viewer() -> Result<Option<User>, AppError> {
    crate::server::viewer().await
}

#[server(prefix = "/_app")]
pub async fn load_events() -> Result<Vec<EventSummary>, AppError> {
    Ok(crate::server::engine()?.events().await?)
}

/// The event page's data, all from this instance's live seat map except the
/// fan's own hold.
#[server(prefix = "/_app")]
pub async fn load_event_page(event_id: String) -> Result<Option<EventPageData>, AppError> {
    use crate::server::{engine, request_session};
    use frontrow_engine::EngineError;
    let Ok(id) = event_id.parse::<uuid::Uuid>() else { return Ok(None) };
    let (engine, session) = (engine()?, request_session().await?);
    let board = match engine.board().snapshot(id).await {
        Ok(board) if board.event.published => board,
        Ok(_) | Err(EngineError::NotFound) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let user = crate::session::current_user(&session, &engine).await?;
    let layout = &board.layout;
    // With the waiting room on, only admitted fans see the map.
    let mut admission = None;
    let mut gate = None;
    if board.event.waiting_room_enabled {
        match &user {
            None => gate = Some(format!("/signin?next=/events/{id}/queue")),
            Some(u) => match crate::session::stored_admission(&session, &engine, id, u.user_id).await? {
                Some(found) => admission = Some(found),
                None => gate = Some(format!("/events/{id}/queue")),
            },
        }
    }
    let hold = match &user {
        // The map itself is from memory; without the database the fan's own
        // hold cannot be read, so the page is drawn without it.
        Some(u) => match engine.active_hold(u.user_id, id).await {
            Ok(hold) => hold,
            Err(EngineError::Unavailable(_)) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let max_age = use_context::<crate::server::MapRefresh>().unwrap_or_default().0;
    let map = crate::seatmap::fans_map(&board, max_age);
    Ok(Some(EventPageData {
        summary: board.summary(),
        sections: layout.sections.iter().map(|s| s.name.clone()).collect(),
        svg: map.svg.to_string(),
        epoch: map.epoch,
        seq: map.seq,
        signed_in: user.is_some(),
        hold: hold.map(|h| HoldInfo {
            hold_id: h.hold_id,
            labels: h.seat_ids.iter().map(|s| layout.seat_index(s).map_or_else(|| s.clone(), |i| layout.seat_label(i))).collect(),
            hold_token: h.hold_token,
            seat_ids: h.seat_ids,
            total_cents: h.total_cents,
            expires_at_ms: h.expires_at.timestamp_millis(),
        }),
        server_now_ms: board.taken_at.timestamp_millis(),
        gate,
        admission_token: admission.as_ref().map(|a| a.0.clone()),
        queue_token: admission.and_then(|a| a.1),
    }))
}

#[server(prefix = "/_app")]
pub async fn load_booking(booking_id: String) -> Result<Option<BookingView>, AppError> {
    use crate::server::{engine, qr_svg, viewer};
    use frontrow_engine::EngineError;
    let Some(user) = viewer().await? else { return Ok(None) };
    let Ok(id) = booking_id.parse::<uuid::Uuid>() else { return Ok(None) };
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
    Ok(Some(BookingView { event: (*board.event).clone(), booking, tickets }))
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
    let Ok(id) = checkout_id.parse::<uuid::Uuid>() else { return Ok(None) };
    match engine()?.checkout_view(user.user_id, id).await {
        Ok(view) => Ok(Some(view)),
        Err(EngineError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn set_status(_code: u16) {
    #[cfg(feature = "ssr")]
    crate::server::set_status(_code);
}

pub(crate) fn redirect(to: &str) {
    // A path from the URL may hold decoded control characters, which are no
    // header value (leptos_axum would panic on them): no redirect then.
    if to.chars().any(char::is_control) {
        return;
    }
    #[cfg(feature = "ssr")]
    leptos_axum::redirect(to);
}

fn param(name: &'static str) -> String {
    use_params_map().read_untracked().get(name).unwrap_or_default()
}

/// The error a plain form post was sent back with (`?__err=`), if any.
fn form_error() -> Option<String> {
    use_query_map().read_untracked().get("__err").map(|e| ServerFnUrlError::<AppError>::decode_err(&e).message)
}

fn long_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%A %e %B %Y, %H:%M UTC").to_string()
}

fn short_date(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%e %B %Y, %H:%M UTC").to_string()
}

fn status_word<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

#[component]
pub fn SiteHeader() -> impl IntoView {
    view! {
        <header class="site-header">
            <a class="brand" href="/">"frontrow"</a>
            <nav aria-label="Account">
                <Suspense fallback=|| ()>
                    {move || Suspend::new(async move {
                        match load_viewer().await.ok().flatten() {
                            Some(v) => view! {
                                {(v.role != Role::Fan).then(|| view! { <a href="/admin">"Box office"</a> })}
                                <a href="/account">"My bookings"</a>
                                <span class="who">{v.name}</span>
                            }.into_any(),
                            None => view! {
                                <a href="/signin">"Sign in"</a>
                                <a href="/signup" class="button-link">"Sign up"</a>
                            }.into_any(),
                        }
                    })}
                </Suspense>
            </nav>
        </header>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    set_status(404);
    view! {
        <Title text="Not found"/>
        <section class="notice-page">
            <h1>"Not found"</h1>
            <p>"There is nothing here. " <a href="/">"See what is on sale"</a> "."</p>
        </section>
    }
}

#[component]
pub fn EventsPage() -> impl IntoView {
    view! {
        <Title text="On sale"/>
        <section class="events">
            <h1>"On sale"</h1>
            <Suspense fallback=|| view! { <p>"Loading events…"</p> }>
                {move || Suspend::new(async move {
                    match load_events().await {
                        Ok(list) if list.is_empty() => view! { <p class="notice">"No events yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <ul class="event-list">
                                {list.into_iter().map(|e| view! { <EventItem event=e/> }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">"Could not load events: " {e.message}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn EventItem(event: EventSummary) -> impl IntoView {
    let (text, class) = availability(&status_word(event.status), event.seats_available, event.seats_total);
    let prices = if event.price_min_cents == event.price_max_cents {
        money(i64::from(event.price_min_cents))
    } else {
        format!("{} – {}", money(i64::from(event.price_min_cents)), money(i64::from(event.price_max_cents)))
    };
    let e = event.event;
    let href = format!("/events/{}", e.event_id);
    view! {
        <li class="event-card" data-event-id=e.event_id.to_string()>
            <h2><a href=href>{e.name}</a></h2>
            <p class="meta">{e.venue} " · " {e.starts_at.format("%a %e %b %Y, %H:%M UTC").to_string()}</p>
            <p class="prices">{prices}</p>
            <p class=format!("availability {class}")>{text}</p>
        </li>
    }
}

#[component]
pub fn EventPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| view! { <p>"Loading the seat map…"</p> }>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    match load_event_page(id).await {
                        Ok(Some(data)) if data.gate.is_some() => {
                            let to = data.gate.clone().unwrap_or_default();
                            redirect(&to);
                            view! { <p>"This sale has a waiting room: " <a href=to>"join the queue"</a> "."</p> }.into_any()
                        }
                        Ok(Some(data)) => view! { <EventView data/> }.into_any(),
                        Ok(None) => view! { <NotFound/> }.into_any(),
                        Err(e) => {
                            set_status(e.status());
                            view! { <p class="error" role="alert">"Could not load the event: " {e.message}</p> }.into_any()
                        }
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn EventView(data: EventPageData) -> impl IntoView {
    let summary = data.summary;
    let event = summary.event.clone();
    let status = status_word(summary.status);
    let (text, class) = availability(&status, summary.seats_available, summary.seats_total);
    let picker = PickerProps {
        event_id: event.event_id,
        hold_ttl_seconds: event.hold_ttl_seconds,
        on_sale: summary.status == EventStatus::OnSale,
        signed_in: data.signed_in,
        max_seats: event.max_seats_per_order,
        tiers: event.tiers.clone(),
        epoch: data.epoch,
        seq: data.seq,
        hold: data.hold,
        server_now_ms: data.server_now_ms,
        admission_token: data.admission_token,
        queue_token: data.queue_token,
    };
    view! {
        <Title text=event.name.clone()/>
        <article class="event-page" data-event-id=event.event_id.to_string()>
            <header class="event-head">
                <h1>{event.name.clone()}</h1>
                <p class="meta">{event.venue.clone()} " · " {long_date(event.starts_at)}</p>
                <p class=format!("availability {class}") id="availability" data-total=summary.seats_total data-status=status>{text}</p>
                {(summary.status == EventStatus::Scheduled).then(|| view! { <p class="notice">"Sale opens " {short_date(event.sale_opens_at)} "."</p> })}
            </header>
            <div class="event-body">
                <section class="map-area" aria-label="Seats">
                    <Legend tiers=event.tiers.clone()/>
                    <MapTools sections=data.sections/>
                    <div class="map-viewport" id="map-viewport" inner_html=data.svg/>
                </section>
                <SeatPicker props=picker/>
            </div>
        </article>
    }
}

#[component]
fn Legend(tiers: Vec<TierPrice>) -> impl IntoView {
    view! {
        <ul class="legend" aria-label="Legend">
            {tiers.into_iter().enumerate().map(|(i, t)| view! {
                <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class=format!("seat t{i} av") cx="6" cy="6" r="5"/></svg>
                    {t.tier} " " {money(i64::from(t.price_cents))}</li>
            }).collect_view()}
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 av sel" cx="6" cy="6" r="5"/></svg>"Your selection"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 hd" cx="6" cy="6" r="5"/></svg>"Held (ring)"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 sd" cx="6" cy="6" r="5"/></svg>"Sold (small dot)"</li>
        </ul>
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
    let BookingView { booking, event, tickets } = view;
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
                            <p class="code">"Ticket code " <code>{t.ticket.code}</code></p>
                            {(t.ticket.state != TicketState::Valid).then(|| view! { <p class="ticket-state">{ticket_state_word(t.ticket.state)}</p> })}
                        </div>
                    </li>
                }).collect_view()}
            </ul>
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
                    (Ok(Some(v)), Ok(Some(lines))) => view! {
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
                        </section>
                    }.into_any(),
                    _ => {
                        redirect("/signin?next=/account");
                        view! { <p><a href="/signin?next=/account">"Sign in"</a> " to see your bookings."</p> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
pub fn SignInPage() -> impl IntoView {
    let next = safe_next(use_query_map().read_untracked().get("next"));
    view! {
        <Title text="Sign in"/>
        <section class="auth">
            <h1>"Sign in"</h1>
            <AuthForm signup=false next=next.clone() error=form_error()/>
            <p>"New here? " <a href=format!("/signup?next={next}")>"Create an account"</a></p>
        </section>
    }
}

#[component]
pub fn SignUpPage() -> impl IntoView {
    let next = safe_next(use_query_map().read_untracked().get("next"));
    view! {
        <Title text="Sign up"/>
        <section class="auth">
            <h1>"Create an account"</h1>
            <AuthForm signup=true next=next.clone() error=form_error()/>
            <p>"Already have one? " <a href=format!("/signin?next={next}")>"Sign in"</a></p>
        </section>
    }
}
