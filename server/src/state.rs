//! What every handler can reach.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::FromRef;
use frontrow_engine::Engine;
use frontrow_model::UserId;
use governor::clock::DefaultClock;
use governor::state::keyed::DefaultKeyedStateStore;
use leptos::config::LeptosOptions;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::config::ServeArgs;

pub type ClientRateLimiter = governor::RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, DefaultClock>;
pub type FanRateLimiter = governor::RateLimiter<UserId, DefaultKeyedStateStore<UserId>, DefaultClock>;

/// Cloned for every request (by each extractor and middleware that takes
/// the state): one reference count, not a copy of every setting.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

pub struct Shared {
    pub engine: Engine,
    pub settings: Arc<ServeArgs>,
    /// `None` when FRONTROW_RATE_LIMITS=off.
    pub rate_limiter: Option<Arc<ClientRateLimiter>>,
    /// Per client address on sign-up and sign-in, much tighter than
    /// `rate_limiter`; `None` when off.
    pub account_limiter: Option<Arc<ClientRateLimiter>>,
    /// Per signed-in fan, on waiting-room and hold calls; `None` when off.
    pub fan_limiter: Option<Arc<FanRateLimiter>>,
    /// This process, as the waiting room's admission lease knows it.
    pub instance_id: uuid::Uuid,
    /// Open live sockets per client and per queue token.
    pub sockets: crate::gates::clients::SocketCaps,
    /// Where sessions are kept (expired ones are swept by a background task).
    pub sessions: crate::gates::sessions::Sessions,
    pub metrics: PrometheusHandle,
    pub leptos_options: LeptosOptions,
    /// Fires when the server shuts down; long-lived connections (WebSockets)
    /// end on it so graceful shutdown does not wait for them.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Seat maps and event lists as prepared bytes, per revision.
    pub prepared: Arc<crate::prepared::PreparedCache>,
    /// Requests of each costly kind in flight, bounded (load shedding).
    pub in_flight: Arc<crate::gates::shed::InFlight>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
