//! The box office over JSON: thin adapters over the engine's staff
//! commands (the staff pages call the same ones through server functions).
//! Fans get 403 `forbidden`, anonymous callers 401.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use frontrow_model::{
    AuditReport, BlockRequest, Blocked, Booking, BookingMail, CheckinRequest, CheckinResult, CounterSaleRequest, CreatedEvent, Event, EventChanges,
    EventStats, Layout, NewEvent, NewLayout, NewStaffUser, PaymentAttention, ReasonBody, RefundRequest, RefundResult, Released, StaffAccount,
    StaffBookingLine, StaffEventLine, UnblockRequest, User, UserChanges,
};
use frontrow_model::{BookingId, EventId, HoldId, LayoutId, LogEntry, LogFilter, PaymentId, UserId};
use frontrow_model::{PaymentInfo, SalesBy};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, AppError};
use super::extract::{AdminUser, ApiJson, ApiQuery, IdPath, KeyHeader, StaffUser};
use crate::state::AppState;

#[derive(Debug, Serialize, ToSchema)]
pub struct StaffEventList {
    pub events: Vec<StaffEventLine>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BookingSearch {
    pub bookings: Vec<StaffBookingLine>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentList {
    pub payments: Vec<PaymentAttention>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LogList {
    pub entries: Vec<LogEntry>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LayoutList {
    pub layouts: Vec<Layout>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountList {
    pub users: Vec<StaffAccount>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Cancelled {
    /// Always `cancelled`.
    pub status: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Resent {
    pub sent_to: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BookingMails {
    pub mails: Vec<BookingMail>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BookingQuery {
    /// Only this event's bookings.
    pub event_id: Option<EventId>,
    /// A booking id (or its first characters), an email, or a seat id.
    #[param(max_length = 254)]
    pub q: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PaymentsQuery {
    /// Payments a person should look at (the one listing there is).
    #[param(inline)]
    pub state: Option<PaymentsState>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PaymentsState {
    Attention,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    #[param(inline)]
    pub by: SalesBy,
}

pub(super) fn csv(filename: String, body: String) -> Response {
    (
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()), (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{filename}\""))],
        body,
    )
        .into_response()
}

/// Creates an event. Besides the schema, rules between fields (422
/// `invalid_input` names the one broken): tiers, sections and a section's
/// rows are each listed once; every row's and standing area's tier is one of
/// `tiers`; a row's `aisles_after`, `wheelchair` and `companion` are seat
/// numbers of that row, and no seat is both wheelchair and companion; at
/// most 100,000 seats and standing places; `sections` or `layout_id`, not
/// both; ticket types are named once each, priced only in `tiers`, each
/// tier once, and (if there are any) every tier is sold by one. A
/// `layout_id` that does not exist is 404.
#[utoipa::path(post, path = "/api/v1/admin/events", request_body = NewEvent, security(("session" = [])),
    responses((status = 201, body = CreatedEvent)))]
pub async fn create_event(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiJson(body): ApiJson<NewEvent>,
) -> ApiResult<(StatusCode, Json<CreatedEvent>)> {
    let created = state.engine.create_event(&body, Some(staff.user_id)).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/v1/admin/events", security(("session" = [])), responses((status = 200, body = StaffEventList)))]
pub async fn list_events(State(state): State<AppState>, StaffUser(_): StaffUser) -> ApiResult<Json<StaffEventList>> {
    Ok(Json(StaffEventList { events: state.engine.staff_events().await? }))
}

/// Changes an event. Beyond the schema, 422 also answers ticket types
/// priced in a tier the event does not have, or leaving one of its tiers
/// unsold (when there are types), and doors after the start.
#[utoipa::path(patch, path = "/api/v1/admin/events/{event_id}", params(("event_id" = Uuid, Path)), request_body = EventChanges,
    security(("session" = [])), responses((status = 200, body = Event), (status = 409, description = "event_cancelled", body = AppError)))]
pub async fn update_event(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(changes): ApiJson<EventChanges>,
) -> ApiResult<Json<Event>> {
    Ok(Json(state.engine.update_event(staff.user_id, event_id, &changes).await?))
}

#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/cancel", params(("event_id" = Uuid, Path)), request_body = ReasonBody,
    security(("session" = [])), responses((status = 202, body = Cancelled)))]
pub async fn cancel_event(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<ReasonBody>,
) -> ApiResult<(StatusCode, Json<Cancelled>)> {
    state.engine.cancel_event(&staff, event_id, &body.reason).await?;
    Ok((StatusCode::ACCEPTED, Json(Cancelled { status: "cancelled".into() })))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/audit", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = AuditReport)))]
pub async fn audit_event(State(state): State<AppState>, StaffUser(_): StaffUser, IdPath(event_id): IdPath<EventId>) -> ApiResult<Json<AuditReport>> {
    // 404 for an unknown event rather than an all-zero report.
    state.engine.event(event_id).await?;
    Ok(Json(state.engine.audit(Some(event_id)).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/stats", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = EventStats)))]
pub async fn event_stats(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
) -> ApiResult<Json<EventStats>> {
    Ok(Json(state.engine.event_stats(&staff, event_id).await?))
}

#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/blocks", params(("event_id" = Uuid, Path)), request_body = BlockRequest,
    security(("session" = [])), responses((status = 200, body = Blocked), (status = 409, description = "seats_unavailable", body = AppError)))]
pub async fn block_seats(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<BlockRequest>,
) -> ApiResult<Json<Blocked>> {
    Ok(Json(Blocked { blocked: state.engine.block_seats(&staff, event_id, &body.seat_ids, &body.reason).await? }))
}

#[utoipa::path(delete, path = "/api/v1/admin/events/{event_id}/blocks", params(("event_id" = Uuid, Path)), request_body = UnblockRequest,
    security(("session" = [])), responses((status = 200, body = Released), (status = 409, description = "seats_unavailable", body = AppError)))]
pub async fn unblock_seats(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(body): ApiJson<UnblockRequest>,
) -> ApiResult<Json<Released>> {
    Ok(Json(Released { released: state.engine.unblock_seats(&staff, event_id, &body.seat_ids).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/holds/{hold_id}/release", params(("hold_id" = Uuid, Path)), request_body = ReasonBody,
    security(("session" = [])), responses((status = 200, body = Released), (status = 409, description = "checkout_in_progress", body = AppError),
                                          (status = 410, description = "hold_expired", body = AppError)))]
pub async fn release_hold(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(hold_id): IdPath<HoldId>,
    ApiJson(body): ApiJson<ReasonBody>,
) -> ApiResult<Json<Released>> {
    Ok(Json(Released { released: state.engine.release_hold_for_staff(&staff, hold_id, &body.reason).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/events/{event_id}/counter-sales", params(("event_id" = Uuid, Path), ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    request_body = CounterSaleRequest, security(("session" = [])),
    responses((status = 201, body = Booking), (status = 202, description = "payment_pending: follow GET /api/v1/checkouts/{checkout_id}"),
              (status = 402, description = "payment_declined", body = AppError), (status = 409, description = "seats_unavailable", body = AppError)))]
pub async fn counter_sale(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    KeyHeader(key): KeyHeader,
    ApiJson(body): ApiJson<CounterSaleRequest>,
) -> ApiResult<Response> {
    Ok(match state.engine.counter_sale(&staff, event_id, &body, &key).await?.into_answer()? {
        frontrow_model::CheckoutAnswer::Confirmed { booking } => (StatusCode::CREATED, Json(booking)).into_response(),
        frontrow_model::CheckoutAnswer::PaymentPending { checkout_id } => {
            (StatusCode::ACCEPTED, Json(serde_json::json!({ "checkout_id": checkout_id, "status": "payment_pending" }))).into_response()
        }
    })
}

#[utoipa::path(get, path = "/api/v1/admin/bookings", params(BookingQuery), security(("session" = [])),
    responses((status = 200, body = BookingSearch)))]
pub async fn find_bookings(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiQuery(q): ApiQuery<BookingQuery>,
) -> ApiResult<Json<BookingSearch>> {
    Ok(Json(BookingSearch { bookings: state.engine.find_bookings(&staff, q.event_id, q.q.as_deref()).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/bookings/{booking_id}/refund", params(("booking_id" = Uuid, Path), ("Idempotency-Key" = String, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$")),
    request_body = RefundRequest, security(("session" = [])),
    responses((status = 200, body = RefundResult), (status = 409, description = "already_refunded or ticket_used", body = AppError)))]
pub async fn refund_booking(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(booking_id): IdPath<BookingId>,
    KeyHeader(key): KeyHeader,
    ApiJson(body): ApiJson<RefundRequest>,
) -> ApiResult<Json<RefundResult>> {
    Ok(Json(state.engine.refund_booking(&staff, booking_id, &body, &key).await?))
}

#[utoipa::path(post, path = "/api/v1/admin/bookings/{booking_id}/resend", params(("booking_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 202, body = Resent)))]
pub async fn resend_tickets(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(booking_id): IdPath<BookingId>,
) -> ApiResult<(StatusCode, Json<Resent>)> {
    let site = state.settings.site_url();
    let sent_to = state.engine.resend_tickets(&staff, booking_id, &site).await?;
    Ok((StatusCode::ACCEPTED, Json(Resent { sent_to })))
}

/// The mails about a booking (its tickets, refunds, a cancellation) and
/// where each stands: queued, sent, or failed after its retries.
#[utoipa::path(get, path = "/api/v1/admin/bookings/{booking_id}/mails", params(("booking_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = BookingMails)))]
pub async fn booking_mails(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(booking_id): IdPath<BookingId>,
) -> ApiResult<Json<BookingMails>> {
    Ok(Json(BookingMails { mails: state.engine.booking_mails(&staff, booking_id).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/checkins", request_body = CheckinRequest, security(("session" = [])),
    responses((status = 200, body = CheckinResult),
              (status = 409, description = "already_checked_in (with checked_in_at), ticket_refunded, wrong_event, or event_cancelled (its refunds not yet done)", body = AppError),
              (status = 404, description = "unknown_ticket", body = AppError)))]
pub async fn check_in(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiJson(body): ApiJson<CheckinRequest>,
) -> ApiResult<Json<CheckinResult>> {
    Ok(Json(state.engine.check_in(&staff, &body.code, body.event_id).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/payments", params(PaymentsQuery), security(("session" = [])),
    responses((status = 200, body = PaymentList)))]
pub async fn payments(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiQuery(q): ApiQuery<PaymentsQuery>,
) -> ApiResult<Json<PaymentList>> {
    // `state` has one value; anything else was refused when parsing.
    let _ = q.state;
    Ok(Json(PaymentList { payments: state.engine.payments_needing_attention(&staff).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/payments/{payment_id}/settle", params(("payment_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = PaymentInfo)))]
pub async fn settle_payment(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(payment_id): IdPath<PaymentId>,
) -> ApiResult<Json<PaymentInfo>> {
    Ok(Json(state.engine.settle_payment(&staff, payment_id).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/log", params(("event_id" = Uuid, Path), LogFilter), security(("session" = [])),
    responses((status = 200, body = LogList)))]
pub async fn change_log(
    State(state): State<AppState>,
    StaffUser(_): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(filter): ApiQuery<LogFilter>,
) -> ApiResult<Json<LogList>> {
    state.engine.event(event_id).await?;
    Ok(Json(LogList { entries: state.engine.change_log(event_id, &filter).await? }))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/log.csv", params(("event_id" = Uuid, Path), LogFilter), security(("session" = [])),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn change_log_csv(
    State(state): State<AppState>,
    StaffUser(_): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(filter): ApiQuery<LogFilter>,
) -> ApiResult<Response> {
    state.engine.event(event_id).await?;
    let entries = state.engine.change_log(event_id, &filter).await?;
    Ok(csv(format!("log-{event_id}.csv"), frontrow_engine::changelog::log_csv(&entries)))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/sales.csv", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn sales_csv(State(state): State<AppState>, StaffUser(staff): StaffUser, IdPath(event_id): IdPath<EventId>) -> ApiResult<Response> {
    Ok(csv(format!("sales-{event_id}.csv"), state.engine.sales_csv(&staff, event_id).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/sales-summary.csv", params(("event_id" = Uuid, Path), SummaryQuery),
    security(("session" = [])), responses((status = 200, content_type = "text/csv", body = String)))]
pub async fn sales_summary_csv(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(q): ApiQuery<SummaryQuery>,
) -> ApiResult<Response> {
    Ok(csv(format!("sales-by-{event_id}.csv"), state.engine.sales_summary_csv(&staff, event_id, q.by).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/layouts", security(("session" = [])), responses((status = 200, body = LayoutList)))]
pub async fn list_layouts(State(state): State<AppState>, StaffUser(_): StaffUser) -> ApiResult<Json<LayoutList>> {
    Ok(Json(LayoutList { layouts: state.engine.layouts().await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/layouts", request_body = NewLayout, security(("session" = [])),
    responses((status = 201, body = Layout)))]
pub async fn save_layout(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    ApiJson(body): ApiJson<NewLayout>,
) -> ApiResult<(StatusCode, Json<Layout>)> {
    Ok((StatusCode::CREATED, Json(state.engine.save_layout(&staff, &body).await?)))
}

/// A saved layout, as JSON to import elsewhere.
#[utoipa::path(get, path = "/api/v1/admin/layouts/{layout_id}", params(("layout_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = Layout)))]
pub async fn get_layout(State(state): State<AppState>, StaffUser(_): StaffUser, IdPath(layout_id): IdPath<LayoutId>) -> ApiResult<Json<Layout>> {
    Ok(Json(state.engine.layout(layout_id).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/users", security(("session" = [])), responses((status = 200, body = AccountList)))]
pub async fn list_users(State(state): State<AppState>, AdminUser(admin): AdminUser) -> ApiResult<Json<AccountList>> {
    Ok(Json(AccountList { users: state.engine.staff_accounts(&admin).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/users", request_body = NewStaffUser, security(("session" = [])),
    responses((status = 201, body = User), (status = 409, description = "email_taken", body = AppError)))]
pub async fn create_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    ApiJson(body): ApiJson<NewStaffUser>,
) -> ApiResult<(StatusCode, Json<User>)> {
    Ok((StatusCode::CREATED, Json(state.engine.create_account(&admin, &body).await?)))
}

#[utoipa::path(patch, path = "/api/v1/admin/users/{user_id}", params(("user_id" = Uuid, Path)), request_body = UserChanges,
    security(("session" = [])), responses((status = 200, body = StaffAccount)))]
pub async fn change_user(
    State(state): State<AppState>,
    AdminUser(admin): AdminUser,
    IdPath(user_id): IdPath<UserId>,
    ApiJson(body): ApiJson<UserChanges>,
) -> ApiResult<Json<StaffAccount>> {
    Ok(Json(state.engine.change_account(&admin, user_id, &body).await?))
}
