//! The frontrow booking engine: the seat state machine and everything that
//! must be exactly right about it (holds, checkout, payments, reconciliation,
//! audit), over PostgreSQL. No HTTP types live here.
//!
//! [`Engine`] is the one way in: the JSON API, the Leptos server functions,
//! the server-rendered pages and the command line all call its methods,
//! so they cannot drift apart. Its connection pool is private.

// The engine's rooms, by concern: each folder's module doc says what it owns.
// They call downward only, never back: `box_office` and `money` use
// `sale`, which uses `venue`, which uses `queue`; `accounts` and the
// shared modules below sit under them all. (Each adds methods to `Engine`.)
pub mod accounts;
pub mod box_office;
pub mod money;
pub mod queue;
pub mod sale;
pub mod venue;

// Shared by the rooms: the change log, SQL helpers, errors, fail-points,
// notices, payment providers, tokens, server instances.
pub mod changelog;
pub mod db;
pub mod error;
pub mod fail_points;
mod instances;
pub mod notices;
pub mod payment;
mod tokens;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use uuid::Uuid;

pub use accounts::mail::{Mail, Mailer};
pub use error::{EngineError, Result};
pub use fail_points::FailPoint;
pub use frontrow_model as model;
pub use payment::PaymentProvider;
pub use queue::admission::Admission;
pub use sale::holds::Held;
pub use sale::presale::{Access, PresaleAccess};

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
    /// Signs admission tokens (every instance sharing a database shares it).
    pub admission_secret: Arc<[u8]>,
    /// Where a debug build dies, for the crash tests (release builds have
    /// no such field: see [`fail_points`]).
    #[cfg(debug_assertions)]
    pub fail_point: Option<FailPoint>,
    /// This server instance: its claims on checkouts carry it, and its
    /// heartbeat keeps them alive. Stable across restarts of one instance,
    /// so a restarted server takes back at once what its previous life held.
    pub instance_id: Uuid,
    /// How long a payment we cannot prove uncharged is asked about before
    /// it is handed to a person: at least the provider's idempotency window,
    /// within which a repeated create answers the original charge.
    pub payment_watch: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            checkout_wait: Duration::from_secs(3),
            payment_grace: Duration::from_secs(600),
            checkout_lease: Duration::from_secs(30),
            currency: "eur".to_owned(),
            admission_secret: Arc::from(&b""[..]),
            #[cfg(debug_assertions)]
            fail_point: None,
            payment_watch: Duration::from_secs(24 * 3600),
            instance_id: Uuid::new_v4(),
        }
    }
}

/// The engine: a connection pool, a payment provider, the policy settings,
/// and this instance's in-memory seat maps and waiting-room feeds. Cheap to
/// clone (one shared instance behind an `Arc`).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    pool: sqlx::PgPool,
    provider: Arc<dyn PaymentProvider>,
    mailer: Arc<dyn Mailer>,
    settings: EngineSettings,
    board: venue::live::SeatBoard,
    queue_feed: queue::QueueFeed,
    /// Batches concurrent queue joins; started on first use (and again if
    /// its task ever ended).
    joiner: Mutex<Option<Arc<queue::Joiner>>>,
    /// Batches the reads of queue entries by token, likewise.
    entry_reader: Mutex<Option<Arc<queue::EntryReader>>>,
    /// Gathers concurrent holds into one database call per event; started
    /// on first use (and again if its task ever ended).
    hold_batcher: Mutex<Option<Arc<sale::hold_batch::HoldBatcher>>>,
    hold_batch_counts: Arc<sale::group_commit::BatchCounts>,
    /// Gathers concurrent releases into one database call, likewise.
    release_batcher: Mutex<Option<Arc<sale::release_batch::ReleaseBatcher>>>,
    /// And the checkout's two transactions: seats to payment, then sale.
    reserve_batcher: Mutex<Option<Arc<sale::checkout::ReserveBatcher>>>,
    sale_batcher: Mutex<Option<Arc<sale::checkout::SaleBatcher>>>,
    users: accounts::UserCache,
    /// Batch the reads of accounts and sessions not kept in memory.
    account_reader: Mutex<Option<Arc<accounts::AccountReader>>>,
    session_reader: Mutex<Option<Arc<accounts::SessionReader>>>,
    account_feed: accounts::AccountFeed,
    session_ends: tokio::sync::broadcast::Sender<accounts::SessionEnd>,
}

impl Engine {
    pub fn new(pool: sqlx::PgPool, provider: Arc<dyn PaymentProvider>, mailer: Arc<dyn Mailer>, settings: EngineSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                board: venue::live::SeatBoard::new(pool.clone()),
                queue_feed: queue::QueueFeed::default(),
                joiner: Mutex::default(),
                entry_reader: Mutex::default(),
                hold_batcher: Mutex::default(),
                hold_batch_counts: Arc::default(),
                release_batcher: Mutex::default(),
                reserve_batcher: Mutex::default(),
                sale_batcher: Mutex::default(),
                users: accounts::user_cache(),
                account_reader: Mutex::default(),
                session_reader: Mutex::default(),
                account_feed: accounts::AccountFeed::default(),
                session_ends: tokio::sync::broadcast::channel(1024).0,
                pool,
                provider,
                mailer,
                settings,
            }),
        }
    }

    fn pool(&self) -> &sqlx::PgPool {
        &self.inner.pool
    }

    fn provider(&self) -> &dyn PaymentProvider {
        self.inner.provider.as_ref()
    }

    fn users(&self) -> &accounts::UserCache {
        &self.inner.users
    }

    fn mailer(&self) -> &dyn Mailer {
        self.inner.mailer.as_ref()
    }

    pub fn settings(&self) -> &EngineSettings {
        &self.inner.settings
    }

    /// This instance's live seat maps.
    pub fn board(&self) -> &venue::live::SeatBoard {
        &self.inner.board
    }

    /// Sessions ended anywhere, as the change feed tells this instance (a
    /// receiver that lags must forget every session it keeps).
    pub fn session_ends(&self) -> tokio::sync::broadcast::Receiver<accounts::SessionEnd> {
        self.inner.session_ends.subscribe()
    }

    /// This instance's fan-out of waiting-room admission rounds.
    pub fn queue_feed(&self) -> &queue::QueueFeed {
        &self.inner.queue_feed
    }

    /// Ready when the database answers and every migration this build knows
    /// is applied: `Ok((applied, expected))`.
    pub async fn migrations_applied(&self) -> Result<(i64, i64)> {
        let expected = MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration()).count() as i64;
        let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success").fetch_one(self.pool()).await?;
        Ok((applied, expected))
    }

    /// Keeps this instance's seat maps and waiting-room feeds current until
    /// `stop` completes (see [`venue::live::listen`]).
    pub async fn listen(&self, stop: impl std::future::Future<Output = ()>) {
        venue::live::listen(self, stop).await
    }
}
