//! Group commit: the requests that arrive while a batch is in the database
//! gather into the next one, and each group of a batch (say, one event's
//! holds) is one database call: one round trip, one commit. At low load a
//! batch is a single request and waits for nothing; under an on-sale crowd
//! the commits, not the fans, are what is shared.
//!
//! One batch of a kind is in the database at a time, per instance. A second
//! would run while the first's commit is flushed, but it made the batches
//! smaller (each has a large fixed cost) and contend for the same rows and
//! locks: with two, PostgreSQL spent 16-18% more CPU for fewer holds, hold +
//! release cycles and queue joins (bench/PROFILE.md). Other kinds, and other
//! instances, still run side by side (each kind of batch says why that is
//! safe).
//!
//! What a batch does is the [`Batch`] implementation's: holds
//! ([`super::hold_batch`]), releases ([`super::release_batch`]), the
//! checkout's two transactions ([`super::checkout`]), queue joins
//! ([`crate::queue::join`]), the reads of queue entries by token
//! (`crate::queue::status`) and of sessions and accounts not kept in memory
//! (`crate::accounts::reads`).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::future::join_all;
use sqlx::PgConnection;
use tokio::sync::{mpsc, oneshot};

use crate::db::{retrying, KeptConnections};
use crate::error::{EngineError, Result};

/// One kind of request decided many at a time.
pub(crate) trait Batch: Send + Sync + 'static {
    type Request: Clone + Send + Sync + 'static;
    type Outcome: Send + 'static;
    /// Requests with one key go to the database together; different keys
    /// side by side.
    type Key: Eq + Hash + Copy + Send + Sync + std::fmt::Debug + 'static;
    /// The histogram of batch sizes.
    const SIZE_METRIC: &'static str;
    /// Most requests in one batch (all groups together).
    const MAX_BATCH: usize = 256;
    /// One answer per request, in order, from one statement. The outer error
    /// is the statement's (nothing was done: the requests may be tried
    /// again, one by one); an inner one is that request's answer alone, given
    /// as it is, since the rest of the statement may have committed.
    fn call(
        connection: &mut PgConnection,
        key: Self::Key,
        requests: &[Self::Request],
    ) -> impl Future<Output = Result<Vec<Result<Self::Outcome>>>> + Send;
}

/// A batch function's rows, each naming its request's index and carrying
/// its answer, put in request order; a request without a row is answered
/// with an internal error.
pub(crate) fn in_request_order<O>(count: usize, rows: impl IntoIterator<Item = (i32, Result<O>)>, function: &str) -> Vec<Result<O>> {
    let mut answers: Vec<Option<Result<O>>> = (0..count).map(|_| None).collect();
    for (index, answer) in rows {
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| answers.get_mut(i)) {
            *slot = Some(answer);
        }
    }
    answers.into_iter().map(|a| a.unwrap_or_else(|| Err(EngineError::Internal(format!("{function} left a request unanswered"))))).collect()
}

/// Requests asked for and database calls made: their ratio is the batching.
#[derive(Debug, Default)]
pub struct BatchCounts {
    pub requests: AtomicU64,
    pub calls: AtomicU64,
    /// Holds refused from the board while others waited, without a call.
    pub refused_from_board: AtomicU64,
}

struct Pending<B: Batch> {
    key: B::Key,
    request: B::Request,
    reply: oneshot::Sender<Result<B::Outcome>>,
}

pub(crate) struct GroupCommit<B: Batch> {
    requests: mpsc::Sender<Pending<B>>,
    counts: Arc<BatchCounts>,
    /// Requests sent and not yet answered.
    waiting: Arc<AtomicUsize>,
}

/// Counts a request as waiting until it is answered or abandoned.
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<B: Batch> GroupCommit<B> {
    /// Starts the batching task on the current Tokio runtime.
    pub fn start(pool: sqlx::PgPool, counts: Arc<BatchCounts>) -> Self {
        let (requests, incoming) = mpsc::channel(64 * 1024);
        tokio::spawn(run::<B>(pool, incoming, counts.clone()));
        Self { requests, counts, waiting: Arc::default() }
    }

    pub fn is_running(&self) -> bool {
        !self.requests.is_closed()
    }

    /// The batcher in `slot`, started on first use (and again if its task
    /// ever ended).
    pub fn running_in(slot: &std::sync::Mutex<Option<Arc<Self>>>, pool: &sqlx::PgPool, counts: &Arc<BatchCounts>) -> Arc<Self> {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(batcher) if batcher.is_running() => batcher.clone(),
            _ => slot.insert(Arc::new(Self::start(pool.clone(), counts.clone()))).clone(),
        }
    }

    /// Whether requests are waiting for the database right now.
    pub fn is_busy(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    pub async fn submit(&self, key: B::Key, request: B::Request) -> Result<B::Outcome> {
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(self.waiting.clone());
        let (reply, answer) = oneshot::channel();
        self.requests.send(Pending { key, request, reply }).await.map_err(|_| EngineError::Internal("a batching task has stopped".into()))?;
        answer.await.map_err(|_| EngineError::Internal("a batching task dropped a request".into()))?
    }
}

async fn run<B: Batch>(pool: sqlx::PgPool, mut incoming: mpsc::Receiver<Pending<B>>, counts: Arc<BatchCounts>) {
    // As many as the groups of one batch that run side by side, within reason.
    let kept = KeptConnections::new(&pool, 4);
    // While a batch is in the database, arrivals wait in the channel and
    // form the next one.
    while let Some(first) = incoming.recv().await {
        let mut batch = vec![first];
        while batch.len() < B::MAX_BATCH {
            match incoming.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        // A caller who went away before their turn is not served: for a
        // hold, nobody would learn its token.
        batch.retain(|pending| !pending.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        metrics::histogram!(B::SIZE_METRIC).record(batch.len() as f64);
        let mut groups: HashMap<B::Key, Vec<Pending<B>>> = HashMap::new();
        for pending in batch {
            groups.entry(pending.key).or_default().push(pending);
        }
        counts.calls.fetch_add(groups.len() as u64, Ordering::Relaxed);
        // The groups side by side, awaited here rather than in tasks of
        // their own: once they return, this loop sends the next batch before
        // it yields, so the database does not wait while the tasks its
        // answers woke take their turns (bench/PROFILE.md).
        join_all(groups.into_iter().map(|(key, group)| decide::<B>(&pool, &kept, key, group))).await;
    }
}

/// Runs one group of a batch and answers each caller.
async fn decide<B: Batch>(pool: &sqlx::PgPool, kept: &KeptConnections, key: B::Key, group: Vec<Pending<B>>) {
    let requests: Vec<B::Request> = group.iter().map(|p| p.request.clone()).collect();
    match retrying(|| call::<B>(pool, kept, key, &requests)).await {
        Ok(outcomes) if outcomes.len() == group.len() => {
            for (pending, outcome) in group.into_iter().zip(outcomes) {
                let _ = pending.reply.send(outcome);
            }
        }
        Ok(_) => {
            for pending in group {
                let _ = pending.reply.send(Err(EngineError::Internal("a batch left a request unanswered".into())));
            }
        }
        // The database is away: every caller in the batch hears so at once.
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
            tracing::warn!(?key, error = %e, size = group.len(), "a batch failed; deciding its requests one by one");
            let mut away = false;
            for pending in group {
                // The database went away meanwhile: the rest hear so at once.
                if away {
                    let _ = pending.reply.send(Err(EngineError::Unavailable(sqlx::Error::PoolTimedOut)));
                    continue;
                }
                let alone = retrying(|| call::<B>(pool, kept, key, std::slice::from_ref(&pending.request))).await;
                away = matches!(alone, Err(EngineError::Unavailable(_)));
                let answer = alone.and_then(|mut o| o.pop().unwrap_or_else(|| Err(EngineError::Internal("a request went unanswered".into()))));
                let _ = pending.reply.send(answer);
            }
        }
    }
}

/// One call on a kept connection.
async fn call<B: Batch>(pool: &sqlx::PgPool, kept: &KeptConnections, key: B::Key, requests: &[B::Request]) -> Result<Vec<Result<B::Outcome>>> {
    let mut connection = kept.take(pool).await?;
    let outcomes = B::call(&mut connection, key, requests).await?;
    kept.keep(pool, connection);
    Ok(outcomes)
}
