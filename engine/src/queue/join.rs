//! Joining the waiting room in batches: the joins that arrive while one
//! batch is in the database gather into the next, one `queue_join` call per
//! event for all of them.

use std::collections::HashMap;

use frontrow_model::{EventId, UserId};
use tokio::sync::{mpsc, oneshot};

use crate::error::{EngineError, Result};

pub(super) fn new_queue_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Most joins one database call takes.
const MAX_JOIN_BATCH: usize = 2000;

struct JoinRequest {
    event_id: EventId,
    user_id: UserId,
    reply: oneshot::Sender<Result<String>>,
}

/// Coalesces the joins that arrive together into one `queue_join_many` call
/// per event: while one batch is in the database the next one gathers, so
/// a burst of fans costs a few commits, not one per fan.
pub struct Joiner {
    requests: mpsc::Sender<JoinRequest>,
}

impl Joiner {
    /// Starts the batching task on the current Tokio runtime.
    pub fn start(pool: sqlx::PgPool) -> Self {
        let (requests, incoming) = mpsc::channel(64 * 1024);
        tokio::spawn(run_joiner(pool, incoming));
        Self { requests }
    }

    pub fn is_running(&self) -> bool {
        !self.requests.is_closed()
    }

    /// Joins the fan to the event's queue (again: same place, same token).
    pub async fn join(&self, event_id: EventId, user_id: UserId) -> Result<String> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(JoinRequest { event_id, user_id, reply })
            .await
            .map_err(|_| EngineError::Internal("the queue joiner has stopped".into()))?;
        answer.await.map_err(|_| EngineError::Internal("the queue joiner dropped a join".into()))?
    }
}

async fn run_joiner(pool: sqlx::PgPool, mut incoming: mpsc::Receiver<JoinRequest>) {
    while let Some(first) = incoming.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_JOIN_BATCH {
            match incoming.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let mut by_event: HashMap<EventId, Vec<JoinRequest>> = HashMap::new();
        for request in batch {
            by_event.entry(request.event_id).or_default().push(request);
        }
        for (event_id, requests) in by_event {
            let users: Vec<UserId> = requests.iter().map(|r| r.user_id).collect();
            match join_batch(&pool, event_id, &users).await {
                Ok(tokens) => {
                    for r in requests {
                        let answer = tokens.get(&r.user_id).cloned().ok_or_else(|| EngineError::Internal("join lost".into()));
                        let _ = r.reply.send(answer);
                    }
                }
                Err(e) => {
                    for r in requests {
                        let _ = r.reply.send(Err(match &e {
                            EngineError::NotFound => EngineError::NotFound,
                            EngineError::WaitingRoomOff => EngineError::WaitingRoomOff,
                            other => EngineError::Internal(other.to_string()),
                        }));
                    }
                }
            }
        }
    }
}

async fn join_batch(pool: &sqlx::PgPool, event_id: EventId, users: &[UserId]) -> Result<HashMap<UserId, String>> {
    let enabled = sqlx::query_scalar!("SELECT waiting_room_enabled FROM events WHERE event_id = $1", event_id.as_uuid())
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
    if !enabled {
        return Err(EngineError::WaitingRoomOff);
    }
    let tokens: Vec<String> = users.iter().map(|_| new_queue_token()).collect();
    let rows = sqlx::query!(
        r#"SELECT out_user AS "user_id!", out_token AS "token!" FROM queue_join_many($1, $2, $3)"#,
        event_id.as_uuid(),
        users as &[UserId],
        &tokens
    )
    .fetch_all(pool)
    .await?;
    metrics::counter!("frontrow_queue_joins_total").increment(users.len() as u64);
    metrics::histogram!("frontrow_queue_join_batch_size").record(users.len() as f64);
    Ok(rows.into_iter().map(|r| (UserId::from(r.user_id), r.token)).collect())
}

