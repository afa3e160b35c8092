//! The waiting room over HTTP: join, position, and the admission token that
//! holds require while an event's waiting room is on.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use frontrow_engine::admission::{self, TokenError};
use frontrow_engine::model::User;
use frontrow_engine::queue::{self, QueueSettings, QueueStats, QueueView};
use frontrow_app::{admission_session_key, queue_session_key, ADMISSION_BINDING_KEY};
use tower_sessions::Session;
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{ApiJson, CurrentUser, IdPath, StaffUser};
use crate::state::AppState;

/// The session's binding value, created on first use.
pub async fn session_binding(session: &Session) -> ApiResult<String> {
    if let Some(binding) = session.get::<String>(ADMISSION_BINDING_KEY).await.map_err(ApiError::internal)? {
        return Ok(binding);
    }
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let binding = hex::encode(bytes);
    session.insert(ADMISSION_BINDING_KEY, &binding).await.map_err(ApiError::internal)?;
    Ok(binding)
}

fn secret(state: &AppState) -> &[u8] {
    state.settings.secret.as_deref().unwrap_or_default().as_bytes()
}

/// Per-fan limit on waiting-room and hold calls (on top of the per-address
/// one), so one account cannot poll or grab at machine speed.
pub fn limit_fan(state: &AppState, user: &User) -> ApiResult<()> {
    if let Some(limiter) = &state.fan_limiter {
        if let Err(not_until) = limiter.check_key(&user.user_id) {
            use governor::clock::{Clock, DefaultClock};
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            return Err(ApiError::rate_limited(wait.as_secs() + 1));
        }
    }
    Ok(())
}

/// Whether the request carries a valid admission for the event: `Ok(false)`
/// without the header (the engine then refuses events whose waiting room is
/// on), 403 `not_admitted` with a header that does not verify.
pub async fn admission_from_header(state: &AppState, session: &Session, headers: &HeaderMap, user: &User, event_id: Uuid) -> ApiResult<bool> {
    let Some(token) = headers.get("x-admission-token") else { return Ok(false) };
    let token = token.to_str().map_err(|_| not_admitted(TokenError::Malformed))?;
    let binding = session_binding(session).await?;
    admission::verify(secret(state), token, event_id, user.user_id, &binding, chrono::Utc::now().timestamp()).map_err(not_admitted)?;
    Ok(true)
}

fn not_admitted(reason: TokenError) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "not_admitted", format!("admission refused: {reason}"))
}

#[utoipa::path(post, path = "/api/v1/events/{event_id}/queue", params(("event_id" = String, Path)),
    responses((status = 201, body = QueueView), (status = 401), (status = 404), (status = 409, description = "waiting_room_off"), (status = 429)))]
pub async fn join(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath,
) -> ApiResult<(StatusCode, Json<QueueView>)> {
    limit_fan(&state, &user)?;
    let token = state.engine.join_queue(event_id, user.user_id).await?;
    session.insert(&queue_session_key(&event_id.simple().to_string()), &token).await.map_err(ApiError::internal)?;
    let view = view(&state, &session, &user, event_id, &token).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}/queue/{queue_token}", params(("event_id" = String, Path), ("queue_token" = String, Path)),
    responses((status = 200, body = QueueView), (status = 404), (status = 429)))]
pub async fn status(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    Path((event_id, queue_token)): Path<(String, String)>,
) -> ApiResult<Json<QueueView>> {
    limit_fan(&state, &user)?;
    let event_id: Uuid = event_id.parse().map_err(|_| ApiError::not_found())?;
    if queue_token.len() > 64 {
        return Err(ApiError::not_found());
    }
    Ok(Json(view(&state, &session, &user, event_id, &queue_token).await?))
}

/// The fan's standing; an admitted fan's token is also kept in the session
/// for the server-rendered seat map.
async fn view(state: &AppState, session: &Session, user: &User, event_id: Uuid, queue_token: &str) -> ApiResult<QueueView> {
    let remaining = state.engine.board.snapshot(event_id).await?.seats_available();
    let binding = session_binding(session).await?;
    let owner = queue::owner(&state.engine.pool, event_id, queue_token).await?;
    // Someone else's token (it travels in URLs) reads as unknown: no peeking
    // at their place, no renewing their admission.
    if owner != user.user_id {
        return Err(ApiError::not_found());
    }
    let (_, view) = queue::status(&state.engine.pool, secret(state), event_id, queue_token, &binding, remaining).await?;
    if let Some(token) = &view.admission_token {
        session.insert(&admission_session_key(&event_id.simple().to_string()), token).await.map_err(ApiError::internal)?;
    }
    Ok(view)
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/waiting-room", params(("event_id" = String, Path)),
    responses((status = 200, body = QueueStats), (status = 403), (status = 404)))]
pub async fn stats(State(state): State<AppState>, StaffUser(_): StaffUser, IdPath(event_id): IdPath) -> ApiResult<Json<QueueStats>> {
    Ok(Json(queue::stats(&state.engine.pool, event_id).await?))
}

#[utoipa::path(patch, path = "/api/v1/admin/events/{event_id}/waiting-room", params(("event_id" = String, Path)), request_body = QueueSettings,
    responses((status = 200, body = QueueStats), (status = 403), (status = 404), (status = 422)))]
pub async fn configure(
    State(state): State<AppState>,
    StaffUser(_): StaffUser,
    IdPath(event_id): IdPath,
    ApiJson(settings): ApiJson<QueueSettings>,
) -> ApiResult<Json<QueueStats>> {
    Ok(Json(queue::configure(&state.engine.pool, event_id, &settings).await?))
}

/// `GET /api/v1/events/{id}/queue/{token}/live`: the fan's position pushed
/// after every admission round (the page polls when this is unavailable).
pub async fn live(
    State(state): State<AppState>,
    Path((event_id, queue_token)): Path<(String, String)>,
    upgrade: axum::extract::ws::WebSocketUpgrade,
) -> ApiResult<axum::response::Response> {
    let event_id: Uuid = event_id.parse().map_err(|_| ApiError::not_found())?;
    // Unknown tokens are refused before the upgrade.
    queue::entry(&state.engine.pool, event_id, &queue_token).await?;
    let rounds = state.engine.queue_feed.subscribe(event_id);
    Ok(upgrade.on_upgrade(move |socket| push_positions(socket, state, event_id, queue_token, rounds)))
}

async fn push_positions(
    mut socket: axum::extract::ws::WebSocket,
    state: AppState,
    event_id: Uuid,
    queue_token: String,
    mut rounds: tokio::sync::broadcast::Receiver<queue::QueueRound>,
) {
    use axum::extract::ws::Message;
    use tokio::sync::broadcast::error::RecvError;
    let mut ticket = None;
    loop {
        let round = tokio::select! {
            _ = state.shutdown.cancelled() => return,
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => continue,
            },
            round = rounds.recv() => match round {
                Ok(round) => round,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        // The ticket is fixed once drawn; read it until then.
        if ticket.is_none() {
            match queue::entry(&state.engine.pool, event_id, &queue_token).await {
                Ok((t, _)) => ticket = t,
                Err(_) => return,
            }
        }
        let frame = match ticket {
            Some(t) if t <= round.admitted_through => serde_json::json!({ "state": "admitted" }),
            _ if round.remaining <= 0 => serde_json::json!({ "state": "sold_out" }),
            Some(t) => {
                let position = (t - round.admitted_through - 1).max(0);
                let eta = (round.rate > 0.01).then(|| ((position + 1) as f64 / round.rate).ceil() as i64);
                serde_json::json!({ "state": "waiting", "position": position, "eta_seconds": eta, "draw_pending": false })
            }
            None => continue,
        };
        if socket.send(Message::Text(frame.to_string().into())).await.is_err() {
            return;
        }
    }
}
