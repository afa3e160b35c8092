//! Server instances: each beats once a second, and a checkout's claim on its
//! idempotency key belongs to the instance that made it (see the
//! `lease_lapsed` SQL function). A claim lapses when its time is up or its
//! instance stops beating; a restarted instance lets go at once of what its
//! previous life held.

use std::time::Duration;

use crate::error::Result;
use crate::Engine;

/// Instances silent this long are not told of seat changes (they still read
/// the change log a few times a second, see `venue::live`).
const OTHERS_SILENT_AFTER: Duration = Duration::from_secs(5);

impl Engine {
    /// Registers this instance at start, and frees the checkout claims its
    /// previous life left behind (that process is gone; a retry of its
    /// requests is answered now, not when their claims run out). Answers how
    /// many it freed.
    pub async fn start_instance(&self) -> Result<u64> {
        let instance_id = self.settings().instance_id;
        let mut tx = crate::db::begin(self.pool()).await?;
        sqlx::query!(
            r#"INSERT INTO instances (instance_id) VALUES ($1)
               ON CONFLICT (instance_id) DO UPDATE SET started_at = now(), heartbeat_at = now()"#,
            instance_id
        )
        .execute(&mut *tx)
        .await?;
        let freed = sqlx::query!(
            "UPDATE checkouts SET lease_until = now() WHERE lease_owner = $1 AND lease_until > now() AND response_body IS NULL",
            instance_id
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        // Instances silent for a day are gone for good.
        sqlx::query!("DELETE FROM instances WHERE heartbeat_at < now() - interval '1 day'").execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(freed)
    }

    /// This instance is alive (once a second from the background tasks);
    /// and whether others are, which the live maps' hints need to know.
    pub async fn heartbeat(&self) -> Result<()> {
        let others = sqlx::query_scalar!(
            r#"WITH beat AS (
                   INSERT INTO instances (instance_id) VALUES ($1)
                   ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now()
               )
               SELECT count(*) AS "others!" FROM instances
                WHERE instance_id <> $1 AND heartbeat_at > now() - make_interval(secs => $2)"#,
            self.settings().instance_id,
            OTHERS_SILENT_AFTER.as_secs_f64()
        )
        .fetch_one(self.pool())
        .await?;
        self.board().set_others_alive(others > 0);
        Ok(())
    }
}
