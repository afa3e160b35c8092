//! Following the seat change log (`seat_changes`).
//!
//! Seat-changing transactions write their changes to a table rather than
//! `NOTIFY` them: PostgreSQL serialises notifying commits on one lock held
//! through the WAL flush, and every hold, release and sale queued on it.
//! Each instance reads the log from where it stopped. Its cursor passes a
//! row only once every transaction older than the row's own has finished
//! (its `tx` is below the snapshot's xmin), so nothing can later appear
//! behind the cursor. Committed rows of newer transactions are applied at
//! once all the same (a seat's version keeps a change from being applied
//! twice or out of order), and read again shortly until the cursor passes.
//!
//! An instance reads at once when it changed seats itself, and then sends an
//! empty notice on [`notices::SEATS`] (outside the change's transaction,
//! one at a time, so a burst costs one) so the others read at once too;
//! alone (no other instance's heartbeat lately) it sends none.
//! Without either, it reads every [`IDLE`]: a change made by hand arrives
//! within that.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, Notify};

use super::SeatBoard;
use crate::db::KeptConnections;
use crate::error::Result;
use crate::notices;

/// How often the log is read when nobody says it changed.
const IDLE: Duration = Duration::from_millis(250);
/// When rows wait on an older transaction: the first look again, and the
/// longest wait between looks while they still wait.
const PENDING_FIRST: Duration = Duration::from_millis(2);
const PENDING_AT_MOST: Duration = Duration::from_millis(64);
/// Rows read in one go.
const PAGE: i64 = 500;
/// Rows are deleted this long after their transaction began (and only
/// once every instance could read them, see [`prune`]).
const KEEP: &str = "10 minutes";
/// An instance that has not read the log for this long may have lost rows
/// to the deletion: it starts again from the head and reloads its events.
const LAG_LIMIT: Duration = Duration::from_secs(300);
/// How often each instance looks for rows past [`KEEP`] to delete.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Where this instance has read the log up to.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// Every row up to here (transaction id, row id) has been applied.
    upto: (i64, i64),
    /// Rows of newer transactions already committed are applied ahead of
    /// the cursor, so one long transaction elsewhere does not hold the
    /// maps back: up to here. (A row of a transaction between the two that
    /// commits later waits for the cursor; applying twice is harmless.)
    ahead: (i64, i64),
    read_at: Instant,
    /// The boards were not reloaded after a jump to the head: do it again.
    stale: bool,
}

/// This instance's place in the log and the signals that move it.
pub(super) struct Tail {
    /// `None` until the listener first connects and the board is in step.
    cursor: Mutex<Option<Cursor>>,
    /// Read the log now.
    wake: Notify,
    /// Tell the other instances to read the log.
    hint: Notify,
    /// Whether other instances beat lately (true until the first heartbeat
    /// says otherwise): alone, an instance sends no hints.
    others_alive: AtomicBool,
}

impl Tail {
    pub(super) fn new() -> Self {
        Self { cursor: Mutex::new(None), wake: Notify::new(), hint: Notify::new(), others_alive: AtomicBool::new(true) }
    }
}

/// What one read found.
struct Read {
    /// Committed rows wait for an older transaction to end.
    waiting: bool,
}

impl SeatBoard {
    /// Seats were changed through this instance and committed: its viewers
    /// hear of it now, and the other instances are told to look.
    pub fn seats_written(&self) {
        self.tail.wake.notify_one();
        if self.tail.others_alive.load(Ordering::Relaxed) {
            self.tail.hint.notify_one();
        }
    }

    /// Whether other instances are running (from this one's heartbeat).
    pub fn set_others_alive(&self, alive: bool) {
        self.tail.others_alive.store(alive, Ordering::Relaxed);
    }

    /// Another instance (or a reconnecting listener) says the log moved.
    pub(super) fn log_moved(&self) {
        self.tail.wake.notify_one();
    }

    /// Starts reading the log from its head and reloads every loaded event,
    /// since changes before the head may not have been applied here.
    pub(super) async fn follow_from_head(&self) -> Result<()> {
        let head = sqlx::query!(
            r#"SELECT tx::text::bigint AS "tx!", id
                 FROM seat_changes
                WHERE tx < pg_snapshot_xmin(pg_current_snapshot())
                ORDER BY tx DESC, id DESC
                LIMIT 1"#
        )
        .fetch_optional(&self.pool)
        .await?;
        let upto = head.map_or((0, 0), |h| (h.tx, h.id));
        *self.tail.cursor.lock().await = Some(Cursor { upto, ahead: upto, read_at: Instant::now(), stale: true });
        self.resync_all().await?;
        if let Some(cursor) = self.tail.cursor.lock().await.as_mut() {
            cursor.stale = false;
        }
        Ok(())
    }

    /// Reads and applies every row that can be read now, on `reader`'s
    /// connection.
    async fn read_log(&self, reader: &KeptConnections) -> Result<Read> {
        let mut guard = self.tail.cursor.lock().await;
        let Some(mut cursor) = *guard else { return Ok(Read { waiting: false }) };
        if cursor.stale || cursor.read_at.elapsed() > LAG_LIMIT {
            drop(guard);
            tracing::warn!("the seat change log was not followed for a while: reloading the live maps");
            self.follow_from_head().await?;
            return Ok(Read { waiting: false });
        }
        let mut connection = reader.take(&self.pool).await?;
        loop {
            let ahead_from = cursor.ahead.max(cursor.upto);
            // One snapshot: rows of finished transactions after the cursor
            // ("ready"), committed rows of newer ones after what was applied
            // ahead ("ahead"), and whether any committed row still waits
            // (asked as the newest row's tx, one probe of the key's index:
            // as `EXISTS (… WHERE tx >= xmin)` the planner scanned the whole
            // log, 2 ms a read with ten minutes of a sale's rows).
            let rows = sqlx::query!(
                r#"SELECT tx::text::bigint AS "tx!", id AS "id!", message AS "message!", kind AS "kind!"
                     FROM (SELECT tx, id, message, 'ready' AS kind FROM seat_changes
                            WHERE (tx, id) > ($1::bigint::text::xid8, $2)
                              AND tx < pg_snapshot_xmin(pg_current_snapshot())
                            ORDER BY tx, id
                            LIMIT $5) ready
                   UNION ALL
                   SELECT tx::text::bigint, id, message, 'ahead'
                     FROM (SELECT tx, id, message FROM seat_changes
                            WHERE (tx, id) > ($3::bigint::text::xid8, $4)
                              AND tx >= pg_snapshot_xmin(pg_current_snapshot())
                            ORDER BY tx, id
                            LIMIT $5) ahead
                   UNION ALL
                   SELECT 0, 0, '', 'waiting'
                    WHERE (SELECT max(tx) FROM seat_changes) >= pg_snapshot_xmin(pg_current_snapshot())"#,
                cursor.upto.0,
                cursor.upto.1,
                ahead_from.0,
                ahead_from.1,
                PAGE
            )
            .fetch_all(&mut *connection)
            .await?;
            let waiting = rows.iter().any(|r| r.kind == "waiting");
            let mut ready: Vec<_> = rows.iter().filter(|r| r.kind == "ready").map(|r| (r.tx, r.id, &r.message)).collect();
            let mut ahead: Vec<_> = rows.iter().filter(|r| r.kind == "ahead").map(|r| (r.tx, r.id, &r.message)).collect();
            ready.sort_unstable();
            ahead.sort_unstable();
            let more = ready.len() as i64 == PAGE || ahead.len() as i64 == PAGE;
            for (_, _, message) in ready.iter().chain(&ahead) {
                self.apply_logged(message);
            }
            if let Some((tx, id, _)) = ready.last() {
                cursor.upto = (*tx, *id);
            }
            if let Some((tx, id, _)) = ahead.last() {
                cursor.ahead = (*tx, *id);
            }
            cursor.read_at = Instant::now();
            *guard = Some(cursor);
            if !more {
                reader.keep(&self.pool, connection);
                return Ok(Read { waiting });
            }
        }
    }
}

/// Reads the log whenever told to, every [`IDLE`] otherwise, and again
/// soon while rows wait for older transactions. Runs until dropped.
pub(super) async fn follow(board: &SeatBoard) {
    // Reads follow each other closely under load: one connection kept for
    // them spares each the pool's two checks (bench/PROFILE.md).
    let reader = KeptConnections::new(&board.pool, 1);
    let mut wait = IDLE;
    loop {
        tokio::select! {
            _ = board.tail.wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
        wait = match board.read_log(&reader).await {
            // Waiting on an older transaction: look again soon, then less
            // often if it takes its time.
            Ok(Read { waiting: true }) if wait < IDLE => (wait * 2).min(PENDING_AT_MOST),
            Ok(Read { waiting: true }) => PENDING_FIRST,
            Ok(Read { waiting: false }) => IDLE,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the seat change log");
                IDLE * 2
            }
        };
    }
}

/// Deletes rows past [`KEEP`] that every instance still following the log
/// has been able to read for [`LAG_LIMIT`] (those below a transaction
/// horizon seen that long ago; an instance further behind reloads instead).
/// One instance at a time. Runs until dropped.
pub(super) async fn prune(board: &SeatBoard) {
    let mut horizons: VecDeque<(Instant, i64)> = VecDeque::new();
    loop {
        tokio::time::sleep(PRUNE_EVERY).await;
        match sqlx::query_scalar!(r#"SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS "xmin!""#).fetch_one(&board.pool).await {
            Ok(xmin) => horizons.push_back((Instant::now(), xmin)),
            Err(e) => {
                tracing::debug!(error = %e, "could not read the transaction horizon");
                continue;
            }
        }
        while horizons.len() > 1 && horizons[1].0.elapsed() >= LAG_LIMIT {
            horizons.pop_front();
        }
        let Some(&(seen_at, below)) = horizons.front() else { continue };
        if seen_at.elapsed() < LAG_LIMIT {
            continue;
        }
        let pruned = sqlx::query!(
            r#"DELETE FROM seat_changes
                WHERE tx < $1::bigint::text::xid8 AND at < now() - $2::text::interval
                  AND (SELECT pg_try_advisory_xact_lock($3, 0))"#,
            below,
            KEEP,
            crate::db::LOCK_SEAT_CHANGES_PRUNE
        )
        .execute(&board.pool)
        .await;
        if let Err(e) = pruned {
            tracing::warn!(error = %e, "could not delete old seat changes");
        }
    }
}

/// Tells the other instances, one notice at a time, that this one changed
/// seats. Runs until dropped.
pub(super) async fn tell_others(board: &SeatBoard) {
    loop {
        board.tail.hint.notified().await;
        if let Err(e) = sqlx::query!("SELECT pg_notify($1, '')", notices::SEATS).execute(&board.pool).await {
            tracing::debug!(error = %e, "could not tell the other instances of a seat change");
        }
    }
}
