//! The live seat map over WebSocket: a snapshot, then diffs as seats change
//! on any server instance.

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use frontrow_engine::venue::live::{FeedMessage, LiveEvent, View};
use frontrow_model::live::LiveFrame;
use frontrow_model::EventId;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use utoipa::IntoParams;

use super::error::{ApiResult, AppError, ErrorKind};
use super::extract::{socket_slot, ApiQuery, ClientKey, IdPath};
use crate::state::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LiveQuery {
    /// With `epoch`: the `seq` of the last frame (or server-rendered page)
    /// the viewer has; the first snapshot then lists only seats that may
    /// differ. From another epoch the whole map is sent.
    #[param(minimum = 0)]
    pub since: Option<i64>,
    #[param(value_type = Option<i64>, minimum = 0, maximum = 4294967295_i64)]
    pub epoch: Option<u32>,
    /// Only this section's seats (of a standing area: its count of free
    /// places, as `counts` frames).
    #[param(min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]+$")]
    pub section: Option<String>,
    /// `overview`: every section's count of free places, as `counts`
    /// frames, instead of seats. Not with `section` (422: one or the other).
    #[param(inline)]
    pub view: Option<LiveView>,
}

/// What a viewer watches instead of every seat.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LiveView {
    Overview,
}

/// Upgraded to a WebSocket: a snapshot frame, then a diff frame whenever
/// seats change (a viewer of the overview or of a standing area: counts
/// frames). Without the upgrade: the first frame alone, as JSON.
#[utoipa::path(get, path = "/api/v1/events/{event_id}/live", params(("event_id" = Uuid, Path), LiveQuery),
    responses((status = 101, description = "WebSocket: a snapshot frame, then diff frames (or counts frames)"),
              (status = 200, description = "no upgrade asked for: the first frame", body = LiveFrame)))]
pub async fn live(
    State(state): State<AppState>,
    IdPath(event_id): IdPath<EventId>,
    ApiQuery(query): ApiQuery<LiveQuery>,
    client: ClientKey,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    // Unknown events are refused before the upgrade, as a plain 404.
    let event = state.engine.board().event(event_id).await?;
    if event.facts().is_some_and(|e| !e.published) {
        return Err(AppError::not_found());
    }
    let view = match (query.view, query.section.as_deref()) {
        (Some(_), Some(_)) => return Err(AppError::invalid("ask for one section or the overview, not both")),
        (Some(LiveView::Overview), None) => View::Overview,
        (None, section) => event.view(section).ok_or_else(|| AppError::new(ErrorKind::NotFound, "this event has no such section"))?,
    };
    let since = match query.since.map(u64::try_from) {
        Some(Err(_)) => return Err(AppError::invalid("since is a frame's seq: 0 or more")),
        Some(Ok(seq)) => query.epoch.zip(Some(seq)),
        None => None,
    };
    let Ok(upgrade) = upgrade else {
        let frame = event.snapshot_frame(view, since).ok_or_else(AppError::not_found)?;
        return Ok(([(header::CONTENT_TYPE, "application/json")], axum::body::Body::from(frame)).into_response());
    };
    let slot = socket_slot(&state, &client, None)?;
    let shutdown = state.shutdown.clone();
    let idle = Duration::from_millis(state.settings.socket_idle_ms);
    Ok(small_buffers(upgrade).on_upgrade(move |socket| async move {
        serve_viewer(socket, event, view, since, shutdown, idle).await;
        drop(slot);
    }))
}

/// Most a client may send in one message or one frame. Viewers and waiting
/// fans send nothing but control frames; without a cap, tungstenite's
/// defaults (64 MiB a message, 16 MiB a frame) would let each socket pin
/// that much memory. A message over it closes the socket.
pub(super) const MAX_INCOMING: usize = 4 * 1024;

/// A socket that mostly listens: viewers send nothing but pings, so a
/// small read buffer and a small cap on what they may send; frames go out
/// as they come (no 128 KiB write buffer to fill first), and a viewer that
/// stops reading is cut off at a bound (a whole map of a very large venue
/// fits well within it).
pub(super) fn small_buffers(upgrade: WebSocketUpgrade) -> WebSocketUpgrade {
    upgrade
        .read_buffer_size(4 * 1024)
        .max_message_size(MAX_INCOMING)
        .max_frame_size(MAX_INCOMING)
        .write_buffer_size(0)
        .max_write_buffer_size(16 << 20)
}

/// Whether the client at the far end of a socket is still there: once it
/// has been silent for half the idle time it is pinged (a browser answers
/// by itself), and if it stays silent for all of it the socket is closed,
/// so a reader that went away does not keep its place (and its buffers)
/// until a frame happens to fail.
pub(super) struct Liveness {
    idle: Duration,
    heard: tokio::time::Instant,
    pinged: bool,
}

impl Liveness {
    pub(super) fn new(idle: Duration) -> Self {
        Self { idle: idle.max(Duration::from_millis(10)), heard: tokio::time::Instant::now(), pinged: false }
    }

    /// The client sent something (a pong included).
    pub(super) fn heard(&mut self) {
        self.heard = tokio::time::Instant::now();
        self.pinged = false;
    }

    /// When [`Liveness::act`] is due.
    pub(super) fn due(&self) -> tokio::time::Instant {
        self.heard + if self.pinged { self.idle } else { self.idle / 2 }
    }

    /// Pings a silent client; closes the socket of one that stayed silent
    /// (answers false: the socket is done).
    pub(super) async fn act(&mut self, socket: &mut WebSocket) -> bool {
        if self.pinged {
            metrics::counter!("frontrow_live_idle_closed_total").increment(1);
            let close = CloseFrame { code: axum::extract::ws::close_code::AWAY, reason: "idle: reconnect".into() };
            let _ = tokio::time::timeout(SEND_WITHIN, socket.send(Message::Close(Some(close)))).await;
            return false;
        }
        self.pinged = true;
        matches!(tokio::time::timeout(SEND_WITHIN, socket.send(Message::Ping(axum::body::Bytes::new()))).await, Ok(Ok(())))
    }
}

/// A viewer that has not taken a frame within this is gone or too slow.
const SEND_WITHIN: Duration = Duration::from_secs(10);

/// Close code telling a viewer it fell behind: reconnect and resume.
const FELL_BEHIND: u16 = 4000;

async fn serve_viewer(
    mut socket: WebSocket,
    event: Arc<LiveEvent>,
    view: View,
    since: Option<(u32, u64)>,
    shutdown: CancellationToken,
    idle: Duration,
) {
    metrics::gauge!("frontrow_live_viewers").increment(1.0);
    // Subscribe first, then snapshot: nothing can fall between the two.
    let mut feed = event.subscribe(view);
    if let Some(frame) = event.snapshot_frame(view, since).and_then(|f| Utf8Bytes::try_from(f).ok()) {
        if socket.send(Message::Text(frame)).await.is_ok() {
            relay(&mut socket, &event, view, &mut feed, &shutdown, Liveness::new(idle)).await;
        }
    }
    metrics::gauge!("frontrow_live_viewers").decrement(1.0);
}

async fn relay(
    socket: &mut WebSocket,
    event: &LiveEvent,
    view: View,
    feed: &mut tokio::sync::broadcast::Receiver<FeedMessage>,
    shutdown: &CancellationToken,
    mut liveness: Liveness,
) {
    loop {
        let frame = tokio::select! {
            _ = shutdown.cancelled() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
            incoming = socket.recv() => match incoming {
                // Pings are answered by the protocol layer; viewers send
                // nothing else we need. (A message over the size cap is an
                // error: the socket ends.)
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {
                    liveness.heard();
                    continue;
                }
            },
            _ = tokio::time::sleep_until(liveness.due()) => {
                if liveness.act(socket).await {
                    continue;
                }
                return;
            }
            message = feed.recv() => match message {
                Ok(FeedMessage::Diff(frame)) => frame,
                // The board itself started over (a lost database listener):
                // every viewer gets the whole map once.
                Ok(FeedMessage::Resync) => match event.snapshot_frame(view, None) {
                    Some(frame) => frame,
                    None => return,
                },
                // This viewer fell behind: drop it rather than send it a map
                // per lag; it reconnects and resumes from its last frame.
                Err(RecvError::Lagged(_)) => {
                    metrics::counter!("frontrow_live_viewers_dropped_total").increment(1);
                    let close = CloseFrame { code: FELL_BEHIND, reason: "fell behind: reconnect and resume".into() };
                    let _ = tokio::time::timeout(SEND_WITHIN, socket.send(Message::Close(Some(close)))).await;
                    return;
                }
                Err(RecvError::Closed) => return,
            },
        };
        // The frame's bytes are shared with every other viewer; only the
        // UTF-8 check is per viewer, no copy.
        let Ok(text) = Utf8Bytes::try_from(frame) else { return };
        match tokio::time::timeout(SEND_WITHIN, socket.send(Message::Text(text))).await {
            Ok(Ok(())) => {}
            _ => return,
        }
    }
}
