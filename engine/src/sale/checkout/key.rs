//! The idempotency key's claim, one rule for every keyed purchase (a fan's
//! checkout, a counter sale): one `checkouts` row per (account, key) with
//! the request's fingerprint, a lease while a request works on it, and the
//! answer to replay once there is one.

use frontrow_model::{CheckoutId, EventId, HoldId, TicketChoices, UserId};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::Engine;

/// What a request finds under a key that is already claimed.
pub(crate) enum Claimed {
    /// The answer of the request that finished, to replay.
    Answered(serde_json::Value),
    /// Another request is working on it now.
    InUse,
    /// Its request died before answering; this one took over its lease and
    /// carries on from where it stopped.
    TakenOver(CheckoutId),
}

/// One keyed request: who, with which key, and the fingerprint that tells
/// a retry from a different request under the same key.
pub(crate) struct KeyedRequest<'a> {
    pub user_id: UserId,
    pub key: &'a str,
    pub request_hash: &'a str,
}

impl KeyedRequest<'_> {
    /// Claims the key for a new request on `hold_id` (with the ticket type
    /// of each seat, if the event has types); `None` if the key is already
    /// claimed (see [`Self::existing`]).
    pub async fn claim(
        &self,
        conn: &mut PgConnection,
        engine: &Engine,
        hold_id: HoldId,
        event_id: EventId,
        ticket_types: Option<&TicketChoices>,
    ) -> Result<Option<CheckoutId>> {
        let ticket_types = ticket_types.map(serde_json::to_value).transpose().map_err(|e| EngineError::Internal(e.to_string()))?;
        Ok(sqlx::query_scalar!(
            r#"INSERT INTO checkouts (checkout_id, user_id, idempotency_key, request_hash, hold_id, event_id, lease_until, lease_owner, ticket_types)
               VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7), $8, $9)
               ON CONFLICT (user_id, idempotency_key) DO NOTHING
               RETURNING checkout_id"#,
            Uuid::new_v4(),
            self.user_id.as_uuid(),
            self.key,
            self.request_hash,
            hold_id.as_uuid(),
            event_id.as_uuid(),
            engine.settings().checkout_lease.as_secs_f64(),
            engine.settings().instance_id,
            ticket_types,
        )
        .fetch_optional(conn)
        .await?
        .map(CheckoutId::from))
    }

    /// The key's claim as this request finds it (`None`: not claimed). The
    /// same key with a different request is refused.
    pub async fn existing(&self, conn: &mut PgConnection, engine: &Engine) -> Result<Option<Claimed>> {
        let Some(found) = sqlx::query!(
            r#"SELECT checkout_id, request_hash, response_body, NOT lease_lapsed(lease_until, lease_owner) AS "leased!"
               FROM checkouts WHERE user_id = $1 AND idempotency_key = $2"#,
            self.user_id.as_uuid(),
            self.key
        )
        .fetch_optional(&mut *conn)
        .await?
        else {
            return Ok(None);
        };
        if found.request_hash != self.request_hash {
            return Err(EngineError::IdempotencyKeyReused);
        }
        if let Some(body) = found.response_body {
            return Ok(Some(Claimed::Answered(body)));
        }
        if found.leased {
            return Ok(Some(Claimed::InUse));
        }
        // Its time ran out or its server stopped beating; whoever updates
        // first takes it over.
        let taken = sqlx::query_scalar!(
            r#"UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), lease_owner = $3, updated_at = now()
                WHERE checkout_id = $1 AND lease_lapsed(lease_until, lease_owner) AND response_body IS NULL
            RETURNING checkout_id"#,
            found.checkout_id,
            engine.settings().checkout_lease.as_secs_f64(),
            engine.settings().instance_id,
        )
        .fetch_optional(conn)
        .await?;
        Ok(Some(taken.map_or(Claimed::InUse, |id| Claimed::TakenOver(id.into()))))
    }
}

/// Ends a failed request's lease at once, so a retry (or reconciliation)
/// takes over now rather than when the lease runs out.
pub(crate) async fn let_go(engine: &Engine, checkout_id: CheckoutId) {
    let _ = sqlx::query!("UPDATE checkouts SET lease_until = now() WHERE checkout_id = $1 AND response_body IS NULL", checkout_id.as_uuid())
        .execute(engine.pool())
        .await;
}
