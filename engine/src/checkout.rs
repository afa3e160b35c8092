//! Checkout: from a hold to a booking, with the payment taken in between.
//!
//! 1. Claim the fan's idempotency key (or replay / refuse / resume).
//! 2. Short transaction: fence on the hold token, move the seats to
//!    `payment_pending`, record the payment intent.
//! 3. Call the provider, outside any transaction, with an idempotency key.
//! 4. Short transaction: commit the sale, fenced by the same token; the
//!    unique live ticket per seat is the last backstop.
//! Any outcome not known in time is left to reconciliation (`reconcile`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::holds::{is_retryable, MAX_TOKEN_LEN};
use crate::model::{Booking, Ticket};
use crate::payment::{PaymentRequest, PaymentStatus, ProviderError, RefundStatus};
use crate::tokens::{sha256_hex, ticket_code, token_tag};
use crate::Engine;

pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

#[derive(Debug, Clone)]
pub struct CheckoutRequest<'a> {
    pub user_id: Uuid,
    pub hold_id: Uuid,
    pub hold_token: &'a str,
    pub payment_token: &'a str,
    pub idempotency_key: &'a str,
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

/// `GET /checkouts/{id}`: where a checkout stands now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CheckoutView {
    pub checkout_id: Uuid,
    /// `payment_pending`, `confirmed`, `refunded` or `failed`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub booking: Option<Booking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

pub async fn checkout(engine: &Engine, req: CheckoutRequest<'_>) -> Result<CheckoutOutcome> {
    if req.idempotency_key.is_empty() || req.idempotency_key.len() > MAX_IDEMPOTENCY_KEY_LEN {
        return Err(EngineError::invalid("Idempotency-Key must be 1 to 255 characters"));
    }
    if req.hold_token.is_empty() || req.hold_token.len() > MAX_TOKEN_LEN {
        return Err(EngineError::invalid("hold_token must be 1 to 128 characters"));
    }
    if req.payment_token.is_empty() || req.payment_token.len() > MAX_TOKEN_LEN {
        return Err(EngineError::invalid("payment_token must be 1 to 128 characters"));
    }
    let pool = &engine.pool;
    let hold = sqlx::query!("SELECT event_id FROM holds WHERE hold_id = $1 AND user_id = $2", req.hold_id, req.user_id)
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
    let request_hash = sha256_hex(format!("{}\n{}\n{}", req.hold_id, req.hold_token, req.payment_token).as_bytes());
    let lease_secs = engine.settings.checkout_lease.as_secs_f64();

    let claimed = sqlx::query_scalar!(
        r#"INSERT INTO checkouts (checkout_id, user_id, idempotency_key, request_hash, hold_id, event_id, lease_until)
           VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
           ON CONFLICT (user_id, idempotency_key) DO NOTHING
           RETURNING checkout_id"#,
        Uuid::new_v4(),
        req.user_id,
        req.idempotency_key,
        request_hash,
        req.hold_id,
        hold.event_id,
        lease_secs,
    )
    .fetch_optional(pool)
    .await?;

    let checkout_id = match claimed {
        Some(id) => id,
        None => {
            let existing = sqlx::query!(
                r#"SELECT checkout_id, request_hash, response_body, lease_until > now() AS "leased!"
                   FROM checkouts WHERE user_id = $1 AND idempotency_key = $2"#,
                req.user_id,
                req.idempotency_key
            )
            .fetch_one(pool)
            .await?;
            if existing.request_hash != request_hash {
                return Err(EngineError::IdempotencyKeyReused);
            }
            if let Some(body) = existing.response_body {
                return decode_outcome(body);
            }
            if existing.leased {
                return Err(EngineError::IdempotencyKeyInUse);
            }
            // The request that claimed this key died before answering: take
            // over its lease and carry on from where it stopped.
            let taken = sqlx::query_scalar!(
                r#"UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), updated_at = now()
                    WHERE checkout_id = $1 AND lease_until <= now() AND response_body IS NULL
                RETURNING checkout_id"#,
                existing.checkout_id,
                lease_secs
            )
            .fetch_optional(pool)
            .await?;
            taken.ok_or(EngineError::IdempotencyKeyInUse)?
        }
    };
    let outcome = run(engine, checkout_id, req.hold_token, req.payment_token).await;
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
}

async fn hold_facts(conn: &mut sqlx::PgConnection, checkout_id: Uuid) -> Result<HoldFacts> {
    let h = sqlx::query!(
        r#"SELECT h.hold_id, h.hold_token, h.seat_ids, h.total_cents, h.event_id, h.user_id
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
    })
}

async fn run(engine: &Engine, checkout_id: Uuid, hold_token: &str, payment_token: &str) -> Result<CheckoutOutcome> {
    let pool = &engine.pool;
    let existing_intent = sqlx::query!(
        "SELECT provider_key, amount_cents, payment_token FROM payment_intents WHERE checkout_id = $1",
        checkout_id
    )
    .fetch_optional(pool)
    .await?;
    let (provider_key, amount_cents, payment_token) = match existing_intent {
        // Resuming a request that died: send the payment again only while the
        // seats still wait for it; otherwise just learn what became of it.
        Some(i) if seats_reserved(pool, checkout_id).await? => (i.provider_key, i.amount_cents, i.payment_token),
        Some(i) => return settle_by_lookup(engine, checkout_id, &i.provider_key).await,
        None => {
            let mut attempt = 0;
            let reserved = loop {
                attempt += 1;
                match reserve_for_payment(engine, checkout_id, hold_token, payment_token).await {
                    Err(e) if attempt < 3 && is_retryable(&e) => continue,
                    other => break other?,
                }
            };
            match reserved {
                Reserved::Yes { provider_key, amount_cents } => (provider_key, amount_cents, payment_token.to_owned()),
                Reserved::No(outcome) => return Ok(outcome),
            }
        }
    };

    let request = PaymentRequest {
        idempotency_key: provider_key,
        amount_cents,
        currency: engine.settings.currency.clone(),
        payment_token,
        description: format!("frontrow checkout {checkout_id}"),
    };
    pay(engine, checkout_id, &request).await
}

/// Sends the payment (idempotent by its key, so a retry never charges twice)
/// and settles the checkout by the answer.
pub(crate) async fn pay(engine: &Engine, checkout_id: Uuid, request: &PaymentRequest) -> Result<CheckoutOutcome> {
    let pool = &engine.pool;
    let answer = tokio::time::timeout(engine.settings.checkout_wait, engine.provider.create_payment(request)).await;
    match answer {
        Ok(Ok(payment)) => match payment.status {
            PaymentStatus::Succeeded => settle_success(engine, checkout_id, &payment.provider_ref).await,
            PaymentStatus::Declined { reason } => {
                record_provider_ref(pool, checkout_id, &payment.provider_ref).await?;
                settle_unpaid(pool, checkout_id, Unpaid::Declined(reason)).await
            }
            PaymentStatus::Canceled => settle_unpaid(pool, checkout_id, Unpaid::Declined("payment canceled".into())).await,
            PaymentStatus::Processing => mark_pending(pool, checkout_id, Some(&payment.provider_ref), "processing", None).await,
        },
        Ok(Err(ProviderError::Rejected(detail))) => {
            // The provider refused our request itself (configuration, not the
            // card): nothing was charged; the detail is for operators only.
            tracing::error!(%checkout_id, %detail, "payment provider rejected the request");
            sqlx::query!("UPDATE payment_intents SET last_error = $2 WHERE checkout_id = $1", checkout_id, detail)
                .execute(pool)
                .await?;
            settle_unpaid(pool, checkout_id, Unpaid::Declined("the payment could not be processed".into())).await
        }
        Ok(Err(ProviderError::Unreachable(reason))) => mark_pending(pool, checkout_id, None, "unknown", Some(&reason)).await,
        Err(_elapsed) => mark_pending(pool, checkout_id, None, "unknown", Some("no answer within the checkout wait")).await,
    }
}

/// Settles a checkout by what the provider knows of its payment, without
/// sending it again.
async fn settle_by_lookup(engine: &Engine, checkout_id: Uuid, provider_key: &str) -> Result<CheckoutOutcome> {
    let pool = &engine.pool;
    match engine.provider.find_payment(provider_key).await {
        Ok(Some(p)) => match p.status {
            PaymentStatus::Succeeded => settle_success(engine, checkout_id, &p.provider_ref).await,
            PaymentStatus::Processing => mark_pending(pool, checkout_id, Some(&p.provider_ref), "processing", None).await,
            PaymentStatus::Declined { reason } => settle_unpaid(pool, checkout_id, Unpaid::Failed(reason)).await,
            PaymentStatus::Canceled => settle_unpaid(pool, checkout_id, Unpaid::Failed("payment canceled".into())).await,
        },
        Ok(None) => settle_unpaid(pool, checkout_id, Unpaid::Failed("the payment never reached the provider".into())).await,
        Err(e) => mark_pending(pool, checkout_id, None, "unknown", Some(&e.to_string())).await,
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
async fn reserve_for_payment(engine: &Engine, checkout_id: Uuid, hold_token: &str, payment_token: &str) -> Result<Reserved> {
    let pool = &engine.pool;
    let mut tx = pool.begin().await?;
    // Re-assert the claim on the key inside this transaction: if the request
    // was so slow that its claim was closed meanwhile, stop here.
    let still_ours = sqlx::query_scalar!(
        r#"UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), updated_at = now()
            WHERE checkout_id = $1 AND state = 'processing' AND response_body IS NULL
        RETURNING checkout_id"#,
        checkout_id,
        engine.settings.checkout_lease.as_secs_f64()
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
    let grace_secs = engine.settings.payment_grace.as_secs_f64();
    let moved = sqlx::query_scalar!(
        r#"WITH moved AS (
               UPDATE seats
                  SET state = 'payment_pending', hold_expires_at = now() + make_interval(secs => $3),
                      version = nextval('seat_version_seq')
                WHERE hold_id = $1 AND hold_token = $2 AND state = 'held' AND hold_expires_at > now()
            RETURNING event_id, seat_id, version, holder_id
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT event_id, seat_id, version, 'held', 'payment_pending', $1, $4, holder_id, 'checkout' FROM moved
           )
           SELECT count(*) AS "n!" FROM moved"#,
        hold.hold_id,
        hold_token,
        grace_secs,
        token_tag(hold_token),
    )
    .fetch_one(&mut *tx)
    .await?;

    if moved as usize != hold.seat_count || moved == 0 {
        tx.rollback().await?;
        let in_payment = sqlx::query_scalar!(
            r#"SELECT count(*) AS "n!" FROM seats WHERE hold_id = $1 AND hold_token = $2 AND state = 'payment_pending'"#,
            hold.hold_id,
            hold_token
        )
        .fetch_one(pool)
        .await?;
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
        finish(pool, checkout_id, "expired", &outcome, None).await?;
        return Ok(Reserved::No(outcome));
    }

    let provider_key = format!("frontrow-{checkout_id}");
    sqlx::query!(
        r#"INSERT INTO payment_intents (payment_id, checkout_id, provider, provider_key, amount_cents, payment_token)
           VALUES ($1, $2, $3, $4, $5, $6)"#,
        Uuid::new_v4(),
        checkout_id,
        engine.provider.name(),
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
async fn finish<'e, E>(executor: E, checkout_id: Uuid, state: &str, outcome: &CheckoutOutcome, booking_id: Option<Uuid>) -> Result<()>
where
    E: sqlx::PgExecutor<'e>,
{
    sqlx::query!(
        r#"UPDATE checkouts
              SET state = $2::text::checkout_state, response_body = $3, booking_id = coalesce($4, booking_id),
                  lease_until = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        state,
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
    status: &str,
    error: Option<&str>,
) -> Result<CheckoutOutcome> {
    let mut tx = pool.begin().await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    sqlx::query!(
        r#"UPDATE payment_intents
              SET status = $2::text::payment_status, provider_ref = coalesce($3, provider_ref),
                  last_error = $4, updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        status,
        provider_ref,
        error,
    )
    .execute(&mut *tx)
    .await?;
    let outcome = CheckoutOutcome::PaymentPending { checkout_id };
    finish(&mut *tx, checkout_id, "payment_pending", &outcome, None).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The money is captured: commit the sale if the seats are still reserved
/// for this checkout, otherwise refund.
pub(crate) async fn settle_success(engine: &Engine, checkout_id: Uuid, provider_ref: &str) -> Result<CheckoutOutcome> {
    let pool = &engine.pool;
    let mut tx = pool.begin().await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    let booking_id = Uuid::new_v4();
    let sold = sqlx::query!(
        r#"WITH sold AS (
               UPDATE seats
                  SET state = 'sold', booking_id = $3, hold_id = NULL, hold_token = NULL, holder_id = NULL,
                      hold_expires_at = NULL, version = nextval('seat_version_seq')
                WHERE hold_id = $1 AND hold_token = $2 AND state = 'payment_pending'
            RETURNING event_id, seat_id, version
           ), logged AS (
               INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
               SELECT event_id, seat_id, version, 'payment_pending', 'sold', $1, $4, $5, 'sale' FROM sold
           )
           SELECT seat_id AS "seat_id!" FROM sold ORDER BY seat_id"#,
        hold.hold_id,
        hold.hold_token,
        booking_id,
        token_tag(&hold.hold_token),
        hold.user_id,
    )
    .fetch_all(&mut *tx)
    .await?;

    if sold.len() != hold.seat_count {
        // The seats were let go before the money arrived: never sell them
        // twice; give the money back instead.
        tx.rollback().await?;
        return refund_unsellable(engine, checkout_id, provider_ref).await;
    }

    sqlx::query!(
        "INSERT INTO bookings (booking_id, event_id, user_id, hold_id, total_cents) VALUES ($1, $2, $3, $4, $5)",
        booking_id,
        hold.event_id,
        hold.user_id,
        hold.hold_id,
        hold.total_cents,
    )
    .execute(&mut *tx)
    .await?;
    let seat_ids: Vec<String> = sold.into_iter().map(|s| s.seat_id).collect();
    let ticket_ids: Vec<Uuid> = seat_ids.iter().map(|_| Uuid::new_v4()).collect();
    let codes: Vec<String> = seat_ids.iter().map(|_| ticket_code()).collect();
    sqlx::query!(
        r#"INSERT INTO tickets (ticket_id, booking_id, event_id, seat_id, code)
           SELECT t.id, $1, $2, t.seat, t.code FROM UNNEST($3::uuid[], $4::text[], $5::text[]) AS t(id, seat, code)"#,
        booking_id,
        hold.event_id,
        &ticket_ids,
        &seat_ids,
        &codes,
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
    let created_at = sqlx::query_scalar!(r#"SELECT created_at AS "created_at: chrono::DateTime<chrono::Utc>" FROM bookings WHERE booking_id = $1"#, booking_id)
        .fetch_one(&mut *tx)
        .await?;
    let booking = Booking {
        booking_id,
        event_id: hold.event_id,
        total_cents: hold.total_cents,
        status: "confirmed".into(),
        created_at,
        tickets: seat_ids
            .iter()
            .zip(ticket_ids)
            .zip(codes)
            .map(|((seat_id, ticket_id), code)| Ticket { ticket_id, seat_id: seat_id.clone(), code })
            .collect(),
        seat_ids,
    };
    let outcome = CheckoutOutcome::Confirmed { booking };
    finish(&mut *tx, checkout_id, "confirmed", &outcome, Some(booking_id)).await?;
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
    let mut tx = pool.begin().await?;
    if let Some(settled) = lock_unsettled(&mut tx, checkout_id).await? {
        return Ok(settled);
    }
    let hold = hold_facts(&mut tx, checkout_id).await?;
    sqlx::query!(
        r#"WITH back AS (
               UPDATE seats s
                  SET state = 'held', hold_expires_at = h.expires_at, version = nextval('seat_version_seq')
                 FROM holds h
                WHERE h.hold_id = $1 AND s.hold_id = $1 AND s.hold_token = $2 AND s.state = 'payment_pending'
            RETURNING s.event_id, s.seat_id, s.version, s.holder_id
           )
           INSERT INTO seat_events (event_id, seat_id, version, from_state, to_state, hold_id, token_tag, actor_id, reason)
           SELECT event_id, seat_id, version, 'payment_pending', 'held', $1, $3, holder_id, 'payment_not_taken' FROM back"#,
        hold.hold_id,
        hold.hold_token,
        token_tag(&hold.hold_token),
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("UPDATE holds SET state = 'active' WHERE hold_id = $1 AND state = 'checking_out'", hold.hold_id)
        .execute(&mut *tx)
        .await?;
    let (state, payment_status, outcome) = match why {
        Unpaid::Declined(reason) => ("declined", "declined", CheckoutOutcome::Declined { checkout_id, reason }),
        Unpaid::Failed(reason) => ("failed", "canceled", CheckoutOutcome::Failed { checkout_id, reason }),
    };
    sqlx::query!(
        r#"UPDATE payment_intents SET status = $2::text::payment_status, settled_at = now(), updated_at = now()
            WHERE checkout_id = $1"#,
        checkout_id,
        payment_status
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
    let pool = &engine.pool;
    let mut tx = pool.begin().await?;
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
           ON CONFLICT (payment_id) DO UPDATE SET updated_at = now()
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
    finish(&mut *tx, checkout_id, "refunded", &outcome, None).await?;
    tx.commit().await?;
    metrics::counter!("frontrow_refunds_total").increment(1);
    // If the provider cannot be reached now, the refund stays pending and
    // reconciliation retries it.
    if let Err(e) = attempt_refund(engine, refund_id).await {
        tracing::warn!(%refund_id, error = %e, "refund not completed yet; reconciliation will retry");
    }
    Ok(outcome)
}

/// Asks the provider to refund, and records what it said.
pub(crate) async fn attempt_refund(engine: &Engine, refund_id: Uuid) -> Result<()> {
    let pool = &engine.pool;
    let r = sqlx::query!(
        r#"SELECT r.amount_cents, p.provider_ref AS "provider_ref?", p.provider_key
           FROM refunds r JOIN payment_intents p USING (payment_id) WHERE r.refund_id = $1"#,
        refund_id
    )
    .fetch_one(pool)
    .await?;
    let provider_ref = r.provider_ref.ok_or_else(|| EngineError::Internal("refund of a payment without provider reference".into()))?;
    let answer = engine.provider.refund(&provider_ref, r.amount_cents, &format!("{}-refund", r.provider_key)).await;
    let (status, reference, error) = match answer {
        Ok(refund) => match refund.status {
            RefundStatus::Succeeded => ("succeeded", Some(refund.provider_ref), None),
            RefundStatus::Pending => ("pending", Some(refund.provider_ref), None),
            RefundStatus::Failed { reason } => ("failed", Some(refund.provider_ref), Some(reason)),
        },
        Err(e) => ("pending", None, Some(e.to_string())),
    };
    sqlx::query!(
        r#"UPDATE refunds SET status = $2, provider_ref = coalesce($3, provider_ref), last_error = $4, updated_at = now()
            WHERE refund_id = $1"#,
        refund_id,
        status,
        reference,
        error,
    )
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn checkout_view(pool: &sqlx::PgPool, user_id: Uuid, checkout_id: Uuid) -> Result<CheckoutView> {
    let c = sqlx::query!(
        r#"SELECT state::text AS "state!", response_body, booking_id FROM checkouts WHERE checkout_id = $1 AND user_id = $2"#,
        checkout_id,
        user_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let booking = match c.booking_id {
        Some(id) => Some(load_booking(pool, id).await?),
        None => None,
    };
    let reason = match c.response_body.map(decode_outcome).transpose()? {
        Some(CheckoutOutcome::Declined { reason, .. } | CheckoutOutcome::Failed { reason, .. }) => Some(reason),
        Some(CheckoutOutcome::HoldExpired { refunded: true, .. }) => Some("the hold lapsed before the payment settled; the payment was refunded".into()),
        Some(CheckoutOutcome::HoldExpired { .. }) => Some("the hold had expired".into()),
        _ => None,
    };
    let status = match c.state.as_str() {
        "processing" | "payment_pending" => "payment_pending",
        "confirmed" => "confirmed",
        "refunded" => "refunded",
        _ => "failed",
    };
    Ok(CheckoutView { checkout_id, status: status.into(), booking, reason })
}

pub async fn load_booking(pool: &sqlx::PgPool, booking_id: Uuid) -> Result<Booking> {
    let b = sqlx::query!(
        r#"SELECT booking_id, event_id, total_cents, status, created_at AS "created_at: chrono::DateTime<chrono::Utc>" FROM bookings WHERE booking_id = $1"#,
        booking_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let tickets = sqlx::query_as!(
        Ticket,
        "SELECT ticket_id, seat_id, code FROM tickets WHERE booking_id = $1 ORDER BY seat_id",
        booking_id
    )
    .fetch_all(pool)
    .await?;
    Ok(Booking {
        booking_id: b.booking_id,
        event_id: b.event_id,
        seat_ids: tickets.iter().map(|t| t.seat_id.clone()).collect(),
        total_cents: b.total_cents,
        status: b.status,
        created_at: b.created_at,
        tickets,
    })
}

/// A booking as its owner or staff may see it; anyone else is told it does not exist.
pub async fn booking_for(pool: &sqlx::PgPool, booking_id: Uuid, viewer: Uuid, viewer_is_staff: bool) -> Result<Booking> {
    let owner = sqlx::query_scalar!("SELECT user_id FROM bookings WHERE booking_id = $1", booking_id)
        .fetch_optional(pool)
        .await?
        .ok_or(EngineError::NotFound)?;
    if owner != viewer && !viewer_is_staff {
        return Err(EngineError::NotFound);
    }
    load_booking(pool, booking_id).await
}

pub async fn user_bookings(pool: &sqlx::PgPool, user_id: Uuid) -> Result<Vec<Booking>> {
    let ids = sqlx::query_scalar!("SELECT booking_id FROM bookings WHERE user_id = $1 ORDER BY created_at DESC", user_id)
        .fetch_all(pool)
        .await?;
    let mut bookings = Vec::with_capacity(ids.len());
    for id in ids {
        bookings.push(load_booking(pool, id).await?);
    }
    Ok(bookings)
}
