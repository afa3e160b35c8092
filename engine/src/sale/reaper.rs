//! The reaper: returns lapsed holds to the pool in batches.
//!
//! Lazy expiry already lets a new fan take a lapsed seat at once; the reaper
//! makes the seat map and the counts honest too. It works per event under a
//! transaction-scoped advisory lock, so across any number of server instances
//! exactly one reaper acts on an event at a time (see [`seats::reap`]).

use frontrow_model::EventId;

use crate::db::LOCK_REAPER;
use crate::error::Result;
use crate::sale::seats;
use crate::Engine;

impl Engine {
    /// Frees up to `batch` lapsed seats per event per round; returns seats freed.
    pub async fn reap_once(&self, batch: i64) -> Result<u64> {
        let events = seats::events_with_lapsed_holds(&mut *self.pool().acquire().await?).await?;
        let mut freed = 0;
        for event_id in events {
            freed += self.reap_event(event_id, batch).await?;
        }
        if freed > 0 {
            metrics::counter!("frontrow_seats_reaped_total").increment(freed);
        }
        Ok(freed)
    }

    async fn reap_event(&self, event_id: EventId, batch: i64) -> Result<u64> {
        let mut total = 0;
        loop {
            let mut tx = crate::db::begin(self.pool()).await?;
            if !crate::db::try_lock_event(&mut tx, LOCK_REAPER, event_id).await? {
                return Ok(total);
            }
            let freed = seats::reap(&mut tx, event_id, batch).await?;
            tx.commit().await?;
            if freed > 0 {
                self.board().seats_written();
            }
            total += freed as u64;
            if freed < batch {
                return Ok(total);
            }
        }
    }
}
