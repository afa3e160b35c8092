//! What the engine's SQL shares: the enum columns as Rust types, the
//! advisory-lock namespaces, the one retry for transactions PostgreSQL
//! refused to run side by side, and a `BEGIN` that cancelling cannot break.

use std::future::Future;

use sqlx::{PgPool, Postgres, Transaction};

use crate::error::{EngineError, Result};

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
