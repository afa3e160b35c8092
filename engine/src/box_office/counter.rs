//! Counter sales: staff sell seats (blocked ones too) to a customer at the
//! box office, for cash or by card.
//!
//! A counter sale is the online sale with staff as the buyer: the same
//! compare-and-swap claims the seats (so a counter sale and an online hold
//! can never both win), and the same checkout takes the payment and
//! writes the booking, idempotent by the request's key.

use chrono::{DateTime, Utc};
use frontrow_model::{seat_list, Channel, CounterPayment, CounterSaleRequest, EventId, HoldId, IdempotencyKey, User};
use uuid::Uuid;

use crate::accounts::require_staff;
use crate::error::{EngineError, Result};
use crate::sale::checkout::key::{let_go, Claimed, KeyedRequest};
use crate::sale::checkout::{decode_outcome, run, CheckoutOutcome, Claim, Payment};
use crate::sale::seats;
use crate::tokens::{hold_token, sha256_hex};
use crate::venue::catalogue::check_text;
use crate::Engine;

/// How long a counter sale's seats are held while it is paid for.
const COUNTER_HOLD_SECONDS: i32 = 600;

impl Engine {
    pub async fn counter_sale(&self, staff: &User, event_id: EventId, sale: &CounterSaleRequest, key: &IdempotencyKey) -> Result<CheckoutOutcome> {
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
        let keyed = KeyedRequest { user_id: staff.user_id, key: key.as_str(), request_hash: &request_hash };

        let mut tx = crate::db::begin(self.pool()).await?;
        // One request per key at a time: a second with the same key waits
        // here, then finds the first one's claim.
        sqlx::query!("SELECT pg_advisory_xact_lock(hashtext($1::uuid::text || $2::text))", staff.user_id.as_uuid(), key.as_str())
            .execute(&mut *tx)
            .await?;
        let (checkout_id, token, claim) = match keyed.existing(&mut tx, self).await? {
            Some(Claimed::Answered(body)) => return decode_outcome(body),
            Some(Claimed::InUse) => return Err(EngineError::IdempotencyKeyInUse),
            Some(Claimed::TakenOver(checkout_id)) => {
                let token = sqlx::query_scalar!(
                    "SELECT h.hold_token FROM checkouts c JOIN holds h USING (hold_id) WHERE c.checkout_id = $1",
                    checkout_id.as_uuid()
                )
                .fetch_one(&mut *tx)
                .await?;
                (checkout_id, token, Claim::TakenOver)
            }
            None => {
                if let Some(places) = &sale.standing {
                    seat_ids = seats::free_places(&mut tx, event_id, &places.section, i64::from(places.count)).await?;
                    if seat_ids.len() < places.count as usize {
                        tx.rollback().await?;
                        return Err(EngineError::NotEnoughPlaces { section: places.section.clone(), available: seat_ids.len() as i64 });
                    }
                }
                let hold_id = HoldId::from(Uuid::new_v4());
                let claimed =
                    seats::claim(&mut tx, event_id, &seat_ids, hold_id, &token, staff.user_id, COUNTER_HOLD_SECONDS, seats::ClaimPurpose::Counter)
                        .await?;
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
                    hold_id.as_uuid(),
                    event_id.as_uuid(),
                    staff.user_id.as_uuid(),
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
                // Under the key's lock nobody else can have claimed it.
                let types = self.choose_ticket_types(event_id, &seat_ids, &sale.ticket_types).await?;
                let checkout_id = keyed.claim(&mut tx, self, hold_id, event_id, types.as_ref()).await?.ok_or(EngineError::IdempotencyKeyInUse)?;
                (checkout_id, token, Claim::Fresh)
            }
        };
        tx.commit().await?;
        self.board().seats_written();
        let outcome = run(self, checkout_id, &token, payment, claim).await;
        if outcome.is_err() {
            let_go(self, checkout_id).await;
        }
        if let Ok(CheckoutOutcome::Confirmed { booking }) = &outcome {
            let mut conn = self.pool().acquire().await?;
            let detail =
                format!("booking {}, {} cents, {:?}, for {}", booking.booking_id, booking.total_cents, sale.payment, sale.customer_name.trim());
            crate::changelog::record(&mut conn, Some(event_id), staff.user_id, "counter_sale", &booking.seat_ids, &detail).await?;
        }
        outcome
    }
}
