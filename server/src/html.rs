//! What the plain-HTML (askama) pages share: the signed-in user or a
//! redirect to sign in, and the not-found and error pages.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use frontrow_model::User;
use tower_sessions::Session;

use crate::state::AppState;

pub fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Html("<!DOCTYPE html><html lang=\"en\"><title>Not found</title><h1>Not found</h1><p><a href=\"/\">frontrow</a></p></html>"),
    )
        .into_response()
}

pub fn failure(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "page failed");
    (StatusCode::INTERNAL_SERVER_ERROR, Html("<!DOCTYPE html><html lang=\"en\"><title>Error</title><h1>Something went wrong</h1></html>"))
        .into_response()
}

/// The page for a database that is away: try again shortly.
pub fn unavailable() -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        Html(
            "<!DOCTYPE html><html lang=\"en\"><title>Busy</title><h1>We cannot answer right now</h1><p>Please try again in a few seconds.</p></html>",
        ),
    )
        .into_response();
    response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("5"));
    response
}

/// The signed-in user; anyone else is sent to sign in and come back to
/// `here` (a path this server built from parsed ids).
pub async fn signed_in(state: &AppState, session: &Session, here: &str) -> Result<User, Response> {
    match frontrow_session::current_user(session, &state.engine).await {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(Redirect::to(&frontrow_app::links::safe_next(Some(format!("/signin?next={here}")))).into_response()),
        Err(e) if e.status() == 503 => Err(unavailable()),
        Err(e) => Err(failure(e)),
    }
}

/// Renders an askama page whose inline script and style carry `nonce`,
/// with the policy that allows them and nothing else inline.
pub fn render(page: &impl askama::Template, nonce: &str) -> Response {
    match page.render() {
        Ok(html) => {
            let mut response = Html(html).into_response();
            if let Ok(policy) = axum::http::HeaderValue::from_str(&frontrow_app::server::content_security_policy(nonce)) {
                response.headers_mut().insert(axum::http::header::CONTENT_SECURITY_POLICY, policy);
            }
            response
        }
        Err(e) => failure(e),
    }
}
