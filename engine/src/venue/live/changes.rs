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

use std::time::Duration;

use crate::error::Result;

/// Rows older than this are pruned. An instance that has not read the log
/// for half as long reloads its boards rather than trust what is left.
pub const KEPT: Duration = Duration::from_secs(600);

/// Where an instance has read the log up to.
pub(super) struct ChangeLog {
    /// The snapshot of the last read, as `pg_snapshot` text.
    seen: String,
}

impl ChangeLog {
    /// Starts from now: what committed before is in the boards loaded after.
    pub(super) async fn from_now(pool: &sqlx::PgPool) -> Result<Self> {
        let seen = sqlx::query_scalar!(r#"SELECT pg_current_snapshot()::text AS "seen!""#).fetch_one(pool).await?;
        Ok(Self { seen })
    }

    /// The changes committed since the last read, each a message as the
    /// trigger wrote it.
    pub(super) async fn read_new(&mut self, pool: &sqlx::PgPool) -> Result<Vec<String>> {
        let rows = sqlx::query!(
            r#"WITH now AS (SELECT pg_current_snapshot() AS seen, $1::text::pg_snapshot AS before)
               SELECT now.seen::text AS "seen!", c.message AS "message?"
                 FROM now LEFT JOIN seat_changes c
                   ON c.xid >= pg_snapshot_xmin(now.before) AND c.xid < pg_snapshot_xmax(now.seen)
                  AND NOT pg_visible_in_snapshot(c.xid, now.before) AND pg_visible_in_snapshot(c.xid, now.seen)
                ORDER BY c.xid"#,
            self.seen
        )
        .fetch_all(pool)
        .await?;
        let mut messages = Vec::with_capacity(rows.len());
        for row in rows {
            self.seen = row.seen;
            messages.extend(row.message);
        }
        Ok(messages)
    }
}

/// Deletes the rows every instance has read long since.
pub async fn prune(pool: &sqlx::PgPool) -> Result<u64> {
    let kept = KEPT.as_secs_f64();
    let done = sqlx::query!("DELETE FROM seat_changes WHERE logged_at < now() - make_interval(secs => $1)", kept).execute(pool).await?;
    Ok(done.rows_affected())
}
