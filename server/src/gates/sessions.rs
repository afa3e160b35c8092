//! Where sessions are kept: in PostgreSQL, with what this instance has read
//! of them kept in memory, so that signed-in fans keep browsing while the
//! database is away. A session that ends anywhere is forgotten here too
//! (the change feed says so), and saving never brings an ended one back.

use async_trait::async_trait;
use frontrow_engine::accounts::SessionEnd;
use frontrow_engine::Engine;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use tower_sessions::cookie::time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use tower_sessions_sqlx_store::PostgresStore;

#[derive(Clone)]
pub struct Sessions {
    db: PostgresStore,
    pool: PgPool,
    /// Reads sessions not kept here, many in one call under a crowd.
    engine: Engine,
    kept: moka::future::Cache<Id, Record>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("kept", &self.kept.entry_count()).finish_non_exhaustive()
    }
}

impl Sessions {
    /// Keeps up to `entries` sessions in memory (a few hundred bytes each).
    pub fn new(pool: PgPool, engine: Engine, entries: u64) -> Self {
        Self { db: PostgresStore::new(pool.clone()), pool, engine, kept: moka::future::Cache::new(entries) }
    }

    /// The table itself (migrations, sweeping expired sessions).
    pub fn database(&self) -> &PostgresStore {
        &self.db
    }

    /// Forgets the sessions the change feed says have ended, until `stop`.
    pub async fn follow_ends(self, engine: Engine, stop: CancellationToken) {
        let mut ends = engine.session_ends();
        loop {
            let end = tokio::select! {
                _ = stop.cancelled() => return,
                end = ends.recv() => end,
            };
            match end {
                Ok(SessionEnd::One(id)) => {
                    if let Ok(id) = id.parse::<Id>() {
                        self.kept.invalidate(&id).await;
                    }
                }
                // Missed ends (a feed interrupted, or this reader behind):
                // what is kept may be stale, so none of it is trusted.
                Ok(SessionEnd::Unknown) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.kept.invalidate_all(),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

fn backend(e: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(e.to_string())
}

#[async_trait]
impl SessionStore for Sessions {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        self.db.create(record).await?;
        self.kept.insert(record.id, record.clone()).await;
        Ok(())
    }

    /// Writes only a session that still exists: one that signed out on
    /// another instance while this request ran stays signed out. (New
    /// sessions go through `create`.)
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = rmp_serde::to_vec(record).map_err(|e| session_store::Error::Encode(e.to_string()))?;
        // The table is tower-sessions' own (its migration makes it).
        let updated = sqlx::query(r#"UPDATE "tower_sessions"."session" SET data = $2, expiry_date = $3 WHERE id = $1"#)
            .bind(record.id.to_string())
            .bind(data)
            .bind(record.expiry_date)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        if updated.rows_affected() == 0 {
            self.kept.invalidate(&record.id).await;
        } else {
            self.kept.insert(record.id, record.clone()).await;
        }
        Ok(())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        if let Some(record) = self.kept.get(id).await {
            if record.expiry_date > OffsetDateTime::now_utc() {
                return Ok(Some(record));
            }
            self.kept.invalidate(id).await;
        }
        let record: Option<Record> = match self.engine.stored_session(id.to_string()).await.map_err(backend)? {
            Some(data) => Some(rmp_serde::from_slice(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?),
            None => None,
        };
        if let Some(record) = &record {
            self.kept.insert(*id, record.clone()).await;
        }
        Ok(record)
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.kept.invalidate(id).await;
        self.db.delete(id).await?;
        self.kept.invalidate(id).await;
        Ok(())
    }
}
