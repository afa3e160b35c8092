//! Everything a fan does from the app, as server functions: the islands
//! call these directly and get typed answers or an [`AppError`] to match
//! on. They run the same engine commands as the JSON API, behind the same
//! gates (sessions, CSRF, rate limits, the body limit, request ids, metrics).
//!
//! Endpoints are fixed (`/_app/<name>`), so the server's gates and tests
//! can name them.

use frontrow_model::{
    AppError, BookingId, Cancellation, CheckoutAnswer, CheckoutId, CheckoutView, EventId, Hold, HoldId, HoldToken, IdempotencyKey, PaymentToken,
    PresalePass, QueueView, SeatId, StandingPlaces, TicketChoices, TicketId, WaitlistEntry, WaitlistState,
};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

/// Claims the seats, all or none. `admission_token` is required while the
/// event's waiting room is on. The same `idempotency_key` and seats again
/// answer the hold the first request made (200).
#[server(prefix = "/_app", endpoint = "hold", input = Json)]
pub async fn hold_seats(
    event_id: EventId,
    seat_ids: Vec<SeatId>,
    admission_token: Option<String>,
    idempotency_key: Option<IdempotencyKey>,
) -> Result<Hold, AppError> {
    use crate::server::{limited_fan, set_status};
    let (engine, session, user) = limited_fan().await?;
    let pass = crate::session::pass(&session, &engine, event_id, user.user_id, admission_token.as_deref()).await?;
    let held = engine.hold(user.user_id, event_id, &seat_ids, pass.access(), idempotency_key.as_ref()).await?;
    set_status(if held.existing { 200 } else { 201 });
    Ok(held.hold)
}

/// Finds the best `count` seats side by side in `tier` and holds them.
#[server(prefix = "/_app", endpoint = "hold_best", input = Json)]
pub async fn hold_best(event_id: EventId, count: usize, tier: String, admission_token: Option<String>) -> Result<Hold, AppError> {
    use crate::server::{limited_fan, set_status};
    let (engine, session, user) = limited_fan().await?;
    let pass = crate::session::pass(&session, &engine, event_id, user.user_id, admission_token.as_deref()).await?;
    let hold = engine.hold_best(user.user_id, event_id, count, &tier, pass.access()).await?;
    set_status(201);
    Ok(hold)
}

/// Holds `count` places of a standing area (any free ones, all or none).
/// The same `idempotency_key` again answers the hold the first request made.
#[server(prefix = "/_app", endpoint = "hold_places", input = Json)]
pub async fn hold_places(
    event_id: EventId,
    places: StandingPlaces,
    admission_token: Option<String>,
    idempotency_key: Option<IdempotencyKey>,
) -> Result<Hold, AppError> {
    use crate::server::{limited_fan, set_status};
    let (engine, session, user) = limited_fan().await?;
    let pass = crate::session::pass(&session, &engine, event_id, user.user_id, admission_token.as_deref()).await?;
    let held = engine.hold_places(user.user_id, event_id, &places, pass.access(), idempotency_key.as_ref()).await?;
    set_status(if held.existing { 200 } else { 201 });
    Ok(held.hold)
}

/// Holds the seats ticked in the seat list (or `count` places of the
/// standing area `section`): the accessible path, a plain HTML form that
/// works without JavaScript. Its answer is then a redirect to the page
/// where the hold is paid for (or back to the list, with the error).
#[server(prefix = "/_app", endpoint = "hold_from_list")]
pub async fn hold_from_list(event_id: EventId, section: String, seat_ids: Option<Vec<SeatId>>, count: Option<i32>) -> Result<Hold, AppError> {
    use crate::seatmap::MapSettings;
    use crate::server::{back_to, limited_fan};
    let (engine, session, user) = limited_fan().await?;
    let stored = crate::session::stored_admission(&session, &engine, event_id, user.user_id).await?;
    let pass = crate::session::pass(&session, &engine, event_id, user.user_id, stored.as_ref().map(|s| s.admission_token.as_str())).await?;
    let held = match (seat_ids.filter(|ids| !ids.is_empty()), count) {
        (Some(ids), _) => engine.hold(user.user_id, event_id, &ids, pass.access(), None).await?,
        (None, Some(count)) => {
            let places = StandingPlaces { section: section.clone(), count };
            engine.hold_places(user.user_id, event_id, &places, pass.access(), None).await?
        }
        (None, None) => return Err(AppError::invalid("choose at least one seat")),
    };
    // Paid for where the picker is: the section's page of a big venue, the
    // event's page of a small one.
    let layout = engine.board().event(event_id).await?.layout().cloned();
    let settings = leptos::prelude::use_context::<MapSettings>().unwrap_or_default();
    let picker = match layout {
        Some(layout) if settings.overview(&layout) => crate::seatmap::section_href(event_id, &section),
        _ => format!("/events/{event_id}"),
    };
    back_to(&format!("{picker}#picker"));
    Ok(held.hold)
}

/// Enters a presale code for the event; a code that opens the presale now
/// is remembered for this fan's holds of it. A plain form post (no
/// JavaScript) is sent back to the event's page. Wrong codes are counted
/// against the fan and their address.
#[server(prefix = "/_app", endpoint = "presale_code")]
pub async fn enter_presale_code(event_id: EventId, code: String) -> Result<PresalePass, AppError> {
    use frontrow_engine::accounts::sign_in::ClientAddress;
    let (engine, session, user) = crate::server::limited_fan().await?;
    let address = use_context::<http::request::Parts>().and_then(|parts| parts.extensions.get::<ClientAddress>().map(|a| a.0));
    let pass = crate::session::enter_presale_code(&session, &engine, &user, event_id, &code, address).await?;
    crate::server::back_to(&format!("/events/{event_id}#picker"));
    Ok(pass)
}

/// Joins the event's waiting list for `quantity` seats of a sold-out
/// `tier`. A plain form (without JavaScript) is sent back to the event's page.
#[server(prefix = "/_app", endpoint = "waitlist_join")]
pub async fn join_waitlist(event_id: EventId, tier: String, quantity: i32) -> Result<WaitlistEntry, AppError> {
    let (engine, _, user) = crate::server::limited_fan().await?;
    let entry = engine.join_waitlist(&user, event_id, &frontrow_model::JoinWaitlist { tier, quantity }).await?;
    crate::server::back_to(&format!("/events/{event_id}#waitlist"));
    Ok(entry)
}

/// The fan's entry on the event's waiting list, if they are on it.
#[server(prefix = "/_app", endpoint = "waitlist_entry", input = Json)]
pub async fn my_waitlist_entry(event_id: EventId) -> Result<Option<WaitlistEntry>, AppError> {
    let (engine, _, user) = crate::server::fan().await?;
    Ok(engine.waitlist_entry(user.user_id, event_id).await?)
}

/// Leaves the waiting list, or declines the offer open to the fan.
#[server(prefix = "/_app", endpoint = "waitlist_leave", input = Json)]
pub async fn leave_waitlist(event_id: EventId) -> Result<WaitlistState, AppError> {
    let (engine, _, user) = crate::server::fan().await?;
    Ok(engine.leave_waitlist(user.user_id, event_id).await?)
}

#[server(prefix = "/_app", endpoint = "release", input = Json)]
pub async fn release_hold(hold_id: HoldId, hold_token: HoldToken) -> Result<(), AppError> {
    let (engine, _, user) = crate::server::fan().await?;
    Ok(engine.release(user.user_id, hold_id, &hold_token).await?)
}

/// Cancels tickets of the fan's booking (`ticket_ids`, or every valid
/// one) on the event's terms. The browser makes one key per cancellation
/// asked for, so a double click or a second try refunds once.
#[server(prefix = "/_app", endpoint = "cancel_tickets", input = Json)]
pub async fn cancel_tickets(
    booking_id: BookingId,
    ticket_ids: Option<Vec<TicketId>>,
    idempotency_key: IdempotencyKey,
) -> Result<Cancellation, AppError> {
    let (engine, _, user) = crate::server::fan().await?;
    Ok(engine.cancel_tickets(&user, booking_id, &frontrow_model::CancelRequest { ticket_ids }, &idempotency_key).await?)
}

/// Pays for the hold, with the ticket type of each seat where the event
/// has types (never a price). The idempotency key is made by the browser
/// and kept per hold, card and types, so a double click or a reload gets
/// the first answer.
#[server(prefix = "/_app", endpoint = "checkout", input = Json)]
pub async fn checkout(
    hold_id: HoldId,
    hold_token: HoldToken,
    payment_token: PaymentToken,
    idempotency_key: IdempotencyKey,
    ticket_types: Option<TicketChoices>,
) -> Result<CheckoutAnswer, AppError> {
    use crate::server::{fan, set_status};
    use frontrow_engine::sale::checkout::CheckoutRequest;
    let (engine, _, user) = fan().await?;
    let ticket_types = ticket_types.unwrap_or_default();
    let request = CheckoutRequest {
        user_id: user.user_id,
        hold_id,
        hold_token: &hold_token,
        payment_token: &payment_token,
        idempotency_key: &idempotency_key,
        ticket_types: &ticket_types,
    };
    let answer = engine.checkout(request).await?.into_answer()?;
    set_status(match answer {
        CheckoutAnswer::Confirmed { .. } => 201,
        CheckoutAnswer::PaymentPending { .. } => 202,
    });
    Ok(answer)
}

#[server(prefix = "/_app", endpoint = "checkout_status", input = Json)]
pub async fn checkout_status(checkout_id: CheckoutId) -> Result<CheckoutView, AppError> {
    let (engine, _, user) = crate::server::fan().await?;
    Ok(engine.checkout_view(user.user_id, checkout_id).await?)
}

/// Renews the fan's admission while their seat map is open (and tells them
/// if it lapsed).
#[server(prefix = "/_app", endpoint = "renew_admission", input = Json)]
pub async fn renew_admission(event_id: EventId, queue_token: String) -> Result<QueueView, AppError> {
    let (engine, session, user) = crate::server::limited_fan().await?;
    crate::session::queue_view(&session, &engine, &user, event_id, &queue_token).await
}

/// Creates a fan account and signs it in. Works as a plain HTML form too:
/// then the answer is a redirect to `next` (or back to the form, with the
/// error, on failure).
#[server(prefix = "/_app", endpoint = "sign_up")]
pub async fn sign_up(name: String, email: String, password: String, next: Option<String>) -> Result<String, AppError> {
    use frontrow_engine::accounts::NewUser;
    use frontrow_model::Role;
    let engine = crate::server::engine()?;
    let user = engine.create_user(NewUser { email: &email, password: &password, name: &name, role: Role::Fan }).await?;
    crate::session::sign_in(&crate::server::request_session().await?, &engine, &user).await?;
    Ok(go_next(next))
}

#[server(prefix = "/_app", endpoint = "sign_in")]
pub async fn sign_in(email: String, password: String, next: Option<String>) -> Result<String, AppError> {
    let engine = crate::server::engine()?;
    let request = use_context::<http::request::Parts>().ok_or_else(AppError::internal)?;
    let secure = use_context::<crate::server::SiteUrl>().is_some_and(|site| site.0.starts_with("https://"));
    let session = crate::server::request_session().await?;
    let (_, cookie) = crate::session::sign_in_with_password(&session, &engine, &email, &password, &request, secure).await?;
    if let Ok(cookie) = http::HeaderValue::from_str(&cookie) {
        expect_context::<leptos_axum::ResponseOptions>().append_header(http::header::SET_COOKIE, cookie);
    }
    Ok(go_next(next))
}

#[server(prefix = "/_app", endpoint = "sign_out")]
pub async fn sign_out() -> Result<String, AppError> {
    crate::session::sign_out(&crate::server::request_session().await?, &crate::server::engine()?).await?;
    Ok(go_next(Some("/".to_owned())))
}

/// Where to go after signing in: only paths on this site. A plain form post
/// is redirected there.
#[cfg(feature = "ssr")]
fn go_next(next: Option<String>) -> String {
    let to = crate::links::safe_next(next);
    if crate::server::from_html_form() {
        leptos_axum::redirect(&to);
    }
    to
}

/// The server functions that make accounts or try passwords (a tighter
/// limit of their own).
#[cfg(feature = "ssr")]
pub fn account_paths() -> [&'static str; 2] {
    use leptos::server_fn::ServerFn;
    [SignUp::PATH, SignIn::PATH]
}

/// The server functions that buy seats; like their JSON API twins, only so
/// many are worked on at once.
#[cfg(feature = "ssr")]
pub fn sale_paths() -> [&'static str; 6] {
    use leptos::server_fn::ServerFn;
    [HoldSeats::PATH, HoldBest::PATH, HoldPlaces::PATH, HoldFromList::PATH, ReleaseHold::PATH, Checkout::PATH]
}

/// The server functions of the waiting room (an admitted fan's renewal).
#[cfg(feature = "ssr")]
pub fn queue_paths() -> [&'static str; 1] {
    use leptos::server_fn::ServerFn;
    [RenewAdmission::PATH]
}

/// The server functions that cost the server real work per call; they are
/// rate limited per client like their JSON API twins.
#[cfg(feature = "ssr")]
pub fn rate_limited_paths() -> [&'static str; 12] {
    use leptos::server_fn::ServerFn;
    [
        EnterPresaleCode::PATH,
        HoldSeats::PATH,
        HoldBest::PATH,
        HoldPlaces::PATH,
        HoldFromList::PATH,
        Checkout::PATH,
        CancelTickets::PATH,
        JoinWaitlist::PATH,
        RenewAdmission::PATH,
        SignUp::PATH,
        SignIn::PATH,
        CheckoutStatus::PATH,
    ]
}
