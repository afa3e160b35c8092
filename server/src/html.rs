//! What the plain-HTML (askama) pages share: the signed-in user or a
//! redirect to sign in, and the not-found and error pages.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use frontrow_model::User;
use tower_sessions::Session;

use crate::state::AppState;

pub fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Html("<!DOCTYPE html><html lang=\"en\"><title>Not found</title><h1>Not found</h1><p><a href=\"/\">frontrow</a></p></html>"))
        .into_response()
}

pub fn failure(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "page failed");
    (StatusCode::INTERNAL_SERVER_ERROR, Html("<!DOCTYPE html><html lang=\"en\"><title>Error</title><h1>Something went wrong</h1></html>"))
        .into_response()
}

/// The signed-in user; anyone else is sent to sign in and come back to `here`.
pub async fn signed_in(state: &AppState, session: &Session, here: &str) -> Result<User, Response> {
    match frontrow_app::session::current_user(session, &state.engine).await {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(Redirect::to(&format!("/signin?next={here}")).into_response()),
        Err(e) => Err(failure(e)),
    }
}

/// Renders an askama page.
pub fn render(page: &impl askama::Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => failure(e),
    }
}
