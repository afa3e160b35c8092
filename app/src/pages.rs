//! Pages. These components run only on the server (islands mode); the data
//! comes from server functions, called directly during the render. The
//! interactive parts are the islands in [`crate::islands`].

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::format::money;
use crate::islands::{AuthForm, CheckoutWatcher, MapTools, SeatPicker, SignOutButton};
use crate::props::*;

#[server(prefix = "/_app")]
pub async fn load_viewer() -> Result<Option<Viewer>, ServerFnError> {
    use frontrow_engine::model::Role;
    Ok(crate::server::current_user().await?.map(|u| Viewer {
        name: u.name,
        email: u.email,
        is_staff: matches!(u.role, Role::Staff | Role::Admin),
    }))
}

#[server(prefix = "/_app")]
pub async fn load_events() -> Result<Vec<EventCard>, ServerFnError> {
    use crate::server::{engine, internal};
    let events = frontrow_engine::catalogue::list_events(&engine()?.pool).await.map_err(internal)?;
    Ok(events
        .into_iter()
        .map(|e| EventCard {
            event_id: e.event_id.to_string(),
            name: e.name,
            venue: e.venue,
            starts_at: e.starts_at.format("%a %e %b %Y, %H:%M UTC").to_string(),
            status: e.status,
            seats_available: e.seats_available,
            seats_total: e.seats_total,
            price_min_cents: e.price_min_cents,
            price_max_cents: e.price_max_cents,
        })
        .collect())
}

/// The event page's data, all from this instance's live seat map except the
/// fan's own hold.
#[server(prefix = "/_app")]
pub async fn load_event_page(event_id: String) -> Result<Option<EventPageData>, ServerFnError> {
    use crate::server::{current_user, engine, internal};
    use frontrow_engine::EngineError;
    let Ok(id) = event_id.parse::<uuid::Uuid>() else { return Ok(None) };
    let engine = engine()?;
    let board = match engine.board.snapshot(id).await {
        Ok(board) => board,
        Err(EngineError::NotFound) => return Ok(None),
        Err(e) => return Err(internal(e)),
    };
    let user = current_user().await?;
    // With the waiting room on, only admitted fans see the map.
    let mut admission = None;
    let mut gate = None;
    if frontrow_engine::queue::room_enabled(&engine.pool, id).await.map_err(internal)? {
        match &user {
            None => gate = Some(format!("/signin?next=/events/{id}/queue")),
            Some(u) => match crate::server::session_admission(id, u.user_id).await? {
                Some(found) => admission = Some(found),
                None => gate = Some(format!("/events/{id}/queue")),
            },
        }
    }
    let hold = match &user {
        Some(u) => frontrow_engine::holds::active_hold(&engine.pool, u.user_id, id).await.map_err(internal)?,
        None => None,
    };
    let layout = &board.layout;
    let summary = board.summary();
    Ok(Some(EventPageData {
        event_id: id.to_string(),
        name: layout.name.clone(),
        venue: layout.venue.clone(),
        starts_at: layout.starts_at.format("%A %e %B %Y, %H:%M UTC").to_string(),
        status: summary.status,
        sale_opens_at: layout.sale_opens_at.format("%e %B %Y, %H:%M UTC").to_string(),
        seats_available: summary.seats_available,
        seats_total: summary.seats_total,
        max_seats_per_order: layout.max_seats_per_order,
        hold_ttl_seconds: layout.hold_ttl_seconds,
        tiers: layout.tiers.iter().map(|t| TierInfo { tier: t.tier.clone(), price_cents: t.price_cents }).collect(),
        sections: layout.sections.iter().map(|s| s.name.clone()).collect(),
        svg: crate::seatmap::render(&board),
        epoch: board.epoch,
        seq: board.seq,
        signed_in: user.is_some(),
        hold: hold.map(|h| HoldInfo {
            hold_id: h.hold_id.to_string(),
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
pub async fn load_booking(booking_id: String) -> Result<Option<BookingView>, ServerFnError> {
    use crate::server::{current_user, engine, internal, qr_svg};
    use frontrow_engine::EngineError;
    let Some(user) = current_user().await? else { return Ok(None) };
    let Ok(id) = booking_id.parse::<uuid::Uuid>() else { return Ok(None) };
    let engine = engine()?;
    let booking = match frontrow_engine::checkout::booking_for(&engine.pool, id, user.user_id, user.role.is_staff()).await {
        Ok(b) => b,
        Err(EngineError::NotFound) => return Ok(None),
        Err(e) => return Err(internal(e)),
    };
    let board = engine.board.snapshot(booking.event_id).await.map_err(internal)?;
    let layout = &board.layout;
    let label = |seat_id: &str| layout.seat_index(seat_id).map_or_else(|| seat_id.to_owned(), |i| layout.seat_label(i));
    Ok(Some(BookingView {
        booking_id: booking.booking_id.to_string(),
        event_id: booking.event_id.to_string(),
        event_name: layout.name.clone(),
        venue: layout.venue.clone(),
        starts_at: layout.starts_at.format("%A %e %B %Y, %H:%M UTC").to_string(),
        status: booking.status,
        total_cents: booking.total_cents,
        booked_at: booking.created_at.format("%e %B %Y, %H:%M UTC").to_string(),
        tickets: booking
            .tickets
            .into_iter()
            .map(|t| {
                let seat_label = label(&t.seat_id);
                TicketView {
                    qr_svg: qr_svg(&t.code, &format!("Ticket code {} for {seat_label}", t.code)),
                    ticket_id: t.ticket_id.to_string(),
                    seat_id: t.seat_id,
                    seat_label,
                    code: t.code,
                }
            })
            .collect(),
    }))
}

/// `None` when nobody is signed in.
#[server(prefix = "/_app")]
pub async fn load_my_bookings() -> Result<Option<Vec<BookingLine>>, ServerFnError> {
    use crate::server::{current_user, engine, internal};
    let Some(user) = current_user().await? else { return Ok(None) };
    let engine = engine()?;
    let bookings = frontrow_engine::checkout::user_bookings(&engine.pool, user.user_id).await.map_err(internal)?;
    let mut lines = Vec::with_capacity(bookings.len());
    for b in bookings {
        let board = engine.board.snapshot(b.event_id).await.map_err(internal)?;
        lines.push(BookingLine {
            booking_id: b.booking_id.to_string(),
            event_name: board.layout.name.clone(),
            starts_at: board.layout.starts_at.format("%e %B %Y, %H:%M UTC").to_string(),
            seats: b.seat_ids.len(),
            total_cents: b.total_cents,
            status: b.status,
        });
    }
    Ok(Some(lines))
}

#[server(prefix = "/_app")]
pub async fn load_checkout(checkout_id: String) -> Result<Option<CheckoutState>, ServerFnError> {
    use crate::server::{current_user, engine, internal};
    use frontrow_engine::EngineError;
    let Some(user) = current_user().await? else { return Ok(None) };
    let Ok(id) = checkout_id.parse::<uuid::Uuid>() else { return Ok(None) };
    match frontrow_engine::checkout::checkout_view(&engine()?.pool, user.user_id, id).await {
        Ok(v) => Ok(Some(CheckoutState {
            checkout_id: v.checkout_id.to_string(),
            status: v.status,
            booking_id: v.booking.map(|b| b.booking_id.to_string()),
            reason: v.reason,
        })),
        Err(EngineError::NotFound) => Ok(None),
        Err(e) => Err(internal(e)),
    }
}

fn set_status(_code: u16) {
    #[cfg(feature = "ssr")]
    crate::server::set_status(_code);
}

fn redirect(_to: &str) {
    #[cfg(feature = "ssr")]
    leptos_axum::redirect(_to);
}

fn param(name: &'static str) -> String {
    use_params_map().read_untracked().get(name).unwrap_or_default()
}

/// Where sign-in should return to: only paths on this site (browsers read
/// `//host`, `/\host` and paths with control characters as other sites).
fn safe_next(next: Option<String>) -> String {
    next.filter(|n| {
        n.starts_with('/') && !n.starts_with("//") && !n.chars().any(|c| c == '\\' || c.is_control() || c.is_whitespace())
    })
    .unwrap_or_else(|| "/account".to_owned())
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
                        Err(e) => view! { <p class="error" role="alert">"Could not load events: " {e.to_string()}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

/// The availability line; the seat picker recomputes it with the same words
/// as seats change (`client::availability_text`).
pub fn availability(status: &str, available: i64, total: i64) -> (String, &'static str) {
    match status {
        "sold_out" => ("Sold out".to_owned(), "sold-out"),
        "upcoming" => ("On sale soon".to_owned(), "upcoming"),
        "past" => ("Event over".to_owned(), "past"),
        _ if available * 10 < total => (format!("Selling fast: {available} left"), "selling-fast"),
        _ => (format!("{available} of {total} seats available"), "available"),
    }
}

#[component]
fn EventItem(event: EventCard) -> impl IntoView {
    let (text, class) = availability(&event.status, event.seats_available, event.seats_total);
    let prices = if event.price_min_cents == event.price_max_cents {
        money(i64::from(event.price_min_cents))
    } else {
        format!("{} – {}", money(i64::from(event.price_min_cents)), money(i64::from(event.price_max_cents)))
    };
    let href = format!("/events/{}", event.event_id);
    view! {
        <li class="event-card" data-event-id=event.event_id.clone()>
            <h2><a href=href>{event.name}</a></h2>
            <p class="meta">{event.venue} " · " {event.starts_at}</p>
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
                            set_status(500);
                            view! { <p class="error" role="alert">"Could not load the event: " {e.to_string()}</p> }.into_any()
                        }
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn EventView(data: EventPageData) -> impl IntoView {
    let (text, class) = availability(&data.status, data.seats_available, data.seats_total);
    let on_sale = data.status == "on_sale";
    let picker = PickerProps {
        event_id: data.event_id.clone(),
        hold_ttl_seconds: data.hold_ttl_seconds,
        on_sale,
        signed_in: data.signed_in,
        max_seats: data.max_seats_per_order,
        tiers: data.tiers.clone(),
        epoch: data.epoch,
        seq: data.seq,
        hold: data.hold.clone(),
        server_now_ms: data.server_now_ms,
        admission_token: data.admission_token.clone(),
        queue_token: data.queue_token.clone(),
    };
    view! {
        <Title text=data.name.clone()/>
        <article class="event-page" data-event-id=data.event_id.clone()>
            <header class="event-head">
                <h1>{data.name.clone()}</h1>
                <p class="meta">{data.venue.clone()} " · " {data.starts_at.clone()}</p>
                <p class=format!("availability {class}") id="availability" data-total=data.seats_total data-status=data.status.clone()>{text}</p>
                {(data.status == "upcoming").then(|| view! { <p class="notice">"Sale opens " {data.sale_opens_at.clone()} "."</p> })}
            </header>
            <div class="event-body">
                <section class="map-area" aria-label="Seats">
                    <Legend tiers=data.tiers.clone()/>
                    <MapTools sections=data.sections.clone()/>
                    <div class="map-viewport" id="map-viewport" inner_html=data.svg/>
                </section>
                <SeatPicker props=picker/>
            </div>
        </article>
    }
}

#[component]
fn Legend(tiers: Vec<TierInfo>) -> impl IntoView {
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
                        Ok(Some(state)) if state.status == "confirmed" && state.booking_id.is_some() => {
                            redirect(&format!("/bookings/{}", state.booking_id.unwrap_or_default()));
                            view! { <p>"Your booking is confirmed."</p> }.into_any()
                        }
                        Ok(Some(state)) => view! {
                            <section class="checkout-page">
                                <h1>"Payment"</h1>
                                <CheckoutWatcher state/>
                            </section>
                        }.into_any(),
                        Ok(None) => view! { <NotFound/> }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
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
                        Ok(Some(b)) => view! { <BookingDetails booking=b/> }.into_any(),
                        Ok(None) => view! { <NotFound/> }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn BookingDetails(booking: BookingView) -> impl IntoView {
    let print = format!("/bookings/{}/print", booking.booking_id);
    let count = booking.tickets.len();
    view! {
        <Title text=format!("Booking for {}", booking.event_name)/>
        <section class="booking" data-booking-id=booking.booking_id.clone()>
            <h1>{if booking.status == "confirmed" { "You're going!" } else { "Booking refunded" }}</h1>
            <p class="meta"><strong>{booking.event_name.clone()}</strong> " · " {booking.venue.clone()} " · " {booking.starts_at.clone()}</p>
            <dl class="booking-facts">
                <dt>"Booking"</dt><dd class="booking-id">{booking.booking_id.clone()}</dd>
                <dt>"Status"</dt><dd class="booking-status">{booking.status.clone()}</dd>
                <dt>"Tickets"</dt><dd>{count}</dd>
                <dt>"Total paid"</dt><dd>{money(booking.total_cents)}</dd>
                <dt>"Booked"</dt><dd>{booking.booked_at.clone()}</dd>
            </dl>
            <p><a class="button-link" href=print>"Print tickets"</a></p>
            <ul class="tickets">
                {booking.tickets.into_iter().map(|t| view! {
                    <li class="ticket" data-seat-id=t.seat_id.clone()>
                        <div class="qr" inner_html=t.qr_svg/>
                        <div>
                            <h2>{t.seat_label}</h2>
                            <p class="code">"Ticket code " <code>{t.code}</code></p>
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
                                        {lines.into_iter().map(|b| view! {
                                            <li>
                                                <a href=format!("/bookings/{}", b.booking_id)>{b.event_name}</a>
                                                " · " {b.starts_at} " · " {b.seats} " seats · " {money(b.total_cents)} " · " {b.status}
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
            <AuthForm signup=false next=next.clone()/>
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
            <AuthForm signup=true next=next.clone()/>
            <p>"Already have one? " <a href=format!("/signin?next={next}")>"Sign in"</a></p>
        </section>
    }
}
