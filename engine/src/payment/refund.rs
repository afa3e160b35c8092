//! Returning money through the provider: one refund asked for (idempotent
//! by the refund's id) and what the provider said recorded. Refunds are
//! decided elsewhere (`money::refunds`, a late payment's settlement); this
//! is only the provider's side, shared by all of them.

use uuid::Uuid;

use super::{RefundStatus, CASH};
use crate::db::RefundState;
use crate::error::{EngineError, Result};
use crate::Engine;

/// Asks the provider to refund, and records what it said. Money taken in
/// cash was handed back at the counter when the refund was recorded.
pub(crate) async fn attempt_refund(engine: &Engine, refund_id: Uuid) -> Result<()> {
    let pool = engine.pool();
    let r = sqlx::query!(
        r#"SELECT r.amount_cents, p.provider, p.provider_ref AS "provider_ref?"
           FROM refunds r JOIN payment_intents p USING (payment_id) WHERE r.refund_id = $1"#,
        refund_id
    )
    .fetch_one(pool)
    .await?;
    let (state, reference, error) = if r.provider == CASH {
        (RefundState::Succeeded, Some(format!("cash-{refund_id}")), None)
    } else {
        let provider_ref = r.provider_ref.ok_or_else(|| EngineError::Internal("refund of a payment without provider reference".into()))?;
        match engine.provider().refund(&provider_ref, r.amount_cents, &format!("refund-{refund_id}")).await {
            Ok(refund) => match refund.status {
                RefundStatus::Succeeded => (RefundState::Succeeded, Some(refund.provider_ref), None),
                RefundStatus::Pending => (RefundState::Pending, Some(refund.provider_ref), None),
                RefundStatus::Failed { reason } => (RefundState::Failed, Some(refund.provider_ref), Some(reason)),
            },
            Err(e) => (RefundState::Pending, None, Some(e.to_string())),
        }
    };
    sqlx::query!(
        r#"UPDATE refunds SET status = $2, provider_ref = coalesce($3, provider_ref), last_error = $4, updated_at = now()
            WHERE refund_id = $1"#,
        refund_id,
        state as RefundState,
        reference,
        error,
    )
    .execute(pool)
    .await?;
    Ok(())
}
