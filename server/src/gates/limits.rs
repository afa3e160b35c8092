//! Rate limits per client: a token bucket per address (an IPv6 /64) for
//! the JSON API and the server functions that cost real work, a far smaller
//! one where accounts are made and passwords tried, and the client's
//! address recorded for the handlers that count by it (sign-in).

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};

use crate::api::error::AppError;
use crate::state::AppState;

/// Where accounts are made and passwords tried, by the JSON API or a page.
fn is_account_path(path: &str) -> bool {
    matches!(path, "/api/v1/auth/signup" | "/api/v1/auth/login" | "/api/v1/me/email-code" | "/api/v1/me/email-code/confirm")
        || frontrow_app::actions::account_paths().contains(&path)
}

/// Per-client token bucket (an address, an IPv6 /64); 429 with
/// Retry-After when empty. Sign-ups and sign-ins also draw on a far
/// smaller bucket of their own.
pub async fn rate_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let ip = super::clients::request_key(request.extensions(), request.headers(), &state.settings.trusted_proxies);
    if let Some(ip) = ip {
        let account_limiter = state.account_limiter.as_ref().filter(|_| is_account_path(request.uri().path()));
        for limiter in state.rate_limiter.iter().chain(account_limiter) {
            if let Err(not_until) = limiter.check_key(&ip) {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                return AppError::rate_limited(wait.as_secs() + 1).into_response();
            }
        }
    }
    next.run(request).await
}

/// Records who is asking (see `clients`) for the handlers that count by
/// address, such as sign-in.
pub async fn client_address(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if let Some(ip) = super::clients::request_key(request.extensions(), request.headers(), &state.settings.trusted_proxies) {
        request.extensions_mut().insert(frontrow_engine::accounts::sign_in::ClientAddress(ip));
    }
    next.run(request).await
}

/// The same per-address limit for the server functions that cost real work
/// (their routes are registered by Leptos, so they are picked by path).
pub async fn rate_limit_server_fns(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if frontrow_app::actions::rate_limited_paths().contains(&request.uri().path()) {
        return rate_limit(State(state), request, next).await;
    }
    next.run(request).await
}
