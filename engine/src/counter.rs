//! Counter sales: staff sell seats (blocked ones too) to a customer at the
//! box office, for cash or by card.
//!
//! A counter sale is the online sale with staff as the buyer: the same
//! compare-and-swap claims the seats (so a counter sale and an online hold
//! can never both win), and the same checkout takes the payment and
//! writes the booking, idempotent by the request's key.

use chrono::{DateTime, Utc};
use frontrow_model::{seat_list, Channel, CounterPayment, CounterSaleRequest, IdempotencyKey, User};
use uuid::Uuid;

use crate::accounts::require_staff;
use crate::catalogue::check_text;
use crate::checkout::{run, CheckoutOutcome, Payment};
use crate::error::{EngineError, Result};
use crate::seats;
use crate::tokens::{hold_token, sha256_hex};
use crate::Engine;

/// How long a counter sale's seats are held while it is paid for.
const COUNTER_HOLD_SECONDS: i32 = 600;

impl Engine {
    pub async fn counter_sale(&self, staff: &User, event_id: Uuid, sale: &CounterSaleRequest, key: &IdempotencyKey) -> Result<CheckoutOutcome> {
        require_staff(staff)?;
        match &sale.standing {
            None => seat_list(&sale.seat_ids)?,
            Some(_) if !sale.seat_ids.is_empty() => return Err(EngineError::invalid("give either seat_ids or standing, not both")),
            Some(places) if !(1..=frontrow_model::MAX_SEATS_PER_REQUEST as i32).contains(&places.count) => {
                return Err(EngineError::invalid(format!("count must be 1 to {}", frontrow_model::MAX_SEATS_PER_REQUEST)));
            }
            Some(places) => {
                let layout = self.board().event(event_id).await?.layout().cloned();
                if !layout.is_some_and(|l| l.section_index(&places.section).is_some_and(|s| l.sections[s].is_standing())) {
                    return Err(EngineError::NoSuch(format!("{:?} is not a standing area of this event", places.section)));
                }
            }
        }
        check_text("customer_name", &sale.customer_name, 200)?;
        if let Some(email) = &sale.customer_email {
            let well_formed = email.len() <= 254 && !email.chars().any(|c| c.is_whitespace() || c.is_control()) && email.contains('@');
            if !well_formed {
                return Err(EngineError::invalid("customer_email is not a valid address"));
            }
        }
        let payment = match (sale.payment, &sale.payment_token) {
            (CounterPayment::Cash, None) => Payment::Cash,
            (CounterPayment::Cash, Some(_)) => return Err(EngineError::invalid("a cash sale takes no payment_token")),
            (CounterPayment::Card, Some(token)) => Payment::Provider(token.as_str()),
            (CounterPayment::Card, None) => return Err(EngineError::invalid("a card sale needs the card's payment_token")),
        };
        let rules = self.rules(event_id).await?;
        if rules.cancelled {
            return Err(EngineError::EventCancelled);
        }
        let mut seat_ids: Vec<String> = sale.seat_ids.iter().map(|s| s.as_str().to_owned()).collect();
        let request_hash = sha256_hex(serde_json::to_string(&(event_id, sale)).unwrap_or_default().as_bytes());
        let token = hold_token();
        let lease_secs = self.settings().checkout_lease.as_secs_f64();

        let mut tx = crate::db::begin(self.pool()).await?;
        // One request per key at a time: a second with the same key waits
        // here, then finds the first one's checkout.
        sqlx::query!(
            "SELECT pg_advisory_xact_lock(hashtext($1::uuid::text || $2::text))",
            staff.user_id,
            key.as_str()
        )
        .execute(&mut *tx)
        .await?;
        let existing = sqlx::query!(
            r#"SELECT c.checkout_id, c.request_hash, c.response_body, NOT lease_lapsed(c.lease_until, c.lease_owner) AS "leased!", h.hold_token
               FROM checkouts c JOIN holds h USING (hold_id) WHERE c.user_id = $1 AND c.idempotency_key = $2"#,
            staff.user_id,
            key.as_str()
        )
        .fetch_optional(&mut *tx)
        .await?;
        let (checkout_id, token) = match existing {
            Some(e) if e.request_hash != request_hash => return Err(EngineError::IdempotencyKeyReused),
            Some(e) if e.response_body.is_some() => {
                return serde_json::from_value(e.response_body.unwrap_or_default())
                    .map_err(|e| EngineError::Internal(format!("stored counter sale answer: {e}")));
            }
            Some(e) if e.leased => return Err(EngineError::IdempotencyKeyInUse),
            Some(e) => {
                // The request that took this key died: carry on from where it stopped.
                sqlx::query!(
                    "UPDATE checkouts SET lease_until = now() + make_interval(secs => $2), lease_owner = $3 WHERE checkout_id = $1",
                    e.checkout_id,
                    lease_secs,
                    self.settings().instance_id,
                )
                .execute(&mut *tx)
                .await?;
                (e.checkout_id, e.hold_token)
            }
            None => {
                if let Some(places) = &sale.standing {
                    seat_ids = seats::free_places(&mut tx, event_id, &places.section, i64::from(places.count)).await?;
                    if seat_ids.len() < places.count as usize {
                        tx.rollback().await?;
                        return Err(EngineError::NotEnoughPlaces { section: places.section.clone(), available: seat_ids.len() as i64 });
                    }
                }
                let hold_id = Uuid::new_v4();
                let claimed = seats::claim(&mut tx, event_id, &seat_ids, hold_id, &token, staff.user_id, COUNTER_HOLD_SECONDS).await?;
                if claimed.len() != seat_ids.len() {
                    tx.rollback().await?;
                    let claimed: Vec<&str> = claimed.iter().map(|c| c.seat_id.as_str()).collect();
                    return Err(self.explain_shortfall(event_id, &seat_ids, claimed.into_iter()).await);
                }
                let total_cents: i64 = claimed.iter().map(|c| i64::from(c.price_cents)).sum();
                sqlx::query!(
                    r#"INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at,
                                          channel, customer_name, customer_email)
                       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"#,
                    hold_id,
                    event_id,
                    staff.user_id,
                    token,
                    &seat_ids,
                    total_cents,
                    claimed[0].expires_at as DateTime<Utc>,
                    Channel::BoxOffice as Channel,
                    sale.customer_name.trim(),
                    sale.customer_email.as_deref().map(str::trim),
                )
                .execute(&mut *tx)
                .await?;
                let checkout_id = Uuid::new_v4();
                sqlx::query!(
                    r#"INSERT INTO checkouts (checkout_id, user_id, idempotency_key, request_hash, hold_id, event_id, lease_until, lease_owner)
                       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7), $8)"#,
                    checkout_id,
                    staff.user_id,
                    key.as_str(),
                    request_hash,
                    hold_id,
                    event_id,
                    lease_secs,
                    self.settings().instance_id,
                )
                .execute(&mut *tx)
                .await?;
                (checkout_id, token)
            }
        };
        tx.commit().await?;
        let outcome = run(self, checkout_id, &token, payment).await;
        if outcome.is_err() {
            // Let a retry take over at once rather than after the lease.
            let _ = sqlx::query!("UPDATE checkouts SET lease_until = now() WHERE checkout_id = $1 AND response_body IS NULL", checkout_id)
                .execute(self.pool())
                .await;
        }
        if let Ok(CheckoutOutcome::Confirmed { booking }) = &outcome {
            let mut conn = self.pool().acquire().await?;
            let detail = format!("booking {}, {} cents, {:?}, for {}", booking.booking_id, booking.total_cents, sale.payment, sale.customer_name.trim());
            crate::changelog::record(&mut conn, Some(event_id), staff.user_id, "counter_sale", &booking.seat_ids, &detail).await?;
        }
        outcome
    }
}
