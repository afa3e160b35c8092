//! Steps 2 and 3: the seats reserved for the payment (fenced by the hold
//! token, the intent recorded), then the payment sent to the provider,
//! first or again, and settled by its answer.

use super::batch::{ReserveOutcome, ReserveRequest};
use super::*;
use crate::tokens::token_tag;

/// How a checkout is paid: through the payment provider with the buyer's
/// token, or in cash at the box office (never a choice a fan can make).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payment<'a> {
    Provider(&'a str),
    Cash,
}

/// Whether a checkout's claim on its key was just made, or taken over from
/// a request that died (which may have got as far as the payment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    Fresh,
    TakenOver,
}

pub(crate) async fn run(engine: &Engine, checkout_id: CheckoutId, hold_token: &str, payment: Payment<'_>, claim: Claim) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    // A claim just made has no payment intent yet: no need to ask.
    let existing_intent = match claim {
        Claim::Fresh => None,
        Claim::TakenOver => {
            sqlx::query!(
                "SELECT provider, provider_key, amount_cents, payment_token FROM payment_intents WHERE checkout_id = $1",
                checkout_id.as_uuid()
            )
            .fetch_optional(pool)
            .await?
        }
    };
    let (provider_key, amount_cents, payment_token, sending) = match existing_intent {
        // Cash was handed over when the intent was recorded.
        Some(i) if i.provider == CASH => return settle_success(engine, checkout_id, &format!("cash-{checkout_id}")).await,
        // Resuming a request that died: send the payment again only while the
        // seats still wait for it; otherwise just learn what became of it.
        Some(i) if seats_reserved(pool, checkout_id).await? => (i.provider_key, i.amount_cents, i.payment_token, Sending::Again),
        Some(i) => return settle_by_lookup(engine, checkout_id, &i.provider_key).await,
        None => {
            let reserved = reserve_for_payment(engine, checkout_id, hold_token, payment).await?;
            match (reserved, payment) {
                (Reserved::Yes { .. }, Payment::Cash) => {
                    return settle_success(engine, checkout_id, &format!("cash-{checkout_id}")).await;
                }
                (Reserved::Yes { provider_key, amount_cents }, Payment::Provider(token)) => {
                    (provider_key, amount_cents, token.to_owned(), Sending::First)
                }
                (Reserved::No(outcome), _) => return Ok(outcome),
            }
        }
    };

    engine.fail_point(crate::FailPoint::AbortBeforePayment);
    let request = PaymentRequest {
        idempotency_key: provider_key,
        amount_cents,
        currency: engine.settings().currency.clone(),
        payment_token,
        description: format!("frontrow checkout {checkout_id}"),
    };
    pay(engine, checkout_id, &request, sending).await
}

/// Whether a payment request goes to the provider for the first time, or
/// again (after a lost answer, a crash, a search that found nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending {
    First,
    Again,
}

/// Sends the payment (idempotent by its key, so a retry never charges twice)
/// and settles the checkout by the answer.
///
/// Only a definite answer about the payment closes it: captured, declined
/// or cancelled. The provider refusing the request itself (4xx: a rotated
/// key, a wrong URL, parameters it will not take) proves nothing was
/// charged only when the request is sent for the first time; a request
/// sent again may have been charged the first time, so it stays pending,
/// under watch (reconciliation keeps asking), with the refusal recorded
/// for a person (Box office → Payments).
pub(crate) async fn pay(engine: &Engine, checkout_id: CheckoutId, request: &PaymentRequest, sending: Sending) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let answer = tokio::time::timeout(engine.settings().checkout_wait, engine.provider().create_payment(request)).await;
    match answer {
        Ok(Ok(payment)) => match payment.status {
            PaymentStatus::Succeeded => settle_success(engine, checkout_id, &payment.provider_ref).await,
            PaymentStatus::Declined { reason } => {
                record_provider_ref(pool, checkout_id, &payment.provider_ref).await?;
                settle_unpaid(pool, checkout_id, Unpaid::Declined(reason)).await
            }
            PaymentStatus::Canceled => settle_unpaid(pool, checkout_id, Unpaid::Declined("payment canceled".into())).await,
            PaymentStatus::Processing => mark_pending(pool, checkout_id, Some(&payment.provider_ref), PaymentState::Processing, None).await,
        },
        Ok(Err(ProviderError::Rejected(detail))) if sending == Sending::Again => {
            tracing::error!(%checkout_id, %detail, "payment provider refused a payment sent again: it may have been charged the first time; kept under watch");
            let error = format!("the provider refused the payment sent again ({detail}): it may have been charged; check it with the provider");
            mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some(&error)).await
        }
        Ok(Err(ProviderError::Rejected(detail))) => {
            // The provider refused our first request itself (configuration, not the
            // card): nothing was charged; the detail is for operators only.
            tracing::error!(%checkout_id, %detail, "payment provider rejected the request");
            sqlx::query!("UPDATE payment_intents SET last_error = $2 WHERE checkout_id = $1", checkout_id.as_uuid(), detail).execute(pool).await?;
            settle_unpaid(pool, checkout_id, Unpaid::Declined("the payment could not be processed".into())).await
        }
        Ok(Err(ProviderError::Unreachable(reason))) => mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some(&reason)).await,
        Err(_elapsed) => mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some("no answer within the checkout wait")).await,
    }
}

/// Settles a checkout whose seats are gone by what the provider knows of
/// its payment.
async fn settle_by_lookup(engine: &Engine, checkout_id: CheckoutId, provider_key: &str) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    match engine.provider().find_payment(provider_key).await {
        Ok(Some(p)) => match p.status {
            PaymentStatus::Succeeded => settle_success(engine, checkout_id, &p.provider_ref).await,
            PaymentStatus::Processing => mark_pending(pool, checkout_id, Some(&p.provider_ref), PaymentState::Processing, None).await,
            PaymentStatus::Declined { reason } => settle_unpaid(pool, checkout_id, Unpaid::Failed(reason)).await,
            PaymentStatus::Canceled => settle_unpaid(pool, checkout_id, Unpaid::Failed("payment canceled".into())).await,
        },
        // Not found is no proof: a provider's search lags behind its
        // charges. Ask again by sending the create with the same key: the
        // original comes back if it arrived (refunded, as the seats are gone).
        Ok(None) => pay(engine, checkout_id, &recorded_request(pool, checkout_id, &engine.settings().currency).await?, Sending::Again).await,
        Err(e) => mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some(&e.to_string())).await,
    }
}

/// Are the checkout's seats still waiting for its payment?
pub(crate) async fn seats_reserved(pool: &sqlx::PgPool, checkout_id: CheckoutId) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM checkouts c JOIN holds h USING (hold_id)
                          JOIN seats s ON s.hold_id = h.hold_id AND s.hold_token = h.hold_token
                          WHERE c.checkout_id = $1 AND s.state = 'payment_pending') AS "reserved!""#,
        checkout_id.as_uuid()
    )
    .fetch_one(pool)
    .await?)
}

async fn record_provider_ref(pool: &sqlx::PgPool, checkout_id: CheckoutId, provider_ref: &str) -> Result<()> {
    if !provider_ref.is_empty() {
        sqlx::query!("UPDATE payment_intents SET provider_ref = $2 WHERE checkout_id = $1", checkout_id.as_uuid(), provider_ref)
            .execute(pool)
            .await?;
    }
    Ok(())
}

/// The payment request recorded for a checkout, to send again unchanged.
pub(crate) async fn recorded_request(pool: &sqlx::PgPool, checkout_id: CheckoutId, currency: &str) -> Result<PaymentRequest> {
    let i = sqlx::query!("SELECT provider_key, amount_cents, payment_token FROM payment_intents WHERE checkout_id = $1", checkout_id.as_uuid())
        .fetch_one(pool)
        .await?;
    Ok(PaymentRequest {
        idempotency_key: i.provider_key,
        amount_cents: i.amount_cents,
        currency: currency.to_owned(),
        payment_token: i.payment_token,
        description: format!("frontrow checkout {checkout_id}"),
    })
}

enum Reserved {
    Yes { provider_key: String, amount_cents: i64 },
    No(CheckoutOutcome),
}

/// Fences on the hold token and moves the seats to `payment_pending`, with a
/// payment deadline, recording the payment intent in the same transaction
/// (one `checkout_reserve` call, shared with the checkouts beside it).
async fn reserve_for_payment(engine: &Engine, checkout_id: CheckoutId, hold_token: &str, payment: Payment<'_>) -> Result<Reserved> {
    let provider_key = format!("frontrow-{checkout_id}");
    let (provider, payment_token) = match payment {
        Payment::Provider(token) => (engine.provider().name(), token),
        Payment::Cash => (CASH, CASH),
    };
    let request = ReserveRequest {
        checkout: checkout_id,
        token: hold_token.to_owned(),
        tag: token_tag(hold_token),
        payment: Uuid::new_v4(),
        provider: provider.to_owned(),
        key: provider_key.clone(),
        payment_token: payment_token.to_owned(),
        grace_seconds: engine.settings().payment_grace.as_secs_f64(),
        lease_seconds: engine.settings().checkout_lease.as_secs_f64(),
        expired: encode_outcome(&CheckoutOutcome::HoldExpired { checkout_id, refunded: false })?,
    };
    match engine.reserve_batcher().submit((), request).await? {
        ReserveOutcome::Reserved { amount_cents } => {
            engine.board().seats_written();
            Ok(Reserved::Yes { provider_key, amount_cents })
        }
        ReserveOutcome::Answered(answer) | ReserveOutcome::Expired(answer) => Ok(Reserved::No(decode_outcome(answer)?)),
        // The claim was closed meanwhile (the request was that slow).
        ReserveOutcome::InUse => Err(EngineError::IdempotencyKeyInUse),
        // Another key pays for this hold: retry this one once that settles.
        ReserveOutcome::InProgress => Err(EngineError::CheckoutInProgress),
        ReserveOutcome::BadTypes => Err(EngineError::invalid("the event's ticket types changed while you chose: choose them again")),
    }
}
