//! The JSON API (`/api/v1`), its OpenAPI document, and the middleware that
//! applies to every call (CSRF, rate limits, metrics).

pub mod admin;
pub mod auth;
pub mod catalogue;
pub mod error;
pub mod extract;
pub mod holds;
pub mod live;
pub mod ops;
pub mod queue;

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use governor::clock::{Clock, DefaultClock};
use utoipa::OpenApi;

use crate::state::AppState;
use error::ApiError;

pub const SESSION_COOKIE: &str = "frontrow_session";

#[derive(OpenApi)]
#[openapi(
    info(title = "frontrow API", version = "1", description = "Ticketing for flash on-sales. Money is integer cents; times are RFC 3339 UTC."),
    paths(
        auth::signup, auth::login, auth::logout, auth::me, auth::my_bookings,
        catalogue::list_events, catalogue::event_detail, catalogue::seats, live::live,
        holds::create_hold, holds::hold_best, holds::get_hold, holds::release_hold, holds::checkout, holds::get_checkout, holds::get_booking,
        admin::create_event, admin::audit_event, queue::join, queue::status, queue::stats, queue::configure,
        ops::healthz, ops::readyz, ops::metrics,
    )
)]
pub struct ApiDoc;

async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub fn router(state: AppState) -> Router<AppState> {
    // Calls that cost the server real work per request are rate limited per client.
    let limited = Router::new()
        .route("/api/v1/auth/signup", post(auth::signup))
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/events/{event_id}/holds", post(holds::create_hold))
        .route("/api/v1/events/{event_id}/holds/best", post(holds::hold_best))
        .route("/api/v1/holds/{hold_id}/checkout", post(holds::checkout))
        .route("/api/v1/events/{event_id}/queue", post(queue::join))
        .route("/api/v1/events/{event_id}/queue/{queue_token}", get(queue::status))
        .route_layer(middleware::from_fn_with_state(state.clone(), rate_limit));

    Router::new()
        .merge(limited)
        .route("/api/v1/auth/logout", post(auth::logout))
        .route("/api/v1/me", get(auth::me))
        .route("/api/v1/me/bookings", get(auth::my_bookings))
        .route("/api/v1/events", get(catalogue::list_events))
        .route("/api/v1/events/{event_id}", get(catalogue::event_detail))
        .route("/api/v1/events/{event_id}/seats", get(catalogue::seats))
        .route("/api/v1/events/{event_id}/live", get(live::live))
        .route("/api/v1/events/{event_id}/queue/{queue_token}/live", get(queue::live))
        .route("/api/v1/holds/{hold_id}", get(holds::get_hold).delete(holds::release_hold))
        .route("/api/v1/checkouts/{checkout_id}", get(holds::get_checkout))
        .route("/api/v1/bookings/{booking_id}", get(holds::get_booking))
        .route("/api/v1/admin/events", post(admin::create_event))
        .route("/api/v1/admin/events/{event_id}/audit", get(admin::audit_event))
        .route("/api/v1/admin/events/{event_id}/waiting-room", get(queue::stats).patch(queue::configure))
        .route("/api/openapi.json", get(openapi_json))
        .route("/api/{*rest}", axum::routing::any(|| async { ApiError::not_found() }))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        // Registered last: applies to every route above.
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this path does not accept that method")
        })
}

/// Per-client-address token bucket; 429 with Retry-After when empty.
async fn rate_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(limiter) = &state.rate_limiter {
        let ip = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        if let Some(ip) = ip {
            if let Err(not_until) = limiter.check_key(&ip) {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                return ApiError::rate_limited(wait.as_secs() + 1).into_response();
            }
        }
    }
    next.run(request).await
}

/// A state-changing request that carries our session cookie from a page of
/// another site is refused. Requests without Origin (non-browser clients)
/// pass, as the contract says.
pub async fn csrf_guard(request: Request, next: Next) -> Response {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && has_session_cookie(&request) {
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
            let origin_host = origin
                .to_str()
                .ok()
                .and_then(|o| o.split_once("://"))
                .map(|(_, rest)| rest.trim_end_matches('/'));
            if host.is_none() || origin_host != host {
                return ApiError::new(StatusCode::FORBIDDEN, "csrf", "cross-site request refused").into_response();
            }
        }
    }
    next.run(request).await
}

fn has_session_cookie(request: &Request) -> bool {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|c| c.trim_start().starts_with(SESSION_COOKIE))
}

/// Request count and latency per route and status.
pub async fn track_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("frontrow_http_requests_total", &labels).increment(1);
    metrics::histogram!("frontrow_http_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    response
}
