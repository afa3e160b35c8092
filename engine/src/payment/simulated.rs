//! The built-in simulated provider, modelled on a real provider's test tokens:
//! `tok_visa` approves, `tok_chargeDeclined` declines, `tok_slow` settles only
//! after `slow_settle`, `tok_lost` charges but the first reply is lost (a
//! repeat with the same key answers). Its control row sets an outage (every
//! call unreachable) and a search lag (a charge is found by key only after it).
//!
//! It keeps its ledger in its own table, as a real provider keeps its own
//! books: the ledger survives a crash of our server, and a repeated request
//! with the same idempotency key returns the original payment.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use super::*;

#[derive(Debug, Clone)]
pub struct SimulatedSettings {
    /// How long a `tok_slow` payment stays processing.
    pub slow_settle: Duration,
}

impl Default for SimulatedSettings {
    fn default() -> Self {
        Self { slow_settle: Duration::from_secs(8) }
    }
}

pub struct SimulatedProvider {
    pool: sqlx::PgPool,
    settings: SimulatedSettings,
}

impl SimulatedProvider {
    pub fn new(pool: sqlx::PgPool, settings: SimulatedSettings) -> Self {
        Self { pool, settings }
    }
}

impl SimulatedProvider {
    /// Every call fails while the control row says the provider is down.
    async fn reachable(&self) -> Result<(), ProviderError> {
        let down = sqlx::query_scalar!(r#"SELECT coalesce(outage_until > now(), false) AS "down!" FROM sim_provider_control"#)
            .fetch_optional(&self.pool)
            .await
            .map_err(unreachable)?
            .unwrap_or(false);
        if down {
            return Err(ProviderError::Unreachable("the provider is down (simulated outage)".into()));
        }
        Ok(())
    }

    /// Reads a payment by our key (through the lagging search) or by its
    /// reference (exact); a slow payment settles (approves) on the first
    /// read after its time has come.
    async fn read(&self, idempotency_key: Option<&str>, provider_ref: Option<&str>) -> Result<Option<ProviderPayment>, ProviderError> {
        self.reachable().await?;
        let row = sqlx::query!(
            r#"UPDATE sim_provider_payments
                  SET status = CASE WHEN status = 'processing' AND settles_at <= now() THEN 'succeeded' ELSE status END
                WHERE provider_ref = $2::text
                   OR (idempotency_key = $1::text
                       AND created_at <= now() - coalesce((SELECT search_lag FROM sim_provider_control), '0 seconds'))
            RETURNING provider_ref, status"#,
            idempotency_key,
            provider_ref
        )
        .fetch_optional(&self.pool)
        .await
        .map_err(unreachable)?;
        Ok(row.map(|r| payment_of(r.provider_ref, &r.status)))
    }
}

fn unreachable(e: sqlx::Error) -> ProviderError {
    ProviderError::Unreachable(e.to_string())
}

fn payment_of(provider_ref: String, status: &str) -> ProviderPayment {
    let status = match status {
        "succeeded" => PaymentStatus::Succeeded,
        "processing" => PaymentStatus::Processing,
        "canceled" => PaymentStatus::Canceled,
        other => PaymentStatus::Declined { reason: other.trim_start_matches("declined:").to_owned() },
    };
    ProviderPayment { provider_ref, status }
}

#[async_trait]
impl PaymentProvider for SimulatedProvider {
    fn name(&self) -> &'static str {
        "simulated"
    }

    async fn create_payment(&self, request: &PaymentRequest) -> Result<ProviderPayment, ProviderError> {
        let (status, settles_in) = match request.payment_token.as_str() {
            "tok_visa" | "tok_lost" => ("succeeded", None),
            "tok_slow" if self.settings.slow_settle.is_zero() => ("succeeded", None),
            "tok_slow" => ("processing", Some(self.settings.slow_settle)),
            "tok_chargeDeclined" => ("declined:your card was declined", None),
            _ => ("declined:unknown payment token", None),
        };
        let settles_in_ms = settles_in.map(|d| d.as_millis() as i64);
        // One statement, as a provider's one request: nothing while the
        // provider is down; a repeat with the same key answers the original
        // charge (exactly: idempotency does not go through the lagging
        // search), settling a slow one whose time has come. The reference is
        // new, so it is the row's only if this request created it.
        let row = sqlx::query!(
            r#"INSERT INTO sim_provider_payments AS p (provider_ref, idempotency_key, amount_cents, payment_token, status, settles_at)
               SELECT $1, $2, $3, $4, $5, now() + make_interval(secs => $6::float8 / 1000)
                WHERE NOT coalesce((SELECT outage_until > now() FROM sim_provider_control), false)
               ON CONFLICT (idempotency_key) DO UPDATE
                  SET status = CASE WHEN p.status = 'processing' AND p.settles_at <= now() THEN 'succeeded' ELSE p.status END
            RETURNING provider_ref, status, provider_ref = $1 AS "created!""#,
            format!("pi_sim_{}", Uuid::new_v4().simple()),
            request.idempotency_key,
            request.amount_cents,
            request.payment_token,
            status,
            settles_in_ms.map(|ms| ms as f64),
        )
        .fetch_optional(&self.pool)
        .await
        .map_err(unreachable)?
        .ok_or_else(|| ProviderError::Unreachable("the provider is down (simulated outage)".into()))?;
        if row.created && request.payment_token == "tok_lost" {
            // The charge went through; the answer never reaches us.
            return Err(ProviderError::Unreachable("connection reset before the reply".into()));
        }
        Ok(payment_of(row.provider_ref, &row.status))
    }

    async fn find_payment(&self, idempotency_key: &str) -> Result<Option<ProviderPayment>, ProviderError> {
        self.read(Some(idempotency_key), None).await
    }

    async fn retrieve_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError> {
        self.read(None, Some(provider_ref)).await?.ok_or_else(|| ProviderError::Rejected(format!("no such payment {provider_ref}")))
    }

    async fn cancel_payment(&self, provider_ref: &str) -> Result<ProviderPayment, ProviderError> {
        // Like a bank debit in flight, a processing payment cannot be voided;
        // captured and declined ones are final. So cancel changes nothing
        // here and answers the current status.
        self.retrieve_payment(provider_ref).await
    }

    async fn refund(&self, provider_ref: &str, amount_cents: i64, idempotency_key: &str) -> Result<ProviderRefund, ProviderError> {
        // Idempotent by key: a refund asked for again is the same refund.
        // Partial refunds add up to at most what was captured.
        self.reachable().await?;
        let mut tx = crate::db::begin(&self.pool).await.map_err(unreachable)?;
        let new = sqlx::query_scalar!(
            r#"INSERT INTO sim_provider_refunds (idempotency_key, provider_ref, amount_cents) VALUES ($1, $2, $3)
               ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key"#,
            idempotency_key,
            provider_ref,
            amount_cents
        )
        .fetch_optional(&mut *tx)
        .await
        .map_err(unreachable)?;
        if new.is_some() {
            let taken = sqlx::query!(
                r#"UPDATE sim_provider_payments SET refunded_cents = refunded_cents + $2
                    WHERE provider_ref = $1 AND status = 'succeeded' AND refunded_cents + $2 <= amount_cents"#,
                provider_ref,
                amount_cents
            )
            .execute(&mut *tx)
            .await
            .map_err(unreachable)?;
            if taken.rows_affected() == 0 {
                return Err(ProviderError::Rejected(format!("no captured payment {provider_ref} with {amount_cents} left to refund")));
            }
        }
        tx.commit().await.map_err(unreachable)?;
        Ok(ProviderRefund { provider_ref: format!("re_{idempotency_key}"), status: RefundStatus::Succeeded })
    }
}
