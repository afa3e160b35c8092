//! The notices every instance hears from the database (LISTEN/NOTIFY): the
//! channels' names, and the one notice sent from Rust, that an event's own
//! facts changed. Seat changes are not announced: they are logged
//! (`seat_changes`) and each instance reads the log, woken by an empty
//! notice from the instance that made them. Admission rounds are announced
//! by the waiting room, account changes by a trigger on `users`;
//! [`crate::venue::live`] listens to them all.

use frontrow_model::EventId;

use crate::error::Result;

/// The seat change log has new rows: read it now (no payload).
pub const SEATS: &str = "frontrow_seats";
/// An event's own facts changed (payload: its id).
pub const EVENTS: &str = "frontrow_events";
/// A waiting room's admission round (payload: the round).
pub const QUEUE: &str = "frontrow_queue";
/// A session ended by signing out (payload: its id).
pub const SESSIONS: &str = "frontrow_sessions";
/// An account changed (payload: its id); the `account_changed` trigger on
/// `users` sends it, whoever changes an account.
pub const ACCOUNTS: &str = "frontrow_accounts";

/// Tells every instance to re-read the event (committed with the change).
pub(crate) async fn announce_event_change(conn: &mut sqlx::PgConnection, event_id: EventId) -> Result<()> {
    sqlx::query!("SELECT pg_notify($1, $2::uuid::text)", EVENTS, event_id.as_uuid()).execute(conn).await?;
    Ok(())
}
