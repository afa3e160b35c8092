//! Reading queue entries by token in batches (see
//! [`crate::sale::group_commit`]). Every waiting fan's page opens a live
//! socket and asks where it stands now and then; in an on-sale those reads
//! come a thousand a second, and each was a pooled query plus the pool's
//! two checks on the connection handed back. One call now answers all the
//! tokens that came in together. Tokens are unique across events, and the call finds them by
//! that index alone: with the event in its condition too, a planner working
//! from stale statistics may read the whole queue's part of the primary key
//! first.

use std::collections::HashMap;

use frontrow_model::{EventId, SalePhase, UserId};
use sqlx::PgConnection;

use super::Entry;
use crate::error::Result;
use crate::sale::group_commit::{Batch, GroupCommit};

pub(crate) struct EntryReads;

pub(crate) type EntryReader = GroupCommit<EntryReads>;

impl Batch for EntryReads {
    /// A well-formed queue token.
    type Request = String;
    /// The entry's event, whose entry it is and the entry with its queue's
    /// figures; none if no entry has that token.
    type Outcome = Option<(EventId, UserId, Entry)>;
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_queue_entry_read_batch_size";
    const MAX_BATCH: usize = 1000;

    async fn call(connection: &mut PgConnection, _: (), tokens: &[String]) -> Result<Vec<Result<Self::Outcome>>> {
        let rows = sqlx::query!(
            r#"SELECT e.queue_token, e.event_id, e.user_id, e.phase AS "phase: SalePhase", e.ticket, e.admission_id,
                      coalesce(e.admission_expires_at > now(), false) AS "live_admission!",
                      q.admitted_through, q.prequeue, q.admit_rate,
                      (e.phase = 'presale' AND ev.sale_opens_at <= now()) AS "presale_over!"
               FROM queue_entries e JOIN queues q USING (event_id, phase) JOIN events ev USING (event_id)
               WHERE e.queue_token = ANY($1)"#,
            tokens
        )
        .fetch_all(connection)
        .await?;
        let found: HashMap<String, (EventId, UserId, Entry)> = rows
            .into_iter()
            .map(|r| {
                let entry = Entry {
                    queue_token: r.queue_token.clone(),
                    phase: r.phase,
                    presale_over: r.presale_over,
                    ticket: r.ticket,
                    admission_id: r.admission_id,
                    live_admission: r.live_admission,
                    admitted_through: r.admitted_through,
                    prequeue: r.prequeue,
                    admit_rate: r.admit_rate,
                };
                (r.queue_token, (EventId::from(r.event_id), UserId::from(r.user_id), entry))
            })
            .collect();
        // A token asked for twice in one batch (two tabs) is answered twice.
        Ok(tokens.iter().map(|t| Ok(found.get(t).cloned())).collect())
    }
}
