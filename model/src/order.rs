//! Holds, checkouts, bookings and tickets, and the audit of them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{BookingId, CheckoutId, EventId, HoldId, TicketId};

/// A fan's claim on seats: all of them for a few minutes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Hold {
    pub hold_id: HoldId,
    /// The fencing token: only this, while the hold lives, releases or pays.
    pub hold_token: String,
    pub event_id: EventId,
    pub seat_ids: Vec<String>,
    pub expires_at: DateTime<Utc>,
    pub total_cents: i64,
    /// Where the event has ticket types: each seat's price tier, in the
    /// order of `seat_ids` (the types sold there are the ones it can be).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<String>,
}

/// The life of a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "hold_state", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum HoldState {
    Active,
    Released,
    CheckingOut,
    Converted,
    Expired,
}

/// `GET /holds/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HoldStatus {
    pub hold_id: HoldId,
    pub event_id: EventId,
    pub seat_ids: Vec<String>,
    pub expires_at: DateTime<Utc>,
    pub state: HoldState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "ticket_state", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum TicketState {
    Valid,
    CheckedIn,
    Refunded,
    /// The event was cancelled (and the ticket refunded).
    Void,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ticket {
    pub ticket_id: TicketId,
    pub seat_id: String,
    /// What the QR code carries and the door scans.
    pub code: String,
    #[serde(default = "valid")]
    pub state: TicketState,
    #[serde(default)]
    pub price_cents: i32,
    /// Its ticket type (adult, child, ...), where the event has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket_type: Option<String>,
}

fn valid() -> TicketState {
    TicketState::Valid
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "booking_status", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum BookingStatus {
    Confirmed,
    PartiallyRefunded,
    Refunded,
    /// The event was cancelled and the booking refunded.
    Cancelled,
}

/// Where a booking was sold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "sales_channel", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    #[default]
    Online,
    BoxOffice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Booking {
    pub booking_id: BookingId,
    pub event_id: EventId,
    pub seat_ids: Vec<String>,
    pub total_cents: i64,
    #[serde(default)]
    pub refunded_cents: i64,
    pub status: BookingStatus,
    #[serde(default)]
    pub channel: Channel,
    pub created_at: DateTime<Utc>,
    pub tickets: Vec<Ticket>,
}

/// The ticket type chosen for seats of a hold (seat id -> type name); a
/// seat left out is of the first type sold in its tier.
pub type TicketChoices = std::collections::BTreeMap<String, String>;

/// `POST /bookings/{id}/cancel`: a fan cancelling tickets of their booking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// The tickets to cancel; none means every valid ticket of the booking.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = ticket_list_schema))]
    pub ticket_ids: Option<Vec<TicketId>>,
}

/// Up to 100 distinct tickets (a list naming one twice is refused).
#[cfg(feature = "openapi")]
pub(crate) fn ticket_list_schema() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([utoipa::openapi::Type::Array, utoipa::openapi::Type::Null]))
        .items(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::Type::String)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Uuid))),
        )
        .min_items(Some(1))
        .max_items(Some(100))
        .unique_items(true)
        .description(Some("The tickets (distinct); leave it out for every live ticket of the booking"))
        .build()
}

/// What a fan's cancellation did: the tickets it cancelled, the money on
/// its way back and what the seller kept under the event's refund policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cancellation {
    pub booking_id: BookingId,
    pub status: BookingStatus,
    pub cancelled: Vec<TicketId>,
    pub refund_cents: i64,
    pub kept_cents: i64,
    /// Their seats, on sale again.
    pub seats_released: Vec<String>,
}

/// Where a checkout stands (`GET /checkouts/{id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CheckoutStatus {
    PaymentPending,
    Confirmed,
    Refunded,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckoutView {
    pub checkout_id: CheckoutId,
    pub status: CheckoutStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub booking: Option<Booking>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a checkout call answers when it did not fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CheckoutAnswer {
    Confirmed {
        booking: Booking,
    },
    /// The provider has not answered yet; follow `GET /checkouts/{id}`.
    PaymentPending {
        checkout_id: CheckoutId,
    },
}

/// The invariant audit of one event or of all events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditReport {
    /// Seats with more than one live ticket, or sold without exactly one. Must be 0.
    pub oversold_seats: i64,
    pub seats_sold: i64,
    pub seats_held: i64,
    pub seats_available: i64,
    pub seats_blocked: i64,
    pub bookings: i64,
    /// Captured money with neither a booking nor a refund.
    pub payments_captured_without_booking: i64,
    /// Payments we cannot yet prove uncharged (still being asked about).
    pub payments_unresolved: i64,
    pub refunds_pending: i64,
    /// Seats held (lease not lapsed) or payment-pending whose hold is not live with the same token.
    pub held_without_live_hold: i64,
    /// Sold seats whose booking is missing, or live tickets on unsold seats.
    pub sold_mismatched: i64,
}

impl AuditReport {
    /// The invariants that must hold at every instant.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.oversold_seats != 0 {
            v.push(format!("{} oversold seats", self.oversold_seats));
        }
        if self.payments_captured_without_booking != 0 {
            v.push(format!("{} captured payments neither booked nor refunded", self.payments_captured_without_booking));
        }
        if self.held_without_live_hold != 0 {
            v.push(format!("{} held seats without a live hold", self.held_without_live_hold));
        }
        if self.sold_mismatched != 0 {
            v.push(format!("{} sold seats whose booking and tickets disagree", self.sold_mismatched));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_invariant_breaches_are_violations() {
        let clean = AuditReport { seats_sold: 5, seats_held: 3, refunds_pending: 1, payments_unresolved: 2, ..Default::default() };
        assert!(clean.violations().is_empty());
        let oversold = AuditReport { oversold_seats: 1, ..Default::default() };
        assert_eq!(oversold.violations().len(), 1);
        let stray = AuditReport { held_without_live_hold: 2, payments_captured_without_booking: 1, ..Default::default() };
        assert_eq!(stray.violations().len(), 2);
    }
}

/// What a mail to a buyer is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "mail_kind", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum MailKind {
    /// The booking's tickets (a PDF page each, a calendar entry).
    Tickets,
    Refund,
    EventCancelled,
    /// Seats offered to a fan on the waiting list.
    WaitlistOffer,
}

/// Where a mail in the outbox stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "mail_state", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum MailState {
    /// Waiting for its first or next attempt.
    Queued,
    Sent,
    /// Given up after repeated failures (staff may send it again).
    Failed,
}

/// One mail about a booking, as staff see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BookingMail {
    pub mail_id: i64,
    pub kind: MailKind,
    pub state: MailState,
    pub attempts: i32,
    /// Where it went (once sent).
    pub recipient: Option<String>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
}
