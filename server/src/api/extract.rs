//! Extractors that turn every malformed request into the contract's errors.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use frontrow_engine::model::User;
use serde::de::DeserializeOwned;
use tower_sessions::Session;
use uuid::Uuid;

use super::error::ApiError;
use crate::state::AppState;

pub use frontrow_app::SESSION_USER_KEY;

/// JSON body whose rejections are contract errors, not axum's plain text.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Syntax first (400), then shape (422): a body with trailing junk is
        // malformed JSON even when its first value has the right fields.
        let axum::Json(value) = axum::Json::<serde_json::Value>::from_request(req, state).await.map_err(json_rejection)?;
        serde_json::from_value(value)
            .map(Self)
            .map_err(|e| ApiError::invalid(format!("invalid request body: {e}")))
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::invalid(format!("invalid request body: {}", e.body_text())),
        JsonRejection::JsonSyntaxError(_) => ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", "the body is not valid JSON"),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as Content-Type: application/json",
        ),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "the request body is too large")
        }
        other => ApiError::bad_request(other.body_text()),
    }
}

/// A path id. A malformed id names no resource, so it is a 404 like an unknown one.
pub struct IdPath(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for IdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<Uuid>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(id)) => Ok(Self(id)),
            Err(PathRejection::FailedToDeserializePathParams(_)) => Err(ApiError::not_found()),
            Err(other) => Err(ApiError::bad_request(other.body_text())),
        }
    }
}

pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|e: QueryRejection| ApiError::invalid(e.body_text()))
    }
}

/// The signed-in user, from the session cookie.
pub struct CurrentUser(pub User);

impl<S> FromRequestParts<S> for CurrentUser
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let session = Session::from_request_parts(parts, state).await.map_err(|(_, m)| ApiError::internal(m))?;
        let user_id: Option<Uuid> = session.get(SESSION_USER_KEY).await.map_err(ApiError::internal)?;
        let user_id = user_id.ok_or_else(ApiError::unauthenticated)?;
        let app = AppState::from_ref(state);
        let user = frontrow_engine::accounts::find_user(&app.engine.pool, user_id)
            .await?
            .ok_or_else(ApiError::unauthenticated)?;
        Ok(Self(user))
    }
}

/// A signed-in box-office user (staff or admin).
pub struct StaffUser(pub User);

impl<S> FromRequestParts<S> for StaffUser
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let CurrentUser(user) = CurrentUser::from_request_parts(parts, state).await?;
        if !user.role.is_staff() {
            return Err(ApiError::forbidden());
        }
        Ok(Self(user))
    }
}
