//! Group commit for holds: the hold requests that arrive while a batch is
//! in the database gather into the next one, and each event's share of a
//! batch is one call of the `hold_batch` function (one round trip, one
//! commit). At low load a batch is a single request and waits for nothing;
//! under an on-sale crowd the commits, not the fans, are what is shared.
//!
//! Inside a batch the requests are decided in arrival order, each all or
//! nothing, exactly as if they had run one by one (see the migration).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, Hold, HoldId, UserId};
use serde::Serialize;
use sqlx::pool::PoolConnection;
use sqlx::Postgres;
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::db::{retrying, LOCK_FAN_LIMIT};
use crate::error::{EngineError, Result};

/// Most requests in one batch (all events together).
const MAX_HOLD_BATCH: usize = 256;

/// Batches in the database at once. With one, the database sits idle while
/// a batch's commit is flushed and its answer travels back; with two, the
/// next batch runs meanwhile. Two batches of one event are safe together:
/// each takes its locks up front in the one global order (see the migration).
const BATCHES_IN_FLIGHT: usize = 2;

/// One fan's hold request, as the database function takes it: named
/// seats, or (`area` and `count`) any free places of a standing area.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HoldRequest {
    pub fan: UserId,
    pub seats: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub area: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    pub hold: HoldId,
    pub token: String,
    /// The token's tag for the seat audit rows.
    pub tag: String,
    pub key: Option<String>,
    pub hash: String,
    /// The fan showed a valid admission to the event's waiting room (the
    /// database decides whether the event needs one).
    pub admitted: bool,
}

/// What the database decided for one request: the whole answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HoldOutcome {
    /// Held: these seats (the ones named, or the places found).
    Held { seats: Vec<String>, expires_at: DateTime<Utc>, total_cents: i64 },
    /// The same request came before and its hold lives (by its key, or
    /// without one, a live hold of this fan on exactly these seats).
    Earlier(Hold),
    /// Not every seat was free: these were.
    Conflict { free: Vec<String> },
    /// Seat ids this event does not have.
    Unknown(Vec<String>),
    TooMany,
    /// The key was used for another request.
    KeyReused,
    /// The key's hold has ended.
    HoldEnded,
    /// The event's waiting room is on and the fan was not admitted.
    NotAdmitted,
    /// The sale has not opened.
    NotOpen,
    /// Unpublished or cancelled.
    Closed,
}

struct Pending {
    event_id: EventId,
    request: HoldRequest,
    reply: oneshot::Sender<Result<HoldOutcome>>,
}

pub(crate) struct HoldBatcher {
    requests: mpsc::Sender<Pending>,
    counts: Arc<BatchCounts>,
    /// Holds sent and not yet answered.
    waiting: Arc<AtomicUsize>,
}

/// Counts a hold as waiting until it is answered or abandoned.
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Holds asked for and database calls made: their ratio is the batching.
#[derive(Debug, Default)]
pub struct BatchCounts {
    pub holds: AtomicU64,
    pub calls: AtomicU64,
    /// Holds refused from the board while others waited, without a call.
    pub refused_from_board: AtomicU64,
}

impl HoldBatcher {
    /// Starts the batching task on the current Tokio runtime.
    pub fn start(pool: sqlx::PgPool, counts: Arc<BatchCounts>) -> Self {
        let (requests, incoming) = mpsc::channel(64 * 1024);
        tokio::spawn(run(pool, incoming, counts.clone()));
        Self { requests, counts, waiting: Arc::default() }
    }

    pub fn is_running(&self) -> bool {
        !self.requests.is_closed()
    }

    /// Whether holds are waiting for the database right now.
    pub fn is_busy(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    pub async fn hold(&self, event_id: EventId, request: HoldRequest) -> Result<HoldOutcome> {
        self.counts.holds.fetch_add(1, Ordering::Relaxed);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(self.waiting.clone());
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Pending { event_id, request, reply })
            .await
            .map_err(|_| EngineError::Internal("the hold batcher has stopped".into()))?;
        answer.await.map_err(|_| EngineError::Internal("the hold batcher dropped a hold".into()))?
    }
}

/// Connections kept from one batch to the next. The pool proves a
/// connection alive with a round trip (a ping) each time it hands one out; a
/// batch on a kept connection skips that, so a hold costs the database one
/// round trip. A connection whose call failed goes back to the pool, whose
/// ping then weeds it out if it is dead (after a database restart, say).
#[derive(Default)]
struct KeptConnections(std::sync::Mutex<Vec<PoolConnection<Postgres>>>);

impl KeptConnections {
    async fn take(&self, pool: &sqlx::PgPool) -> std::result::Result<PoolConnection<Postgres>, sqlx::Error> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match kept {
            Some(connection) => Ok(connection),
            None => pool.acquire().await,
        }
    }

    /// Gives every kept connection back (the pool is closing and waits for
    /// them).
    fn release_all(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn keep(&self, connection: PoolConnection<Postgres>) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // As many as the batches that can run at once (events side by side
        // included, within reason); the rest go back to the pool.
        if kept.len() < BATCHES_IN_FLIGHT * 2 {
            kept.push(connection);
        }
    }
}

async fn run(pool: sqlx::PgPool, mut incoming: mpsc::Receiver<Pending>, counts: Arc<BatchCounts>) {
    let in_flight = Arc::new(Semaphore::new(BATCHES_IN_FLIGHT));
    let kept = Arc::new(KeptConnections::default());
    // A closing pool waits for every connection out of it: hand ours back.
    tokio::spawn({
        let (closed, kept) = (pool.close_event(), kept.clone());
        async move {
            closed.await;
            kept.release_all();
        }
    });
    loop {
        // While every slot is busy, arrivals wait in the channel and form
        // the next batch.
        let Ok(slot) = in_flight.clone().acquire_owned().await else { return };
        let Some(first) = incoming.recv().await else { return };
        let mut batch = vec![first];
        while batch.len() < MAX_HOLD_BATCH {
            match incoming.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        // A fan who went away before their turn is not held for: nobody
        // would learn the hold's token.
        batch.retain(|pending| !pending.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        metrics::histogram!("frontrow_hold_batch_size").record(batch.len() as f64);
        let mut by_event: HashMap<EventId, Vec<Pending>> = HashMap::new();
        for pending in batch {
            by_event.entry(pending.event_id).or_default().push(pending);
        }
        // Events do not share seats: their batches go side by side.
        let mut running = tokio::task::JoinSet::new();
        for (event_id, group) in by_event {
            counts.calls.fetch_add(1, Ordering::Relaxed);
            let (pool, kept) = (pool.clone(), kept.clone());
            running.spawn(async move { decide(&pool, &kept, event_id, group).await });
        }
        tokio::spawn(async move {
            while running.join_next().await.is_some() {}
            drop(slot);
        });
    }
}

/// Runs one event's share of a batch and answers each fan.
async fn decide(pool: &sqlx::PgPool, kept: &KeptConnections, event_id: EventId, group: Vec<Pending>) {
    let requests: Vec<HoldRequest> = group.iter().map(|p| p.request.clone()).collect();
    match retrying(|| call(pool, kept, event_id, &requests)).await {
        Ok(outcomes) => {
            for (pending, outcome) in group.into_iter().zip(outcomes) {
                let _ = pending.reply.send(Ok(outcome));
            }
        }
        // The database is away: every fan in the batch hears so at once.
        Err(EngineError::Unavailable(_)) => {
            for pending in group {
                let _ = pending.reply.send(Err(EngineError::Unavailable(sqlx::Error::PoolTimedOut)));
            }
        }
        // Anything else: each request alone, so each gets its own answer.
        Err(e) if group.len() == 1 => {
            if let Some(pending) = group.into_iter().next() {
                let _ = pending.reply.send(Err(e));
            }
        }
        Err(e) => {
            tracing::warn!(%event_id, error = %e, size = group.len(), "a hold batch failed; deciding its requests one by one");
            for pending in group {
                let alone = retrying(|| call(pool, kept, event_id, std::slice::from_ref(&pending.request))).await;
                let answer = alone.and_then(|mut o| o.pop().ok_or_else(|| EngineError::Internal("a hold went unanswered".into())));
                let _ = pending.reply.send(answer);
            }
        }
    }
}

/// One call of `hold_batch`: one outcome per request, in order.
async fn call(pool: &sqlx::PgPool, kept: &KeptConnections, event_id: EventId, requests: &[HoldRequest]) -> Result<Vec<HoldOutcome>> {
    let body = serde_json::to_value(requests).map_err(|e| EngineError::Internal(e.to_string()))?;
    let mut connection = kept.take(pool).await?;
    let rows = sqlx::query!(
        r#"SELECT request_index AS "request_index!", outcome AS "outcome!", seat_ids,
                  lease_ends_at AS "lease_ends_at: DateTime<Utc>", hold_total_cents, hold_id, hold_token
             FROM hold_batch($1, $2, $3)"#,
        event_id.as_uuid(),
        LOCK_FAN_LIMIT,
        body,
    )
    .fetch_all(&mut *connection)
    .await?;
    kept.keep(connection);
    // Closed meanwhile: the pool is waiting for it.
    if pool.is_closed() {
        kept.release_all();
    }
    let mut outcomes = vec![None; requests.len()];
    for row in rows {
        let seats = row.seat_ids.unwrap_or_default();
        let outcome = match (row.outcome.as_str(), row.lease_ends_at, row.hold_total_cents) {
            ("held", Some(expires_at), Some(total_cents)) => HoldOutcome::Held { seats, expires_at, total_cents },
            ("earlier", Some(expires_at), Some(total_cents)) => match (row.hold_id, row.hold_token) {
                (Some(hold_id), Some(hold_token)) => {
                    HoldOutcome::Earlier(Hold { hold_id: hold_id.into(), hold_token, event_id, seat_ids: seats, expires_at, total_cents })
                }
                _ => return Err(EngineError::Internal("hold_batch answered an earlier hold without its id".into())),
            },
            ("conflict", ..) => HoldOutcome::Conflict { free: seats },
            ("unknown", ..) => HoldOutcome::Unknown(seats),
            ("too_many", ..) => HoldOutcome::TooMany,
            ("key_reused", ..) => HoldOutcome::KeyReused,
            ("hold_ended", ..) => HoldOutcome::HoldEnded,
            ("not_admitted", ..) => HoldOutcome::NotAdmitted,
            ("not_open", ..) => HoldOutcome::NotOpen,
            ("closed", ..) => HoldOutcome::Closed,
            (other, ..) => return Err(EngineError::Internal(format!("hold_batch answered {other:?}"))),
        };
        if let Some(slot) = usize::try_from(row.request_index).ok().and_then(|i| outcomes.get_mut(i)) {
            *slot = Some(outcome);
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.ok_or_else(|| EngineError::Internal("hold_batch left a request unanswered".into())))
        .collect()
}
