//! What the engine's SQL shares: the enum columns as Rust types, the
//! advisory-lock namespaces, the one retry for transactions PostgreSQL
//! refused to run side by side, a `BEGIN` that cancelling cannot break,
//! and connections kept from one use to the next.

use std::future::Future;
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgPool, Postgres, Transaction};

use crate::error::{EngineError, Result, TRUSTED_IDLE};

pub use crate::error::trusted_without_ping;

pub use frontrow_model::{BookingStatus, Channel, HoldState, Role, SeatKind, TicketState};

/// A seat's state in the database (`seats.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type, serde::Deserialize)]
#[sqlx(type_name = "seat_state", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum SeatState {
    Available,
    Held,
    PaymentPending,
    Sold,
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "checkout_state", rename_all = "snake_case")]
pub enum CheckoutState {
    Processing,
    PaymentPending,
    Confirmed,
    Declined,
    Expired,
    Refunded,
    Failed,
}

/// Our record of a payment (`payment_intents.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "payment_status", rename_all = "snake_case")]
pub enum PaymentState {
    Created,
    Processing,
    Succeeded,
    Declined,
    Canceled,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "refund_state", rename_all = "snake_case")]
pub enum RefundState {
    Pending,
    Succeeded,
    Failed,
}

/// Advisory-lock namespaces (first key of the two-key form).
pub(crate) const LOCK_FAN_LIMIT: i32 = 0x4652_0001;
pub(crate) const LOCK_REAPER: i32 = 0x4652_0002;
/// Second key 0: one instance at a time deletes old seat changes.
pub(crate) const LOCK_SEAT_CHANGES_PRUNE: i32 = 0x4652_0003;
/// Per event: one leader at a time makes the waiting list's offers.
pub(crate) const LOCK_WAITLIST: i32 = 0x4652_0004;

/// Takes the transaction's advisory lock on the event in `namespace` if no
/// other transaction has it: false means another instance is at work.
pub(crate) async fn try_lock_event(conn: &mut sqlx::PgConnection, namespace: i32, event_id: frontrow_model::EventId) -> Result<bool> {
    Ok(sqlx::query_scalar!(r#"SELECT pg_try_advisory_xact_lock($1, hashtext($2::uuid::text)) AS "locked!""#, namespace, event_id.as_uuid())
        .fetch_one(conn)
        .await?)
}

/// True for the errors PostgreSQL raises when two transactions must not both
/// proceed (deadlock, serialization failure): the whole call may run again.
fn is_retryable(err: &EngineError) -> bool {
    match err {
        EngineError::Database(sqlx::Error::Database(db)) => matches!(db.code().as_deref(), Some("40P01" | "40001")),
        _ => false,
    }
}

/// Runs `attempt` again (up to three times in all) while PostgreSQL refuses
/// it for a deadlock or a serialization failure.
pub(crate) async fn retrying<T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt().await {
            Err(e) if tries < 3 && is_retryable(&e) => continue,
            other => return other,
        }
    }
}

/// Begins a transaction that a cancelled caller cannot leave open.
///
/// sqlx 0.8's `begin()` counts a transaction only once PostgreSQL has
/// answered `BEGIN`: a future dropped in between (a client hanging up, a
/// timeout) hands the connection back to the pool inside a transaction no
/// one will end, and the next borrower's statements run in it (sqlx issues
/// #4385 and #4393, not fixed in a release yet). Run in a task of its own,
/// `BEGIN` always completes; if the caller has gone by then, the finished
/// transaction is dropped and rolled back as sqlx does for any other.
pub async fn begin(pool: &PgPool) -> std::result::Result<Transaction<'static, Postgres>, sqlx::Error> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.begin().await }).await.map_err(|_| sqlx::Error::WorkerCrashed)?
}

/// Connections kept from one use to the next by a task that uses them
/// often (the batchers, the live maps' reader of the seat change log). The
/// pool proves a connection alive with a round trip (a ping) each time it
/// hands one out, and checks with another that one handed back is not
/// inside a transaction; a kept connection skips both while its uses follow
/// each other closely, so a statement costs the database one round trip.
/// One kept idle for longer, or kept from before the database was last
/// found away (after a restart every kept connection is dead), is pinged
/// first, and given up if it does not answer. A connection whose statement
/// failed goes back to the pool, whose checks then weed it out if need be.
/// Only connections outside any transaction may be kept.
pub(crate) struct KeptConnections {
    kept: std::sync::Mutex<Vec<Kept>>,
    /// Most kept at once; the rest go back to the pool.
    limit: usize,
}

struct Kept {
    connection: PoolConnection<Postgres>,
    since: std::time::Instant,
}

impl KeptConnections {
    /// Keeps up to `limit` of `pool`'s connections, and hands them all back
    /// when it closes (a closing pool waits for every connection out of it).
    pub(crate) fn new(pool: &PgPool, limit: usize) -> Arc<Self> {
        let kept = Arc::new(Self { kept: std::sync::Mutex::default(), limit });
        tokio::spawn({
            let (closed, kept) = (pool.close_event(), kept.clone());
            async move {
                closed.await;
                kept.release_all();
            }
        });
        kept
    }

    pub(crate) async fn take(&self, pool: &PgPool) -> std::result::Result<PoolConnection<Postgres>, sqlx::Error> {
        loop {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match kept {
                Some(kept) if trusted_without_ping(kept.since.elapsed()) => return Ok(kept.connection),
                Some(Kept { mut connection, .. }) => {
                    if let Ok(Ok(())) = tokio::time::timeout(TRUSTED_IDLE, connection.ping()).await {
                        return Ok(connection);
                    }
                    // Dead: closed rather than handed back, and the next one tried.
                    connection.close_on_drop();
                }
                None => return pool.acquire().await,
            }
        }
    }

    /// Keeps `connection`, just used successfully outside a transaction, for
    /// the next use.
    pub(crate) fn keep(&self, pool: &PgPool, connection: PoolConnection<Postgres>) {
        {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() < self.limit {
                kept.push(Kept { connection, since: std::time::Instant::now() });
            }
        }
        // Closed meanwhile: the pool is waiting for it.
        if pool.is_closed() {
            self.release_all();
        }
    }

    fn release_all(&self) {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Whether a connection coming back to the pool is still inside a
/// transaction block. A simple-protocol statement outside a block starts a
/// transaction of its own, dated to the statement; inside a block the
/// transaction is older than the statement. (The extended protocol redates
/// the statement at each message, so only the simple one tells.)
pub async fn inside_transaction(conn: &mut sqlx::PgConnection) -> std::result::Result<bool, sqlx::Error> {
    use sqlx::{Executor, Row};
    // A bare string with no arguments goes by the simple protocol.
    let row = conn.fetch_one("SELECT transaction_timestamp() <> statement_timestamp()").await?;
    row.try_get(0)
}
