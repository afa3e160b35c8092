//! Checkout: from a hold to a booking, with the payment taken in between.
//!
//! 1. Claim the fan's idempotency key (or replay / refuse / resume).
//! 2. Short transaction: fence on the hold token, move the seats to
//!    `payment_pending`, record the payment intent.
//! 3. Call the provider, outside any transaction, with an idempotency key.
//! 4. Short transaction: commit the sale, fenced by the same token; the
//!    unique live ticket per seat is the last backstop.
//! Any outcome not known in time is left to reconciliation (`reconcile`).

use frontrow_model::{AppError, Booking, CheckoutAnswer, CheckoutStatus, CheckoutView, ErrorKind, HoldToken, IdempotencyKey, PaymentToken};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::bookings;
use crate::db::{retrying, Channel, CheckoutState, PaymentState};
use crate::error::{EngineError, Result};
use crate::payment::{PaymentRequest, PaymentStatus, ProviderError, CASH};
use crate::seats;
use crate::tokens::{sha256_hex, ticket_code};
use crate::Engine;

#[derive(Debug, Clone)]
pub struct CheckoutRequest<'a> {
    pub user_id: Uuid,
    pub hold_id: Uuid,
    pub hold_token: &'a HoldToken,
    pub payment_token: &'a PaymentToken,
    pub idempotency_key: &'a IdempotencyKey,
}

/// The answer to a checkout, stored with the idempotency key and replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CheckoutOutcome {
    Confirmed { booking: Booking },
    PaymentPending { checkout_id: Uuid },
    Declined { checkout_id: Uuid, reason: String },
    HoldExpired { checkout_id: Uuid, refunded: bool },
    Failed { checkout_id: Uuid, reason: String },
}

impl CheckoutOutcome {
    /// The answer a client gets: a booking, a pending payment to follow, or
    /// the error that says why not.
    pub fn into_answer(self) -> std::result::Result<CheckoutAnswer, AppError> {
        match self {
            CheckoutOutcome::Confirmed { booking } => Ok(CheckoutAnswer::Confirmed { booking }),
            CheckoutOutcome::PaymentPending { checkout_id } => Ok(CheckoutAnswer::PaymentPending { checkout_id }),
            CheckoutOutcome::Declined { checkout_id, reason } => Err(AppError::new(
                ErrorKind::PaymentDeclined { checkout_id: Some(checkout_id) },
                format!("payment declined: {reason}; the hold is still yours until it expires"),
            )),
            CheckoutOutcome::HoldExpired { checkout_id, refunded } => Err(AppError::new(
                ErrorKind::HoldExpired { checkout_id: Some(checkout_id), refunded: Some(refunded) },
                if refunded {
                    "the hold expired before the payment settled; the payment has been refunded"
                } else {
                    "the hold has expired or its token is no longer current; nothing was charged"
                },
            )),
            CheckoutOutcome::Failed { checkout_id, reason } => {
                Err(AppError::new(ErrorKind::PaymentFailed { checkout_id: Some(checkout_id) }, reason))
            }
        }
    }
}

impl Engine {
    /// Pays for a hold and turns it into a booking; idempotent by the
    /// request's key (a retry gets the first answer).
    pub async fn checkout(&self, req: CheckoutRequest<'_>) -> Result<CheckoutOutcome> {
        checkout(self, req).await
    }

    /// Where a checkout stands now (for its owner).
    pub async fn checkout_view(&self, fan: Uuid, checkout_id: Uuid) -> Result<CheckoutView> {
        let c = sqlx::query!(
            r#"SELECT state AS "state: CheckoutState", response_body, booking_id FROM checkouts WHERE checkout_id = $1 AND user_id = $2"#,
            checkout_id,
            fan
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let booking = match c.booking_id {
            Some(id) => bookings::load(&mut *self.pool().acquire().await?, &[id]).await?.pop(),
            None => None,
        };
        let reason = match c.response_body.map(decode_outcome).transpose()? {
            Some(CheckoutOutcome::Declined { reason, .. } | CheckoutOutcome::Failed { reason, .. }) => Some(reason),
            Some(CheckoutOutcome::HoldExpired { refunded: true, .. }) => {
                Some("the hold lapsed before the payment settled; the payment was refunded".into())
            }
            Some(CheckoutOutcome::HoldExpired { .. }) => Some("the hold had expired".into()),
            _ => None,
        };
        let status = match c.state {
            CheckoutState::Processing | CheckoutState::PaymentPending => CheckoutStatus::PaymentPending,
            CheckoutState::Confirmed => CheckoutStatus::Confirmed,
            CheckoutState::Refunded => CheckoutStatus::Refunded,
            CheckoutState::Declined | CheckoutState::Expired | CheckoutState::Failed => CheckoutStatus::Failed,
        };
        Ok(CheckoutView { checkout_id, status, booking, reason })
    }
}

async fn checkout(engine: &Engine, req: CheckoutRequest<'_>) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let hold = sqlx::query!(
        r#"SELECT h.event_id, e.cancelled_at IS NOT NULL AS "cancelled!"
           FROM holds h JOIN events e USING (event_id) WHERE h.hold_id = $1 AND h.user_id = $2"#,
        req.hold_id,
        req.user_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let request_hash = sha256_hex(format!("{}\n{}\n{}", req.hold_id, req.hold_token, req.payment_token).as_bytes());
    let idempotency_key = req.idempotency_key.as_str();
    if hold.cancelled {
        // Nothing more is sold; a checkout that already answered still
        // replays its answer.
        let stored = sqlx::query_scalar!(
            "SELECT response_body FROM checkouts WHERE user_id = $1 AND idempotency_key = $2 AND request_hash = $3",
            req.user_id,
            idempotency_key,
            request_hash
        )
        .fetch_optional(pool)
        .await?
        .flatten();
        return match stored {
            Some(body) => decode_outcome(body),
            None => Err(EngineError::EventCancelled),
        };
    }
    let lease_secs = engine.settings().checkout_lease.as_secs_f64();

    let claimed = sqlx::query_scalar!(
        r#"INSERT INTO checkouts (checkout_id, user_id, idempotency_key, request_hash, hold_id, event_id, lease_until, lease_owner)
           VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7), $8)
           ON CONFLICT (user_id, idempotency_key) DO NOTHING
           RETURNING checkout_id"#,
        Uuid::new_v4(),
        req.user_id,
        idempotency_key,
        request_hash,
        req.hold_id,
        hold.event_id,
        lease_secs,
        engine.settings().instance_id,
    )
    .fetch_optional(pool)
    .await?;

    let checkout_id = match claimed {
        Some(id) => id,
        None => match answer_retry(engine, &req, &request_hash, lease_secs).await? {
            Retried::Answered(outcome) => return Ok(outcome),
            Retried::TakenOver(id) => id,
        },
    };
    let outcome = run(engine, checkout_id, req.hold_token.as_str(), Payment::Provider(req.payment_token.as_str())).await;
    if outcome.is_err() {
        // Let a retry (or reconciliation) take over at once rather than after the lease.
        let _ = sqlx::query!(
            "UPDATE checkouts SET lease_until = now() WHERE checkout_id = $1 AND response_body IS NULL",
            checkout_id
        )
        .execute(pool)
        .await;
    }
    let label = match &outcome {
        Ok(CheckoutOutcome::Confirmed { .. }) => "confirmed",
        Ok(CheckoutOutcome::PaymentPending { .. }) => "payment_pending",
        Ok(CheckoutOutcome::Declined { .. }) => "declined",
        Ok(CheckoutOutcome::HoldExpired { .. }) => "hold_expired",
        Ok(CheckoutOutcome::Failed { .. }) => "failed",
        Err(_) => "error",
    };
    metrics::counter!("frontrow_checkouts_total", "outcome" => label).increment(1);
    outcome
}

/// How often a retry looks again at the request it repeats while that one runs.
const RETRY_POLL: std::time::Duration = std::time::Duration::from_millis(100);

enum Retried {
    Answered(CheckoutOutcome),
    TakenOver(Uuid),
}

/// A checkout repeating one already claimed under its key: the stored
/// answer if there is one; if the first request is still running (its
/// client hung up, say, and it goes on to its end), its answer as soon as it
/// has one, waiting as long as a checkout waits for its payment; if the
/// first request died, its claim, taken over to carry on where it stopped.
async fn answer_retry(engine: &Engine, req: &CheckoutRequest<'_>, request_hash: &str, lease_secs: f64) -> Result<Retried> {
    let pool = engine.pool();
    let give_up = std::time::Instant::now() + engine.settings().checkout_wait;
    loop {
        let existing = sqlx::query!(
            r#"SELECT checkout_id, request_hash, response_body, NOT lease_lapsed(lease_until, lease_owner) AS "leased!"
               FROM checkouts WHERE user_id = $1 AND idempotency_key = $2"#,
            req.user_id,
            req.idempotency_key.as_str()
        )
        .fetch_one(pool)
        .await?;
        if existing.request_hash != request_hash {
            return Err(EngineError::IdempotencyKeyReused);
        }
        if let Some(body) = existing.response_body {
            return decode_outcome(body).map(Retried::Answered);
        }
        if existing.leased {
            if std::time::Instant::now() >= give_up {
                return Err(EngineError::IdempotencyKeyInUse);
            }
            tokio::time::sleep(RETRY_POLL).await;
            continue;
        }
        // The request that claimed this key died before answering (its
        // time ran out, or its server stopped beating): take over its
        // lease and carry on from where it stopped.
        let taken = sqlx::query_scalar!(
            r#"UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), lease_owner = $3, updated_at = now()
                WHERE checkout_id = $1 AND lease_lapsed(lease_until, lease_owner) AND response_body IS NULL
            RETURNING checkout_id"#,
            existing.checkout_id,
            lease_secs,
            engine.settings().instance_id,
        )
        .fetch_optional(pool)
        .await?;
        return taken.map(Retried::TakenOver).ok_or(EngineError::IdempotencyKeyInUse);
    }
}

fn decode_outcome(body: serde_json::Value) -> Result<CheckoutOutcome> {
    serde_json::from_value(body).map_err(|e| EngineError::Internal(format!("stored checkout response: {e}")))
}

fn encode_outcome(outcome: &CheckoutOutcome) -> Result<serde_json::Value> {
    serde_json::to_value(outcome).map_err(|e| EngineError::Internal(format!("encoding checkout response: {e}")))
}

/// The checkout's hold, as the settle steps need it.
struct HoldFacts {
    hold_id: Uuid,
    hold_token: String,
    seat_count: usize,
    total_cents: i64,
    event_id: Uuid,
    user_id: Uuid,
    channel: Channel,
    customer_name: Option<String>,
    customer_email: Option<String>,
}

async fn hold_facts(conn: &mut sqlx::PgConnection, checkout_id: Uuid) -> Result<HoldFacts> {
    let h = sqlx::query!(
        r#"SELECT h.hold_id, h.hold_token, h.seat_ids, h.total_cents, h.event_id, h.user_id, h.channel AS "channel: Channel",
                  h.customer_name, h.customer_email
           FROM checkouts c JOIN holds h USING (hold_id) WHERE c.checkout_id = $1"#,
        checkout_id
    )
    .fetch_one(conn)
    .await?;
    Ok(HoldFacts {
        hold_id: h.hold_id,
        hold_token: h.hold_token,
        seat_count: h.seat_ids.len(),
        total_cents: h.total_cents,
        event_id: h.event_id,
        user_id: h.user_id,
        channel: h.channel,
        customer_name: h.customer_name,
        customer_email: h.customer_email,
    })
}

/// How a checkout is paid: through the payment provider with the buyer's
/// token, or in cash at the box office (never a choice a fan can make).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payment<'a> {
    Provider(&'a str),
    Cash,
}

pub(crate) async fn run(engine: &Engine, checkout_id: Uuid, hold_token: &str, payment: Payment<'_>) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let existing_intent = sqlx::query!(
        "SELECT provider, provider_key, amount_cents, payment_token FROM payment_intents WHERE checkout_id = $1",
        checkout_id
    )
    .fetch_optional(pool)
    .await?;
    let (provider_key, amount_cents, payment_token, sending) = match existing_intent {
        // Cash was handed over when the intent was recorded.
        Some(i) if i.provider == CASH => return settle_success(engine, checkout_id, &format!("cash-{checkout_id}")).await,
        // Resuming a request that died: send the payment again only while the
        // seats still wait for it; otherwise just learn what became of it.
        Some(i) if seats_reserved(pool, checkout_id).await? => (i.provider_key, i.amount_cents, i.payment_token, Sending::Again),
        Some(i) => return settle_by_lookup(engine, checkout_id, &i.provider_key).await,
        None => {
            let reserved = retrying(|| reserve_for_payment(engine, checkout_id, hold_token, payment)).await?;
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

    if engine.settings().failpoint.as_deref() == Some("abort_before_payment") {
        tracing::error!("failpoint abort_before_payment: dying with the seats reserved and the payment not sent");
        std::process::abort();
    }
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
pub(crate) async fn pay(engine: &Engine, checkout_id: Uuid, request: &PaymentRequest, sending: Sending) -> Result<CheckoutOutcome> {
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
            sqlx::query!("UPDATE payment_intents SET last_error = $2 WHERE checkout_id = $1", checkout_id, detail)
                .execute(pool)
                .await?;
            settle_unpaid(pool, checkout_id, Unpaid::Declined("the payment could not be processed".into())).await
        }
        Ok(Err(ProviderError::Unreachable(reason))) => mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some(&reason)).await,
        Err(_elapsed) => mark_pending(pool, checkout_id, None, PaymentState::Unknown, Some("no answer within the checkout wait")).await,
    }
}

/// Settles a checkout whose seats are gone by what the provider knows of
/// its payment.
async fn settle_by_lookup(engine: &Engine, checkout_id: Uuid, provider_key: &str) -> Result<CheckoutOutcome> {
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
pub(crate) async fn seats_reserved(pool: &sqlx::PgPool, checkout_id: Uuid) -> Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM checkouts c JOIN holds h USING (hold_id)
                          JOIN seats s ON s.hold_id = h.hold_id AND s.hold_token = h.hold_token
                          WHERE c.checkout_id = $1 AND s.state = 'payment_pending') AS "reserved!""#,
        checkout_id
    )
    .fetch_one(pool)
    .await?)
}

/// Locks the checkout and its payment for settling. `Some(answer)` when the
/// payment was already settled (by the request or by reconciliation): then
/// nothing may change and the stored answer stands.
async fn lock_unsettled(conn: &mut sqlx::PgConnection, checkout_id: Uuid) -> Result<Option<CheckoutOutcome>> {
    let row = sqlx::query!(
        r#"SELECT c.response_body, pi.settled_at IS NOT NULL AS "settled!"
           FROM checkouts c JOIN payment_intents pi USING (checkout_id)
           WHERE c.checkout_id = $1 FOR UPDATE"#,
        checkout_id
    )
    .fetch_one(conn)
    .await?;
    match (row.settled, row.response_body) {
        (true, Some(body)) => decode_outcome(body).map(Some),
        (true, None) => Err(EngineError::Internal(format!("checkout {checkout_id} settled without an answer"))),
        (false, _) => Ok(None),
    }
}

async fn record_provider_ref(pool: &sqlx::PgPool, checkout_id: Uuid, provider_ref: &str) -> Result<()> {
    if !provider_ref.is_empty() {
        sqlx::query!("UPDATE payment_intents SET provider_ref = $2 WHERE checkout_id = $1", checkout_id, provider_ref)
            .execute(pool)
            .await?;
    }
    Ok(())
}

/// The payment request recorded for a checkout, to send again unchanged.
pub(crate) async fn recorded_request(pool: &sqlx::PgPool, checkout_id: Uuid, currency: &str) -> Result<PaymentRequest> {
    let i = sqlx::query!(
        "SELECT provider_key, amount_cents, payment_token FROM payment_intents WHERE checkout_id = $1",
        checkout_id
    )
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
/// payment deadline, recording the payment intent in the same transaction.
async fn reserve_for_payment(engine: &Engine, checkout_id: Uuid, hold_token: &str, payment: Payment<'_>) -> Result<Reserved> {
    let pool = engine.pool();
    let mut tx = crate::db::begin(pool).await?;
    // Re-assert the claim on the key inside this transaction: if the request
    // was so slow that its claim was closed meanwhile, stop here.
    let still_ours = sqlx::query_scalar!(
        r#"UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), updated_at = now()
            WHERE checkout_id = $1 AND state = 'processing' AND response_body IS NULL
        RETURNING checkout_id"#,
        checkout_id,
        engine.settings().checkout_lease.as_secs_f64()
    )
    .fetch_optional(&mut *tx)
    .await?;
    if still_ours.is_none() {
        tx.rollback().await?;
        let body = sqlx::query_scalar!("SELECT response_body FROM checkouts WHERE checkout_id = $1", checkout_id)
            .fetch_one(pool)
            .await?;
        return match body {
            Some(body) => Ok(Reserved::No(decode_outcome(body)?)),
            None => Err(EngineError::IdempotencyKeyInUse),
        };
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    let moved = seats::reserve_for_payment(&mut tx, hold.hold_id, hold_token, engine.settings().payment_grace.as_secs_f64()).await?;

    if moved as usize != hold.seat_count || moved == 0 {
        tx.rollback().await?;
        let (in_payment, _) = seats::in_payment(&mut *pool.acquire().await?, hold.hold_id, hold_token).await?;
        if in_payment > 0 {
            // Another checkout (another key) is paying for this hold: give
            // this key back unused, so it can be retried once that one settles.
            sqlx::query!(
                r#"DELETE FROM checkouts c WHERE c.checkout_id = $1 AND c.response_body IS NULL
                     AND NOT EXISTS (SELECT 1 FROM payment_intents pi WHERE pi.checkout_id = c.checkout_id)"#,
                checkout_id
            )
            .execute(pool)
            .await?;
            return Err(EngineError::CheckoutInProgress);
        }
        let outcome = CheckoutOutcome::HoldExpired { checkout_id, refunded: false };
        finish(pool, checkout_id, CheckoutState::Expired, &outcome, None).await?;
        return Ok(Reserved::No(outcome));
    }

    let provider_key = format!("frontrow-{checkout_id}");
    let (provider, payment_token) = match payment {
        Payment::Provider(token) => (engine.provider().name(), token),
        Payment::Cash => (CASH, CASH),
    };
    sqlx::query!(
        r#"INSERT INTO payment_intents (payment_id, checkout_id, provider, provider_key, amount_cents, payment_token)
           VALUES ($1, $2, $3, $4, $5, $6)"#,
        Uuid::new_v4(),
        checkout_id,
        provider,
        provider_key,
        hold.total_cents,
        payment_token,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("UPDATE holds SET state = 'checking_out' WHERE hold_id = $1", hold.hold_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Reserved::Yes { provider_key, amount_cents: hold.total_cents })
}

/// Stores the final answer for the key and gives up the lease.
async fn finish<'e, E>(executor: E, checkout_id: Uuid, state: CheckoutState, outcome: &CheckoutOutcome, booking_id: Option<Uuid>) -> Result<()>
where
    E: sqlx::PgExecutor<'e>,
{
    sqlx::query!(
        r#"UPDATE checkouts
              SET state = $2, response_body = $3, booking_id = coalesce($4, booking_id),
                  lease_until = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        state as CheckoutState,
        encode_outcome(outcome)?,
        booking_id,
    )
    .execute(executor)
    .await?;
    Ok(())
}

/// The payment outcome is not known yet: answer "pending", keep the seats
/// reserved, and let reconciliation settle it.
pub(crate) async fn mark_pending(
    pool: &sqlx::PgPool,
    checkout_id: Uuid,
    provider_ref: Option<&str>,
    status: PaymentState,
    error: Option<&str>,
) -> Result<CheckoutOutcome> {
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    sqlx::query!(
        r#"UPDATE payment_intents
              SET status = $2, provider_ref = coalesce($3, provider_ref),
                  last_error = $4, updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        status as PaymentState,
        provider_ref,
        error,
    )
    .execute(&mut *tx)
    .await?;
    let outcome = CheckoutOutcome::PaymentPending { checkout_id };
    finish(&mut *tx, checkout_id, CheckoutState::PaymentPending, &outcome, None).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The money is captured: commit the sale if the seats are still reserved
/// for this checkout, otherwise refund.
pub(crate) async fn settle_success(engine: &Engine, checkout_id: Uuid, provider_ref: &str) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    let booking_id = Uuid::new_v4();
    let sold = seats::sell(&mut tx, hold.hold_id, &hold.hold_token, booking_id, hold.user_id).await?;

    if sold.len() != hold.seat_count {
        // The seats were let go before the money arrived: never sell them
        // twice; give the money back instead.
        tx.rollback().await?;
        return refund_unsellable(engine, checkout_id, provider_ref).await;
    }

    sqlx::query!(
        r#"INSERT INTO bookings (booking_id, event_id, user_id, hold_id, total_cents, channel, customer_name, customer_email)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"#,
        booking_id,
        hold.event_id,
        hold.user_id,
        hold.hold_id,
        hold.total_cents,
        hold.channel as Channel,
        hold.customer_name,
        hold.customer_email,
    )
    .execute(&mut *tx)
    .await?;
    let seat_ids: Vec<String> = sold.iter().map(|s| s.seat_id.clone()).collect();
    let prices: Vec<i32> = sold.iter().map(|s| s.price_cents).collect();
    let ticket_ids: Vec<Uuid> = seat_ids.iter().map(|_| Uuid::new_v4()).collect();
    let codes: Vec<String> = seat_ids.iter().map(|_| ticket_code()).collect();
    sqlx::query!(
        r#"INSERT INTO tickets (ticket_id, booking_id, event_id, seat_id, code, price_cents)
           SELECT t.id, $1, $2, t.seat, t.code, t.price
           FROM UNNEST($3::uuid[], $4::text[], $5::text[], $6::int[]) AS t(id, seat, code, price)"#,
        booking_id,
        hold.event_id,
        &ticket_ids,
        &seat_ids,
        &codes,
        &prices,
    )
    .execute(&mut *tx)
    .await?;
    // A fan who has bought is through the waiting room: their place among
    // the admitted goes to the next in line now, not minutes later when it
    // would lapse. (Their admission token still works until it expires.)
    sqlx::query!(
        "UPDATE queue_entries SET admission_expires_at = now() WHERE event_id = $1 AND user_id = $2 AND admission_expires_at > now()",
        hold.event_id,
        hold.user_id
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!(
        r#"UPDATE payment_intents SET status = 'succeeded', provider_ref = $2, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        provider_ref
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("UPDATE holds SET state = 'converted', ended_at = now() WHERE hold_id = $1", hold.hold_id)
        .execute(&mut *tx)
        .await?;
    let booking: Booking = bookings::load(&mut tx, &[booking_id])
        .await?
        .pop()
        .ok_or_else(|| EngineError::Internal(format!("booking {booking_id} vanished in its own transaction")))?;
    let outcome = CheckoutOutcome::Confirmed { booking };
    finish(&mut *tx, checkout_id, CheckoutState::Confirmed, &outcome, Some(booking_id)).await?;
    tx.commit().await?;
    metrics::counter!("frontrow_seats_sold_total").increment(hold.seat_count as u64);
    Ok(outcome)
}

pub(crate) enum Unpaid {
    /// The fan's payment was refused: the hold is theirs again until it lapses.
    Declined(String),
    /// The payment never happened (lost before the provider, or voided).
    Failed(String),
}

/// Nothing was charged: the seats go back to the hold (with its original
/// expiry) so the fan can try again, and the key's answer is stored.
pub(crate) async fn settle_unpaid(pool: &sqlx::PgPool, checkout_id: Uuid, why: Unpaid) -> Result<CheckoutOutcome> {
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    seats::return_to_hold(&mut tx, hold.hold_id, &hold.hold_token).await?;
    sqlx::query!("UPDATE holds SET state = 'active' WHERE hold_id = $1 AND state = 'checking_out'", hold.hold_id)
        .execute(&mut *tx)
        .await?;
    let (state, payment_state, outcome) = match why {
        Unpaid::Declined(reason) => (CheckoutState::Declined, PaymentState::Declined, CheckoutOutcome::Declined { checkout_id, reason }),
        Unpaid::Failed(reason) => (CheckoutState::Failed, PaymentState::Canceled, CheckoutOutcome::Failed { checkout_id, reason }),
    };
    sqlx::query!(
        r#"UPDATE payment_intents SET status = $2, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        payment_state as PaymentState
    )
    .execute(&mut *tx)
    .await?;
    finish(&mut *tx, checkout_id, state, &outcome, None).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// Captured money for seats that are no longer ours: record the refund
/// first (so it can never be forgotten), then ask the provider.
async fn refund_unsellable(engine: &Engine, checkout_id: Uuid, provider_ref: &str) -> Result<CheckoutOutcome> {
    let pool = engine.pool();
    let mut tx = crate::db::begin(pool).await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let intent = sqlx::query!(
        r#"UPDATE payment_intents SET status = 'succeeded', provider_ref = $2, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1 RETURNING payment_id, amount_cents"#,
        checkout_id,
        provider_ref
    )
    .fetch_one(&mut *tx)
    .await?;
    let refund_id = sqlx::query_scalar!(
        r#"INSERT INTO refunds (refund_id, payment_id, amount_cents, reason)
           VALUES ($1, $2, $3, 'seats released before the payment settled')
           ON CONFLICT (payment_id) WHERE kind = 'unsellable' DO UPDATE SET updated_at = now()
           RETURNING refund_id"#,
        Uuid::new_v4(),
        intent.payment_id,
        intent.amount_cents,
    )
    .fetch_one(&mut *tx)
    .await?;
    let hold = hold_facts(&mut tx, checkout_id).await?;
    sqlx::query!("UPDATE holds SET state = 'expired', ended_at = now() WHERE hold_id = $1 AND state <> 'converted'", hold.hold_id)
        .execute(&mut *tx)
        .await?;
    let outcome = CheckoutOutcome::HoldExpired { checkout_id, refunded: true };
    finish(&mut *tx, checkout_id, CheckoutState::Refunded, &outcome, None).await?;
    tx.commit().await?;
    metrics::counter!("frontrow_refunds_total").increment(1);
    // If the provider cannot be reached now, the refund stays pending and
    // reconciliation retries it.
    if let Err(e) = crate::refunds::attempt_refund(engine, refund_id).await {
        tracing::warn!(%refund_id, error = %e, "refund not completed yet; reconciliation will retry");
    }
    Ok(outcome)
}

