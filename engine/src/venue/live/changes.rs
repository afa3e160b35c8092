//! The seat change log, as each instance reads it.
//!
//! Every statement that changes seats logs one row per event in
//! `seat_changes`, in its own transaction (the seats trigger). An instance
//! remembers the snapshot of its last read; the rows new to it are those of
//! transactions visible in the current snapshot and not in that one. So a
//! transaction that commits late, after others that began after it, is read
//! when it commits, and no row is read twice or skipped, with no lock
//! between the writers. Rows are merged by seat version, so the order of a
//! read does not matter.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgConnection;

use crate::error::Result;

/// Rows are pruned once they were committed this long ago. An instance
/// that has not read the log for half as long reloads its boards rather
/// than trust what is left.
pub const KEPT: Duration = Duration::from_secs(600);

/// Where an instance has read the log up to.
pub(super) struct ChangeLog {
    /// The snapshot of the last read, as `pg_snapshot` text.
    seen: String,
    /// Its own connection, out of the request pool: a read never waits
    /// behind requests, and costs one round trip. Dropped after an error
    /// and taken afresh at the next read.
    connection: Option<PgConnection>,
}

impl ChangeLog {
    /// Starts from now: what committed before is in the boards loaded after.
    pub(super) async fn from_now(pool: &sqlx::PgPool) -> Result<Self> {
        let mut connection = pool.acquire().await?.detach();
        let seen = sqlx::query_scalar!(r#"SELECT pg_current_snapshot()::text AS "seen!""#).fetch_one(&mut connection).await?;
        Ok(Self { seen, connection: Some(connection) })
    }

    /// The changes committed since the last read, each a message as the
    /// trigger wrote it. After an error the next read starts from the
    /// same place: nothing is lost.
    pub(super) async fn read_new(&mut self, pool: &sqlx::PgPool) -> Result<Vec<String>> {
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => pool.acquire().await?.detach(),
        };
        // New to us: a transaction that had not begun at the last read
        // (at or past its xmax) or was running then (in its xip list), and
        // is visible now.
        let rows = sqlx::query!(
            r#"WITH now AS MATERIALIZED (SELECT pg_current_snapshot() AS seen, $1::text::pg_snapshot AS before)
               SELECT now.seen::text AS "seen!", c.message AS "message?"
                 FROM now LEFT JOIN seat_changes c
                   ON (c.xid >= pg_snapshot_xmax(now.before) OR c.xid = ANY (ARRAY(SELECT pg_snapshot_xip(now.before))))
                  AND pg_visible_in_snapshot(c.xid, now.seen) AND NOT pg_visible_in_snapshot(c.xid, now.before)
                ORDER BY c.xid"#,
            self.seen
        )
        .fetch_all(&mut connection)
        .await?;
        self.connection = Some(connection);
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            self.seen = row.seen;
            messages.extend(row.message);
        }
        Ok(messages)
    }
}

/// Prunes the log by what had committed [`KEPT`] ago, never by when a row
/// was written: a transaction may commit long after it logged its change,
/// and its row must still be read. Each round marks the snapshot of the
/// moment; a later round deletes the rows visible in the newest mark that
/// is old enough.
#[derive(Default)]
pub struct Pruner {
    marks: Mutex<VecDeque<(Instant, String)>>,
}

impl Pruner {
    /// One round: returns the rows deleted.
    pub async fn prune(&self, pool: &sqlx::PgPool, kept: Duration) -> Result<u64> {
        let now = sqlx::query_scalar!(r#"SELECT pg_current_snapshot()::text AS "now!""#).fetch_one(pool).await?;
        let old_enough = {
            let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
            marks.push_back((Instant::now(), now));
            let mut newest_old = None;
            while marks.front().is_some_and(|(at, _)| at.elapsed() >= kept) {
                newest_old = marks.pop_front().map(|(_, snapshot)| snapshot);
            }
            newest_old
        };
        let Some(before) = old_enough else { return Ok(0) };
        let done = sqlx::query!(
            "DELETE FROM seat_changes WHERE xid < pg_snapshot_xmax($1::text::pg_snapshot) AND pg_visible_in_snapshot(xid, $1::text::pg_snapshot)",
            before
        )
        .execute(pool)
        .await?;
        Ok(done.rows_affected())
    }
}
