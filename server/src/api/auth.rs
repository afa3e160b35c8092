//! Accounts: sign up, sign in (rotating the session id), sign out, me.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use frontrow_engine::accounts::{self, NewUser};
use frontrow_engine::model::{Booking, Role, User};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult};
use super::extract::{ApiJson, CurrentUser, SESSION_USER_KEY};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct SignupBody {
    pub email: String,
    pub password: String,
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct LoginBody {
    pub email: String,
    pub password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BookingList {
    pub bookings: Vec<Booking>,
}

async fn sign_in(session: &Session, user: &User) -> ApiResult<()> {
    // A fresh session id at every sign-in defeats session fixation.
    session.cycle_id().await.map_err(ApiError::internal)?;
    session.insert(SESSION_USER_KEY, user.user_id).await.map_err(ApiError::internal)?;
    Ok(())
}

#[utoipa::path(post, path = "/api/v1/auth/signup", request_body = SignupBody,
    responses((status = 201, body = User), (status = 409, description = "email_taken"), (status = 422, description = "invalid_input")))]
pub async fn signup(State(state): State<AppState>, session: Session, ApiJson(body): ApiJson<SignupBody>) -> ApiResult<(StatusCode, Json<User>)> {
    let user = accounts::create_user(
        &state.engine.pool,
        NewUser { email: &body.email, password: &body.password, name: &body.name, role: Role::Fan },
    )
    .await?;
    sign_in(&session, &user).await?;
    Ok((StatusCode::CREATED, Json(user)))
}

#[utoipa::path(post, path = "/api/v1/auth/login", request_body = LoginBody,
    responses((status = 200, body = User), (status = 401, description = "invalid_credentials")))]
pub async fn login(State(state): State<AppState>, session: Session, ApiJson(body): ApiJson<LoginBody>) -> ApiResult<Json<User>> {
    let user = accounts::authenticate(&state.engine.pool, &body.email, &body.password).await?;
    sign_in(&session, &user).await?;
    Ok(Json(user))
}

#[utoipa::path(post, path = "/api/v1/auth/logout", responses((status = 204)))]
pub async fn logout(session: Session) -> ApiResult<StatusCode> {
    session.flush().await.map_err(ApiError::internal)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/me", responses((status = 200, body = User), (status = 401)))]
pub async fn me(CurrentUser(user): CurrentUser) -> Json<User> {
    Json(user)
}

#[utoipa::path(get, path = "/api/v1/me/bookings", responses((status = 200, body = BookingList), (status = 401)))]
pub async fn my_bookings(State(state): State<AppState>, CurrentUser(user): CurrentUser) -> ApiResult<Json<BookingList>> {
    let bookings = frontrow_engine::checkout::user_bookings(&state.engine.pool, user.user_id).await?;
    Ok(Json(BookingList { bookings }))
}
