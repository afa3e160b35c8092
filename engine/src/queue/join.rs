//! Joining the waiting room in batches (see [`crate::sale::group_commit`]):
//! the joins that arrive while a batch is in the database gather into the
//! next, one `queue_join_many` call per event and sale for all of them, so a
//! burst of fans costs a few commits, not one per fan. Two batches of one
//! queue are safe together: `queue_join_many` locks its row first.

use std::collections::HashMap;

use frontrow_model::{EventId, SalePhase, UserId};
use sqlx::PgConnection;

use super::Entry;
use crate::error::{EngineError, Result};
use crate::sale::group_commit::{Batch, GroupCommit};

pub(super) fn new_queue_token() -> String {
    crate::tokens::random_hex(16)
}

pub(crate) struct Joins;

pub(crate) type Joiner = GroupCommit<Joins>;

impl Batch for Joins {
    type Request = UserId;
    /// The fan's entry as it stands after the join (or why the event takes
    /// no joins, said to every fan of the batch without a call each).
    type Outcome = Entry;
    /// One queue: the event and which of its sales.
    type Key = (EventId, SalePhase);
    const SIZE_METRIC: &'static str = "frontrow_queue_join_batch_size";
    /// A join is one small row: a burst of fans goes in a few commits.
    const MAX_BATCH: usize = 2000;

    async fn call(connection: &mut PgConnection, (event_id, phase): (EventId, SalePhase), users: &[UserId]) -> Result<Vec<Result<Entry>>> {
        match join_batch(connection, event_id, phase, users).await {
            // A fan may be in a batch twice (two tabs): both get the entry.
            Ok(entries) => {
                Ok(users.iter().map(|u| entries.get(u).cloned().ok_or_else(|| EngineError::Internal("a join went unanswered".into()))).collect())
            }
            Err(EngineError::NotFound) => Ok(users.iter().map(|_| Err(EngineError::NotFound)).collect()),
            Err(EngineError::WaitingRoomOff) => Ok(users.iter().map(|_| Err(EngineError::WaitingRoomOff)).collect()),
            Err(e) => Err(e),
        }
    }
}

/// Joins the batch; the same call answers every joiner's entry and the
/// queue's figures, so the fans' first answers cost no query each.
async fn join_batch(connection: &mut PgConnection, event_id: EventId, phase: SalePhase, users: &[UserId]) -> Result<HashMap<UserId, Entry>> {
    let enabled = sqlx::query_scalar!("SELECT waiting_room_enabled FROM events WHERE event_id = $1", event_id.as_uuid())
        .fetch_optional(&mut *connection)
        .await?
        .ok_or(EngineError::NotFound)?;
    if !enabled {
        return Err(EngineError::WaitingRoomOff);
    }
    let tokens: Vec<String> = users.iter().map(|_| new_queue_token()).collect();
    let rows = sqlx::query!(
        r#"SELECT out_user AS "user_id!", out_token AS "queue_token!", out_ticket AS ticket, out_admission_id AS admission_id,
                  out_live_admission AS "live_admission!", out_admitted_through AS "admitted_through!",
                  out_prequeue AS "prequeue!", out_admit_rate AS "admit_rate!"
             FROM queue_join_many($1, $2, $3, $4)"#,
        event_id.as_uuid(),
        phase as SalePhase,
        users as &[UserId],
        &tokens
    )
    .fetch_all(&mut *connection)
    .await?;
    metrics::counter!("frontrow_queue_joins_total").increment(users.len() as u64);
    Ok(rows
        .into_iter()
        .map(|r| {
            let entry = Entry {
                queue_token: r.queue_token,
                phase,
                presale_over: false,
                ticket: r.ticket,
                admission_id: r.admission_id,
                live_admission: r.live_admission,
                admitted_through: r.admitted_through,
                prequeue: r.prequeue,
                admit_rate: r.admit_rate,
            };
            (UserId::from(r.user_id), entry)
        })
        .collect())
}
