//! The notices every instance hears from the database (LISTEN/NOTIFY): the
//! channels' names, and the one notice sent from Rust, that an event's own
//! facts changed. Admission rounds are announced by the waiting room;
//! [`crate::venue::live`] listens to them all. (Seat changes, far more
//! frequent, are read from a log instead: see `venue::live::changes`.)

use uuid::Uuid;

use crate::error::Result;

/// An event's own facts changed (payload: its id).
pub const EVENTS: &str = "frontrow_events";
/// A waiting room's admission round (payload: the round).
pub const QUEUE: &str = "frontrow_queue";
/// A session ended by signing out (payload: its id).
pub const SESSIONS: &str = "frontrow_sessions";

/// Tells every instance to re-read the event (committed with the change).
pub(crate) async fn announce_event_change(conn: &mut sqlx::PgConnection, event_id: Uuid) -> Result<()> {
    sqlx::query!("SELECT pg_notify($1, $2::uuid::text)", EVENTS, event_id).execute(conn).await?;
    Ok(())
}
