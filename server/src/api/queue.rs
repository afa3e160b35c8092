//! The waiting room over HTTP: join, position, the live position feed, and
//! the box office's controls.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use frontrow_model::live::QueueFrame;
use frontrow_model::{EventId, QueueSettings, QueueState, QueueStats, QueueView, SalePhase, User, UserId};
use tower_sessions::Session;

use super::error::{ApiResult, AppError};
use super::extract::{socket_slot, ApiJson, ClientKey, CurrentUser, IdPath, StaffUser};
use super::live::{small_buffers, Liveness};
use crate::state::AppState;

/// Per-fan limit on waiting-room and hold calls (on top of the per-address
/// one), so one account cannot poll or grab at machine speed.
pub fn limit_fan(state: &AppState, user: &User) -> ApiResult<()> {
    check_fan(state.fan_limiter.as_deref(), user.user_id)
}

/// The per-fan check itself; the app's server functions draw on the same
/// limiter (see `startup`), so a fan has one allowance however they ask.
pub fn check_fan(limiter: Option<&crate::state::FanRateLimiter>, fan: UserId) -> ApiResult<()> {
    if let Some(limiter) = limiter {
        if let Err(not_until) = limiter.check_key(&fan) {
            use governor::clock::{Clock, DefaultClock};
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            return Err(AppError::rate_limited(wait.as_secs() + 1));
        }
    }
    Ok(())
}

#[utoipa::path(post, path = "/api/v1/events/{event_id}/queue", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 201, body = QueueView), (status = 409, description = "waiting_room_off")))]
pub async fn join(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    IdPath(event_id): IdPath<EventId>,
) -> ApiResult<(StatusCode, Json<QueueView>)> {
    limit_fan(&state, &user)?;
    Ok((StatusCode::CREATED, Json(frontrow_session::join_queue(&session, &state.engine, &user, event_id).await?)))
}

#[utoipa::path(get, path = "/api/v1/events/{event_id}/queue/{queue_token}",
    params(("event_id" = Uuid, Path), ("queue_token" = String, Path, max_length = 64)), security(("session" = [])),
    responses((status = 200, body = QueueView)))]
pub async fn status(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(user): CurrentUser,
    Path((event_id, queue_token)): Path<(String, String)>,
) -> ApiResult<Json<QueueView>> {
    limit_fan(&state, &user)?;
    let event_id: EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    Ok(Json(frontrow_session::queue_view(&session, &state.engine, &user, event_id, &queue_token).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/events/{event_id}/waiting-room", params(("event_id" = Uuid, Path)), security(("session" = [])),
    responses((status = 200, body = QueueStats)))]
pub async fn stats(State(state): State<AppState>, StaffUser(_): StaffUser, IdPath(event_id): IdPath<EventId>) -> ApiResult<Json<QueueStats>> {
    Ok(Json(state.engine.queue_stats(event_id).await?))
}

#[utoipa::path(patch, path = "/api/v1/admin/events/{event_id}/waiting-room", params(("event_id" = Uuid, Path)), request_body = QueueSettings,
    security(("session" = [])), responses((status = 200, body = QueueStats)))]
pub async fn configure(
    State(state): State<AppState>,
    StaffUser(staff): StaffUser,
    IdPath(event_id): IdPath<EventId>,
    ApiJson(settings): ApiJson<QueueSettings>,
) -> ApiResult<Json<QueueStats>> {
    Ok(Json(state.engine.configure_queue(&staff, event_id, &settings).await?))
}

/// Sockets one queue token may hold open (a fan with a few tabs).
const SOCKETS_PER_TOKEN: usize = 4;

/// `GET /api/v1/events/{id}/queue/{token}/live`: the fan's position pushed
/// after admission rounds (the page polls when this is unavailable).
/// Only the fan whose entry the token is may listen (401 signed out, 403
/// someone else's token).
pub async fn live(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path((event_id, queue_token)): Path<(String, String)>,
    client: ClientKey,
    upgrade: axum::extract::ws::WebSocketUpgrade,
) -> ApiResult<axum::response::Response> {
    let event_id: EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    // Unknown tokens, and other fans' tokens, are refused before the
    // upgrade; this one read is all a socket costs.
    let (owner, phase, ticket) = state.engine.queue_entry(event_id, &queue_token).await?;
    if owner != user.user_id {
        return Err(AppError::forbidden());
    }
    let slot = socket_slot(&state, &client, Some((format!("queue:{queue_token}"), SOCKETS_PER_TOKEN)))?;
    let rounds = state.engine.queue_feed().subscribe(event_id, phase);
    Ok(small_buffers(upgrade).on_upgrade(move |socket| async move {
        push_positions(socket, state, event_id, phase, queue_token, ticket, rounds).await;
        drop(slot);
    }))
}

/// What a waiting fan with `ticket` is told after `round`.
fn frame_for(ticket: Option<i64>, round: &frontrow_engine::queue::QueueRound) -> Option<QueueFrame> {
    // A presale's round counts only the seats its open codes open (none
    // before it opens): nothing left there says nothing of the hall, which
    // the fan's status call reads from the live map.
    let hall_left = round.phase == SalePhase::Public;
    Some(match ticket {
        Some(t) if t <= round.admitted_through => QueueFrame { state: QueueState::Admitted, position: None, eta_seconds: None, draw_pending: false },
        _ if hall_left && round.remaining <= 0 && !round.all_held => {
            QueueFrame { state: QueueState::SoldOut, position: None, eta_seconds: None, draw_pending: false }
        }
        Some(t) if hall_left && round.remaining <= 0 => {
            QueueFrame { state: QueueState::AllHeld, position: Some((t - round.admitted_through - 1).max(0)), eta_seconds: None, draw_pending: false }
        }
        Some(t) => {
            let position = (t - round.admitted_through - 1).max(0);
            let eta = (round.rate > 0.01).then(|| ((position + 1) as f64 / round.rate).ceil() as i64);
            QueueFrame { state: QueueState::Waiting, position: Some(position), eta_seconds: eta, draw_pending: false }
        }
        // Waiting for the draw: nothing new to say.
        None => return None,
    })
}

/// Places this close to the front are told after every round: those fans
/// are about to be let in and watch every step, and they are few.
const NEAR_FRONT: i64 = 100;

/// Whether `frame` is news after `sent`, sent `since` ago: a new state at
/// once; a new place or ETA once `every` has passed, or at once near the
/// front; the same frame never, except "admitted", said every round until
/// the fan leaves the page (a page whose fetch of its admission failed
/// hears it again; admitted fans are few and leave at once).
fn worth_sending(sent: &QueueFrame, frame: &QueueFrame, since: std::time::Duration, every: std::time::Duration) -> bool {
    let near_front = frame.position.is_some_and(|p| p < NEAR_FRONT);
    frame.state == QueueState::Admitted || sent.state != frame.state || (sent != frame && (since >= every || near_front))
}

async fn push_positions(
    mut socket: axum::extract::ws::WebSocket,
    state: AppState,
    event_id: EventId,
    phase: SalePhase,
    queue_token: String,
    mut ticket: Option<i64>,
    mut rounds: tokio::sync::broadcast::Receiver<frontrow_engine::queue::QueueRound>,
) {
    use axum::extract::ws::Message;
    use tokio::sync::broadcast::error::RecvError;
    let mut liveness = Liveness::new(std::time::Duration::from_millis(state.settings.socket_idle_ms));
    let every = std::time::Duration::from_millis(state.settings.queue_frame_every_ms);
    let mut last: Option<(QueueFrame, tokio::time::Instant)> = None;
    loop {
        let round = tokio::select! {
            _ = state.shutdown.cancelled() => return,
            incoming = socket.recv() => match incoming {
                // A message over the size cap is an error: the socket ends.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {
                    liveness.heard();
                    continue;
                }
            },
            _ = tokio::time::sleep_until(liveness.due()) => {
                if liveness.act(&mut socket).await {
                    continue;
                }
                return;
            }
            round = rounds.recv() => match round {
                Ok(round) => round,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
        };
        // A pre-queue ticket is known once the round says the draw is done;
        // all sockets of the event share one read of the drawn tickets.
        if ticket.is_none() && round.drawn {
            match state.engine.drawn_ticket(event_id, phase, &queue_token).await {
                Ok(t) => ticket = t,
                Err(_) => return,
            }
        }
        let Some(frame) = frame_for(ticket, &round) else { continue };
        let now = tokio::time::Instant::now();
        if last.as_ref().is_some_and(|(sent, at)| !worth_sending(sent, &frame, now.duration_since(*at), every)) {
            continue;
        }
        last = Some((frame.clone(), now));
        let Ok(text) = serde_json::to_string(&frame) else { return };
        match tokio::time::timeout(std::time::Duration::from_secs(10), socket.send(Message::Text(text.into()))).await {
            Ok(Ok(())) => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontrow_engine::queue::QueueRound;
    use std::time::Duration;

    fn round(phase: SalePhase, remaining: i64, all_held: bool) -> QueueRound {
        QueueRound { admitted_through: 5, rate: 2.0, remaining, phase, drawn: true, all_held }
    }

    #[test]
    fn a_far_place_is_told_at_most_every_interval_a_new_state_at_once() {
        let waiting = |position| QueueFrame { state: QueueState::Waiting, position: Some(position), eta_seconds: None, draw_pending: false };
        let admitted = QueueFrame { state: QueueState::Admitted, position: None, eta_seconds: None, draw_pending: false };
        let (soon, every) = (Duration::from_secs(1), Duration::from_secs(5));
        assert!(!worth_sending(&waiting(900), &waiting(880), soon, every), "far back, too soon");
        assert!(worth_sending(&waiting(900), &waiting(880), every, every), "far back, the interval passed");
        assert!(!worth_sending(&waiting(900), &waiting(900), every, every), "nothing new");
        assert!(worth_sending(&waiting(120), &waiting(99), soon, every), "near the front");
        assert!(worth_sending(&waiting(900), &admitted, soon, every), "admitted");
        assert!(worth_sending(&admitted, &admitted, soon, every), "still admitted: again");
    }

    #[test]
    fn nothing_left_is_sold_out_for_the_public_sale_only() {
        let public = frame_for(Some(9), &round(SalePhase::Public, 0, false)).map(|f| f.state);
        assert_eq!(public, Some(QueueState::SoldOut));
        let held = frame_for(Some(9), &round(SalePhase::Public, 0, true)).map(|f| (f.state, f.position));
        assert_eq!(held, Some((QueueState::AllHeld, Some(3))));
        // A presale with none of its seats free (or not yet open) says nothing
        // of the hall: its fans keep waiting, and before the draw hear nothing.
        let presale = frame_for(Some(9), &round(SalePhase::Presale, 0, false)).map(|f| (f.state, f.position));
        assert_eq!(presale, Some((QueueState::Waiting, Some(3))));
        assert_eq!(frame_for(None, &round(SalePhase::Presale, 0, false)), None);
        assert_eq!(frame_for(Some(4), &round(SalePhase::Presale, 0, false)).map(|f| f.state), Some(QueueState::Admitted));
    }
}
