//! Extractors: every malformed request becomes one of the contract's errors,
//! and the values the engine takes are parsed here, at the edge.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use frontrow_model::{IdempotencyKey, User};
use serde::de::DeserializeOwned;
use tower_sessions::Session;

use super::error::{AppError, ErrorKind};
use crate::state::AppState;

/// JSON body whose rejections are contract errors, not axum's plain text.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Syntax first (400), then shape (422): a body with trailing junk is
        // malformed JSON even when its first value has the right fields.
        let axum::Json(value) = axum::Json::<serde_json::Value>::from_request(req, state).await.map_err(json_rejection)?;
        // Every body is an object; serde would also read a struct from an
        // array of its fields in order, which no client means.
        if !value.is_object() {
            return Err(AppError::invalid("the request body must be a JSON object"));
        }
        let mut value = value;
        integral_numbers_as_integers(&mut value);
        serde_json::from_value(value).map(Self).map_err(|e| AppError::invalid(format!("invalid request body: {e}")))
    }
}

/// JSON has one number type: `100.0` is the integer 100 to JSON Schema (and
/// to the document), but serde reads it into an integer field only when it
/// is written without the fraction.
fn integral_numbers_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection {
        JsonRejection::JsonDataError(e) => AppError::invalid(format!("invalid request body: {}", e.body_text())),
        JsonRejection::JsonSyntaxError(_) => AppError::new(ErrorKind::InvalidJson, "the body is not valid JSON"),
        JsonRejection::MissingJsonContentType(_) => AppError::new(ErrorKind::UnsupportedMediaType, "send the body as Content-Type: application/json"),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => payload_too_large(),
        other => AppError::new(ErrorKind::BadRequest, other.body_text()),
    }
}

pub fn payload_too_large() -> AppError {
    AppError::new(ErrorKind::PayloadTooLarge, "the request body is too large")
}

/// A path id (`EventId`, `HoldId`, ...). A malformed id names no resource,
/// so it is a 404 like an unknown one.
pub struct IdPath<Id>(pub Id);

impl<S: Send + Sync, Id: DeserializeOwned + Send> FromRequestParts<S> for IdPath<Id> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<Id>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(id)) => Ok(Self(id)),
            Err(PathRejection::FailedToDeserializePathParams(_)) => Err(AppError::not_found()),
            Err(other) => Err(AppError::new(ErrorKind::BadRequest, other.body_text())),
        }
    }
}

pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|e: QueryRejection| AppError::invalid(e.body_text()))
    }
}

/// A request header as visible ASCII, if present.
pub fn header<'a>(parts: &'a Parts, name: &str) -> Result<Option<&'a str>, AppError> {
    match parts.headers.get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| AppError::invalid(format!("the {name} header must be visible ASCII"))),
    }
}

/// The `Idempotency-Key` header, required and parsed.
pub struct KeyHeader(pub IdempotencyKey);

impl<S: Send + Sync> FromRequestParts<S> for KeyHeader {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let raw = header(parts, "idempotency-key")?.ok_or_else(|| AppError::invalid("the Idempotency-Key header is required"))?;
        Ok(Self(IdempotencyKey::parse(raw)?))
    }
}

/// The session, whose store failing is an outage (503), not a bug.
async fn session<S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<Session, AppError> {
    Session::from_request_parts(parts, state).await.map_err(|(_, m)| {
        tracing::error!(error = %m, "no session");
        AppError::internal()
    })
}

/// The signed-in user, from the session cookie.
pub struct CurrentUser(pub User);

impl<S> FromRequestParts<S> for CurrentUser
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let session = session(parts, state).await?;
        let app = AppState::from_ref(state);
        Ok(Self(frontrow_session::signed_in_user(&session, &app.engine).await?))
    }
}

/// A signed-in box-office user (staff or admin).
pub struct StaffUser(pub User);

impl<S> FromRequestParts<S> for StaffUser
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let CurrentUser(user) = CurrentUser::from_request_parts(parts, state).await?;
        if !user.role.is_staff() {
            return Err(AppError::forbidden());
        }
        Ok(Self(user))
    }
}

/// A signed-in admin (only admins manage staff accounts).
pub struct AdminUser(pub User);

impl<S> FromRequestParts<S> for AdminUser
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let CurrentUser(user) = CurrentUser::from_request_parts(parts, state).await?;
        if user.role != frontrow_model::Role::Admin {
            return Err(AppError::forbidden());
        }
        Ok(Self(user))
    }
}

/// The client's limits key (address, IPv6 /64), through a trusted proxy if
/// one is configured; `None` for in-process calls without a connection.
pub struct ClientKey(pub Option<std::net::IpAddr>);

impl<S> FromRequestParts<S> for ClientKey
where
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AppState::from_ref(state);
        Ok(Self(crate::gates::clients::parts_key(parts, &state.settings.trusted_proxies)))
    }
}

/// A place for one more live socket of this client (and key), or 429.
pub fn socket_slot(state: &AppState, client: &ClientKey, extra: Option<(String, usize)>) -> Result<crate::gates::clients::SocketSlot, AppError> {
    let mut limits = Vec::with_capacity(2);
    if let Some(ip) = client.0 {
        limits.push((format!("addr:{ip}"), state.settings.sockets_per_address));
    }
    limits.extend(extra);
    state.sockets.take(&limits).ok_or_else(|| {
        metrics::counter!("frontrow_sockets_refused_total").increment(1);
        AppError::rate_limited(5)
    })
}
