//! Accounts: sign up, sign in (rotating the session id), sign out, me.

use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use frontrow_engine::accounts::NewUser;
use frontrow_model::{Booking, Role, User};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;
use utoipa::ToSchema;

use super::error::{ApiResult, AppError};
use super::extract::{ApiJson, CurrentUser};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignupBody {
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
    /// Not blank.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    #[schema(max_length = 254)]
    pub email: String,
    #[schema(max_length = 4096)]
    pub password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BookingList {
    pub bookings: Vec<Booking>,
}

#[utoipa::path(post, path = "/api/v1/auth/signup", request_body = SignupBody,
    responses((status = 201, body = User), (status = 409, description = "email_taken")))]
pub async fn signup(State(state): State<AppState>, session: Session, ApiJson(body): ApiJson<SignupBody>) -> ApiResult<(StatusCode, Json<User>)> {
    let user = state.engine.create_user(NewUser { email: &body.email, password: &body.password, name: &body.name, role: Role::Fan }).await?;
    frontrow_session::sign_in(&session, &state.engine, &user).await?;
    Ok((StatusCode::CREATED, Json(user)))
}

#[utoipa::path(post, path = "/api/v1/auth/login", request_body = LoginBody,
    responses((status = 200, body = User), (status = 401, description = "invalid_credentials")))]
pub async fn login(
    State(state): State<AppState>,
    session: Session,
    request: Parts,
    ApiJson(body): ApiJson<LoginBody>,
) -> ApiResult<impl IntoResponse> {
    let secure = state.settings.secure_cookies();
    let (user, cookie) = frontrow_session::sign_in_with_password(&session, &state.engine, &body.email, &body.password, &request, secure).await?;
    Ok(([(header::SET_COOKIE, cookie)], Json(user)))
}

#[utoipa::path(post, path = "/api/v1/auth/logout", responses((status = 204)))]
pub async fn logout(State(state): State<AppState>, session: Session) -> ApiResult<StatusCode> {
    frontrow_session::sign_out(&session, &state.engine).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/me", security(("session" = [])), responses((status = 200, body = User)))]
pub async fn me(CurrentUser(user): CurrentUser) -> Json<User> {
    Json(user)
}

#[utoipa::path(get, path = "/api/v1/me/bookings", security(("session" = [])), responses((status = 200, body = BookingList)))]
pub async fn my_bookings(State(state): State<AppState>, CurrentUser(user): CurrentUser) -> ApiResult<Json<BookingList>> {
    Ok(Json(BookingList { bookings: state.engine.bookings_of(user.user_id).await? }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmailCodeSent {
    /// False when the address was verified already (no code is sent).
    pub sent: bool,
    pub email: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailCodeBody {
    /// The six digits from the email.
    #[schema(pattern = "^[0-9]{6}$", min_length = 6, max_length = 6)]
    pub code: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EmailVerified {
    pub verified: bool,
}

/// Mails the signed-in fan a one-time code to verify their address (some
/// waiting rooms ask for it). At most one code every 30 s.
#[utoipa::path(post, path = "/api/v1/me/email-code", security(("session" = [])),
    responses((status = 202, body = EmailCodeSent), (status = 429, description = "a code was sent moments ago"),
              (status = 503, description = "unavailable (with Retry-After): the mail server did not take the code; ask again at once", body = AppError)))]
pub async fn send_email_code(State(state): State<AppState>, CurrentUser(user): CurrentUser) -> ApiResult<(StatusCode, Json<EmailCodeSent>)> {
    let sent = state.engine.send_email_code(&user).await?;
    Ok((StatusCode::ACCEPTED, Json(EmailCodeSent { sent, email: user.email })))
}

/// Checks the code from the email; right, the address is verified.
#[utoipa::path(post, path = "/api/v1/me/email-code/confirm", request_body = EmailCodeBody, security(("session" = [])),
    responses((status = 200, body = EmailVerified), (status = 403, description = "wrong_code: not the code sent, or none is waiting (expired, or the hour's tries used up)", body = AppError)))]
pub async fn confirm_email_code(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    ApiJson(body): ApiJson<EmailCodeBody>,
) -> ApiResult<Json<EmailVerified>> {
    state.engine.confirm_email_code(&user, &body.code).await?;
    Ok(Json(EmailVerified { verified: true }))
}
