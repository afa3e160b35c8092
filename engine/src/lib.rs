//! The frontrow booking engine: the seat state machine and everything that
//! must be exactly right about it (holds, checkout, payments, reconciliation,
//! audit), over PostgreSQL. No HTTP types live here; the server and the Leptos
//! app both call into this crate.

pub mod accounts;
pub mod admission;
pub mod audit;
pub mod best;
pub mod catalogue;
pub mod checkout;
pub mod error;
pub mod holds;
pub mod live;
pub mod model;
pub mod payment;
pub mod queue;
pub mod reaper;
pub mod reconcile;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

pub use error::EngineError;
pub use payment::PaymentProvider;

/// Migrations embedded at compile time from the workspace's `migrations/`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Tunables of the engine that are policy, not code.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// How long a checkout waits for the payment provider before answering
    /// "payment pending" and leaving the outcome to reconciliation.
    pub checkout_wait: Duration,
    /// How long seats stay reserved for a payment whose outcome is unknown,
    /// counted from the moment checkout started.
    pub payment_grace: Duration,
    /// How long a checkout request owns its idempotency key before a retry may
    /// take over (covers a worker that died mid-request).
    pub checkout_lease: Duration,
    /// ISO 4217 currency of every price, lower case as providers expect.
    pub currency: String,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            checkout_wait: Duration::from_secs(3),
            payment_grace: Duration::from_secs(600),
            checkout_lease: Duration::from_secs(30),
            currency: "eur".to_owned(),
        }
    }
}

/// The engine: a connection pool, a payment provider and the policy settings.
#[derive(Clone)]
pub struct Engine {
    pub pool: sqlx::PgPool,
    pub provider: Arc<dyn PaymentProvider>,
    pub settings: EngineSettings,
    /// This instance's in-memory seat maps, kept current by notifications.
    pub board: Arc<live::SeatBoard>,
    /// This instance's fan-out of waiting-room admission rounds.
    pub queue_feed: Arc<queue::QueueFeed>,
    /// Batches concurrent queue joins; started on first use (and again if
    /// its task ever ended).
    joiner: Arc<std::sync::Mutex<Option<Arc<queue::Joiner>>>>,
}

impl Engine {
    /// Joins the fan to the event's waiting room (joins arriving together
    /// share one database call).
    pub async fn join_queue(&self, event_id: uuid::Uuid, user_id: uuid::Uuid) -> error::Result<String> {
        let joiner = {
            let mut slot = self.joiner.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some(joiner) if joiner.is_running() => joiner.clone(),
                _ => slot.insert(Arc::new(queue::Joiner::start(self.pool.clone()))).clone(),
            }
        };
        joiner.join(event_id, user_id).await
    }

    pub fn new(pool: sqlx::PgPool, provider: Arc<dyn PaymentProvider>, settings: EngineSettings) -> Self {
        Self {
            board: Arc::new(live::SeatBoard::new(pool.clone())),
            queue_feed: Arc::default(),
            joiner: Arc::default(),
            pool,
            provider,
            settings,
        }
    }
}
