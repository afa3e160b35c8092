//! The JSON API (`/api/v1`), a thin adapter over the engine for other
//! clients; its OpenAPI document; and the gates every call passes, the
//! Leptos server functions' included (CSRF, rate limits, metrics).

pub mod admin;
pub mod auth;
pub mod catalogue;
pub mod error;
pub mod extract;
pub mod holds;
pub mod live;
pub mod ops;
pub mod presale;
pub mod queue;
pub mod waitlist;

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{header, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{RefOr, Response as OpenApiResponse, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::state::AppState;
use error::{AppError, ErrorKind};

pub const SESSION_COOKIE: &str = "frontrow_session";

#[derive(OpenApi)]
#[openapi(
    info(title = "frontrow API", version = "1", description = "Ticketing for flash on-sales. Money is integer cents; times are RFC 3339 UTC. \
        Every error is an AppError: {\"error\": code, \"message\": text, ...}."),
    paths(
        auth::signup, auth::login, auth::logout, auth::me, auth::my_bookings, auth::send_email_code, auth::confirm_email_code,
        catalogue::list_events, catalogue::event_detail, catalogue::seats, live::live,
        holds::create_hold, holds::hold_best, holds::hold_places, holds::get_hold, holds::release_hold, holds::checkout, holds::get_checkout, holds::get_booking, holds::cancel_tickets,
        admin::create_event, admin::list_events, admin::update_event, admin::cancel_event, admin::audit_event, admin::event_stats,
        admin::block_seats, admin::unblock_seats, admin::release_hold, admin::counter_sale, admin::find_bookings,
        admin::refund_booking, admin::resend_tickets, admin::booking_mails, admin::check_in, admin::payments, admin::settle_payment,
        admin::change_log, admin::change_log_csv, admin::sales_csv, admin::sales_summary_csv,
        admin::list_layouts, admin::save_layout, admin::get_layout, admin::list_users, admin::create_user, admin::change_user,
        queue::join, queue::status, queue::stats, queue::configure,
        presale::enter_code, presale::create_codes, presale::list_codes, presale::codes_csv, presale::revoke_codes,
        waitlist::join, waitlist::mine, waitlist::leave, waitlist::all_mine, waitlist::list, waitlist::configure, waitlist::offer,
        ops::healthz, ops::readyz, ops::metrics,
    ),
    components(schemas(AppError)),
    modifiers(&TheWholeTruth)
)]
pub struct ApiDoc;

/// Adds to every operation the answers the gates in front of it can give,
/// and the session cookie as the security scheme, so the document lists
/// every status a route can really answer.
struct TheWholeTruth;

impl Modify for TheWholeTruth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme("session", SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(SESSION_COOKIE))));
        section_is_rows_or_standing(components);
        lists_name_each_once(components);
        let error = |what: &str| -> RefOr<OpenApiResponse> {
            ResponseBuilder::new()
                .description(what)
                .content(
                    "application/json",
                    utoipa::openapi::ContentBuilder::new().schema(Some(utoipa::openapi::Ref::from_schema_name("AppError"))).build(),
                )
                .into()
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations = [
                (Method::GET, item.get.as_mut()),
                (Method::POST, item.post.as_mut()),
                (Method::PATCH, item.patch.as_mut()),
                (Method::DELETE, item.delete.as_mut()),
                (Method::PUT, item.put.as_mut()),
            ];
            for (method, op) in operations {
                let Some(op) = op else { continue };
                let secured = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let has_body = op.request_body.is_some();
                let responses = &mut op.responses.responses;
                let mut add = |status: &str, what: &str| {
                    responses.entry(status.to_owned()).or_insert_with(|| error(what));
                };
                if path.starts_with("/api/") {
                    add("400", "bad_request or invalid_json");
                    add("404", "not_found");
                    add("422", "invalid_input");
                    add("429", "rate_limited (with Retry-After)");
                    add("500", "internal (the x-request-id header finds it in the log)");
                    if crate::gates::shed::Work::of(&method, Some(path.as_str()), path).is_some() {
                        add("503", "unavailable: the database is down; or overloaded: more of this work in flight than the server takes on, nothing done (both with Retry-After)");
                    } else {
                        add("503", "unavailable: the database is down; try again shortly (with Retry-After)");
                    }
                    if method != Method::GET {
                        add("403", "csrf (or forbidden)");
                        add("413", "payload_too_large");
                    }
                    if has_body {
                        add("415", "unsupported_media_type");
                    }
                    if secured {
                        add("401", "unauthenticated");
                        add("403", "forbidden or csrf");
                    }
                }
            }
        }
    }
}

/// A row's seat lists and a presale's tiers and sections name each one
/// once (the engine refuses a repeat), which utoipa's field attributes
/// cannot say.
fn lists_name_each_once(components: &mut utoipa::openapi::Components) {
    use utoipa::openapi::schema::Schema;
    for (schema, fields) in [("NewRow", &["aisles_after", "wheelchair", "companion"][..]), ("NewAccessCodes", &["tiers", "sections"][..])] {
        let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(schema) else { continue };
        for field in fields {
            if let Some(RefOr::T(Schema::Array(list))) = object.properties.get_mut(*field) {
                list.unique_items = true;
            }
        }
    }
}

/// A section has rows (1 to 500) or is a standing area (with no rows): a
/// rule between two fields, which the derived schema cannot say alone.
fn section_is_rows_or_standing(components: &mut utoipa::openapi::Components) {
    use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, Type};
    let Some(RefOr::T(section)) = components.schemas.get_mut("NewSection") else { return };
    let seated = ObjectBuilder::new()
        .required("rows")
        .property("rows", ArrayBuilder::new().min_items(Some(1)))
        .property("standing", ObjectBuilder::new().schema_type(Type::Null));
    let standing = ObjectBuilder::new()
        .required("standing")
        .property("standing", ObjectBuilder::new().schema_type(Type::Object))
        .property("rows", ArrayBuilder::new().max_items(Some(0)));
    let derived = std::mem::replace(section, Schema::default());
    *section = AllOfBuilder::new()
        .item(derived)
        .item(AnyOfBuilder::new().item(seated).item(standing).description(Some("rows, or a standing area with none")))
        .into();
}

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
        .route("/api/v1/events/{event_id}/holds/standing", post(holds::hold_places))
        .route("/api/v1/holds/{hold_id}/checkout", post(holds::checkout))
        .route("/api/v1/bookings/{booking_id}/cancel", post(holds::cancel_tickets))
        .route("/api/v1/events/{event_id}/queue", post(queue::join))
        .route("/api/v1/events/{event_id}/presale-code", post(presale::enter_code))
        .route("/api/v1/events/{event_id}/waitlist", post(waitlist::join))
        .route("/api/v1/events/{event_id}/queue/{queue_token}", get(queue::status))
        .route("/api/v1/me/email-code", post(auth::send_email_code))
        .route("/api/v1/me/email-code/confirm", post(auth::confirm_email_code))
        .route_layer(middleware::from_fn_with_state(state.clone(), crate::gates::limits::rate_limit));

    Router::new()
        .merge(limited)
        .route("/api/v1/auth/logout", post(auth::logout))
        .route("/api/v1/me", get(auth::me))
        .route("/api/v1/me/bookings", get(auth::my_bookings))
        .route("/api/v1/me/waitlist", get(waitlist::all_mine))
        .route("/api/v1/events/{event_id}/waitlist", get(waitlist::mine).delete(waitlist::leave))
        .route("/api/v1/events", get(catalogue::list_events))
        .route("/api/v1/events/{event_id}", get(catalogue::event_detail))
        .route("/api/v1/events/{event_id}/seats", get(catalogue::seats))
        .route("/api/v1/events/{event_id}/live", get(live::live))
        .route("/api/v1/events/{event_id}/queue/{queue_token}/live", get(queue::live))
        .route("/api/v1/holds/{hold_id}", get(holds::get_hold).delete(holds::release_hold))
        .route("/api/v1/checkouts/{checkout_id}", get(holds::get_checkout))
        .route("/api/v1/bookings/{booking_id}", get(holds::get_booking))
        .route("/api/v1/admin/events", post(admin::create_event).get(admin::list_events))
        .route("/api/v1/admin/events/{event_id}", axum::routing::patch(admin::update_event))
        .route("/api/v1/admin/events/{event_id}/cancel", post(admin::cancel_event))
        .route("/api/v1/admin/events/{event_id}/audit", get(admin::audit_event))
        .route("/api/v1/admin/events/{event_id}/stats", get(admin::event_stats))
        .route("/api/v1/admin/events/{event_id}/blocks", post(admin::block_seats).delete(admin::unblock_seats))
        .route("/api/v1/admin/events/{event_id}/counter-sales", post(admin::counter_sale))
        .route("/api/v1/admin/events/{event_id}/log", get(admin::change_log))
        .route("/api/v1/admin/events/{event_id}/log.csv", get(admin::change_log_csv))
        .route("/api/v1/admin/events/{event_id}/sales.csv", get(admin::sales_csv))
        .route("/api/v1/admin/events/{event_id}/sales-summary.csv", get(admin::sales_summary_csv))
        .route("/api/v1/admin/holds/{hold_id}/release", post(admin::release_hold))
        .route("/api/v1/admin/bookings", get(admin::find_bookings))
        .route("/api/v1/admin/bookings/{booking_id}/refund", post(admin::refund_booking))
        .route("/api/v1/admin/bookings/{booking_id}/resend", post(admin::resend_tickets))
        .route("/api/v1/admin/bookings/{booking_id}/mails", get(admin::booking_mails))
        .route("/api/v1/admin/checkins", post(admin::check_in))
        .route("/api/v1/admin/payments", get(admin::payments))
        .route("/api/v1/admin/payments/{payment_id}/settle", post(admin::settle_payment))
        .route("/api/v1/admin/layouts", get(admin::list_layouts).post(admin::save_layout))
        .route("/api/v1/admin/layouts/{layout_id}", get(admin::get_layout))
        .route("/api/v1/admin/users", get(admin::list_users).post(admin::create_user))
        .route("/api/v1/admin/users/{user_id}", axum::routing::patch(admin::change_user))
        .route("/api/v1/admin/events/{event_id}/access-codes", post(presale::create_codes).get(presale::list_codes))
        .route("/api/v1/admin/events/{event_id}/access-codes/{batch_id}/codes.csv", get(presale::codes_csv))
        .route("/api/v1/admin/events/{event_id}/access-codes/{batch_id}/revoke", post(presale::revoke_codes))
        .route("/api/v1/admin/events/{event_id}/waitlist", get(waitlist::list).patch(waitlist::configure))
        .route("/api/v1/admin/events/{event_id}/waitlist/offers", post(waitlist::offer))
        .route("/api/v1/admin/events/{event_id}/waiting-room", get(queue::stats).patch(queue::configure))
        .route("/api/openapi.json", get(openapi_json))
        .route("/api/{*rest}", axum::routing::any(|| async { AppError::not_found() }))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        // Registered last: applies to every route above.
        .method_not_allowed_fallback(|| async { AppError::new(ErrorKind::MethodNotAllowed, "this path does not accept that method") })
}

/// A server function that failed answers its `AppError`; this gives the
/// response that error's status (server functions answer 500 otherwise), so
/// the JSON API and the server functions agree on what a failure is.
pub async fn server_fn_status(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    // Only the plain 500 a failed call gets; a form post's redirect back to
    // its page (the error in the URL) stays a redirect.
    if response.status() != axum::http::StatusCode::INTERNAL_SERVER_ERROR || !response.headers().contains_key("serverfnerror") {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return AppError::internal().into_response();
    };
    if let Ok(error) = serde_json::from_slice::<AppError>(&bytes) {
        if let Ok(status) = axum::http::StatusCode::from_u16(error.status()) {
            parts.status = status;
        }
        // The wait, as the JSON API says it.
        if let ErrorKind::RateLimited { retry_after } = error.kind {
            parts.headers.insert(header::RETRY_AFTER, axum::http::HeaderValue::from(retry_after));
        }
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// Request count and latency per route and status.
pub async fn track_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("frontrow_http_requests_total", &labels).increment(1);
    metrics::histogram!("frontrow_http_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    response
}
