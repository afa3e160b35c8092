//! The printable ticket page: plain HTML from an askama template, no app
//! bundle, so it prints the same from any browser.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use frontrow_app::server::qr_svg;
use frontrow_engine::EngineError;
use frontrow_model::BookingId;
use tower_sessions::Session;

use crate::html::{failure, not_found, render, signed_in};
use crate::state::AppState;

struct PrintedTicket {
    seat_label: String,
    /// Its ticket type, or empty.
    ticket_type: String,
    code: String,
    qr_svg: String,
}

#[derive(Template)]
#[template(path = "tickets.html")]
struct TicketsPage {
    /// On the inline script and style, as the page's policy allows.
    nonce: String,
    booking_id: String,
    event_name: String,
    venue: String,
    starts_at: String,
    holder: String,
    tickets: Vec<PrintedTicket>,
}

/// `GET /bookings/{id}/print`: the owner's (or staff's) tickets, one per
/// seat, each with its QR code. Anyone else gets 404; nobody signed in is
/// sent to sign in first.
pub async fn print_tickets(State(state): State<AppState>, session: Session, Path(booking_id): Path<String>) -> Response {
    // Parsed first: nothing from the raw path goes into a redirect.
    let Ok(booking_id) = booking_id.parse::<BookingId>() else { return not_found() };
    let user = match signed_in(&state, &session, &format!("/bookings/{booking_id}/print")).await {
        Ok(user) => user,
        Err(response) => return response,
    };
    let booking = match state.engine.booking_for(&user, booking_id).await {
        Ok(b) => b,
        Err(EngineError::NotFound) => return not_found(),
        Err(e) => return failure(e),
    };
    let board = match state.engine.board().snapshot(booking.event_id).await {
        Ok(board) => board,
        Err(e) => return failure(e),
    };
    // The tickets' holder, not whoever prints them (staff, at the counter).
    let holder = match state.engine.holder_name(booking_id).await {
        Ok(name) => name,
        Err(e) => return failure(e),
    };
    let layout = &board.layout;
    let nonce = crate::gates::headers::nonce();
    let page = TicketsPage {
        nonce: nonce.clone(),
        booking_id: booking.booking_id.to_string(),
        event_name: board.event.name.clone(),
        venue: board.event.venue.clone(),
        starts_at: board.event.starts_at.format("%A %e %B %Y, %H:%M UTC").to_string(),
        holder,
        tickets: booking
            .tickets
            .into_iter()
            .map(|t| {
                let seat_label = layout.seat_index(&t.seat_id).map_or_else(|| t.seat_id.clone(), |i| layout.seat_label(i));
                PrintedTicket {
                    qr_svg: qr_svg(&t.code, &format!("QR code of ticket {}", t.code)),
                    seat_label,
                    ticket_type: t.ticket_type.unwrap_or_default(),
                    code: t.code,
                }
            })
            .collect(),
    };
    render(&page, &nonce)
}
