//! Reading bookings and their tickets.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use frontrow_model::{Booking, BookingId, BookingStatus, Channel, Ticket, TicketState, User, UserId};
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::Engine;

impl Engine {
    /// A booking as its owner or staff may see it; anyone else is told it
    /// does not exist.
    pub async fn booking_for(&self, viewer: &User, booking_id: BookingId) -> Result<Booking> {
        if self.booking_owner(booking_id).await? != viewer.user_id && !viewer.role.is_staff() {
            return Err(EngineError::NotFound);
        }
        load(&mut *self.pool().acquire().await?, &[booking_id]).await?.pop().ok_or(EngineError::NotFound)
    }

    /// The account the booking belongs to (the seller's, for a counter sale).
    pub async fn booking_owner(&self, booking_id: BookingId) -> Result<UserId> {
        sqlx::query_scalar!("SELECT user_id FROM bookings WHERE booking_id = $1", booking_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .map(UserId::from)
            .ok_or(EngineError::NotFound)
    }

    /// The name tickets of the booking are made out to: the buyer's at the
    /// counter, else the account's (whoever is looking at them).
    pub async fn holder_name(&self, booking_id: BookingId) -> Result<String> {
        sqlx::query_scalar!(
            r#"SELECT coalesce(b.customer_name, u.name) AS "holder!" FROM bookings b JOIN users u USING (user_id) WHERE b.booking_id = $1"#,
            booking_id.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)
    }

    /// A fan's bookings, newest first.
    pub async fn bookings_of(&self, user_id: UserId) -> Result<Vec<Booking>> {
        let ids = sqlx::query_scalar!("SELECT booking_id FROM bookings WHERE user_id = $1 ORDER BY created_at DESC", user_id.as_uuid())
            .fetch_all(self.pool())
            .await?;
        let ids: Vec<BookingId> = ids.into_iter().map(BookingId::from).collect();
        load(&mut *self.pool().acquire().await?, &ids).await
    }
}

/// The bookings with these ids, with their tickets, in the order given.
pub(crate) async fn load(conn: &mut sqlx::PgConnection, ids: &[BookingId]) -> Result<Vec<Booking>> {
    let rows = sqlx::query!(
        r#"SELECT booking_id, event_id, total_cents, refunded_cents, status AS "status: BookingStatus",
                  channel AS "channel: Channel", created_at AS "created_at: DateTime<Utc>"
           FROM bookings WHERE booking_id = ANY($1)"#,
        ids as &[BookingId]
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut tickets: HashMap<Uuid, Vec<Ticket>> = HashMap::new();
    for t in sqlx::query!(
        r#"SELECT booking_id, ticket_id, seat_id, code, state AS "state: TicketState", price_cents, ticket_type
           FROM tickets WHERE booking_id = ANY($1) ORDER BY seat_id"#,
        ids as &[BookingId]
    )
    .fetch_all(&mut *conn)
    .await?
    {
        tickets.entry(t.booking_id).or_default().push(Ticket {
            ticket_id: t.ticket_id.into(),
            seat_id: t.seat_id,
            code: t.code,
            state: t.state,
            price_cents: t.price_cents,
            ticket_type: t.ticket_type,
        });
    }
    let mut by_id: HashMap<BookingId, Booking> = rows
        .into_iter()
        .map(|b| {
            let tickets = tickets.remove(&b.booking_id).unwrap_or_default();
            let booking = Booking {
                booking_id: b.booking_id.into(),
                event_id: b.event_id.into(),
                seat_ids: tickets.iter().map(|t| t.seat_id.clone()).collect(),
                total_cents: b.total_cents,
                refunded_cents: b.refunded_cents,
                status: b.status,
                channel: b.channel,
                created_at: b.created_at,
                tickets,
            };
            (booking.booking_id, booking)
        })
        .collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}
