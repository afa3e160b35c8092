//! The printable ticket page: plain HTML from an askama template, no app
//! bundle, so it prints the same from any browser.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use frontrow_app::server::qr_svg;
use frontrow_engine::EngineError;
use tower_sessions::Session;
use uuid::Uuid;

use crate::api::extract::SESSION_USER_KEY;
use crate::state::AppState;

struct PrintedTicket {
    seat_label: String,
    code: String,
    qr_svg: String,
}

#[derive(Template)]
#[template(path = "tickets.html")]
struct TicketsPage {
    booking_id: String,
    event_name: String,
    venue: String,
    starts_at: String,
    holder: String,
    tickets: Vec<PrintedTicket>,
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Html("<!DOCTYPE html><html lang=\"en\"><title>Not found</title><h1>Not found</h1><p><a href=\"/\">frontrow</a></p></html>")).into_response()
}

fn failure(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "printing tickets failed");
    (StatusCode::INTERNAL_SERVER_ERROR, Html("<!DOCTYPE html><html lang=\"en\"><title>Error</title><h1>Something went wrong</h1></html>")).into_response()
}

/// `GET /bookings/{id}/print`: the owner's (or staff's) tickets, one per
/// seat, each with its QR code. Anyone else gets 404; nobody signed in is
/// sent to sign in first.
pub async fn print_tickets(State(state): State<AppState>, session: Session, Path(booking_id): Path<String>) -> Response {
    let here = format!("/bookings/{booking_id}/print");
    let user_id = match session.get::<Uuid>(SESSION_USER_KEY).await {
        Ok(Some(id)) => id,
        Ok(None) => return Redirect::to(&format!("/signin?next={here}")).into_response(),
        Err(e) => return failure(e),
    };
    let user = match frontrow_engine::accounts::find_user(&state.engine.pool, user_id).await {
        Ok(Some(user)) => user,
        Ok(None) => return Redirect::to(&format!("/signin?next={here}")).into_response(),
        Err(e) => return failure(e),
    };
    let Ok(booking_id) = booking_id.parse::<Uuid>() else { return not_found() };
    let booking = match frontrow_engine::checkout::booking_for(&state.engine.pool, booking_id, user.user_id, user.role.is_staff()).await {
        Ok(b) => b,
        Err(EngineError::NotFound) => return not_found(),
        Err(e) => return failure(e),
    };
    let board = match state.engine.board.snapshot(booking.event_id).await {
        Ok(board) => board,
        Err(e) => return failure(e),
    };
    let layout = &board.layout;
    let page = TicketsPage {
        booking_id: booking.booking_id.to_string(),
        event_name: layout.name.clone(),
        venue: layout.venue.clone(),
        starts_at: layout.starts_at.format("%A %e %B %Y, %H:%M UTC").to_string(),
        holder: user.name,
        tickets: booking
            .tickets
            .into_iter()
            .map(|t| {
                let seat_label = layout.seat_index(&t.seat_id).map_or_else(|| t.seat_id.clone(), |i| layout.seat_label(i));
                PrintedTicket { qr_svg: qr_svg(&t.code, &format!("QR code of ticket {}", t.code)), seat_label, code: t.code }
            })
            .collect(),
    };
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => failure(e),
    }
}
