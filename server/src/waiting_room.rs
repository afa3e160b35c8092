//! The waiting-room page: plain HTML (askama) with a few lines of script,
//! so a crowd of waiting fans never downloads the app bundle. (The box
//! office's controls are on the event's staff page.) Before the public sale
//! it asks for a presale code: a fan with one waits in the presale's queue.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use frontrow_engine::EngineError;
use frontrow_model::EventId;
use tower_sessions::Session;

use crate::html::{failure, not_found, render, signed_in};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "waiting_room.html")]
struct WaitingRoomPage {
    /// On the inline script and style, as the page's policy allows.
    nonce: String,
    event_id: String,
    event_name: String,
    venue: String,
    starts_at: String,
    opens_at: String,
    /// A presale is open or still to come: the page takes a code.
    presale_ahead: bool,
    /// This fan has entered a code: they wait in the presale's queue.
    has_code: bool,
    /// When the presale's queue opens and draws (its earliest window).
    presale_opens_at: String,
}

/// `GET /events/{id}/queue`.
pub async fn page(State(state): State<AppState>, session: Session, Path(event_id): Path<String>) -> Response {
    let Ok(event_id) = event_id.parse::<EventId>() else { return not_found() };
    if let Err(response) = signed_in(&state, &session, &format!("/events/{event_id}/queue")).await {
        return response;
    }
    let has_code = match frontrow_session::presale_access(&session, event_id).await {
        Ok(code) => code.is_some(),
        Err(e) => return e.into_response(),
    };
    let board = match state.engine.board().snapshot(event_id).await {
        Ok(board) => board,
        Err(EngineError::NotFound) => return not_found(),
        Err(e) => return failure(e),
    };
    match state.engine.waiting_room_enabled(event_id).await {
        Ok(true) => {}
        Ok(false) => return Redirect::to(&format!("/events/{event_id}")).into_response(),
        Err(e) => return failure(e),
    }
    let event = &board.event;
    if !event.published {
        return not_found();
    }
    let now = chrono::Utc::now();
    let presales_ahead = || event.presales.iter().filter(|p| p.ends_at > now);
    let presale_ahead = event.sale_opens_at > now && presales_ahead().next().is_some();
    let presale_opens_at = presales_ahead().map(|p| p.starts_at).min();
    let nonce = crate::gates::headers::nonce();
    let page = WaitingRoomPage {
        nonce: nonce.clone(),
        event_id: event_id.to_string(),
        event_name: event.name.clone(),
        venue: event.venue.clone(),
        starts_at: event.starts_at.format("%A %e %B %Y, %H:%M UTC").to_string(),
        opens_at: event.sale_opens_at.format("%e %B %Y, %H:%M:%S UTC").to_string(),
        presale_ahead,
        // A code kept from a presale now over changes nothing here.
        has_code: has_code && presale_ahead,
        presale_opens_at: presale_opens_at.map(|at| at.format("%e %B %Y, %H:%M:%S UTC").to_string()).unwrap_or_default(),
    };
    render(&page, &nonce)
}
